//! The one door for child processes: what a run is given (`ChildSpec`, a located `Program`, its
//! `Limits`) and what it gives back (`Finished`, or a `Failure` whose text the caller sees), and the
//! `Runner` a backend gets: the registry of running children, its call's abort flag, its stdout
//! sink and its limits. The registry and the guard of each child are in `registry.rs`, one child's
//! run (stdin, pipes, the wait, the kill) in `child.rs`, which program runs in `program.rs`. How a
//! tree is made and killed and how a CLI is found differ per system (`unix.rs`: a process group;
//! `windows.rs`: a Job Object and npm shims); the rest is written once.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::{js, redact};

mod child;
// The Windows decisions that touch no system (the command-line budget, finding and launching the
// CLIs) are tested on every system.
#[cfg(any(windows, test))]
mod cmdline;
mod program;
mod registry;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(any(windows, test))]
mod winresolve;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
use windows as sys;

pub use program::{Identity, Program, SearchEnv};
pub use registry::Runs;

/// The family of systems this build runs on, for the texts that differ per system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code, reason = "a build names only its own system")]
pub enum System {
    Posix,
    Windows,
}

/// The system this build runs on.
pub const SYSTEM: System = sys::SYSTEM;

/// Whether `script` takes BSD's arguments (macOS) rather than util-linux's.
pub const BSD_SCRIPT: bool = sys::BSD_SCRIPT;

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

/// What to run: a located program, with its arguments.
pub struct ChildSpec<'a> {
    pub program: &'a Program,
    pub args: &'a [String],
    /// Written to the child's stdin from its own thread, then stdin is closed.
    pub stdin: Option<Arc<dyn Input>>,
    /// What the backend watches while the child runs, beside what the executor watches itself.
    pub watch: Option<Arc<dyn Watch>>,
}

