//! Files and directories opened through handles, so that a concurrent writer cannot swap a path
//! for a symlink after the check: directories beneath a trusted one without following any symlink,
//! listings read from a handle, the non-blocking regular-file open that every read of the relay
//! goes through, and the pieces of an atomic write.
//!
//! Nothing here re-resolves a path string after a check: a directory is opened once, and every
//! later name is looked up relative to its handle without following a link. This file holds the
//! rules every system shares (what a name may be, the component walk, what a listing keeps); the
//! system calls sit in one module per system (`unix.rs`: descriptors, `openat` with `O_NOFOLLOW`,
//! and `openat2` where Linux has it; `windows.rs`: handles, `NtCreateFile` relative to the parent's
//! handle without following reparse points, and a final-path check on every handle).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::Path;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

/// What a name in a directory is, without following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// An open directory. Names are resolved relative to it and never through a symlink.
#[derive(Debug)]
pub(crate) struct Dir {
    handle: sys::Handle,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: OsString,
    pub(crate) kind: EntryKind,
}

/// How a name is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// A directory that is only traversed or listed, never through a symlink.
    Traverse,
    /// A file that is read: never through a symlink, never blocking in the open.
    ReadFile,
}

/// What the system calls a name that is never followed, for messages.
pub(crate) const LINK: &str = sys::LINK;

/// The error for a path that names a directory where a file is needed.
pub(crate) fn is_a_directory() -> io::Error {
    sys::is_a_directory()
}

/// The error for a path that goes through something that is not a directory.
pub(crate) fn not_a_directory() -> io::Error {
    sys::not_a_directory()
}

/// Opens `path` for reading only if it is a regular file, without ever blocking on a FIFO or a
/// device: the file is opened non-blocking, its type checked on the open file, and only then is it
/// made blocking. Symlinks are followed (use [`Dir::open_file`] inside the project).
pub fn open_regular(path: &Path) -> io::Result<File> {
    sys::regular(sys::open_nonblocking(path)?)
}

impl Dir {
    /// Opens the directory at `path`, following symlinks: `path` is the trusted starting point
    /// (the canonical project root, or the working directory).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        Ok(Dir { handle: sys::open_dir(path)? })
    }

    /// Opens the subdirectory `name` (one path component), refusing a symlink.
    pub(crate) fn child_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let handle = sys::open_at(&self.handle, &component(name)?, Open::Traverse)?;
        Ok(Dir { handle })
    }

    /// Opens the directory `rel` beneath this one (a relative path of plain components: no `..`,
    /// no leading `/`; empty or `.` components are skipped), refusing symlinks on the way.
    pub(crate) fn dir_beneath(&self, rel: &[u8]) -> io::Result<Dir> {
        let components = components(rel)?;
        if components.is_empty() {
            return Ok(Dir { handle: self.handle.try_clone()? });
        }
        if let Some(result) = sys::open_beneath(&self.handle, &components, Open::Traverse) {
            return result.map(|handle| Dir { handle });
        }
        self.walk_components(&components)
    }

    /// What `name` is, without following a symlink.
    pub(crate) fn kind(&self, name: &OsStr) -> io::Result<EntryKind> {
        sys::kind_at(&self.handle, &component(name)?)
    }

    /// The device and inode of this directory, which identify it.
    pub(crate) fn identity(&self) -> io::Result<(u64, u64)> {
        sys::identity(&self.handle)
    }

    /// Opens the regular file `name` (one component) for reading, refusing a symlink and, without
    /// blocking, anything that is not a regular file.
    pub(crate) fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let handle = sys::open_at(&self.handle, &component(name)?, Open::ReadFile)?;
        sys::regular(File::from(handle))
    }

    /// Opens the regular file `rel` beneath this directory (see [`Dir::dir_beneath`] for `rel`),
    /// refusing symlinks anywhere on the way and anything but a regular file at the end.
    pub(crate) fn file_beneath(&self, rel: &[u8]) -> io::Result<File> {
        let components = components(rel)?;
        let Some((name, parents)) = components.split_last() else {
            return Err(sys::is_a_directory());
        };
        if let Some(result) = sys::open_beneath(&self.handle, &components, Open::ReadFile) {
            return sys::regular(File::from(result?));
        }
        let parent = self.walk_components(parents)?;
        let handle = sys::open_at(&parent.handle, name, Open::ReadFile)?;
        sys::regular(File::from(handle))
    }

    /// The entries of this directory (without `.` and `..`), in the order the file system gives.
    pub(crate) fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut entries = Vec::new();
        for (name, kind) in sys::list(&self.handle)? {
            if name == "." || name == ".." {
                continue;
            }
            let kind = match kind {
                Some(kind) => kind,
                // The listing did not say what the entry is: ask, without following a link.
                None => match self.kind(&name) {
                    Ok(kind) => kind,
                    // The entry went away since the listing; leave it out.
                    Err(_) => continue,
                },
            };
            entries.push(Entry { name, kind });
        }
        Ok(entries)
    }

    /// Creates the subdirectory `name` (one component).
    pub(crate) fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        sys::create_dir_at(&self.handle, &component(name)?)
    }

    /// Creates the new file `name` (one component) for writing; fails if anything, a symlink
    /// included, already has that name.
    pub(crate) fn create_new_file(&self, name: &OsStr) -> io::Result<File> {
        Ok(File::from(sys::create_new_at(&self.handle, &component(name)?)?))
    }

    /// Renames `from` to `to`, both names in this directory; `to` is replaced atomically (a
    /// symlink named `to` is replaced, never followed).
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        sys::rename_at(&self.handle, &component(from)?, &component(to)?)
    }

    /// Removes the file `name` (one component) from this directory.
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        sys::remove_file_at(&self.handle, &component(name)?)
    }

    /// Opens the directories `components` one by one, none through a symlink.
    fn walk_components(&self, components: &[sys::Name]) -> io::Result<Dir> {
        let mut current: Option<sys::Handle> = None;
        for name in components {
            let parent = current.as_ref().unwrap_or(&self.handle);
            current = Some(sys::open_at(parent, name, Open::Traverse)?);
        }
        match current {
            Some(handle) => Ok(Dir { handle }),
            None => Ok(Dir { handle: self.handle.try_clone()? }),
        }
    }
}

