//! The one door for child processes: spawning without a shell in a process tree of its own, feeding
//! stdin from its own thread, draining stdout and stderr on their own threads with a size cap, the
//! deadline, cancellation, killing the tree (also whatever the child left behind when it exits),
//! reaping, and the error texts callers see. A `Runner` is what a backend gets: the registry of
//! running children, its call's abort flag, its stdout sink and its limits. How a tree is made and
//! killed differs per system (`unix.rs`: a process group; `windows.rs`: a Job Object); the rest is
//! written once here.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, bounded};
use wait_timeout::ChildExt;

use crate::{js, redact};

// The Windows decisions that touch no system (the command-line budget, finding and launching the
// CLIs) are tested on every system. The agy backend finds a bare `agy` with the same search.
#[cfg(any(windows, test))]
mod cmdline;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(any(windows, test))]
pub(crate) mod winresolve;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
use windows as sys;

/// How often a waiting run looks at its cancellation flags and output cap.
const POLL_SLICE: Duration = Duration::from_millis(25);
/// How long reader threads get to finish once the child's tree is gone. A reader still blocked
/// after that (a pipe held open by a process that left the tree, as with `setsid`) is abandoned.
const READER_GRACE: Duration = Duration::from_millis(150);
/// How long shutdown waits for children being spawned, so it can kill them too.
const SPAWN_WAIT: Duration = Duration::from_millis(500);
/// The largest stdin written without a thread: the smallest default pipe buffer of the supported
/// systems (macOS starts at 16 KiB; Linux has 64 KiB).
const SMALL_STDIN: usize = 16 * 1024;
/// Stack of the pipe reader and stdin writer threads that only copy bytes.
const IO_THREAD_STACK: usize = 64 * 1024;
/// Stack of a pipe reader that feeds the preview: the stream-json decoder parses each event line,
/// and serde_json recurses once per level of nesting (up to 128). Only reserved, not used, memory.
const DECODING_THREAD_STACK: usize = 1024 * 1024;

/// Linux's limit on one argv element (`MAX_ARG_STRLEN`, 32 pages of 4 KiB), its terminating NUL
/// included: `execve` fails with `E2BIG` ("Argument list too long") beyond it, so every argv
/// element that carries caller text is checked against it before spawning.
pub const ARGV_ELEMENT_LIMIT: usize = 131_072;

/// The most text one argv element can carry: the element limit less the NUL.
pub const ARGV_TEXT_LIMIT: usize = ARGV_ELEMENT_LIMIT - 1;

/// The error for a `cli` argument value longer than one argv element can carry; `n` counts its
/// bytes without the NUL, like the limit the text states.
pub fn argument_too_long_text(cli: &str, name: &str, n: usize) -> String {
    format!(
        "The {name} is {n} bytes; {cli} accepts at most {ARGV_TEXT_LIMIT} bytes in one command-line argument."
    )
}

/// What to run. `name` is the logical command (`agy`, `gemini`) used in messages and logs.
pub struct ChildSpec<'a> {
    pub name: &'a str,
    /// The CLI's bare name when nothing is configured (found on `PATH` at spawn; on Windows by
    /// the executor's own search), else the configured or resolved path, used as given.
    pub program: &'a OsStr,
    pub args: &'a [String],
    /// Written to the child's stdin from its own thread, then stdin is closed.
    pub stdin: Option<Arc<dyn Input>>,
}

/// What a child reads on stdin. A run writes it from a thread of its own (unless it is small), so
/// the child reads while it is being written, and closes stdin after it.
pub trait Input: Send + Sync {
    /// The most bytes `write_to` writes: an input that fits in an empty pipe is written at once.
    fn max_len(&self) -> usize;
    /// Writes the whole input to `out`.
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// Text goes to the child as it is.
impl Input for String {
    fn max_len(&self) -> usize {
        self.len()
    }

    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(self.as_bytes())
    }
}

