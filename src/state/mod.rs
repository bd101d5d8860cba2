//! The state directory shared by every relay of the user (agy's run slots live there), and the
//! private files and directories the relay makes (directories 0700, files 0600 on POSIX; under the
//! user's own profile on Windows). A directory another user owns or others may write in is refused,
//! never used.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
use windows as sys;

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

/// An opened, checked state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// Creates `root` (and its missing parents) privately, then checks that it is a directory of
    /// this user's that nobody else may write in. The error is a sentence for the log.
    pub fn open(root: &Path) -> Result<StateDir, String> {
        let refused = |why: String| format!("State directory {} refused: {why}", root.display());
        match fs::symlink_metadata(root) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => sys::dir_builder()
                .recursive(true)
                .create(root)
                .map_err(|err| refused(err.to_string()))?,
            Err(err) => return Err(refused(err.to_string())),
            Ok(_) => (),
        }
        let meta = fs::symlink_metadata(root).map_err(|err| refused(err.to_string()))?;
        if !meta.is_dir() {
            return Err(refused("it is not a directory".to_string()));
        }
        sys::check_private(&meta).map_err(refused)?;
        Ok(StateDir { root: root.to_path_buf() })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The private subdirectory `name` (one component), created when missing. A subdirectory
    /// that is not private is refused as the root would be.
    pub fn subdir(&self, name: &str) -> io::Result<PathBuf> {
        let dir = self.root.join(name);
        match sys::dir_builder().create(&dir) {
            Err(err) if err.kind() != io::ErrorKind::AlreadyExists => return Err(err),
            _ => (),
        }
        let meta = fs::symlink_metadata(&dir)?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!("{} is not a directory", dir.display())));
        }
        sys::check_private(&meta).map_err(io::Error::other)?;
        Ok(dir)
    }
}

/// A new private directory (0700 on POSIX) under the system's temporary directory, named
/// `<prefix>-<pid>-<n>`; a name already taken is skipped, never reused.
pub fn private_temp_dir(prefix: &str) -> io::Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
        match sys::dir_builder().create(&dir) {
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            made => return made.map(|()| dir),
        }
    }
}

/// Creates the new private file `path` (0600 on POSIX); fails when anything, a symlink included,
/// has that name.
pub fn create_private(path: &Path) -> io::Result<File> {
    sys::open_options().write(true).create_new(true).open(path)
}

/// Opens (creating when missing) a private file to read and write, never truncating it: a lock
/// file, whose content does not matter.
pub fn open_private(path: &Path) -> io::Result<File> {
    sys::open_options().read(true).write(true).create(true).truncate(false).open(path)
}

/// Writes `bytes` to `path` so that a reader sees either nothing or all of them: a private
/// temporary file beside it, flushed to disk, then renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| io::Error::other("no file name"))?;
    let mut temporary = name.to_os_string();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary);
    let written = sys::open_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::TempDir;

    #[test]
    fn a_missing_directory_is_created_with_its_parents_and_reopened() {
        let temp = TempDir::new();
        let root = temp.path().join("a").join("gemini-relay");
        let state = StateDir::open(&root).unwrap();
        assert_eq!(state.root(), root);
        let jobs = state.subdir("jobs").unwrap();
        assert!(jobs.is_dir());
        assert_eq!(state.subdir("jobs").unwrap(), jobs, "an existing subdirectory is reused");
        assert!(StateDir::open(&root).is_ok());
    }

    #[test]
    fn a_file_in_its_place_is_refused_with_the_reason() {
        let temp = TempDir::new();
        let root = temp.path().join("state");
        fs::write(&root, b"x").unwrap();
        let err = StateDir::open(&root).unwrap_err();
        assert_eq!(
            err,
            format!("State directory {} refused: it is not a directory", root.display())
        );
        assert_eq!(fs::read(&root).unwrap(), b"x", "nothing was changed");
    }

    #[test]
    fn an_atomic_write_replaces_the_whole_file_and_leaves_no_temporary() {
        let temp = TempDir::new();
        let state = StateDir::open(&temp.path().join("s")).unwrap();
        let path = state.root().join("result.json");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let names: Vec<_> =
            fs::read_dir(state.root()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["result.json"]);
        let lock = open_private(&state.root().join("slot.lock")).unwrap();
        lock.try_lock().unwrap();
    }
}
