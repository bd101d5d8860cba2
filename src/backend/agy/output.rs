//! Reading what agy printed: the result object, its error, conversation id and notices, the reply text
//! with the usage line, `script` output cleanup (PTY recovery) and the model list.

use serde_json::Value;

use crate::backend::agy::json;
use crate::backend::agy::transcript::extract_replies;
use crate::backend::options::RunOptions;
use crate::js::{string as js_string, to_fixed_1, trim, truthy};

/// The result object of a run: the whole stdout as one JSON object (`json` output), or the `result`
/// of the last `{"event":"result"}` line (stream-json output). Only that line is read whole: of
/// the others, only their `event` is read.
pub fn agy_result(stdout: &str, stream: bool) -> Option<Value> {
    let stdout = trim(stdout);
    if !stream {
        return json::parse::<Value>(stdout.as_bytes()).filter(Value::is_object);
    }
    stdout.lines().rev().find_map(|line| {
        let line = trim(line).as_bytes();
        if json::event_line(line)?.event.as_deref() != Some("result") {
            return None;
        }
        let Value::Object(mut event) = json::parse::<Value>(line)? else { return None };
        // JavaScript's `typeof x === "object"` also lets arrays through.
        event.remove("result").filter(|result| result.is_object() || result.is_array())
    })
}

/// agy's own error text (`error`, trimmed) when it is a non-blank string.
pub fn agy_error_text(result: &Value) -> Option<String> {
    non_blank(&result["error"])
}

/// The conversation id (`conversation_id`, trimmed) when it is a non-blank string.
pub fn agy_conversation_id(result: &Value) -> Option<String> {
    non_blank(&result["conversation_id"])
}

/// The notices a result carries: a non-`SUCCESS` status first, then refused tool actions.
pub fn agy_result_notices(result: &Value) -> Vec<String> {
    let mut notices = Vec::new();
    if let Some(status) = non_blank(&result["status"]).filter(|s| !upper_is_success(s)) {
        notices.push(format!("agy reported status \"{status}\" for this run."));
    }
    if let Some(denied) = result["denied_actions"].as_array().filter(|denied| !denied.is_empty()) {
        let names: Vec<String> = denied
            .iter()
            .map(|action| {
                non_blank(&action["display_name"]).unwrap_or_else(|| "unnamed action".to_string())
            })
            .collect();
        notices.push(format!(
            "agy refused {} tool action(s) in this headless run (nobody could approve them): {}.",
            denied.len(),
            names.join(", ")
        ));
    }
    notices
}

/// The reply text of agy's JSON output (one document, or JSON lines): structured output when
/// preferred, else transcript-shaped replies, else the first conventional text field of each
/// object.
///
/// `include_usage` appends the `📊 [Tokens: …]` line to transcript and conventional replies; the
/// structured output chosen by `prefer_structured` never carries it. Callers pass
/// `RunOptions::usage_line_wanted()`, which is false whenever a schema was given.
pub fn parse_agy_json_response(
    text: &str,
    prefer_structured: bool,
    include_usage: bool,
) -> Option<String> {
    let text = trim(text);
    if text.is_empty() {
        return None;
    }
    let parsed: Vec<Value> = match json::parse::<Value>(text.as_bytes()) {
        Some(value) => vec![value],
        None => text
            .lines()
            .filter(|line| !trim(line).is_empty())
            .filter_map(|line| json::parse(line.as_bytes()))
            .collect(),
    };
    reply_from_values(parsed, prefer_structured, include_usage)
}