/// The deadline and output cap of a call's runs (from the configuration).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_output: usize,
}

/// Called with every chunk the child writes to stdout, as it arrives.
pub type OnStdout = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// What a backend may do with children on behalf of one call.
pub struct Runner<'a> {
    runs: &'a Runs,
    abort: &'a AtomicBool,
    on_stdout: Option<OnStdout>,
    limits: Limits,
    /// Its deadline is what is left of the call's (`within`).
    share: bool,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited,
    TimedOut,
    /// Stopped by the `gemini-cancel` tool.
    StoppedByCancelTool,
    /// Stopped by its own call: the client cancelled it, or the server is shutting down.
    StoppedByCaller,
    /// Stopped because stdout or stderr passed the output cap.
    Overflow,
}

/// Everything a finished (or stopped) run produced.
#[derive(Debug)]
pub struct Finished {
    pub ending: Ending,
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// A failure of the common executor: what went wrong, with the facts its text is made of. Its
/// `Display` is the text the caller sees. `name` is the logical command (`agy`, `gemini`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The binary was not found.
    NotFound { name: String },
    /// The child could not be started for another reason (the OS error's text).
    Spawn { error: String },
    /// The relay would not start the child, for the reason `text` says whole: a command line over
    /// Windows' limit, or a batch file that is not an npm shim.
    #[cfg(windows)]
    Refused { text: String },
    TimedOut {
        name: String,
        after: Duration,
        /// The run had a share of its call's deadline (a retry after another run), said to a
        /// tenth of a second below 10 s.
        share: bool,
    },
    /// Stopped by the `gemini-cancel` tool.
    StoppedByCancelTool { name: String },
    /// Stopped by its own call (cancelled by the client, or shutdown), or never started for it.
    StoppedByCaller { name: String },
    /// Stopped because its output passed `limit` bytes.
    Overflow { name: String, limit: usize },
    /// Non-zero exit (or killed by a signal); the raw stdout also feeds agy's JSON verdict.
    Exit { code: Option<i32>, stdout: String, stderr: String },
    /// Exit 0 with nothing on stdout but this (trimmed) text on stderr.
    StderrOnly { stderr: String },
}

/// Every child that is running, for `gemini-cancel` and for shutdown.
#[derive(Default)]
pub struct Runs {
    next: AtomicU64,
    gate: Gate,
    map: Mutex<HashMap<u64, RunEntry>>,
}

/// The spawn gate. A run holds a pass from before its spawn until its child is registered;
/// shutdown closes the gate and waits for the passes out, so no child can be spawned after the
/// last kill. The wait is bounded, so a spawn that never returns cannot hold shutdown up.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    settled: Condvar,
}

#[derive(Default)]
struct GateState {
    closed: bool,
    passes: usize,
}

/// Permission to spawn one child; returned when dropped.
struct Pass<'a> {
    gate: &'a Gate,
}

/// How a run may be stopped and whether it is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    /// A call's own run: logged, stopped by `gemini-cancel` and by its call's abort.
    Call,
    /// A probe (agy's `--help`): unlogged and only stopped by its deadline or shutdown.
    Probe,
    /// A recovery run (PTY): unlogged, stopped by its call's abort but not by `gemini-cancel`.
    Recovery,
}

struct RunEntry {
    tree: Arc<sys::Tree>,
    cancellable: bool,
    cancelled: Arc<AtomicBool>,
}

/// Deregisters a run and kills its tree on every way out (an early return, a panic).
struct Guard<'a> {
    runs: &'a Runs,
    key: u64,
    tree: Arc<sys::Tree>,
}

