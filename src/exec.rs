//! The one door for child processes: spawning without a shell in a process group of its own, feeding
//! stdin from its own thread, draining stdout and stderr on their own threads with a size cap, the
//! deadline, cancellation, group kill, reaping, and the error texts callers see.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wait_timeout::ChildExt;

use crate::chan::{Receiver, unbounded};
use crate::{js, redact, threads};

/// How often a waiting run looks at its cancellation flags and output cap.
const POLL_SLICE: Duration = Duration::from_millis(25);
/// How long reader threads get to finish once the child is gone. A grandchild that keeps the
/// pipes open past this is killed with the group; after a second grace the readers are abandoned.
const READER_GRACE: Duration = Duration::from_millis(150);

/// The largest stdin written without a thread: the smallest default pipe buffer of the supported
/// systems (macOS starts at 16 KiB; Linux has 64 KiB).
const SMALL_STDIN: usize = 16 * 1024;

/// What to run. `name` is the logical command (`agy`, `gemini`) used in messages and logs.
pub struct Spec<'a> {
    pub name: &'a str,
    pub program: &'a OsStr,
    pub args: &'a [String],
    /// Written to the child's stdin from its own thread, then stdin is closed.
    pub stdin: Option<Arc<String>>,
    pub timeout: Duration,
    pub max_output: usize,
    /// Registered for `gemini-cancel` (probes and recovery runs are not).
    pub cancellable: bool,
    /// Logged as a command execution (§8.3).
    pub logged: bool,
}

/// Called with every chunk the child writes to stdout, as it arrives.
pub type OnStdout = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited,
    TimedOut,
    /// Stopped by `gemini-cancel`.
    Cancelled,
    /// Stopped because the request was cancelled by the client or the server is shutting down.
    Aborted,
    /// Stopped because stdout or stderr passed the output cap.
    Overflow,
}

/// Everything a finished (or stopped) run produced.
#[derive(Debug)]
pub struct Finished {
    pub ending: Ending,
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// A failure of the common executor (§4.2), carrying the text the caller sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The binary was not found; the multi-line ENOENT text.
    NotFound(String),
    Spawn(String),
    TimedOut(String),
    Cancelled(String),
    Aborted(String),
    Overflow(String),
    /// Non-zero exit (or killed by a signal); carries the raw stdout for agy's JSON verdict.
    Exit {
        message: String,
        code: Option<i32>,
        stdout: String,
    },
    /// Exit 0 with nothing on stdout but text on stderr.
    StderrOnly(String),
}

/// Every child that is running, for `gemini-cancel` and for shutdown.
#[derive(Default)]
pub struct Runs {
    next: AtomicU64,
    map: Mutex<HashMap<u64, RunEntry>>,
}

struct RunEntry {
    pgid: i32,
    cancellable: bool,
    cancelled: Arc<AtomicBool>,
}

/// Deregisters a run and kills its group if the run ends early (a panic, an early return).
struct Guard<'a> {
    runs: &'a Runs,
    key: u64,
    pgid: i32,
    reaped: bool,
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::NotFound(m)
            | Failure::Spawn(m)
            | Failure::TimedOut(m)
            | Failure::Cancelled(m)
            | Failure::Aborted(m)
            | Failure::Overflow(m)
            | Failure::StderrOnly(m) => m,
            Failure::Exit { message, .. } => message,
        }
    }

    /// Timeouts and cancellation end a call: no recovery runs after them (D6).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Failure::TimedOut(_) | Failure::Cancelled(_) | Failure::Aborted(_))
    }
}

impl Runs {
    /// Marks every cancellable running child as cancelled; their runs kill their groups within a
    /// poll slice. Returns how many were signalled.
    pub fn cancel_all(&self) -> usize {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let mut count = 0;
        for entry in map.values().filter(|entry| entry.cancellable) {
            if !entry.cancelled.swap(true, Ordering::SeqCst) {
                count += 1;
            }
        }
        count
    }

    /// Shutdown: SIGKILL the process group of every child, cancellable or not.
    pub fn kill_all(&self) {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        for entry in map.values() {
            entry.cancelled.store(true, Ordering::SeqCst);
            kill_group(entry.pgid);
        }
    }

    fn register(&self, pgid: i32, cancellable: bool) -> (u64, Arc<AtomicBool>) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let cancelled = Arc::new(AtomicBool::new(false));
        let entry = RunEntry { pgid, cancellable, cancelled: cancelled.clone() };
        self.map.lock().unwrap_or_else(|e| e.into_inner()).insert(key, entry);
        (key, cancelled)
    }

    fn deregister(&self, key: u64) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if !self.reaped {
            kill_group(self.pgid);
        }
        self.runs.deregister(self.key);
    }
}

