//! The agy backend end to end against the fake agy (`fixtures/fake_cli.rs`): worked wire examples
//! (the `b*_` tests), the argv each tool sends, the run ladder's branches, the queue, and the model
//! tools.

use std::fs;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::util::{self, Fakes, Relay, Setup, TempDir, wait_for_runs};

const S: [&str; 6] =
    ["--input-format", "stream-json", "--output-format", "stream-json", "--print-timeout", "2640s"];
const RETIRED: &str = "⚠️ Gemini CLI was retired on 2026-06-18; defaulting to the Antigravity CLI (agy) backend. Set GEMINI_MCP_BACKEND=gemini to override.";

fn agy(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy")
}

fn with_s(flags: &[&str]) -> Vec<String> {
    flags.iter().chain(S.iter()).map(|s| s.to_string()).collect()
}

fn last_argv(fakes: &Fakes) -> Vec<String> {
    fakes.prompt_runs().last().expect("a prompt run").argv()
}

#[test]
fn b1_plain_ask_first_call_with_progress_token() {
    let fakes = Fakes::new();
    let mut relay = fakes.setup().env("FAKE_AGY_RESPONSE", "4").spawn();
    relay.send_raw(
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"gemini-ask\",\"arguments\":{\"prompt\":\"What is 2 + 2?\"},\"_meta\":{\"progressToken\":\"p1\"}}}\n".as_bytes(),
    );
    let response = relay.response(&json!(5));
    assert_eq!(
        response.to_string(),
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{RETIRED}\\n\\nGemini response:\\n4\\n\\n🧵 conversationId: c1 (pass it back to continue this thread)\"}}],\"isError\":false}}}}"
        )
    );
    let progress = relay.take_progress(&json!("p1"));
    assert_eq!(
        progress[0],
        json!({"progressToken": "p1", "progress": 0, "message": "🔍 Starting gemini-ask"})
    );
    assert_eq!(
        progress.last().unwrap(),
        &json!({"progressToken": "p1", "progress": 100, "total": 100, "message": "✅ gemini-ask completed successfully"})
    );
    let run = &fakes.prompt_runs()[0];
    assert_eq!(run.argv(), with_s(&["--disable-slash-commands"]));
    assert_eq!(
        run.stdin().unwrap(),
        b"{\"event\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"What is 2 + 2?\"}}\n"
    );
    let stderr = relay.stderr();
    assert!(stderr.contains("[GMCPT] Tool gemini-ask(prompt=<14 chars>)"), "{stderr}");
    assert!(stderr.contains("Starting: agy --disable-slash-commands --input-format <11 chars> --output-format <11 chars> --print-timeout <5 chars>"), "{stderr}");
    assert!(!stderr.contains("2 + 2"), "no prompt text in the logs");

    // A second identical call has no notice: delivery spent it.
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "What is 2 + 2?"}));
    assert_eq!(
        text,
        "Gemini response:\n4\n\n🧵 conversationId: c1 (pass it back to continue this thread)"
    );
}

#[test]
fn migration_notice_is_not_spent_by_models_or_failures() {
    let fakes = Fakes::new();
    let mut relay = fakes.setup().env("FAKE_EXIT", "1").env("FAKE_STDERR", "nope").spawn();
    let (models, _) = relay.call_text("gemini-models", json!({}));
    assert!(models.contains("**Backend Notices:**\n> ⚠️ Gemini CLI was retired"), "{models}");
    let (failed, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(is_error, "{failed}");
    let mut relay2 = fakes.setup().spawn();
    drop(relay);
    let (first, _) = relay2.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(first.starts_with(RETIRED), "{first}");
}

#[test]
fn b2_json_schema_with_usage_returns_the_structured_output() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_RESPONSE", "")
        .env("FAKE_AGY_CONVERSATION_ID", "c2")
        .env("FAKE_AGY_STRUCTURED", r#"{"count":392}"#)
        .env("FAKE_AGY_USAGE_JSON", r#"{"input_tokens":45000,"output_tokens":12}"#)
        .spawn();
    let schema = json!({"type": "object", "properties": {"count": {"type": "integer"}}});
    let (text, is_error) = relay.call_text(
        "gemini-ask",
        json!({"prompt": "count", "jsonSchema": schema, "includeUsage": true}),
    );
    assert_eq!((text.as_str(), is_error), ("Gemini response:\n{\n  \"count\": 392\n}", false));
    assert_eq!(
        last_argv(&fakes),
        with_s(&[
            "--json-schema",
            r#"{"type":"object","properties":{"count":{"type":"integer"}}}"#,
            "--disable-slash-commands"
        ])
    );
}

#[test]
fn b3_agy_refusal_reaches_the_caller_verbatim() {
    let fakes = Fakes::new();
    let verdict = "invalid model selection \"nope\". Available models: gemini-3.8-flash-high";
    let mut relay =
        agy(&fakes).env("FAKE_AGY_VERDICT_EXIT", "1").env("FAKE_AGY_ERROR", verdict).spawn();
    relay.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "gemini-ask", "arguments": {"prompt": "hi", "model": "nope"}, "_meta": {"progressToken": "b3"}}}));
    let response = relay.response(&json!(1));
    assert_eq!(
        response["result"],
        json!({"content": [{"type": "text", "text": format!("Error executing gemini-ask: {verdict}")}], "isError": true})
    );
    assert_eq!(
        relay.take_progress(&json!("b3")).last().unwrap()["message"],
        "❌ gemini-ask failed"
    );
    assert_eq!(&last_argv(&fakes)[..2], ["--model", "nope"]);
}

#[test]
fn status_error_on_exit_zero_is_a_failure() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_STATUS", "ERROR").env("FAKE_AGY_ERROR", "quota gone").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: quota gone".to_string(), true)
    );
}

#[test]
fn b4_denied_actions_and_non_success_status_become_notices() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_RESPONSE", "Done.")
        .env("FAKE_AGY_CONVERSATION_ID", "c3")
        .env("FAKE_AGY_DENIED", r#"[{"display_name":"AskQuestion"}]"#)
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})).0,
        "⚠️ agy refused 1 tool action(s) in this headless run (nobody could approve them): AskQuestion.\n\nGemini response:\nDone.\n\n🧵 conversationId: c3 (pass it back to continue this thread)"
    );
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_RESPONSE", "partial").env("FAKE_AGY_STATUS", "TIMEOUT").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(!is_error);
    assert!(
        text.starts_with(
            "⚠️ agy reported status \"TIMEOUT\" for this run.\n\nGemini response:\npartial"
        ),
        "{text}"
    );
}

