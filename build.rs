//! Build script: records the target triple and, in a git checkout, the commit, for `--version`.

// Cargo reads a build script's instructions from its stdout, and git is run to learn the commit;
// the product's rules against printing and against spawning outside exec/ do not apply here.
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let target = env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let detail = match commit(&dir) {
        Some(commit) => format!("{target}, {commit}"),
        None => target,
    };
    println!("cargo::rustc-env=GEMINI_RELAY_BUILD={detail}");
}

/// The short commit of HEAD when `dir` is a git checkout, with rerun instructions on the files that
/// change when HEAD moves; `None` without `.git` or when git cannot tell.
fn commit(dir: &Path) -> Option<String> {
    if !dir.join(".git").exists() {
        return None;
    }
    // HEAD names the branch; a commit rewrites the branch's loose ref (created in refs/heads when
    // the ref was only packed until then), and `git pack-refs` moves it into packed-refs.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string(), "refs/heads".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in &watched {
        let Some(path) = git(dir, &["rev-parse", "--git-path", name]) else { continue };
        let path = dir.join(path);
        // A missing path would make cargo rerun this script on every build.
        if path.exists() {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }
    let hash = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(hash)
}

/// The trimmed stdout of `git <args>` run in `dir`, or `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).current_dir(dir).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_string())
}