impl Failure {
    /// Timeouts and cancellations end a call: no recovery runs after them.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Failure::TimedOut { .. }
                | Failure::StoppedByCancelTool { .. }
                | Failure::StoppedByCaller { .. }
        )
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(not(windows))]
            Failure::NotFound { name } => f.write_str(&not_found_message(name)),
            #[cfg(windows)]
            Failure::NotFound { name } => f.write_str(&winresolve::not_found_message(name)),
            Failure::Spawn { error } => write!(f, "Failed to spawn command: {error}"),
            #[cfg(windows)]
            Failure::Refused { text } => f.write_str(text),
            Failure::TimedOut { name, after, share: true } if after.as_secs() < 10 => {
                write!(f, "{name} timed out after {:.1}s", after.as_secs_f64())
            }
            Failure::TimedOut { name, after, .. } => {
                let secs = js::number((after.as_millis() as f64 / 1000.0).round());
                write!(f, "{name} timed out after {secs}s")
            }
            Failure::StoppedByCancelTool { name } => {
                write!(f, "{name} was cancelled by gemini-cancel")
            }
            Failure::StoppedByCaller { name } => write!(f, "{name} was cancelled"),
            Failure::Overflow { name, limit } => {
                write!(f, "{name} produced more than {limit} bytes of output; stopped it.")
            }
            Failure::Exit { code, stdout, stderr } => {
                let shown = code.map_or("null".to_string(), |c| c.to_string());
                let detail = [stderr.trim(), stdout.trim()].into_iter().find(|s| !s.is_empty());
                let detail = detail.unwrap_or("Unknown error");
                write!(f, "Command failed with exit code {shown}: {detail}")
            }
            Failure::StderrOnly { stderr } => f.write_str(stderr),
        }
    }
}

impl Runs {
    /// Marks every cancellable running child as cancelled; their runs kill their trees within a
    /// poll slice. Returns how many were signalled.
    pub fn cancel_all(&self) -> usize {
        let map = self.lock();
        let mut count = 0;
        for entry in map.values().filter(|entry| entry.cancellable) {
            if !entry.cancelled.swap(true, Ordering::SeqCst) {
                count += 1;
            }
        }
        count
    }

    /// Shutdown: closes the registry (a run about to spawn gives up; one spawning now is waited
    /// for, at most `SPAWN_WAIT`) and kills the tree of every child, cancellable or not.
    pub fn kill_all(&self) {
        self.gate.close(SPAWN_WAIT);
        for entry in self.lock().values() {
            entry.cancelled.store(true, Ordering::SeqCst);
            entry.tree.kill();
        }
    }

    fn register(&self, tree: Arc<sys::Tree>, cancellable: bool) -> (u64, Arc<AtomicBool>) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let cancelled = Arc::new(AtomicBool::new(false));
        let entry = RunEntry { tree, cancellable, cancelled: cancelled.clone() };
        self.lock().insert(key, entry);
        (key, cancelled)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, RunEntry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Gate {
    /// A pass to spawn, or `None` once shutdown has closed the gate.
    fn enter(&self) -> Option<Pass<'_>> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        state.passes += 1;
        Some(Pass { gate: self })
    }

    /// Closes the gate and waits, at most `within`, until every pass is returned.
    fn close(&self, within: Duration) {
        let mut state = self.lock();
        state.closed = true;
        let (state, _) = self
            .settled
            .wait_timeout_while(state, within, |state| state.passes > 0)
            .unwrap_or_else(|e| e.into_inner());
        if state.passes > 0 {
            log::warn!("shutdown: {} child process(es) still being spawned", state.passes);
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.gate.lock().passes -= 1;
        self.gate.settled.notify_all();
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // Nothing outlives its run: whatever is left in the tree dies with it.
        self.tree.kill();
        self.runs.lock().remove(&self.key);
    }
}

impl<'a> Runner<'a> {
    pub fn new(
        runs: &'a Runs,
        abort: &'a AtomicBool,
        on_stdout: Option<OnStdout>,
        limits: Limits,
    ) -> Runner<'a> {
        Runner { runs, abort, on_stdout, limits, share: false }
    }

