//! `@` file references: the project-root jail and inlining of files into the prompt.
//!
//! This is a security boundary: a prompt must never bring a file from outside the project root to
//! the model. The jail check (`jail.rs`) refuses any `@` reference that names a path outside the
//! root, lexically or after resolving symlinks. Inlining (`expand.rs`) then reads only through
//! handles beneath the canonical root and never follows a symlink (`fd`), so a concurrent writer
//! that swaps a directory for a symlink after the check cannot lead it outside. Symlinks inside the
//! project are neither walked nor read: `@link` stays verbatim, and walks leave symlink entries out.
//!
//! Every cost is linear or O(n log n) in the prompt and the tree: tokens are de-duplicated with
//! sets, the project is walked at most once per prompt and every distinct glob matched against it
//! in one pass, and a token met again after the budget closed costs one count.

pub mod attach;
mod cligrammar;
mod expand;
pub(crate) mod fd;
pub(crate) mod glob;
mod inline;
mod jail;
mod path;
pub(crate) mod scan;
mod secrets;
mod walk;
mod write;

pub use expand::{inline_and_find_media, inline_file_references};
pub(crate) use jail::check_file_references;
pub use jail::check_gemini_references;
pub use jail::landing;
pub use path::Landing;
pub use write::copy_beneath;

/// The error text when inlining stops because the call was cancelled.
pub const CANCELLED: &str = "cancelled while inlining @file references";

// Against a POSIX file system: symlinks, FIFOs, permissions.
#[cfg(all(test, unix))]
mod tests;
