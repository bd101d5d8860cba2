//! The execution engine against the fake CLIs: argv and stdin, failures and their texts, timeouts,
//! cancellation, shutdown, output caps, concurrency and the agy queue. Every scenario that kills a
//! child checks afterwards that no process of the fake's group survives.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{Fakes, Relay, wait_for_runs};

fn gemini(fakes: &Fakes) -> crate::util::Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "gemini")
}

fn ask(relay: &mut Relay, args: Value) -> (String, bool) {
    relay.call_text("gemini-ask", args)
}

#[test]
fn gemini_argv_and_prompt_on_stdin() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).spawn();
    let (text, is_error) =
        ask(&mut relay, json!({"prompt": "hi", "model": "gemini-2.5-pro", "sandbox": true}));
    assert_eq!(
        (text.as_str(), is_error),
        ("Gemini response:\nFAKE-GEMINI-ANSWER prompt_bytes=2", false)
    );
    let runs = fakes.prompt_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].argv(), ["-m", "gemini-2.5-pro", "-s"]);
    assert_eq!(runs[0].stdin().unwrap(), b"hi");
}

#[test]
fn gemini_prompt_that_looks_like_a_flag_and_a_big_prompt_arrive_intact() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).spawn();
    let (text, _) = ask(&mut relay, json!({"prompt": "--version"}));
    assert_eq!(text, "Gemini response:\nFAKE-GEMINI-ANSWER prompt_bytes=9");
    let big = "é".repeat(600_000);
    let (text, is_error) = ask(&mut relay, json!({"prompt": big}));
    assert!(!is_error, "{text}");
    assert_eq!(text, "Gemini response:\nFAKE-GEMINI-ANSWER prompt_bytes=1200000");
    let runs = fakes.prompt_runs();
    assert!(runs.iter().all(|r| r.argv().is_empty()), "the prompt never goes on argv");
    assert_eq!(runs[1].stdin().unwrap(), big.as_bytes());
}

#[cfg(unix)]
#[test]
fn each_child_runs_in_its_own_process_group() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).spawn();
    ask(&mut relay, json!({"prompt": "a"}));
    let run = &fakes.prompt_runs()[0];
    assert_eq!(run.pid(), run.pgid(), "the fake leads its own group");
    assert_ne!(run.pgid(), relay.pid() as i64);
}

/// The harness's leftover check sees a fake that still runs, and its grandchild: through the
/// marker (where `/proc` exists) and through `ps` on the logged pids and group (on every POSIX
/// system), through handles to the logged pids on Windows.
#[test]
fn the_leftover_check_sees_a_running_fake_and_its_grandchild() {
    use std::io::Write;

    let fakes = Fakes::new();
    let (key, value) = fakes.marker.split_once('=').unwrap();
    let mut cmd = std::process::Command::new(fakes.agy());
    cmd.env("PATH", crate::util::path_with(&[]))
        .env("FAKE_LOG", &fakes.log)
        .env("FAKE_SLEEP", "30")
        .env("FAKE_GRANDCHILD", "detached")
        .env(key, value)
        .args(["--input-format", "stream-json"])
        .stdin(std::process::Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().unwrap();
    let line = br#"{"event":"user","message":{"role":"user","content":"hi"}}"#;
    child.stdin.take().unwrap().write_all(line).unwrap();
    wait_for_runs(&fakes, 1);
    let run = &fakes.prompt_runs()[0];
    let grandchild = run.record["grandchild"].as_u64().unwrap() as u32;
    let left = fakes.leftovers(0, Duration::ZERO);
    assert!(left.contains(&child.id()) && left.contains(&grandchild), "{left:?}");
    #[cfg(unix)]
    {
        let (pids, groups) = ([grandchild].into(), [run.pgid() as u32].into());
        let seen = crate::util::live_processes_of(&pids, &groups);
        assert!(seen.contains(&child.id()) && seen.contains(&grandchild), "{seen:?}");
        // SAFETY: kill(2) takes integers only; a negative pid names the fake's process group. The
        // detached grandchild leads a session of its own, so it is killed by pid.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(-(run.pgid() as i32), libc::SIGKILL);
            libc::kill(grandchild as i32, libc::SIGKILL);
        }
    }
    #[cfg(windows)]
    {
        let seen = crate::util::live_processes_of(&[grandchild].into(), &Default::default());
        assert_eq!(seen, [grandchild]);
        child.kill().unwrap();
        crate::util::winproc::kill(grandchild);
    }
    child.wait().unwrap();
    let left = fakes.leftovers(0, Duration::from_secs(2));
    assert!(left.is_empty(), "still running after the kill: {left:?}");
}

