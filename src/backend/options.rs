//! The run options the model tools hand to a backend: model, effort, schema,
//! mode and the rest. Each backend honours what it can; `backend::run_with_backend` turns the rest
//! into notices.

use serde_json::Value;

use crate::js;

/// The per-call options of a model run, as the tools hand them over.
///
/// Empty strings mean "not set", like absent values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
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
    /// Files to attach, as written.
    pub attachments: Vec<String>,
    /// The refusal when an attachment lies in an `addDirs` entry and agy cannot add directories.
    pub outside_refusal: Option<String>,
}

impl RunOptions {
    /// The `--json-schema` value: a non-empty string as given, any other truthy value as compact JSON.
    pub fn json_schema_arg(&self) -> Option<String> {
        let schema = self.json_schema.as_ref()?;
        if !js::truthy(schema) {
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

    /// Whether the usage line is appended: only when asked for and never with a JSON schema.
    pub fn usage_line_wanted(&self) -> bool {
        self.include_usage && !self.prefer_structured()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn json_schema_arg_string_object_and_empty() {
        let mut opts = RunOptions::default();
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
        let mut opts = RunOptions { include_usage: true, ..RunOptions::default() };
        assert!(opts.usage_line_wanted());
        assert!(!opts.prefer_structured());
        opts.json_schema = Some(json!({"type":"object"}));
        assert!(!opts.usage_line_wanted());
        assert!(opts.prefer_structured());
        opts.include_usage = false;
        assert!(!opts.usage_line_wanted());
    }
}
