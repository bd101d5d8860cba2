//! The agy (Antigravity CLI) backend: capabilities, argv, output and transcript parsing (pure), and
//! the run ladder in `run`, the only part that spawns (through the executor).

pub mod args;
pub mod caps;
pub mod output;
pub mod run;
pub mod transcript;

use serde_json::Value;

use crate::decimal;

/// The per-call options of an agy run, as the tools hand them over (SPEC §3.4.3).
///
/// Empty strings mean "not set", like absent values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgyOptions {
    /// Model id or alias; normalized by `args::normalize_model`.
    pub model: Option<String>,
    /// Reasoning effort (`low`, `medium`, `high`).
    pub effort: Option<String>,
    /// Structured output schema: a string is sent as given, anything else as compact JSON.
    pub json_schema: Option<Value>,
    /// Execution mode (`accept-edits`, `plan`).
    pub mode: Option<String>,
    /// Extra workspace directories; empty entries are skipped.
    pub add_dirs: Vec<String>,
    /// Custom agent name.
    pub agent: Option<String>,
    /// When false, `--disable-slash-commands` is sent (if advertised).
    pub allow_slash_commands: bool,
    /// Conversation to resume.
    pub conversation_id: Option<String>,
    /// Forward `--sandbox`.
    pub sandbox: bool,
    /// Forward `--dangerously-skip-permissions` (approval mode `yolo`).
    pub skip_permissions: bool,
    /// The caller asked for the `📊 [Tokens: …]` line.
    pub include_usage: bool,
}

impl AgyOptions {
    /// The `--json-schema` value: a non-empty string as given, any other truthy value as compact JSON.
    pub fn json_schema_arg(&self) -> Option<String> {
        let schema = self.json_schema.as_ref()?;
        if !truthy(schema) {
            return None;
        }
        match schema {
            Value::String(text) => Some(text.clone()),
            other => serde_json::to_string(other).ok(),
        }
    }

    /// Whether a structured output beats every other reply field (a schema was given).
    pub fn prefer_structured(&self) -> bool {
        self.json_schema_arg().is_some()
    }

    /// Whether the usage line is appended: only when asked for and never with a JSON schema (D10).
    pub fn usage_line_wanted(&self) -> bool {
        self.include_usage && !self.prefer_structured()
    }
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `0` and `""` are false.
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// JavaScript `String(value)` for a JSON value (numbers printed the way JS prints them).
pub(crate) fn js_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => js_number(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|it| if it.is_null() { String::new() } else { js_string(it) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

/// JavaScript's default rendering of a finite number in the common range (`1.0` → `1`, `-0` → `0`).
pub(crate) fn js_number(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        return decimal::fixed(f, 0);
    }
    decimal::display(f)
}

/// JavaScript regex `\s`: ASCII whitespace plus the Unicode space separators and BOM.
pub(crate) fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{000B}' | '\u{000C}' | '\r' | ' ' | '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn json_schema_arg_string_object_and_empty() {
        let mut opts = AgyOptions::default();
        assert_eq!(opts.json_schema_arg(), None);
        opts.json_schema = Some(json!(""));
        assert_eq!(opts.json_schema_arg(), None);
        opts.json_schema = Some(json!("{\"type\": \"object\"}"));
        assert_eq!(opts.json_schema_arg().as_deref(), Some("{\"type\": \"object\"}"));
        opts.json_schema = Some(json!({"type":"object","properties":{"a":{"type":"string"}}}));
        assert_eq!(
            opts.json_schema_arg().as_deref(),
            Some(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#)
        );
    }

    #[test]
    fn usage_line_never_with_a_schema() {
        let mut opts = AgyOptions { include_usage: true, ..AgyOptions::default() };
        assert!(opts.usage_line_wanted());
        assert!(!opts.prefer_structured());
        opts.json_schema = Some(json!({"type":"object"}));
        assert!(!opts.usage_line_wanted());
        assert!(opts.prefer_structured());
        opts.include_usage = false;
        assert!(!opts.usage_line_wanted());
    }

    #[test]
    fn js_string_and_truthy() {
        assert_eq!(js_string(&json!(5)), "5");
        assert_eq!(js_string(&json!(1.0)), "1");
        assert_eq!(js_string(&json!(1.5)), "1.5");
        assert_eq!(js_string(&json!(-0.0)), "0");
        assert_eq!(js_string(&json!("x")), "x");
        assert_eq!(js_string(&json!(true)), "true");
        assert_eq!(js_string(&json!({"a":1})), "[object Object]");
        assert_eq!(js_string(&json!([1, null, "b"])), "1,,b");
        for falsy in [json!(null), json!(false), json!(0), json!(0.0), json!("")] {
            assert!(!truthy(&falsy), "{falsy}");
        }
        for t in [json!(true), json!(1), json!(" "), json!([]), json!({})] {
            assert!(truthy(&t), "{t}");
        }
    }

    #[test]
    fn js_space_matches_the_regex_class() {
        for c in [' ', '\t', '\n', '\r', '\u{000B}', '\u{000C}', '\u{00A0}', '\u{2003}', '\u{FEFF}']
        {
            assert!(js_space(c), "{c:?}");
        }
        for c in ['a', '-', '\u{0085}', '\u{200B}'] {
            assert!(!js_space(c), "{c:?}");
        }
    }
}
