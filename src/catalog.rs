//! The tool catalog: names, descriptions and hand-written JSON input schemas of every tool, in
//! `tools/list` order, plus the `tools/list` result built from them.

use serde_json::{Value, json};

/// One registered tool: what `tools/list` and `prompts/list` show, and the schema that
/// `validate::validate` checks `tools/call` arguments against.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub prompt_description: &'static str,
    pub input_schema: Value,
}

/// Every tool in SPEC §2.1 order; `gemini-timeout-test` is appended only when `test_tools` is set
/// (the caller decides that from `GEMINI_MCP_TEST_TOOLS` at startup).
pub fn tool_specs(test_tools: bool) -> Vec<ToolSpec> {
    let mut specs = vec![
        gemini_ask(),
        gemini_plan(),
        gemini_image(),
        gemini_models(),
        gemini_doctor(),
        gemini_brainstorm(),
        gemini_fetch_chunk(),
        gemini_conversations(),
        gemini_cancel(),
        gemini_ping(),
        gemini_help(),
    ];
    if test_tools {
        specs.push(gemini_timeout_test());
    }
    specs
}

/// The `tools/list` result: `{"tools":[{"name","description","inputSchema"}, ...]}`, nothing else.
pub fn tools_list_result(specs: &[ToolSpec]) -> Value {
    let tools: Vec<Value> = specs
        .iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "inputSchema": spec.input_schema.clone(),
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// The schema of a tool that takes no arguments (anything sent is dropped by validation).
fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "required": []})
}

/// The reasoning-effort enum shared by gemini-ask, gemini-plan and gemini-brainstorm.
const EFFORT_VALUES: [&str; 3] = ["low", "medium", "high"];

fn gemini_ask() -> ToolSpec {
    ToolSpec {
        name: "gemini-ask",
        description: "Send one prompt to Gemini through the active backend CLI (the Antigravity CLI \
            `agy` by default, which can also answer with the Claude and GPT-OSS models it serves) and \
            return the model's answer. Use it for questions, code review, analysis, proposed edits \
            (changeMode) and structured JSON output (jsonSchema). Write @path (e.g. `@src/main.rs \
            explain this`, `@src`, `@src/**/*.ts`) to send file contents: the referenced files are \
            inlined into the prompt, and a reference outside the project directory fails the call. \
            When the backend reports a conversation, a plain-text reply ends with its \
            conversationId; pass it back as `conversationId` to continue that thread. For a phased \
            implementation blueprint use gemini-plan; for ideation use gemini-brainstorm.",
        prompt_description: "Ask Gemini a question or hand over a review, with optional model, \
            reasoning effort, read-only plan mode and structured output",
        input_schema: json!({
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The request for the model. @path tokens (a file, a directory, \
                        `@.` or a glob such as `@src/**/*.rs`) are replaced by the contents of those \
                        files; paths must stay inside the project directory.",
                },
                "model": {
                    "type": "string",
                    "description": "Model id or alias, e.g. `pro`, `flash` or `gemini-3.1-pro-high`. \
                        When omitted no model is requested and the CLI uses its own configured \
                        default (see gemini-models).",
                },
                "effort": {
                    "type": "string",
                    "enum": EFFORT_VALUES,
                    "description": "Reasoning effort: `low`, `medium` or `high` (agy only).",
                },
                "mode": {
                    "type": "string",
                    "enum": ["accept-edits", "plan"],
                    "description": "agy execution mode: `plan` keeps the run read-only, \
                        `accept-edits` lets the agent apply file edits itself.",
                },
                "jsonSchema": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "object", "additionalProperties": {}},
                    ],
                    "description": "JSON Schema (an object, or a string holding one) the answer \
                        must conform to; the reply is then the JSON document (agy only).",
                },
                "addDirs": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Extra workspace directories for the agent besides the project \
                        directory (agy `--add-dir`, one per entry).",
                },
                "conversationId": {
                    "type": "string",
                    "description": "Continue this earlier conversation: the id reported at the end \
                        of a previous gemini-ask reply or listed by gemini-conversations.",
                },
                "agent": {
                    "type": "string",
                    "description": "Name of a custom agy agent to run the prompt with.",
                },
                "allowSlashCommands": {
                    "type": "boolean",
                    "default": false,
                    "description": "Let a prompt starting with `/` run as an agy slash command \
                        (e.g. `/usage`) instead of being sent to the model as text.",
                },
                "skipPermissions": {
                    "type": "boolean",
                    "default": false,
                    "description": "Auto-approve every tool action of the agent \
                        (`--dangerously-skip-permissions`); use with care.",
                },
                "includeUsage": {
                    "type": "boolean",
                    "default": false,
                    "description": "Append a line with token usage and duration to the reply.",
                },
                "sandbox": {
                    "type": "boolean",
                    "default": false,
                    "description": "Ask the CLI to run its tools in a sandbox (agy `--sandbox`, \
                        gemini `-s`); agy cannot guarantee isolation in headless mode.",
                },
                "changeMode": {
                    "type": "boolean",
                    "default": false,
                    "description": "Ask for edits and get them back as exact replace-this-with-that \
                        blocks per file for you to apply; a long result is split into chunks \
                        fetched with gemini-fetch-chunk.",
                },
                "chunkIndex": {
                    "type": ["number", "string"],
                    "description": "changeMode only: 1-based index of the chunk to return; with \
                        chunkCacheKey it is served from the cache without a new model run.",
                },
                "chunkCacheKey": {
                    "type": "string",
                    "description": "changeMode only: the 8-character cache key a chunked changeMode \
                        reply reported; used together with chunkIndex.",
                },
            },
            "required": ["prompt"],
        }),
    }
}

