//! What the ranks of one communicator must agree on, and the ledger that checks
//! it for the ranks of one process.
//!
//! NCCL matches a rank's collectives with the other ranks' by issue order, and a
//! send with its peer's receive by order per pair of ranks; ranks that disagree on
//! a count leave NCCL waiting, or moving bytes by the other side's count. The
//! communicators one `init_all` makes share a [`Ledger`]: every group records its
//! operations there before anything is queued, whichever thread issues them, and
//! an operation that disagrees with what another rank already issued at that
//! position is refused. Ranks in other processes (`init_rank`) cannot be seen:
//! their agreement is the application's (see `docs/SOUNDNESS.md`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::ffi::Op;
use crate::error::{Error, Result};
use crate::sync::Unpoisoned;

/// What ranks must agree on for one collective: which one, its count, type,
/// operator and root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    what: &'static str,
    count: usize,
    dtype: i32,
    op: i32,
    root: u32,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {} ", self.what, self.count)?;
        if self.what == "broadcast" || self.what == "all_gather" {
            f.write_str("bytes")?;
        } else {
            write!(f, "elements (type {}, operator {})", self.dtype, self.op)?;
        }
        if self.what == "broadcast" || self.what == "reduce" {
            write!(f, " from root {}", self.root)?;
        }
        Ok(())
    }
}

/// One operation as the ledger sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Entry {
    Collective(Shape),
    Send { to: u32, bytes: usize },
    Recv { from: u32, bytes: usize },
}

pub(crate) fn entry(op: &Op) -> Entry {
    let c = |what, count, dtype: super::ffi::DataType, op, root| {
        Entry::Collective(Shape {
            what,
            count,
            dtype: dtype as i32,
            op,
            root,
        })
    };
    use super::ffi::DataType::U8;
    match *op {
        Op::AllReduce {
            count, dtype, op, ..
        } => c("all_reduce", count, dtype, op, 0),
        Op::Reduce {
            count,
            dtype,
            op,
            root,
            ..
        } => c("reduce", count, dtype, op, root),
        Op::Broadcast { count, root, .. } => c("broadcast", count, U8, 0, root),
        Op::AllGather { send_count, .. } => c("all_gather", send_count, U8, 0, 0),
        Op::ReduceScatter {
            recv_count,
            dtype,
            op,
            ..
        } => c("reduce_scatter", recv_count, dtype, op, 0),
        Op::Send { count, peer, .. } => Entry::Send {
            to: peer,
            bytes: count,
        },
        Op::Recv { count, peer, .. } => Entry::Recv {
            from: peer,
            bytes: count,
        },
    }
}

#[derive(Clone, Default)]
struct State {
    /// Each rank's next collective number.
    next: Vec<u64>,
    /// Collectives some ranks issued and others not yet: the shape, the first
    /// rank that issued it, and how many ranks are still to issue it.
    open: HashMap<u64, (Shape, u32, u32)>,
    /// Per (sender, receiver): the transfers one side issued that the other has
    /// not matched yet (`true` for a send), oldest first.
    pending: HashMap<(u32, u32), VecDeque<(bool, usize)>>,
}

/// The operations the ranks of one process's communicator issued and not all
/// matched yet.
pub(crate) struct Ledger {
    ranks: u32,
    state: Mutex<State>,
}

fn disagree(reason: String) -> Error {
    Error::InvalidArgument {
        what: "a collective or transfer".to_owned(),
        reason: format!(
            "{reason}; every rank must issue the same collectives in the same order, and \
             each send must be matched by a receive of its length"
        ),
    }
}

impl Ledger {
    pub(crate) fn new(ranks: u32) -> Ledger {
        Ledger {
            ranks,
            state: Mutex::new(State {
                next: vec![0; ranks as usize],
                ..State::default()
            }),
        }
    }
}

/// Record each ledger's operations (each with its rank, in issue order), or
/// refuse them all and record nothing in any ledger when one disagrees with what
/// another rank issued. The ledgers are locked in address order.
pub(crate) fn record(mut ops: Vec<(&Ledger, Vec<(u32, Entry)>)>) -> Result<()> {
    ops.sort_by_key(|(l, _)| *l as *const Ledger as usize);
    let mut guards = Vec::with_capacity(ops.len());
    let mut updated = Vec::with_capacity(ops.len());
    for (ledger, entries) in &ops {
        let guard = ledger.state.lock_unpoisoned();
        let mut next = guard.clone();
        apply(ledger.ranks, &mut next, entries)?;
        guards.push(guard);
        updated.push(next);
    }
    for (mut guard, next) in guards.into_iter().zip(updated) {
        *guard = next;
    }
    Ok(())
}

