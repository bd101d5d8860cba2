//! The real CLIs' failure modes against the fakes: agy's own error lines, exhausted quotas and the
//! retry on the fallback model (also inside the agy queue), answers cut off at agy's
//! `--print-timeout`, approvals nobody can give, another model answering, agy updated on disk, and
//! the default model. Each case checks the exact text a client reads, the log line and how many
//! runs the fake recorded.

use std::fs;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::util::{Fakes, Relay, Setup, TempDir, fake_program, wait_for_runs};

const THREAD: &str = "\n\n🧵 conversationId: c1 (pass it back to continue this thread)";
const CUT_OFF: &str =
    "agy stopped this answer at its --print-timeout (2640s); it may be incomplete.";
const APPROVAL: &str = "agy needed approval for a tool action and nobody can approve it in a headless run. Pass skipPermissions: true to allow it, or mode: \"plan\" to keep the run read-only.";
const PRO: &str = "gemini-3.1-pro-high";
const FLASH: &str = "gemini-3.8-flash-high";

fn agy(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy")
}

fn gemini(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "gemini")
}

/// Unix seconds now.
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds (the civil-from-days conversion).
fn rfc3339(secs: u64) -> String {
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A call's text and isError, and the Unix seconds around it.
fn timed_call(relay: &mut Relay, tool: &str, args: Value) -> (String, bool, (u64, u64)) {
    let before = unix_now();
    let (text, is_error) = relay.call_text(tool, args);
    (text, is_error, (before, unix_now()))
}

/// Asserts that `text` is `expected` with `{at}` standing for the time `reset` seconds after a
/// moment of `during`.
fn assert_at(text: &str, expected: &str, reset: u64, during: (u64, u64)) {
    let candidates: Vec<String> =
        (during.0..=during.1).map(|now| expected.replace("{at}", &rfc3339(now + reset))).collect();
    assert!(
        candidates.iter().any(|c| c == text),
        "got:\n{text}\nexpected one of:\n{candidates:#?}"
    );
}

fn run_models(fakes: &Fakes) -> Vec<Option<String>> {
    fakes
        .prompt_runs()
        .iter()
        .map(|run| {
            let argv = run.argv();
            let at = argv.iter().position(|a| a == "--model" || a == "-m")?;
            argv.get(at + 1).cloned()
        })
        .collect()
}

#[test]
fn the_rfc3339_helper() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_796_162_400), "2026-12-01T22:00:00Z");
    assert_eq!(rfc3339(951_825_600), "2000-02-29T12:00:00Z");
}

#[test]
fn agy_error_lines_are_the_failure() {
    let fakes = Fakes::new();
    let mut relay =
        agy(&fakes).env("FAKE_AGY_AGY_ERROR", " model gemini-9 is not enabled ").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: model gemini-9 is not enabled".to_string(), true)
    );
    assert!(relay.logged("[GMCPT] agy reported an error: model gemini-9 is not enabled"));
    assert!(relay.logged("[GMCPT] agy stderr: fake-agy: loading workspace"));
    assert!(!relay.stderr().contains("trying recovery"));
    assert_eq!(fakes.prompt_runs().len(), 1);

    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_ERROR_LINE", "not signed in; run agy once").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: not signed in; run agy once".to_string(), true)
    );
    assert!(relay.logged("[GMCPT] agy reported an error: not signed in; run agy once"));
    assert_eq!(fakes.prompt_runs().len(), 1);
}

/// The fake's environment, the call's arguments, the text after `Error executing gemini-ask: `
/// (`{at}` for the reset time) and the reset in seconds (0: none).
type QuotaCase = (&'static [(&'static str, &'static str)], Value, &'static str, u64);