    /// The same runner with its stdout sink wrapped by `wrap` (agy's stream-json runs decode their
    /// events before the preview sees them).
    pub fn map_stdout(&self, wrap: impl FnOnce(OnStdout) -> OnStdout) -> Runner<'a> {
        let on_stdout = self.on_stdout.clone().map(wrap);
        Runner { on_stdout, ..*self }
    }

    /// The same runner with a shorter deadline for each run: what is left of the call's own, for
    /// a run that follows another within one call.
    pub fn within(&self, timeout: Duration) -> Runner<'a> {
        let limits = Limits { timeout: timeout.min(self.limits.timeout), ..self.limits };
        Runner { on_stdout: self.on_stdout.clone(), limits, share: true, ..*self }
    }

    /// The deadline of each run.
    pub fn timeout(&self) -> Duration {
        self.limits.timeout
    }

    /// Set when the call was cancelled by the client or the server is shutting down; long work
    /// between runs checks it.
    pub fn abort_flag(&self) -> &AtomicBool {
        self.abort
    }

    /// Whether the call was cancelled by the client or the server is shutting down.
    pub fn is_aborted(&self) -> bool {
        self.abort.load(Ordering::SeqCst)
    }

    /// The common executor, bounded by the call's deadline: the trimmed stdout, or the failure
    /// text a caller sees.
    pub fn execute(&self, command: ChildSpec<'_>) -> Result<String, Failure> {
        self.execute_within(command, self.limits.timeout)
    }

    /// `execute` with a shorter deadline of its own (the doctor's probes).
    pub fn execute_within(
        &self,
        command: ChildSpec<'_>,
        timeout: Duration,
    ) -> Result<String, Failure> {
        let name = command.name.to_string();
        let finished = self.run(command, timeout, RunKind::Call)?;
        outcome(name, Limits { timeout, ..self.limits }, self.share, finished)
    }

    /// `execute`, also handing back what the child wrote to stderr (empty when it never ran): agy
    /// tells its error line, a cut-off answer and a denied approval there, whatever its exit.
    pub fn execute_with_stderr(&self, command: ChildSpec<'_>) -> (Result<String, Failure>, String) {
        let name = command.name.to_string();
        let finished = match self.run(command, self.limits.timeout, RunKind::Call) {
            Ok(finished) => finished,
            Err(failure) => return (Err(failure), String::new()),
        };
        let stderr = String::from_utf8_lossy(&finished.stderr).into_owned();
        (outcome(name, self.limits, self.share, finished), stderr)
    }

    /// A probe: unlogged, not stopped by `gemini-cancel` nor by the call's abort.
    pub fn probe(&self, command: ChildSpec<'_>, timeout: Duration) -> Result<Finished, Failure> {
        self.run(command, timeout, RunKind::Probe)
    }

    /// A recovery run: unlogged, not stopped by `gemini-cancel`, stopped by the call's abort.
    pub fn recover(&self, command: ChildSpec<'_>, timeout: Duration) -> Result<Finished, Failure> {
        self.run(command, timeout, RunKind::Recovery)
    }

    /// Runs a child to its exit, the deadline, cancellation or the output cap, and kills whatever
    /// it left in its process tree.
    fn run(
        &self,
        command: ChildSpec<'_>,
        timeout: Duration,
        kind: RunKind,
    ) -> Result<Finished, Failure> {
        let start = Instant::now();
        #[cfg(windows)]
        let (program, args) = sys::launch(command.name, command.program, command.args)?;
        #[cfg(windows)]
        let mut cmd = self::command(&program, &args);
        #[cfg(not(windows))]
        let mut cmd = self::command(command.program, command.args);
        if command.stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let stopped = || Failure::StoppedByCaller { name: command.name.to_string() };
        let (mut child, guard, cancelled) = {
            let Some(_pass) = self.runs.gate.enter() else { return Err(stopped()) };
            // A call cancelled before its child starts never starts it (and never writes its
            // prompt). Probes are exempt: their answer is kept for the whole process.
            if kind != RunKind::Probe && self.abort.load(Ordering::SeqCst) {
                return Err(stopped());
            }
            if kind == RunKind::Call {
                let started_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                log::info!(
                    "[{started_ms}] Starting: {} {}",
                    command.name,
                    redact::argv_shape(command.args)
                );
            }
            let mut child = match cmd.spawn() {
                Ok(child) => child,
                Err(err) => {
                    log::error!("Process error: {err}");
                    if err.kind() == io::ErrorKind::NotFound {
                        return Err(Failure::NotFound { name: command.name.to_string() });
                    }
                    return Err(Failure::Spawn { error: err.to_string() });
                }
            };
            let tree = match sys::Tree::of(&child) {
                Ok(tree) => Arc::new(tree),
                Err(err) => {
                    log::error!("Process error: {err}");
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Failure::Spawn { error: err.to_string() });
                }
            };
            let (key, cancelled) = self.runs.register(tree.clone(), kind == RunKind::Call);
            (child, Guard { runs: self.runs, key, tree }, cancelled)
        };

        if let (Some(data), Some(stdin)) = (command.stdin, child.stdin.take()) {
            feed_stdin(stdin, data);
        }
        let overflow = Arc::new(AtomicBool::new(false));
        let on_stdout = if kind == RunKind::Probe { None } else { self.on_stdout.clone() };
        let cap = self.limits.max_output;
        let stdout = drain(child.stdout.take(), cap, overflow.clone(), on_stdout);
        let stderr = drain(child.stderr.take(), cap, overflow.clone(), None);

        let never = AtomicBool::new(false);
        let abort = if kind == RunKind::Probe { &never } else { self.abort };
        let (ending, status) = wait(&mut child, start + timeout, &cancelled, abort, &overflow);
        let status = match status {
            Some(status) => status,
            None => {
                guard.tree.kill();
                match child.wait() {
                    Ok(status) => status,
                    Err(err) => {
                        log::error!("Process error: {err}");
                        sys::killed_status()
                    }
                }
            }
        };
        // The leader is reaped; killing its tree now reaches exactly what the child left behind.
        guard.tree.kill();
        let (stdout, stderr) = (collect(stdout), collect(stderr));
        drop(guard);
        // A child that overflowed and then exited before the next poll was still cut short.
        let ending = match ending {
            Ending::Exited if overflow.load(Ordering::SeqCst) => Ending::Overflow,
            ending => ending,
        };
        if kind == RunKind::Call {
            let code = status.code().map_or("null".to_string(), |c| c.to_string());
            let secs = format!("{:.1}", start.elapsed().as_secs_f64());
            log::info!("[{secs}s] Process finished with exit code: {code}");
        }
        Ok(Finished { ending, status, stdout, stderr })
    }
}

