//! Attachments through the real binary: what agy and the Gemini CLI are shown for accepted files
//! (agy's block, the CLI's escaped `@` tokens, agy's own `@` tokens of media files), the notice
//! first in the reply, and every refusal, each before any prompt run.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::util::{Fakes, Setup, TempDir, last_agy_prompt};

const THREAD: &str = "\n\n🧵 conversationId: c1 (pass it back to continue this thread)";
const BLOCK: &str =
    "\n\nAttached files (open each one with your file viewing tool before you answer):";
const SUPPORTED: &str =
    "supported: PNG, JPEG, GIF, WebP, BMP, TIFF, PDF, MP3, WAV, FLAC, MP4, QuickTime, WebM";

fn agy(fakes: &Fakes, project: &Path) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy").env("FAKE_AGY_RESPONSE", "seen").cwd(project)
}

fn gemini(fakes: &Fakes, project: &Path) -> Setup {
    fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_GEMINI_RESPONSE", "seen")
        .cwd(project)
}

/// `len` bytes starting with `head`, zeros after it.
fn bytes(head: &[u8], len: usize) -> Vec<u8> {
    let mut out = head.to_vec();
    out.resize(len, 0);
    out
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

/// The paths the fakes said they were shown, per run.
fn shown(fakes: &Fakes) -> Vec<Value> {
    fakes
        .records()
        .into_iter()
        .filter(|r| r["event"] == "attachments")
        .map(|r| r["paths"].clone())
        .collect()
}

#[test]
fn agy_is_shown_each_file_with_its_type_and_size() {
    let fakes = Fakes::new();
    let parent = TempDir::new("attach");
    let project = parent.join("project");
    fs::create_dir_all(project.join("docs")).unwrap();
    fs::write(project.join("shot.png"), bytes(PNG, 2355)).unwrap();
    // The name says PNG, the bytes say PDF: the bytes win.
    fs::write(project.join("docs/spec.png"), bytes(b"%PDF-1.7\n", 100)).unwrap();
    fs::create_dir_all(parent.join("assets")).unwrap();
    fs::write(parent.join("assets/logo.gif"), bytes(b"GIF89a", 1536)).unwrap();
    let mut relay = agy(&fakes, &project).spawn();
    let args = json!({
        "prompt": "describe",
        "attachments": ["shot.png", "./docs/spec.png", "../assets/logo.gif", "shot.png"],
        "addDirs": ["../assets"],
    });
    assert_eq!(
        relay.call_text("gemini-ask", args),
        (format!("📎 Attached: 3 file(s), 3.9 KiB\n\nGemini response:\nseen{THREAD}"), false)
    );
    assert_eq!(
        last_agy_prompt(&fakes),
        format!(
            "describe{BLOCK}\n- shot.png (PNG, 2.3 KiB)\n- docs/spec.png (PDF, 100 B)\n- ../assets/logo.gif (GIF, 1.5 KiB)"
        )
    );
    assert_eq!(shown(&fakes), [json!(["shot.png", "docs/spec.png", "../assets/logo.gif"])]);
    assert!(relay.logged("[GMCPT] Attached: 3 file(s), 3.9 KiB"));
    let argv = fakes.prompt_runs()[0].argv();
    assert!(argv.windows(2).any(|w| w == ["--add-dir", "../assets"]), "{argv:?}");
}

#[test]
fn the_notice_comes_before_the_migration_notice_and_plan_and_brainstorm_take_attachments() {
    let fakes = Fakes::new();
    let project = TempDir::new("attach");
    project.write("a.webp", bytes(b"RIFF\x10\0\0\0WEBPVP8 ", 1024));
    // No GEMINI_MCP_BACKEND: the migration notice is shown once.
    let mut relay = fakes.setup().env("FAKE_AGY_RESPONSE", "seen").cwd(&project.path).spawn();
    let (text, is_error) =
        relay.call_text("gemini-ask", json!({"prompt": "x", "attachments": ["a.webp"]}));
    assert!(!is_error, "{text}");
    assert!(text.starts_with("📎 Attached: 1 file(s), 1.0 KiB\n⚠️ "), "{text}");
    for (tool, args) in [
        ("gemini-plan", json!({"task": "x", "attachments": ["a.webp"]})),
        ("gemini-brainstorm", json!({"prompt": "x", "attachments": ["a.webp"]})),
    ] {
        let (text, is_error) = relay.call_text(tool, args);
        assert!(!is_error, "{tool}: {text}");
        assert!(text.starts_with("📎 Attached: 1 file(s), 1.0 KiB\n\n"), "{tool}: {text}");
        assert!(last_agy_prompt(&fakes).ends_with(&format!("{BLOCK}\n- a.webp (WebP, 1.0 KiB)")));
    }
}

#[test]
fn agy_tokens_of_media_files_are_attachments_not_inlined() {
    let fakes = Fakes::new();
    let project = TempDir::new("attach");
    project.write("shot.png", bytes(PNG, 100));
    project.write("notes.txt", "plain notes");
    project.write("song.mp3", bytes(b"ID3\x04", 10));
    let mut relay = agy(&fakes, &project.path).spawn();
    let prompt = "look at @shot.png, then @notes.txt and @shot.png again";
    let args = json!({"prompt": prompt, "attachments": ["song.mp3"]});
    assert_eq!(
        relay.call_text("gemini-ask", args),
        (format!("📎 Attached: 2 file(s), 110 B\n\nGemini response:\nseen{THREAD}"), false)
    );
    let sent = last_agy_prompt(&fakes);
    assert!(sent.starts_with("look at @shot.png, then "), "{sent}");
    assert!(sent.contains("----- BEGIN FILE: notes.txt -----\nplain notes\n"), "{sent}");
    assert!(
        sent.ends_with(&format!(
            " and @shot.png again{BLOCK}\n- song.mp3 (MP3, 10 B)\n- shot.png (PNG, 100 B)"
        )),
        "{sent}"
    );
    // A token's file is refused as an entry would be.
    project.write("huge.png", bytes(PNG, 101));
    let mut relay =
        agy(&fakes, &project.path).env("GEMINI_MCP_MAX_ATTACHMENT_BYTES", "100").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "see @huge.png"})),
        (
            "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: huge.png is 101 bytes, over the 100 byte limit (GEMINI_MCP_MAX_ATTACHMENT_BYTES)"
                .to_string(),
            true
        )
    );
    assert_eq!(fakes.prompt_runs().len(), 1, "the refused call never ran");
}