fn apply(ranks: u32, next: &mut State, ops: &[(u32, Entry)]) -> Result<()> {
    for &(rank, e) in ops {
        match e {
            Entry::Collective(shape) => {
                let seq = next.next[rank as usize];
                next.next[rank as usize] += 1;
                match next.open.get_mut(&seq) {
                    None => {
                        if ranks > 1 {
                            next.open.insert(seq, (shape, rank, ranks - 1));
                        }
                    }
                    Some((first, by, left)) => {
                        if *first != shape {
                            return Err(disagree(format!(
                                "rank {rank} issues {shape} as its collective #{seq}, but rank \
                                 {by} issued {first}"
                            )));
                        }
                        *left -= 1;
                        if *left == 0 {
                            next.open.remove(&seq);
                        }
                    }
                }
            }
            Entry::Send { to, bytes } => match_transfer(next, (rank, to), true, bytes)?,
            Entry::Recv { from, bytes } => match_transfer(next, (from, rank), false, bytes)?,
        }
    }
    Ok(())
}

/// Match a send (`send`) or receive of `bytes` on the pair `(from, to)` with the
/// oldest unmatched one of the other kind, or queue it.
fn match_transfer(st: &mut State, pair: (u32, u32), send: bool, bytes: usize) -> Result<()> {
    let q = st.pending.entry(pair).or_default();
    match q.front() {
        Some(&(other, theirs)) if other != send => {
            if theirs != bytes {
                let (sent, received) = if send {
                    (bytes, theirs)
                } else {
                    (theirs, bytes)
                };
                return Err(disagree(format!(
                    "rank {} sends {sent} bytes to rank {}, which receives {received}",
                    pair.0, pair.1
                )));
            }
            q.pop_front();
        }
        _ => q.push_back((send, bytes)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_reduce(count: usize) -> Entry {
        Entry::Collective(Shape {
            what: "all_reduce",
            count,
            dtype: 7,
            op: 0,
            root: 0,
        })
    }

    #[test]
    fn collectives_match_by_issue_order_and_a_mismatch_records_nothing() {
        let l = Ledger::new(2);
        record(vec![(&l, vec![(0, all_reduce(10)), (0, all_reduce(20))])]).unwrap();
        // Rank 1's second collective disagrees: refused, its first not recorded.
        let e = record(vec![(&l, vec![(1, all_reduce(10)), (1, all_reduce(21))])]).unwrap_err();
        assert!(e.to_string().contains("collective #1"), "{e}");
        // Nothing of the refused group stayed: the same agreeing pair now passes.
        record(vec![(&l, vec![(1, all_reduce(10))])]).unwrap();
        record(vec![(&l, vec![(1, all_reduce(20))])]).unwrap();
        assert!(l.state.lock_unpoisoned().open.is_empty());
    }

    #[test]
    fn transfers_match_by_order_per_pair_whichever_side_comes_first() {
        let l = Ledger::new(3);
        let send = |to, bytes| Entry::Send { to, bytes };
        let recv = |from, bytes| Entry::Recv { from, bytes };
        // The receive first, then its send; two sends to one peer in order.
        record(vec![(&l, vec![(1, recv(0, 8))])]).unwrap();
        record(vec![(
            &l,
            vec![(0, send(1, 8)), (0, send(2, 4)), (0, send(2, 6))],
        )])
        .unwrap();
        let e = record(vec![(&l, vec![(2, recv(0, 6))])]).unwrap_err();
        assert!(
            e.to_string()
                .contains("sends 4 bytes to rank 2, which receives 6"),
            "{e}"
        );
        record(vec![(&l, vec![(2, recv(0, 4)), (2, recv(0, 6))])]).unwrap();
        assert!(l
            .state
            .lock_unpoisoned()
            .pending
            .values()
            .all(VecDeque::is_empty));
    }

    #[test]
    fn a_refusal_in_one_ledger_records_nothing_in_another() {
        let (a, b) = (Ledger::new(2), Ledger::new(2));
        record(vec![(&b, vec![(0, all_reduce(5))])]).unwrap();
        let group = vec![
            (&a, vec![(0, all_reduce(1))]),
            (&b, vec![(1, all_reduce(6))]),
        ];
        assert!(record(group).is_err());
        assert!(a.state.lock_unpoisoned().open.is_empty());
        assert_eq!(a.state.lock_unpoisoned().next, vec![0, 0]);
    }
}
