//! Shutdown requests from the system: each one arrives as a `()` on the channel that `watch`
//! returns, and the event loop ends on it as on the end of input. What counts as a request differs
//! per system (`unix.rs`: SIGTERM, SIGINT and SIGHUP; `windows.rs`: console control events).
//! A panic ends the process too (`abort_on_panic`).

use std::{io, panic, process};

use crossbeam_channel::Receiver;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

/// Starts watching for shutdown requests; each sends one `()` (one waits at most, the rest are
/// dropped: the first one already ends the server).
pub fn watch() -> io::Result<Receiver<()>> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    sys::deliver(tx)?;
    Ok(rx)
}

/// Makes a panic end the process, in every build: the default report goes to stderr, `cleanup`
/// runs (the server kills every child tree it started), then the process aborts. The release
/// profile aborts on a panic anyway (unwinding costs the size budget 140 KB); doing it here too
/// keeps debug builds, and so the tests, on the same behaviour, and leaves no child behind.
pub fn abort_on_panic(cleanup: impl Fn() + Send + Sync + 'static) {
    let report = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        report(info);
        cleanup();
        process::abort();
    }));
}
