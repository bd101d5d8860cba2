//! Log redaction: the shapes that stand in for tool arguments and CLI argv in log lines
//! with lengths counted in UTF-16 code units, as the original counted them.

use serde_json::{Map, Value};

/// Length of `s` as JavaScript counts it: UTF-16 code units (a character outside the BMP, four
/// bytes in UTF-8, counts 2). ASCII text, the common case for prompts, is its byte length.
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().count() + s.bytes().filter(|&b| b >= 0xF0).count()
}

/// The flags the relay passes with a value in the next argv element. That element is the caller's
/// text (or the relay's own choice) and is only ever logged as its length, even when it looks like
/// a flag (`--model --sk-abc` logs `--model <7 chars>`).
const VALUE_FLAGS: &[&str] = &[
    "-p",
    "-m",
    "--model",
    "--effort",
    "--json-schema",
    "--mode",
    "--add-dir",
    "--agent",
    "--conversation",
    "--input-format",
    "--output-format",
    "--print-timeout",
];

/// The `<shape>` of `Tool <name>(<shape>)`: one `key=...` entry per argument in the
/// order received, joined by single spaces, keys with their control characters escaped. A string
/// value shows only its length (`key=<N chars>`), an array its item count (`key=[N items]`), an
/// object its key count (`key={N keys}`); numbers, booleans and `null` show as JSON. Missing or
/// non-object arguments give an empty shape.
pub fn invocation_shape(map: &Map<String, Value>) -> String {
    let entries: Vec<String> = map
        .iter()
        .map(|(key, value)| {
            let shape = match value {
                Value::String(text) => chars_placeholder(text),
                Value::Array(items) => format!("[{} items]", items.len()),
                Value::Object(object) => format!("{{{} keys}}", object.len()),
                other => other.to_string(),
            };
            format!("{}={shape}", escape_controls(key))
        })
        .collect();
    entries.join(" ")
}

/// The `<shape>` of `Starting: <command> <shape>`: argv elements joined by single
/// spaces, each kept verbatim when it looks like a flag (`^--?[\w-]+(=[\w.,:/@-]*)?$`, ASCII `\w`)
/// and does not follow one of `VALUE_FLAGS`, otherwise replaced by `<N chars>`.
pub fn argv_shape(args: &[String]) -> String {
    let mut after_value_flag = false;
    let shaped: Vec<String> = args
        .iter()
        .map(|arg| {
            let shown = !after_value_flag && is_plain_flag(arg);
            after_value_flag = shown && VALUE_FLAGS.contains(&arg.as_str());
            if shown { arg.clone() } else { chars_placeholder(arg) }
        })
        .collect();
    shaped.join(" ")
}

/// `text` with every control character escaped (`\n`, `\u{1b}`, ...), so a logged name can never
/// start a line of its own.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

/// `<N chars>` with N the UTF-16 length of `text`.
fn chars_placeholder(text: &str) -> String {
    format!("<{} chars>", utf16_len(text))
}

/// Hand-written matcher for `^--?[\w-]+(=[\w.,:/@-]*)?$` with ASCII `\w`. The optional second
/// dash needs no special case: `-` is also in the name class, so the pattern is equivalent to one
/// dash, a non-empty run of `[\w-]`, then either the end or `=` and a run of value characters.
fn is_plain_flag(arg: &str) -> bool {
    let Some(rest) = arg.strip_prefix('-') else {
        return false;
    };
    let (name, value) = match rest.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (rest, None),
    };
    if name.is_empty() || !name.bytes().all(|b| is_word_byte(b) || b == b'-') {
        return false;
    }
    match value {
        None => true,
        Some(value) => value.bytes().all(|b| is_word_byte(b) || b".,:/@-".contains(&b)),
    }
}

