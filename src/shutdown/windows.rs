//! The Windows side of `shutdown`: console control events (Ctrl+C, Ctrl+Break, the console closing,
//! log-off and system shutdown) through `SetConsoleCtrlHandler`. The handler runs on a thread the
//! system starts for it and only signals the event loop. After a close, log-off or shutdown event
//! the system ends the process soon after the handler returns; the children's Job Objects close
//! with it and kill them.

use std::io;
use std::sync::OnceLock;

use crossbeam_channel::Sender;
use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
use windows_sys::core::BOOL;

/// Where the handler sends; set once, before the handler is installed.
static SHUTDOWN: OnceLock<Sender<()>> = OnceLock::new();

/// Sends `()` on `tx` for each console control event.
pub(super) fn deliver(tx: Sender<()>) -> io::Result<()> {
    SHUTDOWN.set(tx).map_err(|_| io::Error::other("the shutdown watch is already running"))?;
    // SAFETY: `on_event` has the signature the system calls and stays valid for the whole
    // process (it is a plain function).
    #[allow(unsafe_code)]
    let installed = unsafe {
        let handler: unsafe extern "system" fn(u32) -> BOOL = on_event;
        SetConsoleCtrlHandler(Some(handler), 1)
    };
    if installed == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Every event is a shutdown request; returning true tells the system that it was handled.
extern "system" fn on_event(_event: u32) -> BOOL {
    if let Some(tx) = SHUTDOWN.get() {
        let _ = tx.try_send(());
    }
    1
}
