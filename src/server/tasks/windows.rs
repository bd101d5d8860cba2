//! Task ids on Windows: random bytes from the system's generator.

use std::io;

/// Windows' system RNG, `ProcessPrng` (the call std itself uses), which is documented never to fail.
pub(super) fn random_bytes() -> io::Result<[u8; 16]> {
    let mut bytes = [0u8; 16];
    // SAFETY: the buffer is writable for exactly the length passed.
    #[allow(unsafe_code)]
    let ok = unsafe {
        windows_sys::Win32::Security::Cryptography::ProcessPrng(bytes.as_mut_ptr(), bytes.len())
    };
    if ok == 0 {
        return Err(io::Error::other("the system random number generator failed"));
    }
    Ok(bytes)
}