/// `parse_agy_json_response` from already parsed candidates (a top-level array contributes its
/// elements).
fn reply_from_values(
    parsed: Vec<Value>,
    prefer_structured: bool,
    include_usage: bool,
) -> Option<String> {
    let objects: Vec<Value> = parsed
        .into_iter()
        .flat_map(|value| match value {
            Value::Array(items) => items,
            other => vec![other],
        })
        .filter(Value::is_object)
        .collect();
    let usage = if include_usage { usage_line(&objects) } else { String::new() };

    if prefer_structured {
        let structured = objects.iter().map(|it| &it["structured_output"]).find(|it| !it.is_null());
        if let Some(structured) = structured {
            return Some(render_structured(structured));
        }
    }

    let replies = extract_replies(&objects);
    if !replies.is_empty() {
        return Some(replies + &usage);
    }

    let mut collected: Vec<String> = Vec::new();
    for object in &objects {
        let field = ["response", "text", "content", "message", "output", "result"]
            .into_iter()
            .find_map(|key| non_blank(&object[key]));
        match field {
            Some(text) => collected.push(text),
            None if collected.is_empty() && !object["structured_output"].is_null() => {
                collected.push(render_structured(&object["structured_output"]));
            }
            None => (),
        }
    }
    let joined = collected.join("\n\n");
    let joined = trim(&joined);
    if joined.is_empty() {
        return None;
    }
    Some(format!("{joined}{usage}"))
}

/// `parse_agy_json_response` with the flags derived from the call's options.
pub fn parse_reply(text: &str, opts: &RunOptions) -> Option<String> {
    parse_agy_json_response(text, opts.prefer_structured(), opts.usage_line_wanted())
}

/// The direct reply of a successful run, before any recovery: the parsed stream-json result, the
/// parsed `json` output, or the trimmed raw stdout when agy was not asked for JSON.
/// `result` is `agy_result(stdout, via_stdin)`, which the ladder has already parsed.
pub fn direct_reply(
    stdout: &str,
    result: Option<Value>,
    via_stdin: bool,
    json_output: bool,
    opts: &RunOptions,
) -> Option<String> {
    let (prefer_structured, include_usage) = (opts.prefer_structured(), opts.usage_line_wanted());
    if via_stdin {
        return reply_from_values(vec![result?], prefer_structured, include_usage);
    }
    if json_output {
        // A whole-stdout object is the one candidate parsing would find; anything else is reparsed.
        return match result {
            Some(result) => reply_from_values(vec![result], prefer_structured, include_usage),
            None => parse_reply(stdout, opts),
        };
    }
    Some(trim(stdout).to_string()).filter(|text| !text.is_empty())
}

/// `script` output made readable: CRLF/CR to LF, `Script started`/`Script done` lines dropped, trimmed.
pub fn strip_script_noise(s: &str) -> String {
    let unified = s.replace("\r\n", "\n").replace('\r', "\n");
    let kept: Vec<&str> = unified
        .split('\n')
        .filter(|line| !line.starts_with("Script started") && !line.starts_with("Script done"))
        .collect();
    trim(&kept.join("\n")).to_string()
}

/// `(id, label)` pairs from `agy --output-format json models`; `Err` says why the output is unusable.
pub fn parse_models(stdout: &str) -> Result<Vec<(String, String)>, String> {
    let payload: Value =
        serde_json::from_slice(trim(stdout).as_bytes()).map_err(|err| err.to_string())?;
    let models = match payload["command"]["data"]["models"].as_array() {
        Some(models) if !models.is_empty() => models,
        _ => return Err("no models in the `agy models` output".to_string()),
    };
    Ok(models
        .iter()
        .map(|model| {
            let id = first_truthy(&[&model["id"]]);
            let label = first_truthy(&[&model["label"], &model["id"]]);
            (id, label)
        })
        .collect())
}