/// Builds a command for `program`: no shell, its own process tree, stdin closed, stdout and stderr
/// piped. This is the only place in the crate that creates a `std::process::Command`.
#[allow(clippy::disallowed_methods)]
fn command(program: &OsStr, args: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    sys::own_tree(&mut cmd);
    cmd
}

/// Turns a finished run of the command `name` under `limits` into its trimmed stdout or its
/// failure.
fn outcome(
    name: String,
    limits: Limits,
    share: bool,
    finished: Finished,
) -> Result<String, Failure> {
    match finished.ending {
        Ending::Exited => (),
        Ending::TimedOut => {
            let failure = Failure::TimedOut { name, after: limits.timeout, share };
            log::error!("{failure}; killing it.");
            return Err(failure);
        }
        Ending::StoppedByCancelTool => return Err(Failure::StoppedByCancelTool { name }),
        Ending::StoppedByCaller => return Err(Failure::StoppedByCaller { name }),
        Ending::Overflow => {
            return Err(Failure::Overflow { name, limit: limits.max_output });
        }
    }
    let stdout = String::from_utf8_lossy(&finished.stdout);
    let stderr = String::from_utf8_lossy(&finished.stderr);
    if finished.status.success() {
        let out = stdout.trim();
        let err = stderr.trim();
        if out.is_empty() && !err.is_empty() {
            return Err(Failure::StderrOnly { stderr: err.to_string() });
        }
        log::info!("Response: {} chars", redact::utf16_len(&stdout));
        return Ok(out.to_string());
    }
    let code = finished.status.code();
    log::error!("Failed with exit code {}", code.map_or("null".to_string(), |c| c.to_string()));
    Err(Failure::Exit { code, stdout: stdout.into_owned(), stderr: stderr.into_owned() })
}

