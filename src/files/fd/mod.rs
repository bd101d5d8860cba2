//! Files and directories opened through descriptors, so that a concurrent writer cannot swap a path
//! for a symlink after the check: directories beneath a trusted one without following any symlink,
//! listings read from a descriptor, the non-blocking regular-file open that every read of the relay
//! goes through, and the pieces of an atomic write.
//!
//! Nothing here re-resolves a path string after a check: a directory is opened once, and every
//! later name is looked up relative to its descriptor with `O_NOFOLLOW` (or with `openat2`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` for a multi-component path, where the kernel has it).

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// What a name in a directory is, without following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// An open directory. Names are resolved relative to it and never through a symlink.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: OsString,
    pub(crate) kind: Kind,
}

/// Opens `path` for reading only if it is a regular file, without ever blocking on a FIFO or a
/// device: the file is opened with `O_NONBLOCK`, its type checked on the descriptor, and only then
/// is `O_NONBLOCK` cleared. Symlinks are followed (use [`Dir::open_file`] inside the project).
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    regular(file)
}

impl Dir {
    /// Opens the directory at `path`, following symlinks: `path` is the trusted starting point
    /// (the canonical project root, or the working directory).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let file =
            OpenOptions::new().read(true).custom_flags(TRAVERSE & !libc::O_NOFOLLOW).open(path)?;
        Ok(Dir { fd: file.into() })
    }

    /// Opens the subdirectory `name` (one path component), refusing a symlink.
    pub(crate) fn child_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let fd = openat(self.fd.as_fd(), &component(name)?, TRAVERSE, 0)?;
        Ok(Dir { fd })
    }

    /// Opens the directory `rel` beneath this one (a relative path of plain components: no `..`,
    /// no leading `/`; empty or `.` components are skipped), refusing symlinks on the way.
    pub(crate) fn dir_beneath(&self, rel: &[u8]) -> io::Result<Dir> {
        let components = components(rel)?;
        if components.is_empty() {
            return Ok(Dir { fd: self.fd.try_clone()? });
        }
        if let Some(result) = openat2_beneath(self.fd.as_fd(), &components, TRAVERSE) {
            return result.map(|fd| Dir { fd });
        }
        self.walk_components(&components)
    }

    /// What `name` is, without following a symlink.
    pub(crate) fn kind(&self, name: &OsStr) -> io::Result<Kind> {
        let stat = fstatat(self.fd.as_fd(), &component(name)?, libc::AT_SYMLINK_NOFOLLOW)?;
        Ok(kind_of_mode(stat.st_mode))
    }

    /// The device and inode of this directory, which identify it.
    pub(crate) fn identity(&self) -> io::Result<(u64, u64)> {
        let stat = fstatat(self.fd.as_fd(), c".", 0)?;
        Ok((stat.st_dev as u64, stat.st_ino as u64))
    }

    /// Opens the regular file `name` (one component) for reading, refusing a symlink and, without
    /// blocking, anything that is not a regular file.
    pub(crate) fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let fd = openat(self.fd.as_fd(), &component(name)?, READ_FILE, 0)?;
        regular(File::from(fd))
    }

    /// Opens the regular file `rel` beneath this directory (see [`Dir::dir_beneath`] for `rel`),
    /// refusing symlinks anywhere on the way and anything but a regular file at the end.
    pub(crate) fn file_beneath(&self, rel: &[u8]) -> io::Result<File> {
        let components = components(rel)?;
        let Some((name, parents)) = components.split_last() else {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        };
        if let Some(result) = openat2_beneath(self.fd.as_fd(), &components, READ_FILE) {
            return regular(File::from(result?));
        }
        let parent = self.walk_components(parents)?;
        let fd = openat(parent.fd.as_fd(), name, READ_FILE, 0)?;
        regular(File::from(fd))
    }

    /// The entries of this directory (without `.` and `..`), in the order the file system gives.
    pub(crate) fn entries(&self) -> io::Result<Vec<Entry>> {
        // A fresh descriptor for the listing: its own read offset, and readable even when this one
        // was opened only for traversal.
        let listing = openat(self.fd.as_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        let stream = DirStream::new(listing)?;
        let mut entries = Vec::new();
        while let Some((name, d_type)) = stream.next()? {
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from_vec(name);
            let kind = match d_type {
                libc::DT_REG => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => Kind::Symlink,
                libc::DT_UNKNOWN => match self.kind(&name) {
                    Ok(kind) => kind,
                    // The entry went away since the listing; leave it out.
                    Err(_) => continue,
                },
                _ => Kind::Other,
            };
            entries.push(Entry { name, kind });
        }
        Ok(entries)
    }

    /// Creates the subdirectory `name` (one component).
    pub(crate) fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        let name = component(name)?;
        // SAFETY: `name` is a NUL-terminated string that outlives the call and the descriptor is open.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::mkdirat(self.fd.as_raw_fd(), name.as_ptr(), 0o777) };
        check(rc)
    }

    /// Creates the new file `name` (one component) for writing; fails if anything, a symlink
    /// included, already has that name.
    pub(crate) fn create_new_file(&self, name: &OsStr) -> io::Result<File> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        Ok(File::from(openat(self.fd.as_fd(), &component(name)?, flags, 0o666)?))
    }

    /// Renames `from` to `to`, both names in this directory; `to` is replaced atomically (a
    /// symlink named `to` is replaced, never followed).
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (component(from)?, component(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: both names are NUL-terminated strings that outlive the call and `fd` is open.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) };
        check(rc)
    }

    /// Removes the file `name` (one component) from this directory.
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let name = component(name)?;
        // SAFETY: `name` is a NUL-terminated string that outlives the call and the descriptor is open.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0) };
        check(rc)
    }

    /// Opens the directories `components` one by one, each with `O_NOFOLLOW`.
    fn walk_components(&self, components: &[CString]) -> io::Result<Dir> {
        let mut current = None;
        for name in components {
            let parent = current.as_ref().map_or(self.fd.as_fd(), |it: &OwnedFd| it.as_fd());
            current = Some(openat(parent, name, TRAVERSE, 0)?);
        }
        match current {
            Some(fd) => Ok(Dir { fd }),
            None => Ok(Dir { fd: self.fd.try_clone()? }),
        }
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
fn regular(file: File) -> io::Result<File> {
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

/// One path component as a C string: not empty, not `.` or `..`, without `/` or NUL.
fn component(name: &OsStr) -> io::Result<CString> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a single path component"));
    }
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// The components of a relative path, skipping empty and `.` ones; `..` and absolute paths are
/// refused (callers resolve them lexically first).
fn components(rel: &[u8]) -> io::Result<Vec<CString>> {
    if rel.first() == Some(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a relative path"));
    }
    rel.split(|&it| it == b'/')
        .filter(|it| !it.is_empty() && *it != b".")
        .map(|it| component(OsStr::from_bytes(it)))
        .collect()
}

fn kind_of_mode(mode: libc::mode_t) -> Kind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
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

/// Tests set this to exercise the component walk on kernels that have `openat2`.
#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
static FORCE_COMPONENT_WALK: std::sync::atomic::AtomicBool =
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

    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    use crate::testutil::{TempDir, mkfifo};

    fn read(mut file: File) -> String {
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        text
    }

    /// Runs `check` once with openat2 (where the kernel has it) and once with the component walk.
    fn both_ways(check: impl Fn()) {
        check();
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use std::sync::atomic::Ordering;
            FORCE_COMPONENT_WALK.store(true, Ordering::Relaxed);
            check();
            FORCE_COMPONENT_WALK.store(false, Ordering::Relaxed);
        }
    }

    #[test]
    fn open_regular_refuses_fifos_and_directories_without_blocking() {
        let tmp = TempDir::new();
        let file = tmp.file("a.txt", "alpha");
        assert_eq!(read(open_regular(&file).unwrap()), "alpha");
        mkfifo(&tmp.path().join("pipe"));
        let started = Instant::now();
        let err = open_regular(&tmp.path().join("pipe")).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(open_regular(tmp.path()).unwrap_err().to_string(), "not a regular file");
        let missing = open_regular(&tmp.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn open_regular_clears_nonblock() {
        let tmp = TempDir::new();
        let file = open_regular(&tmp.file("a.txt", "alpha")).unwrap();
        // SAFETY: F_GETFL only reads the flags of the open descriptor `file` owns.
        #[allow(unsafe_code)]
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }

    #[test]
    fn files_and_directories_beneath_without_symlinks() {
        let outside = TempDir::new();
        outside.file("secret.txt", "SECRET");
        let tmp = TempDir::new();
        tmp.file("a/b/c.txt", "deep");
        tmp.link("a/link.txt", &tmp.path().join("a/b/c.txt"));
        tmp.link("a/linkdir", &tmp.path().join("a/b"));
        tmp.link("out", outside.path());
        let root = Dir::open(tmp.path()).unwrap();
        both_ways(|| {
            assert_eq!(read(root.file_beneath(b"a/b/c.txt").unwrap()), "deep");
            assert_eq!(read(root.file_beneath(b"./a//b/./c.txt").unwrap()), "deep");
            assert_eq!(
                read(root.dir_beneath(b"a/b").unwrap().open_file(OsStr::new("c.txt")).unwrap()),
                "deep"
            );
            assert!(root.file_beneath(b"a/link.txt").is_err());
            assert!(root.file_beneath(b"a/linkdir/c.txt").is_err());
            assert!(root.file_beneath(b"out/secret.txt").is_err());
            assert!(root.dir_beneath(b"out").is_err());
            assert!(root.dir_beneath(b"a/linkdir").is_err());
            assert!(root.file_beneath(b"../x").is_err());
            assert!(root.file_beneath(b"/etc/passwd").is_err());
            assert!(root.file_beneath(b"a/b").is_err());
            assert!(root.file_beneath(b"").is_err());
        });
    }

    #[test]
    fn kinds_and_entries() {
        let tmp = TempDir::new();
        tmp.file("f.txt", "f");
        tmp.dir("d");
        tmp.link("l", Path::new("f.txt"));
        mkfifo(&tmp.path().join("p"));
        let root = Dir::open(tmp.path()).unwrap();
        let mut entries = root.entries().unwrap();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let kinds: Vec<(String, Kind)> = entries
            .into_iter()
            .map(|it| (it.name.to_string_lossy().into_owned(), it.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("d".to_string(), Kind::Dir),
                ("f.txt".to_string(), Kind::File),
                ("l".to_string(), Kind::Symlink),
                ("p".to_string(), Kind::Other),
            ]
        );
        assert_eq!(root.kind(OsStr::new("l")).unwrap(), Kind::Symlink);
        assert_eq!(root.kind(OsStr::new("p")).unwrap(), Kind::Other);
        assert!(root.kind(OsStr::new("missing")).is_err());
        // Listing twice gives the same entries (each listing has its own offset).
        assert_eq!(root.entries().unwrap().len(), 4);
        assert!(root.child_dir(OsStr::new("l")).is_err());
        assert!(root.open_file(OsStr::new("l")).is_err());
        assert_eq!(root.open_file(OsStr::new("p")).unwrap_err().to_string(), "not a regular file");
        assert_ne!(
            root.identity().unwrap(),
            root.child_dir(OsStr::new("d")).unwrap().identity().unwrap()
        );
    }

    #[test]
    fn names_must_be_single_components() {
        let tmp = TempDir::new();
        let root = Dir::open(tmp.path()).unwrap();
        for name in ["", ".", "..", "a/b", "a\0b"] {
            let err = root.open_file(OsStr::new(name)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        }
    }

    #[test]
    fn create_write_and_rename_in_place() {
        let tmp = TempDir::new();
        let outside = TempDir::new();
        let victim = outside.file("victim.png", "VICTIM");
        tmp.link("logo.png", &victim);
        let root = Dir::open(tmp.path()).unwrap();
        root.create_dir(OsStr::new("d")).unwrap();
        assert_eq!(
            root.create_dir(OsStr::new("d")).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let d = root.child_dir(OsStr::new("d")).unwrap();
        d.create_new_file(OsStr::new("t")).unwrap().write_all(b"new").unwrap();
        assert!(d.create_new_file(OsStr::new("t")).is_err());
        assert!(root.create_new_file(OsStr::new("logo.png")).is_err(), "never through a symlink");
        root.create_new_file(OsStr::new("tmp")).unwrap().write_all(b"IMAGE").unwrap();
        root.rename(OsStr::new("tmp"), OsStr::new("logo.png")).unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("logo.png")).unwrap(), "IMAGE");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "VICTIM");
        d.remove_file(OsStr::new("t")).unwrap();
        assert!(d.entries().unwrap().is_empty());
    }
}
