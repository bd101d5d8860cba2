//! MCP prompts: every tool doubles as a prompt of the same name; `prompts/list` derives the
//! arguments from the tool schemas and `prompts/get` renders a one-line instruction,
//! converting argument values to text the way JavaScript's `String(value)` does.

use serde_json::{Map, Value, json};

use crate::js;
use crate::tools::catalog::ToolSpec;

/// The `prompts/list` result: one prompt per tool, in catalog order, with the arguments taken from
/// the tool's schema (gemini-fetch-chunk declares its single `prompt` argument explicitly).
pub fn prompts_list_result(specs: &[ToolSpec]) -> Value {
    let prompts: Vec<Value> = specs
        .iter()
        .map(|spec| {
            let mut prompt =
                json!({"name": spec.tool.name, "description": spec.tool.prompt_description});
            prompt["arguments"] = prompt_arguments(spec);
            prompt
        })
        .collect();
    let mut result = json!({});
    result["prompts"] = Value::Array(prompts);
    result
}

/// The `prompts/get` result for `name`, or `Unknown prompt: <name>` when no tool has that name.
/// Nothing is validated or executed: the arguments are only rendered into the message text.
pub fn prompts_get_result(
    specs: &[ToolSpec],
    name: &str,
    args: Option<&Map<String, Value>>,
) -> Result<Value, String> {
    let Some(spec) = specs.iter().find(|spec| spec.tool.name == name) else {
        return Err(format!("Unknown prompt: {name}"));
    };
    let text = prompt_message(spec.tool.name, args);
    Ok(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }))
}

/// The argument list of one prompt: the schema's properties in order (`gemini-fetch-chunk`
/// declares its own).
fn prompt_arguments(spec: &ToolSpec) -> Value {
    if spec.tool.name == "gemini-fetch-chunk" {
        return json!([{
            "name": "prompt",
            "description": "gemini-fetch-chunk cacheKey=<key> chunkIndex=<number>",
            "required": true,
        }]);
    }
    let schema = &spec.input_schema;
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return json!([]);
    };
    let arguments: Vec<Value> = properties
        .iter()
        .map(|(name, property)| {
            let description = match property.get("description").and_then(Value::as_str) {
                Some(text) => text.to_string(),
                None => format!("{name} parameter"),
            };
            json!({
                "name": name,
                "description": description,
                "required": required.contains(&name.as_str()),
            })
        })
        .collect();
    Value::Array(arguments)
}

