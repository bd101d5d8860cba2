//! The tests of `@` references as a whole: the jail check and inlining through their entry points,
//! against temporary projects with symlinks, FIFOs, secrets and races.

use super::*;

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::testutil::{TempDir, XorShift, mkfifo, thread_cpu_time};

/// A stop flag that is never set.
static GO: AtomicBool = AtomicBool::new(false);

/// The jail check on its own.
fn jail(prompt: &str, root: &Path) -> Result<(), String> {
    jail::Project::new(root).assert_safe(prompt, &GO)
}

/// Writes `contents of <rel>\n` to `rel`.
fn text(project: &TempDir, rel: &str) {
    project.file(rel, contents(rel).as_bytes());
}

/// Inlines `prompt` against the project, panicking on a refusal.
fn inline(project: &TempDir, prompt: &str) -> String {
    match inline_file_references(prompt, project.path(), &GO) {
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
    assert_eq!(jail(prompt, project.path()), Err(expected.clone()));
    assert_eq!(inline_file_references(prompt, project.path(), &GO), Err(expected));
}

/// Asserts that the jail accepts `prompt` and inlining returns it unchanged.
fn check_unchanged(project: &TempDir, prompt: &str) {
    assert_eq!(jail(prompt, project.path()), Ok(()));
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
        assert_eq!(jail(prompt, project.path()), Ok(()), "{prompt}");
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
fn budget_counts_whole_blocks_and_closes_at_the_first_misfit() {
    // This differs from the original: the block headers count, so eight 256 KiB files (exactly
    // the 2 MiB of text) no longer fit; and the budget closes at the first file that does not
    // fit, so the ninth is omitted unread.
    let project = TempDir::new();
    for n in 0..9 {
        project.file(&format!("f{n}.txt"), vec![b'a' + n; 262_144]);
    }
    let out = inline(&project, "@.");
    assert!(out.contains("----- BEGIN FILE: f0.txt -----"));
    assert!(!out.contains("BEGIN FILE: f7.txt"));
    assert!(out.ends_with(
        "----- END FILE: f6.txt -----\n\n----- OMITTED: the 2097152 byte inline budget was reached; 2 file(s) not included: f7.txt, f8.txt -----\n"
    ));
    assert!(out.len() <= "@.".len() + inline::BUDGET);
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
        "\n----- OMITTED: the 2097152 byte inline budget was reached; 14 file(s) not included: \
         big/b7.txt, small/s00.txt, small/s00.txt, small/s01.txt, small/s02.txt, small/s03.txt, \
         small/s04.txt, small/s05.txt, small/s06.txt, small/s07.txt, and 4 more -----\n"
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
    mkfifo(&project.path().join("pipe"));
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
    let out = inline_file_references("@a.ts and @.", &root, &GO).unwrap();
    assert_eq!(out.matches("BEGIN FILE: a.ts -----").count(), 2);
    let expected = format!(
        "Refusing @file reference outside the project directory: \"@../x\". Only files within {} may be referenced.",
        root.display()
    );
    assert_eq!(jail("@../x", &root), Err(expected));
    let through_real = format!("@{}", project.path().join("a.ts").display());
    assert!(jail(&through_real, &root).is_err());
}

#[test]
fn filesystem_root_as_project_root_refuses_everything_below_it() {
    // The original tests `resolved.startsWith(root + "/")`, which nothing passes for root `/`.
    let expected = "Refusing @file reference outside the project directory: \"@etc/passwd\". Only files within / may be referenced.";
    assert_eq!(jail("@etc/passwd", Path::new("/")), Err(expected.into()));
    assert_eq!(
        inline_file_references("@.", Path::new("/"), &GO),
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
fn where_a_path_to_write_lands() {
    let check = |root: &str, path: &str, expected: Landing| {
        assert_eq!(landing(Path::new(root), path), expected, "{root} + {path}");
    };
    let inside = |rel: &str| Landing::Inside(rel.to_string());
    check("/p", "a/./b//c.png", inside("a/b/c.png"));
    check("/p/", "a/../b.png", inside("b.png"));
    check("/p", "../p/x.png", inside("x.png"));
    check("/p", "/p/out/x.png", inside("out/x.png"));
    check("/p", ".", inside(""));
    check("/p", "..foo/x.png", inside("..foo/x.png"));
    check("/p", "a\\..\\..\\x.png", inside("a\\..\\..\\x.png"));
    check("/p", "../x.png", Landing::Outside);
    check("/p", "/pq/x.png", Landing::Outside);
    check("/p", "/", Landing::Outside);
    check("/p/q", "..", Landing::Outside);
    // A project at the top of the file system holds every absolute path.
    check("/", "etc/x.png", inside("etc/x.png"));
    check("/", "/tmp/x.png", inside("tmp/x.png"));
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
        match inline_file_references(&prompt, project.path(), &GO) {
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
            inline_file_references(&prompt, project.path(), &GO).as_deref(),
            Ok(prompt.as_str())
        );
        eprintln!("{} took {:?}", &prompt[..2], started.elapsed());
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
    // Each block costs its 1,536 bytes of text and 76 bytes of header and trailer.
    assert_eq!(out.matches("----- BEGIN FILE: ").count(), 1_295);
    assert!(out.ends_with(
        "\n----- OMITTED: the 2097152 byte inline budget was reached; 705 file(s) not included: \
         d12/f1295.txt, d12/f1296.txt, d12/f1297.txt, d12/f1298.txt, d12/f1299.txt, \
         d13/f1300.txt, d13/f1301.txt, d13/f1302.txt, d13/f1303.txt, d13/f1304.txt, and 695 more -----\n"
    ));
}

#[test]
fn symlinks_inside_the_project_are_never_followed() {
    // A symlink is not followed even when it points inside the project, so a reference through
    // one stays verbatim and walks leave it out (so walks print no symlink target labels).
    let project = TempDir::new();
    text(&project, "real/a.txt");
    project.link("alias.txt", &project.path().join("real/a.txt"));
    project.link("aliasdir", &project.path().join("real"));
    for prompt in ["@alias.txt", "@aliasdir", "@aliasdir/a.txt", "@aliasdir/../real/a.txt,"] {
        check_unchanged(&project, prompt);
    }
    let out =
        check_inlined(&project, "@.", &[&block("real/a.txt", &contents("real/a.txt"))], &["alias"]);
    assert_eq!(out.matches("BEGIN FILE").count(), 1);
    check_inlined(&project, "@**/a.txt", &["BEGIN FILE: real/a.txt -----"], &["alias"]);
}

#[test]
fn fifos_among_inlined_files_never_block() {
    let project = TempDir::new();
    text(&project, "a.txt");
    for name in ["pipe.txt", "sub/pipe.txt"] {
        project.dir("sub");
        mkfifo(&project.path().join(name));
    }
    let started = Instant::now();
    for prompt in ["@pipe.txt", "@sub/pipe.txt", "@sub"] {
        check_unchanged(&project, prompt);
    }
    for prompt in ["@.", "@*.txt", "@**/*.txt", "@a.txt @pipe.txt"] {
        check_inlined(
            &project,
            prompt,
            &["BEGIN FILE: a.txt -----"],
            &["pipe.txt -----", "UNREADABLE"],
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[test]
fn repeated_tokens_and_the_budget_bound_the_growth() {
    // 2,000 empty files and `@**/*.txt` 1,000 times once took 388 MB.
    let project = TempDir::new();
    for n in 0..2_000 {
        project.file(&format!("d{:02}/f{n:04}.txt", n / 100), "");
    }
    let prompt = "@**/*.txt ".repeat(1_000);
    let started = Instant::now();
    let out = inline(&project, &prompt);
    let elapsed = started.elapsed();
    assert!(out.len() <= prompt.len() + inline::BUDGET, "grew by {}", out.len() - prompt.len());
    assert!(out.len() > inline::BUDGET - inline::FOOTER_RESERVE, "the budget is used");
    // 27,486 blocks of 76 bytes fit; the other 1,972,514 matches are counted, not read.
    assert!(out.ends_with(" and 1972504 more -----\n"), "{}", &out[out.len() - 300..]);
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
}

#[test]
fn a_set_stop_flag_cancels() {
    let project = sample_project();
    let stop = AtomicBool::new(true);
    for prompt in ["@.", "@a.ts", "@**/*.ts", "x @../y"] {
        assert_eq!(
            inline_file_references(prompt, project.path(), &stop),
            Err(CANCELLED.to_string())
        );
    }
    assert_eq!(
        inline_file_references("no reference", project.path(), &stop).as_deref(),
        Ok("no reference")
    );
}

#[test]
#[cfg(target_os = "linux")]
fn jail_holds_against_a_directory_swapped_for_a_symlink() {
    use std::os::unix::ffi::OsStrExt;

    // A race: `proj/d` and `proj/dswap -> /outside/d` swap places in a loop while
    // `@.`, `@d` and `@d/f.txt` are inlined; no outside byte may ever come through.
    let outside = TempDir::new();
    outside.file("d/f.txt", "OUTSIDE-BYTES");
    outside.file("d/g.txt", "OUTSIDE-BYTES");
    let project = TempDir::new();
    project.file("d/f.txt", "inside f");
    project.file("d/g.txt", "inside g");
    project.link("dswap", &outside.path().join("d"));
    let d = std::ffi::CString::new(project.path().join("d").as_os_str().as_bytes()).unwrap();
    let dswap =
        std::ffi::CString::new(project.path().join("dswap").as_os_str().as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    let swapper = std::thread::spawn(move || {
        let mut swaps = 0u64;
        while Instant::now() < deadline {
            // SAFETY: both paths are valid NUL-terminated strings that outlive the call. The
            // raw system call, because musl's libc has no renameat2 wrapper.
            #[allow(unsafe_code)]
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    d.as_ptr(),
                    libc::AT_FDCWD,
                    dswap.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
            swaps += 1;
        }
        swaps
    });
    let (mut inlined, mut refused, mut calls) = (0, 0, 0);
    while Instant::now() < deadline {
        for prompt in ["@.", "@d", "@d/f.txt"] {
            calls += 1;
            match inline_file_references(prompt, project.path(), &GO) {
                Ok(out) => {
                    assert!(!out.contains("OUTSIDE"), "{prompt} leaked:\n{out}");
                    inlined += usize::from(out.contains("inside"));
                }
                Err(err) => {
                    assert!(err.starts_with("Refusing @file reference resolving outside"), "{err}");
                    refused += 1;
                }
            }
        }
    }
    let swaps = swapper.join().unwrap();
    eprintln!(
        "{calls} calls ({inlined} inlined inside files, {refused} refused) during {swaps} swaps"
    );
    assert!(swaps > 100 && inlined > 10, "the race was exercised");
}

/// The least CPU time of three runs of `small` and of `large`, run in turns.
fn fastest_of_each(mut small: impl FnMut(), mut large: impl FnMut()) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let started = thread_cpu_time();
        f();
        thread_cpu_time() - started
    };
    let (mut best_small, mut best_large) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        best_small = best_small.min(time(&mut small));
        best_large = best_large.min(time(&mut large));
    }
    (best_small, best_large)
}

#[test]
fn jail_check_is_near_linear_in_distinct_tokens() {
    // 40,000 distinct tokens once took 3.6 s (a linear search per token).
    let project = TempDir::new();
    let prompt = |n: usize| (0..n).map(|it| format!("@f{it}.txt ")).collect::<String>();
    let (small, large) = (prompt(10_000), prompt(40_000));
    let (time_small, time_large) = fastest_of_each(
        || jail(&small, project.path()).unwrap(),
        || jail(&large, project.path()).unwrap(),
    );
    eprintln!("jail check: 10,000 distinct tokens {time_small:?}, 40,000 {time_large:?}");
    assert!(time_large <= time_small * 5, "{time_small:?} then {time_large:?}");
}

#[test]
fn globs_are_near_linear_in_distinct_patterns() {
    // 1,600 glob tokens over 2,000 files once took 19 s (every token matched and inlined
    // again).
    let project = TempDir::new();
    for n in 0..2_000 {
        project.file(&format!("d{:02}/f{n:04}.txt", n / 100), "x");
    }
    let prompt = |n: usize| (0..n).map(|it| format!("@**/*{it}.txt ")).collect::<String>();
    let (small, large) = (prompt(400), prompt(1_600));
    let (time_small, time_large) =
        fastest_of_each(|| drop(inline(&project, &small)), || drop(inline(&project, &large)));
    eprintln!("globs over 2,000 files: 400 patterns {time_small:?}, 1,600 {time_large:?}");
    assert!(time_large <= time_small * 5, "{time_small:?} then {time_large:?}");
}

/// The gemini backend's check on `prompt`, in a project with `../secret.txt` beside it.
fn gemini_check(project: &TempDir, prompt: &str) -> Result<(), String> {
    check_gemini_references(prompt, project.path())
}

#[test]
fn gemini_check_refuses_every_escape_of_issue_12() {
    let parent = TempDir::new();
    parent.file("secret.txt", "TOP-SECRET");
    let project = parent.dir("project");
    for (prompt, written) in [
        ("@../secret.txt", "../secret.txt"),
        (r#"@"../secret.txt""#, r#""../secret.txt""#),
        (r"@docs\ ../../secret.txt", r"docs\ ../../secret.txt"),
        (r#"see @"a b/../../../secret.txt""#, r#""a b/../../../secret.txt""#),
        (r#"@"~/.ssh/id_rsa""#, r#""~/.ssh/id_rsa""#),
        (r"@\/etc/passwd", r"\/etc/passwd"),
        (r#"@"notes on ../x""#, r#""notes on ../x""#),
        ("mail x@/etc/passwd", "/etc/passwd"),
    ] {
        let expected = format!(
            "Refusing @file reference outside the project directory: \"@{written}\". Only files within {} may be referenced.",
            project.display()
        );
        assert_eq!(check_gemini_references(prompt, &project), Err(expected), "{prompt}");
    }
}

#[test]
fn gemini_check_reads_quoted_names_as_the_cli_does() {
    // The CLI keeps the quotes of `@"evil"/passwd` and reads through a symlink named `"evil"`.
    let outside = TempDir::new();
    outside.file("passwd", "root:x:0:0");
    let project = TempDir::new();
    project.link("\"evil\"", outside.path());
    project.link("link", outside.path());
    let prompt = r#"@"evil"/passwd"#;
    assert_eq!(
        gemini_check(&project, prompt),
        Err(refusal(&project, "resolving outside", r#""evil"/passwd"#))
    );
    assert_eq!(
        gemini_check(&project, r#"@"link/passwd""#),
        Err(refusal(&project, "resolving outside", r#""link/passwd""#))
    );
}

#[test]
fn gemini_check_allows_what_stays_inside() {
    let project = sample_project();
    project.file("docs/my file.md", "x");
    for prompt in [
        "explain @a.ts and @src/deep/b.ts.",
        "mail user@example.com.",
        r"not a reference: \@../secret.txt",
        r#"@"docs/my file.md" and @docs/my\ file.md"#,
        "@./src/a.ts, @./nested",
        "@.",
        "@src/../a.ts",
        r#"@"a long quoted name for a file that does not exist.md""#,
        "class A { @Injectable() svc } /** @param x */",
        "@ @, @( @.",
    ] {
        assert_eq!(gemini_check(&project, prompt), Ok(()), "{prompt}");
    }
}

#[test]
fn gemini_check_is_linear() {
    let project = TempDir::new();
    let prompt: String = (0..10_000).map(|n| format!("@\"f {n}.txt\" ")).collect();
    let started = Instant::now();
    assert_eq!(gemini_check(&project, &prompt), Ok(()));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let repeated = format!("{}@../x", "@\"a b\" ".repeat(100_000));
    assert!(gemini_check(&project, &repeated).is_err());
}

// Attachments: the Gemini CLI's POSIX escaping, and the handle walk under a swapped directory.

#[test]
fn gemini_tokens_escape_what_ends_a_reference() {
    let one = |rel: &str| {
        let it = attach::Attachment {
            written: String::new(),
            rel: rel.into(),
            kind: "PNG",
            size: 1,
            outside: false,
        };
        attach::gemini_tokens(&[it])
    };
    assert_eq!(one("a b(1).png"), r" @a\ b\(1\).png");
    assert_eq!(one("x\t;!?[]{},\"\\y."), " @x\\\t\\;\\!\\?\\[\\]\\{\\}\\,\\\"\\\\y\\.");
    assert_eq!(one("dir.d/a.b"), " @dir.d/a.b");
}

#[test]
fn a_directory_swapped_for_a_link_after_the_check_is_not_followed() {
    let tmp = TempDir::new();
    let outside = TempDir::new();
    tmp.file("d/shot.png", "\u{89}PNG");
    outside.file("shot.png", "SECRET");
    let root = fs::canonicalize(tmp.path()).unwrap();
    let canonical = fs::canonicalize(root.join("d/shot.png")).unwrap();
    assert!(attach::open_beneath(&root, &canonical).is_ok());
    fs::rename(root.join("d"), root.join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("d")).unwrap();
    assert!(attach::open_beneath(&root, &canonical).is_err());
}
