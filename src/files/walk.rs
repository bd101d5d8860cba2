//! The directory walk behind `@dir`, `@.` and globs (SPEC §5.7), jailed to the canonical project root.
//!
//! The walk is depth-first with entries sorted by name, skips `node_modules`, `.git` and `dist`,
//! never leaves `real_root` (symlinks pointing out are neither followed nor listed), guards against
//! directory cycles, and leaves out files whose names look like secrets.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One regular file found by a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalkFile {
    /// The canonical path relative to `real_root`, with `/` separators (lossy UTF-8).
    pub(crate) label: String,
    /// The canonical path, free of symlinks.
    pub(crate) path: PathBuf,
}

/// Walks the canonical directory `start` (which must be `real_root` or inside it) and returns its
/// inlinable files in walk order.
pub(crate) fn walk(start: &Path, real_root: &Path) -> Vec<WalkFile> {
    let mut files = Vec::new();
    let mut visited = HashSet::new();
    visited.insert(start.to_path_buf());
    let mut stack = vec![list_dir(start).into_iter()];
    while let Some(entries) = stack.last_mut() {
        let Some(entry) = entries.next() else {
            stack.pop();
            continue;
        };
        match classify(entry, real_root) {
            Found::Dir(path) => {
                if is_skipped_dir(&path, real_root) || !visited.insert(path.clone()) {
                    continue;
                }
                stack.push(list_dir(&path).into_iter());
            }
            Found::File(path) => {
                let Some(rel) = relative_to(&path, real_root) else { continue };
                files.push(WalkFile { label: String::from_utf8_lossy(rel).into_owned(), path });
            }
            Found::Skip => (),
        }
    }
    files
}

/// The secret-name filter (ASCII case-insensitive), equivalent to the regex
/// `^(?:\.env(?:\..+)?|\.npmrc|\.netrc|\.git-credentials|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|.+\.(?:pem|key|pfx|p12))$`
/// except that `.+` here also accepts line terminators, which only ever hides more files.
pub(crate) fn is_secret_name(name: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.as_slice();
    if matches!(name, b".env" | b".npmrc" | b".netrc" | b".git-credentials") {
        return true;
    }
    if name.strip_prefix(b".env.").is_some_and(|rest| !rest.is_empty()) {
        return true;
    }
    if let Some(rest) = name.strip_prefix(b"id_") {
        let algorithm = rest.strip_suffix(b".pub").unwrap_or(rest);
        if matches!(algorithm, b"rsa" | b"dsa" | b"ecdsa" | b"ed25519") {
            return true;
        }
    }
    [&b".pem"[..], b".key", b".pfx", b".p12"]
        .iter()
        .any(|ext| name.len() > ext.len() && name.ends_with(ext))
}

/// Entry names skipped at any depth, files included.
const SKIPPED_NAMES: [&str; 3] = ["node_modules", ".git", "dist"];

/// Root-relative directories that are never walked (VitePress build output).
const SKIPPED_DIRS: [&str; 2] = ["docs/.vitepress/cache", "docs/.vitepress/dist"];

/// A listed directory entry: its name, full (canonical parent + name) path and unfollowed type.
struct Entry {
    name: OsString,
    path: PathBuf,
    file_type: fs::FileType,
}

enum Found {
    Dir(PathBuf),
    File(PathBuf),
    Skip,
}

/// Lists a directory sorted by name in UTF-16 code-unit order; a listing error is warned about and
/// treated as an empty directory.
fn list_dir(dir: &Path) -> Vec<Entry> {
    let listed = fs::read_dir(dir).and_then(|entries| {
        entries
            .map(|entry| {
                let entry = entry?;
                Ok(Entry {
                    name: entry.file_name(),
                    path: entry.path(),
                    file_type: entry.file_type()?,
                })
            })
            .collect::<std::io::Result<Vec<Entry>>>()
    });
    let mut entries = match listed {
        Ok(entries) => entries,
        Err(err) => {
            log::warn!("inlineFileReferences: could not list {}: {err}", dir.display());
            return Vec::new();
        }
    };
    entries.sort_by(|a, b| {
        let a = a.name.to_string_lossy();
        let b = b.name.to_string_lossy();
        a.encode_utf16().cmp(b.encode_utf16())
    });
    entries
}

/// Decides what an entry is after following symlinks, staying inside `real_root`.
///
/// A non-symlink entry of a canonical directory is canonical already, so only symlinks cost a
/// `realpath` and a `stat`.
fn classify(entry: Entry, real_root: &Path) -> Found {
    if is_skipped_name(&entry.name) {
        return Found::Skip;
    }
    let (path, file_type) = if entry.file_type.is_symlink() {
        let Ok(target) = fs::canonicalize(&entry.path) else { return Found::Skip };
        let Ok(metadata) = fs::metadata(&target) else { return Found::Skip };
        (target, metadata.file_type())
    } else {
        (entry.path, entry.file_type)
    };
    if !is_within(&path, real_root) {
        return Found::Skip;
    }
    let target_name = path.file_name().unwrap_or(OsStr::new(""));
    if is_skipped_name(target_name) {
        return Found::Skip;
    }
    if file_type.is_dir() {
        return Found::Dir(path);
    }
    if !file_type.is_file() {
        return Found::Skip;
    }
    if is_secret_name(entry.name.as_bytes()) || is_secret_name(target_name.as_bytes()) {
        return Found::Skip;
    }
    Found::File(path)
}

