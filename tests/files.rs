//! `@` references and files against a hostile project: the gemini
//! backend's jail reads references with the Gemini CLI's grammar, inlining on agy skips FIFOs and
//! secrets and stays within its budget, and gemini-image's outputPath never writes through a
//! symlink or blocks on a FIFO.

#[cfg(unix)]
use std::ffi::CString;
use std::fs;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
#[cfg(unix)]
use std::os::unix::fs::symlink;
#[cfg(unix)]
use std::path::Path;
#[cfg(unix)]
use std::time::{Duration, Instant};

use serde_json::json;

#[cfg(unix)]
use crate::util::Relay;
use crate::util::{Fakes, Setup, TempDir, last_agy_prompt};

/// The inline budget: inlining adds at most this many bytes to a prompt, headers and footers
/// included.
const BUDGET: usize = 2_097_152;

fn gemini(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "gemini")
}

fn agy(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy")
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let path = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `path` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
}

#[test]
fn gemini_backend_refuses_references_that_escape_through_the_cli_grammar() {
    // These references once escaped the jail: the relay split at whitespace (`@\S+`) while the
    // Gemini CLI reads quotes and escapes.
    let fakes = Fakes::new();
    let parent = TempDir::new("parent");
    parent.write("secret.txt", "TOP-SECRET");
    let project = parent.join("project");
    fs::create_dir_all(&project).unwrap();
    let mut relay = gemini(&fakes).cwd(&project).spawn();
    for (prompt, written) in [
        ("@../secret.txt", "../secret.txt"),
        (r#"@"../secret.txt""#, r#""../secret.txt""#),
        (r"@docs\ ../../secret.txt", r"docs\ ../../secret.txt"),
        (r#"see @"a b/../../../secret.txt""#, r#""a b/../../../secret.txt""#),
    ] {
        let (text, is_error) = relay.call_text("gemini-ask", json!({ "prompt": prompt }));
        let expected = format!(
            "Error executing gemini-ask: Refusing @file reference outside the project directory: \"@{written}\". Only files within {} may be referenced.",
            project.display()
        );
        assert_eq!((text.as_str(), is_error), (expected.as_str(), true), "{prompt}");
    }
    assert!(fakes.prompt_runs().is_empty(), "a refused prompt never reaches the CLI");
}

#[test]
fn gemini_backend_passes_what_the_cli_does_not_read_as_a_reference() {
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    project.write("docs/my file.md", "x");
    let mut relay = gemini(&fakes).cwd(&project.path).spawn();
    for prompt in [r"see \@../secret.txt", r#"@"docs/my file.md", then @docs/my\ file.md."#] {
        let (text, is_error) = relay.call_text("gemini-ask", json!({ "prompt": prompt }));
        assert!(!is_error, "{prompt}: {text}");
    }
    let runs = fakes.prompt_runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].stdin().unwrap(), br"see \@../secret.txt");
}

#[cfg(unix)]
#[test]
fn agy_inlining_skips_fifos_and_secrets_without_blocking() {
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    project.write("a.txt", "alpha");
    for secret in [
        ".envrc",
        ".pgpass",
        ".htpasswd",
        ".aws/credentials",
        ".docker/config.json",
        "credentials.json",
        "secrets.yaml",
        "keys/release.jks",
        "keys/AuthKey.p8",
        "keys/id_ed25519_sk",
    ] {
        project.write(secret, "SECRET");
    }
    mkfifo(&project.join("pipe.txt"));
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").cwd(&project.path).spawn();
    let started = Instant::now();
    for prompt in ["@.", "@*.txt", "@pipe.txt and @a.txt"] {
        let (text, is_error) = relay.call_text("gemini-ask", json!({ "prompt": prompt }));
        assert!(!is_error, "{text}");
        let sent = last_agy_prompt(&fakes);
        assert!(sent.contains("----- BEGIN FILE: a.txt -----\nalpha\n"), "{sent}");
        assert!(!sent.contains("SECRET") && !sent.contains("BEGIN FILE: pipe.txt"), "{sent}");
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn agy_inlining_never_grows_a_prompt_past_the_budget() {
    // 2,000 empty files and `@**/*.txt` 1,000 times took the relay to 388 MB.
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    for n in 0..2_000 {
        project.write(&format!("d{:02}/f{n:04}.txt", n / 100), "");
    }
    let prompt = "@**/*.txt ".repeat(1_000);
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").cwd(&project.path).spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({ "prompt": prompt }));
    assert!(!is_error, "{text}");
    let sent = last_agy_prompt(&fakes);
    assert!(sent.len() <= prompt.len() + BUDGET, "grew by {} bytes", sent.len() - prompt.len());
    assert!(sent.contains("----- OMITTED: the 2097152 byte inline budget was reached; "));
}

/// A relay whose fake agy writes an image into its brain directory and links it in the reply.
#[cfg(unix)]
fn image_relay(fakes: &Fakes, project: &Path) -> Relay {
    agy(fakes).env("FAKE_AGY_IMAGE", "1").cwd(project).spawn()
}

#[cfg(unix)]
#[test]
fn image_output_path_never_writes_through_a_symlink() {
    let fakes = Fakes::new();
    let outside = TempDir::new("outside");
    let victim = outside.write("victim.png", "VICTIM");
    outside.write("d/keep.txt", "keep");
    let project = TempDir::new("img");
    symlink(&victim, project.join("logo.png")).unwrap();
    symlink(outside.join("d"), project.join("assets")).unwrap();
    let mut relay = image_relay(&fakes, &project.path);
    let (text, is_error) =
        relay.call_text("gemini-image", json!({"prompt": "a cat", "outputPath": "logo.png"}));
    assert_eq!(
        (text.as_str(), is_error),
        (
            "Error executing gemini-image: Could not save the image to \"logo.png\": \"logo.png\" is a symbolic link, which is never followed",
            true
        )
    );
    let (text, is_error) =
        relay.call_text("gemini-image", json!({"prompt": "a cat", "outputPath": "assets/new.png"}));
    assert_eq!(
        (text.as_str(), is_error),
        (
            "Error executing gemini-image: Could not save the image to \"assets/new.png\": \"assets\" is a symbolic link, which is never followed",
            true
        )
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "VICTIM");
    let outside_names: Vec<_> = fs::read_dir(outside.join("d")).unwrap().collect();
    assert_eq!(outside_names.len(), 1, "nothing new outside the project");
}

#[cfg(unix)]
#[test]
fn image_output_path_fifo_fails_promptly() {
    let fakes = Fakes::new();
    let project = TempDir::new("img");
    mkfifo(&project.join("pipe.png"));
    let mut relay = image_relay(&fakes, &project.path);
    let started = Instant::now();
    let (text, is_error) =
        relay.call_text("gemini-image", json!({"prompt": "a cat", "outputPath": "pipe.png"}));
    assert_eq!(
        (text.as_str(), is_error),
        (
            "Error executing gemini-image: Could not save the image to \"pipe.png\": \"pipe.png\" is not a regular file",
            true
        )
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let (text, is_error) =
        relay.call_text("gemini-image", json!({"prompt": "a cat", "outputPath": "out/cat.png"}));
    assert!(!is_error, "{text}");
    assert!(project.join("out/cat.png").is_file());
    let names: Vec<String> = fs::read_dir(project.join("out"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["cat.png"], "no temporary file left behind");
}