#[test]
fn b6_sandbox_is_forwarded_with_a_notice() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").spawn();
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "x", "sandbox": true}));
    assert!(text.starts_with("⚠️ Backend \"agy\" does not isolate tool execution in headless mode; the sandbox request cannot be guaranteed.\n\nGemini response:\nok"), "{text}");
    assert_eq!(last_argv(&fakes), with_s(&["--disable-slash-commands", "--sandbox"]));
}

#[test]
fn b7_no_capabilities_means_a_bare_argv() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_HELP", "none").env("FAKE_AGY_RESPONSE", "plain").spawn();
    let (text, _) = relay.call_text(
        "gemini-ask",
        json!({"prompt": "x", "model": "pro", "effort": "high", "sandbox": true}),
    );
    assert_eq!(last_argv(&fakes), ["-p", "x"]);
    assert!(fakes.prompt_runs()[0].stdin().is_none());
    assert_eq!(
        text,
        "⚠️ Backend \"agy\" does not isolate tool execution in headless mode; the sandbox request cannot be guaranteed.\n\nGemini response:\nplain"
    );
}

#[test]
fn argv_with_every_option() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").spawn();
    relay.call_text(
        "gemini-ask",
        json!({"prompt": "x", "model": "pro", "effort": "high", "jsonSchema": {"type": "object"}, "mode": "plan",
               "addDirs": ["../lib"], "agent": "reviewer", "conversationId": "c1", "sandbox": true, "skipPermissions": true}),
    );
    assert_eq!(
        last_argv(&fakes),
        with_s(&[
            "--model",
            "gemini-3.1-pro-high",
            "--effort",
            "high",
            "--json-schema",
            r#"{"type":"object"}"#,
            "--mode",
            "plan",
            "--add-dir",
            "../lib",
            "--agent",
            "reviewer",
            "--disable-slash-commands",
            "--conversation",
            "c1",
            "--sandbox",
            "--dangerously-skip-permissions",
        ])
    );
}

#[test]
fn slash_commands_go_on_argv_only_when_allowed() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").spawn();
    relay.call_text("gemini-ask", json!({"prompt": "/skills", "allowSlashCommands": true}));
    assert_eq!(
        last_argv(&fakes),
        ["--output-format", "json", "--print-timeout", "2640s", "-p", "/skills"]
    );
    relay.call_text("gemini-ask", json!({"prompt": "hi", "allowSlashCommands": true}));
    assert_eq!(last_argv(&fakes), with_s(&[]));
}

#[test]
fn builds_without_stream_json_take_the_prompt_on_argv() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_HELP", "nostream").env("FAKE_AGY_RESPONSE", "ok").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "hi"})).0,
        "Gemini response:\nok\n\n🧵 conversationId: c1 (pass it back to continue this thread)"
    );
    assert_eq!(
        last_argv(&fakes),
        [
            "--disable-slash-commands",
            "--output-format",
            "json",
            "--print-timeout",
            "2640s",
            "-p",
            "hi"
        ]
    );
    relay.call_text("gemini-ask", json!({"prompt": "-y x"}));
    assert_eq!(last_argv(&fakes).last().unwrap(), " -y x", "a leading dash gets a space");
    let big = "z".repeat(200_000);
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": big}));
    assert!(is_error);
    assert_eq!(
        text,
        "Error executing gemini-ask: The prompt is 200001 bytes, but this agy build only accepts prompts on the command line (at most 131072 bytes). Upgrade agy to a build with --input-format stream-json."
    );
    assert_eq!(fakes.prompt_runs().len(), 2, "nothing spawned for the oversized prompt");
}

#[test]
fn json_only_build_and_usage_line() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_HELP", "json")
        .env("FAKE_AGY_RESPONSE", "answer")
        .env(
            "FAKE_AGY_USAGE_JSON",
            r#"{"input_tokens":12345,"output_tokens":678,"thinking_tokens":4321}"#,
        )
        .env("FAKE_AGY_DURATION", "17.3")
        .spawn();
    let (text, _) = relay
        .call_text("gemini-ask", json!({"prompt": "x", "includeUsage": true, "effort": "high"}));
    assert_eq!(last_argv(&fakes), ["--output-format", "json", "-p", "x"]);
    assert!(text.starts_with("Gemini response:\nanswer\n\n📊 [Tokens: 12,345 in, 678 out (4321 thinking) | 17.3s]\n\n🧵 conversationId: c1"), "{text}");
}

#[test]
fn print_timeout_derivation_and_override() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("GEMINI_MCP_TIMEOUT", "2").env("FAKE_AGY_RESPONSE", "ok").spawn();
    relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(last_argv(&fakes).ends_with(&["--print-timeout".to_string(), "60s".to_string()]));
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("AGY_PRINT_TIMEOUT", " 30m ").env("FAKE_AGY_RESPONSE", "ok").spawn();
    relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(last_argv(&fakes).ends_with(&["--print-timeout".to_string(), "30m".to_string()]));
}

#[test]
fn capability_probe_runs_once_per_process() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").spawn();
    for _ in 0..3 {
        relay.call_text("gemini-ask", json!({"prompt": "x"}));
    }
    let probes = fakes.runs().iter().filter(|r| r.record["kind"] == "help").count();
    assert_eq!(probes, 1);
}

#[test]
fn per_tool_argv() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").spawn();
    relay.call_text("gemini-plan", json!({"task": "t"}));
    assert_eq!(
        last_argv(&fakes),
        with_s(&[
            "--model",
            "gemini-3.8-flash-high",
            "--effort",
            "high",
            "--mode",
            "plan",
            "--disable-slash-commands"
        ])
    );
    let stdin = String::from_utf8(fakes.prompt_runs().last().unwrap().stdin().unwrap()).unwrap();
    assert!(
        stdin.contains(
            "# ARCHITECTURAL & IMPLEMENTATION PLANNING REQUEST\\n\\n## Goal / Task:\\nt\\n"
        ),
        "{stdin}"
    );
    relay.call_text("gemini-brainstorm", json!({"prompt": "ideas"}));
    assert_eq!(last_argv(&fakes), with_s(&["--disable-slash-commands"]));
    relay.call_text(
        "gemini-brainstorm",
        json!({"prompt": "ideas", "model": "flash", "effort": "low"}),
    );
    assert_eq!(
        last_argv(&fakes),
        with_s(&[
            "--model",
            "gemini-3.8-flash-high",
            "--effort",
            "low",
            "--disable-slash-commands"
        ])
    );
    relay.call_text("gemini-image", json!({"prompt": "a cat"}));
    assert_eq!(
        last_argv(&fakes),
        with_s(&["--model", "gemini-3.8-flash-high", "--disable-slash-commands"])
    );
}