#[test]
fn agy_quota_texts_without_a_fallback() {
    let overages = 3 * 3600 + 38 * 60 + 47;
    let upgrade = 143 * 3600 + 57 * 60 + 55;
    let cases: [QuotaCase; 8] = [
        (
            &[("FAKE_AGY_QUOTA", "overages")],
            json!({"prompt": "x"}),
            "Gemini quota is exhausted for the default model (resets in 3h39m, at {at}). Try model: \"flash\", or wait.",
            overages,
        ),
        (
            &[("FAKE_AGY_QUOTA", "overages"), ("FAKE_AGY_QUOTA_RESET", "none")],
            json!({"prompt": "x", "model": "pro"}),
            "Gemini quota is exhausted for gemini-3.1-pro-high. Try model: \"flash\", or wait.",
            0,
        ),
        (
            &[("FAKE_AGY_QUOTA", "upgrade")],
            json!({"prompt": "x", "model": "pro"}),
            "Gemini quota is exhausted for gemini-3.1-pro-high (resets in 143h58m, at {at}). Try model: \"flash\", or wait.",
            upgrade,
        ),
        (
            &[("FAKE_AGY_QUOTA", "upgrade"), ("FAKE_AGY_QUOTA_RESET", "none")],
            json!({"prompt": "x"}),
            "Gemini quota is exhausted for the default model. Try model: \"flash\", or wait.",
            0,
        ),
        (
            &[("FAKE_AGY_QUOTA", "resource")],
            json!({"prompt": "x", "model": "claude-sonnet-4-6"}),
            "Gemini quota is exhausted for claude-sonnet-4-6. Try model: \"flash\", or wait.",
            0,
        ),
        (
            &[("FAKE_AGY_QUOTA", "resource"), ("FAKE_AGY_QUOTA_RESET", "2h5m")],
            json!({"prompt": "x"}),
            "Gemini quota is exhausted for the default model (resets in 2h5m, at {at}). Try model: \"flash\", or wait.",
            2 * 3600 + 5 * 60,
        ),
        // Exit 0 with the text on stderr alone.
        (
            &[("FAKE_AGY_QUOTA", "overages"), ("FAKE_EXIT", "0")],
            json!({"prompt": "x"}),
            "Gemini quota is exhausted for the default model (resets in 3h39m, at {at}). Try model: \"flash\", or wait.",
            overages,
        ),
        // The quota told through agy's own error line.
        (
            &[(
                "FAKE_AGY_AGY_ERROR",
                "RESOURCE_EXHAUSTED: Individual quota reached. Resets in 58s.",
            )],
            json!({"prompt": "x"}),
            "Gemini quota is exhausted for the default model (resets in 0h1m, at {at}). Try model: \"flash\", or wait.",
            58,
        ),
    ];
    for (env, args, expected, reset) in cases {
        let fakes = Fakes::new();
        let mut setup = agy(&fakes).env("GEMINI_MCP_FALLBACK_MODEL", "off");
        for (key, value) in env {
            setup = setup.env(key, value);
        }
        let mut relay = setup.spawn();
        let (text, is_error, during) = timed_call(&mut relay, "gemini-ask", args);
        assert!(is_error, "{env:?}: {text}");
        assert_at(&text, &format!("Error executing gemini-ask: {expected}"), reset, during);
        let line = match reset {
            0 => "[GMCPT] agy: the model's quota is exhausted.".to_string(),
            secs => format!("[GMCPT] agy: the model's quota is exhausted (resets in {secs}s)."),
        };
        assert!(relay.logged(&line), "{env:?}");
        assert!(!relay.stderr().contains("retrying once"), "{env:?}");
        assert_eq!(fakes.prompt_runs().len(), 1, "{env:?}: one run, no fallback");
    }
}

