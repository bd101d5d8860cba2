//! The POSIX side of `files::fd`: a directory is an open descriptor, and names are opened relative
//! to it with `openat` and `O_NOFOLLOW` (or, for a multi-component path, with `openat2`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it), listed with `readdir`, and
//! created, renamed and removed with the `*at` calls.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{EntryKind, Open};

/// An open directory or file.
pub(super) type Handle = OwnedFd;

/// One path component, as the system calls take it.
pub(super) type Name = CString;

/// A component already checked by the shared rules (no `/`, no NUL) as a C string.
pub(super) fn name(bytes: &[u8]) -> io::Result<Name> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// The name or relative path whose bytes are `bytes`: every byte string is one here.
pub(super) fn os_str(bytes: &[u8]) -> Option<&OsStr> {
    Some(OsStr::from_bytes(bytes))
}

/// What a name that is never followed is called here.
pub(super) const LINK: &str = "a symbolic link";

/// The error for a path that names a directory where a file is needed.
pub(super) fn is_a_directory() -> io::Error {
    io::Error::from_raw_os_error(libc::EISDIR)
}

/// The error for a path that goes through something that is not a directory.
pub(super) fn not_a_directory() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOTDIR)
}

/// Opens `path` for reading with `O_NONBLOCK`, following symlinks.
pub(super) fn open_nonblocking(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

/// Opens the directory at `path`, following symlinks (the trusted starting point).
pub(super) fn open_dir(path: &Path) -> io::Result<Handle> {
    let file =
        OpenOptions::new().read(true).custom_flags(TRAVERSE & !libc::O_NOFOLLOW).open(path)?;
    Ok(file.into())
}

/// Opens the single component `name` relative to `dir`, never through a symlink.
pub(super) fn open_at(dir: &Handle, name: &CStr, how: Open) -> io::Result<Handle> {
    openat(dir.as_fd(), name, flags(how), 0)
}

/// Opens `components` beneath `dir` in one call where the kernel offers it; `None` when the
/// caller must walk them one by one.
pub(super) fn open_beneath(
    dir: &Handle,
    components: &[CString],
    how: Open,
) -> Option<io::Result<Handle>> {
    openat2_beneath(dir.as_fd(), components, flags(how))
}

/// What `name` is in `dir`, without following a symlink.
pub(super) fn kind_at(dir: &Handle, name: &CStr) -> io::Result<EntryKind> {
    let stat = fstatat(dir.as_fd(), name, libc::AT_SYMLINK_NOFOLLOW)?;
    Ok(kind_of_mode(stat.st_mode))
}

/// The device and inode of the open directory.
pub(super) fn identity(dir: &Handle) -> io::Result<(u64, u64)> {
    let stat = fstatat(dir.as_fd(), c".", 0)?;
    Ok((stat.st_dev as u64, stat.st_ino as u64))
}

/// The names in `dir` (`.` and `..` included), each with its kind when the listing tells it.
pub(super) fn list(dir: &Handle) -> io::Result<Vec<(OsString, Option<EntryKind>)>> {
    // A fresh descriptor for the listing: its own read offset, and readable even when this one
    // was opened only for traversal.
    let listing = openat(dir.as_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let stream = DirStream::new(listing)?;
    let mut names = Vec::new();
    while let Some((name, d_type)) = stream.next()? {
        let kind = match d_type {
            libc::DT_REG => Some(EntryKind::File),
            libc::DT_DIR => Some(EntryKind::Dir),
            libc::DT_LNK => Some(EntryKind::Symlink),
            libc::DT_UNKNOWN => None,
            _ => Some(EntryKind::Other),
        };
        names.push((OsString::from_vec(name), kind));
    }
    Ok(names)
}

/// Creates the subdirectory `name` of `dir`.
pub(super) fn create_dir_at(dir: &Handle, name: &CStr) -> io::Result<()> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call and the descriptor is open.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) };
    check(rc)
}

/// Creates the new file `name` in `dir` for writing; fails if anything, a symlink included,
/// already has that name.
pub(super) fn create_new_at(dir: &Handle, name: &CStr) -> io::Result<Handle> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    openat(dir.as_fd(), name, flags, 0o666)
}

/// Renames `from` to `to`, both in `dir`; `to` is replaced atomically, never followed.
pub(super) fn rename_at(dir: &Handle, from: &CStr, to: &CStr) -> io::Result<()> {
    let fd = dir.as_raw_fd();
    // SAFETY: both names are NUL-terminated strings that outlive the call and `fd` is open.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) };
    check(rc)
}

/// Removes the file `name` from `dir`.
pub(super) fn remove_file_at(dir: &Handle, name: &CStr) -> io::Result<()> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call and the descriptor is open.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
    check(rc)
}

fn flags(how: Open) -> libc::c_int {
    match how {
        Open::Traverse => TRAVERSE,
        Open::ReadFile => READ_FILE,
    }
}

/// Flags for a directory that is only traversed: `O_PATH` where Linux has it (no read permission
/// needed, as for a path lookup), otherwise read-only.
#[cfg(any(target_os = "linux", target_os = "android"))]
const TRAVERSE: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const TRAVERSE: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

/// Flags for a file that is read: never through a symlink, never blocking in `open`.
const READ_FILE: libc::c_int = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// Keeps `file` only if it is a regular file, then clears `O_NONBLOCK` for ordinary reads.
pub(super) fn regular(file: File) -> io::Result<File> {
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let fd = file.as_raw_fd();
    // SAFETY: fcntl(2) with F_GETFL/F_SETFL only reads and sets the status flags of an open
    // descriptor that `file` owns for the whole block.
    #[allow(unsafe_code)]
    let rc = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 { flags } else { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) }
    };
    check(rc)?;
    Ok(file)
}

