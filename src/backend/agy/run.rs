//! The agy run ladder (§3.4.6) and agy's other invocations (§3.4.9): the capability probe, the
//! queued run with its recovery steps, and the unqueued `models`, `--help`, `--version` and
//! `/usage` calls. Everything spawns through the executor.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use crate::backend::Request;
use crate::backend::agy::caps::{self, AgyCaps};
use crate::backend::agy::transcript::Store;
use crate::backend::agy::{args, output};
use crate::call::Ctx;
use crate::exec::{self, Failure, Spec};
use crate::{backend, changemode, files};

/// The command's logical name in messages and logs.
const NAME: &str = "agy";
/// The capability probe's bound (§3.4.1).
const PROBE_TIMEOUT: Duration = Duration::from_secs(4);
/// The PTY recovery's own cap (§3.4.10).
const PTY_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs one prompt on agy, inside the agy queue. Returns the reply text, the result notices and
/// the observed conversation id.
pub fn run(
    ctx: &Ctx<'_>,
    request: Request,
) -> Result<(String, Vec<String>, Option<String>), String> {
    let backends = &ctx.services.backends;
    let ticket = ctx.call.take_ticket().unwrap_or_else(|| backends.queue.reserve());
    let Some(_slot) = backends.queue.wait(ticket, ctx.call.aborted_flag()) else {
        ctx.call.mark_interrupted();
        return Err("agy was cancelled".to_string());
    };
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let start = SystemTime::now();
    let caps = capabilities(ctx);
    let opts = &request.options;
    let wrapped = match request.change_mode {
        true => changemode::prompt::prepare_change_mode_prompt(&request.prompt),
        false => request.prompt,
    };
    let print_timeout = args::print_timeout_value(
        std::env::var("AGY_PRINT_TIMEOUT").ok().as_deref(),
        ctx.services.config.timeout.as_millis() as u64,
    );
    // Scoped so the prompt's copies are freed before the child runs: only the stdin line stays.
    let invocation = {
        let final_prompt = files::inline_file_references(&wrapped, &cwd)?;
        args::invocation(&final_prompt, opts, &caps, &print_timeout)?
    };
    drop(wrapped);
    let via_stdin = invocation.via_stdin;

    let program = backends.agy_program();
    let stdin = invocation.stdin.map(Arc::new);
    let (stdout, print_error) =
        match ctx.execute(ctx.cli(NAME, program.as_os_str(), &invocation.args, stdin)) {
            Ok(stdout) => (stdout, None),
            Err(failure @ (Failure::NotFound(_) | Failure::Overflow(_))) => {
                return Err(failure.message().to_string());
            }
            Err(failure) if failure.is_terminal() => return Err(failure.message().to_string()),
            Err(failure) => {
                if let Failure::Exit { stdout, .. } = &failure {
                    if let Some(verdict) = output::agy_result(stdout, via_stdin)
                        .and_then(|r| output::agy_error_text(&r))
                    {
                        return Err(verdict);
                    }
                }
                log::warn!("agy: print-mode failed ({}); trying recovery.", failure.message());
                (String::new(), Some(failure.message().to_string()))
            }
        };

    let result = output::agy_result(&stdout, via_stdin);
    if let Some(verdict) = result.as_ref().and_then(output::agy_error_text) {
        return Err(verdict);
    }
    let mut conversation_id = result.as_ref().and_then(output::agy_conversation_id);
    let notices = result.as_ref().map(output::agy_result_notices).unwrap_or_default();
    let direct = output::direct_reply(&stdout, result, via_stdin, caps.output_format_json, opts);
    if let Some(text) = direct {
        return Ok((text, notices, conversation_id));
    }
    if !via_stdin && args::pty_enabled(std::env::var("AGY_MCP_PTY").ok().as_deref()) {
        if let Some(text) = pty_recovery(ctx, program, &invocation.args, &caps, opts) {
            return Ok((text, notices, conversation_id));
        }
    }
    let store = Store::new(&backend::home_dir().unwrap_or_default());
    let Some(id) = store.recovery_id(opts.conversation_id.as_deref(), &cwd, start) else {
        return Err(print_error.unwrap_or_else(|| silent_run_message(&cwd)));
    };
    let text = store.read_transcript_response(&id)?;
    conversation_id = Some(id);
    Ok((text, notices, conversation_id))
}

