//! The set of blocks a backend has handed out, keyed by full identity.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{BlockId, DeviceBlock};
use crate::error::{Error, Result};

/// Live blocks of one backend. Refuses a block whose generation does not match
/// the one live at its address (a stale or forged handle) without changing anything.
#[derive(Default)]
pub(crate) struct LiveBlocks {
    map: Mutex<HashMap<u64, (BlockId, usize)>>,
}

impl LiveBlocks {
    pub(crate) fn insert(&self, block: &DeviceBlock) {
        if block.bytes() == 0 {
            return;
        }
        self.lock().insert(block.ptr(), (block.id(), block.bytes()));
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
                Ok(())
            }
            _ => Err(Error::StaleBlock {
                ptr: block.ptr(),
                generation: block.id().generation,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (BlockId, usize)>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}
