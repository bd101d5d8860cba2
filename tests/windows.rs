//! What only Windows has, through the Windows binary: the CLIs are found on `PATH` only (never in
//! the project), caller text reaches a CLI byte for byte with no `cmd.exe` in between, the
//! command-line limit is checked before spawning, Windows path forms in `@` references, a link
//! out of the project, and every run's tree in a Job Object of its own. (Closing stdin, timeouts
//! and cancellation kill the tree through the tests every system runs.)

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::util::{Fakes, Setup, TempDir, fake_program, fixtures, last_agy_prompt, path_with};

fn agy(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy")
}

#[test]
fn a_cli_in_the_project_is_never_run() {
    // The project holds an agy.exe and an npm-style gemini.cmd (with its node.exe and script);
    // PATH names only the system's directories, so neither CLI is installed.
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    fs::copy(fake_program(), project.join("agy.exe")).unwrap();
    fs::copy(fake_program(), project.join("node.exe")).unwrap();
    fs::copy(fixtures().join("npm").join("gemini.cmd"), project.join("gemini.cmd")).unwrap();
    project.write("node_modules/@google/gemini-cli/dist/index.js", "");
    for backend in ["agy", "gemini"] {
        let mut relay = Setup::new()
            .env("PATH", path_with(&[]).to_str().unwrap())
            .env("FAKE_LOG", fakes.log.display().to_string())
            .env("GEMINI_MCP_BACKEND", backend)
            .cwd(&project.path)
            .spawn();
        let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
        assert!(is_error, "{backend}: {text}");
        let exe =
            if backend == "agy" { "agy.exe" } else { "gemini.exe or the npm shim gemini.cmd" };
        assert!(
            text.contains(&format!("{exe} in each PATH directory (never the current directory)")),
            "{backend}: {text}"
        );
    }
    assert!(fakes.runs().is_empty(), "a CLI in the project ran: {:?}", fakes.records());
}

/// Text that `cmd.exe` would expand, split or end a command at.
const AWKWARD: &str = "%PATH% and %USERPROFILE% &calc \"quoted\" a^b <in >out | x\nsecond line";

#[test]
fn caller_text_reaches_the_cli_byte_for_byte() {
    let fakes = Fakes::new();
    // agy without stream-json input takes the prompt on its command line.
    let mut relay = agy(&fakes).env("FAKE_AGY_HELP", "nostream").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": AWKWARD}));
    assert!(!is_error, "{text}");
    let argv = fakes.prompt_runs()[0].argv();
    assert_eq!(argv.last().map(String::as_str), Some(AWKWARD), "{argv:?}");
    // gemini is npm's gemini.cmd, run as the node.exe beside it with its script: the prompt goes
    // on stdin, the model on the command line.
    let mut relay = fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").spawn();
    let (text, is_error) =
        relay.call_text("gemini-ask", json!({"prompt": AWKWARD, "model": "gemini-2.5-pro"}));
    assert_eq!(
        (text.as_str(), is_error),
        (
            format!("Gemini response:\nFAKE-GEMINI-ANSWER prompt_bytes={}", AWKWARD.len()).as_str(),
            false
        )
    );
    let run = &fakes.prompt_runs()[1];
    assert_eq!(run.record["fake"], "gemini");
    assert_eq!(run.argv(), ["-m", "gemini-2.5-pro"]);
    assert_eq!(run.stdin().unwrap(), AWKWARD.as_bytes());
}

#[test]
fn a_command_line_over_the_windows_limit_fails_before_spawning() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_HELP", "nostream").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x".repeat(40_000)}));
    assert!(is_error, "{text}");
    assert!(text.starts_with("Error executing gemini-ask: The command line is "), "{text}");
    assert!(
        text.ends_with(" characters; agy accepts at most 32767 characters in one command line."),
        "{text}"
    );
    assert!(fakes.prompt_runs().is_empty(), "the CLI was started");
    // One that fits still runs.
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x".repeat(30_000)}));
    assert!(!is_error, "{text}");
    assert_eq!(fakes.prompt_runs().len(), 1);
}