#[test]
fn nonzero_exit_reports_stderr_then_stdout() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_EXIT", "3").env("FAKE_STDERR", "boom\n").spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x"}));
    assert!(is_error);
    assert_eq!(text, "Error executing gemini-ask: Command failed with exit code 3: boom");
}

#[test]
fn exit_zero_with_only_stderr_fails_with_that_text() {
    let fakes = Fakes::new();
    let mut relay =
        gemini(&fakes).env("FAKE_STDERR_ONLY", "1").env("FAKE_STDERR", "not signed in").spawn();
    assert_eq!(
        ask(&mut relay, json!({"prompt": "x"})),
        ("Error executing gemini-ask: not signed in".to_string(), true)
    );
}

#[test]
fn stdout_is_trimmed_and_stderr_noise_ignored() {
    let fakes = Fakes::new();
    let mut relay =
        gemini(&fakes).env("FAKE_STDOUT", "  answer  \n").env("FAKE_STDERR", "warning\n").spawn();
    assert_eq!(ask(&mut relay, json!({"prompt": "x"})).0, "Gemini response:\nanswer");
}

#[test]
fn missing_binary_gives_the_enoent_text() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("PATH", "/nonexistent").spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x"}));
    assert!(is_error);
    // Where the relay looked, and how to install agy, as each system has it.
    let (verify, install) = match cfg!(windows) {
        true => (
            "the relay looks for GEMINI_CLI_PATH when set, else gemini.exe or the npm shim gemini.cmd in each PATH directory (never the current directory)",
            "install it from https://goo.gle/gemini-cli-migration",
        ),
        false => {
            ("`which gemini`", "run `curl -fsSL https://antigravity.google/cli/install.sh | bash`")
        }
    };
    let expected = format!(
        "Error executing gemini-ask: Could not find the \"gemini\" executable.\n\
        The MCP server runs in its own process and may not inherit your shell's PATH.\n\
        • Verify it is installed and resolvable: {verify}.\n\
        • The Gemini CLI stopped serving free, Pro, and Ultra users on 2026-06-18. Migrate to the Antigravity CLI (agy), this tool's new default: {install}, then unset GEMINI_MCP_BACKEND.\n\
        • Enterprise/Standard license or paid API key? Your Gemini access is unaffected: reinstall the Gemini CLI or set GEMINI_CLI_PATH to its full path.\n\
        • More: https://goo.gle/gemini-cli-migration and docs/migration/antigravity-cli.md"
    );
    assert_eq!(text, expected);
}

#[test]
fn missing_agy_gives_its_enoent_text() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "agy")
        .env("AGY_CLI_PATH", "/nonexistent/agy")
        .spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x"}));
    assert!(is_error);
    assert!(
        text.starts_with("Error executing gemini-ask: Could not find the \"agy\" executable.\n"),
        "{text}"
    );
    let point_at_it = match cfg!(windows) {
        true => "set AGY_CLI_PATH to the full path of agy.exe",
        false => "set AGY_CLI_PATH to the agy binary",
    };
    assert!(text.contains(point_at_it), "{text}");
    assert!(text.contains("Set GEMINI_MCP_BACKEND=gemini"));
}

#[test]
fn timeout_kills_the_whole_group_and_answers_promptly() {
    let fakes = Fakes::new();
    // 0.01 minutes = 600 ms; the message rounds to whole seconds.
    let mut relay = gemini(&fakes)
        .env("GEMINI_MCP_TIMEOUT", "0.01")
        .env("FAKE_HANG", "1")
        .env("FAKE_GRANDCHILD", "1")
        .spawn();
    let start = Instant::now();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x"}));
    let took = start.elapsed();
    assert_eq!(
        (text.as_str(), is_error),
        ("Error executing gemini-ask: gemini timed out after 1s", true)
    );
    assert!(took >= Duration::from_millis(550) && took < Duration::from_millis(1600), "{took:?}");
    assert!(
        fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty(),
        "no child or grandchild survives"
    );
    assert!(relay.logged("gemini timed out after 1s; killing it."));
}