#[test]
fn agy_quota_on_one_model_is_answered_by_the_fallback() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_QUOTA", "overages")
        .env("FAKE_QUOTA_MODEL", PRO)
        .env("FAKE_AGY_RESPONSE", "flash says hi")
        .spawn();
    let (text, is_error, during) =
        timed_call(&mut relay, "gemini-ask", json!({"prompt": "x", "model": "pro"}));
    assert!(!is_error, "{text}");
    assert_at(
        &text,
        &format!(
            "⚠️ gemini-3.1-pro-high quota is exhausted (resets in 3h39m, at {{at}}); this answer is from gemini-3.8-flash-high.\n\nGemini response:\nflash says hi{THREAD}"
        ),
        3 * 3600 + 38 * 60 + 47,
        during,
    );
    assert_eq!(run_models(&fakes), [Some(PRO.to_string()), Some(FLASH.to_string())]);
    assert!(relay.logged("[GMCPT] agy: the model's quota is exhausted (resets in 13127s)."));
    assert!(
        relay.logged("[GMCPT] agy: retrying once with the fallback model gemini-3.8-flash-high.")
    );

    // The default model, a notice without a reset, and a fallback of the user's choice.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_QUOTA", "upgrade")
        .env("FAKE_AGY_QUOTA_RESET", "none")
        .env("FAKE_QUOTA_MODEL", "default")
        .env("GEMINI_MCP_FALLBACK_MODEL", "gemini-3.8-flash-low")
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert_eq!(
        (text.as_str(), is_error),
        (
            format!("⚠️ the default model quota is exhausted; this answer is from gemini-3.8-flash-low.\n\nGemini response:\nFAKE-ANSWER prompt_bytes=1{THREAD}").as_str(),
            false
        )
    );
    assert_eq!(run_models(&fakes), [None, Some("gemini-3.8-flash-low".to_string())]);
}

#[test]
fn agy_fallback_that_fails_too() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_QUOTA", "overages").spawn();
    let (text, is_error, during) =
        timed_call(&mut relay, "gemini-ask", json!({"prompt": "x", "model": "pro"}));
    assert!(is_error);
    assert_at(
        &text,
        "Error executing gemini-ask: Gemini quota is exhausted for gemini-3.1-pro-high (resets in 3h39m, at {at}). Wait for it to reset. The retry with gemini-3.8-flash-high failed too: gemini-3.8-flash-high quota is exhausted (resets in 3h39m, at {at}).",
        3 * 3600 + 38 * 60 + 47,
        during,
    );
    assert_eq!(run_models(&fakes), [Some(PRO.to_string()), Some(FLASH.to_string())]);
    assert!(relay.logged("[GMCPT] agy: the fallback model's quota is exhausted too."));
}

#[test]
fn the_quota_sentence_advises_only_a_model_that_was_not_refused() {
    // The exhausted model is flash itself: waiting is the one advice left.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_QUOTA", "overages").spawn();
    let (text, is_error, during) =
        timed_call(&mut relay, "gemini-ask", json!({"prompt": "x", "model": "flash"}));
    assert!(is_error);
    assert_at(
        &text,
        "Error executing gemini-ask: Gemini quota is exhausted for gemini-3.8-flash-high (resets in 3h39m, at {at}). Wait for it to reset.",
        3 * 3600 + 38 * 60 + 47,
        during,
    );
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_GEMINI_QUOTA", "exceeded").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x", "model": "flash"})),
        (
            "Error executing gemini-ask: Gemini quota is exhausted for flash. Wait for it to reset."
                .to_string(),
            true
        )
    );
    assert_eq!(fakes.prompt_runs().len(), 1);

    // Another fallback model failed too: flash was not refused, so it is still worth a try.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_QUOTA", "overages")
        .env("FAKE_AGY_QUOTA_RESET", "none")
        .env("GEMINI_MCP_FALLBACK_MODEL", "gemini-3.8-flash-low")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x", "model": "pro"})),
        (
            "Error executing gemini-ask: Gemini quota is exhausted for gemini-3.1-pro-high. Try model: \"flash\", or wait. The retry with gemini-3.8-flash-low failed too: gemini-3.8-flash-low quota is exhausted.".to_string(),
            true
        )
    );
    assert_eq!(
        run_models(&fakes),
        [Some(PRO.to_string()), Some("gemini-3.8-flash-low".to_string())]
    );
}