#[test]
fn windows_path_forms_in_references_are_refused_or_left_as_written() {
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    project.write("a.txt", "ALPHA-CONTENT");
    project.write("src/b.txt", "BETA-CONTENT");
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").cwd(&project.path).spawn();
    // Above the root, another drive's current directory, a network share: the call is refused
    // before agy runs (touching a share would send the user's credentials).
    for reference in [r"@src\..\..\x", "@C:secret", r"@\\server\share\x"] {
        let (text, is_error) = relay.call_text("gemini-ask", json!({ "prompt": reference }));
        assert!(is_error, "{reference}: {text}");
        assert!(
            text.starts_with(&format!(
                "Error executing gemini-ask: Refusing @file reference outside the project directory: \"{reference}\"."
            )),
            "{reference}: {text}"
        );
    }
    assert!(fakes.prompt_runs().is_empty());
    // A device, a device with an extension, an alternate data stream: inside the project, but not
    // a file; never opened, so the token reaches agy as written, with nothing inlined.
    for reference in ["@CON", "@NUL.txt", "@a.txt:stream"] {
        let prompt = format!("look at {reference} please");
        let (text, is_error) = relay.call_text("gemini-ask", json!({ "prompt": prompt }));
        assert!(!is_error, "{reference}: {text}");
        let sent = last_agy_prompt(&fakes);
        assert!(sent.contains(&prompt), "{reference}: {sent}");
        assert!(!sent.contains("BEGIN FILE") && !sent.contains("ALPHA"), "{reference}: {sent}");
    }
    // Both separators name the same file, and labels use `/`.
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": r"@src\b.txt"}));
    assert!(!is_error, "{text}");
    let sent = last_agy_prompt(&fakes);
    assert!(sent.contains("----- BEGIN FILE: src/b.txt -----\nBETA-CONTENT\n"), "{sent}");
}

/// A project with links that lead out of it: `leak.txt` to a file outside, `ldir` to a directory
/// outside, each outside file holding `SECRET-OUTSIDE`. Wine cannot make a Windows link, so
/// `make test-windows` makes POSIX links (which Wine follows on open, so only the check of each
/// handle's final path can refuse them) and names the project in `GEMINI_RELAY_LINKED_PROJECT`;
/// on Windows itself the test makes symbolic links (which needs Developer Mode or an
/// administrator).
fn linked_project() -> (PathBuf, Option<TempDir>) {
    if let Some(project) = std::env::var_os("GEMINI_RELAY_LINKED_PROJECT") {
        return (PathBuf::from(project), None);
    }
    let dir = TempDir::new("linked");
    let outside = dir.write("outside/secret.txt", "SECRET-OUTSIDE");
    let project = dir.join("project");
    fs::create_dir_all(&project).unwrap();
    fs::write(project.join("inside.txt"), "INSIDE").unwrap();
    std::os::windows::fs::symlink_file(&outside, project.join("leak.txt")).unwrap();
    std::os::windows::fs::symlink_dir(dir.join("outside"), project.join("ldir")).unwrap();
    (project, Some(dir))
}

#[test]
fn a_link_out_of_the_project_never_gets_a_byte_inlined() {
    let (project, _keep) = linked_project();
    for link in ["leak.txt", "ldir"] {
        assert!(
            fs::read_dir(&project).unwrap().any(|e| e.unwrap().file_name() == link),
            "{link} is missing from {}: set GEMINI_RELAY_LINKED_PROJECT (make test-windows does)",
            project.display()
        );
    }
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").cwd(&project).spawn();
    for prompt in ["@leak.txt", "@ldir/secret.txt", r"@ldir\secret.txt", "@.", "@**/*.txt"] {
        let (text, _) = relay.call_text("gemini-ask", json!({ "prompt": prompt }));
        assert!(!text.contains("SECRET-OUTSIDE"), "{prompt}: {text}");
        if let Some(run) = fakes.prompt_runs().last() {
            let sent = String::from_utf8_lossy(&run.stdin().unwrap_or_default()).into_owned();
            assert!(!sent.contains("SECRET-OUTSIDE"), "{prompt}: {sent}");
        }
    }
    let (_, is_error) = relay.call_text("gemini-ask", json!({"prompt": "@inside.txt"}));
    assert!(!is_error);
    assert!(last_agy_prompt(&fakes).contains("INSIDE"));
}

