//! Locking that survives a panic elsewhere.
//!
//! The runtime's mutexes guard bookkeeping (use states, caches, pending frees) whose
//! every update leaves it consistent before anything can panic, so a poisoned lock
//! holds valid data: the runtime keeps going rather than turning one panic into
//! another on every later call.

use std::sync::{Condvar, Mutex, MutexGuard};

/// [`Mutex::lock`] and [`Mutex::get_mut`] that ignore poisoning (see the module docs).
pub(crate) trait Unpoisoned<T> {
    /// The guard, poisoned or not.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
    /// The data through `&mut`, poisoned or not.
    fn get_mut_unpoisoned(&mut self) -> &mut T;
}

impl<T> Unpoisoned<T> for Mutex<T> {
    #[inline]
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[inline]
    fn get_mut_unpoisoned(&mut self) -> &mut T {
        self.get_mut().unwrap_or_else(|p| p.into_inner())
    }
}

/// [`Condvar::wait`] that ignores poisoning, as [`Unpoisoned`] does for locks.
pub(crate) fn wait_unpoisoned<'a, T>(
    changed: &Condvar,
    guard: MutexGuard<'a, T>,
) -> MutexGuard<'a, T> {
    changed.wait(guard).unwrap_or_else(|p| p.into_inner())
}