#[test]
fn the_fallback_is_skipped_when_it_cannot_help() {
    // The model already is the fallback (an alias of it, or a tool that pins it).
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_QUOTA", "overages").spawn();
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "x", "model": "flash"}));
    assert!(
        text.starts_with("Error executing gemini-ask: Gemini quota is exhausted for gemini-3.8-flash-high (resets in 3h39m, at "),
        "{text}"
    );
    assert_eq!(fakes.prompt_runs().len(), 1);
    let (text, _) = relay.call_text("gemini-plan", json!({"task": "x"}));
    assert!(
        text.starts_with(
            "Error executing gemini-plan: Gemini quota is exhausted for gemini-3.8-flash-high"
        ),
        "{text}"
    );
    assert_eq!(fakes.prompt_runs().len(), 2);
    assert!(relay.logged("[GMCPT] The model already is the fallback model; no retry."));

    // The fallback is off.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_QUOTA", "overages")
        .env("GEMINI_MCP_FALLBACK_MODEL", "OFF")
        .spawn();
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "x", "model": "pro"}));
    assert!(
        text.starts_with(
            "Error executing gemini-ask: Gemini quota is exhausted for gemini-3.1-pro-high"
        ),
        "{text}"
    );
    assert_eq!(fakes.prompt_runs().len(), 1);
}

#[test]
fn no_fallback_after_a_timeout() {
    let fakes = Fakes::new();
    // The quota text is on stderr before the run hangs until the relay's deadline.
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_TIMEOUT", "0.01")
        .env("FAKE_AGY_QUOTA", "overages")
        .env("FAKE_HANG", "1")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x", "model": "pro"})),
        ("Error executing gemini-ask: agy timed out after 1s".to_string(), true)
    );
    assert_eq!(fakes.prompt_runs().len(), 1);
    assert!(!relay.stderr().contains("retrying once"));
}

#[test]
fn a_retry_cut_short_by_the_deadline_says_its_own_share() {
    // A 6 s deadline; the run on pro takes 5 s and fails on its quota, so the retry on flash has
    // what is left (about 1 s) and is stopped then: its text says that share, not `0s` or `1s`.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_TIMEOUT", "0.1")
        .env("FAKE_AGY_QUOTA", "overages")
        .env("FAKE_AGY_QUOTA_RESET", "none")
        .env("FAKE_QUOTA_MODEL", PRO)
        .env("FAKE_SLEEP", "5")
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x", "model": "pro"}));
    assert!(is_error, "{text}");
    let share = text
        .strip_prefix("Error executing gemini-ask: Gemini quota is exhausted for gemini-3.1-pro-high. Wait for it to reset. The retry with gemini-3.8-flash-high failed too: agy timed out after ")
        .and_then(|rest| rest.strip_suffix('s'))
        .unwrap_or_else(|| panic!("{text}"));
    let (whole, tenths) = share.split_once('.').unwrap_or_else(|| panic!("a decimal: {text}"));
    assert!(whole == "0" || whole == "1", "{text}");
    assert_eq!(tenths.len(), 1, "one decimal: {text}");
    let seconds: f64 = share.parse().unwrap();
    assert!(seconds > 0.0 && seconds <= 1.0, "{text}");
    assert_eq!(run_models(&fakes), [Some(PRO.to_string()), Some(FLASH.to_string())]);
}

#[test]
fn no_fallback_after_a_cancel() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_QUOTA", "overages").env("FAKE_HANG", "1").spawn();
    let id = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "x", "model": "pro"}}),
    );
    wait_for_runs(&fakes, 1);
    assert_eq!(relay.call_text("gemini-cancel", json!({})).0, "Cancelled 1 run.");
    assert_eq!(
        relay.response(&id)["result"]["content"][0]["text"],
        "Error executing gemini-ask: agy was cancelled by gemini-cancel"
    );
    assert_eq!(fakes.prompt_runs().len(), 1);
    assert!(!relay.stderr().contains("retrying once"));
}

