//! The directory walk behind `@dir`, `@.` and globs, through directory
//! descriptors and without following symlinks.
//!
//! The walk is depth-first with entries sorted by name, skips `node_modules`, `.git` and `dist`,
//! leaves out files whose names look like secrets, and never follows a symlink: a symlink entry is
//! neither listed nor descended into, whatever it points to, so a directory swapped for a symlink
//! while the walk runs cannot lead it out of the project. Each directory is opened relative to its
//! parent's descriptor with `O_NOFOLLOW`, and listed from its own descriptor.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::files::fd::{self, Dir, Entry, EntryKind};
use crate::files::secrets;

/// One regular file found by a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalkFile {
    /// The path relative to the project root, `/`-separated, as raw bytes (opened beneath the root).
    pub(crate) rel: Vec<u8>,
    /// `rel` as lossy UTF-8: the label of its block.
    pub(crate) label: String,
}

/// The walk was stopped by the cancellation flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped;

/// How deep a walk descends below its start; deeper directories are warned about and left out
/// (each level holds one open descriptor).
pub(crate) const MAX_DEPTH: usize = 100;

/// Walks the directory `start`, whose root-relative path is `start_rel` (empty for the root itself)
/// and whose own name is `start_name`, and returns its inlinable files in walk order. `root_path`
/// only names directories in warnings. Checks `stop` before each entry.
pub(crate) fn walk(
    start: Dir,
    start_rel: &[u8],
    start_name: &[u8],
    root_path: &Path,
    stop: &AtomicBool,
) -> Result<Vec<WalkFile>, Stopped> {
    let mut files = Vec::new();
    let mut visited = HashSet::new();
    if let Ok(identity) = start.identity() {
        visited.insert(identity);
    }
    let entries = list(&start, start_rel, root_path);
    let mut stack =
        vec![Level { dir: start, rel: start_rel.to_vec(), name: start_name.to_vec(), entries }];
    loop {
        let depth = stack.len();
        let Some(level) = stack.last_mut() else { break };
        if stop.load(Ordering::Relaxed) {
            return Err(Stopped);
        }
        let Some(entry) = level.entries.next() else {
            stack.pop();
            continue;
        };
        let name = entry.name.as_encoded_bytes();
        if SKIPPED_NAMES.iter().any(|skipped| name == skipped.as_bytes()) {
            continue;
        }
        let rel = join(&level.rel, name);
        match entry.kind {
            EntryKind::File => {
                if !secrets::is_secret(&level.name, name) {
                    let label = String::from_utf8_lossy(&rel).into_owned();
                    files.push(WalkFile { rel, label });
                }
            }
            EntryKind::Dir => {
                if SKIPPED_DIRS.iter().any(|skipped| rel == skipped.as_bytes()) {
                    continue;
                }
                if depth > MAX_DEPTH {
                    warn_unlisted(root_path, &rel, "too deeply nested");
                    continue;
                }
                // A directory swapped for a symlink since the listing fails to open here.
                let Ok(dir) = level.dir.child_dir(&entry.name) else { continue };
                let Ok(identity) = dir.identity() else { continue };
                if !visited.insert(identity) {
                    continue;
                }
                let entries = list(&dir, &rel, root_path);
                let name = entry.name.as_encoded_bytes().to_vec();
                stack.push(Level { dir, rel, name, entries });
            }
            // Symlinks are never followed; FIFOs, sockets and devices are never read.
            EntryKind::Symlink | EntryKind::Other => (),
        }
    }
    Ok(files)
}

/// Entry names skipped at any depth, files included.
const SKIPPED_NAMES: [&str; 3] = ["node_modules", ".git", "dist"];

/// Root-relative directories that are never walked (VitePress build output).
const SKIPPED_DIRS: [&str; 2] = ["docs/.vitepress/cache", "docs/.vitepress/dist"];

/// One directory being walked: its descriptor, root-relative path, name and remaining entries.
struct Level {
    dir: Dir,
    rel: Vec<u8>,
    name: Vec<u8>,
    entries: std::vec::IntoIter<Entry>,
}

/// Lists a directory sorted by name in UTF-16 code-unit order (as JavaScript compares strings); a
/// listing error is warned about and treated as an empty directory.
fn list(dir: &Dir, rel: &[u8], root_path: &Path) -> std::vec::IntoIter<Entry> {
    let mut entries = match dir.entries() {
        Ok(entries) => entries,
        Err(err) => {
            warn_unlisted(root_path, rel, &err.to_string());
            Vec::new()
        }
    };
    entries.sort_by_cached_key(|entry| {
        entry.name.to_string_lossy().encode_utf16().collect::<Vec<u16>>()
    });
    entries.into_iter()
}

