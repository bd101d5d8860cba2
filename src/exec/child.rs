//! One child's run: its command (no shell, a tree of its own), the spawn through the registry's
//! gate, stdin fed from its own thread, stdout and stderr drained on their own threads with a size
//! cap, and the wait for its exit or for what stops it (`Stop`: the deadline, `gemini-cancel`, the
//! call's abort, the output cap), then the kill of its tree and the reap.

use std::io::{self, Read};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, RecvTimeoutError, bounded};

use super::program::Launch;
use super::registry::{Guard, SpawnError};
use super::{ChildSpec, Ending, Failure, Finished, Input, OnStdout, RunKind, Runner, Watch, sys};
use crate::redact;

/// How often a waiting run looks at what may stop it.
const POLL_SLICE: Duration = Duration::from_millis(25);
/// How long a pipe reader may wait in reads once the child's tree is gone. A reader still blocked
/// after that (a pipe held open by a process that left the tree, as with `setsid`) is abandoned; a
/// reader busy with what it read (agy's preview decoding a large event) is waited for, up to the
/// deadline.
const READER_GRACE: Duration = Duration::from_millis(150);
/// The most a pipe reader may still read once the child's tree is gone: what a pipe can hold
/// (Linux lets a process grow its pipe to 1 MiB) with room to spare. More comes from a process that
/// left the tree and keeps writing; such a reader is abandoned.
const LATE_BYTES: u64 = 4 << 20;
/// The largest stdin written without a thread: the smallest default pipe buffer of the supported
/// systems (macOS starts at 16 KiB; Linux has 64 KiB).
const SMALL_STDIN: usize = 16 * 1024;
/// Stack of the pipe reader and stdin writer threads that only copy bytes.
const IO_THREAD_STACK: usize = 64 * 1024;
/// Stack of a pipe reader that feeds the preview: the stream-json decoder parses each event line,
/// and serde_json recurses once per level of nesting (up to 128). Only reserved, not used, memory.
const DECODING_THREAD_STACK: usize = 1024 * 1024;

/// What may stop a running child, looked at between slices of the wait.
struct Stop<'a> {
    deadline: Instant,
    /// Raised by `gemini-cancel` and by shutdown.
    cancelled: &'a AtomicBool,
    /// The call's abort (`None` for a probe, which only its deadline or shutdown stops).
    aborted: Option<&'a AtomicBool>,
    /// Raised by a pipe reader past the output cap.
    overflow: &'a AtomicBool,
    /// The backend's own watch.
    watch: Option<&'a dyn Watch>,
}

/// A pipe reader: what it read, once it is done, and what it is doing meanwhile.
struct Reader {
    done: Receiver<Vec<u8>>,
    progress: Arc<ReaderProgress>,
}

/// What a pipe reader is doing, for `collect`.
#[derive(Default)]
struct ReaderProgress {
    /// Whether it is waiting in a read.
    in_read: AtomicBool,
    /// How many bytes it has read.
    bytes: AtomicU64,
}