/// Builds a command for `program`: no shell, its own process group, stdin closed, stdout and stderr
/// piped. This is the only place in the crate that creates a `std::process::Command`.
#[allow(clippy::disallowed_methods)]
pub fn command(program: &OsStr, args: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs a child to completion, a deadline, cancellation or the output cap. `aborted` is the
/// request-level flag (client cancellation, shutdown).
pub fn run(
    spec: Spec<'_>,
    runs: &Runs,
    aborted: &AtomicBool,
    on_stdout: Option<OnStdout>,
) -> Result<Finished, Failure> {
    let started_ms =
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    if spec.logged {
        log::info!("[{started_ms}] Starting: {} {}", spec.name, redact::argv_shape(spec.args));
    }
    let start = Instant::now();
    let mut cmd = command(spec.program, spec.args);
    if spec.stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            log::error!("Process error: {err}");
            if err.kind() == io::ErrorKind::NotFound {
                return Err(Failure::NotFound(not_found_message(spec.name)));
            }
            return Err(Failure::Spawn(format!("Failed to spawn command: {err}")));
        }
    };
    let pgid = child.id() as i32;
    let (key, cancelled) = runs.register(pgid, spec.cancellable);
    let mut guard = Guard { runs, key, pgid, reaped: false };

    if let (Some(data), Some(stdin)) = (spec.stdin, child.stdin.take()) {
        feed_stdin(stdin, data);
    }
    let overflow = Arc::new(AtomicBool::new(false));
    let stdout = drain(child.stdout.take(), spec.max_output, overflow.clone(), on_stdout);
    let stderr = drain(child.stderr.take(), spec.max_output, overflow.clone(), None);

    let deadline = start + spec.timeout;
    let (ending, status) =
        wait(&mut child, deadline, &[(&cancelled, Ending::Cancelled)], aborted, &overflow);
    let status = match status {
        Some(status) => status,
        None => {
            kill_group(pgid);
            match child.wait() {
                Ok(status) => status,
                Err(err) => {
                    log::error!("Process error: {err}");
                    ExitStatus::from_raw(libc::SIGKILL)
                }
            }
        }
    };
    guard.reaped = true;
    let (stdout, stderr) = collect(pgid, stdout, stderr);
    drop(guard);
    // A child that overflowed and then exited before the next poll was still cut short.
    let ending = match ending {
        Ending::Exited if overflow.load(Ordering::SeqCst) => Ending::Overflow,
        ending => ending,
    };

    if spec.logged {
        let code = status.code().map_or("null".to_string(), |c| c.to_string());
        let secs = format!("{:.1}", start.elapsed().as_secs_f64());
        log::info!("[{secs}s] Process finished with exit code: {code}");
    }
    Ok(Finished { ending, status: Some(status), stdout, stderr })
}

/// The common executor of §4.2: runs the child and turns the outcome into the trimmed stdout or
/// the failure text a caller sees.
pub fn execute(
    spec: Spec<'_>,
    runs: &Runs,
    aborted: &AtomicBool,
    on_stdout: Option<OnStdout>,
) -> Result<String, Failure> {
    let name = spec.name.to_string();
    let timeout = spec.timeout;
    let max_output = spec.max_output;
    let finished = run(spec, runs, aborted, on_stdout)?;
    let stdout = String::from_utf8_lossy(&finished.stdout);
    let stderr = String::from_utf8_lossy(&finished.stderr);
    match finished.ending {
        Ending::Exited => (),
        Ending::TimedOut => {
            let secs = js::number((timeout.as_millis() as f64 / 1000.0).round());
            log::error!("{name} timed out after {secs}s; killing it.");
            return Err(Failure::TimedOut(format!("{name} timed out after {secs}s")));
        }
        Ending::Cancelled => {
            return Err(Failure::Cancelled(format!("{name} was cancelled by gemini-cancel")));
        }
        Ending::Aborted => return Err(Failure::Aborted(format!("{name} was cancelled"))),
        Ending::Overflow => {
            return Err(Failure::Overflow(format!(
                "{name} produced more than {max_output} bytes of output; stopped it."
            )));
        }
    }
    let status = finished.status.unwrap_or_else(|| ExitStatus::from_raw(0));
    if status.success() {
        let out = stdout.trim();
        let err = stderr.trim();
        if out.is_empty() && !err.is_empty() {
            return Err(Failure::StderrOnly(err.to_string()));
        }
        log::info!("Response: {} chars", redact::utf16_len(&stdout));
        return Ok(out.to_string());
    }
    let code = status.code();
    let shown = code.map_or("null".to_string(), |c| c.to_string());
    log::error!("Failed with exit code {shown}");
    let detail = [stderr.trim(), stdout.trim()].into_iter().find(|s| !s.is_empty());
    Err(Failure::Exit {
        message: format!(
            "Command failed with exit code {shown}: {}",
            detail.unwrap_or("Unknown error")
        ),
        code,
        stdout: stdout.into_owned(),
    })
}

