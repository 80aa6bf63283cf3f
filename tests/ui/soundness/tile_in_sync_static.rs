//! A tile handed to another thread through a `Sync` static would let two threads
//! hold one thread's phase.
#![allow(dead_code, unused_variables)]
use xlog::device::shared::{Tile, Writing};

static PARKED: std::sync::Mutex<Option<Tile<f32, Writing>>> = std::sync::Mutex::new(None);

fn main() {}