#[test]
fn plan_reports_no_thread_and_appends_usage_by_default() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_RESPONSE", "the plan")
        .env("FAKE_AGY_USAGE_JSON", r#"{"input_tokens":1000,"output_tokens":20}"#)
        .env("FAKE_AGY_DURATION", "2")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-plan", json!({"task": "t"})),
        ("the plan\n\n📊 [Tokens: 1,000 in, 20 out | 2.0s]".to_string(), false)
    );
    assert_eq!(
        relay.call_text("gemini-plan", json!({"task": "  "})),
        ("Error executing gemini-plan: Please provide a task or goal to plan.".to_string(), true)
    );
}

#[test]
fn plan_on_the_gemini_backend_gets_effort_and_mode_notices() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_GEMINI_RESPONSE", "plan")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-plan", json!({"task": "t"})).0,
        "⚠️ Backend \"gemini\" does not support reasoning effort configuration; \"high\" was ignored.\n⚠️ Backend \"gemini\" does not support execution mode \"plan\".\n\nplan"
    );
    assert_eq!(last_argv(&fakes), ["-m", "gemini-3.8-flash-high"]);
}

#[test]
fn silent_run_without_transcript() {
    let fakes = Fakes::new();
    let project = TempDir::new("silent");
    let mut relay = agy(&fakes).env("FAKE_AGY_SILENT", "1").cwd(&project.path).spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(is_error);
    let cwd = util::shown_path(&fs::canonicalize(&project.path).unwrap());
    assert_eq!(
        text,
        format!(
            "Error executing gemini-ask: agy produced no output for {cwd} (no stdout, stderr, or transcript). Run `agy -p \"hi\"` directly to check for an expired login or exhausted quota."
        )
    );
}

#[test]
fn silent_run_recovers_a_fresh_transcript() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_SILENT", "1")
        .env("FAKE_AGY_TRANSCRIPT", "1")
        .env("FAKE_AGY_CONVERSATION_ID", "conv-7")
        .env("FAKE_AGY_TRANSCRIPT_REPLY", "from the transcript")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Gemini response:\nfrom the transcript\n\n🧵 conversationId: conv-7 (pass it back to continue this thread)".to_string(), false)
    );
    let (listing, _) = relay.call_text("gemini-conversations", json!({"limit": 5}));
    assert!(
        listing.starts_with(
            "| id | last active | cwd | first prompt |\n| --- | --- | --- | --- |\n| `conv-7` |"
        ),
        "{listing}"
    );
    assert!(listing.ends_with("\n\nContinue one with gemini-ask and `conversationId: \"<id>\"`."));
}

#[test]
fn a_stale_transcript_is_not_recovered() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_SILENT", "1").spawn();
    let logs = relay.home.join(".gemini/antigravity-cli/brain/old/.system_generated/logs");
    fs::create_dir_all(&logs).unwrap();
    fs::write(
        logs.join("transcript.jsonl"),
        "{\"type\":\"USER_INPUT\",\"content\":\"q\"}\n{\"source\":\"MODEL\",\"type\":\"PLANNER_RESPONSE\",\"status\":\"DONE\",\"content\":\"stale\"}\n",
    )
    .unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    util::set_dir_modified(&logs, old);
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(is_error);
    assert!(text.contains("agy produced no output for"), "{text}");
    let (listing, _) = relay.call_text("gemini-conversations", json!({}));
    assert!(listing.contains("| `old` |"), "listing still shows it: {listing}");
}

#[test]
fn stderr_only_and_plain_failures_fall_through_the_ladder() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_STDERR_ONLY", "1").env("FAKE_STDERR", "not signed in").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: not signed in".to_string(), true)
    );
    assert!(relay.logged("agy: print-mode failed (not signed in); trying recovery."));
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_EXIT", "1").env("FAKE_STDOUT", "not json").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: Command failed with exit code 1: not json".to_string(), true)
    );
}

#[test]
fn timeouts_are_terminal_on_agy() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_TIMEOUT", "0.01")
        .env("FAKE_HANG", "1")
        .env("FAKE_GRANDCHILD", "1")
        .env("FAKE_AGY_TRANSCRIPT", "1")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: agy timed out after 1s".to_string(), true)
    );
    assert!(fakes.leftovers(relay.pid(), Duration::from_secs(2)).is_empty());
}

#[test]
fn at_a_cap_of_one_agy_runs_go_one_at_a_time_in_arrival_order() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_SLEEP", "0.3").env("GEMINI_MCP_AGY_PARALLEL", "1").spawn();
    let ids: Vec<Value> = (0..3)
        .map(|i| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-ask", "arguments": {"prompt": format!("p{i}")}}),
            )
        })
        .collect();
    // A cheap call is answered while the agy calls queue.
    let start = Instant::now();
    assert_eq!(relay.call_text("gemini-ping", json!({})).0, "Pong!");
    assert!(start.elapsed() < util::slack(Duration::from_millis(200)), "{:?}", start.elapsed());
    for id in &ids {
        assert_eq!(relay.response(id)["result"]["isError"], false);
    }
    let records = fakes.records();
    let runs: Vec<&Value> = records.iter().filter(|r| r["kind"] == "run").collect();
    let ends: Vec<&Value> = records.iter().filter(|r| r["event"] == "end").collect();
    assert_eq!(runs.len(), 3);
    for pair in runs.windows(2) {
        let end_of_first = ends.iter().find(|e| e["pid"] == pair[0]["pid"]).unwrap();
        assert!(pair[1]["t_ms"].as_i64() >= end_of_first["t_ms"].as_i64(), "runs overlapped");
    }
    let prompts: Vec<String> = fakes
        .prompt_runs()
        .iter()
        .map(|r| String::from_utf8(r.stdin().unwrap()).unwrap())
        .collect();
    for (i, stdin) in prompts.iter().enumerate() {
        assert!(stdin.contains(&format!("\"content\":\"p{i}\"")), "order {i}: {stdin}");
    }
}