#[test]
fn a_fallback_run_goes_in_its_calls_slot() {
    // One slot: the fallback run takes no new one, so it runs before the waiting second call.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_QUOTA", "overages")
        .env("FAKE_QUOTA_MODEL", PRO)
        .env("FAKE_SLEEP", "0.3")
        .env("GEMINI_MCP_AGY_PARALLEL", "1")
        .spawn();
    let first = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "first", "model": "pro"}}),
    );
    let second = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "second"}}),
    );
    let first = relay.response(&first);
    let text = first["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("⚠️ gemini-3.1-pro-high quota is exhausted (resets in 3h39m, at "),
        "{text}"
    );
    assert_eq!(relay.response(&second)["result"]["isError"], false);

    let runs = fakes.prompt_runs();
    let prompts: Vec<String> = runs.iter().map(|run| run.stdin_text()).collect();
    assert_eq!(runs.len(), 3);
    assert!(
        prompts[0].contains("\"content\":\"first\"")
            && prompts[1].contains("\"content\":\"first\"")
    );
    assert!(prompts[2].contains("\"content\":\"second\""), "{prompts:?}");
    assert_eq!(run_models(&fakes), [Some(PRO.to_string()), Some(FLASH.to_string()), None]);
    // Each run starts after the one before it ended: the fallback run came before the second call.
    let records = fakes.records();
    let end_of = |pid: i64| {
        records.iter().find(|r| r["event"] == "end" && r["pid"] == pid).unwrap()["t_ms"]
            .as_i64()
            .unwrap()
    };
    for pair in runs.windows(2) {
        assert!(
            pair[1].record["t_ms"].as_i64().unwrap() >= end_of(pair[0].pid()),
            "runs overlapped"
        );
    }
}

#[test]
fn answers_cut_off_at_the_print_timeout() {
    for cutoff in ["timed-out", "timeout", "print-timeout", "truncated"] {
        let fakes = Fakes::new();
        let mut relay = agy(&fakes)
            .env("FAKE_AGY_CUTOFF", cutoff)
            .env("FAKE_AGY_RESPONSE", "the first half")
            .spawn();
        assert_eq!(
            relay.call_text("gemini-ask", json!({"prompt": "x"})),
            (format!("⚠️ {CUT_OFF}\n\nGemini response:\nthe first half{THREAD}"), false),
            "{cutoff}"
        );
        assert!(
            relay.logged(
                "[GMCPT] agy stopped at its --print-timeout (2640s); the answer may be incomplete."
            ),
            "{cutoff}"
        );
        assert_eq!(fakes.prompt_runs().len(), 1);

        let fakes = Fakes::new();
        let mut relay =
            agy(&fakes).env("FAKE_AGY_CUTOFF", cutoff).env("FAKE_AGY_RESPONSE", "").spawn();
        assert_eq!(
            relay.call_text("gemini-ask", json!({"prompt": "x"})),
            (format!("Error executing gemini-ask: {CUT_OFF}"), true),
            "{cutoff}, no partial answer"
        );
        assert!(
            relay.logged("[GMCPT] agy stopped at its --print-timeout (2640s) with no answer."),
            "{cutoff}"
        );
        assert_eq!(fakes.prompt_runs().len(), 1);
    }
    // Nothing on stdout at all, and the print-timeout the relay was told to pass.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_CUTOFF", "print-timeout")
        .env("FAKE_AGY_SILENT", "1")
        .env("AGY_PRINT_TIMEOUT", "90s")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        (
            "Error executing gemini-ask: agy stopped this answer at its --print-timeout (90s); it may be incomplete.".to_string(),
            true
        )
    );
}

#[test]
fn an_answer_cut_inside_a_surrogate_pair_keeps_its_text() {
    // agy's print timeout can cut an answer between the two halves of an emoji: the JSON stays
    // valid, with a lone `\ud83d` at its end (or inside it), and the answer is still read.
    for (response, shown) in [
        ("partial answer \\ud83d", "partial answer \u{FFFD}"),
        ("a \\ude00 b \\ud83d\\ude00", "a \u{FFFD} b 😀"),
    ] {
        let fakes = Fakes::new();
        let result = format!(
            "{{\"conversation_id\":\"c1\",\"status\":\"SUCCESS\",\"response\":\"{response}\"}}"
        );
        let mut relay = agy(&fakes).env("FAKE_AGY_RESULT", &result).spawn();
        assert_eq!(
            relay.call_text("gemini-ask", json!({"prompt": "x"})),
            (format!("Gemini response:\n{shown}{THREAD}"), false),
            "{response}"
        );
        assert_eq!(fakes.prompt_runs().len(), 1);
    }
}