fn gemini_plan() -> ToolSpec {
    ToolSpec {
        name: "gemini-plan",
        description: "Produce a read-only, phased implementation blueprint for one task: an \
            architecture and requirements analysis, then ordered phases with their dependencies, \
            edge cases, risks and verification steps, with code signatures where precision matters. \
            Runs in plan mode at high reasoning effort, so it never edits files. Put \
            constraints and background in `context`; @path references there are inlined as in \
            gemini-ask. Not for general questions or reviews (use gemini-ask).",
        prompt_description: "Create a detailed implementation blueprint using high-effort reasoning \
            and plan mode",
        input_schema: json!({
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The goal or feature to plan.",
                },
                "context": {
                    "type": "string",
                    "description": "Extra constraints, background or requirements; @path \
                        references are replaced by the file contents.",
                },
                "model": {
                    "type": "string",
                    "description": "Planning model id or alias; defaults to \
                        `gemini-3.8-flash-high`.",
                },
                "effort": {
                    "type": "string",
                    "enum": EFFORT_VALUES,
                    "default": "high",
                    "description": "Reasoning effort for the plan.",
                },
                "addDirs": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Extra directories the planner may read in addition to the \
                        project directory.",
                },
                "includeUsage": {
                    "type": "boolean",
                    "default": true,
                    "description": "Append a line with token usage and duration to the plan.",
                },
            },
            "required": ["task"],
        }),
    }
}

fn gemini_image() -> ToolSpec {
    ToolSpec {
        name: "gemini-image",
        description: "Generate an image from a text description through the Antigravity CLI's own \
            image generation tool. Choose the aspect ratio (default 1:1) and optionally the output \
            size; set outputPath to copy the finished image to a path inside the project directory. \
            Returns markdown with the image's file path and an embed of it.",
        prompt_description: "Generate an image with optional aspect ratio and local file output",
        input_schema: json!({
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Description of the image to generate.",
                },
                "aspectRatio": {
                    "type": "string",
                    "enum": [
                        "1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3", "5:4", "4:5", "21:9",
                        "4:1", "1:4", "8:1", "1:8",
                    ],
                    "default": "1:1",
                    "description": "Aspect ratio of the image.",
                },
                "size": {
                    "type": "string",
                    "enum": ["512", "1K", "2K", "4K"],
                    "description": "Output size of the image; left to the model when omitted.",
                },
                "outputPath": {
                    "type": "string",
                    "description": "Where to copy the generated image, relative to the project \
                        directory (e.g. `assets/logo.png`); it may not leave the project.",
                },
            },
            "required": ["prompt"],
        }),
    }
}

fn gemini_models() -> ToolSpec {
    ToolSpec {
        name: "gemini-models",
        description: "List the models the active backend offers, the default model choices of each \
            tool, which features the backend supports (model selection, reasoning effort, structured \
            output, agent modes, sandbox isolation) and any backend notices. Takes no arguments and \
            runs no model turn.",
        prompt_description: "List available models and backend capabilities",
        input_schema: empty_schema(),
    }
}

fn gemini_doctor() -> ToolSpec {
    ToolSpec {
        name: "gemini-doctor",
        description: "Diagnose the installation: which backend is active and why, whether the \
            Antigravity CLI (agy) and the legacy Gemini CLI are installed and their versions, agy's \
            login and quota state, and an overall readiness verdict naming the next step when \
            something is missing. Takes no arguments and costs no tokens.",
        prompt_description: "Run diagnostic checks on the CLIs and report their status",
        input_schema: empty_schema(),
    }
}