/// Runs a child to its exit, the deadline, cancellation or the output cap, and kills whatever it
/// left in its process tree.
pub(super) fn run(
    runner: &Runner<'_>,
    spec: ChildSpec<'_>,
    timeout: Duration,
    kind: RunKind,
) -> Result<Finished, Failure> {
    let start = Instant::now();
    let launch = spec.program.launch()?;
    sys::check_launch(spec.program.name(), launch, spec.args)?;
    let mut cmd = command(launch, spec.args);
    if spec.stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let (mut child, guard) = spawn(runner, &spec, &mut cmd, kind)?;
    if let (Some(data), Some(stdin)) = (spec.stdin, child.stdin.take()) {
        feed_stdin(stdin, data);
    }
    let overflow = Arc::new(AtomicBool::new(false));
    let preview = if kind == RunKind::Probe { None } else { runner.on_stdout.clone() };
    let on_stdout: Option<OnStdout> = match (spec.watch.clone(), preview) {
        (Some(watch), preview) => Some(Arc::new(move |chunk: &[u8]| {
            watch.stdout(chunk);
            if let Some(preview) = &preview {
                preview(chunk);
            }
        })),
        (None, preview) => preview,
    };
    let cap = runner.limits.max_output;
    let stdout = drain(child.stdout.take(), cap, overflow.clone(), on_stdout);
    let stderr = drain(child.stderr.take(), cap, overflow.clone(), None);
    let aborted = (kind != RunKind::Probe).then_some(runner.abort);
    let cancelled = guard.cancelled.clone();
    let stop = Stop {
        deadline: start + timeout,
        cancelled: &cancelled,
        aborted,
        overflow: &overflow,
        watch: spec.watch.as_deref(),
    };
    let ending = wait(&mut child, &guard, &stop);
    let status = guard.finish(&mut child);
    let ending = match ending {
        Ending::Exited => stop.after_exit(status),
        ending => ending,
    };
    let (stdout, stderr) = (collect(stdout, stop.deadline), collect(stderr, stop.deadline));
    if kind == RunKind::Call {
        let code = status.code().map_or("null".to_string(), |c| c.to_string());
        let secs = format!("{:.1}", start.elapsed().as_secs_f64());
        log::info!("[{secs}s] Process finished with exit code: {code}");
    }
    Ok(Finished { ending, status, stdout, stderr })
}

/// Builds the command for `launch` and `args`: no shell, its own process tree, stdin closed,
/// stdout and stderr piped. This is the only place in the crate that creates a
/// `std::process::Command`.
#[allow(clippy::disallowed_methods)]
fn command(launch: &Launch, args: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(&launch.program);
    cmd.args(&launch.leading).args(args);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    sys::own_tree(&mut cmd);
    cmd
}

/// Spawns and registers the child, unless shutdown closed the gate or (for all but a probe) the
/// call was cancelled first: a call cancelled before its child starts never starts it (and never
/// writes its prompt); a probe's answer is kept for the whole process.
fn spawn<'r>(
    runner: &Runner<'r>,
    spec: &ChildSpec<'_>,
    cmd: &mut std::process::Command,
    kind: RunKind,
) -> Result<(Child, Guard<'r>), Failure> {
    let name = spec.program.name();
    let stopped = || Failure::StoppedByCaller { name: name.to_string() };
    let Some(pass) = runner.runs.enter() else { return Err(stopped()) };
    if kind != RunKind::Probe && runner.abort.load(Ordering::SeqCst) {
        return Err(stopped());
    }
    if kind == RunKind::Call {
        let started_ms =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        log::info!("[{started_ms}] Starting: {name} {}", redact::argv_shape(spec.args));
    }
    match runner.runs.spawn(&pass, cmd, kind == RunKind::Call) {
        Ok(started) => Ok(started),
        Err(SpawnError::Os(err)) if err.kind() == io::ErrorKind::NotFound => {
            log::error!("Process error: {err}");
            Err(spec.program.not_found(name))
        }
        Err(SpawnError::Os(err) | SpawnError::Tree(err)) => {
            log::error!("Process error: {err}");
            Err(Failure::Spawn { error: err.to_string() })
        }
    }
}

/// Waits for the child's exit (without reaping it) or for what stops it first; a stopped child's
/// tree is killed at once.
fn wait(child: &mut Child, guard: &Guard<'_>, stop: &Stop<'_>) -> Ending {
    loop {
        if let Some(ending) = stop.reason() {
            guard.kill();
            return ending;
        }
        let slice = POLL_SLICE.min(stop.deadline.saturating_duration_since(Instant::now()));
        match sys::exited(child, slice) {
            Ok(true) => return Ending::Exited,
            Ok(false) => (),
            Err(err) => {
                log::error!("Process error: {err}");
                guard.kill();
                return Ending::StoppedByCaller;
            }
        }
    }
}