/// The text for a binary that could not be found (POSIX variants), with install hints for agy
/// and gemini.
#[cfg(not(windows))]
pub fn not_found_message(name: &str) -> String {
    let hints = NotFoundHints {
        verify: format!("`which {name}`"),
        install: "run `curl -fsSL https://antigravity.google/cli/install.sh | bash`",
        agy_location: "It installs to ~/.local/bin; add that to PATH or set AGY_CLI_PATH to the agy binary.",
    };
    not_found_text(name, &hints)
}

/// What the not-found text says differently on each system.
pub(crate) struct NotFoundHints {
    /// How to check that the CLI is resolvable (the end of the third line).
    pub verify: String,
    /// How to install agy, as a verb phrase.
    pub install: &'static str,
    /// Where agy installs and how to point the relay at it.
    pub agy_location: &'static str,
}

/// The not-found text, with the system's hints.
pub(crate) fn not_found_text(name: &str, hints: &NotFoundHints) -> String {
    let install = hints.install;
    let mut lines = vec![
        format!("Could not find the \"{name}\" executable."),
        "The MCP server runs in its own process and may not inherit your shell's PATH.".to_string(),
        format!("• Verify it is installed and resolvable: {}.", hints.verify),
    ];
    let more = "• More: https://goo.gle/gemini-cli-migration and docs/migration/antigravity-cli.md";
    match name {
        "agy" => lines.extend([
            format!("• Antigravity CLI (agy) is the Gemini CLI's successor and this tool's default backend since 2026-06-18. To install it, {install}, then run `agy` once to sign in."),
            format!("• {}", hints.agy_location),
            "• On a supported Gemini tier (paid API key or Enterprise/Standard license)? Set GEMINI_MCP_BACKEND=gemini to keep using the Gemini CLI instead.".to_string(),
            more.to_string(),
        ]),
        "gemini" => lines.extend([
            format!("• The Gemini CLI stopped serving free, Pro, and Ultra users on 2026-06-18. Migrate to the Antigravity CLI (agy), this tool's new default: {install}, then unset GEMINI_MCP_BACKEND."),
            "• Enterprise/Standard license or paid API key? Your Gemini access is unaffected: reinstall the Gemini CLI or set GEMINI_CLI_PATH to its full path.".to_string(),
            more.to_string(),
        ]),
        _ => (),
    }
    lines.join("\n")
}

fn wait(
    child: &mut Child,
    deadline: Instant,
    cancelled: &AtomicBool,
    aborted: &AtomicBool,
    overflow: &AtomicBool,
) -> (Ending, Option<ExitStatus>) {
    loop {
        if cancelled.load(Ordering::SeqCst) {
            return (Ending::StoppedByCancelTool, None);
        }
        if aborted.load(Ordering::SeqCst) {
            return (Ending::StoppedByCaller, None);
        }
        if overflow.load(Ordering::SeqCst) {
            return (Ending::Overflow, None);
        }
        let now = Instant::now();
        if now >= deadline {
            return (Ending::TimedOut, None);
        }
        match child.wait_timeout(POLL_SLICE.min(deadline - now)) {
            Ok(Some(status)) => return (exit_ending(status, cancelled, aborted), Some(status)),
            Ok(None) => (),
            Err(err) => {
                log::error!("Process error: {err}");
                return (Ending::StoppedByCaller, None);
            }
        }
    }
}