fn gemini_brainstorm() -> ToolSpec {
    ToolSpec {
        name: "gemini-brainstorm",
        description: "Generate a list of distinct ideas for an open challenge using a named \
            creativity method (divergent, convergent, SCAMPER, design thinking, lateral, or auto to \
            combine them), optionally scoring each idea for feasibility, impact and innovation. \
            Ideation only: it neither plans an implementation nor edits files. Give domain, \
            constraints and existingContext to focus the ideas; @path references in the prompt are \
            inlined.",
        prompt_description: "Brainstorm ideas with a chosen creativity method and feasibility \
            analysis",
        input_schema: json!({
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The challenge or question to brainstorm about.",
                },
                "model": {
                    "type": "string",
                    "description": "Model id or alias; when omitted the CLI uses its own default.",
                },
                "effort": {
                    "type": "string",
                    "enum": EFFORT_VALUES,
                    "description": "Reasoning effort: `low`, `medium` or `high` (agy only).",
                },
                "methodology": {
                    "type": "string",
                    "enum": [
                        "divergent", "convergent", "scamper", "design-thinking", "lateral", "auto",
                    ],
                    "default": "auto",
                    "description": "Creativity method: `divergent` (many wild ideas), `convergent` \
                        (refine and prioritise), `scamper`, `design-thinking`, `lateral`, or `auto`.",
                },
                "domain": {
                    "type": "string",
                    "description": "Domain to focus on, e.g. `fintech` or `developer tools`.",
                },
                "constraints": {
                    "type": "string",
                    "description": "Limits the ideas must respect (budget, stack, time, rules).",
                },
                "existingContext": {
                    "type": "string",
                    "description": "Background: what exists already or has been tried.",
                },
                "ideaCount": {
                    "type": "integer",
                    "exclusiveMinimum": 0,
                    "default": 12,
                    "description": "How many ideas to generate.",
                },
                "includeAnalysis": {
                    "type": "boolean",
                    "default": true,
                    "description": "Score each idea for feasibility, impact and innovation (1-5) \
                        with a short assessment.",
                },
            },
            "required": ["prompt"],
        }),
    }
}

fn gemini_fetch_chunk() -> ToolSpec {
    ToolSpec {
        name: "gemini-fetch-chunk",
        description: "Retrieve one chunk of a long changeMode reply from gemini-ask, using the \
            cacheKey and chunkIndex that reply reported in its continuation line. Runs no model \
            turn. Chunks are kept for 10 minutes; after that, or after a relay restart, re-run the \
            original gemini-ask request.",
        prompt_description: "Fetch the next chunk of a response",
        input_schema: json!({
            "type": "object",
            "properties": {
                "cacheKey": {
                    "type": "string",
                    "description": "The 8-character lowercase hex cache key the chunked reply \
                        reported.",
                },
                "chunkIndex": {
                    "type": "number",
                    "minimum": 1,
                    "description": "1-based index of the chunk to return.",
                },
            },
            "required": ["cacheKey", "chunkIndex"],
        }),
    }
}

fn gemini_conversations() -> ToolSpec {
    ToolSpec {
        name: "gemini-conversations",
        description: "List the most recent agy conversations the relay can resume, newest first: \
            id, last activity time, working directory and the start of the first prompt. Pass an id \
            to gemini-ask as conversationId to continue that thread. Reads agy's local conversation \
            store and runs no model turn.",
        prompt_description: "List recent conversations and their ids",
        input_schema: json!({
            "type": "object",
            "properties": {
                "limit": {
                    "type": "integer",
                    "exclusiveMinimum": 0,
                    "maximum": 100,
                    "default": 20,
                    "description": "Maximum number of conversations to list (1-100).",
                },
            },
            "required": [],
        }),
    }
}

fn gemini_cancel() -> ToolSpec {
    ToolSpec {
        name: "gemini-cancel",
        description: "Stop every Gemini CLI or agy run the relay has in flight (for example a slow \
            gemini-ask, gemini-plan, gemini-brainstorm or gemini-image call). Each stopped call \
            returns an error to its caller; calls still waiting in the agy queue and everything else \
            are left alone. Reports how many runs were stopped.",
        prompt_description: "Cancel the Gemini runs in flight",
        input_schema: empty_schema(),
    }
}

fn gemini_ping() -> ToolSpec {
    ToolSpec {
        name: "gemini-ping",
        description: "Liveness check of the relay itself: returns `prompt` unchanged, or `Pong!` \
            when it is empty. Starts no CLI and no model; use gemini-doctor to check the CLIs.",
        prompt_description: "Echo a message to prove the relay is alive",
        input_schema: json!({
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "default": "",
                    "description": "Text to echo back.",
                },
            },
            "required": [],
        }),
    }
}