#[test]
fn approvals_nobody_can_give() {
    for denial in ["1", "flag"] {
        let fakes = Fakes::new();
        let mut relay = agy(&fakes).env("FAKE_AGY_DENIAL", denial).spawn();
        assert_eq!(
            relay.call_text("gemini-ask", json!({"prompt": "x"})),
            (format!("Error executing gemini-ask: {APPROVAL}"), true),
            "{denial}"
        );
        assert!(relay.logged(
            "[GMCPT] agy stopped at a tool action that needed approval in a headless run."
        ));
        assert_eq!(fakes.prompt_runs().len(), 1);
        // Taking the advice works.
        let (text, is_error) =
            relay.call_text("gemini-ask", json!({"prompt": "x", "skipPermissions": true}));
        assert_eq!(
            (text.as_str(), is_error),
            (format!("Gemini response:\nFAKE-ANSWER prompt_bytes=1{THREAD}").as_str(), false)
        );
    }
}

#[test]
fn another_model_answering_is_noticed() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_ANSWER_MODEL", "gemini-3.8-flash-low").spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x", "model": "pro"})),
        (
            format!(
                "ℹ️ agy answered with gemini-3.8-flash-low (asked for gemini-3.1-pro-high).\n\nGemini response:\nFAKE-ANSWER prompt_bytes=1{THREAD}"
            ),
            false
        )
    );
    assert!(
        relay.logged("[GMCPT] agy answered with gemini-3.8-flash-low, not the model asked for.")
    );
    // No model asked for, or the one asked for: nothing to say.
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert_eq!(text, format!("Gemini response:\nFAKE-ANSWER prompt_bytes=1{THREAD}"));
    let (text, _) =
        relay.call_text("gemini-ask", json!({"prompt": "x", "model": "gemini-3.8-flash-low"}));
    assert_eq!(text, format!("Gemini response:\nFAKE-ANSWER prompt_bytes=1{THREAD}"));

    // On the json path the result names the model; the notice follows agy's own notices.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_HELP", "nostream")
        .env("FAKE_AGY_ANSWER_MODEL", "claude-sonnet-4-6")
        .env("FAKE_AGY_STATUS", "PARTIAL")
        .spawn();
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "x", "model": "pro"}));
    assert_eq!(
        text,
        format!(
            "⚠️ agy reported status \"PARTIAL\" for this run.\nℹ️ agy answered with claude-sonnet-4-6 (asked for gemini-3.1-pro-high).\n\nGemini response:\nFAKE-ANSWER prompt_bytes=1{THREAD}"
        )
    );
}

#[test]
fn an_updated_agy_is_probed_again() {
    let dir = TempDir::new("agy-update");
    // A copy of the fake agy (copied with its permissions) that the test can rewrite.
    let exe = dir.join(&format!("agy{}", std::env::consts::EXE_SUFFIX));
    fs::copy(fake_program(), &exe).unwrap();
    let help = dir.write("help", "full");
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("AGY_CLI_PATH", exe.display().to_string())
        .env("FAKE_AGY_HELP_FILE", help.display().to_string())
        .spawn();
    let probes = |fakes: &Fakes| fakes.runs().iter().filter(|r| r.record["kind"] == "help").count();
    let last_argv = |fakes: &Fakes| fakes.prompt_runs().last().unwrap().argv();

    assert!(!relay.call_text("gemini-ask", json!({"prompt": "one"})).1);
    assert!(!relay.call_text("gemini-ask", json!({"prompt": "two"})).1);
    assert_eq!(probes(&fakes), 1, "an unchanged agy is probed once");
    assert!(last_argv(&fakes).contains(&"stream-json".to_string()));

    // `agy update`: a build without stream-json input, in a file of another size and time (the
    // bytes appended change what neither a script nor an executable does).
    fs::write(&help, "nostream").unwrap();
    let mut file = fs::OpenOptions::new().append(true).open(&exe).unwrap();
    file.write_all(b"\n# updated\n").unwrap();
    drop(file);
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "three"}));
    assert_eq!(
        (text.as_str(), is_error),
        (format!("Gemini response:\nFAKE-ANSWER prompt_bytes=5{THREAD}").as_str(), false)
    );
    assert_eq!(probes(&fakes), 2);
    assert_eq!(
        &last_argv(&fakes)[..],
        [
            "--disable-slash-commands",
            "--output-format",
            "json",
            "--print-timeout",
            "2640s",
            "-p",
            "three"
        ]
    );
    assert!(relay.logged("[GMCPT] agy changed on disk; probing its capabilities again."));
}

