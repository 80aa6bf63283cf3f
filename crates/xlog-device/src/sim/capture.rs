//! Panics of simulated threads: a chained panic hook that records the message and
//! location of a panic on a simulated thread (printing nothing, no backtrace), and
//! hands every other panic to the hook installed before it.

use core::cell::RefCell;
use std::panic::{self, PanicHookInfo};
use std::string::{String, ToString};
use std::sync::Once;

use super::context;
use crate::panic::{PanicRecord, FILE_CAPACITY, MESSAGE_CAPACITY, STATE_COMPLETE};
use crate::thread::Dim3;

struct Captured {
    message: String,
    file: String,
    line: u32,
    column: u32,
}

std::thread_local! {
    /// The last panic of a simulated thread on this OS thread, until the scheduler
    /// takes it.
    static CAPTURED: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Installs the hook, once per process, in front of the hook installed before.
pub(super) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(std::boxed::Box::new(move |info: &PanicHookInfo<'_>| {
            if context::in_launch() {
                capture(info);
            } else {
                previous(info);
            }
        }));
    });
}

fn capture(info: &PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => s.to_string(),
        (None, Some(s)) => s.clone(),
        (None, None) => String::from("<panic payload that is not a string>"),
    };
    let (file, line, column) = match info.location() {
        Some(l) => (l.file().to_string(), l.line(), l.column()),
        None => (String::from("<unknown>"), 0, 0),
    };
    CAPTURED.with(|c| {
        *c.borrow_mut() = Some(Captured {
            message,
            file,
            line,
            column,
        })
    });
}

/// The record of the panic just captured on this OS thread, for `thread` of `block`.
pub(super) fn take(thread: Dim3, block: Dim3) -> PanicRecord {
    match CAPTURED.with(|c| c.borrow_mut().take()) {
        Some(captured) => fill(captured, thread, block),
        None => with_message(
            "<panic not captured: another panic hook replaced the simulator's>",
            thread,
            block,
        ),
    }
}

/// A record for `thread` of `block` that unwound without a panic the hook saw
/// (`resume_unwind`), saying `message`; its location is unknown.
pub(super) fn with_message(message: &str, thread: Dim3, block: Dim3) -> PanicRecord {
    let captured = Captured {
        message: message.to_string(),
        file: String::from("<unknown>"),
        line: 0,
        column: 0,
    };
    fill(captured, thread, block)
}

/// The record of `captured`, cut to the record's capacities.
fn fill(captured: Captured, thread: Dim3, block: Dim3) -> PanicRecord {
    let mut r = PanicRecord::new();
    let file = captured.file.as_bytes();
    let file_cut = file.len().saturating_sub(FILE_CAPACITY);
    let file = &file[file_cut..];
    let message = captured.message.as_bytes();
    let mut kept = message.len().min(MESSAGE_CAPACITY);
    while !captured.message.is_char_boundary(kept) {
        kept -= 1;
    }
    r.file[..file.len()].copy_from_slice(file);
    r.file_len = file.len() as u32;
    r.message[..kept].copy_from_slice(&message[..kept]);
    r.message_len = kept as u32;
    r.truncated = u32::from(file_cut > 0) | (u32::from(kept < message.len()) << 1);
    r.line = captured.line;
    r.column = captured.column;
    r.thread = [thread.x, thread.y, thread.z];
    r.block = [block.x, block.y, block.z];
    r.state = STATE_COMPLETE;
    r
}
