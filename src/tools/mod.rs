//! The MCP tools: argument validation, then dispatch by name. One module per tool owns its argument
//! handling and output texts; this file owns the table and the tools too small for a file.

pub mod brainstorm;
pub mod doctor;
pub mod image;
pub mod models;
pub mod plan;
pub mod timeout_test;

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::call::Ctx;
use crate::catalog::ToolSpec;
use crate::validate;

/// Runs one tool call: validates the arguments, then runs the tool. `Err` is the message the
/// client sees after `Error executing <tool>: `.
pub fn call(ctx: &Ctx<'_>, spec: &ToolSpec, args: Map<String, Value>) -> Result<String, String> {
    let args = validate::validate(spec.name, &spec.input_schema, &args)?;
    match spec.name {
        "gemini-ping" => Ok(ping(&args)),
        "gemini-cancel" => Ok(cancel(ctx)),
        "gemini-timeout-test" => timeout(ctx, &args),
        other => Err(format!("{other} is not available in this build yet")),
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
