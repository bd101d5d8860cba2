//! The tool table: every tool's name, descriptions, hand-written JSON input schema (in
//! `src/tools/catalog.json`), annotations, run function and lane, in `tools/list` order, plus the
//! `tools/list` result built from them.

use serde_json::{Map, Value, json};

use crate::call::Ctx;
use crate::tools::{self, Lane, ask, brainstorm, doctor, image, models, plan};

/// A tool's run function: validated arguments in, the text of the result (or of the failure that
/// follows `Error executing <tool>: `) out.
pub type Run = fn(&Ctx<'_>, Map<String, Value>) -> Result<String, String>;

/// One tool of the table.
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub prompt_description: &'static str,
    pub run: Run,
    /// The lane of a call, from its validated arguments.
    pub lane: fn(&Map<String, Value>) -> Lane,
    /// Answered as a task when a modern request declares the tasks extension.
    pub task: bool,
    /// What a host may assume about the tool's effects (the README argues every value).
    pub hints: Hints,
    /// Whether a result can be a long model answer, which declares `MAX_RESULT_SIZE_CHARS`.
    pub long_answer: bool,
}

/// A tool's MCP annotations: `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`.
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// Reads, changes nothing, talks to nobody outside this machine.
const LOCAL_READ: Hints =
    Hints { read_only: true, destructive: false, idempotent: true, open_world: false };

/// Reads only, but asks a model or Google's service.
const REMOTE_READ: Hints =
    Hints { read_only: true, destructive: false, idempotent: true, open_world: true };

/// `_meta["anthropic/maxResultSizeChars"]` of the tools with long answers: Claude Code keeps a
/// result up to this many characters in the conversation (it clamps the key to 500,000) and saves
/// a longer one to a file that the model is pointed at; without the key it keeps about 50,000 and
/// shows the model a 2 KB preview of the rest (measured with Claude Code 2.1.332).
pub const MAX_RESULT_SIZE_CHARS: u64 = 500_000;

/// One registered tool with its parsed input schema: what `tools/list` and `prompts/list` show, and
/// what `validate::validate` checks `tools/call` arguments against.
pub struct ToolSpec {
    pub tool: &'static Tool,
    pub input_schema: Value,
}

/// Every tool in its `tools/list` order; `gemini-timeout-test` is appended only when `test_tools`
/// is set (the caller decides that from `GEMINI_MCP_TEST_TOOLS` at startup).
pub fn tool_specs(test_tools: bool) -> Vec<ToolSpec> {
    // The schemas are JSON text rather than `json!` literals: parsing them once is far smaller
    // code than building every map entry by hand, and `preserve_order` keeps the key order.
    let mut schemas = match serde_json::from_slice(SCHEMAS.as_bytes()) {
        Ok(Value::Object(schemas)) => schemas,
        _ => panic!("src/tools/catalog.json is not a JSON object"),
    };
    let count = if test_tools { TOOLS.len() } else { TOOLS.len() - 1 };
    TOOLS[..count]
        .iter()
        .map(|tool| ToolSpec {
            tool,
            input_schema: schemas.shift_remove(tool.name).unwrap_or_default(),
        })
        .collect()
}

/// The `tools/list` result: `{"tools":[{"name","description","inputSchema","annotations"[,
/// "_meta"]}, ...]}`, nothing else; `_meta` only on the tools with long answers.
pub fn tools_list_result(specs: &[ToolSpec]) -> Value {
    let tools: Vec<Value> = specs
        .iter()
        .map(|spec| {
            let tool = spec.tool;
            let hints = &tool.hints;
            let mut entry = json!({"name": tool.name, "description": tool.description});
            entry["inputSchema"] = spec.input_schema.clone();
            entry["annotations"] = json!({
                "readOnlyHint": hints.read_only,
                "destructiveHint": hints.destructive,
                "idempotentHint": hints.idempotent,
                "openWorldHint": hints.open_world,
            });
            if tool.long_answer {
                entry["_meta"] = json!({"anthropic/maxResultSizeChars": MAX_RESULT_SIZE_CHARS});
            }
            entry
        })
        .collect();
    let mut result = json!({});
    result["tools"] = Value::Array(tools);
    result
}