#[test]
fn the_default_model_and_where_it_shows() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("GEMINI_MCP_MODEL", " pro ").spawn();
    relay.call_text("gemini-ask", json!({"prompt": "x"}));
    relay.call_text("gemini-ask", json!({"prompt": "x", "model": "gemini-3.8-flash-low"}));
    relay.call_text("gemini-plan", json!({"task": "x"}));
    assert_eq!(
        run_models(&fakes),
        [Some(PRO.to_string()), Some("gemini-3.8-flash-low".to_string()), Some(FLASH.to_string())]
    );
    let (models, _) = relay.call_text("gemini-models", json!({}));
    assert!(models.contains("\n- **Default Model:** `gemini-3.1-pro-high` (`GEMINI_MCP_MODEL`). `gemini-ask` and `gemini-brainstorm` use it when a call names no model. `gemini-plan` pins `gemini-3.8-flash-high`; `gemini-image` hardcodes it.\n- **Quota Fallback Model:** `gemini-3.8-flash-high` (`GEMINI_MCP_FALLBACK_MODEL`): a call whose model's quota is exhausted is retried once with it.\n"), "{models}");
    let (doctor, _) = relay.call_text("gemini-doctor", json!({}));
    assert!(doctor.contains("\n- Default Model: `gemini-3.1-pro-high` (`GEMINI_MCP_MODEL`)\n- Quota Fallback Model: `gemini-3.8-flash-high` (`GEMINI_MCP_FALLBACK_MODEL`)\n"), "{doctor}");

    // Unset and off; the gemini backend passes models as they are.
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes)
        .env("GEMINI_MCP_MODEL", "pro")
        .env("GEMINI_MCP_FALLBACK_MODEL", "off")
        .spawn();
    relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert_eq!(run_models(&fakes), [Some("pro".to_string())]);
    let (models, _) = relay.call_text("gemini-models", json!({}));
    assert!(models.contains("- **Default Model:** `pro` (`GEMINI_MCP_MODEL`)."), "{models}");
    assert!(models.contains("- **Quota Fallback Model:** off (`GEMINI_MCP_FALLBACK_MODEL=off`): a call whose model's quota is exhausted fails.\n"), "{models}");
    let mut relay = agy(&fakes).spawn();
    let (doctor, _) = relay.call_text("gemini-doctor", json!({}));
    assert!(doctor.contains("\n- Default Model: none (the CLI's own)\n"), "{doctor}");
}

#[test]
fn gemini_quota_texts() {
    let capacity = 8 * 3600 + 44 * 60 + 7;
    let cases = [
        (
            "terminal",
            None,
            "Gemini quota is exhausted for the default model (resets in 8h45m, at {at}). Try model: \"flash\", or wait.",
            capacity,
        ),
        (
            "capacity",
            None,
            "Gemini quota is exhausted for the default model (resets in 8h45m, at {at}). Try model: \"flash\", or wait.",
            capacity,
        ),
        (
            "capacity",
            Some("none"),
            "Gemini quota is exhausted for the default model. Try model: \"flash\", or wait.",
            0,
        ),
        (
            "exceeded",
            None,
            "Gemini quota is exhausted for the default model. Try model: \"flash\", or wait.",
            0,
        ),
        (
            "all",
            None,
            "Gemini quota is exhausted for the default model. Try model: \"flash\", or wait.",
            0,
        ),
    ];
    for (quota, reset, expected, secs) in cases {
        let fakes = Fakes::new();
        let mut setup =
            gemini(&fakes).env("FAKE_GEMINI_QUOTA", quota).env("GEMINI_MCP_FALLBACK_MODEL", "off");
        if let Some(reset) = reset {
            setup = setup.env("FAKE_GEMINI_QUOTA_RESET", reset);
        }
        let mut relay = setup.spawn();
        let (text, is_error, during) = timed_call(&mut relay, "gemini-ask", json!({"prompt": "x"}));
        assert!(is_error, "{quota}: {text}");
        assert_at(&text, &format!("Error executing gemini-ask: {expected}"), secs, during);
        assert!(relay.logged("[GMCPT] gemini: the model's quota is exhausted"), "{quota}");
        assert_eq!(fakes.prompt_runs().len(), 1, "{quota}");
    }
}