/// `Use the <name> tool` plus the rendered arguments: a truthy `prompt` first, then every
/// other key in the order given, `[key]` for `true`, `(key: value)` for anything else but
/// `null` and `false`, which are skipped.
fn prompt_message(name: &str, args: Option<&Map<String, Value>>) -> String {
    let mut parts = Vec::new();
    if let Some(args) = args {
        if let Some(prompt) = args.get("prompt").filter(|it| js::truthy(it)) {
            parts.push(js::string(prompt));
        }
        for (key, value) in args {
            if key == "prompt" {
                continue;
            }
            match value {
                Value::Null | Value::Bool(false) => (),
                Value::Bool(true) => parts.push(format!("[{key}]")),
                other => parts.push(format!("({key}: {})", js::string(other))),
            }
        }
    }
    if parts.is_empty() {
        return format!("Use the {name} tool");
    }
    format!("Use the {name} tool: {}", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tools::catalog::tool_specs;

    fn check_message(name: &str, args: Value, expected: &str) {
        let specs = tool_specs(false);
        let args = args.as_object().cloned().expect("test arguments are an object");
        let result = prompts_get_result(&specs, name, Some(&args)).expect("known prompt");
        let expected_result = json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": expected}}],
        });
        assert_eq!(result, expected_result);
    }

    fn list_entry(list: &Value, name: &str) -> Value {
        let prompts = list["prompts"].as_array().expect("prompts array");
        prompts.iter().find(|it| it["name"] == name).cloned().expect("prompt listed")
    }

    #[test]
    fn get_spec_example_with_change_mode() {
        check_message(
            "gemini-ask",
            json!({"prompt": "Explain @src/index.ts", "model": "pro", "changeMode": true}),
            "Use the gemini-ask tool: Explain @src/index.ts (model: pro) [changeMode]",
        );
    }

    #[test]
    fn get_spec_example_with_false_flag() {
        check_message(
            "gemini-ask",
            json!({
                "prompt": "explain this",
                "model": "gemini-2.5-flash",
                "sandbox": true,
                "changeMode": false,
            }),
            "Use the gemini-ask tool: explain this (model: gemini-2.5-flash) [sandbox]",
        );
    }

    #[test]
    fn get_without_arguments() {
        check_message("gemini-help", json!({}), "Use the gemini-help tool");
        let specs = tool_specs(false);
        let result = prompts_get_result(&specs, "gemini-help", None).expect("known prompt");
        assert_eq!(result["messages"][0]["content"]["text"], "Use the gemini-help tool");
    }

    #[test]
    fn get_without_prompt_argument() {
        check_message("gemini-plan", json!({"task": "x"}), "Use the gemini-plan tool: (task: x)");
    }

    #[test]
    fn get_registry_case() {
        let specs = tool_specs(false);
        let args = json!({
            "prompt": "explain this",
            "model": "gemini-2.5-flash",
            "sandbox": true,
            "changeMode": false,
        });
        let result = prompts_get_result(&specs, "gemini-ask", args.as_object()).expect("known");
        let text = result["messages"][0]["content"]["text"].as_str().expect("text");
        assert!(text.starts_with("Use the gemini-ask tool: explain this"));
        assert!(text.contains("(model: gemini-2.5-flash)"));
        assert!(text.contains("[sandbox]"));
        assert!(!text.contains("changeMode"));
    }

    #[test]
    fn get_renders_by_json_type() {
        check_message(
            "gemini-ask",
            json!({
                "changeMode": "true",
                "chunkIndex": 2,
                "ratio": 1.5,
                "addDirs": ["a", "b", 3, null, ["c", "d"], {"k": 1}],
                "jsonSchema": {"type": "object"},
                "model": "",
                "agent": null,
                "zero": 0,
            }),
            "Use the gemini-ask tool: (changeMode: true) (chunkIndex: 2) (ratio: 1.5) \
             (addDirs: a,b,3,,c,d,[object Object]) (jsonSchema: [object Object]) (model: ) \
             (zero: 0)",
        );
    }

    #[test]
    fn get_skips_falsy_prompt_but_keeps_order_of_others() {
        check_message(
            "gemini-ask",
            json!({"model": "flash", "prompt": "", "sandbox": true}),
            "Use the gemini-ask tool: (model: flash) [sandbox]",
        );
        check_message("gemini-ask", json!({"prompt": 0}), "Use the gemini-ask tool");
        check_message(
            "gemini-ask",
            json!({"effort": "low", "prompt": "hi"}),
            "Use the gemini-ask tool: hi (effort: low)",
        );
    }

    #[test]
    fn get_converts_non_string_prompt() {
        check_message("gemini-ask", json!({"prompt": 42}), "Use the gemini-ask tool: 42");
        check_message("gemini-ask", json!({"prompt": true}), "Use the gemini-ask tool: true");
        check_message("gemini-ask", json!({"prompt": ["a", 1]}), "Use the gemini-ask tool: a,1");
    }

    #[test]
    fn get_unknown_prompt() {
        let specs = tool_specs(false);
        let err = prompts_get_result(&specs, "nope", None).expect_err("unknown prompt");
        assert_eq!(err, "Unknown prompt: nope");
        let err = prompts_get_result(&specs, "gemini-timeout-test", None).expect_err("gated");
        assert_eq!(err, "Unknown prompt: gemini-timeout-test");
        let specs = tool_specs(true);
        assert!(prompts_get_result(&specs, "gemini-timeout-test", None).is_ok());
    }

    #[test]
    fn list_matches_tools_in_order() {
        for test_tools in [false, true] {
            let specs = tool_specs(test_tools);
            let list = prompts_list_result(&specs);
            let names: Vec<&str> = list["prompts"]
                .as_array()
                .expect("prompts array")
                .iter()
                .map(|it| it["name"].as_str().expect("name"))
                .collect();
            let tool_names: Vec<&str> = specs.iter().map(|it| it.tool.name).collect();
            assert_eq!(names, tool_names);
        }
    }

    #[test]
    fn list_entries_have_exactly_three_keys() {
        let list = prompts_list_result(&tool_specs(true));
        assert_eq!(list.as_object().expect("object").len(), 1);
        for prompt in list["prompts"].as_array().expect("prompts array") {
            let keys: Vec<&String> = prompt.as_object().expect("object").keys().collect();
            assert_eq!(keys, ["name", "description", "arguments"]);
            assert!(prompt["description"].as_str().is_some_and(|it| !it.is_empty()));
        }
    }

    #[test]
    fn list_registry_case() {
        let list = prompts_list_result(&tool_specs(false));
        assert!(list_entry(&list, "gemini-ask")["description"].is_string());
        assert!(list_entry(&list, "gemini-brainstorm")["description"].is_string());
    }

    #[test]
    fn list_arguments_follow_schema() {
        let list = prompts_list_result(&tool_specs(false));
        let plan = list_entry(&list, "gemini-plan");
        let arguments = plan["arguments"].as_array().expect("arguments");
        let summary: Vec<(&str, bool)> = arguments
            .iter()
            .map(|it| (it["name"].as_str().expect("name"), it["required"] == true))
            .collect();
        assert_eq!(
            summary,
            [
                ("task", true),
                ("context", false),
                ("model", false),
                ("effort", false),
                ("addDirs", false),
                ("attachments", false),
                ("includeUsage", false),
            ]
        );
        assert_eq!(arguments[0]["description"], "The goal or feature to plan.");
        let keys: Vec<&String> = arguments[0].as_object().expect("object").keys().collect();
        assert_eq!(keys, ["name", "description", "required"]);
    }

    #[test]
    fn list_tools_without_properties_have_no_arguments() {
        let list = prompts_list_result(&tool_specs(false));
        for name in ["gemini-models", "gemini-doctor", "gemini-cancel", "gemini-help"] {
            assert_eq!(list_entry(&list, name)["arguments"], json!([]), "{name}");
        }
    }

    #[test]
    fn list_fetch_chunk_declares_its_argument() {
        let list = prompts_list_result(&tool_specs(false));
        let entry = list_entry(&list, "gemini-fetch-chunk");
        assert_eq!(entry["description"], "Fetch the next chunk of a response");
        assert_eq!(
            entry["arguments"],
            json!([{
                "name": "prompt",
                "description": "gemini-fetch-chunk cacheKey=<key> chunkIndex=<number>",
                "required": true,
            }])
        );
    }

    #[test]
    fn list_falls_back_to_parameter_description() {
        let spec = ToolSpec {
            tool: crate::tools::catalog::tool_specs(false)[0].tool,
            input_schema: json!({
                "type": "object",
                "properties": {"bare": {"type": "string"}},
                "required": [],
            }),
        };
        let list = prompts_list_result(&[spec]);
        assert_eq!(
            list["prompts"][0]["arguments"],
            json!([{"name": "bare", "description": "bare parameter", "required": false}])
        );
    }
}