#[test]
fn gemini_cancel_kills_running_children() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_HANG", "1").env("FAKE_GRANDCHILD", "1").spawn();
    let id = relay
        .send_request("tools/call", json!({"name": "gemini-ask", "arguments": {"prompt": "x"}}));
    wait_for_runs(&fakes, 1);
    assert_eq!(
        relay.call_text("gemini-cancel", json!({})),
        ("Cancelled 1 run.".to_string(), false)
    );
    let response = relay.response(&id);
    assert_eq!(
        response["result"]["content"][0]["text"],
        "Error executing gemini-ask: gemini was cancelled by gemini-cancel"
    );
    assert_eq!(response["result"]["isError"], true);
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
    assert_eq!(relay.call_text("gemini-cancel", json!({})).0, "Nothing was running.");
}

#[test]
fn gemini_cancel_counts_runs() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_HANG", "1").spawn();
    let ids: Vec<Value> = (0..3)
        .map(|_| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-ask", "arguments": {"prompt": "x"}}),
            )
        })
        .collect();
    wait_for_runs(&fakes, 3);
    assert_eq!(relay.call_text("gemini-cancel", json!({})).0, "Cancelled 3 runs.");
    for id in ids {
        assert_eq!(relay.response(&id)["result"]["isError"], true);
    }
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
}

#[test]
fn notifications_cancelled_kills_the_child_and_suppresses_the_answer() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_HANG", "1").env("FAKE_GRANDCHILD", "1").spawn();
    relay.send(&json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call",
        "params": {"name": "gemini-ask", "arguments": {"prompt": "x"}, "_meta": {"progressToken": "c"}}}));
    wait_for_runs(&fakes, 1);
    relay.notify("notifications/cancelled", json!({"requestId": "c"}));
    let start = Instant::now();
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
    assert!(start.elapsed() < Duration::from_secs(1), "killed within a second");
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    relay.take_progress(&json!("c"));
    let rest = relay.drain(Duration::from_millis(300));
    assert!(rest.is_empty(), "no response and no progress after cancellation: {rest:?}");
    // A second cancel for the same id, and one for an unknown id, are ignored.
    relay.notify("notifications/cancelled", json!({"requestId": "c"}));
    relay.notify("notifications/cancelled", json!({"requestId": 999}));
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn stdin_eof_kills_children_and_exits() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_HANG", "1").env("FAKE_GRANDCHILD", "1").spawn();
    relay.send_request("tools/call", json!({"name": "gemini-ask", "arguments": {"prompt": "x"}}));
    wait_for_runs(&fakes, 1);
    let start = Instant::now();
    relay.close_stdin();
    let status = relay.wait_exit(Duration::from_secs(5)).expect("exits");
    assert!(status.success());
    assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
    assert!(relay.drain(Duration::from_millis(50)).is_empty(), "the killed call is not answered");
}

#[test]
fn at_end_of_input_calls_waiting_for_agy_never_start() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "agy")
        .env("FAKE_HANG", "1")
        .env("GEMINI_MCP_AGY_PARALLEL", "2")
        .spawn();
    for n in 0..4 {
        let args = json!({"prompt": format!("p{n}")});
        relay.send_request("tools/call", json!({"name": "gemini-ask", "arguments": args}));
    }
    wait_for_runs(&fakes, 2);
    relay.close_stdin();
    assert!(relay.wait_exit(Duration::from_secs(5)).is_some(), "exits");
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
    assert_eq!(fakes.prompt_runs().len(), 2);
    let stderr = relay.stderr();
    assert_eq!(stderr.matches("Starting: agy").count(), 2, "{stderr}");
}

#[cfg(unix)]
#[test]
fn sigterm_kills_children_and_exits() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let fakes = Fakes::new();
        let mut relay = gemini(&fakes).env("FAKE_HANG", "1").env("FAKE_GRANDCHILD", "1").spawn();
        relay.send_request(
            "tools/call",
            json!({"name": "gemini-ask", "arguments": {"prompt": "x"}}),
        );
        wait_for_runs(&fakes, 1);
        let start = Instant::now();
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(relay.pid() as i32, signal) };
        assert!(relay.wait_exit(Duration::from_secs(5)).expect("exits").success());
        assert!(start.elapsed() < Duration::from_secs(1));
        assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty(), "signal {signal}");
    }
}

#[test]
fn output_cap_stops_a_flooding_child() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes)
        .env("GEMINI_MCP_MAX_OUTPUT_BYTES", "100000")
        .env("FAKE_FLOOD_STDOUT", "5000000")
        .spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x"}));
    assert!(is_error);
    assert_eq!(
        text,
        "Error executing gemini-ask: gemini produced more than 100000 bytes of output; stopped it."
    );
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
}

