//! What only the simulator does (`XLOG_BACKEND=sim`): on a GPU each test says so
//! and returns, since there is nothing of the simulator to check there.

use xlog_runtime::{DeviceBuffer, Error, LaunchConfig, ReadyAfter, WorkRecorder};

use crate::common::*;

fn on_simulator(test: &str) -> bool {
    let sim = xlog_runtime::sim::is_active();
    if !sim {
        // Off the simulator the suite runs on a GPU: without one this fails, as
        // every GPU test does, instead of passing having checked nothing.
        rt();
        println!("{test}: checks the simulator only (XLOG_BACKEND=sim)");
    }
    sim
}

#[test]
fn ptx_loaded_at_run_time_is_refused_on_the_simulator() {
    if !on_simulator("ptx_loaded_at_run_time_is_refused_on_the_simulator") {
        return;
    }
    // An owned runtime loads the module afresh: nobody gave its functions a host
    // build (the host build given once stays with the loaded module's function).
    let rt = xlog_runtime::Runtime::builder(0).build().unwrap();
    let s = rt.new_stream().unwrap();
    // Looked up without a host build, as `Module::function` does for any PTX.
    let f = rt
        .load_module(&KERNELS)
        .unwrap()
        .function("slow_fill")
        .unwrap();
    let mut y = rt.alloc_zeroed_on::<u32>(&s, 16).unwrap();
    let (dp, n, v, spins) = (y.device_ptr(), 16u64, 5u32, 0u32);
    let pre = WorkRecorder::new(&s).write(&mut y).preflight().unwrap();
    let mut params = [param(&dp), param(&n), param(&v), param(&spins)];
    // SAFETY: slow_fill(u64 dst, u64 n, u32 value, u32 spins) matches the params.
    let e = unsafe { pre.launch(&f, LaunchConfig::for_len(16), &mut params) }.unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("no host build"), "{e}");
    assert_eq!(y.download(&s).unwrap(), vec![0; 16], "nothing ran");
}

#[test]
fn interop_is_refused_on_the_simulator() {
    if !on_simulator("interop_is_refused_on_the_simulator") {
        return;
    }
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let host = vec![0u32; 16];
    // SAFETY: refused before the memory is used: the simulator takes no foreign
    // memory (which is exactly what is checked).
    let e = unsafe {
        DeviceBuffer::<u32>::import_raw(&s, host.as_ptr() as u64, 16, ReadyAfter::ImportStream, ())
    }
    .unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    let buf = rt.upload_on(&s, &host).unwrap();
    let e = buf.core().ready_event(&s).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
}

#[test]
fn fenced_work_leaves_the_detector_silent() {
    if !on_simulator("fenced_work_leaves_the_detector_silent") {
        return;
    }
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut x = rt.upload_on(&a, &random_u32(1, 4096)).unwrap();
    let mut y = rt.alloc_zeroed_on::<u32>(&b, 4096).unwrap();
    slow_copy(&rt, &b, &x, &mut y, 50);
    slow_fill(&rt, &a, &mut x, 7, 0);
    y.copy_from(&a, &x).unwrap();
    assert_eq!(y.download(&b).unwrap(), vec![7; 4096]);
    let found: Vec<String> = xlog_runtime::sim::take_hazards()
        .iter()
        .map(|h| h.to_string())
        .collect();
    // Other tests of this process may run unfenced children, never this process.
    assert!(found.is_empty(), "{found:#?}");
}

/// `Module::function_with_host` pairs a kernel name with a host build; the first
/// pairing stays with the loaded module's function. Pairing a name with another
/// kernel's host build makes every later launch of it, typed launchers included
/// (they share the runtime's cached module), run that build over the wrong
/// parameter list: reads of values of the wrong type and writes out of bounds.
/// A second lookup with a different host build must be refused, not silently keep
/// the first.
#[test]
fn a_second_host_build_for_one_kernel_is_refused() {
    if !on_simulator("a_second_host_build_for_one_kernel_is_refused") {
        return;
    }
    let rt = xlog_runtime::Runtime::builder(0).build().unwrap();
    let m = rt.load_module(&KERNELS).unwrap();
    // SAFETY: a deliberately wrong pairing, never launched.
    let wrong = unsafe { m.function_with_host("slow_fill", EMPTY_HOST) };
    assert!(wrong.is_ok());
    // SAFETY: slow_fill's own host build.
    let right = unsafe { m.function_with_host("slow_fill", SLOW_FILL_HOST) };
    let e = right.expect_err("the second host build was accepted, and the first kept");
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
}

