//! Fuzz target: the `@` file-reference jail and inlining, for arbitrary prompts against a fixed
//! project whose symlinks point outside it.
//!
//! Two identical trees are built, `a` and `b`; only the marker text of the files outside the
//! project differs. The prompt is run against both, with `%T`, `%R` and `%O` standing for the
//! tree, the project root and the outside directory, so the fuzzer can write absolute paths.
//! Properties: no marker ever reaches the inlined prompt; the results for `a` and `b` are equal
//! once their paths are written back as placeholders (nothing outside the root influences them),
//! unless the prompt names a tree's directory itself; the jail check and inlining refuse exactly
//! the same prompts with the same text.
//!
//! The trees live in `$FUZZ_JAIL_DIR` (default: the temporary directory), one per process.

#![no_main]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use gemini_relay::fuzz;
use libfuzzer_sys::fuzz_target;

/// Every marker starts with this; the fuzzer would have to write it to see it.
const MARKER_PREFIX: &str = "OUTSIDE-MARKER";

/// The start of both trees' directory names.
const TREE_PREFIX: &str = "fuzz-tree-";

/// One tree: the directory holding the project and what lies outside it.
struct Tree {
    dir: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

fuzz_target!(|data: &[u8]| {
    let prompt = utf8_prefix(data);
    let [a, b] = trees();
    let (check_a, inline_a) = run(a, prompt);
    let (check_b, inline_b) = run(b, prompt);
    // A prompt that names a tree's own directory (the fuzzer learns the path) may tell them apart.
    if prompt.contains(TREE_PREFIX) {
        return;
    }
    assert_eq!(check_a, check_b, "the outside changed the jail's verdict on {prompt:?}");
    assert_eq!(inline_a, inline_b, "the outside changed the inlining of {prompt:?}");
});

/// The jail check and inlining of `prompt` in `tree`, their paths written back as placeholders.
fn run(tree: &Tree, prompt: &str) -> (Result<(), String>, Result<String, String>) {
    let prompt = prompt
        .replace("%R", path_str(&tree.root))
        .replace("%O", path_str(&tree.outside))
        .replace("%T", path_str(&tree.dir));
    let check = fuzz::check_references(&prompt, &tree.root);
    let inline = fuzz::inline_references(&prompt, &tree.root);
    match (&check, &inline) {
        (Err(refusal), _) => {
            assert!(refusal.starts_with("Refusing @file reference "), "{refusal}");
            assert_eq!(inline.as_ref(), Err(refusal), "inlining {prompt:?} refused differently");
        }
        (Ok(()), Err(refusal)) => panic!("only inlining refused {prompt:?}: {refusal}"),
        (Ok(()), Ok(out)) => {
            if !prompt.contains(MARKER_PREFIX) {
                assert!(!out.contains(MARKER_PREFIX), "{prompt:?} leaked outside bytes:\n{out}");
            }
        }
    }
    let placeholders = |text: String| text.replace(path_str(&tree.dir), "%T");
    (check.map_err(placeholders), inline.map(placeholders).map_err(placeholders))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("the fuzz trees have UTF-8 paths")
}

/// The two trees, built on first use.
fn trees() -> &'static [Tree; 2] {
    static TREES: OnceLock<[Tree; 2]> = OnceLock::new();
    TREES.get_or_init(|| {
        let base = std::env::var_os("FUZZ_JAIL_DIR")
            .map_or_else(std::env::temp_dir, PathBuf::from)
            .join(format!("gemini-relay-fuzz-jail-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let nonce = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |it| it.as_nanos());
        [
            build(&base.join(format!("{TREE_PREFIX}a")), &format!("{MARKER_PREFIX}-A-{nonce:x}")),
            build(&base.join(format!("{TREE_PREFIX}b")), &format!("{MARKER_PREFIX}-B-{nonce:x}-b")),
        ]
    })
}

/// A project with ordinary files, a secret-named file, skipped directories, a FIFO, inside and
/// outside symlinks (relative and absolute, to files and directories, cycles, dangling), a sibling
/// directory whose name extends the root's, and files outside holding `marker`.
fn build(dir: &Path, marker: &str) -> Tree {
    let dir = dir.to_path_buf();
    let root = dir.join("proj");
    let outside = dir.join("out");
    let file = |path: PathBuf, text: &str| {
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs::write(&path, text).expect("write");
    };
    let link = |target: &Path, at: &str| symlink(target, root.join(at)).expect("symlink");

    for rel in
        ["a.ts", "src/index.ts", "nested/deep/b.md", "docs/x.md", ".env", "node_modules/m.js"]
    {
        file(root.join(rel), &format!("inside {rel}\n"));
    }
    file(root.join("bin.dat"), "binary\0data");
    for rel in ["secret.txt", "d/inner.txt", "d/e/deeper.md"] {
        file(outside.join(rel), &format!("{marker} {rel}\n"));
    }
    file(dir.join("proj2/secret.txt"), &format!("{marker} proj2\n"));
    file(dir.join("top.txt"), &format!("{marker} top\n"));

    link(Path::new("../out"), "leakdir");
    link(Path::new("../out/secret.txt"), "leak.txt");
    link(&outside, "abs");
    link(&outside.join("d/inner.txt"), "abs.txt");
    link(Path::new("../proj2"), "p2");
    link(Path::new("../top.txt"), "nested/top.txt");
    link(Path::new("../.."), "nested/up");
    link(Path::new(".."), "nested/root");
    link(Path::new("."), "nested/self");
    link(Path::new("../nested"), "src/lib");
    link(Path::new("a.ts"), "alias.ts");
    link(Path::new("/nonexistent/gemini-relay-fuzz"), "dangling");
    // A FIFO is best effort: without `mkfifo` the project simply has none. The one-door rule for
    // children is for the product, not for building a fixture.
    #[allow(clippy::disallowed_methods)]
    let _ = Command::new("mkfifo").arg(root.join("pipe")).status();
    Tree { dir, root, outside }
}

/// The longest valid UTF-8 prefix of the input.
fn utf8_prefix(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(err) => std::str::from_utf8(&data[..err.valid_up_to()]).unwrap_or_default(),
    }
}