fn kind_of_mode(mode: libc::mode_t) -> EntryKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFDIR => EntryKind::Dir,
        libc::S_IFLNK => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// `openat(2)` with `O_CLOEXEC`, retried on `EINTR`.
fn openat(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is NUL-terminated and outlives the call; `dir` is an open descriptor.
        #[allow(unsafe_code)]
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        if fd >= 0 {
            // SAFETY: openat just returned this descriptor, so nothing else owns it.
            #[allow(unsafe_code)]
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            return Ok(owned);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// `fstatat(2)` of `name` relative to `dir`.
fn fstatat(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<libc::stat> {
    let mut stat = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `stat` points to writable memory of the right type, and
    // the structure is read only after fstatat reports that it filled it in.
    #[allow(unsafe_code)]
    unsafe {
        check(libc::fstatat(dir.as_raw_fd(), name.as_ptr(), stat.as_mut_ptr(), flags))?;
        Ok(stat.assume_init())
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Opens `components` beneath `dir` in one `openat2(2)` call with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`, or returns `None` when the kernel (or a seccomp filter) does not offer
/// `openat2`, in which case the caller walks the components itself.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn openat2_beneath(
    dir: BorrowedFd<'_>,
    components: &[CString],
    flags: libc::c_int,
) -> Option<io::Result<OwnedFd>> {
    use std::sync::atomic::{AtomicBool, Ordering};

    /// The kernel's `struct open_how` (libc's is `#[non_exhaustive]`, so it cannot be built here).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }

    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) || component_walk_forced() {
        return None;
    }
    let mut path = Vec::new();
    for (idx, name) in components.iter().enumerate() {
        if idx > 0 {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
    }
    let Ok(path) = CString::new(path) else { return None };
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    loop {
        // SAFETY: openat2(2) reads the NUL-terminated `path` and `size_of::<OpenHow>()` bytes of
        // `how`, both alive for the call; `dir` is an open descriptor.
        #[allow(unsafe_code)]
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            // SAFETY: openat2 just returned this descriptor, so nothing else owns it.
            #[allow(unsafe_code)]
            let owned = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
            return Some(Ok(owned));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOSYS) | Some(libc::EPERM) => {
                UNAVAILABLE.store(true, Ordering::Relaxed);
                return None;
            }
            // Too long for one call: the component walk has no such limit.
            Some(libc::ENAMETOOLONG) => return None,
            _ => return Some(Err(err)),
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn openat2_beneath(
    _dir: BorrowedFd<'_>,
    _components: &[CString],
    _flags: libc::c_int,
) -> Option<io::Result<OwnedFd>> {
    None
}

/// Runs `check` once as the relay runs (with openat2 where the kernel has it) and, where openat2
/// exists, once more with the component walk.
#[cfg(test)]
pub(super) fn both_ways(check: impl Fn()) {
    check();
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::sync::atomic::Ordering;
        FORCE_COMPONENT_WALK.store(true, Ordering::Relaxed);
        check();
        FORCE_COMPONENT_WALK.store(false, Ordering::Relaxed);
    }
}

/// Tests set this to exercise the component walk on kernels that have `openat2`.
#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
pub(super) static FORCE_COMPONENT_WALK: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(any(target_os = "linux", target_os = "android"))]
fn component_walk_forced() -> bool {
    #[cfg(test)]
    return FORCE_COMPONENT_WALK.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(test))]
    false
}

/// A `DIR*` stream that owns its descriptor and closes it on drop.
struct DirStream(*mut libc::DIR);

impl DirStream {
    fn new(fd: OwnedFd) -> io::Result<DirStream> {
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` is an open directory descriptor that we own; on success the stream takes
        // it over, on failure it is still ours and is closed here.
        #[allow(unsafe_code)]
        let stream = unsafe { libc::fdopendir(raw) };
        if stream.is_null() {
            let err = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `raw` is still owned by nobody else.
            #[allow(unsafe_code)]
            let owned = unsafe { OwnedFd::from_raw_fd(raw) };
            drop(owned);
            return Err(err);
        }
        Ok(DirStream(stream))
    }

    /// The next entry's name and `d_type`, `None` at the end of the directory.
    fn next(&self) -> io::Result<Option<(Vec<u8>, u8)>> {
        set_errno(0);
        // SAFETY: the stream is open (it is closed only on drop) and used by one thread; the entry
        // readdir returns stays valid until the next readdir on this stream, and is copied first.
        #[allow(unsafe_code)]
        unsafe {
            let entry = libc::readdir(self.0);
            if entry.is_null() {
                let err = io::Error::last_os_error();
                return if err.raw_os_error() == Some(0) { Ok(None) } else { Err(err) };
            }
            let name = CStr::from_ptr((*entry).d_name.as_ptr()).to_bytes().to_vec();
            Ok(Some((name, (*entry).d_type)))
        }
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: the stream is open and is closed exactly once, here.
        #[allow(unsafe_code)]
        unsafe {
            libc::closedir(self.0);
        }
    }
}

/// Sets `errno`, which readdir(3) leaves alone at the end of a directory and sets on an error.
fn set_errno(value: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's lifetime.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[allow(unsafe_code)]
    unsafe {
        *libc::__errno_location() = value;
    }
    // SAFETY: __error returns this thread's errno slot, valid for the thread's lifetime.
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    #[allow(unsafe_code)]
    unsafe {
        *libc::__error() = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::files::fd::open_regular;
    use crate::testutil::TempDir;

    #[test]
    fn open_regular_clears_nonblock() {
        let tmp = TempDir::new();
        let file = open_regular(&tmp.file("a.txt", "alpha")).unwrap();
        // SAFETY: F_GETFL only reads the flags of the open descriptor `file` owns.
        #[allow(unsafe_code)]
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }
}