/// Fresh simulated memory is not zero: a result no kernel wrote reads as 0xcd
/// bytes (as stale memory reads as something on a GPU), so a library function
/// that leaves elements of an uninitialised output unwritten fails its
/// comparison with the CPU on the simulator too.
#[test]
fn fresh_simulated_memory_reads_as_unwritten_bytes() {
    if !on_simulator("fresh_simulated_memory_reads_as_unwritten_bytes") {
        return;
    }
    let rt = rt();
    let s = rt.stream().unwrap();
    // SAFETY: the elements are `u32`s (every bit pattern is one) and are read
    // only to see what a fresh allocation holds.
    let fresh =
        unsafe { rt.alloc_uninit::<u32>(&s, 1000, xlog_runtime::AllocTag("fresh")) }.unwrap();
    assert!(fresh
        .download(&s)
        .unwrap()
        .iter()
        .all(|&v| v == 0xcdcd_cdcd));
    // What safe code allocates is still zero.
    let zeroed = rt.alloc_zeroed_on::<u32>(&s, 1000).unwrap();
    assert!(zeroed.download(&s).unwrap().iter().all(|&v| v == 0));
}

/// A simulated communicator that failed (a group that failed partway) ends its
/// peers' waiting work when it is dropped, as `ncclCommAbort` ends theirs on a
/// GPU: rank 0's queued part, which waits for rank 1's that never came, ends with
/// an error at once instead of at its wait's timeout.
#[test]
fn a_failed_simulated_communicator_dropped_aborts_its_peers_work() {
    use std::time::{Duration, Instant};
    use xlog_runtime::nccl::{Communicator, Group, ReduceOp};
    use xlog_runtime::testing::{self, Site};

    if !on_simulator("a_failed_simulated_communicator_dropped_aborts_its_peers_work") {
        return;
    }
    let rts = [
        xlog_runtime::Runtime::get(0).unwrap(),
        xlog_runtime::Runtime::get(1).expect("two simulated devices (XLOG_SIM_DEVICES=2)"),
    ];
    let mut comms = Communicator::init_all(&rts).unwrap();
    let c1 = comms.pop().unwrap();
    let c0 = comms.pop().unwrap();
    let (s0, s1) = (rts[0].new_stream().unwrap(), rts[1].new_stream().unwrap());
    let mut b0 = rts[0].upload_on(&s0, &[1u32; 64]).unwrap();
    let mut b1 = rts[1].upload_on(&s1, &[2u32; 64]).unwrap();
    // The group fails right after rank 0's part is queued: rank 1's never is.
    testing::inject(Site::SimCommQueue, 1);
    let e = Group::new()
        .all_reduce_in_place(&c0, &s0, &mut b0, ReduceOp::Sum)
        .all_reduce_in_place(&c1, &s1, &mut b1, ReduceOp::Sum)
        .launch()
        .unwrap_err();
    assert!(matches!(e, Error::InjectedFault { .. }), "{e:?}");
    drop(c1);
    // Rank 0's stream holds the part that waits for rank 1's: it ends (with the
    // abort's error) instead of waiting for ever.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(s0.synchronize().map_err(|e| e.to_string()));
    });
    let start = Instant::now();
    let ended = rx.recv_timeout(Duration::from_secs(20));
    assert!(
        ended.is_ok(),
        "rank 0's stream still waits for the dropped rank after {:?}",
        start.elapsed()
    );
    drop((c0, b0, b1));
}
