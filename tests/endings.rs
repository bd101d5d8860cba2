//! agy's print-mode endings against the fake: an answer that is in while agy does not exit,
//! background tasks stopped at exit, and a quota error that only agy's `--log-file` tells while
//! agy retries silently (with the fallback model, and a rate-limit line left alone).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{Fakes, Setup, slack};

const THREAD: &str = "\n\n🧵 conversationId: c1 (pass it back to continue this thread)";
const QUOTA_LINE: &str =
    "E1202 11:02:03 RESOURCE_EXHAUSTED: Individual quota reached. Resets in 1h2m3s.";

fn agy(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy").env("GEMINI_MCP_TIMEOUT", "0.5")
}

/// The `--log-file` value of the last prompt run; it must follow `--print-timeout <value>`.
fn log_file(fakes: &Fakes) -> String {
    let argv = fakes.prompt_runs().last().unwrap().argv();
    let at = argv.iter().position(|a| a == "--log-file").expect("--log-file passed");
    assert_eq!(argv[at - 2], "--print-timeout", "{argv:?}");
    argv[at + 1].clone()
}

#[test]
fn an_answer_without_an_exit_is_taken_five_seconds_after_the_result() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_RESPONSE", "in, but not out")
        .env("FAKE_AGY_LINGER", "3600")
        .env("FAKE_GRANDCHILD", "detached")
        .spawn();
    let started = Instant::now();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    let took = started.elapsed();
    assert_eq!(text, format!("Gemini response:\nin, but not out{THREAD}"));
    assert!(!is_error);
    assert!(took >= Duration::from_secs(5), "answered after {took:?}");
    assert!(took < Duration::from_secs(5) + slack(Duration::from_secs(3)), "{took:?}");
    assert!(
        relay.logged("[GMCPT] agy did not exit within 5 s of its result; killed its process tree")
    );
    let left = fakes.leftovers(relay.pid(), slack(Duration::from_secs(2)));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn background_tasks_stopped_at_exit_add_a_notice_after_the_others() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_RESPONSE", "done")
        .env("FAKE_AGY_STATUS", "PARTIAL")
        .env("FAKE_AGY_BACKGROUND", "2")
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(!is_error);
    assert_eq!(
        text,
        format!(
            "⚠️ agy reported status \"PARTIAL\" for this run.\n⚠️ agy stopped 2 background task(s) it had started when the run ended; their work may be incomplete.\n\nGemini response:\ndone{THREAD}"
        )
    );
    // A failed call does not show it.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_ERROR", "the model refused")
        .env("FAKE_AGY_STATUS", "ERROR")
        .env("FAKE_AGY_BACKGROUND", "1")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        ("Error executing gemini-ask: the model refused".to_string(), true)
    );
}

#[test]
fn a_quota_error_in_the_log_ends_the_run_and_the_fallback_answers() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_HELP", "logfile")
        .env("FAKE_AGY_LOG_LINES", format!("starting\n{QUOTA_LINE}\nhang"))
        .env("FAKE_QUOTA_MODEL", "default")
        .env("FAKE_AGY_RESPONSE", "flash says hi")
        .spawn();
    let started = Instant::now();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(started.elapsed() < slack(Duration::from_secs(3)), "{:?}", started.elapsed());
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("⚠️ the default model quota is exhausted (resets in 1h3m, at ")
            && text.ends_with(
                "); this answer is from gemini-3.8-flash-high.\n\nGemini response:\nflash says hi\n\n🧵 conversationId: c1 (pass it back to continue this thread)"
            ),
        "{text}"
    );
    assert!(relay.logged("[GMCPT] agy's log reports an exhausted quota; stopping the run."));
    let runs = fakes.prompt_runs();
    assert_eq!(runs.len(), 2);
    for run in runs {
        let argv = run.argv();
        let at = argv.iter().position(|a| a == "--log-file").unwrap();
        let path = Path::new(&argv[at + 1]);
        assert!(!path.exists() && !path.parent().unwrap().exists(), "{path:?} left behind");
    }
    let left = fakes.leftovers(relay.pid(), slack(Duration::from_secs(2)));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_quota_error_in_the_log_without_a_fallback_fails_at_once() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("GEMINI_MCP_FALLBACK_MODEL", "off")
        .env("FAKE_AGY_HELP", "logfile")
        .env("FAKE_AGY_LOG_LINES", format!("{QUOTA_LINE}\nhang"))
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(is_error);
    assert!(
        text.starts_with(
            "Error executing gemini-ask: Gemini quota is exhausted for the default model (resets in 1h3m, at "
        ) && text.ends_with("). Try model: \"flash\", or wait."),
        "{text}"
    );
    assert!(!Path::new(&log_file(&fakes)).exists());
}

#[test]
fn a_rate_limit_line_in_the_log_is_left_alone() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes)
        .env("FAKE_AGY_HELP", "logfile")
        .env(
            "FAKE_AGY_LOG_LINES",
            "RESOURCE_EXHAUSTED: rate limit exceeded, retrying in 1s\nsleep 0.6\nretry ok",
        )
        .env("FAKE_AGY_RESPONSE", "answered after a retry")
        .spawn();
    assert_eq!(
        relay.call_text("gemini-ask", json!({"prompt": "x"})),
        (format!("Gemini response:\nanswered after a retry{THREAD}"), false)
    );
    let path = log_file(&fakes);
    assert!(!Path::new(&path).exists(), "{path} left behind");
    // A build that does not advertise --log-file gets none.
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    relay.call_text("gemini-ask", json!({"prompt": "x"}));
    assert!(!fakes.prompt_runs()[0].argv().contains(&"--log-file".to_string()));
}