fn gemini_help() -> ToolSpec {
    ToolSpec {
        name: "gemini-help",
        description: "Show the active backend CLI's own `--help` text (agy or gemini), to see which \
            flags and features the installed version supports.",
        prompt_description: "Show the backend CLI's --help text",
        input_schema: empty_schema(),
    }
}

fn gemini_timeout_test() -> ToolSpec {
    ToolSpec {
        name: "gemini-timeout-test",
        description: "Test tool: hold the call open for `duration` milliseconds, reporting a step \
            every 5 seconds, to exercise progress keepalives and timeout handling. Runs no CLI.",
        prompt_description: "Test the timeout prevention with a long-running operation",
        input_schema: json!({
            "type": "object",
            "properties": {
                "duration": {
                    "type": "number",
                    "minimum": 10,
                    "description": "How long to run, in milliseconds (at least 10).",
                },
            },
            "required": ["duration"],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        let specs = tool_specs(true);
        specs.into_iter().find(|it| it.name == name).expect("tool in catalog")
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
        let names: Vec<&str> = tool_specs(false).iter().map(|it| it.name).collect();
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
        let names: Vec<&str> = tool_specs(true).iter().map(|it| it.name).collect();
        assert_eq!(names.len(), 12);
        assert_eq!(names[11], "gemini-timeout-test");
        assert!(!tool_specs(false).iter().any(|it| it.name == "gemini-timeout-test"));
    }

    #[test]
    fn registry_shape() {
        let specs = tool_specs(false);
        assert!(specs.len() >= 5);
        for spec in &specs {
            assert!(!spec.name.is_empty());
            assert!(!spec.description.is_empty());
            assert!(!spec.prompt_description.is_empty());
            assert_eq!(spec.input_schema["type"], "object");
            assert!(spec.input_schema["properties"].is_object());
            assert!(spec.input_schema["required"].is_array());
        }
        let exists = |name: &str| specs.iter().any(|it| it.name == name);
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
        assert!(spec("gemini-plan").description.contains("blueprint"));
    }

    #[test]
    fn descriptions_name_the_key_features() {
        let ask = spec("gemini-ask").description;
        for needle in ["@path", "conversationId", "gemini-plan", "gemini-brainstorm", "jsonSchema"]
        {
            assert!(ask.contains(needle), "gemini-ask description lacks {needle}");
        }
        assert!(spec("gemini-conversations").description.contains("conversationId"));
        assert!(spec("gemini-fetch-chunk").description.contains("10 minutes"));
        assert!(spec("gemini-ping").description.contains("gemini-doctor"));
    }

    #[test]
    fn descriptions_are_single_spaced() {
        for spec in tool_specs(true) {
            for text in [spec.description, spec.prompt_description] {
                assert!(!text.contains("  "), "{}: {text:?}", spec.name);
                assert!(!text.contains('\n'), "{}: {text:?}", spec.name);
            }
            let properties =
                spec.input_schema["properties"].as_object().cloned().unwrap_or_default();
            for property in properties.values() {
                let text = property["description"].as_str().unwrap_or_default();
                assert!(!text.contains("  ") && !text.contains('\n'), "{}: {text:?}", spec.name);
            }
        }
    }

    #[test]
    fn prompt_description_of_fetch_chunk() {
        assert_eq!(
            spec("gemini-fetch-chunk").prompt_description,
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
    fn tools_list_has_exactly_the_three_keys() {
        let specs = tool_specs(true);
        let list = tools_list_result(&specs);
        let top: Vec<&String> = list.as_object().expect("object").keys().collect();
        assert_eq!(top, ["tools"]);
        let tools = list["tools"].as_array().expect("tools array");
        assert_eq!(tools.len(), specs.len());
        for (tool, spec) in tools.iter().zip(&specs) {
            let keys: Vec<&String> = tool.as_object().expect("object").keys().collect();
            assert_eq!(keys, ["name", "description", "inputSchema"]);
            assert_eq!(tool["name"], spec.name);
            assert_eq!(tool["description"], spec.description);
            assert_eq!(tool["inputSchema"], spec.input_schema);
        }
    }

    #[test]
    fn tools_list_ping_wire_bytes() {
        let ping = spec("gemini-ping");
        let description = ping.input_schema["properties"]["prompt"]["description"].clone();
        let list = tools_list_result(&[ping]);
        let expected = format!(
            r#"{{"tools":[{{"name":"gemini-ping","description":{},"inputSchema":{{"type":"object","properties":{{"prompt":{{"type":"string","default":"","description":{}}}}},"required":[]}}}}]}}"#,
            json!(spec("gemini-ping").description),
            description
        );
        assert_eq!(list.to_string(), expected);
    }
}
