//! The state directory on Windows: it lives under the user's own profile (`%LOCALAPPDATA%`), whose
//! access list already keeps other users out, so directories and files are created with the
//! defaults they inherit.

use std::fs::{DirBuilder, Metadata, OpenOptions};

pub fn dir_builder() -> DirBuilder {
    DirBuilder::new()
}

pub fn open_options() -> OpenOptions {
    OpenOptions::new()
}

/// Nothing more to check: the profile's access list decides who may write.
pub fn check_private(_meta: &Metadata) -> Result<(), String> {
    Ok(())
}