#[test]
fn the_preview_of_a_stream_json_run_is_its_decoded_answer() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100")
        .env("FAKE_AGY_STREAM_SCRIPT", util::STAGED_STREAM)
        .spawn();
    let id = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}, "_meta": {"progressToken": "s"}}),
    );
    assert_eq!(relay.response(&id)["result"]["isError"], false);
    let progress = relay.take_progress(&json!("s"));
    let keepalives: Vec<&str> =
        progress[1..progress.len() - 1].iter().map(|p| p["message"].as_str().unwrap()).collect();
    let previews: Vec<&str> = keepalives
        .iter()
        .filter_map(|m| m.split_once("\n📝 Output: ..."))
        .map(|(_, p)| p)
        .collect();
    assert!(previews.contains(&util::STAGED_FIRST), "{keepalives:#?}");
    assert_eq!(previews.last(), Some(&util::STAGED_ALL), "{keepalives:#?}");
    for message in &keepalives {
        assert!(!message.contains("{\"event\"") && !message.contains('\u{FFFD}'), "{message}");
    }
}

#[test]
fn a_deeply_nested_event_line_does_not_bring_the_relay_down() {
    // The decoder parses each event line on the stdout reader's thread; a tool step whose
    // arguments nest as deep as serde_json allows must not overflow that thread's stack.
    let deep = format!("{}{}", "[".repeat(127), "]".repeat(127));
    let line = format!(
        "{{\"event\":\"step_update\",\"step_update\":{{\"tool_call\":{{\"name\":\"edit\",\"args\":{deep}}}}}}}"
    );
    let script = format!(
        "{line}\n{{\"event\":\"step_update\",\"step_update\":{{\"text_delta\":\"done\"}}}}"
    );
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_STREAM_SCRIPT", script).spawn();
    let id = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}, "_meta": {"progressToken": "d"}}),
    );
    assert_eq!(relay.response(&id)["result"]["isError"], false);
    let progress = relay.take_progress(&json!("d"));
    assert!(!progress.is_empty());
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}), "the relay still serves");
}

#[test]
fn a_plan_reports_its_planning_message_when_its_run_starts() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100")
        .env("FAKE_SLEEP", "1.5")
        .env("GEMINI_MCP_AGY_PARALLEL", "1")
        .spawn();
    let first = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "first"}}),
    );
    let plan = relay.send_request(
        "tools/call",
        json!({"name": "gemini-plan", "arguments": {"task": "t"}, "_meta": {"progressToken": "p"}}),
    );
    // Three keepalives while the plan waits behind the first call's 1.5 s run (counted from its
    // start: under Wine a process takes a while to start).
    wait_for_runs(&fakes, 1);
    let mut queued = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(1);
    while queued.len() < 3 && Instant::now() < deadline {
        queued.extend(relay.take_progress(&json!("p")));
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(fakes.prompt_runs().len(), 1, "the plan still waits for agy");
    assert!(queued.len() >= 3, "{queued:?}");
    let planning = "Gemini is formulating deep architectural plan";
    assert!(
        queued.iter().all(|p| !p["message"].as_str().unwrap().contains(planning)),
        "{queued:?}"
    );
    assert_eq!(relay.response(&first)["result"]["isError"], false);
    assert_eq!(relay.response(&plan)["result"]["isError"], false);
    let running = relay.take_progress(&json!("p"));
    assert!(
        running.iter().any(|p| p["message"].as_str().unwrap().contains(planning)),
        "{running:?}"
    );
}

#[test]
fn a_waiting_call_cancelled_by_the_client_never_runs() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_SLEEP", "0.5").env("GEMINI_MCP_AGY_PARALLEL", "1").spawn();
    let first = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "first"}}),
    );
    let second = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "second"}}),
    );
    let third = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "third"}}),
    );
    relay.notify("notifications/cancelled", json!({"requestId": second}));
    assert_eq!(relay.response(&first)["result"]["isError"], false);
    assert_eq!(relay.response(&third)["result"]["isError"], false);
    assert!(relay.drain(Duration::from_millis(200)).is_empty());
    let prompts: Vec<String> = fakes
        .prompt_runs()
        .iter()
        .map(|r| String::from_utf8(r.stdin().unwrap()).unwrap())
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(prompts.iter().all(|p| !p.contains("second")));
}

#[test]
fn gemini_cancel_leaves_waiting_calls_alone() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_SLEEP", "0.6").env("GEMINI_MCP_AGY_PARALLEL", "1").spawn();
    let first = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "first"}}),
    );
    let second = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "second"}}),
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while fakes.prompt_runs().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(relay.call_text("gemini-cancel", json!({})).0, "Cancelled 1 run.");
    assert_eq!(
        relay.response(&first)["result"]["content"][0]["text"],
        "Error executing gemini-ask: agy was cancelled by gemini-cancel"
    );
    assert_eq!(relay.response(&second)["result"]["isError"], false);
}

#[test]
fn at_references_are_inlined_on_agy_and_jailed() {
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    project.write("src/a.txt", "alpha\n");
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ok").cwd(&project.path).spawn();
    relay
        .call_text("gemini-ask", json!({"prompt": "explain @src/a.txt and mail user@example.com"}));
    let stdin = String::from_utf8(fakes.prompt_runs()[0].stdin().unwrap()).unwrap();
    let line: Value = serde_json::from_str(stdin.trim_end()).unwrap();
    assert_eq!(
        line["message"]["content"],
        "explain \n----- BEGIN FILE: src/a.txt -----\nalpha\n\n----- END FILE: src/a.txt -----\n and mail user@example.com"
    );
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "read @../secret.txt"}));
    assert!(is_error);
    assert_eq!(
        text,
        format!(
            "Error executing gemini-ask: Refusing @file reference outside the project directory: \"@../secret.txt\". Only files within {} may be referenced.",
            project.path.display()
        )
    );
    assert_eq!(fakes.prompt_runs().len(), 1, "a refused prompt never reaches agy");
}

#[test]
fn gemini_backend_only_jail_checks() {
    let fakes = Fakes::new();
    let project = TempDir::new("proj");
    project.write("a.txt", "alpha");
    let mut relay = fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").cwd(&project.path).spawn();
    relay.call_text("gemini-ask", json!({"prompt": "explain @a.txt"}));
    assert_eq!(
        fakes.prompt_runs()[0].stdin().unwrap(),
        b"explain @a.txt",
        "the gemini CLI inlines by itself"
    );
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "@~/.ssh/id_rsa"}));
    assert!(
        is_error
            && text.contains(
                "Refusing @file reference outside the project directory: \"@~/.ssh/id_rsa\""
            ),
        "{text}"
    );
}