/// The §3.3 text for a binary that could not be found (POSIX variants).
pub fn not_found_message(name: &str) -> String {
    let mut lines = vec![
        format!("Could not find the \"{name}\" executable."),
        "The MCP server runs in its own process and may not inherit your shell's PATH.".to_string(),
        format!("• Verify it is installed and resolvable: `which {name}`."),
    ];
    match name {
        "agy" => lines.extend([
            "• Antigravity CLI (agy) is the Gemini CLI's successor and this tool's default backend since 2026-06-18. To install it, run `curl -fsSL https://antigravity.google/cli/install.sh | bash`, then run `agy` once to sign in.",
            "• It installs to ~/.local/bin; add that to PATH or set AGY_CLI_PATH to the agy binary.",
            "• On a supported Gemini tier (paid API key or Enterprise/Standard license)? Set GEMINI_MCP_BACKEND=gemini to keep using the Gemini CLI instead.",
            "• More: https://goo.gle/gemini-cli-migration and docs/migration/antigravity-cli.md",
        ].map(String::from)),
        "gemini" => lines.extend([
            "• The Gemini CLI stopped serving free, Pro, and Ultra users on 2026-06-18. Migrate to the Antigravity CLI (agy), this tool's new default: run `curl -fsSL https://antigravity.google/cli/install.sh | bash`, then unset GEMINI_MCP_BACKEND.",
            "• Enterprise/Standard license or paid API key? Your Gemini access is unaffected: reinstall the Gemini CLI or set GEMINI_CLI_PATH to its full path.",
            "• More: https://goo.gle/gemini-cli-migration and docs/migration/antigravity-cli.md",
        ].map(String::from)),
        _ => (),
    }
    lines.join("\n")
}

/// SIGKILL to a whole process group. `ESRCH` (already gone) is fine.
pub fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) has no memory-safety preconditions; a negative pid names the group.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

fn wait(
    child: &mut Child,
    deadline: Instant,
    flags: &[(&AtomicBool, Ending)],
    aborted: &AtomicBool,
    overflow: &AtomicBool,
) -> (Ending, Option<ExitStatus>) {
    loop {
        for (flag, ending) in flags {
            if flag.load(Ordering::SeqCst) {
                return (*ending, None);
            }
        }
        if aborted.load(Ordering::SeqCst) {
            return (Ending::Aborted, None);
        }
        if overflow.load(Ordering::SeqCst) {
            return (Ending::Overflow, None);
        }
        let now = Instant::now();
        if now >= deadline {
            return (Ending::TimedOut, None);
        }
        match child.wait_timeout(POLL_SLICE.min(deadline - now)) {
            Ok(Some(status)) => return (Ending::Exited, Some(status)),
            Ok(None) => (),
            Err(err) => {
                log::error!("Process error: {err}");
                return (Ending::Aborted, None);
            }
        }
    }
}

/// Writes the child's stdin, then closes it. A payload that fits in an empty pipe buffer is written
/// at once (the write cannot block); a larger one gets its own thread so a child that reads slowly,
/// or not at all, never blocks the run.
fn feed_stdin(mut stdin: std::process::ChildStdin, data: Arc<String>) {
    if data.len() <= SMALL_STDIN {
        if let Err(err) = stdin.write_all(data.as_bytes()) {
            log::error!("stdin write failed: {err}");
        }
        return;
    }
    let spawned = threads::spawn(
        "child-stdin".into(),
        Box::new(move || {
            if let Err(err) = stdin.write_all(data.as_bytes()) {
                log::error!("stdin write failed: {err}");
            }
        }),
    );
    if let Err(err) = spawned {
        log::error!("stdin write failed: {err}");
    }
}

fn drain<R: Read + Send + 'static>(
    pipe: Option<R>,
    cap: usize,
    overflow: Arc<AtomicBool>,
    on_chunk: Option<OnStdout>,
) -> Option<Receiver<Vec<u8>>> {
    let mut pipe = pipe?;
    let (tx, rx) = unbounded();
    let spawned = threads::spawn(
        "child-pipe".into(),
        Box::new(move || {
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
                    // Keep draining so the child never blocks on a full pipe; the run kills it.
                    overflow.store(true, Ordering::SeqCst);
                    continue;
                }
                acc.extend_from_slice(&buf[..n]);
                if let Some(on_chunk) = &on_chunk {
                    on_chunk(&buf[..n]);
                }
            }
            tx.send(acc);
        }),
    );
    match spawned {
        Ok(_) => Some(rx),
        Err(err) => {
            log::error!("Process error: {err}");
            None
        }
    }
}

/// Collects both pipes. A grandchild holding a pipe open gets a grace period, then the group is
/// killed, then one more grace; a reader still blocked after that is abandoned, never joined.
fn collect(
    pgid: i32,
    stdout: Option<Receiver<Vec<u8>>>,
    stderr: Option<Receiver<Vec<u8>>>,
) -> (Vec<u8>, Vec<u8>) {
    let mut killed = false;
    let mut take = |rx: Option<Receiver<Vec<u8>>>| -> Vec<u8> {
        let Some(rx) = rx else { return Vec::new() };
        if let Ok(bytes) = rx.recv_timeout(READER_GRACE) {
            return bytes;
        }
        if !killed {
            kill_group(pgid);
            killed = true;
        }
        rx.recv_timeout(READER_GRACE).unwrap_or_default()
    };
    let out = take(stdout);
    let err = take(stderr);
    (out, err)
}