/// The name or relative path whose bytes are `bytes`, as `OsStr::as_encoded_bytes` gave them (or
/// as UTF-8 text). On Windows only Unicode names are taken (listings leave the others out), so
/// `None` there means the bytes name nothing the jail opens.
pub(crate) fn os_str(bytes: &[u8]) -> Option<&OsStr> {
    sys::os_str(bytes)
}

/// One path component in the system's form: not empty, not `.` or `..`, without `/` or NUL.
fn component(name: &OsStr) -> io::Result<sys::Name> {
    component_bytes(name.as_encoded_bytes())
}

fn component_bytes(bytes: &[u8]) -> io::Result<sys::Name> {
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a single path component"));
    }
    if bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"));
    }
    sys::name(bytes)
}

/// The components of a relative path, skipping empty and `.` ones; `..` and absolute paths are
/// refused (callers resolve them lexically first).
fn components(rel: &[u8]) -> io::Result<Vec<sys::Name>> {
    if rel.first() == Some(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a relative path"));
    }
    rel.split(|&it| it == b'/')
        .filter(|it| !it.is_empty() && *it != b".")
        .map(component_bytes)
        .collect()
}

// The shared rules against a POSIX file system: symlinks, FIFOs.
#[cfg(all(test, unix))]
mod tests {
    use super::sys::both_ways;
    use super::*;

    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    use crate::testutil::{TempDir, mkfifo};

    fn read(mut file: File) -> String {
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        text
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
        let kinds: Vec<(String, EntryKind)> = entries
            .into_iter()
            .map(|it| (it.name.to_string_lossy().into_owned(), it.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("d".to_string(), EntryKind::Dir),
                ("f.txt".to_string(), EntryKind::File),
                ("l".to_string(), EntryKind::Symlink),
                ("p".to_string(), EntryKind::Other),
            ]
        );
        assert_eq!(root.kind(OsStr::new("l")).unwrap(), EntryKind::Symlink);
        assert_eq!(root.kind(OsStr::new("p")).unwrap(), EntryKind::Other);
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
