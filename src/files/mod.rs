//! `@` file references (SPEC §5): the project-root jail and inlining of files into the prompt.
//!
//! This is a security boundary: a prompt must never bring a file from outside the project root to
//! the model. The jail check refuses any `@` token that names a path outside the root, lexically or
//! after resolving symlinks; inlining only ever reads canonical paths inside the canonical root.

pub(crate) mod glob;
mod inline;
pub(crate) mod scan;
mod walk;

use std::borrow::Cow;
use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::files::glob::Glob;
use crate::files::inline::Inliner;
use crate::files::walk::{WalkFile, is_within};

/// Checks every `@` token of the prompt (also inside words) against the project root `root`.
///
/// `Err` carries the exact refusal text of SPEC §5.3; the caller fails the whole tool call with it.
pub fn assert_safe_file_references(prompt: &str, root: &Path) -> Result<(), String> {
    Project::new(root).assert_safe(prompt)
}

/// Runs the jail check, then replaces each `@` token that starts the prompt or follows whitespace
/// with the blocks of the file(s) it names, sharing one byte budget, and appends the drop footers.
///
/// Tokens that name nothing inlinable stay verbatim. `Err` carries a refusal text (SPEC §5.3).
pub fn inline_file_references<'a>(
    prompt: &'a str,
    root: &Path,
    _stop: &AtomicBool,
) -> Result<Cow<'a, str>, String> {
    let project = Project::new(root);
    project.assert_safe(prompt)?;
    let tokens = scan::inline_tokens(prompt);
    if tokens.is_empty() {
        return Ok(Cow::Borrowed(prompt));
    }
    let mut expansion = Expansion { project, whole_walk: None, inliner: Inliner::new() };
    let mut out = String::with_capacity(prompt.len());
    let mut copied = 0;
    for token in tokens {
        out.push_str(&prompt[copied..token.at]);
        if !expansion.expand(token.reference, &mut out)? {
            out.push_str(&prompt[token.at..token.end]);
        }
        copied = token.end;
    }
    out.push_str(&prompt[copied..]);
    out.push_str(&expansion.inliner.footers());
    Ok(Cow::Owned(out))
}

/// The project root as given (absolute, lexically normalised) and as resolved by the filesystem.
struct Project {
    root: PathBuf,
    real_root: PathBuf,
}

/// Which of the two refusal texts applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The token names a path outside the root, or starts with `~`.
    Outside,
    /// The token names an existing path whose canonical form is outside the canonical root.
    ResolvingOutside,
}

/// The state of one prompt's inlining: the project, the lazily walked project and the budget.
struct Expansion {
    project: Project,
    whole_walk: Option<Vec<WalkFile>>,
    inliner: Inliner,
}

impl Project {
    fn new(root: &Path) -> Project {
        let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let root = resolve_lexically(Path::new("/"), absolute.as_os_str().as_bytes());
        let real_root = fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        Project { root, real_root }
    }

    fn assert_safe(&self, prompt: &str) -> Result<(), String> {
        let mut checked = Vec::new();
        for token in scan::jail_tokens(prompt) {
            if !checked.contains(&token.reference) {
                checked.push(token.reference);
                self.check_reference(token.reference)?;
            }
        }
        Ok(())
    }

    /// SPEC §5.3 for one reference.
    fn check_reference(&self, reference: &str) -> Result<(), String> {
        let resolved = resolve_lexically(&self.root, reference.as_bytes());
        if reference.starts_with('~') || !is_within(&resolved, &self.root) {
            return Err(self.refusal(Refusal::Outside, reference));
        }
        match fs::canonicalize(&resolved) {
            Ok(canonical) if !is_within(&canonical, &self.real_root) => {
                Err(self.refusal(Refusal::ResolvingOutside, reference))
            }
            // A path that does not exist (or cannot be resolved) names nothing to leak.
            Ok(_) | Err(_) => Ok(()),
        }
    }