#[test]
fn gemini_gets_escaped_tokens_it_reads_back_as_the_paths() {
    let fakes = Fakes::new();
    let project = TempDir::new("attach");
    // Windows allows neither `"` in a name nor a name ending in `.`.
    let names: &[&str] = if cfg!(windows) {
        &["my shot (1).png", "a@b,c.png", "x;y.png", "plain.png"]
    } else {
        &["my shot (1).png", "a@b,c.png", "say \"hi\".png", "end."]
    };
    for name in names {
        project.write(name, bytes(PNG, 20));
    }
    let mut relay = gemini(&fakes, &project.path).spawn();
    let args = json!({"prompt": "what are these", "attachments": names});
    assert_eq!(
        relay.call_text("gemini-ask", args),
        ("📎 Attached: 4 file(s), 80 B\n\nGemini response:\nseen".to_string(), false)
    );
    let stdin = fakes.prompt_runs()[0].stdin_text();
    let expected = if cfg!(windows) {
        r#"what are these @"my shot (1).png" @"a@b,c.png" @"x;y.png" @plain.png"#
    } else {
        r#"what are these @my\ shot\ \(1\).png @a@b\,c.png @say\ \"hi\".png @end\."#
    };
    assert_eq!(stdin, expected);
    if cfg!(unix) {
        assert_eq!(shown(&fakes), [json!(names)]);
    }
}

/// A call refused before any run: its text, and no prompt run.
fn refused(setup: Setup, fakes: &Fakes, args: Value, expected: &str) {
    let mut relay = setup.spawn();
    let (text, is_error) = relay.call_text("gemini-ask", args);
    assert_eq!((text.as_str(), is_error), (expected, true));
    assert!(fakes.prompt_runs().is_empty(), "{expected}: a prompt run started");
}