fn warn_unlisted(root_path: &Path, rel: &[u8], message: &str) {
    let dir = match rel.is_empty() {
        true => root_path.to_path_buf(),
        false => fd::os_str(rel).map_or_else(|| root_path.to_path_buf(), |rel| root_path.join(rel)),
    };
    log::warn!("inlineFileReferences: could not list {}: {message}", dir.display());
}

/// `parent/name`, or `name` when `parent` is empty.
fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut rel = Vec::with_capacity(parent.len() + 1 + name.len());
    if !parent.is_empty() {
        rel.extend_from_slice(parent);
        rel.push(b'/');
    }
    rel.extend_from_slice(name);
    rel
}

// Against a POSIX file system: symlinks, FIFOs.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    use crate::testutil::{TempDir, mkfifo};

    /// The labels `walk` yields from `start` (root-relative) inside the project.
    fn labels(project: &TempDir, start: &str) -> Vec<String> {
        let root = Dir::open(project.path()).unwrap();
        let Ok(dir) = root.dir_beneath(start.as_bytes()) else { return Vec::new() };
        let name = start.rsplit('/').next().unwrap_or_default();
        let files =
            walk(dir, start.as_bytes(), name.as_bytes(), project.path(), &AtomicBool::new(false));
        files.unwrap().into_iter().map(|it| it.label).collect()
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
    fn utf16_order() {
        let project = TempDir::new();
        for rel in ["\u{ff61}.txt", "\u{1f600}.txt", "b.txt"] {
            project.file(rel, rel);
        }
        // U+1F600 is a surrogate pair (0xD83D ...), which sorts before U+FF61 in UTF-16.
        assert_eq!(labels(&project, ""), ["b.txt", "\u{1f600}.txt", "\u{ff61}.txt"]);
    }

    #[test]
    fn secrets_are_left_out() {
        let project = TempDir::new();
        for rel in [
            ".env",
            ".env.production",
            ".envrc",
            ".pgpass",
            "home/.aws/credentials",
            "home/.docker/config.json",
            "home/.kube/config",
            "config/credentials.json",
            "config/secrets.yaml",
            "certs/server.pem",
            "certs/release.jks",
            "certs/AuthKey.p8",
            "keys/id_ed25519_sk",
            "ok.txt",
            "home/.aws/config",
        ] {
            project.file(rel, rel);
        }
        assert_eq!(labels(&project, ""), ["home/.aws/config", "ok.txt"]);
        assert_eq!(labels(&project, "home/.aws"), ["home/.aws/config"]);
    }

    #[test]
    fn symlinks_are_never_followed() {
        let outside = TempDir::new();
        outside.file("secret.txt", "secret.txt");
        let project = TempDir::new();
        project.file("inside/harmless.txt", "inside/harmless.txt");
        project.link("inside/leak.txt", &outside.path().join("secret.txt"));
        project.link("inside/leakdir", outside.path());
        project.link("inside/dangling", &project.path().join("missing"));
        project.file("real/a.txt", "real/a.txt");
        project.link("alias.txt", &project.path().join("real/a.txt"));
        project.link("aliasdir", &project.path().join("real"));
        project.link("real/loop", project.path());
        assert_eq!(labels(&project, ""), ["inside/harmless.txt", "real/a.txt"]);
        assert_eq!(labels(&project, "inside"), ["inside/harmless.txt"]);
    }

    #[test]
    fn fifos_are_skipped() {
        let project = TempDir::new();
        project.file("a.txt", "a");
        mkfifo(&project.path().join("pipe.txt"));
        assert_eq!(labels(&project, ""), ["a.txt"]);
    }

    #[test]
    fn deep_trees_stop_at_the_depth_limit() {
        let project = TempDir::new();
        let deep = vec!["d"; MAX_DEPTH + 5].join("/");
        project.file(&format!("{deep}/bottom.txt"), "bottom");
        project.file(&format!("{}/mid.txt", vec!["d"; MAX_DEPTH].join("/")), "mid");
        let found = labels(&project, "");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].ends_with("/mid.txt"));
    }

    #[test]
    fn stop_flag_ends_the_walk() {
        let project = TempDir::new();
        project.file("a.txt", "a");
        let root = Dir::open(project.path()).unwrap();
        let stopped = walk(root, b"", b"", project.path(), &AtomicBool::new(true));
        assert_eq!(stopped, Err(Stopped));
    }

    #[test]
    fn unlistable_start_is_empty() {
        let project = TempDir::new();
        assert!(labels(&project, "missing").is_empty());
    }
}
