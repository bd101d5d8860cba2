//! How an agy print-mode run may end without agy saying so on its own: an answer that is in while
//! agy does not exit, background tasks agy stops at exit, and a quota error that agy only writes to
//! its `--log-file` while it retries silently. The run's `Watch` (stdout's result event, the log
//! file read as it grows) and the private log file, deleted when the run ends.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::backend::agy::output;
use crate::backend::quota::{self, Quota};
use crate::exec::Watch;
use crate::state;

/// How long agy may take to exit once its result event is read.
const RESULT_GRACE: Duration = Duration::from_secs(5);
/// A log line longer than this is looked at for its start only (the markers are short; a line may
/// hold the whole prompt).
const LOG_LINE_CAP: usize = 16 * 1024;

/// Where agy's log files go: one private directory per run. The one place that chooses it.
fn log_dir() -> io::Result<PathBuf> {
    state::private_temp_dir("gemini-relay-agy-log")
}

/// agy's `--log-file` for one run: a new private file in a private directory, both removed when
/// this is dropped, whatever the outcome (the log may hold the prompt).
pub struct RunLog {
    dir: PathBuf,
    path: PathBuf,
}

impl RunLog {
    pub fn create() -> io::Result<RunLog> {
        let dir = log_dir()?;
        let path = dir.join("agy.log");
        if let Err(err) = state::create_private(&path) {
            let _ = fs::remove_dir(&dir);
            return Err(err);
        }
        Ok(RunLog { dir, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        if let Err(err) = fs::remove_dir(&self.dir) {
            log::warn!("could not delete agy's log directory {}: {err}", self.dir.display());
        }
    }
}

/// What one agy run is watched for.
pub struct Endings {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The stdout line read so far (stream-json runs only).
    line: Vec<u8>,
    stream: bool,
    /// When the result event was read.
    result_at: Option<Instant>,
    log: Option<LogTail>,
    quota: Option<Quota>,
}

/// The log file, read from where the last read stopped.
struct LogTail {
    file: File,
    offset: u64,
    line: Vec<u8>,
}

impl Endings {
    /// A watch for a run; `stream` when it writes stream-json events, `log` the file it logs to.
    pub fn new(stream: bool, log: Option<&RunLog>) -> Endings {
        let log = log.and_then(|log| File::open(log.path()).ok());
        let log = log.map(|file| LogTail { file, offset: 0, line: Vec::new() });
        Endings { state: Mutex::new(State { stream, log, ..State::default() }) }
    }

    /// The quota error the log showed, which ended the run.
    pub fn quota(&self) -> Option<Quota> {
        self.lock().quota
    }

    /// Stops reading the log, so that it can be deleted (Windows keeps an open file).
    pub fn close_log(&self) {
        self.lock().log = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Watch for Endings {
    fn stdout(&self, chunk: &[u8]) {
        let mut state = self.lock();
        if !state.stream || state.result_at.is_some() {
            return;
        }
        for part in chunk.split_inclusive(|&b| b == b'\n') {
            state.line.extend_from_slice(part);
            if part.ends_with(b"\n") {
                let line = std::mem::take(&mut state.line);
                if output::agy_result(&String::from_utf8_lossy(&line), true).is_some() {
                    state.result_at = Some(Instant::now());
                    return;
                }
            }
        }
    }

    fn done(&self) -> bool {
        let mut state = self.lock();
        if let Some(tail) = &mut state.log
            && let Some(quota) = tail.read_quota()
        {
            log::warn!("agy's log reports an exhausted quota; stopping the run.");
            state.quota = Some(quota);
            return true;
        }
        if state.result_at.is_some_and(|at| at.elapsed() >= RESULT_GRACE) {
            log::info!("agy did not exit within 5 s of its result; killed its process tree");
            return true;
        }
        false
    }
}

impl LogTail {
    /// Reads what the log gained since the last read; the quota error of its first line that
    /// reports one.
    fn read_quota(&mut self) -> Option<Quota> {
        let len = self.file.metadata().ok()?.len();
        if len < self.offset {
            // Truncated and rewritten: read it again from its start.
            self.offset = 0;
            self.line.clear();
        }
        let mut buf = [0u8; 8 * 1024];
        let mut found = None;
        while self.offset < len && found.is_none() {
            let n = match read_at(&mut self.file, self.offset, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            self.offset += n as u64;
            for part in buf[..n].split_inclusive(|&b| b == b'\n') {
                let room = LOG_LINE_CAP.saturating_sub(self.line.len());
                self.line.extend_from_slice(&part[..part.len().min(room)]);
                if part.ends_with(b"\n") {
                    found = found.or_else(|| quota_line(&String::from_utf8_lossy(&self.line)));
                    self.line.clear();
                }
            }
        }
        found
    }
}

fn read_at(file: &mut File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(offset))?;
    file.read(buf)
}

/// The quota error a log line reports: `RESOURCE_EXHAUSTED` with `quota` (any case) or `Resets
/// in`. Without either it is a per-minute rate limit that agy's own retry gets past.
fn quota_line(line: &str) -> Option<Quota> {
    let quota = line.to_ascii_lowercase().contains("quota") || line.contains("Resets in");
    (line.contains("RESOURCE_EXHAUSTED") && quota).then(|| quota::find(line, line)).flatten()
}

/// `<n>` of the last stderr line saying `terminating <n> background task(s) on exit` (n ≥ 1).
pub fn background_tasks(stderr: &str) -> Option<u64> {
    const HEAD: &str = "terminating ";
    const TAIL: &str = " background task(s) on exit";
    stderr.lines().rev().find_map(|line| {
        line.match_indices(HEAD).find_map(|(at, _)| {
            let rest = &line[at + HEAD.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let n: u64 = rest[..digits].parse().ok()?;
            (n >= 1 && rest[digits..].starts_with(TAIL)).then_some(n)
        })
    })
}

/// The notice on an answer after which agy stopped background tasks it had started.
pub fn background_notice(n: u64) -> String {
    format!(
        "agy stopped {n} background task(s) it had started when the run ended; their work may be incomplete."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::Write;

    #[test]
    fn background_task_lines() {
        assert_eq!(background_tasks("x\nterminating 2 background task(s) on exit\n"), Some(2));
        let both = "[w] terminating 1 background task(s) on exit\nterminating 3 background task(s) on exit";
        assert_eq!(background_tasks(both), Some(3), "the last line wins");
        assert_eq!(background_tasks("terminating 0 background task(s) on exit"), None);
        assert_eq!(background_tasks("terminating background task(s) on exit"), None);
        assert_eq!(background_tasks(""), None);
    }

    #[test]
    fn quota_lines_and_rate_limits() {
        let reset = quota_line("E RESOURCE_EXHAUSTED: Individual quota reached. Resets in 1h2m3s.");
        assert_eq!(reset.unwrap().reset, Some(Duration::from_secs(3723)));
        assert!(quota_line("RESOURCE_EXHAUSTED: QUOTA exceeded").is_some());
        assert!(quota_line("RESOURCE_EXHAUSTED (429) Resets in 5s").is_some());
        assert!(quota_line("RESOURCE_EXHAUSTED: rate limit, retrying in 2s").is_none());
        assert!(quota_line("quota reached").is_none());
    }

    #[test]
    fn the_log_is_read_as_it_grows_and_deleted_with_its_directory() {
        let log = RunLog::create().unwrap();
        let dir = log.path().parent().unwrap().to_path_buf();
        let endings = Endings::new(false, Some(&log));
        let mut writer = fs::OpenOptions::new().append(true).open(log.path()).unwrap();
        writer.write_all(b"RESOURCE_EXHAUSTED: rate limit\nRESOURCE_EXH").unwrap();
        assert!(!endings.done());
        writer.write_all(b"AUSTED: Individual Quota reached\n").unwrap();
        assert!(endings.done());
        assert_eq!(endings.quota(), Some(Quota { reset: None }));
        drop((writer, endings));
        assert!(dir.is_dir());
        drop(log);
        assert!(!dir.exists());
    }

    #[test]
    fn the_result_event_starts_the_grace() {
        let endings = Endings::new(true, None);
        endings.stdout(b"{\"event\":\"init\"}\n{\"event\":\"result\",\"res");
        assert!(endings.lock().result_at.is_none());
        endings.stdout(b"ult\":{\"response\":\"hi\"}}\n");
        assert!(endings.lock().result_at.is_some());
        assert!(!endings.done());
        endings.lock().result_at = Some(Instant::now() - RESULT_GRACE);
        assert!(endings.done());
    }
}