#[test]
fn every_refusal_names_the_path_as_written_before_anything_runs() {
    let parent = TempDir::new("attach");
    let project = parent.join("project");
    fs::create_dir_all(project.join("dir")).unwrap();
    fs::write(parent.join("outside.png"), bytes(PNG, 20)).unwrap();
    fs::write(project.join("notes.png"), "just text").unwrap();
    fs::write(project.join("photo.png"), bytes(b"\0\0\0\x18ftypheic", 24)).unwrap();
    fs::write(project.join("ok.png"), bytes(PNG, 100)).unwrap();
    let prefix = "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: ";
    let cases = [
        ("missing.png", format!("{prefix}missing.png does not exist")),
        (
            "../outside.png",
            format!("{prefix}../outside.png is outside the project and its addDirs"),
        ),
        ("dir", format!("{prefix}dir is not a regular file")),
        (
            "notes.png",
            format!("{prefix}notes.png is not a supported attachment (unknown type); {SUPPORTED}"),
        ),
        (
            "photo.png",
            format!("{prefix}photo.png is not a supported attachment (HEIC); {SUPPORTED}"),
        ),
    ];
    for backend in ["agy", "gemini"] {
        for (path, expected) in &cases {
            let fakes = Fakes::new();
            let setup = fakes.setup().env("GEMINI_MCP_BACKEND", backend).cwd(&project);
            refused(
                setup,
                &fakes,
                json!({"prompt": "x", "attachments": ["ok.png", path]}),
                expected,
            );
        }
    }
    let fakes = Fakes::new();
    let seventeen: Vec<String> = (0..17).map(|n| format!("f{n}.png")).collect();
    refused(
        agy(&fakes, &project),
        &fakes,
        json!({"prompt": "x", "attachments": seventeen}),
        "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: Array must contain at most 16 element(s)",
    );
    // An agy build that cannot add directories cannot be shown a file in one.
    let fakes = Fakes::new();
    let help = "Options:\n  -p <prompt>\n  --output-format <text|json>";
    refused(
        agy(&fakes, &project).env("FAKE_AGY_HELP", help),
        &fakes,
        json!({"prompt": "x", "attachments": ["../outside.png"], "addDirs": [".."]}),
        &format!(
            "{prefix}../outside.png is outside the project and this agy build cannot add directories"
        ),
    );
}

#[test]
fn the_default_limit_takes_a_file_of_exactly_its_size() {
    let project = TempDir::new("attach");
    let limit: u64 = 20_971_520;
    for (name, len) in [("exact.png", limit), ("over.png", limit + 1)] {
        let file = fs::File::create(project.join(name)).unwrap();
        std::io::Write::write_all(&mut &file, PNG).unwrap();
        file.set_len(len).unwrap();
    }
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, &project.path).spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x", "attachments": ["exact.png"]})),
        (format!("📎 Attached: 1 file(s), 20.0 MiB\n\nGemini response:\nseen{THREAD}"), false)
    );
    let fakes = Fakes::new();
    refused(
        agy(&fakes, &project.path),
        &fakes,
        json!({"prompt": "x", "attachments": ["over.png"]}),
        "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: over.png is 20971521 bytes, over the 20971520 byte limit (GEMINI_MCP_MAX_ATTACHMENT_BYTES)",
    );
}

#[cfg(unix)]
#[test]
fn links_are_resolved_before_the_check() {
    use std::os::unix::fs::symlink;
    let parent = TempDir::new("attach");
    let project = parent.join("project");
    fs::create_dir_all(&project).unwrap();
    fs::create_dir_all(parent.join("real-assets")).unwrap();
    fs::write(parent.join("real-assets/logo.png"), bytes(PNG, 64)).unwrap();
    fs::write(parent.join("secret.png"), bytes(PNG, 64)).unwrap();
    // An addDirs entry that is itself a link, and a link in the project that leads out of it.
    symlink(parent.join("real-assets"), parent.join("assets")).unwrap();
    symlink(parent.join("secret.png"), project.join("innocent.png")).unwrap();
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, &project).spawn();
    let args =
        json!({"prompt": "x", "attachments": ["../assets/logo.png"], "addDirs": ["../assets"]});
    assert_eq!(
        relay.call_text("gemini-ask", args),
        (format!("📎 Attached: 1 file(s), 64 B\n\nGemini response:\nseen{THREAD}"), false)
    );
    assert!(last_agy_prompt(&fakes).ends_with("\n- ../real-assets/logo.png (PNG, 64 B)"));
    let fakes = Fakes::new();
    refused(
        agy(&fakes, &project),
        &fakes,
        json!({"prompt": "x", "attachments": ["innocent.png"]}),
        "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: innocent.png is outside the project and its addDirs",
    );
    // A FIFO is refused without blocking.
    let fifo = std::ffi::CString::new(project.join("pipe.png").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let fakes = Fakes::new();
    refused(
        agy(&fakes, &project),
        &fakes,
        json!({"prompt": "x", "attachments": ["pipe.png"]}),
        "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: pipe.png is not a regular file",
    );
}

#[cfg(unix)]
#[test]
fn odd_names_reach_agy_as_written() {
    let project = TempDir::new("attach");
    let name = "new\nline \"q\" @x.png";
    project.write(name, bytes(PNG, 10));
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, &project.path).spawn();
    let (text, is_error) =
        relay.call_text("gemini-ask", json!({"prompt": "x", "attachments": [name]}));
    assert!(!is_error, "{text}");
    assert!(last_agy_prompt(&fakes).ends_with(&format!("{BLOCK}\n- {name} (PNG, 10 B)")));
}