#[test]
fn a_stderr_flood_does_not_deadlock() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_FLOOD_STDERR", "3000000").spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "abc"}));
    assert_eq!(
        (text.as_str(), is_error),
        ("Gemini response:\nFAKE-GEMINI-ANSWER prompt_bytes=3", false)
    );
}

#[test]
fn a_grandchild_holding_the_pipes_does_not_hang_a_finished_call() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_GRANDCHILD", "1").spawn();
    let start = Instant::now();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x"}));
    assert!(!is_error, "{text}");
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
}

#[test]
fn a_child_that_exits_without_reading_stdin_is_fine() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_NO_STDIN", "1").spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "x".repeat(2_000_000)}));
    assert_eq!(
        (text.as_str(), is_error),
        ("Gemini response:\nFAKE-GEMINI-ANSWER prompt_bytes=0", false)
    );
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn gemini_runs_overlap() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_SLEEP", "0.5").spawn();
    let start = Instant::now();
    let ids: Vec<Value> = (0..6)
        .map(|i| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-ask", "arguments": {"prompt": format!("p{i}")}}),
            )
        })
        .collect();
    for id in ids {
        assert_eq!(relay.response(&id)["result"]["isError"], false);
    }
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "six 0.5 s runs overlapped: {:?}",
        start.elapsed()
    );
}

#[test]
fn progress_preview_shows_the_tail_of_child_stdout() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "agy")
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100")
        .env("FAKE_AGY_STREAM_SLEEP", "0.6")
        .spawn();
    relay.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "gemini-ask", "arguments": {"prompt": "x"}, "_meta": {"progressToken": 7}}}));
    let response = relay.response(&json!(1));
    assert_eq!(response["result"]["isError"], false, "{response}");
    let progress = relay.take_progress(&json!(7));
    let previews: Vec<&str> = progress
        .iter()
        .filter_map(|p| p["message"].as_str())
        .filter(|m| m.contains("\n📝 Output: ..."))
        .collect();
    assert!(!previews.is_empty(), "{progress:?}");
    // The stream-json events are decoded: the preview is the answer so far.
    assert!(
        previews.iter().all(|m| m.ends_with("📝 Output: ...FAKE-ANSWER prompt_bytes=1")),
        "{previews:?}"
    );
}

#[test]
fn a_model_too_long_for_one_argument_is_refused_before_spawning() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).spawn();
    let (text, is_error) = ask(&mut relay, json!({"prompt": "hi", "model": "m".repeat(200_000)}));
    assert!(is_error);
    assert_eq!(
        text,
        "Error executing gemini-ask: The model is 200000 bytes; gemini accepts at most 131071 bytes in one command-line argument."
    );
    assert!(fakes.prompt_runs().is_empty(), "nothing was spawned");
}

/// One shutdown round with an agy run in flight: the relay is stopped by `stop`, and its stderr and
/// the fakes' log must show no recovery step and no spawn after the run.
fn shutdown_round(round: usize, stop: impl FnOnce(&mut Relay)) {
    let fakes = Fakes::new();
    // An old build (no stream-json) with PTY recovery on: a recovery would log and spawn `script`.
    let mut relay = fakes
        .setup()
        .env("FAKE_AGY_HELP", "nostream")
        .env("AGY_MCP_PTY", "1")
        .env("FAKE_HANG", "1")
        .spawn();
    relay.send_request("tools/call", json!({"name": "gemini-ask", "arguments": {"prompt": "x"}}));
    wait_for_runs(&fakes, 1);
    stop(&mut relay);
    assert!(relay.wait_exit(Duration::from_secs(5)).is_some(), "round {round}: no exit");
    let stderr = relay.stderr();
    assert!(
        !stderr.contains("trying recovery") && !stderr.contains("Failed with exit code"),
        "round {round}: a run the relay killed was treated as a failure:\n{stderr}"
    );
    assert_eq!(fakes.prompt_runs().len(), 1, "round {round}: a run started after shutdown");
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty(), "round {round}");
}

#[cfg(unix)]
#[test]
fn shutdown_by_signal_never_starts_recovery() {
    for round in 0..50 {
        shutdown_round(round, |relay| {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(relay.pid() as i32, libc::SIGINT) };
        });
    }
}

#[test]
fn shutdown_by_end_of_input_never_starts_recovery() {
    for round in 0..50 {
        shutdown_round(round, Relay::close_stdin);
    }
}
