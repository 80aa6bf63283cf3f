//! The runtime's GPU suite. Opt-in: built only with `--features gpu-tests`, and
//! then every test fails (never passes) when no CUDA device can be opened.
//!
//! Run it on a GPU machine with `scripts/gpu/run.sh` (see the README), or here
//! with `cargo test -p xlog-runtime --features gpu-tests --test gpu`.
//! `XLOG_BACKEND=direct` runs it on the direct backend, as the sanitizer runs do.

mod common;

mod alloc;
mod contexts;
mod copies;
mod hazards;
mod launch;
mod nccl;
mod pinned;
mod pool;
mod runtime;
mod simulator;