/// A backend's own reason to end a run early: it sees stdout as it comes and is asked between
/// slices of the wait (every 25 ms) whether the run is over.
pub trait Watch: Send + Sync {
    /// Sees each chunk of stdout as it arrives, on the reader's thread.
    fn stdout(&self, chunk: &[u8]);
    /// True ends the run now: its tree is killed and it counts as an exit 0 with what it wrote so
    /// far (the backend knows why, and says so).
    fn done(&self) -> bool;
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
    /// Ended by its backend's `Watch`: killed, and taken as an exit 0.
    Settled,
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
    /// The program `name` was not found; `text` is what its backend tells the user.
    NotFound { name: String, text: String },
    /// The child could not be started for another reason (the OS error's text).
    Spawn { error: String },
    /// The relay would not start the child, for the reason `text` says whole: a command line over
    /// Windows' limit, or a batch file that is not an npm shim.
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
            Failure::NotFound { text, .. } => f.write_str(text),
            Failure::Spawn { error } => write!(f, "Failed to spawn command: {error}"),
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
        let name = command.program.name().to_string();
        let finished = child::run(self, command, timeout, RunKind::Call)?;
        outcome(name, Limits { timeout, ..self.limits }, self.share, finished)
    }

    /// `execute`, also handing back what the child wrote to stderr (empty when it never ran): agy
    /// tells its error line, a cut-off answer and a denied approval there, whatever its exit.
    pub fn execute_with_stderr(&self, command: ChildSpec<'_>) -> (Result<String, Failure>, String) {
        let name = command.program.name().to_string();
        let finished = match child::run(self, command, self.limits.timeout, RunKind::Call) {
            Ok(finished) => finished,
            Err(failure) => return (Err(failure), String::new()),
        };
        let stderr = String::from_utf8_lossy(&finished.stderr).into_owned();
        (outcome(name, self.limits, self.share, finished), stderr)
    }

    /// A probe: unlogged, not stopped by `gemini-cancel` nor by the call's abort.
    pub fn probe(&self, command: ChildSpec<'_>, timeout: Duration) -> Result<Finished, Failure> {
        child::run(self, command, timeout, RunKind::Probe)
    }

    /// A recovery run: unlogged, not stopped by `gemini-cancel`, stopped by the call's abort.
    pub fn recover(&self, command: ChildSpec<'_>, timeout: Duration) -> Result<Finished, Failure> {
        child::run(self, command, timeout, RunKind::Recovery)
    }
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
        Ending::Exited | Ending::Settled => (),
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
    if finished.status.success() || finished.ending == Ending::Settled {
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

// Children are POSIX shell scripts here.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    use crate::testutil::is_running;

    fn limits() -> Limits {
        Limits { timeout: Duration::from_secs(10), max_output: 1024 }
    }

    use std::path::PathBuf;
    use std::thread;
    use std::time::Instant;

    fn not_found(name: &str) -> String {
        format!("no {name}")
    }

    fn shell() -> Program {
        Program::locate("sh", Some(PathBuf::from("/bin/sh")), &SearchEnv::default(), not_found)
    }

    fn sh<'a>(program: &'a Program, args: &'a [String]) -> ChildSpec<'a> {
        ChildSpec { program, args, stdin: None, watch: None }
    }

    fn script(text: &str) -> Vec<String> {
        vec!["-c".to_string(), text.to_string()]
    }

    #[test]
    fn success_is_trimmed_stdout() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let shell = shell();
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("echo '  hello  '");
        assert_eq!(runner.execute(sh(&shell, &args)), Ok("hello".to_string()));
    }

    #[test]
    fn stdin_reaches_the_child() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let shell = shell();
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("wc -c");
        let mut command = sh(&shell, &args);
        command.stdin = Some(Arc::new("x".repeat(100_000)));
        let runner = Runner { limits: Limits { max_output: 1 << 20, ..limits() }, ..runner };
        assert_eq!(runner.execute(command), Ok("100000".to_string()));
    }

    #[test]
    fn output_past_the_cap_stops_the_child() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let shell = shell();
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("yes");
        let failure = runner.execute(sh(&shell, &args)).unwrap_err();
        assert_eq!(failure, Failure::Overflow { name: "sh".into(), limit: 1024 });
        assert_eq!(failure.to_string(), "sh produced more than 1024 bytes of output; stopped it.");
    }

    #[test]
    fn a_closed_registry_spawns_nothing() {
        let runs = Runs::default();
        runs.kill_all();
        let never = AtomicBool::new(false);
        let shell = shell();
        let runner = Runner::new(&runs, &never, None, limits());
        let args = script("echo never");
        let failure = runner.execute(sh(&shell, &args)).unwrap_err();
        assert_eq!(failure.to_string(), "sh was cancelled");
    }

    #[test]
    fn an_aborted_call_never_spawns() {
        let runs = Runs::default();
        let aborted = AtomicBool::new(true);
        let shell = shell();
        let runner = Runner::new(&runs, &aborted, None, limits());
        let dir = std::env::temp_dir().join(format!("exec-abort-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let args = script(&format!("touch {}", dir.display()));
        let failure = runner.execute(sh(&shell, &args)).unwrap_err();
        assert_eq!(failure, Failure::StoppedByCaller { name: "sh".into() });
        assert!(!dir.exists(), "the child ran");
        // A probe still runs: its answer is kept for the process.
        assert!(runner.probe(sh(&shell, &args), Duration::from_secs(5)).is_ok());
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
    }

    #[test]
    fn a_writer_that_left_the_tree_does_not_hold_the_run() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let shell = shell();
        let runner = Runner::new(&runs, &never, None, Limits { max_output: 1 << 24, ..limits() });
        // A session of its own, out of the tree's reach, that keeps writing to the run's stdout.
        let escapee = "import os, time\nos.setsid()\nos.write(2, b'%d' % os.getpid())\nos.close(2)\n\
                       for _ in range(2000):\n    os.write(1, b'x' * 100 + b'\\n')\n    time.sleep(0.005)";
        let args = script(&format!("python3 -c \"{escapee}\" & sleep 0.3"));
        let start = Instant::now();
        let (outcome, stderr) = runner.execute_with_stderr(sh(&shell, &args));
        let took = start.elapsed();
        if let Ok(pid) = stderr.trim().parse::<i32>() {
            // SAFETY: kill(2) with a pid this test's own child printed.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        // What stdout held is dropped with its reader; the run itself ended with its child.
        assert!(!matches!(outcome, Err(Failure::TimedOut { .. })), "{outcome:?}");
        assert!(took < Duration::from_secs(3), "the run waited {took:?} for the escaped writer");
    }

    #[test]
    fn what_the_child_leaves_behind_is_killed_when_it_exits() {
        let runs = Runs::default();
        let never = AtomicBool::new(false);
        let shell = shell();
        let runner = Runner::new(&runs, &never, None, limits());
        // The background sleep keeps no pipe open, so only the group kill can end it.
        let args = script("sleep 30 </dev/null >/dev/null 2>&1 & echo $!");
        let pid: i32 = runner.execute(sh(&shell, &args)).unwrap().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while is_running(pid) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        let alive = is_running(pid);
        assert!(!alive, "the background child {pid} outlived its run");
    }
}
