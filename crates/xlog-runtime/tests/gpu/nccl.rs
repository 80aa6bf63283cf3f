//! NCCL on one device: a communicator of one rank, made blocking (`init_rank`)
//! and nonblocking (`init_rank_within`), all-reduces, waits and agrees, each wait
//! of it bounded. The suites of several ranks are in the multi-device suite.

use std::time::Duration;

use xlog_runtime::nccl::{Communicator, ReduceOp, UniqueId};
use xlog_runtime::Error;

use crate::common::*;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn a_communicator_of_one_rank_all_reduces_made_blocking_and_nonblocking() {
    let rt = rt();
    if xlog_runtime::sim::is_active() {
        // The simulator makes communicators of one process only (`init_all`).
        let e = UniqueId::new().unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        return;
    }
    let blocking = Communicator::init_rank(&rt, &UniqueId::new().unwrap(), 0, 1).unwrap();
    let nonblocking =
        Communicator::init_rank_within(&rt, &UniqueId::new().unwrap(), 0, 1, LIMIT).unwrap();
    for comm in [&blocking, &nonblocking] {
        let s = rt.new_stream().unwrap();
        let mut b = rt.upload_on(&s, &[1.5f32, 2.0, -3.0]).unwrap();
        let mut max = rt.alloc_zeroed_on::<u32>(&s, 3).unwrap();
        let x = rt.upload_on(&s, &[7u32, 0, 9]).unwrap();
        comm.all_reduce_in_place(&s, &mut b, ReduceOp::Sum).unwrap();
        comm.all_reduce(&s, &x, &mut max, ReduceOp::Max).unwrap();
        comm.wait(&s, LIMIT).unwrap();
        assert_eq!(b.download(&s).unwrap(), vec![1.5, 2.0, -3.0]);
        assert_eq!(max.download(&s).unwrap(), vec![7, 0, 9]);
        comm.check_agreement(&rt, 0x5eed, LIMIT).unwrap();
        assert_eq!(comm.failure(), None);
    }
    // A rank out of range is refused before NCCL is called.
    let e = Communicator::init_rank(&rt, &UniqueId::new().unwrap(), 1, 1).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
}
