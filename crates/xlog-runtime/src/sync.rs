//! Locking that survives a panic elsewhere.
//!
//! The runtime's locks guard bookkeeping (use states, caches, pending frees) whose
//! every update leaves it consistent before anything can panic, so a lock a panic
//! left behind holds valid data: the runtime keeps going rather than turning one
//! panic into another on every later call. Mutexes are locked through
//! [`Unpoisoned`]; a buffer's use state, locked by every launch that touches the
//! buffer and rarely by two threads at once, sits behind the cheaper [`SpinLock`].

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// [`Mutex::lock`] that ignores poisoning (see the module docs).
pub(crate) trait Unpoisoned<T> {
    /// The guard, poisoned or not.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
}

impl<T> Unpoisoned<T> for Mutex<T> {
    #[inline]
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A lock for state that is rarely contended and held for a few instructions: a
/// buffer's use state, which a launch holds from its plan to its commit. Taking it
/// is one compare-and-swap and releasing it one store, where a [`Mutex`] pays a
/// second read-modify-write to release (a typed launch takes one per buffer). A
/// thread that finds it taken spins briefly, then yields until it is free.
///
/// Like [`Unpoisoned`] locks it never poisons: a panic while it is held releases it
/// (the guard's `Drop` runs during unwinding), and the state it guards is left
/// consistent before anything can panic (the module docs).
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one thread at a time (the flag is taken
// with acquire ordering and released with release ordering, so each holder sees
// the previous holder's writes), which is what `Mutex<T>` needs `T: Send` for.
unsafe impl<T: Send> Send for SpinLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// Spins on a taken [`SpinLock`] before yielding the thread.
const SPINS_BEFORE_YIELD: u32 = 64;

impl<T> SpinLock<T> {
    /// A lock holding `value`, free.
    pub(crate) const fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, waiting while another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Wait until it looks free before trying again, reading only.
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// The value through `&mut`: no other thread can hold the lock.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

/// A held [`SpinLock`]; dropping it releases the lock. Neither `Send` nor `Sync`
/// (like a `MutexGuard`, whose `Sync` would need `T: Sync`).
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    _not_send: PhantomData<*const ()>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads incrementing a plain counter under the lock lose no update: the lock
    /// excludes them from each other and orders each holder after the last.
    #[test]
    fn spin_lock_excludes_and_orders_its_holders() {
        let lock = SpinLock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let mut v = lock.lock();
                        // A read and a write apart: a second holder would lose one.
                        let seen = *v;
                        std::hint::black_box(&seen);
                        *v = seen + 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), 80_000);
    }

    /// A panic while the lock is held releases it.
    #[test]
    fn a_panic_while_held_releases_the_lock() {
        let lock = SpinLock::new(1u32);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = lock.lock();
            panic!("while held");
        }));
        assert!(r.is_err());
        assert_eq!(*lock.lock(), 1);
    }
}
