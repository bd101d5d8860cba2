//! The agy run ladder and agy's other invocations: the capability probe, the
//! queued run with its recovery steps, and the unqueued `models`, `--help`, `--version` and
//! `/usage` calls. Everything spawns through the call's runner.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::backend::agy::caps::{self, AgyCaps};
use crate::backend::agy::endings::{self, Endings, RunLog};
use crate::backend::agy::{Agy, args, failure, output, stream};
use crate::backend::notfound::not_found_text;
use crate::backend::options::RunOptions;
use crate::backend::{Backend, Reply, RunError, quota};
use crate::exec::{self, ChildSpec, Failure, Input, Program, Runner};

/// The capability probe's bound: on expiry the text read so far is parsed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(4);
/// The PTY recovery's own cap, independent of the call's deadline.
const PTY_TIMEOUT: Duration = Duration::from_secs(600);

impl Agy {
    /// Runs one prepared prompt. Returns the reply text, its notices and the observed
    /// conversation id. A fallback run goes in its call's slot. Other fresh runs may go at the
    /// same time (never another turn of a continued conversation), so a fresh run's transcript
    /// recovery takes the newest conversation written since it started, which may be another's.
    pub fn run(
        &self,
        runner: &Runner<'_>,
        prompt: &Arc<String>,
        root: &Path,
        opts: &RunOptions,
    ) -> Result<Reply, RunError> {
        let start = SystemTime::now();
        let caps = self.capabilities(runner);
        if let Some(refusal) = opts.outside_refusal.as_ref().filter(|_| !caps.add_dir_flag) {
            return Err(refusal.clone().into());
        }
        // Dropped when the run ends, whatever the outcome: the log may hold the prompt.
        let log = caps.log_file.then(RunLog::create).and_then(|made| {
            made.map_err(|err| log::warn!("agy runs without --log-file: {err}")).ok()
        });
        let log_path = log.as_ref().map(RunLog::path);
        // The prompt is shared with the stdin line, not copied: a fallback run sends it again.
        let invocation =
            args::invocation(prompt.clone(), opts, &caps, &self.print_timeout, log_path)?;
        let via_stdin = invocation.via_stdin;
        let stdin = invocation.stdin.map(|line| Arc::new(line) as Arc<dyn Input>);
        let endings = Arc::new(Endings::new(via_stdin, log.as_ref()));
        let decoding;
        let run_runner = if via_stdin {
            decoding = runner.map_stdout(stream::stream_json);
            &decoding
        } else {
            runner
        };
        let mut command = self.command(&invocation.args, stdin);
        command.watch = Some(endings.clone());
        let (outcome, stderr) = run_runner.execute_with_stderr(command);
        endings.close_log();
        drop(log);
        if let Some(quota) = endings.quota() {
            return Err(RunError::Quota(quota));
        }
        // Background tasks agy stopped at exit: said after the answer's other notices.
        let finish = |mut reply: Reply| {
            if let Some(n) = endings::background_tasks(&stderr) {
                log::warn!("agy stopped {n} background task(s) when the run ended.");
                reply.notices.push(endings::background_notice(n));
            }
            Ok(reply)
        };
        let (stdout, print_error) = match outcome {
            Ok(stdout) => (stdout, None),
            Err(failure @ (Failure::NotFound { .. } | Failure::Overflow { .. })) => {
                return Err(failure.to_string().into());
            }
            // A stopped call starts no recovery step, whatever its run reported.
            Err(failure) if failure.is_terminal() || runner.is_aborted() => {
                return Err(failure.to_string().into());
            }
            Err(failure) => {
                if let Some(verdict) = exit_verdict(&failure, via_stdin) {
                    return Err(verdict_error(verdict, &stderr));
                }
                if let Some(line) = failure::error_line(&stderr) {
                    log::warn!("agy reported an error: {line}");
                    failure::log_other_stderr(&stderr, line);
                    return Err(verdict_error(line.to_string(), &stderr));
                }
                let message = failure.to_string();
                // Only stderr tells a quota failure: the answer itself may quote the markers.
                if let Some(quota) = quota::find(&stderr, &stderr) {
                    return Err(RunError::Quota(quota));
                }
                if let Failure::StderrOnly { .. } = failure {
                    let cut_off = failure::cut_off(&stderr, None);
                    if let Some(text) = self.empty_answer_failure(&stderr, cut_off) {
                        return Err(text.into());
                    }
                }
                log::warn!("agy: print-mode failed ({message}); trying recovery.");
                (String::new(), Some(message))
            }
        };

        let result = output::agy_result(&stdout, via_stdin);
        if let Some(verdict) = result.as_ref().and_then(output::agy_error_text) {
            return Err(verdict_error(verdict, &stderr));
        }
        let conversation_id = result.as_ref().and_then(output::agy_conversation_id);
        let mut notices = result.as_ref().map(output::agy_result_notices).unwrap_or_default();
        let cut_off = failure::cut_off(&stderr, result.as_ref());
        let answered = failure::answering_model(&stdout, result.as_ref(), via_stdin);
        let direct =
            output::direct_reply(&stdout, result, via_stdin, caps.output_format_json, opts);
        if let Some(text) = direct {
            if cut_off {
                log::warn!(
                    "agy stopped at its --print-timeout ({}); the answer may be incomplete.",
                    self.print_timeout
                );
                notices.push(failure::cut_off_text(&self.print_timeout));
            }
            notices.extend(substitution(answered.as_deref(), opts));
            return finish(Reply { text, notices, backend: Backend::Agy, conversation_id });
        }
        if print_error.is_none()
            && let Some(text) = self.empty_answer_failure(&stderr, cut_off)
        {
            return Err(text.into());
        }
        if !via_stdin
            && self.pty
            && let Some(text) = self.pty_recovery(runner, &invocation.args, &caps, opts)
        {
            return finish(Reply { text, notices, backend: Backend::Agy, conversation_id });
        }
        let explicit = opts.conversation_id.as_deref();
        let found =
            self.store().and_then(|store| Some((store.recovery_id(explicit, root, start)?, store)));
        let Some((id, store)) = found else {
            return Err(print_error.unwrap_or_else(|| silent_run_message(root)).into());
        };
        let text = store.read_transcript_response(&id)?;
        finish(Reply { text, notices, backend: Backend::Agy, conversation_id: Some(id) })
    }

