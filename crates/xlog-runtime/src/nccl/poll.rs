//! One way to wait on NCCL: poll a condition, spinning briefly and then sleeping,
//! until it holds, fails, or a deadline passes. Every wait of this module goes
//! through [`until`], so none of them can wait without end.

use std::time::{Duration, Instant};

use crate::error::Result;

/// How a bounded wait ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The condition held.
    Ready,
    /// `timeout` passed first.
    TimedOut,
}

/// Polls `ready` until it returns `Ok(true)` ([`Waited::Ready`]) or an error
/// (returned as is), or until `timeout` has passed since the call
/// ([`Waited::TimedOut`]; `ready` is polled at least once). Spins `spins` times
/// (short operations end in microseconds), then sleeps `nap` between polls.
pub(crate) fn until(
    timeout: Duration,
    spins: u32,
    nap: Duration,
    mut ready: impl FnMut() -> Result<bool>,
) -> Result<Waited> {
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        if ready()? {
            return Ok(Waited::Ready);
        }
        if start.elapsed() >= timeout {
            return Ok(Waited::TimedOut);
        }
        polls = polls.saturating_add(1);
        if polls < spins {
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn a_condition_that_never_holds_ends_at_the_timeout() {
        let start = Instant::now();
        let mut polls = 0;
        let waited = until(
            Duration::from_millis(20),
            10,
            Duration::from_millis(1),
            || {
                polls += 1;
                Ok(false)
            },
        )
        .unwrap();
        assert_eq!(waited, Waited::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(polls > 10, "it spins, then sleeps and polls again: {polls}");
    }

    #[test]
    fn a_zero_timeout_still_polls_once_and_errors_end_the_wait() {
        assert_eq!(
            until(Duration::ZERO, 1, Duration::ZERO, || Ok(true)).unwrap(),
            Waited::Ready
        );
        let mut polls = 0;
        let e = until(Duration::from_secs(60), 1, Duration::ZERO, || {
            polls += 1;
            if polls == 3 {
                Err(Error::InvalidArgument {
                    what: "poll".to_owned(),
                    reason: "the third poll fails".to_owned(),
                })
            } else {
                Ok(false)
            }
        })
        .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert_eq!(polls, 3);
    }
}