/// ASCII `\w`: letters, digits and underscore.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_len_matches_encode_utf16() {
        for s in
            ["", "abc", "é", "日本語", "🙂", "a🙂b\u{10FFFF}", "\u{7FF}\u{800}\u{FFFF}\u{10000}"]
        {
            assert_eq!(utf16_len(s), s.encode_utf16().count(), "{s:?}");
        }
    }

    use serde_json::json;

    fn check_argv(args: &[&str], expected: &str) {
        let args: Vec<String> = args.iter().map(|it| it.to_string()).collect();
        assert_eq!(argv_shape(&args), expected);
    }

    fn check_flag(arg: &str, kept: bool) {
        assert_eq!(is_plain_flag(arg), kept, "{arg:?}");
    }

    fn check_shape(args: Value, expected: &str) {
        assert_eq!(invocation_shape(args.as_object().unwrap()), expected);
    }

    #[test]
    fn utf16_len_counts_code_units() {
        assert_eq!(utf16_len(""), 0);
        assert_eq!(utf16_len("hello"), 5);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("🧵"), 2);
        assert_eq!(utf16_len("⚠️"), 2);
        assert_eq!(utf16_len("a🎉b"), 4);
        assert_eq!(utf16_len("👍🏽"), 4);
    }

    #[test]
    fn invocation_shape_spec_examples() {
        let prompt = "x".repeat(412);
        check_shape(
            json!({"prompt": prompt, "effort": "high", "changeMode": true}),
            "prompt=<412 chars> effort=<4 chars> changeMode=true",
        );
        check_shape(
            json!({"prompt": "y".repeat(47), "model": "gemini-3.8-flash-high", "changeMode": true}),
            "prompt=<47 chars> model=<21 chars> changeMode=true",
        );
        check_shape(json!({}), "");
        check_shape(
            json!({"cacheKey": "abcd1234", "chunkIndex": 2}),
            "cacheKey=<8 chars> chunkIndex=2",
        );
    }

    #[test]
    fn invocation_shape_keeps_received_order() {
        check_shape(json!({"zeta": 1, "alpha": "ab"}), "zeta=1 alpha=<2 chars>");
    }

    #[test]
    fn invocation_shape_counts_arrays_and_objects_and_shows_scalars() {
        check_shape(
            json!({
                "addDirs": ["../lib", "src"],
                "jsonSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "chunkIndex": 1.5,
                "agent": null,
                "sandbox": false,
            }),
            "addDirs=[2 items] jsonSchema={2 keys} chunkIndex=1.5 agent=null sandbox=false",
        );
    }

    #[test]
    fn invocation_shape_escapes_control_characters_in_keys() {
        check_shape(
            json!({"a\n[GMCPT] Fatal error: forged": 1}),
            "a\\n[GMCPT] Fatal error: forged=1",
        );
    }

    #[test]
    fn argv_values_are_lengths_even_when_they_look_like_flags() {
        check_argv(
            &["--model", "--sk-abc=def", "--agent", "--x", "--sandbox", "-p", "--version"],
            "--model <12 chars> --agent <3 chars> --sandbox -p <9 chars>",
        );
        check_argv(
            &["--disable-slash-commands", "--conversation", "-c1"],
            "--disable-slash-commands --conversation <3 chars>",
        );
    }

    #[test]
    fn invocation_shape_counts_emoji_in_utf16() {
        check_shape(json!({"prompt": "🧵 hi"}), "prompt=<5 chars>");
    }

    #[test]
    fn invocation_shape_never_shows_string_values() {
        let shape = invocation_shape(
            json!({"prompt": "secret body", "model": "sonnet"}).as_object().unwrap(),
        );
        assert!(!shape.contains("secret"));
        assert!(!shape.contains("sonnet"));
    }

    #[test]
    fn invocation_shape_of_missing_or_non_object_arguments_is_empty() {
        assert_eq!(invocation_shape(&Map::new()), "");
    }

    #[test]
    fn argv_shape_spec_example() {
        check_argv(
            &["--model", "gemini-3.8-flash-high", "--effort", "high"],
            "--model <21 chars> --effort <4 chars>",
        );
        check_argv(
            &[
                "--disable-slash-commands",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--print-timeout",
                "2640s",
            ],
            "--disable-slash-commands --input-format <11 chars> --output-format <11 chars> \
             --print-timeout <5 chars>",
        );
    }

    #[test]
    fn argv_shape_command_executor_case() {
        let body = "Explain the meaning of life in one sentence";
        check_argv(
            &["-p", body, "--output-format=json", "--model", "sonnet"],
            "-p <43 chars> --output-format=json --model <6 chars>",
        );
        let args = vec!["-p".to_string(), body.to_string()];
        assert!(!argv_shape(&args).contains("Explain"));
    }

    #[test]
    fn argv_shape_of_nothing_is_empty() {
        check_argv(&[], "");
    }

    #[test]
    fn argv_shape_counts_emoji_in_utf16() {
        check_argv(&["-p", "🎉"], "-p <2 chars>");
    }

    #[test]
    fn flags_kept() {
        check_flag("-p", true);
        check_flag("-s", true);
        check_flag("--model", true);
        check_flag("--dangerously-skip-permissions", true);
        check_flag("--output-format=json", true);
        check_flag("--x=a.b,c:d/e@f-g_h", true);
        check_flag("--flag=", true);
        check_flag("--", true);
        check_flag("---x", true);
        check_flag("-_", true);
        check_flag("--=x", true);
    }

    #[test]
    fn non_flags_replaced() {
        check_flag("", false);
        check_flag("-", false);
        check_flag("p", false);
        check_flag("sonnet", false);
        check_flag("/usage", false);
        check_flag("-=x", false);
        check_flag("--a b", false);
        check_flag("--model=a b", false);
        check_flag("--x=a=b", false);
        check_flag("--x=\"q\"", false);
        check_flag("--é", false);
        check_flag("--x=é", false);
        check_flag("-p\n", false);
        check_flag(" -p", false);
    }
}