    fn refusal(&self, refusal: Refusal, reference: &str) -> String {
        let what = match refusal {
            Refusal::Outside => "outside",
            Refusal::ResolvingOutside => "resolving outside",
        };
        format!(
            "Refusing @file reference {what} the project directory: \"@{reference}\". Only files within {} may be referenced.",
            self.root.display()
        )
    }
}

impl Expansion {
    /// SPEC §5.4 for one inline token: appends its replacement to `out` and returns true, or
    /// returns false when the token stays verbatim.
    fn expand(&mut self, reference: &str, out: &mut String) -> Result<bool, String> {
        if glob::is_glob(reference) {
            return Ok(self.expand_glob(reference, out));
        }
        let resolved = resolve_lexically(&self.project.root, reference.as_bytes());
        let Ok(canonical) = fs::canonicalize(&resolved) else { return Ok(false) };
        let Ok(metadata) = fs::metadata(&canonical) else { return Ok(false) };
        if !is_within(&canonical, &self.project.real_root) {
            return Err(self.project.refusal(Refusal::ResolvingOutside, reference));
        }
        if metadata.is_dir() {
            if canonical == self.project.real_root {
                self.ensure_whole_walk();
                let files = self.whole_walk.as_deref().unwrap_or_default();
                return Ok(inline_files(&mut self.inliner, files, |_| true, out));
            }
            let files = walk::walk(&canonical, &self.project.real_root);
            return Ok(inline_files(&mut self.inliner, &files, |_| true, out));
        }
        if !metadata.is_file() {
            return Ok(false);
        }
        Ok(self.inliner.inline_file(reference, &canonical, out))
    }

    fn expand_glob(&mut self, reference: &str, out: &mut String) -> bool {
        let text = glob::glob_text(reference);
        if glob::is_oversized(&text) {
            log::warn!("inlineFileReferences: ignoring oversized glob token \"@{text}\"");
            return false;
        }
        let glob = Glob::compile(&text);
        self.ensure_whole_walk();
        let files = self.whole_walk.as_deref().unwrap_or_default();
        inline_files(&mut self.inliner, files, |label| glob.matches(label), out)
    }

    /// Walks the whole project, at most once per prompt.
    fn ensure_whole_walk(&mut self) {
        if self.whole_walk.is_none() {
            self.whole_walk = Some(walk::walk(&self.project.real_root, &self.project.real_root));
        }
    }
}

/// Inlines the walked files that `wanted` accepts, in walk order; true when any was inlined.
fn inline_files(
    inliner: &mut Inliner,
    files: &[WalkFile],
    wanted: impl Fn(&str) -> bool,
    out: &mut String,
) -> bool {
    let mut any = false;
    for file in files.iter().filter(|it| wanted(&it.label)) {
        any |= inliner.inline_file(&file.label, &file.path, out);
    }
    any
}

