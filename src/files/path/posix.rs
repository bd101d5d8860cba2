//! The POSIX side of the jail's path rules: `/` alone separates, `..` is resolved against the
//! path before it without touching the file system (as Node's `path.resolve` does), and paths are
//! compared as bytes.

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::Landing;

/// The project root in the form `lexical` takes: `absolute` with `.`, `..` and repeated or
/// trailing slashes resolved away.
pub(crate) fn lexical_root(absolute: &Path) -> PathBuf {
    resolve_lexically(Path::new("/"), absolute.as_os_str().as_encoded_bytes())
}

/// Where `reference` (absolute, or relative to `root`) lands: `..` is resolved against the path
/// before it, and the result is inside when it starts with the root's components. `root` must be
/// in the form `lexical_root` gives. A name is never anything but a file of that name here.
pub(crate) fn lexical(root: &Path, reference: &str) -> Landing {
    let resolved = resolve_lexically(root, reference.as_bytes());
    match resolved.strip_prefix(root) {
        // Only the reference's own components lie below the root, so the rest is its text.
        Ok(rel) => Landing::Inside(rel.to_string_lossy().into_owned()),
        Err(_) => Landing::Outside,
    }
}

/// Whether the jail takes anything below `root` (in the form `lexical_root` gives) to be inside
/// it. It compares paths as the original did, by text: inside means starting with the root and a
/// `/`, which for the root `/` is `//`, so a project at the top of the file system holds only
/// itself. (`lexical` alone, which also places a path to write, holds everything below `/`.)
pub(crate) fn holds_below(root: &Path) -> bool {
    root != Path::new("/")
}

/// Whether `canonical` is `real_root` itself or below it, by string prefix `real_root` + `/` (as
/// the original).
pub(crate) fn final_within(canonical: &Path, real_root: &Path) -> bool {
    let path = canonical.as_os_str().as_encoded_bytes();
    let base = real_root.as_os_str().as_encoded_bytes();
    path == base || (path.starts_with(base) && path.get(base.len()) == Some(&b'/'))
}

/// `reference` as a label names it: `/` is the only separator here, so unchanged.
pub(crate) fn with_slashes(reference: &str) -> Cow<'_, str> {
    Cow::Borrowed(reference)
}

/// `path` as the Gemini CLI's `@` grammar reads it back on POSIX, where its unescaping only removes
/// backslashes (quotes would stay in the path): each character that ends a reference, a quote and a
/// backslash escaped with a backslash, and a final `.` too.
pub(crate) fn cli_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    for (at, c) in path.char_indices() {
        let last_dot = c == '.' && at + 1 == path.len();
        if last_dot || " \t\n\r,;!?()[]{}\"\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `path.resolve(base, reference)` on POSIX without touching the filesystem: an absolute
/// `reference` replaces `base`, empty and `.` segments vanish, `..` removes the previous segment
/// (never going above `/`), and the result has no trailing slash. `base` must be absolute.
fn resolve_lexically(base: &Path, reference: &[u8]) -> PathBuf {
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
    PathBuf::from(OsString::from_vec(resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_resolution() {
        let check = |base: &str, reference: &str, expected: &str| {
            let resolved = resolve_lexically(Path::new(base), reference.as_bytes());
            assert_eq!(resolved, Path::new(expected), "{base} + {reference}");
        };
        check("/p", "a/b", "/p/a/b");
        check("/p", "./a/./b/", "/p/a/b");
        check("/p", "a/../../x", "/x");
        check("/p", "../../../../..", "/");
        check("/p", "/etc//passwd", "/etc/passwd");
        check("/p", ".", "/p");
        check("/p/q/", "..", "/p");
        check("/", "", "/");
        check("/p//q/./", "", "/p/q");
        check("/p", "a\\..\\b", "/p/a\\..\\b");
    }
}
