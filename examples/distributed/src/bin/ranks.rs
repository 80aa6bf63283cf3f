//! One process per GPU, started by `torchrun` (or any launcher that sets `RANK`,
//! `WORLD_SIZE` and `LOCAL_RANK`): each process joins the communicator through
//! `ProcessEnv` (the unique id in the file `XLOG_NCCL_ID_FILE` names, written by
//! rank 0), checks an all-reduce against the CPU, then times in-place `f32`
//! all-reduces of 4 KiB (each call waited for) and of 256 MiB and 1 GiB; rank 0
//! prints `case<TAB>milliseconds` lines, as `ranks_torch.py` does for
//! `torch.distributed`.
//!
//! ```sh
//! XLOG_NCCL_ID_FILE=/tmp/id torchrun --nproc_per_node=2 --no-python target/release/ranks
//! ```

use std::time::{Duration, Instant};

use xlog::nccl::{ProcessEnv, ReduceOp};

const TIMEOUT: Duration = Duration::from_secs(60);

fn main() -> xlog::Result<()> {
    let env = ProcessEnv::from_env()?;
    let (rt, comm) = env.communicator(TIMEOUT)?;
    let s = rt.new_stream()?;
    let n = env.world_size;
    let mut check = rt.upload_on(&s, &vec![env.rank + 1; 1000])?;
    comm.all_reduce_in_place(&s, &mut check, ReduceOp::Sum)?;
    comm.wait(&s, TIMEOUT)?;
    assert_eq!(check.download(&s)?, vec![n * (n + 1) / 2; 1000]);
    for (bytes, batch) in [(4usize << 10, 200usize), (256 << 20, 10), (1 << 30, 5)] {
        let mut buf = rt.upload_on(&s, &vec![1.0f32; bytes / 4])?;
        let mut one_batch = || -> xlog::Result<f64> {
            let t = Instant::now();
            for _ in 0..batch {
                comm.all_reduce_in_place(&s, &mut buf, ReduceOp::Sum)?;
                if bytes <= 1 << 20 {
                    comm.wait(&s, TIMEOUT)?;
                }
            }
            comm.wait(&s, TIMEOUT)?;
            Ok(t.elapsed().as_secs_f64() / batch as f64)
        };
        one_batch()?;
        let mut times = (0..15)
            .map(|_| one_batch())
            .collect::<xlog::Result<Vec<f64>>>()?;
        times.sort_by(f64::total_cmp);
        if env.rank == 0 {
            println!("all_reduce {bytes}\t{}", times[times.len() / 2] * 1e3);
        }
    }
    Ok(())
}
