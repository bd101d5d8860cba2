//! The MCP tools' run functions: one module per tool owns its argument handling and output texts;
//! this file holds the tools too small for a file and the argument helpers they share. The table
//! that names them is `catalog::TOOLS`.

pub mod ask;
pub mod brainstorm;
pub mod catalog;
pub mod doctor;
pub mod image;
pub mod models;
pub mod plan;
pub mod prompts;
pub mod timeout_test;
pub mod validate;

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::backend::options::RunOptions;
use crate::backend::{Backend, agy};
use crate::call::Ctx;
use crate::{changemode, controls, redact};

/// Where a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// On the event loop at once: cheap tools that never wait for a worker.
    Inline,
    /// On a small pool of its own: tools that read local files (agy's conversation store), which
    /// may take a while on a big store but never wait behind model calls.
    Local,
    /// On the worker pool.
    Worker,
    /// On the worker pool, through the agy scheduler when the call's backend is agy.
    Model,
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
pub fn run_options(args: &Map<String, Value>) -> RunOptions {
    let text = |key: &str| str_arg(args, key).map(str::to_string);
    let add_dirs = strings(args, "addDirs");
    RunOptions {
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
        attachments: strings(args, "attachments"),
        outside_refusal: None,
    }
}

/// A validated array-of-strings argument (empty when absent).
pub fn strings(args: &Map<String, Value>, key: &str) -> Vec<String> {
    match args.get(key) {
        Some(Value::Array(items)) => {
            items.iter().filter_map(Value::as_str).map(str::to_string).collect()
        }
        _ => Vec::new(),
    }
}

/// `gemini-fetch-chunk`: one chunk of a cached changeMode reply; no model turn.
pub fn fetch_chunk(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    log::info!("Tool gemini-fetch-chunk({})", redact::invocation_shape(args));
    let key = str_arg(args, "cacheKey").unwrap_or_default();
    let index = args.get("chunkIndex").cloned().unwrap_or(Value::Null);
    Ok(changemode::fetch_chunk(&ctx.services.chunks, key, &index))
}

/// `gemini-conversations`: the resumable conversations in agy's local store.
pub fn conversations(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(20) as usize;
    let rows = match ctx.services.backends.agy.store() {
        Some(store) => store.list_conversations(limit),
        None => Vec::new(),
    };
    Ok(agy::transcript::render_conversations(&rows))
}

/// `gemini-help`: the active backend CLI's own `--help`; a failure is a normal result.
pub fn help(ctx: &Ctx<'_>, _args: &Map<String, Value>) -> Result<String, String> {
    let backends = &ctx.services.backends;
    let runner = ctx.runner();
    backends.warn_if_unknown();
    let (result, label) = match ctx.call.backend {
        Backend::Agy => (backends.agy.help(&runner), "Antigravity CLI (agy)"),
        Backend::Gemini => (backends.gemini.help(&runner), "Gemini CLI"),
    };
    let text = match result {
        Ok(text) => text,
        Err(failure) => format!("{label} help unavailable: {failure}"),
    };
    // The CLI's own text, shown without its control sequences (colours, titles).
    Ok(controls::strip(&text).into_owned())
}

/// `gemini-ping`: the prompt back, or `Pong!`.
pub fn ping(_ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    Ok(match args.get("prompt").and_then(Value::as_str) {
        Some(prompt) if !prompt.is_empty() => prompt.to_string(),
        _ => "Pong!".to_string(),
    })
}

/// `gemini-cancel`: kills every running CLI child; calls waiting for agy are untouched.
pub fn cancel(ctx: &Ctx<'_>, _args: &Map<String, Value>) -> Result<String, String> {
    Ok(match ctx.services.runs.cancel_all() {
        0 => "Nothing was running.".to_string(),
        1 => "Cancelled 1 run.".to_string(),
        n => format!("Cancelled {n} runs."),
    })
}

/// `gemini-timeout-test`: holds the call open in steps, reporting each one; a client cancellation
/// or shutdown ends it early.
pub fn timeout(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    let duration = args.get("duration").and_then(Value::as_f64).unwrap_or(10.0);
    let start = Instant::now();
    let mut elapsed_after = Duration::ZERO;
    let mut wait = |step: Duration| -> Result<u64, String> {
        elapsed_after += step;
        let until = start + elapsed_after;
        loop {
            if ctx.call.is_aborted() {
                return Err("gemini-timeout-test was cancelled".to_string());
            }
            let now = Instant::now();
            if now >= until {
                return Ok(start.elapsed().as_millis() as u64);
            }
            thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    };
    timeout_test::run(duration, &mut wait, &mut |text| ctx.report(text))
}