/// agy's advertised flags, probed once per process (the first agy run pays for it, inside the
/// queue). A failed probe means no optional flags.
pub fn capabilities(ctx: &Ctx<'_>) -> AgyCaps {
    let backends = &ctx.services.backends;
    *backends.agy_caps.get_or_init(|| {
        let program = backends.agy_program();
        let args = ["--help".to_string()];
        let never = AtomicBool::new(false);
        let probe = Spec {
            name: NAME,
            program: program.as_os_str(),
            args: &args,
            stdin: None,
            timeout: PROBE_TIMEOUT,
            max_output: ctx.services.config.max_output_bytes,
            cancellable: false,
            logged: false,
        };
        match exec::run(probe, &ctx.services.runs, &never, None) {
            Ok(finished) => {
                let mut text = String::from_utf8_lossy(&finished.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&finished.stderr));
                caps::parse_help(&text)
            }
            Err(_) => AgyCaps::none(),
        }
    })
}

/// `agy --output-format json models`, falling back to the fixed list on any failure.
pub fn list_models(ctx: &Ctx<'_>) -> Vec<(String, String)> {
    let args = ["--output-format", "json", "models"].map(String::from);
    let program = ctx.services.backends.agy_program();
    let result = ctx.execute(ctx.cli(NAME, program.as_os_str(), &args, None));
    match &result {
        Ok(stdout) => output::models_or_fallback(Ok(stdout)),
        Err(failure) => output::models_or_fallback(Err(failure.message())),
    }
}

/// `agy --help`, for `gemini-help`.
pub fn help(ctx: &Ctx<'_>) -> Result<String, Failure> {
    let args = ["--help".to_string()];
    let program = ctx.services.backends.agy_program();
    ctx.execute(ctx.cli(NAME, program.as_os_str(), &args, None))
}

/// `agy --version` (5 s) for the doctor.
pub fn version(ctx: &Ctx<'_>, timeout: Duration) -> Result<String, Failure> {
    let args = ["--version".to_string()];
    let program = ctx.services.backends.agy_program();
    let mut spec = ctx.cli(NAME, program.as_os_str(), &args, None);
    spec.timeout = timeout;
    ctx.execute(spec)
}

/// `agy -p /usage --output-format json` (10 s) for the doctor: answered without a model turn.
pub fn usage(ctx: &Ctx<'_>, timeout: Duration) -> Result<String, Failure> {
    let args = ["-p", "/usage", "--output-format", "json"].map(String::from);
    let program = ctx.services.backends.agy_program();
    let mut spec = ctx.cli(NAME, program.as_os_str(), &args, None);
    spec.timeout = timeout;
    ctx.execute(spec)
}

fn silent_run_message(cwd: &Path) -> String {
    format!(
        "agy produced no output for {} (no stdout, stderr, or transcript). Run `agy -p \"hi\"` directly to check for an expired login or exhausted quota.",
        cwd.display()
    )
}

/// §3.4.10: rerun under `script` so agy sees a terminal; opt-in, argv path only, its own 10-minute
/// cap, not cancellable by `gemini-cancel`, not logged as a command execution.
fn pty_recovery(
    ctx: &Ctx<'_>,
    program: &Path,
    agy_args: &[String],
    caps: &AgyCaps,
    opts: &crate::backend::agy::AgyOptions,
) -> Option<String> {
    let inner = args::pty_inner_command(&program.to_string_lossy(), agy_args);
    let script_args = args::pty_script_args(&inner, cfg!(target_os = "macos"));
    let spec = Spec {
        name: "script",
        program: std::ffi::OsStr::new("script"),
        args: &script_args,
        stdin: None,
        timeout: PTY_TIMEOUT,
        max_output: ctx.services.config.max_output_bytes,
        cancellable: false,
        logged: false,
    };
    let finished =
        exec::run(spec, &ctx.services.runs, ctx.call.aborted_flag(), ctx.call.stdout_sink())
            .ok()?;
    let cleaned = output::strip_script_noise(&String::from_utf8_lossy(&finished.stdout));
    if caps.output_format_json {
        return output::parse_reply(&cleaned, opts);
    }
    Some(cleaned).filter(|text| !text.is_empty())
}
