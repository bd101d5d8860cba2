//! Task ids on POSIX: random bytes from `/dev/urandom`.

use std::fs::File;
use std::io::{self, Read};

/// 16 random bytes from the system.
pub(super) fn random_bytes() -> io::Result<[u8; 16]> {
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}
