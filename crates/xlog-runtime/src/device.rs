//! An opened CUDA device: its retained primary context and its limits.

use std::fmt;
use std::sync::Arc;

pub use crate::driver::DeviceInfo;
use crate::driver::{self, Context};
use crate::error::Result;

/// An opened device. Cheap to clone. Backends and runtimes are built on one.
#[derive(Clone)]
pub struct Device {
    pub(crate) ctx: Arc<Context>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ctx.info.ordinal)
            .field("name", &self.ctx.info.name)
            .finish()
    }
}

impl Device {
    /// Open device `ordinal` (retaining its primary context).
    ///
    /// Fails with [`crate::Error::NoDriver`] when no driver is installed,
    /// [`crate::Error::NoDevice`] when the driver sees no GPU, and
    /// [`crate::Error::DeviceOutOfRange`] for a bad ordinal.
    pub fn open(ordinal: u32) -> Result<Device> {
        Ok(Device {
            ctx: Arc::new(Context::open(ordinal)?),
        })
    }

    /// Number of CUDA devices on this machine: 0 when the driver sees none (where
    /// [`Device::open`] fails with [`crate::Error::NoDevice`]). Fails with
    /// [`crate::Error::NoDriver`] when no driver is installed.
    pub fn count() -> Result<u32> {
        match driver::device_count() {
            Err(crate::Error::NoDevice) => Ok(0),
            counted => counted,
        }
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ctx.info.ordinal
    }

    /// The device's limits and identity.
    pub fn info(&self) -> &DeviceInfo {
        &self.ctx.info
    }

    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx.bind()
    }
}
