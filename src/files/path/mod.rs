//! The jail's path rules, one side per system: where a reference lands relative to the project
//! root before anything is touched (`lexical`, over the root as `lexical_root` gives it, and
//! `holds_below` for what the jail takes to be inside a root at the top of the file system),
//! whether a resolved path lies under the resolved root (`final_within`), and how a label writes a
//! reference (`with_slashes`) and how a path is written for the Gemini CLI's `@` grammar (`cli_path`). `posix.rs` reads paths as bytes split at `/`; `windows.rs` holds
//! the Windows rules as pure functions, so every system tests them.

#[cfg(unix)]
mod posix;
#[cfg(unix)]
use posix as sys;
#[cfg(any(windows, test))]
pub(crate) mod windows;
#[cfg(windows)]
use windows as sys;

pub(crate) use sys::{cli_path, final_within, holds_below, lexical, lexical_root, with_slashes};

/// Where a path lands relative to the project root, decided by the system's path rules alone,
/// before anything is touched: an `@` reference the jail checks, or a path that a caller names for
/// writing (`gemini-image`'s `outputPath`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// Inside the root: the path relative to it, its components joined with `/` (empty for the
    /// root itself). The jail opens these components one by one beneath the root's handle.
    Inside(String),
    /// Names a place outside the project: above the root, elsewhere on the machine or (on
    /// Windows) another drive, a network share, the device or object namespace, a drive's current
    /// directory, or a home directory (`~`). The jail refuses the call with its "outside the
    /// project directory" text.
    Outside,
    /// Windows only: inside the project, but Windows would read some component as something other
    /// than the file written: a device (`CON`, `NUL.txt`), an alternate data stream
    /// (`a.txt:stream`), or a name the Win32 layer trims (`a.txt.`, `a.txt `); also any name with
    /// a control character. The jail never opens it, so the token stays verbatim, like a path that
    /// does not exist.
    #[cfg_attr(unix, allow(dead_code))]
    NotAFile,
}