    /// Why a run that exited 0 with no answer failed, when agy said: it stopped at its
    /// `--print-timeout`, or at a tool action nobody could approve.
    fn empty_answer_failure(&self, stderr: &str, cut_off: bool) -> Option<String> {
        if cut_off {
            log::warn!(
                "agy stopped at its --print-timeout ({}) with no answer.",
                self.print_timeout
            );
            return Some(failure::cut_off_text(&self.print_timeout));
        }
        if failure::needs_approval(stderr) {
            log::warn!("agy stopped at a tool action that needed approval in a headless run.");
            return Some(failure::APPROVAL_TEXT.to_string());
        }
        None
    }

    /// agy's advertised flags, probed by the first agy run and again whenever
    /// the agy executable is another file, or the same file rewritten (`agy update`). A failed
    /// probe means no optional flags.
    pub fn capabilities(&self, runner: &Runner<'_>) -> AgyCaps {
        let executable = self.executable();
        let mut cached = self.caps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((probed, caps)) = cached.as_ref() {
            if *probed == executable {
                return *caps;
            }
            log::info!("agy changed on disk; probing its capabilities again.");
        }
        let args = ["--help".to_string()];
        let caps = match runner.probe(self.command(&args, None), PROBE_TIMEOUT) {
            Ok(finished) => {
                let mut text = String::from_utf8_lossy(&finished.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&finished.stderr));
                caps::parse_help(&text)
            }
            Err(_) => AgyCaps::none(),
        };
        *cached = Some((executable, caps));
        caps
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

    fn command<'a>(&'a self, args: &'a [String], stdin: Option<Arc<dyn Input>>) -> ChildSpec<'a> {
        ChildSpec { program: &self.program, args, stdin, watch: None }
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
        // The run's log file is gone with its run: the rerun logs nowhere.
        let kept: Vec<String> = match agy_args.iter().position(|arg| arg == "--log-file") {
            Some(at) => [&agy_args[..at], &agy_args[(at + 2).min(agy_args.len())..]].concat(),
            None => agy_args.to_vec(),
        };
        let inner = args::pty_inner_command(&self.program().to_string_lossy(), &kept);
        let script_args = args::pty_script_args(&inner, exec::BSD_SCRIPT);
        let script = Program::named("script", not_found_text);
        let command = ChildSpec { program: &script, args: &script_args, stdin: None, watch: None };
        let finished = runner.recover(command, PTY_TIMEOUT).ok()?;
        let cleaned = output::strip_script_noise(&String::from_utf8_lossy(&finished.stdout));
        if caps.output_format_json {
            return output::parse_reply(&cleaned, opts);
        }
        Some(cleaned).filter(|text| !text.is_empty())
    }
}

/// agy's JSON verdict in the stdout of a failed run.
fn exit_verdict(failure: &Failure, via_stdin: bool) -> Option<String> {
    let Failure::Exit { stdout, .. } = failure else { return None };
    output::agy_result(stdout, via_stdin).and_then(|result| output::agy_error_text(&result))
}

/// agy's own verdict as the call's failure: a quota failure when it is one, else its text verbatim.
fn verdict_error(verdict: String, stderr: &str) -> RunError {
    // The quota text may stand on a line of its own beside agy's error line.
    match quota::find(&verdict, stderr).or_else(|| quota::find(stderr, stderr)) {
        Some(quota) => RunError::Quota(quota),
        None => RunError::Failed(verdict),
    }
}

/// The notice on an answer from another model than the one the call asked for.
fn substitution(answered: Option<&str>, opts: &RunOptions) -> Option<String> {
    let requested = opts.model.as_deref().filter(|model| !model.is_empty())?;
    let answered = answered?;
    let notice = failure::substitution_notice(answered, &args::normalize_model(requested))?;
    log::info!("agy answered with {answered}, not the model asked for.");
    Some(notice)
}

fn silent_run_message(cwd: &Path) -> String {
    format!(
        "agy produced no output for {} (no stdout, stderr, or transcript). Run `agy -p \"hi\"` directly to check for an expired login or exhausted quota.",
        cwd.display()
    )
}