/// How a run whose child exited ended. A kill (by `gemini-cancel`, the call's abort or shutdown)
/// can land while the wait sleeps, so a child that was killed after a flag was raised was stopped,
/// whatever the wait saw first: the flags are read again after the exit.
fn exit_ending(status: ExitStatus, cancelled: &AtomicBool, aborted: &AtomicBool) -> Ending {
    if !sys::was_killed(status) {
        Ending::Exited
    } else if aborted.load(Ordering::SeqCst) {
        Ending::StoppedByCaller
    } else if cancelled.load(Ordering::SeqCst) {
        Ending::StoppedByCancelTool
    } else {
        Ending::Exited
    }
}

/// Writes the child's stdin, then closes it. A payload that fits in an empty pipe buffer is written
/// at once (the write cannot block); a larger one gets its own thread so a child that reads slowly,
/// or not at all, never blocks the run.
fn feed_stdin(mut stdin: ChildStdin, data: Arc<dyn Input>) {
    if data.max_len() <= SMALL_STDIN {
        if let Err(err) = data.write_to(&mut stdin) {
            log::error!("stdin write failed: {err}");
        }
        return;
    }
    let spawned = thread::Builder::new()
        .name("child-stdin".into())
        .stack_size(IO_THREAD_STACK)
        .spawn(move || {
            if let Err(err) = data.write_to(&mut stdin) {
                log::error!("stdin write failed: {err}");
            }
        });
    if let Err(err) = spawned {
        log::error!("stdin write failed: {err}");
    }
}

/// Reads one pipe to its end on a thread of its own, keeping at most `cap` bytes (past the cap it
/// keeps draining, so the child never blocks on a full pipe, and raises `overflow`).
fn drain<R: Read + Send + 'static>(
    pipe: Option<R>,
    cap: usize,
    overflow: Arc<AtomicBool>,
    on_chunk: Option<OnStdout>,
) -> Option<Receiver<Vec<u8>>> {
    let mut pipe = pipe?;
    let (tx, rx) = bounded(1);
    let has_sink = on_chunk.is_some();
    let body = move || {
        let mut acc = Vec::new();
        let mut buf = [0u8; 8 * 1024];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            if acc.len() + n > cap {
                overflow.store(true, Ordering::SeqCst);
                continue;
            }
            acc.extend_from_slice(&buf[..n]);
            if let Some(on_chunk) = &on_chunk {
                on_chunk(&buf[..n]);
            }
        }
        let _ = tx.send(acc);
    };
    let stack = if has_sink { DECODING_THREAD_STACK } else { IO_THREAD_STACK };
    let spawned = thread::Builder::new().name("child-pipe".into()).stack_size(stack).spawn(body);
    match spawned {
        Ok(_) => Some(rx),
        Err(err) => {
            log::error!("Process error: {err}");
            None
        }
    }
}

/// What a pipe reader read. Its tree is already killed, so the pipe closes at once unless a
/// process that escaped the tree holds it; such a reader is abandoned after a grace, never joined.
fn collect(rx: Option<Receiver<Vec<u8>>>) -> Vec<u8> {
    rx.and_then(|rx| rx.recv_timeout(READER_GRACE).ok()).unwrap_or_default()
}