fn is_skipped_name(name: &OsStr) -> bool {
    SKIPPED_NAMES.iter().any(|skipped| name.as_bytes() == skipped.as_bytes())
}

fn is_skipped_dir(path: &Path, real_root: &Path) -> bool {
    let Some(rel) = relative_to(path, real_root) else { return false };
    SKIPPED_DIRS.iter().any(|skipped| rel == skipped.as_bytes())
}

/// Whether `path` is `base` itself or below it, by string prefix `base` + `/` (as the original).
pub(crate) fn is_within(path: &Path, base: &Path) -> bool {
    let path = path.as_os_str().as_bytes();
    let base = base.as_os_str().as_bytes();
    path == base || (path.starts_with(base) && path.get(base.len()) == Some(&b'/'))
}

/// `path` relative to `base` (empty for `base` itself), or `None` when it is not within `base`.
fn relative_to<'a>(path: &'a Path, base: &Path) -> Option<&'a [u8]> {
    if !is_within(path, base) {
        return None;
    }
    let path = path.as_os_str().as_bytes();
    let base_len = base.as_os_str().len();
    Some(path.get(base_len + 1..).unwrap_or(&[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::TempDir;

    /// The labels `walk` yields from `start` inside the project.
    fn labels(project: &TempDir, start: &str) -> Vec<String> {
        walk(&project.path().join(start), project.path()).into_iter().map(|it| it.label).collect()
    }

    #[test]
    fn sorted_depth_first_with_skips() {
        let project = TempDir::new();
        for rel in [
            "z.ts",
            "a.ts",
            "nested/b.md",
            "B.txt",
            "node_modules/x/index.js",
            ".git/config",
            "dist/out.js",
            "src/dist",
            "docs/.vitepress/cache/c.js",
            "docs/.vitepress/dist/d.js",
            "docs/.vitepress/config.ts",
            "docs/index.md",
        ] {
            project.file(rel, rel);
        }
        let expected =
            ["B.txt", "a.ts", "docs/.vitepress/config.ts", "docs/index.md", "nested/b.md", "z.ts"];
        assert_eq!(labels(&project, ""), expected);
        assert_eq!(labels(&project, "docs"), ["docs/.vitepress/config.ts", "docs/index.md"]);
    }

    #[test]
    fn secrets_are_left_out() {
        let project = TempDir::new();
        for rel in [
            ".env",
            ".env.production",
            ".ENV.local",
            ".npmrc",
            ".netrc",
            ".git-credentials",
            "certs/server.pem",
            "certs/tls.key",
            "certs/Client.PFX",
            "certs/store.p12",
            "keys/id_rsa",
            "keys/id_ed25519.pub",
            "keys/id_ecdsa",
            "keys/id_dsa",
            "ok.txt",
        ] {
            project.file(rel, rel);
        }
        assert_eq!(labels(&project, ""), ["ok.txt"]);
    }

    #[test]
    fn secret_name_edges() {
        for name in
            [".env.", ".envrc", "env", "id_rsa.pub.pub", "id_rsa2", ".pem", "pem", "a.pem.txt"]
        {
            assert!(!is_secret_name(name.as_bytes()), "{name} is not a secret");
        }
        for name in [".env.x", "id_RSA.PUB", "x.pem", "a.b.key", ".env.a\nb"] {
            assert!(is_secret_name(name.as_bytes()), "{name:?} is a secret");
        }
    }

    #[test]
    fn symlinks_out_of_the_root_are_not_followed() {
        let outside = TempDir::new();
        outside.file("secret.txt", "secret.txt");
        let project = TempDir::new();
        project.file("inside/harmless.txt", "inside/harmless.txt");
        project.link("inside/leak.txt", &outside.path().join("secret.txt"));
        project.link("inside/leakdir", outside.path());
        project.link("inside/dangling", &project.path().join("missing"));
        assert_eq!(labels(&project, ""), ["inside/harmless.txt"]);
        assert_eq!(labels(&project, "inside"), ["inside/harmless.txt"]);
    }

    #[test]
    fn in_root_symlinks_use_the_target_label_and_cycles_stop() {
        let project = TempDir::new();
        project.file("real/a.txt", "real/a.txt");
        project.link("alias.txt", &project.path().join("real/a.txt"));
        project.link("real/loop", project.path());
        project.link("real/self", Path::new("."));
        project.link("secretlink", &project.path().join("real/a.txt"));
        project.link("innocent", &project.path().join(".env"));
        project.file(".env", ".env");
        assert_eq!(labels(&project, ""), ["real/a.txt", "real/a.txt", "real/a.txt"]);
    }

    #[test]
    fn symlinked_skip_names_are_skipped() {
        let project = TempDir::new();
        project.file("node_modules/m.js", "node_modules/m.js");
        project.link("deps", &project.path().join("node_modules"));
        project.file("a.txt", "a.txt");
        assert_eq!(labels(&project, ""), ["a.txt"]);
    }

    #[test]
    fn unlistable_start_is_empty() {
        let project = TempDir::new();
        assert!(labels(&project, "missing").is_empty());
    }

    #[test]
    fn prefix_checks_need_a_separator() {
        assert!(is_within(Path::new("/a/b"), Path::new("/a/b")));
        assert!(is_within(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(!is_within(Path::new("/a/bc"), Path::new("/a/b")));
        assert!(!is_within(Path::new("/a"), Path::new("/a/b")));
        assert!(!is_within(Path::new("/etc"), Path::new("/")));
    }
}