#[test]
fn models_from_agy_and_the_fallback() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    let (text, _) = relay.call_text("gemini-models", json!({}));
    assert!(text.starts_with("### Active Backend: **AGY**\n"), "{text}");
    let listed = text.lines().filter(|l| l.starts_with("  • **")).count();
    assert!(listed >= 1);
    assert!(fakes.runs().iter().any(|r| r.argv() == ["--output-format", "json", "models"]));
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_MODELS", "fail").env("FAKE_SCOPE", "models").spawn();
    let (text, is_error) = relay.call_text("gemini-models", json!({}));
    assert!(!is_error);
    assert!(text.contains("  • **gemini-3.1-pro-low**: Gemini 3.1 Pro (Low)"), "{text}");
    assert!(relay.logged("agy listModels failed, using fallback: "));
}

#[test]
fn help_on_both_backends() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    let (text, _) = relay.call_text("gemini-help", json!({}));
    assert!(text.contains("--input-format"), "{text}");
    let mut relay = fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").spawn();
    let (text, _) = relay.call_text("gemini-help", json!({}));
    assert!(!text.is_empty() && !text.contains("unavailable"), "{text}");
    let mut relay = agy(&fakes).env("AGY_CLI_PATH", "/nonexistent/agy").spawn();
    let (text, is_error) = relay.call_text("gemini-help", json!({}));
    assert!(!is_error);
    assert!(
        text.starts_with(
            "Antigravity CLI (agy) help unavailable: Could not find the \"agy\" executable."
        ),
        "{text}"
    );
    let mut relay =
        fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").env("PATH", "/nonexistent").spawn();
    assert!(
        relay
            .call_text("gemini-help", json!({}))
            .0
            .starts_with("Gemini CLI help unavailable: Could not find the \"gemini\"")
    );
}

#[test]
fn doctor_verdicts() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    let (text, is_error) = relay.call_text("gemini-doctor", json!({}));
    assert!(!is_error);
    assert!(text.starts_with("### Gemini MCP Tool Doctor & Environment Diagnostic\n"), "{text}");
    assert!(text.contains("- Active Backend: **`AGY`** (via `GEMINI_MCP_BACKEND`)"));
    assert!(text.contains("- Status: ✅ Installed (`agy 1.1.27-fake`)"));
    assert!(text.contains("**73% left**"));
    assert!(text.ends_with("🎉 **System Ready!** The modern Antigravity CLI backend is active, signed in, and operational."));

    let mut relay = agy(&fakes).env("FAKE_AGY_USAGE", "fail").env("FAKE_SCOPE", "usage").spawn();
    let (text, _) = relay.call_text("gemini-doctor", json!({}));
    assert!(text.contains("- ❌ Login check failed"), "{text}");
    assert!(text.ends_with("⚠️ **Action needed:** `agy` is installed, but its account check did not come back healthy — see **Login & Quota** above."));

    let mut relay = agy(&fakes).env("AGY_CLI_PATH", "/nonexistent/agy").spawn();
    let (text, _) = relay.call_text("gemini-doctor", json!({}));
    assert!(text.ends_with("⚠️ **Action needed:** Install Antigravity CLI: `curl -fsSL https://antigravity.google/cli/install.sh | bash`"), "{text}");

    let mut relay = fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").spawn();
    let (text, _) = relay.call_text("gemini-doctor", json!({}));
    assert!(text.contains("- ℹ️ Skipped: the `gemini` backend is active"), "{text}");
    assert!(text.ends_with("🎉 **System Ready!** The `gemini` backend is active."), "{text}");
}

#[test]
fn doctor_subcommand_exit_status() {
    let fakes = Fakes::new();
    let run = |extra: &[(&str, &str)]| {
        let mut cmd = util::relay_command();
        cmd.arg("doctor")
            .env_clear()
            .env("PATH", util::path_with(&[]))
            .env("HOME", fakes.bin.path.clone())
            .envs(util::system_environment(&fakes.bin.path));
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let agy_path = fakes.agy().display().to_string();
    let ok = run(&[("AGY_CLI_PATH", &agy_path)]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("System Ready"));
    let missing = run(&[("AGY_CLI_PATH", "/nonexistent/agy")]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stdout).contains("Action needed"));
}

#[test]
fn image_is_found_copied_and_embedded() {
    let fakes = Fakes::new();
    let project = TempDir::new("img");
    let mut relay = agy(&fakes).env("FAKE_AGY_IMAGE", "1").cwd(&project.path).spawn();
    let (text, is_error) = relay.call_text(
        "gemini-image",
        json!({"prompt": "a red square", "aspectRatio": "16:9", "size": "1K", "outputPath": "out/square.png"}),
    );
    assert!(!is_error, "{text}");
    assert!(text.starts_with("### 🎨 Gemini Image Generation Completed\n\n- **Prompt:** \"a red square\"\n- **Aspect Ratio:** `16:9`\n- **Size:** `1K`\n- **Backend:** `AGY`\n\n💾 **Saved to Project:** `out/square.png`\n\n![Generated Image](file:///"), "{text}");
    assert!(project.join("out/square.png").is_file());
    let (text, is_error) =
        relay.call_text("gemini-image", json!({"prompt": "again", "outputPath": "../escape.png"}));
    assert!(is_error);
    assert_eq!(
        text,
        "Error executing gemini-image: Invalid outputPath: \"../escape.png\" escapes the project workspace directory."
    );
}

#[test]
fn conversations_when_there_are_none() {
    let mut relay = Relay::start();
    assert_eq!(
        relay.call_text("gemini-conversations", json!({"limit": 3})).0,
        "No conversations found. Run gemini-ask once and it will report the id it created."
    );
}

#[test]
fn blank_prompts_are_refused_with_each_tools_text() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    let cases = [
        (
            "gemini-ask",
            json!({"prompt": "   "}),
            "Please provide a prompt for analysis. Use @ syntax to include files (e.g., '@largefile.js explain what this does') or ask general questions",
        ),
        (
            "gemini-brainstorm",
            json!({"prompt": " \n "}),
            "You must provide a valid brainstorming challenge or question to explore",
        ),
        (
            "gemini-image",
            json!({"prompt": "\t"}),
            "Please provide a prompt describing the image you want to generate.",
        ),
    ];
    for (tool, args, text) in cases {
        assert_eq!(relay.call_text(tool, args), (format!("Error executing {tool}: {text}"), true));
    }
    assert!(fakes.prompt_runs().is_empty());
}