// Children are POSIX shell scripts here.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    use crate::testutil::is_running;

    fn limits() -> Limits {
        Limits { timeout: Duration::from_secs(10), max_output: 1024 }
    }

    fn sh<'a>(args: &'a [String]) -> ChildSpec<'a> {
        ChildSpec { name: "sh", program: OsStr::new("/bin/sh"), args, stdin: None }
    }

    fn script(text: &str) -> Vec<String> {
        vec!["-c".to_string(), text.to_string()]
    }

    #[test]
    fn success_is_trimmed_stdout() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("echo '  hello  '");
        assert_eq!(runner.execute(sh(&args)), Ok("hello".to_string()));
    }

    #[test]
    fn stdin_reaches_the_child() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("wc -c");
        let mut command = sh(&args);
        command.stdin = Some(Arc::new("x".repeat(100_000)));
        let runner = Runner { limits: Limits { max_output: 1 << 20, ..limits() }, ..runner };
        assert_eq!(runner.execute(command), Ok("100000".to_string()));
    }

    #[test]
    fn output_past_the_cap_stops_the_child() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("yes");
        let failure = runner.execute(sh(&args)).unwrap_err();
        assert_eq!(failure, Failure::Overflow { name: "sh".into(), limit: 1024 });
        assert_eq!(failure.to_string(), "sh produced more than 1024 bytes of output; stopped it.");
    }

    #[test]
    fn a_closed_registry_spawns_nothing() {
        let runs = Runs::default();
        runs.kill_all();
        let never = AtomicBool::new(false);
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("echo never");
        let failure = runner.execute(sh(&args)).unwrap_err();
        assert_eq!(failure.to_string(), "sh was cancelled");
    }

    #[test]
    fn an_aborted_call_never_spawns() {
        let runs = Runs::default();
        let aborted = AtomicBool::new(true);
        let runner = Runner::new(&runs, &aborted, None, limits());
        let dir = std::env::temp_dir().join(format!("exec-abort-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let args = script(&format!("touch {}", dir.display()));
        let failure = runner.execute(sh(&args)).unwrap_err();
        assert_eq!(failure, Failure::StoppedByCaller { name: "sh".into() });
        assert!(!dir.exists(), "the child ran");
        // A probe still runs: its answer is kept for the process.
        assert!(runner.probe(sh(&args), Duration::from_secs(5)).is_ok());
        assert!(dir.exists());
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn failure_texts() {
        let exit = |code, stdout: &str, stderr: &str| Failure::Exit {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        };
        assert_eq!(
            exit(Some(2), "out", " err\n").to_string(),
            "Command failed with exit code 2: err"
        );
        assert_eq!(exit(Some(1), " out ", "").to_string(), "Command failed with exit code 1: out");
        assert_eq!(
            exit(None, "", "").to_string(),
            "Command failed with exit code null: Unknown error"
        );
        let timed_out = |ms, share| Failure::TimedOut {
            name: "agy".into(),
            after: Duration::from_millis(ms),
            share,
        };
        assert_eq!(timed_out(600, false).to_string(), "agy timed out after 1s");
        assert_eq!(timed_out(480, true).to_string(), "agy timed out after 0.5s");
        assert_eq!(timed_out(9_940, true).to_string(), "agy timed out after 9.9s");
        assert_eq!(timed_out(12_400, true).to_string(), "agy timed out after 12s");
        let tool = Failure::StoppedByCancelTool { name: "gemini".into() };
        assert_eq!(tool.to_string(), "gemini was cancelled by gemini-cancel");
        let spawn = Failure::Spawn { error: "Permission denied (os error 13)".into() };
        assert_eq!(spawn.to_string(), "Failed to spawn command: Permission denied (os error 13)");
        assert!(Failure::NotFound { name: "agy".into() }.to_string().starts_with(
            "Could not find the \"agy\" executable.\nThe MCP server runs in its own process"
        ));
    }

    #[test]
    fn what_the_child_leaves_behind_is_killed_when_it_exits() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let runner = Runner::new(&runs, &never, None, limits());
        // The background sleep keeps no pipe open, so only the group kill can end it.
        let args = script("sleep 30 </dev/null >/dev/null 2>&1 & echo $!");
        let pid: i32 = runner.execute(sh(&args)).unwrap().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while is_running(pid) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        let alive = is_running(pid);
        assert!(!alive, "the background child {pid} outlived its run");
    }
}