/// The fixed model list used when agy cannot list its models.
pub fn fallback_models() -> Vec<(String, String)> {
    [
        ("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
        ("gemini-3.8-flash-medium", "Gemini 3.8 Flash (Medium)"),
        ("gemini-3.8-flash-low", "Gemini 3.8 Flash (Low)"),
        ("gemini-3.7-flash-high", "Gemini 3.7 Flash (High)"),
        ("gemini-3.7-flash-medium", "Gemini 3.7 Flash (Medium)"),
        ("gemini-3.7-flash-low", "Gemini 3.7 Flash (Low)"),
        ("gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"),
        ("gemini-3.1-pro-low", "Gemini 3.1 Pro (Low)"),
    ]
    .into_iter()
    .map(|(id, label)| (id.to_string(), label.to_string()))
    .collect()
}

/// The model list from a `models` run (its stdout, or the run's error message), falling back to
/// `fallback_models` with a warning on any failure.
pub fn models_or_fallback(run: Result<&str, &str>) -> Vec<(String, String)> {
    match run.map_err(String::from).and_then(parse_models) {
        Ok(models) => models,
        Err(message) => {
            log::warn!("agy listModels failed, using fallback: {message}");
            fallback_models()
        }
    }
}

/// A string value trimmed, when it has non-blank content.
fn non_blank(value: &Value) -> Option<String> {
    let text = trim(value.as_str()?);
    Some(text.to_string()).filter(|text| !text.is_empty())
}

/// `String(a || b || "")`.
fn first_truthy(values: &[&Value]) -> String {
    values.iter().find(|value| truthy(value)).map(|value| js_string(value)).unwrap_or_default()
}

/// A structured output as text: a string as-is, anything else as 2-space pretty JSON.
fn render_structured(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// `\n\n📊 [Tokens: <in> in, <out> out[ (<thinking> thinking)][ | <d>s]]` from the last object with an
/// object `usage`, or empty.
fn usage_line(objects: &[Value]) -> String {
    let Some(object) = objects.iter().rev().find(|it| it["usage"].is_object()) else {
        return String::new();
    };
    let usage = &object["usage"];
    let mut line = format!(
        "\n\n📊 [Tokens: {} in, {} out",
        grouped(&usage["input_tokens"]),
        grouped(&usage["output_tokens"])
    );
    if truthy(&usage["thinking_tokens"]) {
        line.push_str(&format!(" ({} thinking)", js_string(&usage["thinking_tokens"])));
    }
    if let Some(seconds) = object["duration_seconds"].as_f64() {
        line.push_str(&format!(" | {}s", to_fixed_1(seconds)));
    }
    line.push(']');
    line
}

/// Whether `s.to_uppercase() == "SUCCESS"`, without linking the Unicode case tables: besides ASCII,
/// only `ß`, dotless `ı`, long `ſ` and the Latin ligatures upper-case to ASCII letters alone.
fn upper_is_success(s: &str) -> bool {
    let mut upper = String::with_capacity(s.len());
    for c in s.chars() {
        let expansion = match c {
            'ß' => "SS",
            'ı' => "I",
            'ſ' => "S",
            '\u{FB00}' => "FF",
            '\u{FB01}' => "FI",
            '\u{FB02}' => "FL",
            '\u{FB03}' => "FFI",
            '\u{FB04}' => "FFL",
            '\u{FB05}' | '\u{FB06}' => "ST",
            // Every other non-ASCII character upper-cases to something with a non-ASCII character.
            c if !c.is_ascii() => return false,
            c => {
                upper.push(c.to_ascii_uppercase());
                continue;
            }
        };
        upper.push_str(expansion);
    }
    upper == "SUCCESS"
}

/// A token count with comma thousands grouping (`toLocaleString` in en-US); non-numbers count as 0.
fn grouped(value: &Value) -> String {
    let Some(number) = value.as_f64() else { return "0".to_string() };
    let text = match value.as_i64() {
        Some(int) => int.to_string(),
        None => {
            let fixed = format!("{number:.3}");
            fixed.trim_end_matches('0').trim_end_matches('.').to_string()
        }
    };
    let (sign, rest) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (int_part, frac_part) = match rest.split_once('.') {
        Some((int_part, frac)) => (int_part, format!(".{frac}")),
        None => (rest, String::new()),
    };
    let mut out = String::new();
    for (idx, digit) in int_part.chars().enumerate() {
        if idx > 0 && (int_part.len() - idx) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if out == "0" && frac_part.is_empty() {
        return out;
    }
    format!("{sign}{out}{frac_part}")
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn check_parse(text: &str, prefer_structured: bool, include_usage: bool, expect: Option<&str>) {
        assert_eq!(
            parse_agy_json_response(text, prefer_structured, include_usage).as_deref(),
            expect,
            "input: {text}"
        );
    }

    const STREAM: &str = "{\"event\":\"init\",\"init\":{\"model\":\"gemini-3.8-flash-low\"}}\n\
        {\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"po\"}}\n\
        {\"event\":\"result\",\"result\":{\"conversation_id\":\"c1\",\"status\":\"SUCCESS\",\"response\":\"pong\"}}\n";

    #[test]
    fn agy_result_picks_the_final_result_event() {
        let result = agy_result(STREAM, true).unwrap();
        assert_eq!(result["response"], "pong");
        assert_eq!(agy_error_text(&result), None);
        assert_eq!(agy_conversation_id(&result).as_deref(), Some("c1"));
        assert_eq!(agy_result_notices(&result), Vec::<String>::new());
    }

    #[test]
    fn agy_result_last_result_line_wins_and_others_are_ignored() {
        let text = "{\"event\":\"result\",\"result\":{\"response\":\"first\"}}\r\n\
                    {\"event\":\"result\",\"result\":{\"response\":\"second\"}}\r\n\
                    {\"event\":\"result\",\"result\":\"not an object\"}\n\
                    garbage\n";
        assert_eq!(agy_result(text, true).unwrap()["response"], "second");
        let array = "{\"event\":\"result\",\"result\":[1]}";
        assert_eq!(agy_result(array, true), Some(json!([1])));
        assert_eq!(agy_result("{\"event\":\"init\"}", true), None);
    }

    #[test]
    fn agy_result_none_cases() {
        assert_eq!(agy_result("not json", false), None);
        assert_eq!(agy_result("", true), None);
        assert_eq!(agy_result("", false), None);
        assert_eq!(agy_result("[1,2]", false), None);
        assert_eq!(agy_result("\"text\"", false), None);
        assert_eq!(agy_result("  {\"response\":\"x\"}\n", false), Some(json!({"response":"x"})));
    }

    #[test]
    fn error_text_in_json_and_stream_modes() {
        let verdict = r#"{"conversation_id":"","status":"ERROR","response":"","error":"invalid model selection … Available models: …"}"#;
        let json_result = agy_result(verdict, false).unwrap();
        let expect = Some("invalid model selection … Available models: …".to_string());
        assert_eq!(agy_error_text(&json_result), expect);
        let stream =
            format!("{{\"event\":\"init\"}}\n{{\"event\":\"result\",\"result\":{verdict}}}");
        assert_eq!(agy_error_text(&agy_result(&stream, true).unwrap()), expect);
        assert_eq!(agy_conversation_id(&json_result), None);
        assert_eq!(agy_error_text(&json!({"error": "  "})), None);
        assert_eq!(agy_error_text(&json!({"error": 5})), None);
        assert_eq!(
            agy_error_text(&json!({"error": " bad model \n"})).as_deref(),
            Some("bad model")
        );
    }

    #[test]
    fn conversation_id_trimmed() {
        assert_eq!(agy_conversation_id(&json!({"conversation_id": " c1 "})).as_deref(), Some("c1"));
        assert_eq!(agy_conversation_id(&json!({"conversation_id": ""})), None);
        assert_eq!(agy_conversation_id(&json!({})), None);
    }

    #[test]
    fn notices_status_and_denied() {
        let denied =
            json!({"status":"SUCCESS","denied_actions":[{"display_name":"AskQuestion"},{}]});
        assert_eq!(
            agy_result_notices(&denied),
            ["agy refused 2 tool action(s) in this headless run (nobody could approve them): \
              AskQuestion, unnamed action."]
        );
        assert_eq!(
            agy_result_notices(&json!({"status":"TIMEOUT"})),
            ["agy reported status \"TIMEOUT\" for this run."]
        );
        assert_eq!(agy_result_notices(&json!({"status":"SUCCESS","denied_actions":[]})), [""; 0]);
        assert_eq!(agy_result_notices(&json!({"status":"success"})), [""; 0]);
        let both = json!({"status":" partial ","denied_actions":[{"display_name":"  "},{"display_name":" Run "}]});
        assert_eq!(
            agy_result_notices(&both),
            [
                "agy reported status \"partial\" for this run.",
                "agy refused 2 tool action(s) in this headless run (nobody could approve them): \
                 unnamed action, Run."
            ]
        );
    }

    #[test]
    fn appendix_b4_denied_notice() {
        let result = json!({"conversation_id":"c3","status":"SUCCESS","response":"Done.","denied_actions":[{"display_name":"AskQuestion"}]});
        assert_eq!(
            agy_result_notices(&result),
            [
                "agy refused 1 tool action(s) in this headless run (nobody could approve them): AskQuestion."
            ]
        );
        assert_eq!(
            parse_agy_json_response(&result.to_string(), false, false).as_deref(),
            Some("Done.")
        );
    }

    #[test]
    fn conventional_fields() {
        check_parse(r#"{"response":"hello world"}"#, false, false, Some("hello world"));
        check_parse(r#"{"text":"  spaced  "}"#, false, false, Some("spaced"));
        check_parse(r#"{"response":"  ","output":"out"}"#, false, false, Some("out"));
        check_parse(r#"{"result":"r","message":"m"}"#, false, false, Some("m"));
        check_parse("{\"response\":\"a\"}\n{\"response\":\"b\"}", false, false, Some("a\n\nb"));
        check_parse(r#"[{"response":"a"},{"text":"b"}]"#, false, false, Some("a\n\nb"));
        check_parse(r#"{"response":5}"#, false, false, None);
    }

    #[test]
    fn empty_and_non_json_are_none() {
        check_parse("", false, false, None);
        check_parse("   \n ", true, true, None);
        check_parse("not json at all", false, true, None);
        check_parse("[1, 2]", false, false, None);
        check_parse("{}", false, true, None);
    }

    #[test]
    fn structured_output_versus_response() {
        let stale = r#"{"response":"real answer","structured_output":{"count":392}}"#;
        check_parse(stale, false, false, Some("real answer"));
        check_parse(stale, true, false, Some("{\n  \"count\": 392\n}"));
        let empty = r#"{"response":"","structured_output":{"count":392}}"#;
        check_parse(empty, false, false, Some("{\n  \"count\": 392\n}"));
        check_parse(r#"{"structured_output":"as is"}"#, true, false, Some("as is"));
        check_parse(r#"{"response":"x","structured_output":null}"#, true, false, Some("x"));
    }

    #[test]
    fn structured_output_stands_in_only_first() {
        let lines = "{\"response\":\"a\"}\n{\"structured_output\":{\"n\":1}}";
        check_parse(lines, false, false, Some("a"));
        let lines = "{\"structured_output\":[1]}\n{\"response\":\"b\"}";
        check_parse(lines, false, false, Some("[\n  1\n]\n\nb"));
    }

    #[test]
    fn usage_line_on_plain_replies() {
        let text = r#"{"response":"hi","usage":{"input_tokens":1000,"output_tokens":20},"duration_seconds":2}"#;
        check_parse(text, false, true, Some("hi\n\n📊 [Tokens: 1,000 in, 20 out | 2.0s]"));
        check_parse(text, false, false, Some("hi"));
        let thinking = r#"{"response":"hi","usage":{"input_tokens":12345,"output_tokens":678,"thinking_tokens":4321},"duration_seconds":17.3}"#;
        check_parse(
            thinking,
            false,
            true,
            Some("hi\n\n📊 [Tokens: 12,345 in, 678 out (4321 thinking) | 17.3s]"),
        );
        let bare = r#"{"response":"hi","usage":{"thinking_tokens":0}}"#;
        check_parse(bare, false, true, Some("hi\n\n📊 [Tokens: 0 in, 0 out]"));
        let last_wins = "{\"response\":\"a\",\"usage\":{\"input_tokens\":1}}\n\
                         {\"usage\":{\"input_tokens\":2},\"duration_seconds\":0.25}\n\
                         {\"usage\":\"not an object\"}";
        check_parse(last_wins, false, true, Some("a\n\n📊 [Tokens: 2 in, 0 out | 0.3s]"));
    }

    #[test]
    fn usage_line_on_transcript_shaped_replies() {
        let text = "{\"type\":\"USER_INPUT\",\"source\":\"USER\",\"content\":\"q\"}\n\
            {\"type\":\"PLANNER_RESPONSE\",\"source\":\"MODEL\",\"status\":\"DONE\",\"content\":\"the answer\"}\n\
            {\"type\":\"TOOL\",\"source\":\"MODEL\",\"status\":\"DONE\",\"content\":\"tool\"}\n\
            {\"usage\":{\"input_tokens\":1000,\"output_tokens\":20},\"duration_seconds\":2.0}";
        check_parse(text, false, true, Some("the answer\n\n📊 [Tokens: 1,000 in, 20 out | 2.0s]"));
        check_parse(text, false, false, Some("the answer"));
    }

    #[test]
    fn transcript_stream_and_top_level_array() {
        let entries = json!([
            {"type":"USER_INPUT","source":"USER","status":"DONE","content":"q"},
            {"type":"PLANNER_RESPONSE","source":"MODEL","status":"RUNNING","content":"thinking"},
            {"type":"PLANNER_RESPONSE","source":"MODEL","status":"DONE","content":"DONE answer"}
        ]);
        check_parse(&entries.to_string(), false, false, Some("DONE answer"));
        let lines: Vec<String> = entries.as_array().unwrap().iter().map(Value::to_string).collect();
        check_parse(&lines.join("\n"), false, false, Some("DONE answer"));
    }

    #[test]
    fn never_a_usage_line_with_prefer_structured() {
        let text = r#"{"response":"","structured_output":{"count":9},"usage":{"input_tokens":5,"output_tokens":1}}"#;
        check_parse(text, true, true, Some("{\n  \"count\": 9\n}"));
    }

    #[test]
    fn appendix_b2_structured_output() {
        let result = json!({"conversation_id":"c2","status":"SUCCESS","response":"","structured_output":{"count":392},"usage":{"input_tokens":45000,"output_tokens":12}});
        let opts = RunOptions {
            json_schema: Some(json!({"type":"object","properties":{"count":{"type":"integer"}}})),
            include_usage: true,
            ..RunOptions::default()
        };
        let stdout =
            format!("{{\"event\":\"init\"}}\n{{\"event\":\"result\",\"result\":{result}}}\n");
        assert_eq!(
            direct_reply(&stdout, agy_result(&stdout, true), true, true, &opts).as_deref(),
            Some("{\n  \"count\": 392\n}")
        );
        assert_eq!(agy_conversation_id(&result).as_deref(), Some("c2"));
    }

    #[test]
    fn d10_schema_without_structured_output_has_no_usage_line() {
        let text = r#"{"response":"plain","usage":{"input_tokens":1000,"output_tokens":20}}"#;
        let opts = RunOptions {
            json_schema: Some(json!("{}")),
            include_usage: true,
            ..RunOptions::default()
        };
        assert_eq!(parse_reply(text, &opts).as_deref(), Some("plain"));
        let no_schema = RunOptions { include_usage: true, ..RunOptions::default() };
        assert_eq!(
            parse_reply(text, &no_schema).as_deref(),
            Some("plain\n\n📊 [Tokens: 1,000 in, 20 out]")
        );
    }

    #[test]
    fn direct_reply_paths() {
        let opts = RunOptions::default();
        assert_eq!(
            direct_reply(STREAM, agy_result(STREAM, true), true, true, &opts).as_deref(),
            Some("pong")
        );
        assert_eq!(direct_reply("", agy_result("", true), true, true, &opts), None);
        assert_eq!(
            direct_reply(
                r#"{"response":"j"}"#,
                agy_result(r#"{"response":"j"}"#, false),
                false,
                true,
                &opts
            )
            .as_deref(),
            Some("j")
        );
        assert_eq!(
            direct_reply("plain text", agy_result("plain text", false), false, true, &opts),
            None
        );
        assert_eq!(
            direct_reply(
                "  plain text \n",
                agy_result("  plain text \n", false),
                false,
                false,
                &opts
            )
            .as_deref(),
            Some("plain text")
        );
        assert_eq!(direct_reply(" \n", agy_result(" \n", false), false, false, &opts), None);
    }

    #[test]
    fn strip_script_noise_cases() {
        let raw = "Script started on 2026-01-01 [COMMAND=\"agy\"]\r\n{\"response\":\"hi\"}\r\nline\rtwo\r\n\
                   Script done on 2026-01-01 [COMMAND_EXIT_CODE=\"0\"]\r\n";
        assert_eq!(strip_script_noise(raw), "{\"response\":\"hi\"}\nline\ntwo");
        assert_eq!(strip_script_noise("  plain  "), "plain");
        assert_eq!(strip_script_noise(""), "");
    }

    #[test]
    fn models_from_output() {
        let stdout = r#"{"command":{"data":{"models":[{"id":"gemini-3.8-flash-high","label":"Gemini 3.8 Flash (High)"},{"id":"claude-sonnet-4-6"},{"label":"no id"},{"id":7}]}}}"#;
        let expect: Vec<(String, String)> = [
            ("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
            ("claude-sonnet-4-6", "claude-sonnet-4-6"),
            ("", "no id"),
            ("7", "7"),
        ]
        .into_iter()
        .map(|(id, label)| (id.to_string(), label.to_string()))
        .collect();
        assert_eq!(parse_models(stdout).unwrap(), expect);
        assert_eq!(models_or_fallback(Ok(stdout)), expect);
    }

    #[test]
    fn models_failures_fall_back() {
        assert!(parse_models("not json").is_err());
        assert!(parse_models(r#"{"command":{"data":{"models":[]}}}"#).is_err());
        assert!(parse_models(r#"{"command":{"data":{}}}"#).is_err());
        assert!(parse_models("[]").is_err());
        assert_eq!(models_or_fallback(Ok("{}")), fallback_models());
        assert_eq!(models_or_fallback(Err("spawn failed")), fallback_models());
        let fallback = fallback_models();
        assert_eq!(fallback.len(), 8);
        assert_eq!(fallback[0], ("gemini-3.8-flash-high".into(), "Gemini 3.8 Flash (High)".into()));
        assert_eq!(fallback[7], ("gemini-3.1-pro-low".into(), "Gemini 3.1 Pro (Low)".into()));
    }

    #[test]
    fn success_status_matches_unicode_upper_case() {
        let check =
            |s: &str| assert_eq!(upper_is_success(s), s.to_uppercase() == "SUCCESS", "{s:?}");
        for s in
            ["SUCCESS", "success", "Success", "ſucceſſ", "SUCCEßS", "SUCCE\u{FB06}S", "FAILED", ""]
        {
            check(s);
        }
        // Each letter of SUCCESS spelled some way, with the occasional stray character, chosen by a
        // small xorshift walk.
        let spellings: [&[&str]; 7] = [
            &["s", "S", "ſ", "ß", "\u{FB05}"],
            &["u", "U", "ü"],
            &["c", "C", "\u{FB00}"],
            &["c", "C", "ı"],
            &["e", "E", "é", "\u{FB01}"],
            &["s", "S", "ſ", "ß"],
            &["s", "S", "ſ", "\u{FB06}", "\u{212A}"],
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..5000 {
            let mut s = String::new();
            for letter in spellings {
                if next(8) > 0 {
                    s.push_str(letter[next(letter.len())]);
                }
            }
            check(&s);
        }
    }

    #[test]
    fn grouped_numbers() {
        let check = |value: Value, expect: &str| assert_eq!(grouped(&value), expect, "{value}");
        check(json!(0), "0");
        check(json!(999), "999");
        check(json!(1000), "1,000");
        check(json!(12345), "12,345");
        check(json!(1234567), "1,234,567");
        check(json!(-1234), "-1,234");
        check(json!(1234.5), "1,234.5");
        check(json!(null), "0");
        check(json!("12"), "0");
    }
}
