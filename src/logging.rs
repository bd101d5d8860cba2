//! Diagnostics: `log` + `env_logger` to stderr, every line `[GMCPT] <message>` (a
//! multi-line record gets the prefix on each line, and control characters are escaped so a record
//! can never forge a line), and the bridge that also sends warnings and errors as
//! `notifications/message` once a client asked for them (legacy `logging/setLevel`, or a modern
//! request's `io.modelcontextprotocol/logLevel`).

use std::cell::Cell;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use log::{Level, LevelFilter, Log, Metadata, Record};
use serde_json::json;

use crate::protocol::jsonrpc::Notification;
use crate::protocol::stdio::Out;
use crate::redact;

/// MCP log levels in increasing severity.
const MCP_LEVELS: &[&str] =
    &["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

static SINK: OnceLock<Mutex<Sink>> = OnceLock::new();

thread_local! {
    /// The threshold a modern request asked for, for log lines written on the thread serving it.
    static REQUEST_LEVEL: Cell<Option<usize>> = const { Cell::new(None) };
}

struct Sink {
    out: Option<Out>,
    /// Set by `logging/setLevel`.
    level: Option<usize>,
}

struct Bridge {
    stderr: env_logger::Logger,
}

/// Installs the logger: `info` by default, `RUST_LOG` overrides. A failure is reported, not fatal.
pub fn init() {
    let stderr = env_logger::Builder::new()
        .filter_level(LevelFilter::Info)
        .parse_env(env_logger::Env::default().filter("RUST_LOG"))
        .format(|buf, record| {
            let text = record.args().to_string();
            for line in text.split('\n') {
                writeln!(buf, "[GMCPT] {}", escape_line(line))?;
            }
            Ok(())
        })
        .build();
    let max = stderr.filter().max(LevelFilter::Warn);
    match log::set_boxed_logger(Box::new(Bridge { stderr })) {
        Ok(()) => log::set_max_level(max),
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "[GMCPT] could not set up logging: {err}");
        }
    }
}

/// Connects the bridge to stdout once the writer exists.
pub fn attach(out: Out) {
    sink().lock().unwrap_or_else(|e| e.into_inner()).out = Some(out);
}

/// `logging/setLevel`: false when the level is not an MCP level.
pub fn set_level(level: &str) -> bool {
    let Some(rank) = rank(level) else { return false };
    sink().lock().unwrap_or_else(|e| e.into_inner()).level = Some(rank);
    true
}

/// Runs `f` with the modern per-request log level (if any) in force on this thread.
pub fn with_request_level<T>(level: Option<&str>, f: impl FnOnce() -> T) -> T {
    let previous = REQUEST_LEVEL.with(|cell| cell.replace(level.and_then(rank)));
    let result = f();
    REQUEST_LEVEL.with(|cell| cell.set(previous));
    result
}

/// One line of a record with its control characters escaped (a tab stays a tab).
fn escape_line(line: &str) -> std::borrow::Cow<'_, str> {
    if line.chars().all(|c| c == '\t' || !c.is_control()) {
        return std::borrow::Cow::Borrowed(line);
    }
    std::borrow::Cow::Owned(redact::escape_controls(line))
}

fn rank(level: &str) -> Option<usize> {
    MCP_LEVELS.iter().position(|l| *l == level)
}

fn sink() -> &'static Mutex<Sink> {
    SINK.get_or_init(|| Mutex::new(Sink { out: None, level: None }))
}

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.stderr.enabled(metadata) || metadata.level() <= Level::Warn
    }

    fn log(&self, record: &Record<'_>) {
        if self.stderr.matches(record) {
            self.stderr.log(record);
        }
        let (name, record_rank) = match record.level() {
            Level::Error => ("error", 4),
            Level::Warn => ("warning", 3),
            _ => return,
        };
        let threshold = REQUEST_LEVEL.with(Cell::get);
        let sink = sink().lock().unwrap_or_else(|e| e.into_inner());
        let Some(threshold) = threshold.or(sink.level) else { return };
        if record_rank < threshold {
            return;
        }
        if let Some(out) = &sink.out {
            let params =
                json!({"level": name, "logger": "gemini-relay", "data": record.args().to_string()});
            // Best effort: while stdout is not being read, a log message is dropped rather than
            // blocking the thread that logs (stderr still has it).
            let _ = out.try_send(Notification::new("notifications/message", params).into());
        }
    }

    fn flush(&self) {
        self.stderr.flush();
    }
}