/// `path.resolve(base, reference)` on POSIX without touching the filesystem: an absolute
/// `reference` replaces `base`, empty and `.` segments vanish, `..` removes the previous segment
/// (never going above `/`), and the result has no trailing slash. `base` must be absolute.
pub fn resolve_lexically(base: &Path, reference: &[u8]) -> PathBuf {
    let mut segments: Vec<&[u8]> = Vec::new();
    let start: &[u8] =
        if reference.first() == Some(&b'/') { b"" } else { base.as_os_str().as_bytes() };
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

    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    use crate::testutil::{TempDir, XorShift};

    /// Writes `contents of <rel>\n` to `rel`.
    fn text(project: &TempDir, rel: &str) {
        project.file(rel, contents(rel).as_bytes());
    }

    /// Inlines `prompt` against the project, panicking on a refusal.
    fn inline(project: &TempDir, prompt: &str) -> String {
        match inline_file_references(prompt, project.path(), &AtomicBool::new(false)) {
            Ok(it) => it.into_owned(),
            Err(err) => panic!("inlining {prompt:?} failed: {err}"),
        }
    }

    /// The refusal text for `reference` with the `what` wording (`outside`, ...).
    fn refusal(project: &TempDir, what: &str, reference: &str) -> String {
        format!(
            "Refusing @file reference {what} the project directory: \"@{reference}\". Only files within {} may be referenced.",
            project.path().display()
        )
    }

    fn block(label: &str, text: &str) -> String {
        format!("\n----- BEGIN FILE: {label} -----\n{text}\n----- END FILE: {label} -----\n")
    }

    fn contents(rel: &str) -> String {
        format!("contents of {rel}\n")
    }

    /// Asserts that both entry points refuse `prompt` with the `what` text for `reference`.
    fn check_refused(project: &TempDir, prompt: &str, what: &str, reference: &str) {
        let expected = refusal(project, what, reference);
        assert_eq!(assert_safe_file_references(prompt, project.path()), Err(expected.clone()));
        assert_eq!(
            inline_file_references(prompt, project.path(), &AtomicBool::new(false)),
            Err(expected)
        );
    }

    /// Asserts that the jail accepts `prompt` and inlining returns it unchanged.
    fn check_unchanged(project: &TempDir, prompt: &str) {
        assert_eq!(assert_safe_file_references(prompt, project.path()), Ok(()));
        assert_eq!(inline(project, prompt), prompt);
    }

    /// Asserts what inlining `prompt` shows and never shows.
    fn check_inlined(project: &TempDir, prompt: &str, present: &[&str], absent: &[&str]) -> String {
        let out = inline(project, prompt);
        for text in present {
            assert!(out.contains(text), "{prompt:?} should show {text:?}:\n{out}");
        }
        for text in absent {
            assert!(!out.contains(text), "{prompt:?} must not show {text:?}:\n{out}");
        }
        out
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        // SAFETY: geteuid(2) takes no arguments and cannot fail.
        #[allow(unsafe_code)]
        unsafe {
            libc::geteuid() == 0
        }
    }

    #[test]
    fn jail_allows_references_inside_the_project() {
        let project = TempDir::new();
        text(&project, "src/index.ts");
        text(&project, "package.json");
        for prompt in [
            "explain @src/index.ts",
            "no references at all",
            "@package.json",
            "@.",
            "@./src/../package.json",
            "/** @param x the value */",
            "class A { @Injectable() svc }",
            "install @types/node",
            "mail user@example.com",
            "@src/a.ts,",
            "@does-not-exist.txt",
        ] {
            assert_eq!(assert_safe_file_references(prompt, project.path()), Ok(()), "{prompt}");
        }
    }

    #[test]
    fn jail_refuses_parent_paths() {
        check_refused(&TempDir::new(), "read @../secret.txt", "outside", "../secret.txt");
        check_refused(&TempDir::new(), "@src/../../x", "outside", "src/../../x");
        check_refused(&TempDir::new(), "@..", "outside", "..");
    }

    #[test]
    fn jail_refuses_home_paths() {
        check_refused(&TempDir::new(), "@~/.ssh/id_rsa", "outside", "~/.ssh/id_rsa");
        check_refused(&TempDir::new(), "@~", "outside", "~");
    }

    #[test]
    fn jail_refuses_absolute_paths() {
        check_refused(&TempDir::new(), "cat @/etc/passwd", "outside", "/etc/passwd");
        check_refused(&TempDir::new(), "@/", "outside", "/");
    }

    #[test]
    fn jail_refuses_vue_style_aliases() {
        check_refused(&TempDir::new(), "see @/components/x", "outside", "/components/x");
    }

    #[test]
    fn jail_looks_inside_words() {
        check_refused(&TempDir::new(), "x@/etc/y", "outside", "/etc/y");
        check_refused(&TempDir::new(), "a@~b", "outside", "~b");
    }

    #[test]
    fn jail_reports_the_first_violation() {
        let project = TempDir::new();
        check_refused(&project, "@ok @../a @/etc/b", "outside", "../a");
    }

    #[test]
    fn absolute_path_inside_the_root_is_allowed() {
        let project = TempDir::new();
        text(&project, "a.ts");
        let prompt = format!("@{}", project.path().join("a.ts").display());
        let label = project.path().join("a.ts").display().to_string();
        check_inlined(&project, &prompt, &[&block(&label, &contents("a.ts"))], &[]);
    }

    #[test]
    fn in_root_symlinks_to_the_outside_are_refused() {
        let outside = TempDir::new();
        outside.file("secret.txt", b"TOP-SECRET");
        let project = TempDir::new();
        text(&project, "inside/harmless.txt");
        project.link("inside/leak.txt", &outside.path().join("secret.txt"));
        project.link("inside/leakdir", outside.path());
        check_refused(&project, "@inside/leak.txt", "resolving outside", "inside/leak.txt");
        check_refused(&project, "see @inside/leakdir", "resolving outside", "inside/leakdir");
        check_refused(
            &project,
            "@inside/leakdir/secret.txt",
            "resolving outside",
            "inside/leakdir/secret.txt",
        );
        check_refused(&project, "x@inside/leak.txt", "resolving outside", "inside/leak.txt");
        let harmless = block("inside/harmless.txt", &contents("inside/harmless.txt"));
        for prompt in ["@inside", "@.", "@inside/*.txt", "@**/*", "@inside/**"] {
            check_inlined(&project, prompt, &[&harmless], &["TOP-SECRET", "leak"]);
        }
    }

    #[test]
    fn dangling_symlink_is_left_verbatim() {
        let project = TempDir::new();
        project.link("gone.txt", Path::new("/nonexistent/gemini-relay/target"));
        check_unchanged(&project, "@gone.txt");
    }

    #[test]
    fn reference_is_replaced_by_its_block() {
        let project = TempDir::new();
        project.file("package.json", b"{\"name\": \"gemini-relay\"}");
        let expected = format!("see {}", block("package.json", "{\"name\": \"gemini-relay\"}"));
        assert_eq!(inline(&project, "see @package.json"), expected);
    }

    #[test]
    fn unresolvable_tokens_are_unchanged() {
        let project = TempDir::new();
        text(&project, "a.ts");
        for prompt in [
            "@does-not-exist.txt",
            "/** @param x the value */",
            "class A { @Injectable() svc }",
            "install @types/node",
            "mail user@example.com about @ and @",
            "look at @a.ts, then",
        ] {
            check_unchanged(&project, prompt);
        }
    }

    #[test]
    fn emails_are_never_inlined() {
        let project = TempDir::new();
        text(&project, "example.com");
        check_unchanged(&project, "write to user@example.com");
    }

    #[test]
    fn unicode_whitespace_starts_an_inline_token() {
        let project = TempDir::new();
        text(&project, "a.ts");
        let out = inline(&project, "x\u{3000}@a.ts\u{a0}y");
        assert_eq!(out, format!("x\u{3000}{}\u{a0}y", block("a.ts", &contents("a.ts"))));
        check_unchanged(&project, "x\u{85}@a.ts");
    }

    fn sample_project() -> TempDir {
        let project = TempDir::new();
        for rel in [
            "a.ts",
            "nested/b.md",
            "node_modules/pkg/index.js",
            ".git/HEAD",
            "dist/bundle.js",
            "docs/.vitepress/cache/deps.js",
            "docs/.vitepress/dist/index.html",
            "docs/.vitepress/config.ts",
            "src/a.ts",
            "src/deep/b.ts",
            "src/c.js",
        ] {
            text(&project, rel);
        }
        project.file("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        project
    }

    #[test]
    fn dot_inlines_the_project_with_skips() {
        let project = sample_project();
        let out = check_inlined(
            &project,
            "review @. now",
            &[
                &block("a.ts", &contents("a.ts")),
                &block("nested/b.md", &contents("nested/b.md")),
                &block("docs/.vitepress/config.ts", &contents("docs/.vitepress/config.ts")),
            ],
            &["node_modules", ".git", "dist/", "cache", "logo.png", "PNG", "@."],
        );
        let a = out.find("BEGIN FILE: a.ts").unwrap();
        let config = out.find("BEGIN FILE: docs/.vitepress/config.ts").unwrap();
        let nested = out.find("BEGIN FILE: nested/b.md").unwrap();
        assert!(a < config && config < nested, "walk order");
        assert!(out.starts_with("review \n----- BEGIN FILE: a.ts"));
        assert!(out.ends_with("----- END FILE: src/deep/b.ts -----\n now"));
    }

    #[test]
    fn directory_inlines_only_its_files() {
        let project = sample_project();
        let out = inline(&project, "@src");
        let expected = [
            block("src/a.ts", &contents("src/a.ts")),
            block("src/c.js", &contents("src/c.js")),
            block("src/deep/b.ts", &contents("src/deep/b.ts")),
        ]
        .concat();
        assert_eq!(out, expected);
    }

    #[test]
    fn globs_expand_in_walk_order() {
        let project = sample_project();
        let expected = [
            block("src/a.ts", &contents("src/a.ts")),
            block("src/deep/b.ts", &contents("src/deep/b.ts")),
        ]
        .concat();
        assert_eq!(inline(&project, "@src/**/*.ts"), expected);
        assert_eq!(inline(&project, r"@src\**\*.ts"), expected);
        check_inlined(&project, "@**/*.ts", &[&block("a.ts", &contents("a.ts"))], &["c.js"]);
        check_inlined(&project, "@*.ts", &["BEGIN FILE: a.ts -----"], &["src/a.ts"]);
    }

    #[test]
    fn non_matching_glob_is_verbatim() {
        let project = sample_project();
        check_unchanged(&project, "@src/*.rs");
        check_unchanged(&project, "@*.png");
    }

    #[test]
    fn oversized_globs_are_verbatim_and_fast() {
        let project = sample_project();
        let pathological = format!("@{}ab", "a**".repeat(20));
        let started = Instant::now();
        check_unchanged(&project, &pathological);
        assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
        check_unchanged(&project, &format!("@{}*", "a".repeat(249)));
        check_unchanged(&project, "@*a*b*c*d*e*f*");
    }

    #[test]
    fn secrets_never_come_through_walks() {
        let project = TempDir::new();
        for rel in [
            ".env",
            ".env.production",
            ".npmrc",
            ".netrc",
            "certs/server.pem",
            "certs/tls.key",
            "keys/id_rsa",
        ] {
            project.file(rel, format!("SECRET in {rel}").as_bytes());
        }
        text(&project, "certs/README.md");
        for prompt in ["@.", "@certs", "@**/*", "@keys", "@*"] {
            let out = inline(&project, prompt);
            assert!(!out.contains("SECRET"), "{prompt} leaked a secret:\n{out}");
        }
        check_unchanged(&project, "@keys");
        check_inlined(&project, "@.env", &[&block(".env", "SECRET in .env")], &[]);
        check_inlined(&project, "@certs/tls.key", &["SECRET in certs/tls.key"], &[]);
    }

    #[test]
    fn big_file_is_truncated() {
        let project = TempDir::new();
        project.file("big.txt", vec![b'x'; 262_144 + 100]);
        let out = inline(&project, "@big.txt");
        assert!(out.ends_with(
            "x\n----- TRUNCATED: big.txt is 262244 bytes, only the first 262144 are shown -----\n----- END FILE: big.txt -----\n"
        ));
        assert_eq!(out.matches('x').count(), 262_144 + 3, "the contents plus one x per label");
    }

    #[test]
    fn multibyte_character_cut_at_the_cap_is_replaced() {
        let project = TempDir::new();
        let mut bytes = vec![b'a'; 262_143];
        bytes.extend_from_slice("€".as_bytes());
        project.file("cut.txt", &bytes);
        check_inlined(
            &project,
            "@cut.txt",
            &[
                "a\u{fffd}\n----- TRUNCATED: cut.txt is 262146 bytes, only the first 262144 are shown -----",
            ],
            &[],
        );
    }

    #[test]
    fn budget_omits_the_ninth_big_file() {
        let project = TempDir::new();
        for n in 0..9 {
            project.file(&format!("f{n}.txt"), vec![b'a' + n; 262_144]);
        }
        let out = inline(&project, "@.");
        assert!(out.contains("----- BEGIN FILE: f0.txt -----"));
        assert!(out.contains("----- END FILE: f7.txt -----"));
        assert!(!out.contains("BEGIN FILE: f8.txt"));
        assert!(out.ends_with(
            "----- END FILE: f7.txt -----\n\n----- OMITTED: the 2097152 byte inline budget was reached; 1 file(s) not included: f8.txt -----\n"
        ));
    }

    #[test]
    fn budget_is_shared_and_footers_summarise_the_rest() {
        let project = TempDir::new();
        for n in 0..8 {
            project.file(&format!("big/b{n}.txt"), vec![b'b'; 262_144]);
        }
        for n in 0..12 {
            text(&project, &format!("small/s{n:02}.txt"));
        }
        let out = inline(&project, "@big then @small/s00.txt and @small");
        assert!(out.contains(" then @small/s00.txt and @small\n----- OMITTED"), "tokens stay");
        assert!(out.ends_with(
            "\n----- OMITTED: the 2097152 byte inline budget was reached; 13 file(s) not included: \
             small/s00.txt, small/s00.txt, small/s01.txt, small/s02.txt, small/s03.txt, \
             small/s04.txt, small/s05.txt, small/s06.txt, small/s07.txt, small/s08.txt, and 3 more -----\n"
        ));
    }

    #[test]
    fn unreadable_file_is_footnoted() {
        let project = TempDir::new();
        text(&project, "ok.txt");
        text(&project, "locked.txt");
        let locked = project.path().join("locked.txt");
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        let out = inline(&project, "@.");
        assert!(out.contains(&block("ok.txt", &contents("ok.txt"))));
        if is_root() {
            // Root reads the file regardless of its mode.
            assert!(out.contains(&block("locked.txt", &contents("locked.txt"))));
            assert!(!out.contains("UNREADABLE"));
            return;
        }
        assert!(!out.contains("BEGIN FILE: locked.txt"));
        assert!(out.ends_with(
            "\n----- UNREADABLE: files exist but could not be read; 1 file(s) not included: locked.txt -----\n"
        ));
        let out = inline(&project, "@locked.txt");
        assert!(out.starts_with("@locked.txt\n----- UNREADABLE:"));
    }

    #[test]
    fn label_is_the_reference_as_written() {
        let project = TempDir::new();
        text(&project, "src/a.ts");
        check_inlined(&project, "@./src/a.ts", &[&block("./src/a.ts", &contents("src/a.ts"))], &[]);
        check_inlined(&project, "@src//a.ts", &["BEGIN FILE: src//a.ts -----"], &[]);
    }

    #[test]
    fn binary_and_special_files_stay_verbatim() {
        let project = sample_project();
        check_unchanged(&project, "@logo.png");
        let fifo =
            std::ffi::CString::new(project.path().join("pipe").as_os_str().as_bytes()).unwrap();
        // SAFETY: `fifo` is a valid NUL-terminated path.
        // SAFETY: mkfifo(3) reads a NUL-terminated path that outlives the call.
        #[allow(unsafe_code)]
        let made = unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) };
        assert_eq!(made, 0);
        check_unchanged(&project, "@pipe");
        check_inlined(&project, "@.", &["BEGIN FILE: a.ts"], &["pipe"]);
    }

    #[test]
    fn empty_directory_stays_verbatim() {
        let project = TempDir::new();
        project.dir("empty");
        check_unchanged(&project, "@empty");
        check_unchanged(&project, "@.");
    }

    #[test]
    fn inlined_text_is_not_rescanned() {
        let project = TempDir::new();
        project.file("a.txt", b"@b.txt @../x");
        text(&project, "b.txt");
        assert_eq!(inline(&project, "@a.txt"), block("a.txt", "@b.txt @../x"));
    }

    #[test]
    fn root_given_through_a_symlink() {
        let project = TempDir::new();
        text(&project, "a.ts");
        let holder = TempDir::new();
        holder.link("project", project.path());
        let root = holder.path().join("project");
        let out = inline_file_references("@a.ts and @.", &root, &AtomicBool::new(false)).unwrap();
        assert_eq!(out.matches("BEGIN FILE: a.ts -----").count(), 2);
        let expected = format!(
            "Refusing @file reference outside the project directory: \"@../x\". Only files within {} may be referenced.",
            root.display()
        );
        assert_eq!(assert_safe_file_references("@../x", &root), Err(expected));
        let through_real = format!("@{}", project.path().join("a.ts").display());
        assert!(assert_safe_file_references(&through_real, &root).is_err());
    }

    #[test]
    fn filesystem_root_as_project_root_refuses_everything_below_it() {
        // The original tests `resolved.startsWith(root + "/")`, which nothing passes for root `/`.
        let expected = "Refusing @file reference outside the project directory: \"@etc/passwd\". Only files within / may be referenced.";
        assert_eq!(
            assert_safe_file_references("@etc/passwd", Path::new("/")),
            Err(expected.into())
        );
        assert_eq!(
            inline_file_references("@.", Path::new("/"), &AtomicBool::new(false)),
            Ok(std::borrow::Cow::Borrowed("@."))
        );
    }

    #[test]
    fn non_utf8_names_get_lossy_labels() {
        let project = TempDir::new();
        let name = OsString::from_vec(b"bad\xff.txt".to_vec());
        fs::write(project.path().join(name), "raw bytes").unwrap();
        check_inlined(&project, "@*.txt", &[&block("bad\u{fffd}.txt", "raw bytes")], &[]);
    }

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

    #[test]
    fn random_prompts_never_panic_or_leak() {
        let outside = TempDir::new();
        outside.file("secret.txt", b"TOP-SECRET");
        let project = sample_project();
        project.link("leak", outside.path());
        let pieces = [
            "@",
            "@",
            " ",
            "a.ts",
            "src",
            "/",
            "..",
            ".",
            "*",
            "**",
            "?",
            "~",
            "\n",
            "\u{a0}",
            "nested",
            "b.md",
            "leak",
            "secret.txt",
            "é",
            "\\",
            "x@",
        ];
        let mut rng = XorShift::new(0xdead_beef_cafe_f00d);
        let started = Instant::now();
        for _ in 0..300 {
            let len = rng.next() % 12;
            let prompt: String =
                (0..len).map(|_| pieces[(rng.next() % pieces.len() as u64) as usize]).collect();
            match inline_file_references(&prompt, project.path(), &AtomicBool::new(false)) {
                Ok(out) => assert!(!out.contains("TOP-SECRET"), "{prompt:?} leaked"),
                Err(err) => assert!(err.starts_with("Refusing @file reference "), "{err}"),
            }
        }
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    }

    #[test]
    fn one_megabyte_prompts_stay_fast() {
        const MB: usize = 1 << 20;
        let project = sample_project();
        for prompt in ["@".repeat(MB), "*".repeat(MB), "@*".repeat(MB / 2), "a@".repeat(MB / 2)] {
            let started = Instant::now();
            assert_eq!(
                inline_file_references(&prompt, project.path(), &AtomicBool::new(false)).as_deref(),
                Ok(prompt.as_str())
            );
            assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
        }
    }

    #[test]
    fn two_thousand_files_under_dot() {
        let project = TempDir::new();
        let line = "0123456789abcdef".repeat(96);
        for n in 0..2_000 {
            project.file(&format!("d{:02}/f{n:04}.txt", n / 100), line.as_bytes());
        }
        let started = Instant::now();
        let out = inline(&project, "@.");
        let elapsed = started.elapsed();
        eprintln!("inlining @. over 2,000 files of 1,536 bytes took {elapsed:?}");
        assert_eq!(out.matches("----- BEGIN FILE: ").count(), 1_365);
        assert!(out.ends_with(
            "\n----- OMITTED: the 2097152 byte inline budget was reached; 635 file(s) not included: \
             d13/f1365.txt, d13/f1366.txt, d13/f1367.txt, d13/f1368.txt, d13/f1369.txt, \
             d13/f1370.txt, d13/f1371.txt, d13/f1372.txt, d13/f1373.txt, d13/f1374.txt, and 625 more -----\n"
        ));
    }
}
