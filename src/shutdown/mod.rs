//! Shutdown requests from the system: each one arrives as a `()` on the channel that `watch`
//! returns, and the event loop ends on it as on the end of input. What counts as a request differs
//! per system (`unix.rs`: SIGTERM, SIGINT and SIGHUP; `windows.rs`: console control events).

use std::io;

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