#[test]
fn image_found_in_the_conversation_directory() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_IMAGE", "nolink").env("FAKE_AGY_RESPONSE", "Here it is.").spawn();
    let (text, is_error) = relay.call_text("gemini-image", json!({"prompt": "a cat"}));
    assert!(!is_error, "{text}");
    let brain = relay.home.path.join(".gemini").join("antigravity-cli").join("brain");
    assert!(text.contains("\n\n![Generated Image](file://"), "{text}");
    assert!(text.contains(&format!("*File: `{}", brain.display())), "{text}");
    assert!(text.ends_with("\n\nHere it is."), "{text}");
}

#[test]
fn brainstorm_prompt_carries_the_method_and_context() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "ideas").spawn();
    let (text, _) = relay.call_text(
        "gemini-brainstorm",
        json!({"prompt": "onboarding", "methodology": "scamper", "domain": "fintech", "ideaCount": 7, "includeAnalysis": false}),
    );
    assert_eq!(text, "ideas");
    let stdin = String::from_utf8(fakes.prompt_runs()[0].stdin().unwrap()).unwrap();
    let content = serde_json::from_str::<Value>(stdin.trim_end()).unwrap()["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        content.starts_with("# BRAINSTORMING SESSION\n\n## Core Challenge\nonboarding\n"),
        "{content}"
    );
    assert!(content.contains("**SCAMPER Creative Triggers:**"));
    assert!(content.contains("Generate 7 distinct"));
    assert!(content.contains("fintech"));
    assert!(!content.contains("## Analysis Framework"));
}

#[cfg(unix)]
#[test]
fn pty_recovery_reruns_an_old_build_under_a_terminal() {
    let fakes = Fakes::new();
    let setup = || {
        agy(&fakes)
            .env("FAKE_AGY_HELP", "nostream")
            .env("FAKE_AGY_TTY_ONLY", "1")
            .env("FAKE_AGY_RESPONSE", "answered on a tty")
    };
    let mut relay = setup().env("AGY_MCP_PTY", "yes").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
    assert_eq!(
        (text.as_str(), is_error),
        ("Gemini response:\nanswered on a tty", false),
        "the recovered reply carries no conversation id (only the print-mode result reports one)"
    );
    assert_eq!(fakes.prompt_runs().len(), 2, "the print-mode run, then the rerun under script");
    let mut relay = setup().spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
    assert!(is_error && text.contains("agy produced no output for"), "without AGY_MCP_PTY: {text}");
}

/// The prompt-too-long error as `gemini-ask` reports it, for a prompt of `n` bytes as the kernel counts them.
#[cfg(unix)]
fn prompt_too_long(n: usize) -> String {
    format!(
        "Error executing gemini-ask: The prompt is {n} bytes, but this agy build only accepts prompts on the command line (at most 131072 bytes). Upgrade agy to a build with --input-format stream-json."
    )
}

/// One argv element holds at most 131,071 bytes of text plus its NUL, the
/// space before a leading `-` included. Both prompts that hit `E2BIG` ("Argument list too long
/// (os error 7)") get the prompt-too-long text before anything is spawned, and the largest prompts that fit
/// run.
#[cfg(unix)]
#[test]
fn argv_prompts_are_limited_exactly_at_the_kernels_limit() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_HELP", "nostream").spawn();
    let ask = |relay: &mut Relay, prompt: String| {
        relay.call_text("gemini-ask", json!({"prompt": prompt}))
    };

    let (text, is_error) = ask(&mut relay, "a".repeat(131_072));
    assert_eq!((text, is_error), (prompt_too_long(131_073), true));
    let (text, is_error) = ask(&mut relay, format!("-{}", "a".repeat(131_070)));
    assert_eq!((text, is_error), (prompt_too_long(131_073), true));
    assert!(fakes.prompt_runs().is_empty(), "nothing was spawned");

    let (text, is_error) = ask(&mut relay, "a".repeat(131_071));
    assert!(
        !is_error && text.contains("FAKE-ANSWER prompt_bytes=131071"),
        "{}",
        &text[..200.min(text.len())]
    );
    let (text, is_error) = ask(&mut relay, format!("-{}", "a".repeat(131_069)));
    assert!(
        !is_error && text.contains("FAKE-ANSWER prompt_bytes=131071"),
        "{}",
        &text[..200.min(text.len())]
    );
    let prompt_arg = last_argv(&fakes).pop().unwrap();
    assert_eq!((prompt_arg.len(), &prompt_arg[..2]), (131_071, " -"));
    assert_eq!(fakes.prompt_runs().len(), 2);
}

/// `--json-schema` carries caller text on argv whatever the prompt's path;
/// a 300 KB schema is refused with a clear text instead of `E2BIG`, before anything is spawned.
#[test]
fn a_300_kb_json_schema_is_refused_before_spawning() {
    let fakes = Fakes::new();
    let schema = json!({"type": "object", "description": "s".repeat(300_000)});
    let n = serde_json::to_string(&schema).unwrap().len();
    let expect = format!(
        "Error executing gemini-ask: The jsonSchema is {n} bytes; agy accepts at most 131071 bytes in one command-line argument."
    );
    for help in ["full", "nostream"] {
        let mut relay = agy(&fakes).env("FAKE_AGY_HELP", help).spawn();
        let (text, is_error) =
            relay.call_text("gemini-ask", json!({"prompt": "hi", "jsonSchema": schema}));
        assert_eq!((text, is_error), (expect.clone(), true), "--help {help}");
        let as_string = serde_json::to_string(&schema).unwrap();
        let (text, _) =
            relay.call_text("gemini-ask", json!({"prompt": "hi", "jsonSchema": as_string}));
        assert_eq!(text, expect, "a string schema, --help {help}");
    }
    assert!(fakes.prompt_runs().is_empty(), "nothing was spawned");
}

