//! The state directory on POSIX: created 0700 (files 0600), and refused when another user owns it
//! or its group or others may write in it.

use std::fs::{DirBuilder, Metadata, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};

pub fn dir_builder() -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.mode(0o700);
    builder
}

pub fn open_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(0o600);
    options
}

/// Whether only this user may change what is in the directory.
pub fn check_private(meta: &Metadata) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("it belongs to user {}, not to this user ({me})", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "its group or others may write in it (mode {:o})",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::super::{
        StateDir, create_private, open_private, private_temp_dir, write_atomically,
    };
    use crate::testutil::TempDir;

    #[test]
    fn directories_are_0700_and_files_0600() {
        let temp = TempDir::new();
        let state = StateDir::open(&temp.path().join("s")).unwrap();
        let mode =
            |path: &std::path::Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(state.root()), 0o700);
        assert_eq!(mode(&state.subdir("jobs").unwrap()), 0o700);
        let file = state.root().join("f");
        write_atomically(&file, b"x").unwrap();
        assert_eq!(mode(&file), 0o600);
        let lock = state.root().join("l");
        open_private(&lock).unwrap();
        assert_eq!(mode(&lock), 0o600);
        let private = private_temp_dir("state-test").unwrap();
        assert_eq!(mode(&private), 0o700);
        create_private(&private.join("log")).unwrap();
        assert_eq!(mode(&private.join("log")), 0o600);
        assert!(create_private(&private.join("log")).is_err(), "never an existing file");
        fs::remove_dir_all(&private).unwrap();
    }

    #[test]
    fn a_directory_others_may_write_in_is_refused() {
        let temp = TempDir::new();
        let root = temp.path().join("s");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let err = StateDir::open(&root).unwrap_err();
        assert!(err.ends_with("refused: its group or others may write in it (mode 777)"), "{err}");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        let state = StateDir::open(&root).unwrap();
        let jobs = root.join("jobs");
        fs::create_dir(&jobs).unwrap();
        fs::set_permissions(&jobs, fs::Permissions::from_mode(0o775)).unwrap();
        assert!(state.subdir("jobs").is_err());
    }
}
