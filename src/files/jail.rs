//! The project-root jail: whether an `@` reference names a path inside the project, lexically
//! (`..`, `~`, absolute paths) and after resolving symlinks, with the refusal text a client sees.
//! Both backends run it before anything is read; the gemini backend reads references with the
//! Gemini CLI's own grammar (`cligrammar`). The rules that differ per system (what a reference
//! names lexically, how a resolved path is compared with the resolved root) sit behind `path`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::files::path::{self, Landing};
use crate::files::{CANCELLED, cligrammar, scan};

/// The gemini backend's jail check: reads the prompt's `@` references with the Gemini CLI's own
/// grammar (quoted pieces, backslash escapes, its terminators), so that the path checked is the path
/// the CLI will read, and checks every path the CLI may read for each, lexically and after
/// resolving symlinks, against the project root `root`.
///
/// `Err` carries the refusal text, naming the reference as the user wrote it.
pub fn check_gemini_references(prompt: &str, root: &Path) -> Result<(), String> {
    let project = Project::new(root);
    let mut checked_references = HashSet::new();
    let mut checked_paths = HashSet::new();
    for reference in cligrammar::references(prompt) {
        if !checked_references.insert(reference.written) {
            continue;
        }
        for path in cligrammar::candidate_paths(&reference) {
            if checked_paths.contains(&path) {
                continue;
            }
            if let Err(refusal) = project.check_path(&path) {
                return Err(project.refusal(refusal, reference.written));
            }
            checked_paths.insert(path);
        }
    }
    Ok(())
}

/// The jail check alone, exactly as inlining runs it first; the fuzz targets compare the two.
pub(crate) fn check_file_references(prompt: &str, root: &Path) -> Result<(), String> {
    Project::new(root).assert_safe(prompt, &AtomicBool::new(false))
}

/// Where a path that a caller names for writing (`gemini-image`'s `outputPath`) lands relative to
/// the project root, decided by the system's path rules alone, before anything is touched: `..`
/// is resolved against the path before it, and an absolute path is inside only when it starts
/// with the root's components (on Windows under Windows path rules: `/` and `\` both separate,
/// `..` never climbs above the root, and a drive, share or device path outside the root's is
/// outside). `root` must be absolute.
pub fn landing(root: &Path, target: &str) -> Landing {
    path::lexical(&path::lexical_root(root), target)
}

/// The project root as given (absolute, lexically normalised) and as resolved by the filesystem.
pub(super) struct Project {
    pub(super) root: PathBuf,
    pub(super) real_root: PathBuf,
}

/// Which of the two refusal texts applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The path is outside the root, or starts with `~`.
    Outside,
    /// The path exists and its canonical form is outside the canonical root.
    ResolvingOutside,
}

impl Project {
    pub(super) fn new(root: &Path) -> Project {
        let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let root = path::lexical_root(&absolute);
        let real_root = fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        Project { root, real_root }
    }

    /// The jail check over every jail-check token, each distinct one checked once: the first
    /// reference outside the root gives the refusal text.
    pub(super) fn assert_safe(&self, prompt: &str, stop: &AtomicBool) -> Result<(), String> {
        let mut checked = HashSet::new();
        for token in scan::jail_tokens(prompt) {
            if !checked.insert(token.reference) {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return Err(CANCELLED.to_string());
            }
            if let Err(refusal) = self.check_path(token.reference) {
                return Err(self.refusal(refusal, token.reference));
            }
        }
        Ok(())
    }

    /// Where `reference` lands under the system's rules, as the jail takes it (`path::holds_below`:
    /// a POSIX project at `/` holds only itself).
    fn lexical(&self, reference: &str) -> Landing {
        match path::lexical(&self.root, reference) {
            Landing::Inside(rel) if !rel.is_empty() && !path::holds_below(&self.root) => {
                Landing::Outside
            }
            landing => landing,
        }
    }

    /// One reference: refused when it starts with `~` or lands outside the root, or when it exists and
    /// its canonical form is not under the canonical root. A name Windows would read as something
    /// else (a device, a stream) is never opened, so it names nothing to leak.
    fn check_path(&self, reference: &str) -> Result<(), Refusal> {
        if reference.starts_with('~') {
            return Err(Refusal::Outside);
        }
        let rel = match self.lexical(reference) {
            Landing::Outside => return Err(Refusal::Outside),
            Landing::NotAFile => return Ok(()),
            Landing::Inside(rel) => rel,
        };
        match fs::canonicalize(self.root.join(rel)) {
            Ok(canonical) if !path::final_within(&canonical, &self.real_root) => {
                Err(Refusal::ResolvingOutside)
            }
            // A path that does not exist (or cannot be resolved) names nothing to leak.
            Ok(_) | Err(_) => Ok(()),
        }
    }

    fn refusal(&self, refusal: Refusal, written: &str) -> String {
        let what = match refusal {
            Refusal::Outside => "outside",
            Refusal::ResolvingOutside => "resolving outside",
        };
        format!(
            "Refusing @file reference {what} the project directory: \"@{written}\". Only files within {} may be referenced.",
            self.root.display()
        )
    }

    /// The lexically resolved `reference` relative to the root, its components joined with `/`
    /// (empty for the root itself), or `None` when it is outside or names something other than a
    /// file (it then stays verbatim).
    pub(super) fn relative(&self, reference: &str) -> Option<Vec<u8>> {
        match self.lexical(reference) {
            Landing::Inside(rel) => Some(rel.into_bytes()),
            Landing::Outside | Landing::NotAFile => None,
        }
    }
}
