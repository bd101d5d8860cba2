//! What agy says beside its result object: its own error line on stderr, an answer cut off at its
//! `--print-timeout`, a tool action nobody could approve, and the model that actually answered.

use serde_json::Value;

use crate::backend::agy::json;
use crate::js::trim;

/// The sentence of a run stopped at agy's own `--print-timeout`: a notice on a partial answer, the
/// failure when nothing came back.
pub fn cut_off_text(print_timeout: &str) -> String {
    format!(
        "agy stopped this answer at its --print-timeout ({print_timeout}); it may be incomplete."
    )
}

/// The failure of a headless run that stopped at a tool action waiting for approval.
pub const APPROVAL_TEXT: &str = "agy needed approval for a tool action and nobody can approve it in a headless run. Pass skipPermissions: true to allow it, or mode: \"plan\" to keep the run read-only.";

/// What agy prints when it gives up at its `--print-timeout` (lower case).
const CUT_OFF_MARKERS: [&str; 3] =
    ["timed out waiting for response", "timeout waiting for response", "print timeout"];

/// What agy names when a tool action needed an approval that a headless run cannot ask for.
const APPROVAL_MARKERS: [&str; 2] = ["permissions.allow", "--dangerously-skip-permissions"];

/// agy's own error line: the text after the first stderr line's `AGY_ERROR:` (agy 1.2.6 and later)
/// or, without one, `error:` (1.1.28 and later), trimmed.
pub fn error_line(stderr: &str) -> Option<&str> {
    ERROR_MARKERS.into_iter().find_map(|marker| {
        stderr.lines().find_map(|line| marked(line, marker)).filter(|text| !text.is_empty())
    })
}

/// Logs every stderr line but agy's error line: the error line is what the client reads, the rest
/// stays in the log.
pub fn log_other_stderr(stderr: &str, error: &str) {
    for line in stderr.lines().map(trim).filter(|line| !line.is_empty()) {
        if !ERROR_MARKERS.into_iter().any(|marker| marked(line, marker) == Some(error)) {
            log::info!("agy stderr: {line}");
        }
    }
}

/// The markers of agy's error line, newest first.
const ERROR_MARKERS: [&str; 2] = ["AGY_ERROR:", "error:"];

/// The trimmed text after `marker` when `line` starts with it.
fn marked<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    trim(line).strip_prefix(marker).map(trim)
}

/// Whether agy stopped the run at its `--print-timeout`: one of its texts on stderr, or
/// `"truncated": true` in the result.
pub fn cut_off(stderr: &str, result: Option<&Value>) -> bool {
    let stderr = stderr.to_ascii_lowercase();
    CUT_OFF_MARKERS.iter().any(|marker| stderr.contains(marker))
        || result.is_some_and(|result| result["truncated"] == true)
}

/// Whether stderr says a tool action waited for an approval nobody could give.
pub fn needs_approval(stderr: &str) -> bool {
    APPROVAL_MARKERS.iter().any(|marker| stderr.contains(marker))
}

/// The model agy says answered: the stream-json `init` event's (the first JSON line), else the
/// result's `model`. Of the `init` line only `event` and `init.model` are read.
pub fn answering_model(stdout: &str, result: Option<&Value>, stream: bool) -> Option<String> {
    let from_init = || {
        let first = stdout.lines().map(trim).find(|line| line.starts_with('{'))?;
        let event = json::event_line(first.as_bytes())?;
        if event.event.as_deref() != Some("init") {
            return None;
        }
        json::non_blank(event.init_model)
    };
    let from_init = if stream { from_init() } else { None };
    from_init.or_else(|| result.and_then(|result| non_blank(&result["model"])))
}

/// The notice on an answer from another model than the one asked for, or `None` when they agree.
pub fn substitution_notice(answered: &str, requested: &str) -> Option<String> {
    if answered.eq_ignore_ascii_case(requested) {
        return None;
    }
    Some(format!("ℹ️ agy answered with {answered} (asked for {requested})."))
}

fn non_blank(value: &Value) -> Option<String> {
    Some(trim(value.as_str()?).to_string()).filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn error_lines_of_both_generations() {
        assert_eq!(
            error_line("loading\nAGY_ERROR:  model not available \n"),
            Some("model not available")
        );
        assert_eq!(error_line("loading\nerror: not signed in"), Some("not signed in"));
        assert_eq!(error_line("error: old\nAGY_ERROR: new"), Some("new"), "AGY_ERROR wins");
        assert_eq!(error_line("  error: indented"), Some("indented"));
        assert_eq!(error_line("AGY_ERROR:   \nwarning: x"), None);
        assert_eq!(error_line("an error: inside a line"), None);
    }

    #[test]
    fn cut_off_texts_and_the_truncated_flag() {
        for stderr in [
            "Error: timed out waiting for response",
            "timeout waiting for response",
            "[agy] print timeout after 60s with turn in progress",
            "Print Timeout",
        ] {
            assert!(cut_off(stderr, None), "{stderr}");
        }
        assert!(cut_off("", Some(&json!({"truncated": true}))));
        assert!(!cut_off("", Some(&json!({"truncated": "yes"}))));
        assert!(!cut_off("agy timed out", Some(&json!({}))));
        assert_eq!(
            cut_off_text("60s"),
            "agy stopped this answer at its --print-timeout (60s); it may be incomplete."
        );
    }

    #[test]
    fn approval_texts() {
        assert!(needs_approval("add run_command to permissions.allow"));
        assert!(needs_approval("pass --dangerously-skip-permissions to allow it"));
        assert!(!needs_approval("permission denied"));
    }

    #[test]
    fn the_answering_model() {
        let stream = "{\"event\": \"init\", \"init\": {\"model\": \"gemini-3.8-flash-low\"}}\n{\"event\":\"result\"}";
        assert_eq!(answering_model(stream, None, true).as_deref(), Some("gemini-3.8-flash-low"));
        let result = json!({"model": " gemini-3.1-pro-high "});
        assert_eq!(
            answering_model("", Some(&result), false).as_deref(),
            Some("gemini-3.1-pro-high")
        );
        assert_eq!(
            answering_model(stream, Some(&result), false).as_deref(),
            Some("gemini-3.1-pro-high")
        );
        assert_eq!(answering_model("not json\n{\"event\":\"step_update\"}", None, true), None);
        assert_eq!(
            substitution_notice("gemini-3.8-flash-low", "gemini-3.1-pro-high").as_deref(),
            Some("ℹ️ agy answered with gemini-3.8-flash-low (asked for gemini-3.1-pro-high).")
        );
        assert_eq!(substitution_notice("Gemini-3.1-Pro-High", "gemini-3.1-pro-high"), None);
    }
}