impl Stop<'_> {
    /// Why the run must stop now, if it must.
    fn reason(&self) -> Option<Ending> {
        if self.cancelled.load(Ordering::SeqCst) {
            return Some(Ending::StoppedByCancelTool);
        }
        if self.aborted.is_some_and(|aborted| aborted.load(Ordering::SeqCst)) {
            return Some(Ending::StoppedByCaller);
        }
        if self.overflow.load(Ordering::SeqCst) {
            return Some(Ending::Overflow);
        }
        if self.watch.is_some_and(|watch| watch.done()) {
            return Some(Ending::Settled);
        }
        (Instant::now() >= self.deadline).then_some(Ending::TimedOut)
    }

    /// How a run whose child exited ended. A kill (by `gemini-cancel`, the call's abort or
    /// shutdown) can land while the wait sleeps, so a child that was killed after a flag was
    /// raised was stopped, whatever the wait saw first; and a child that overflowed and then
    /// exited before the next look was still cut short.
    fn after_exit(&self, status: ExitStatus) -> Ending {
        let killed = sys::was_killed(status);
        if killed && self.aborted.is_some_and(|aborted| aborted.load(Ordering::SeqCst)) {
            Ending::StoppedByCaller
        } else if killed && self.cancelled.load(Ordering::SeqCst) {
            Ending::StoppedByCancelTool
        } else if self.overflow.load(Ordering::SeqCst) {
            Ending::Overflow
        } else {
            Ending::Exited
        }
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
) -> Option<Reader> {
    let mut pipe = pipe?;
    let (tx, done) = bounded(1);
    let progress = Arc::new(ReaderProgress::default());
    let stack = if on_chunk.is_some() { DECODING_THREAD_STACK } else { IO_THREAD_STACK };
    let seen = progress.clone();
    let body = move || {
        let mut acc = Vec::new();
        let mut buf = [0u8; 8 * 1024];
        loop {
            seen.in_read.store(true, Ordering::SeqCst);
            let read = pipe.read(&mut buf);
            seen.in_read.store(false, Ordering::SeqCst);
            let n = match read {
                Ok(0) => break,
                Ok(n) => {
                    seen.bytes.fetch_add(n as u64, Ordering::SeqCst);
                    n
                }
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
    let spawned = thread::Builder::new().name("child-pipe".into()).stack_size(stack).spawn(body);
    match spawned {
        Ok(_) => Some(Reader { done, progress }),
        Err(err) => {
            log::error!("Process error: {err}");
            None
        }
    }
}

/// What a pipe reader read. Its tree is already killed, so the pipe closes at once unless a
/// process that escaped the tree holds it: a reader that waits in reads for `READER_GRACE` in all,
/// or reads more than `LATE_BYTES`, is abandoned, never joined. A reader busy with what it read is
/// waited for, up to `deadline`.
fn collect(reader: Option<Reader>, deadline: Instant) -> Vec<u8> {
    let Some(reader) = reader else { return Vec::new() };
    let deadline = deadline.max(Instant::now() + READER_GRACE);
    let progress = &reader.progress;
    let first = progress.bytes.load(Ordering::SeqCst);
    let mut waited = Duration::ZERO;
    let mut last = Instant::now();
    loop {
        let slice = POLL_SLICE.min(deadline.saturating_duration_since(last));
        match reader.done.recv_timeout(slice) {
            Ok(read) => return read,
            Err(RecvTimeoutError::Disconnected) => return Vec::new(),
            Err(RecvTimeoutError::Timeout) => (),
        }
        let now = Instant::now();
        if progress.in_read.load(Ordering::SeqCst) {
            waited += now - last;
        }
        last = now;
        let late = progress.bytes.load(Ordering::SeqCst) - first > LATE_BYTES;
        if now >= deadline || waited >= READER_GRACE || late {
            return Vec::new();
        }
    }
}
