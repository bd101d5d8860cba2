//! Writing a file beneath a root through directory handles: no link on the way or in the file's
//! place is followed (one swapped in after a check is refused when it is opened), and the file is
//! replaced whole (a temporary file beside it, then a rename), never left half written.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::fd::{self, Dir, EntryKind};

/// Writes a copy of the regular file `source` to the relative path `components` beneath `root`,
/// creating the directories on the way; `source` may be the destination itself.
pub fn copy_beneath(root: &Path, components: &[&str], source: &Path) -> io::Result<()> {
    let mut source = fd::open_regular(source)?;
    let Some((name, parents)) = components.split_last() else {
        return Err(fd::is_a_directory());
    };
    let name = OsStr::new(name);
    let mut dir = Dir::open(root)?;
    for component in parents {
        dir = open_or_create_dir(&dir, OsStr::new(component))?;
    }
    match dir.kind(name) {
        Ok(EntryKind::File) => (),
        Ok(EntryKind::Symlink) => return Err(not_followed(name)),
        Ok(EntryKind::Dir | EntryKind::Other) => {
            return Err(io::Error::other(format!(
                "\"{}\" is not a regular file",
                name.to_string_lossy()
            )));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => (),
        Err(err) => return Err(err),
    }
    let (temp, mut file) = create_temp(&dir)?;
    let copied = io::copy(&mut source, &mut file);
    // Both closed before the rename: Windows refuses to replace a file that is open, and the
    // source may be the destination itself.
    drop((file, source));
    let written = copied.and_then(|_| dir.rename(&temp, name));
    if written.is_err() {
        let _ = dir.remove_file(&temp);
    }
    written
}

/// Opens the directory `name` in `parent`, creating it when missing; a link is refused.
fn open_or_create_dir(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
    match parent.kind(name) {
        Ok(EntryKind::Dir) => (),
        Ok(EntryKind::Symlink) => return Err(not_followed(name)),
        Ok(EntryKind::File | EntryKind::Other) => return Err(fd::not_a_directory()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => match parent.create_dir(name) {
            Err(err) if err.kind() != io::ErrorKind::AlreadyExists => return Err(err),
            _ => (),
        },
        Err(err) => return Err(err),
    }
    // Opened without following a link: one swapped in since the check is refused here.
    parent.child_dir(name)
}

fn not_followed(name: &OsStr) -> io::Error {
    io::Error::other(format!(
        "\"{}\" is {}, which is never followed",
        name.to_string_lossy(),
        fd::LINK
    ))
}

/// Creates a new temporary file in `dir` (never over an existing name), returning its name and
/// the file.
fn create_temp(dir: &Dir) -> io::Result<(OsString, fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(".gemini-relay-{}-{n}.tmp", std::process::id()));
        match dir.create_new_file(&name) {
            Ok(file) => return Ok((name, file)),
            // A leftover of an earlier process with the same id: try the next name.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
}