#[test]
fn two_concurrent_image_calls_each_get_their_own_file() {
    // The two runs go side by side, each in a conversation of its own (as agy's fresh runs are),
    // and the reply links no image: each call must find its run's image, not the other's newer one.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_IMAGE", "nolink")
        .env("FAKE_AGY_CONVERSATION_ID", "@pid")
        .env("FAKE_AGY_RESPONSE", "Here it is.")
        .env("FAKE_SLEEP", "0.5")
        .spawn();
    let ids: Vec<Value> = (0..2)
        .map(|n| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-image", "arguments": {"prompt": format!("image {n}")}}),
            )
        })
        .collect();
    let files: Vec<String> = ids
        .iter()
        .map(|id| {
            let response = relay.response(id);
            let text = response["result"]["content"][0]["text"].as_str().unwrap().to_string();
            let file = text.split("*File: `").nth(1).and_then(|rest| rest.split('`').next());
            match file {
                Some(file) => file.to_string(),
                None => relay.fail(&format!("no image file in {text}")),
            }
        })
        .collect();
    let runs = fakes.prompt_runs();
    assert_eq!(runs.len(), 2);
    let records = fakes.records();
    let end = |run: &util::Invocation| {
        let end = records.iter().find(|r| r["event"] == "end" && r["pid"] == run.record["pid"]);
        end.unwrap()["t_ms"].as_i64().unwrap()
    };
    let start = |run: &util::Invocation| run.record["t_ms"].as_i64().unwrap();
    assert!(
        start(&runs[1]) < end(&runs[0]) && start(&runs[0]) < end(&runs[1]),
        "the runs overlapped"
    );
    let brain = relay.home.path.join(".gemini").join("antigravity-cli").join("brain");
    let expected: Vec<String> = (0..2)
        .map(|n| {
            let run = runs.iter().find(|run| run.stdin_text().contains(&format!("image {n}")));
            let conversation = format!("c{}", run.unwrap().pid());
            brain.join(conversation).join("image_1.png").display().to_string()
        })
        .collect();
    assert_eq!(files, expected, "each call reports the image its own run wrote");
}

#[test]
fn a_waiting_call_counts_this_relays_calls_ahead_down_until_its_run_starts() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_SLEEP", "0.4")
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "40")
        .env("GEMINI_MCP_AGY_PARALLEL", "1")
        .spawn();
    let ahead: Vec<Value> = (0..3)
        .map(|n| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-ask", "arguments": {"prompt": format!("p{n}")}}),
            )
        })
        .collect();
    let fourth = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "p3"}, "_meta": {"progressToken": "q"}}),
    );
    for id in &ahead {
        assert_eq!(relay.response(id)["result"]["isError"], false);
    }
    assert_eq!(relay.response(&fourth)["result"]["isError"], false);
    let messages: Vec<String> = relay
        .take_progress(&json!("q"))
        .iter()
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect();
    let mut waits: Vec<&str> = Vec::new();
    let mut started = false;
    for message in &messages {
        match message.split_once("\n⏳ Waiting for agy: ") {
            Some((_, why)) => {
                assert!(!started, "waiting again after its run started: {messages:#?}");
                if waits.last() != Some(&why) {
                    waits.push(why);
                }
            }
            None => started = !waits.is_empty(),
        }
    }
    assert_eq!(
        waits,
        [
            "1 of 1 runs busy, 2 call(s) of this relay ahead",
            "1 of 1 runs busy, 1 call(s) of this relay ahead",
            "1 of 1 runs busy, 0 call(s) of this relay ahead"
        ],
        "{messages:#?}"
    );
    assert!(started, "its run's progress follows: {messages:#?}");
}

#[test]
fn an_answer_after_a_large_preview_event_is_kept() {
    // agy prints one huge event that the preview decodes slowly, then the answer, and exits at
    // once: the answer is read whole however long the preview takes.
    let fakes = Fakes::new();
    let big = format!(
        "{{\"event\":\"step_update\",\"step_update\":{{\"text_delta\":\"{}\"}}}}\n",
        "\\u00e9x".repeat(1 << 20)
    );
    let events = fakes.file("big-event.jsonl", &big);
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_RESPONSE", "THE-ANSWER")
        .env("FAKE_AGY_STREAM_FILE", &events)
        .spawn();
    relay.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "gemini-ask", "arguments": {"prompt": "x"}, "_meta": {"progressToken": 1}}}));
    let response = relay.response(&json!(1));
    let text = response["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(response["result"]["isError"], false, "{}", &text[..text.len().min(300)]);
    assert!(text.starts_with("Gemini response:\nTHE-ANSWER\n"), "{}", &text[..text.len().min(300)]);
}

/// A stream-json event line of `bytes` bytes: `head`, then an array of zeros, then `tail`.
#[cfg(unix)]
fn big_event(head: &str, tail: &str, bytes: usize) -> String {
    let zeros = (bytes - head.len() - tail.len() - 2) / 2;
    let mut line = String::with_capacity(bytes + 2);
    line.push_str(head);
    line.push('[');
    line.push_str(&"0,".repeat(zeros));
    line.push('0');
    line.push(']');
    line.push_str(tail);
    line.push('\n');
    line
}

#[cfg(unix)]
#[test]
fn a_big_event_line_costs_a_small_multiple_of_its_size() {
    // A 60 MB array inside a tool step, and inside the `init` event: the relay reads only the
    // tool's name and the model from them, so its peak memory stays near the bytes it must hold.
    const LINE: usize = 60_000_000;
    let tool = big_event(
        "{\"event\":\"step_update\",\"step_update\":{\"tool_call\":{\"name\":\"read_file\",\"args\":",
        "}}}",
        LINE,
    );
    let init = big_event(
        "{\"event\":\"init\",\"init\":{\"model\":\"gemini-3.8-flash-low\",\"tools\":",
        "}}",
        LINE,
    );
    for (name, line) in [("tool_call", tool), ("init", init)] {
        let fakes = Fakes::new();
        let file = fakes.file("event.jsonl", &line);
        drop(line);
        let mut relay = agy(&fakes)
            // Only the file's lines before the result line (no init line of the fake's own).
            .env("FAKE_AGY_STREAM_SCRIPT", "part:")
            .env("FAKE_AGY_STREAM_FILE", &file)
            // The preview has time to read the line before the run ends.
            .env("FAKE_AGY_STREAM_SLEEP", "3")
            .spawn();
        let id = relay.send_request(
            "tools/call",
            json!({"name": "gemini-ask", "arguments": {"prompt": "x"}}),
        );
        // Reading 60 MB twice takes seconds in a debug build on a busy machine: the wait is long.
        let response = relay
            .recv_within(util::slack(Duration::from_secs(120)))
            .unwrap_or_else(|| relay.fail("no response"));
        assert_eq!(response["id"], id);
        assert_eq!(
            response["result"]["content"][0]["text"],
            "Gemini response:\nFAKE-ANSWER prompt_bytes=1\n\n🧵 conversationId: c1 (pass it back to continue this thread)",
            "{name}"
        );
        let peak = util::peak_rss_kb(relay.pid()) as usize * 1024;
        eprintln!("{name}: a {LINE}-byte line, peak RSS {} MB", peak / 1_000_000);
        assert!(peak <= LINE * 5 / 2, "{name}: peak RSS {peak} bytes for a {LINE}-byte line");
    }
}

