//! The MCP tools: argument validation, then dispatch by name. One module per tool owns its argument
//! handling and output texts; this file owns the table and the tools too small for a file.

pub mod ask;
pub mod brainstorm;
pub mod doctor;
pub mod image;
pub mod models;
pub mod plan;
pub mod timeout_test;

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::backend::agy::AgyOptions;
use crate::backend::agy::transcript::Store;
use crate::backend::{self, Backend, agy, gemini};
use crate::call::Ctx;
use crate::catalog::ToolSpec;
use crate::{changemode, redact, validate};

/// Runs one tool call: validates the arguments, then runs the tool. `Err` is the message the
/// client sees after `Error executing <tool>: `.
pub fn call(ctx: &Ctx<'_>, spec: &ToolSpec, args: Map<String, Value>) -> Result<String, String> {
    let args = validate::validate(spec.name, &spec.input_schema, args)?;
    match spec.name {
        "gemini-ask" => ask::run(ctx, args),
        "gemini-plan" => plan::run(ctx, &args),
        "gemini-image" => image::run(ctx, &args),
        "gemini-models" => Ok(models::run(ctx)),
        "gemini-doctor" => Ok(doctor::run(ctx).1),
        "gemini-brainstorm" => brainstorm::run(ctx, &args),
        "gemini-fetch-chunk" => Ok(fetch_chunk(ctx, &args)),
        "gemini-conversations" => Ok(conversations(&args)),
        "gemini-cancel" => Ok(cancel(ctx)),
        "gemini-ping" => Ok(ping(&args)),
        "gemini-help" => Ok(help(ctx)),
        "gemini-timeout-test" => timeout(ctx, &args),
        other => Err(format!("{other} has no implementation")),
    }
}

/// Whether a tool may run agy (and so takes an agy queue place when it arrives).
pub fn may_run_agy(tool: &str) -> bool {
    matches!(tool, "gemini-ask" | "gemini-plan" | "gemini-brainstorm" | "gemini-image")
}

/// A validated string argument.
pub fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A validated boolean argument (defaults are already filled in).
pub fn bool_arg(args: &Map<String, Value>, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The run options shared by the model tools, from validated arguments.
pub fn run_options(args: &Map<String, Value>) -> AgyOptions {
    let text = |key: &str| str_arg(args, key).map(str::to_string);
    let add_dirs = match args.get("addDirs") {
        Some(Value::Array(dirs)) => {
            dirs.iter().filter_map(Value::as_str).map(str::to_string).collect()
        }
        _ => Vec::new(),
    };
    AgyOptions {
        model: text("model"),
        effort: text("effort"),
        json_schema: args.get("jsonSchema").cloned(),
        mode: text("mode"),
        add_dirs,
        agent: text("agent"),
        allow_slash_commands: bool_arg(args, "allowSlashCommands"),
        conversation_id: text("conversationId"),
        sandbox: bool_arg(args, "sandbox"),
        skip_permissions: bool_arg(args, "skipPermissions"),
        include_usage: bool_arg(args, "includeUsage"),
    }
}

/// `gemini-fetch-chunk`: one chunk of a cached changeMode reply; no model turn.
fn fetch_chunk(ctx: &Ctx<'_>, args: &Map<String, Value>) -> String {
    log::info!("Tool gemini-fetch-chunk({})", redact::invocation_shape(args));
    let key = str_arg(args, "cacheKey").unwrap_or_default();
    let index = args.get("chunkIndex").cloned().unwrap_or(Value::Null);
    changemode::fetch_chunk(&ctx.services.chunks, key, &index)
}

/// `gemini-conversations`: the resumable conversations in agy's local store.
fn conversations(args: &Map<String, Value>) -> String {
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(20) as usize;
    let store = Store::new(&backend::home_dir().unwrap_or_default());
    agy::transcript::render_conversations(&store.list_conversations(limit))
}

/// `gemini-help`: the active backend CLI's own `--help`; a failure is a normal result.
fn help(ctx: &Ctx<'_>) -> String {
    let (backend, _) = ctx.services.backends.select_now();
    let (result, label) = match backend {
        Backend::Agy => (agy::run::help(ctx), "Antigravity CLI (agy)"),
        Backend::Gemini => (gemini::help(ctx), "Gemini CLI"),
    };
    match result {
        Ok(text) => text,
        Err(failure) => format!("{label} help unavailable: {}", failure.message()),
    }
}

/// `gemini-ping`: the prompt back, or `Pong!`.
fn ping(args: &Map<String, Value>) -> String {
    match args.get("prompt").and_then(Value::as_str) {
        Some(prompt) if !prompt.is_empty() => prompt.to_string(),
        _ => "Pong!".to_string(),
    }
}

/// `gemini-cancel`: kills every running CLI child; queued agy calls are untouched.
fn cancel(ctx: &Ctx<'_>) -> String {
    match ctx.services.runs.cancel_all() {
        0 => "Nothing was running.".to_string(),
        1 => "Cancelled 1 run.".to_string(),
        n => format!("Cancelled {n} runs."),
    }
}

/// `gemini-timeout-test`: holds the call open in steps, reporting each one; a client cancellation
/// or shutdown ends it early.
fn timeout(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    let duration = args.get("duration").and_then(Value::as_f64).unwrap_or(10.0);
    let start = Instant::now();
    let mut elapsed_after = Duration::ZERO;
    let mut wait = |step: Duration| -> Result<u64, String> {
        elapsed_after += step;
        let until = start + elapsed_after;
        loop {
            if ctx.call.is_aborted() {
                ctx.call.mark_interrupted();
                return Err("gemini-timeout-test was cancelled".to_string());
            }
            let now = Instant::now();
            if now >= until {
                return Ok(start.elapsed().as_millis() as u64);
            }
            thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    };
    timeout_test::run(duration, &mut wait, &mut |text| ctx.call.report(text))
}