#[test]
fn every_run_is_in_a_job_and_what_it_leaves_behind_is_killed_with_the_call() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_GRANDCHILD", "detached").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
    assert!(!is_error, "{text}");
    let run = &fakes.prompt_runs()[0];
    assert_eq!(run.record["job"], true, "{}", run.record);
    assert!(run.record["grandchild"].as_u64().is_some(), "{}", run.record);
    let left = fakes.leftovers(relay.pid(), Duration::ZERO);
    assert!(left.is_empty(), "still running once the call was answered: {left:?}");
}

/// The refusal of a `gemini.cmd` the relay will not run, as a call reads it.
fn refused_shim_text(fakes: &Fakes, model: &str) -> String {
    let mut relay = fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "dir", "model": model}));
    assert!(is_error, "{text}");
    text
}

fn assert_refused(text: &str) {
    assert!(text.starts_with("Error executing gemini-ask: Refusing to run "), "{text}");
    assert!(
        text.contains(r"\gemini.cmd: the relay runs a batch file only when it is an npm cmd-shim"),
        "{text}"
    );
}

#[test]
fn a_gemini_cmd_whose_program_is_a_shell_is_refused() {
    let npm = fs::read_to_string(fixtures().join("npm").join("gemini.cmd")).unwrap();
    for shell in ["cmd", "powershell", "pwsh"] {
        let fakes = Fakes::new();
        let project = TempDir::new("proj");
        let shim = npm.replace("node", shell).replace("\"%_prog%\" ", "\"%_prog%\" /c ");
        fakes.file("gemini.cmd", &shim);
        let injected = project.join("injected.txt");
        let model = format!("x&echo,INJECTED>{}", injected.display());
        assert_refused(&refused_shim_text(&fakes, &model));
        assert!(!injected.exists(), "{shell}: the model argument ran as a command");
        assert!(fakes.runs().is_empty(), "{shell}: {:?}", fakes.records());
    }
}

#[test]
fn a_gemini_cmd_that_is_not_utf8_is_refused() {
    let npm = fs::read_to_string(fixtures().join("npm").join("gemini.cmd")).unwrap();
    let utf16: Vec<u8> = npm.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let mut cp1252 = b"@REM caf\xE9\r\n".to_vec();
    cp1252.extend_from_slice(npm.as_bytes());
    for bytes in [utf16, cp1252] {
        let fakes = Fakes::new();
        fakes.bin.write("gemini.cmd", &bytes);
        let text = refused_shim_text(&fakes, "gemini-2.5-pro");
        assert_refused(&text);
        assert!(fakes.runs().is_empty(), "{:?}", fakes.records());
    }
}

#[test]
fn a_link_out_of_the_project_is_never_attached() {
    let (project, _keep) = linked_project();
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).cwd(&project).spawn();
    for path in ["leak.txt", "ldir/secret.txt", r"ldir\secret.txt"] {
        let args = json!({"prompt": "x", "attachments": [path]});
        let expected = format!(
            "Error executing gemini-ask: Invalid arguments for gemini-ask: attachments: {path} is outside the project and its addDirs"
        );
        assert_eq!(relay.call_text("gemini-ask", args), (expected, true));
    }
    assert!(fakes.prompt_runs().is_empty(), "a refused call never runs");
}