#[test]
fn a_conversation_table_cell_cannot_forge_a_row() {
    // A working directory named with a `|`, a newline and a terminal escape, and a prompt with
    // pipes: each stays inside its own cell.
    let mut relay = Relay::start();
    let base = relay.home.join(".gemini/antigravity-cli");
    let logs = base.join("brain/c-forge/.system_generated/logs");
    fs::create_dir_all(&logs).unwrap();
    fs::write(
        logs.join("transcript.jsonl"),
        "{\"type\":\"USER_INPUT\",\"content\":\"a | b \\u001b]0;title\\u0007\"}\n",
    )
    .unwrap();
    fs::create_dir_all(base.join("cache")).unwrap();
    let cwd = "/w/a|b\n| `forged` | 2030-01-01T00:00:00.000Z | /x | y |";
    fs::write(base.join("cache/last_conversations.json"), json!({ cwd: "c-forge" }).to_string())
        .unwrap();
    let (listing, is_error) = relay.call_text("gemini-conversations", json!({}));
    assert!(!is_error, "{listing}");
    let rows: Vec<&str> = listing.lines().filter(|line| line.starts_with("| `")).collect();
    assert_eq!(rows.len(), 1, "{listing}");
    assert!(rows[0].starts_with("| `c-forge` | "), "{listing}");
    assert!(
        rows[0].ends_with(
            " | /w/a\\|b\\n\\| `forged` \\| 2030-01-01T00:00:00.000Z \\| /x \\| y \\| | a \\| b |"
        ),
        "{listing}"
    );
    assert_eq!(listing.lines().count(), 5, "{listing}");
}

#[test]
fn a_ping_is_answered_while_a_big_conversation_store_is_listed() {
    // Twenty conversations with 2 MB transcripts, and a 20 MB last_conversations.json: the listing
    // runs off the event loop, which answers a ping meanwhile.
    let mut relay = Relay::start();
    let base = relay.home.join(".gemini/antigravity-cli");
    let filler = format!(
        "{{\"source\":\"MODEL\",\"type\":\"PLANNER_RESPONSE\",\"status\":\"DONE\",\"content\":\"{}\"}}\n",
        "x".repeat(1000)
    );
    for n in 0..20 {
        let logs = base.join(format!("brain/conv-{n:02}/.system_generated/logs"));
        fs::create_dir_all(&logs).unwrap();
        let mut transcript = format!("{{\"type\":\"USER_INPUT\",\"content\":\"question {n}\"}}\n");
        transcript.push_str(&filler.repeat(2000));
        fs::write(logs.join("transcript.jsonl"), transcript).unwrap();
    }
    let mut map = String::from("{");
    for n in 0..400_000 {
        map.push_str(&format!("\"/work/project/number/{n:08}\":\"other-{n:08}\","));
    }
    map.push_str("\"/work/here\":\"conv-07\"}");
    fs::create_dir_all(base.join("cache")).unwrap();
    fs::write(base.join("cache/last_conversations.json"), map).unwrap();

    let listing = relay.send_request(
        "tools/call",
        json!({"name": "gemini-conversations", "arguments": {"limit": 100}}),
    );
    let ping = relay.send_request("ping", json!({}));
    let first = relay.recv();
    assert_eq!(first["id"], ping, "the ping is answered first: {first}");
    let text =
        relay.response(&listing)["result"]["content"][0]["text"].as_str().unwrap().to_string();
    let rows: Vec<&str> = text.lines().filter(|line| line.starts_with("| `")).collect();
    assert_eq!(rows.len(), 20, "{text}");
    let seven = rows.iter().find(|row| row.starts_with("| `conv-07` |")).unwrap();
    assert!(seven.ends_with(" | /work/here | question 7 |"), "{seven}");
}

#[test]
fn terminal_control_sequences_never_reach_what_people_read() {
    // A clipboard write, a title change, colours, a screen clear and bare carriage returns, in
    // the answer so far, in a line that is not JSON, in agy's error line and in a status.
    let script = concat!(
        "{\"event\":\"step_update\",\"step_update\":{\"text_delta\":",
        "\"\\u001b]52;c;ZXZpbA==\\u0007Hello \\u001b[31mred\\u001b[0m 10%\\r20%\\n\"}}\n",
        "Loading \u{1b}]0;pwned\u{7}tools\u{1b}[2J\r\n",
        "sleep 1.2",
    );
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100")
        .env("FAKE_AGY_STREAM_SCRIPT", script)
        .env("FAKE_AGY_STATUS", "\u{1b}[2JPARTIAL\u{7}")
        .spawn();
    let id = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}, "_meta": {"progressToken": "c"}}),
    );
    let text = relay.response(&id)["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(text.starts_with("⚠️ agy reported status \"PARTIAL\" for this run.\n\n"), "{text:?}");
    let progress = relay.take_progress(&json!("c"));
    let previews: Vec<&str> = progress
        .iter()
        .filter_map(|p| p["message"].as_str()?.split_once("\n📝 Output: ...").map(|(_, p)| p))
        .collect();
    assert_eq!(previews.last(), Some(&"Hello red 10%\n20%\nLoading tools"), "{previews:#?}");
    for message in progress.iter().filter_map(|p| p["message"].as_str()) {
        assert!(!message.contains(['\u{1b}', '\u{7}', '\r']), "{message:?}");
    }

    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env(
            "FAKE_AGY_AGY_ERROR",
            "\u{1b}]52;c;ZXZpbA==\u{7}model \u{1b}[1mgemini-9\u{1b}[0m is off",
        )
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: model gemini-9 is off".to_string(), true)
    );

    // The CLI's own help text, in colour.
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_HELP", "\u{1b}[1mUsage:\u{1b}[0m agy [flags]").spawn();
    assert_eq!(
        relay.call_text("gemini-help", json!({})),
        ("Usage: agy [flags]".to_string(), false)
    );
}
