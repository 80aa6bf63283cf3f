//! The set of blocks a backend has handed out, keyed by full identity.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{BlockId, DeviceBlock};
use crate::error::{Error, Result};
use crate::sync::Unpoisoned;

/// Device addresses are already well spread; a multiplicative hash is enough and
/// keeps the allocation path cheap.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type AddressMap<V> = HashMap<u64, V, BuildHasherDefault<AddressHasher>>;

/// Live blocks of one backend. Refuses a block whose generation does not match
/// the one live at its address (a stale or forged handle) without changing anything.
/// Also counts their bytes, so backends need no second counter to keep in step.
#[derive(Default)]
pub(crate) struct LiveBlocks {
    map: Mutex<AddressMap<(BlockId, usize)>>,
    bytes: AtomicUsize,
}

impl LiveBlocks {
    pub(crate) fn insert(&self, block: &DeviceBlock) {
        if block.bytes() == 0 {
            return;
        }
        self.lock().insert(block.ptr(), (block.id(), block.bytes()));
        self.bytes.fetch_add(block.bytes(), Ordering::AcqRel);
    }

    /// Bytes of the blocks currently live.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// Remove `block` if it is the live block at its address.
    pub(crate) fn remove(&self, block: &DeviceBlock) -> Result<()> {
        if block.bytes() == 0 {
            return Ok(());
        }
        let mut map = self.lock();
        match map.get(&block.ptr()) {
            Some((id, bytes)) if *id == block.id() && *bytes == block.bytes() => {
                map.remove(&block.ptr());
                self.bytes.fetch_sub(block.bytes(), Ordering::AcqRel);
                Ok(())
            }
            _ => Err(Error::StaleBlock {
                ptr: block.ptr(),
                generation: block.id().generation.0,
            }),
        }
    }

    /// Put a block back after a failed free.
    pub(crate) fn restore(&self, block: &DeviceBlock) {
        self.insert(block);
    }

    pub(crate) fn contains(&self, id: BlockId) -> bool {
        self.lock()
            .get(&id.ptr)
            .map(|(live, _)| *live == id)
            .unwrap_or(false)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AddressMap<(BlockId, usize)>> {
        self.map.lock_unpoisoned()
    }
}
