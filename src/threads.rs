//! Starting named threads. Every thread goes through one non-generic function, so the binary holds
//! std's spawn machinery once instead of once per closure type.

use std::io;
use std::thread;

/// Starts a detached thread called `name` running `body`.
pub fn spawn(name: String, body: Box<dyn FnOnce() + Send>) -> io::Result<()> {
    thread::Builder::new().name(name).spawn(body).map(drop)
}