#[test]
fn gemini_quota_is_answered_by_the_fallback() {
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes)
        .env("FAKE_GEMINI_QUOTA", "terminal")
        .env("FAKE_QUOTA_MODEL", "gemini-2.5-pro")
        .spawn();
    let (text, is_error, during) =
        timed_call(&mut relay, "gemini-ask", json!({"prompt": "x", "model": "gemini-2.5-pro"}));
    assert!(!is_error, "{text}");
    assert_at(
        &text,
        "⚠️ gemini-2.5-pro quota is exhausted (resets in 8h45m, at {at}); this answer is from flash.\n\nGemini response:\nFAKE-GEMINI-ANSWER prompt_bytes=1",
        8 * 3600 + 44 * 60 + 7,
        during,
    );
    let argv: Vec<Vec<String>> = fakes.prompt_runs().iter().map(|r| r.argv()).collect();
    assert_eq!(argv, [vec!["-m", "gemini-2.5-pro"], vec!["-m", "flash"]]);
    assert!(relay.logged("[GMCPT] gemini: retrying once with the fallback model flash."));

    // The old 2.5-Pro marker on every model: the fallback fails too.
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_GEMINI_QUOTA", "all").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert_eq!(
        (text.as_str(), is_error),
        (
            "Error executing gemini-ask: Gemini quota is exhausted for the default model. Wait for it to reset. The retry with flash failed too: flash quota is exhausted.",
            true
        )
    );
    assert_eq!(fakes.prompt_runs().len(), 2);
    assert!(relay.logged("[GMCPT] Gemini Quota Error: {"));
}

#[test]
fn an_answer_that_quotes_a_quota_text_is_no_quota_failure() {
    // A CLI that fails after printing part of an answer about quotas, with nothing on stderr: the
    // answer is the failure's text, not a reason to retry on the fallback model.
    let answer = "Your job logs RESOURCE_EXHAUSTED: Individual quota reached. Resets in 1h.";
    let fakes = Fakes::new();
    let mut relay = gemini(&fakes).env("FAKE_STDOUT", answer).env("FAKE_EXIT", "1").spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(is_error, "{text}");
    assert_eq!(
        text,
        format!("Error executing gemini-ask: Command failed with exit code 1: {answer}")
    );
    assert!(!relay.stderr().contains("quota is exhausted"), "{}", relay.stderr());
    assert_eq!(fakes.prompt_runs().len(), 1, "no fallback run");
}

/// `AGY_CLI_PATH` names a file whose path is not UTF-8: that file runs, as configured, and no
/// other agy.
#[cfg(unix)]
#[test]
fn an_agy_path_that_is_not_utf8_runs_as_given() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;

    let fakes = Fakes::new();
    let dir = TempDir::new("bytes");
    let odd = dir.path.join(OsStr::from_bytes(b"agy-\xff"));
    let script = format!(
        "#!/bin/sh\nFAKE_AGY_RESPONSE=FROM-THE-ODD-PATH exec '{}' \"$@\"\n",
        fakes.agy().display()
    );
    fs::write(&odd, script).unwrap();
    fs::set_permissions(&odd, fs::Permissions::from_mode(0o755)).unwrap();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "agy")
        .env_os("AGY_CLI_PATH", odd.as_os_str())
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
    assert!(!is_error, "{text}");
    assert!(text.starts_with("Gemini response:\nFROM-THE-ODD-PATH"), "{text}");
}
