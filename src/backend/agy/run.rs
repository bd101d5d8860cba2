//! The agy run ladder and agy's other invocations: the capability probe, the
//! queued run with its recovery steps, and the unqueued `models`, `--help`, `--version` and
//! `/usage` calls. Everything spawns through the call's runner.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::backend::agy::caps::{self, AgyCaps};
use crate::backend::agy::{Agy, args, output};
use crate::backend::options::RunOptions;
use crate::backend::prepare::Prepared;
use crate::exec::{Command, Failure, Input, Runner};

/// The command's logical name in messages and logs.
const NAME: &str = "agy";
/// The capability probe's bound: on expiry the text read so far is parsed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(4);
/// The PTY recovery's own cap, independent of the call's deadline.
const PTY_TIMEOUT: Duration = Duration::from_secs(600);

impl Agy {
    /// Runs one prepared prompt. Returns the reply text, the result notices and the observed
    /// conversation id. The agy lane runs one call at a time, so the newest transcript recovery
    /// finds is this run's.
    pub fn run(
        &self,
        runner: &Runner<'_>,
        prepared: Prepared,
        opts: &RunOptions,
    ) -> Result<(String, Vec<String>, Option<String>), String> {
        let start = SystemTime::now();
        let caps = self.capabilities(runner);
        let Prepared { prompt, root } = prepared;
        // The prompt moves into the argv or the stdin line: no copy of it is made.
        let invocation = args::invocation(prompt, opts, &caps, &self.print_timeout)?;
        let via_stdin = invocation.via_stdin;
        let stdin = invocation.stdin.map(|line| Arc::new(line) as Arc<dyn Input>);
        let (stdout, print_error) = match runner.execute(self.command(&invocation.args, stdin)) {
            Ok(stdout) => (stdout, None),
            Err(failure @ (Failure::NotFound { .. } | Failure::Overflow { .. })) => {
                return Err(failure.to_string());
            }
            Err(failure) if failure.is_terminal() => return Err(failure.to_string()),
            Err(failure) => {
                if let Failure::Exit { stdout, .. } = &failure {
                    if let Some(verdict) = output::agy_result(stdout, via_stdin)
                        .and_then(|r| output::agy_error_text(&r))
                    {
                        return Err(verdict);
                    }
                }
                let failure = failure.to_string();
                log::warn!("agy: print-mode failed ({failure}); trying recovery.");
                (String::new(), Some(failure))
            }
        };

        let result = output::agy_result(&stdout, via_stdin);
        if let Some(verdict) = result.as_ref().and_then(output::agy_error_text) {
            return Err(verdict);
        }
        let conversation_id = result.as_ref().and_then(output::agy_conversation_id);
        let notices = result.as_ref().map(output::agy_result_notices).unwrap_or_default();
        let direct =
            output::direct_reply(&stdout, result, via_stdin, caps.output_format_json, opts);
        if let Some(text) = direct {
            return Ok((text, notices, conversation_id));
        }
        if !via_stdin && self.pty {
            if let Some(text) = self.pty_recovery(runner, &invocation.args, &caps, opts) {
                return Ok((text, notices, conversation_id));
            }
        }
        let store = self.store();
        let Some(id) = store.recovery_id(opts.conversation_id.as_deref(), &root, start) else {
            return Err(print_error.unwrap_or_else(|| silent_run_message(&root)));
        };
        let text = store.read_transcript_response(&id)?;
        Ok((text, notices, Some(id)))
    }

    /// agy's advertised flags, probed once per process (the first agy run pays for it, inside the
    /// lane). A failed probe means no optional flags.
    pub fn capabilities(&self, runner: &Runner<'_>) -> AgyCaps {
        *self.caps.get_or_init(|| {
            let args = ["--help".to_string()];
            match runner.probe(self.command(&args, None), PROBE_TIMEOUT) {
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
    pub fn list_models(&self, runner: &Runner<'_>) -> Vec<(String, String)> {
        let args = ["--output-format", "json", "models"].map(String::from);
        match runner.execute(self.command(&args, None)) {
            Ok(stdout) => output::models_or_fallback(Ok(&stdout)),
            Err(failure) => output::models_or_fallback(Err(&failure.to_string())),
        }
    }

    /// `agy --help`, for `gemini-help`.
    pub fn help(&self, runner: &Runner<'_>) -> Result<String, Failure> {
        runner.execute(self.command(&["--help".to_string()], None))
    }

    /// `agy --version` for the doctor.
    pub fn version(&self, runner: &Runner<'_>, timeout: Duration) -> Result<String, Failure> {
        runner.execute_within(self.command(&["--version".to_string()], None), timeout)
    }

    /// `agy -p /usage --output-format json` for the doctor: answered without a model turn.
    pub fn usage(&self, runner: &Runner<'_>, timeout: Duration) -> Result<String, Failure> {
        let args = ["-p", "/usage", "--output-format", "json"].map(String::from);
        runner.execute_within(self.command(&args, None), timeout)
    }

    fn command<'a>(&'a self, args: &'a [String], stdin: Option<Arc<dyn Input>>) -> Command<'a> {
        Command { name: NAME, program: self.program().as_os_str(), args, stdin }
    }

    /// PTY recovery: rerun under `script` so agy sees a terminal; opt-in, argv path only, its own
    /// 10-minute cap, not cancellable by `gemini-cancel`, not logged as a command execution.
    fn pty_recovery(
        &self,
        runner: &Runner<'_>,
        agy_args: &[String],
        caps: &AgyCaps,
        opts: &RunOptions,
    ) -> Option<String> {
        let inner = args::pty_inner_command(&self.program().to_string_lossy(), agy_args);
        let script_args = args::pty_script_args(&inner, cfg!(target_os = "macos"));
        let command = Command {
            name: "script",
            program: OsStr::new("script"),
            args: &script_args,
            stdin: None,
        };
        let finished = runner.recover(command, PTY_TIMEOUT).ok()?;
        let cleaned = output::strip_script_noise(&String::from_utf8_lossy(&finished.stdout));
        if caps.output_format_json {
            return output::parse_reply(&cleaned, opts);
        }
        Some(cleaned).filter(|text| !text.is_empty())
    }
}

fn silent_run_message(cwd: &Path) -> String {
    format!(
        "agy produced no output for {} (no stdout, stderr, or transcript). Run `agy -p \"hi\"` directly to check for an expired login or exhausted quota.",
        cwd.display()
    )
}