/// The input schema of every tool, keyed by tool name. A property's `description` is its last key.
const SCHEMAS: &str = include_str!("catalog.json");

fn inline(_: &Map<String, Value>) -> Lane {
    Lane::Inline
}

fn local(_: &Map<String, Value>) -> Lane {
    Lane::Local
}

fn worker(_: &Map<String, Value>) -> Lane {
    Lane::Worker
}

fn model(_: &Map<String, Value>) -> Lane {
    Lane::Model
}

/// Every tool in `tools/list` order; the last one is `gemini-timeout-test`. A tool's input schema
/// is the entry of the same name in `src/tools/catalog.json`.
static TOOLS: [Tool; 12] = [
    Tool {
        name: "gemini-ask",
        description: "Send a prompt to Gemini through the active CLI (agy by default, which also \
            serves Claude and GPT-OSS models) and return the answer: questions, reviews, analysis, \
            edits (changeMode), structured JSON (jsonSchema). `@path`, `@dir`, `@.` or a glob \
            inlines project files; a reference outside the project fails the call. A reply ends \
            with a conversationId to pass back for a follow-up. For plans use gemini-plan, for \
            ideas gemini-brainstorm.",
        prompt_description: "Ask Gemini a question or hand over a review, with optional model, \
            reasoning effort, read-only plan mode and structured output",
        run: ask::run,
        lane: ask::lane,
        task: true,
        hints: Hints { read_only: false, destructive: true, idempotent: false, open_world: true },
        long_answer: true,
    },
    Tool {
        name: "gemini-plan",
        description: "Read-only, phased implementation blueprint for one task: analysis, ordered \
            phases with dependencies, risks and verification steps, at high reasoning effort in \
            plan mode. Never edits files; not for general questions (use gemini-ask).",
        prompt_description: "Create a detailed implementation blueprint using high-effort reasoning \
            and plan mode",
        run: |ctx, args| plan::run(ctx, &args),
        lane: model,
        task: true,
        hints: REMOTE_READ,
        long_answer: true,
    },
    Tool {
        name: "gemini-image",
        description: "Generate an image from a description with agy's image tool: aspect ratio, \
            optional size, optional copy into the project (outputPath). Returns markdown with the \
            image's path.",
        prompt_description: "Generate an image with optional aspect ratio and local file output",
        run: |ctx, args| image::run(ctx, &args),
        lane: model,
        task: true,
        hints: Hints { read_only: false, destructive: true, idempotent: false, open_world: true },
        long_answer: true,
    },
    Tool {
        name: "gemini-models",
        description: "The active backend, its models and what it supports (model selection, \
            effort, structured output, modes, sandbox). No model turn.",
        prompt_description: "List available models and backend capabilities",
        run: |ctx, _| Ok(models::run(ctx)),
        lane: worker,
        task: false,
        hints: REMOTE_READ,
        long_answer: false,
    },
    Tool {
        name: "gemini-doctor",
        description: "Check the installation: active backend, agy and gemini CLI versions, agy's \
            login and quota, and a readiness verdict with the next step. Costs no tokens.",
        prompt_description: "Run diagnostic checks on the CLIs and report their status",
        run: |ctx, _| Ok(doctor::run(ctx).1),
        lane: worker,
        task: false,
        hints: REMOTE_READ,
        long_answer: false,
    },
    Tool {
        name: "gemini-brainstorm",
        description: "Distinct ideas for an open challenge with a creativity method (divergent, \
            convergent, SCAMPER, design thinking, lateral, auto), optionally scored for \
            feasibility, impact and innovation. Ideation only; `@path` inlines files.",
        prompt_description: "Brainstorm ideas with a chosen creativity method and feasibility \
            analysis",
        run: |ctx, args| brainstorm::run(ctx, &args),
        lane: model,
        task: true,
        hints: Hints { read_only: false, destructive: false, idempotent: false, open_world: true },
        long_answer: true,
    },
    Tool {
        name: "gemini-fetch-chunk",
        description: "Fetch one chunk of a long changeMode reply by the cacheKey and chunkIndex it \
            reported. No model turn; chunks are kept 10 minutes.",
        prompt_description: "Fetch the next chunk of a response",
        run: |ctx, args| tools::fetch_chunk(ctx, &args),
        lane: inline,
        task: false,
        hints: LOCAL_READ,
        long_answer: false,
    },
    Tool {
        name: "gemini-conversations",
        description: "Recent agy conversations (id, last activity, cwd, first prompt), newest \
            first, to continue with gemini-ask's conversationId. No model turn.",
        prompt_description: "List recent conversations and their ids",
        run: |ctx, args| tools::conversations(ctx, &args),
        lane: local,
        task: false,
        hints: LOCAL_READ,
        long_answer: false,
    },
    Tool {
        name: "gemini-cancel",
        description: "Stop every CLI run in flight (slow ask, plan, brainstorm or image calls); \
            each returns an error to its caller. Queued calls are left alone.",
        prompt_description: "Cancel the Gemini runs in flight",
        run: |ctx, args| tools::cancel(ctx, &args),
        lane: inline,
        task: false,
        hints: Hints { read_only: false, destructive: true, idempotent: true, open_world: false },
        long_answer: false,
    },
    Tool {
        name: "gemini-ping",
        description: "Echo `prompt` (or `Pong!`) from the relay itself, without any CLI. Use \
            gemini-doctor to check the CLIs.",
        prompt_description: "Echo a message to prove the relay is alive",
        run: |ctx, args| tools::ping(ctx, &args),
        lane: inline,
        task: false,
        hints: LOCAL_READ,
        long_answer: false,
    },
    Tool {
        name: "gemini-help",
        description: "The active CLI's own `--help`, to see which flags the installed version \
            supports.",
        prompt_description: "Show the backend CLI's --help text",
        run: |ctx, args| tools::help(ctx, &args),
        lane: worker,
        task: true,
        hints: LOCAL_READ,
        long_answer: false,
    },
    Tool {
        name: "gemini-timeout-test",
        description: "Test tool: hold the call open for `duration` milliseconds, reporting a step \
            every 5 seconds, to exercise progress keepalives and timeout handling. Runs no CLI.",
        prompt_description: "Test the timeout prevention with a long-running operation",
        run: |ctx, args| tools::timeout(ctx, &args),
        lane: worker,
        task: true,
        hints: LOCAL_READ,
        long_answer: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        let specs = tool_specs(true);
        specs.into_iter().find(|it| it.tool.name == name).expect("tool in catalog")
    }

    /// Compares a tool's schema with `expected`, which is written without the property
    /// descriptions; key order is compared too (via the serialized text). Every property must
    /// carry a non-empty description as its last key.
    fn check_schema(name: &str, expected: Value) {
        let mut schema = spec(name).input_schema;
        let keys: Vec<&String> = schema.as_object().expect("object schema").keys().collect();
        assert_eq!(keys, ["type", "properties", "required"], "{name}");
        let properties = schema["properties"].as_object_mut().expect("properties object");
        for (property_name, property) in properties.iter_mut() {
            let property = property.as_object_mut().expect("property schema object");
            let last = property.keys().next_back().cloned();
            assert_eq!(last.as_deref(), Some("description"), "{name}.{property_name}");
            let description = property.shift_remove("description").expect("description");
            assert!(
                description.as_str().is_some_and(|it| it.len() > 10),
                "{name}.{property_name} needs a real description"
            );
        }
        assert_eq!(schema.to_string(), expected.to_string(), "{name}");
    }

    #[test]
    fn order_without_test_tools() {
        let names: Vec<&str> = tool_specs(false).iter().map(|it| it.tool.name).collect();
        assert_eq!(
            names,
            [
                "gemini-ask",
                "gemini-plan",
                "gemini-image",
                "gemini-models",
                "gemini-doctor",
                "gemini-brainstorm",
                "gemini-fetch-chunk",
                "gemini-conversations",
                "gemini-cancel",
                "gemini-ping",
                "gemini-help",
            ]
        );
    }

    #[test]
    fn test_tool_only_when_requested() {
        let names: Vec<&str> = tool_specs(true).iter().map(|it| it.tool.name).collect();
        assert_eq!(names.len(), 12);
        assert_eq!(names[11], "gemini-timeout-test");
        assert!(!tool_specs(false).iter().any(|it| it.tool.name == "gemini-timeout-test"));
    }

    #[test]
    fn registry_shape() {
        let specs = tool_specs(false);
        assert!(specs.len() >= 5);
        for spec in &specs {
            assert!(!spec.tool.name.is_empty());
            assert!(!spec.tool.description.is_empty());
            assert!(!spec.tool.prompt_description.is_empty());
            assert_eq!(spec.input_schema["type"], "object");
            assert!(spec.input_schema["properties"].is_object());
            assert!(spec.input_schema["required"].is_array());
        }
        let exists = |name: &str| specs.iter().any(|it| it.tool.name == name);
        assert!(exists("gemini-ask"));
        assert!(exists("gemini-fetch-chunk"));
        assert!(!exists("nope"));
    }

    #[test]
    fn registry_required_cases() {
        assert_eq!(spec("gemini-ask").input_schema["required"], json!(["prompt"]));
        let ping = spec("gemini-ping").input_schema;
        assert!(ping["properties"]["prompt"].is_object());
        assert_eq!(ping["required"], json!([]));
    }

    #[test]
    fn plan_description_mentions_blueprint() {
        assert!(spec("gemini-plan").tool.description.contains("blueprint"));
    }

    #[test]
    fn descriptions_name_the_key_features() {
        let ask = spec("gemini-ask").tool.description;
        for needle in ["@path", "conversationId", "gemini-plan", "gemini-brainstorm", "jsonSchema"]
        {
            assert!(ask.contains(needle), "gemini-ask description lacks {needle}");
        }
        assert!(spec("gemini-conversations").tool.description.contains("conversationId"));
        assert!(spec("gemini-fetch-chunk").tool.description.contains("10 minutes"));
        assert!(spec("gemini-ping").tool.description.contains("gemini-doctor"));
    }

    #[test]
    fn descriptions_are_single_spaced() {
        for spec in tool_specs(true) {
            for text in [spec.tool.description, spec.tool.prompt_description] {
                assert!(!text.contains("  "), "{}: {text:?}", spec.tool.name);
                assert!(!text.contains('\n'), "{}: {text:?}", spec.tool.name);
            }
            let properties =
                spec.input_schema["properties"].as_object().cloned().unwrap_or_default();
            for property in properties.values() {
                let text = property["description"].as_str().unwrap_or_default();
                assert!(
                    !text.contains("  ") && !text.contains('\n'),
                    "{}: {text:?}",
                    spec.tool.name
                );
            }
        }
    }

    #[test]
    fn prompt_description_of_fetch_chunk() {
        assert_eq!(
            spec("gemini-fetch-chunk").tool.prompt_description,
            "Fetch the next chunk of a response"
        );
    }

    #[test]
    fn schema_gemini_ask() {
        check_schema(
            "gemini-ask",
            json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "minLength": 1},
                    "model": {"type": "string"},
                    "effort": {"type": "string", "enum": ["low", "medium", "high"]},
                    "mode": {"type": "string", "enum": ["accept-edits", "plan"]},
                    "jsonSchema": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "object", "additionalProperties": {}},
                        ],
                    },
                    "addDirs": {"type": "array", "items": {"type": "string"}},
                    "attachments": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
                    "conversationId": {"type": "string"},
                    "agent": {"type": "string"},
                    "allowSlashCommands": {"type": "boolean", "default": false},
                    "skipPermissions": {"type": "boolean", "default": false},
                    "includeUsage": {"type": "boolean", "default": false},
                    "sandbox": {"type": "boolean", "default": false},
                    "changeMode": {"type": "boolean", "default": false},
                    "chunkIndex": {"type": ["number", "string"]},
                    "chunkCacheKey": {"type": "string"},
                },
                "required": ["prompt"],
            }),
        );
    }

    #[test]
    fn schema_gemini_plan() {
        check_schema(
            "gemini-plan",
            json!({
                "type": "object",
                "properties": {
                    "task": {"type": "string", "minLength": 1},
                    "context": {"type": "string"},
                    "model": {"type": "string"},
                    "effort": {"type": "string", "enum": ["low", "medium", "high"], "default": "high"},
                    "addDirs": {"type": "array", "items": {"type": "string"}},
                    "attachments": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
                    "includeUsage": {"type": "boolean", "default": true},
                },
                "required": ["task"],
            }),
        );
    }

    #[test]
    fn schema_gemini_image() {
        check_schema(
            "gemini-image",
            json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "minLength": 1},
                    "aspectRatio": {
                        "type": "string",
                        "enum": [
                            "1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9",
                            "4:1", "1:4", "8:1", "1:8",
                        ],
                        "default": "1:1",
                    },
                    "size": {"type": "string", "enum": ["512", "1K", "2K", "4K"]},
                    "outputPath": {"type": "string"},
                },
                "required": ["prompt"],
            }),
        );
        assert!(spec("gemini-image").input_schema["properties"].get("model").is_none());
    }

    #[test]
    fn schema_gemini_brainstorm() {
        check_schema(
            "gemini-brainstorm",
            json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "minLength": 1},
                    "model": {"type": "string"},
                    "effort": {"type": "string", "enum": ["low", "medium", "high"]},
                    "attachments": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
                    "methodology": {
                        "type": "string",
                        "enum": [
                            "divergent", "convergent", "scamper", "design-thinking", "lateral",
                            "auto",
                        ],
                        "default": "auto",
                    },
                    "domain": {"type": "string"},
                    "constraints": {"type": "string"},
                    "existingContext": {"type": "string"},
                    "ideaCount": {"type": "integer", "exclusiveMinimum": 0, "default": 12},
                    "includeAnalysis": {"type": "boolean", "default": true},
                },
                "required": ["prompt"],
            }),
        );
    }

    #[test]
    fn schema_gemini_fetch_chunk() {
        check_schema(
            "gemini-fetch-chunk",
            json!({
                "type": "object",
                "properties": {
                    "cacheKey": {"type": "string"},
                    "chunkIndex": {"type": "number", "minimum": 1},
                },
                "required": ["cacheKey", "chunkIndex"],
            }),
        );
    }

    #[test]
    fn schema_gemini_conversations() {
        check_schema(
            "gemini-conversations",
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "exclusiveMinimum": 0, "maximum": 100, "default": 20},
                },
                "required": [],
            }),
        );
    }

    #[test]
    fn schema_gemini_ping() {
        check_schema(
            "gemini-ping",
            json!({
                "type": "object",
                "properties": {"prompt": {"type": "string", "default": ""}},
                "required": [],
            }),
        );
    }

    #[test]
    fn schema_gemini_timeout_test() {
        check_schema(
            "gemini-timeout-test",
            json!({
                "type": "object",
                "properties": {"duration": {"type": "number", "minimum": 10}},
                "required": ["duration"],
            }),
        );
    }

    #[test]
    fn schemas_without_arguments() {
        for name in ["gemini-models", "gemini-doctor", "gemini-cancel", "gemini-help"] {
            check_schema(name, json!({"type": "object", "properties": {}, "required": []}));
        }
    }

    #[test]
    fn tools_list_entries_have_exactly_their_keys() {
        let specs = tool_specs(true);
        let list = tools_list_result(&specs);
        let top: Vec<&String> = list.as_object().expect("object").keys().collect();
        assert_eq!(top, ["tools"]);
        let tools = list["tools"].as_array().expect("tools array");
        assert_eq!(tools.len(), specs.len());
        for (tool, spec) in tools.iter().zip(&specs) {
            let keys: Vec<&String> = tool.as_object().expect("object").keys().collect();
            if spec.tool.long_answer {
                assert_eq!(keys, ["name", "description", "inputSchema", "annotations", "_meta"]);
            } else {
                assert_eq!(keys, ["name", "description", "inputSchema", "annotations"]);
            }
            assert_eq!(tool["name"], spec.tool.name);
            assert_eq!(tool["description"], spec.tool.description);
            assert_eq!(tool["inputSchema"], spec.input_schema);
        }
    }

    /// Every tool's four hints, in `tools/list` order: read-only, destructive, idempotent, open
    /// world. The README's annotation table argues each value.
    #[test]
    fn annotations_of_every_tool() {
        let list = tools_list_result(&tool_specs(true));
        let table: Vec<(String, [bool; 4])> = list["tools"]
            .as_array()
            .expect("tools array")
            .iter()
            .map(|tool| {
                let annotations = tool["annotations"].as_object().expect("annotations object");
                let keys: Vec<&String> = annotations.keys().collect();
                assert_eq!(
                    keys,
                    ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]
                );
                let hint = |key: &str| annotations[key].as_bool().expect("a boolean hint");
                let name = tool["name"].as_str().expect("name").to_string();
                (
                    name,
                    ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]
                        .map(hint),
                )
            })
            .collect();
        let expected = [
            ("gemini-ask", [false, true, false, true]),
            ("gemini-plan", [true, false, true, true]),
            ("gemini-image", [false, true, false, true]),
            ("gemini-models", [true, false, true, true]),
            ("gemini-doctor", [true, false, true, true]),
            ("gemini-brainstorm", [false, false, false, true]),
            ("gemini-fetch-chunk", [true, false, true, false]),
            ("gemini-conversations", [true, false, true, false]),
            ("gemini-cancel", [false, true, true, false]),
            ("gemini-ping", [true, false, true, false]),
            ("gemini-help", [true, false, true, false]),
            ("gemini-timeout-test", [true, false, true, false]),
        ]
        .map(|(name, hints)| (name.to_string(), hints));
        assert_eq!(table, expected);
    }

    #[test]
    fn only_the_model_answers_declare_a_result_size() {
        let list = tools_list_result(&tool_specs(true));
        let declaring: Vec<&str> = list["tools"]
            .as_array()
            .expect("tools array")
            .iter()
            .filter(|tool| tool.get("_meta").is_some())
            .map(|tool| {
                assert_eq!(tool["_meta"], json!({"anthropic/maxResultSizeChars": 500_000}));
                tool["name"].as_str().expect("name")
            })
            .collect();
        assert_eq!(declaring, ["gemini-ask", "gemini-plan", "gemini-image", "gemini-brainstorm"]);
    }

    #[test]
    fn tools_list_ping_wire_bytes() {
        let ping = spec("gemini-ping");
        let description = ping.input_schema["properties"]["prompt"]["description"].clone();
        let list = tools_list_result(&[ping]);
        let expected = format!(
            r#"{{"tools":[{{"name":"gemini-ping","description":{},"inputSchema":{{"type":"object","properties":{{"prompt":{{"type":"string","default":"","description":{}}}}},"required":[]}},"annotations":{{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}}}]}}"#,
            json!(spec("gemini-ping").tool.description),
            description
        );
        assert_eq!(list.to_string(), expected);
    }
}
