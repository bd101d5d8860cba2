//! The project-root jail: whether an `@` reference names a path inside the project, lexically
//! (`..`, `~`, absolute paths) and after resolving symlinks, with the refusal text a client sees.
//! Both backends run it before anything is read; the gemini backend reads references with the
//! Gemini CLI's own grammar (`cligrammar`). On Windows the lexical rules are Windows path rules
//! (`winpath::lexical`) and the resolved form is compared as a final path
//! (`winpath::final_path_within`).

use std::collections::HashSet;
use std::fs;
#[cfg(unix)]
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

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
/// the project root, decided by the system's path rules alone, before anything is touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// Inside the root: the path relative to it, its components joined with `/` (empty for the
    /// root itself).
    Inside(String),
    /// Outside the root: above it, elsewhere on the machine or (on Windows) another drive, a share,
    /// a device path or a drive's current directory.
    Outside,
    /// Windows only: a component that Windows reads as something other than a file of that name
    /// (a device such as `CON.png`, a stream such as `a.png:x`, a name it trims such as `a.png.`).
    #[cfg_attr(unix, allow(dead_code))]
    NotAFile,
}

/// Where `path` (absolute, or relative to `root`) lands, lexically: `..` is resolved against the
/// path before it, and an absolute path is inside only when it starts with the root's components.
/// `root` must be absolute.
#[cfg(unix)]
pub fn landing(root: &Path, path: &str) -> Landing {
    let root = resolve_lexically(root, b"");
    let resolved = resolve_lexically(&root, path.as_bytes());
    match resolved.strip_prefix(&root) {
        // Only the path's own components lie below the root, so the rest is its text.
        Ok(rel) => Landing::Inside(rel.to_string_lossy().into_owned()),
        Err(_) => Landing::Outside,
    }
}

/// Where `path` lands under Windows path rules (`/` and `\` both separate; `..` never climbs above
/// the root; a drive, share or device path outside the root's is outside; see `winpath::lexical`).
#[cfg(windows)]
pub fn landing(root: &Path, path: &str) -> Landing {
    use crate::files::winpath::{self, Lexical};
    match winpath::lexical(&root.to_string_lossy(), path) {
        Lexical::Inside(rel) => Landing::Inside(rel),
        Lexical::Outside => Landing::Outside,
        Lexical::NotAFile => Landing::NotAFile,
    }
}

/// `path.resolve(base, reference)` on POSIX without touching the filesystem: an absolute
/// `reference` replaces `base`, empty and `.` segments vanish, `..` removes the previous segment
/// (never going above `/`), and the result has no trailing slash. `base` must be absolute.
#[cfg(unix)]
pub fn resolve_lexically(base: &Path, reference: &[u8]) -> PathBuf {
    let mut segments: Vec<&[u8]> = Vec::new();
    let start: &[u8] =
        if reference.first() == Some(&b'/') { b"" } else { base.as_os_str().as_encoded_bytes() };
    for segment in start.split(|&it| it == b'/').chain(reference.split(|&it| it == b'/')) {
        match segment {
            b"" | b"." => (),
            b".." => {
                segments.pop();
            }
            _ => segments.push(segment),
        }
    }
    let mut resolved = Vec::with_capacity(base.as_os_str().len() + reference.len() + 1);
    for segment in &segments {
        resolved.push(b'/');
        resolved.extend_from_slice(segment);
    }
    if resolved.is_empty() {
        resolved.push(b'/');
    }
    PathBuf::from(std::ffi::OsString::from_vec(resolved))
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
        #[cfg(unix)]
        let root = resolve_lexically(Path::new("/"), absolute.as_os_str().as_encoded_bytes());
        // Windows' `absolute` already removes `.` and `..`.
        #[cfg(not(unix))]
        let root = absolute;
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

    /// One path: refused when it starts with `~` or resolves lexically outside the root, or when
    /// it exists and its canonical form is outside the canonical root.
    #[cfg(unix)]
    fn check_path(&self, path: &str) -> Result<(), Refusal> {
        let resolved = resolve_lexically(&self.root, path.as_bytes());
        if path.starts_with('~') || !is_within(&resolved, &self.root) {
            return Err(Refusal::Outside);
        }
        match fs::canonicalize(&resolved) {
            Ok(canonical) if !is_within(&canonical, &self.real_root) => {
                Err(Refusal::ResolvingOutside)
            }
            // A path that does not exist (or cannot be resolved) names nothing to leak.
            Ok(_) | Err(_) => Ok(()),
        }
    }

    /// One path under Windows rules: refused when the lexical layer puts it outside the root, or
    /// when it exists and its final path is not under the root's. A name Windows would read as
    /// something else (a device, a stream) is never opened, so it names nothing to leak.
    #[cfg(windows)]
    fn check_path(&self, path: &str) -> Result<(), Refusal> {
        use crate::files::winpath::{self, Lexical};
        use std::os::windows::ffi::OsStrExt;

        let rel = match winpath::lexical(&self.root.to_string_lossy(), path) {
            Lexical::Outside => return Err(Refusal::Outside),
            Lexical::NotAFile => return Ok(()),
            Lexical::Inside(rel) => rel,
        };
        let wide = |path: &Path| path.as_os_str().encode_wide().collect::<Vec<u16>>();
        match fs::canonicalize(self.root.join(rel)) {
            Ok(canonical)
                if !winpath::final_path_within(&wide(&canonical), &wide(&self.real_root)) =>
            {
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

    /// The lexically resolved `reference` relative to the root (empty for the root itself), or
    /// `None` when it is outside.
    #[cfg(unix)]
    pub(super) fn relative(&self, reference: &str) -> Option<Vec<u8>> {
        let resolved = resolve_lexically(&self.root, reference.as_bytes());
        if !is_within(&resolved, &self.root) {
            return None;
        }
        let resolved = resolved.as_os_str().as_encoded_bytes();
        Some(resolved.get(self.root.as_os_str().len() + 1..).unwrap_or_default().to_vec())
    }
}

/// The lexically resolved `reference` under Windows rules, its components joined with `/`, or
/// `None` when it is outside or names something other than a file (it then stays verbatim).
#[cfg(windows)]
impl Project {
    pub(super) fn relative(&self, reference: &str) -> Option<Vec<u8>> {
        use crate::files::winpath::{self, Lexical};
        match winpath::lexical(&self.root.to_string_lossy(), reference) {
            Lexical::Inside(rel) => Some(rel.into_bytes()),
            Lexical::Outside | Lexical::NotAFile => None,
        }
    }
}

/// Whether `path` is `base` itself or below it, by string prefix `base` + `/` (as the original).
#[cfg(unix)]
fn is_within(path: &Path, base: &Path) -> bool {
    let path = path.as_os_str().as_encoded_bytes();
    let base = base.as_os_str().as_encoded_bytes();
    path == base || (path.starts_with(base) && path.get(base.len()) == Some(&b'/'))
}
