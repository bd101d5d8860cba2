//! The POSIX side of `shutdown`: SIGTERM, SIGINT and SIGHUP, read from signal-hook's iterator by a
//! thread of their own. SIGCHLD is never registered: the executor polls
//! its children.

use std::io;
use std::thread;

use crossbeam_channel::Sender;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Sends `()` on `tx` for each of the signals, from a thread of its own.
pub(super) fn deliver(tx: Sender<()>) -> io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|err| io::Error::new(err.kind(), format!("could not watch signals: {err}")))?;
    thread::Builder::new().name("signals".into()).spawn(move || {
        for _ in signals.forever() {
            let _ = tx.try_send(());
        }
    })?;
    Ok(())
}
