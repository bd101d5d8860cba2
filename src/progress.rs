//! Progress notifications (§4.5, D7): per-call state, the start / keepalive / final messages, and the
//! ticker thread that sends keepalives on each call's own schedule.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::chan::{Receiver, RecvTimeoutError, Sender, unbounded};
use crate::jsonrpc;
use crate::stdio::Out;
use crate::threads;

/// How much of a call's output is kept for the keepalive preview.
const ROLLING_BYTES: usize = 4096;
/// The preview shows this many characters of the tail of the output.
const PREVIEW_CHARS: usize = 150;

/// The progress state of one `tools/call` that carried a progress token.
pub struct Progress {
    token: Value,
    tool: String,
    out: Out,
    inner: Mutex<Inner>,
}

struct Inner {
    open: bool,
    ticks: u64,
    output: String,
}

/// Hands calls to the ticker thread.
#[derive(Clone)]
pub struct Ticker {
    tx: Sender<Arc<Progress>>,
}

impl Progress {
    /// Creates the state and sends `🔍 Starting <tool>` at once.
    pub fn start(token: Value, tool: &str, out: Out) -> Arc<Progress> {
        let progress = Arc::new(Progress {
            token,
            tool: tool.to_string(),
            out,
            inner: Mutex::new(Inner { open: true, ticks: 0, output: String::new() }),
        });
        progress.send(0.0, None, format!("🔍 Starting {tool}"));
        progress
    }

    /// Appends text the call produced (child stdout, tool messages) to the rolling preview buffer.
    pub fn record(&self, text: &str) {
        let mut inner = self.lock();
        inner.output.push_str(text);
        if inner.output.len() > 2 * ROLLING_BYTES {
            let mut cut = inner.output.len() - ROLLING_BYTES;
            while !inner.output.is_char_boundary(cut) {
                cut += 1;
            }
            inner.output.drain(..cut);
        }
    }

    /// Sends the next keepalive; false once the call is over.
    pub fn tick(&self) -> bool {
        let mut inner = self.lock();
        if !inner.open {
            return false;
        }
        inner.ticks += 1;
        let k = inner.ticks;
        let base = keepalive_text((k - 1) as usize, &self.tool);
        let preview = preview(&inner.output);
        let message =
            if preview.is_empty() { base } else { format!("{base}\n📝 Output: ...{preview}") };
        self.send(tick_value(k), None, message);
        true
    }

    /// Sends the final `100/100` notification (the call's last message before its response).
    pub fn finish(&self, ok: bool) {
        let mut inner = self.lock();
        if !inner.open {
            return;
        }
        inner.open = false;
        let message = if ok {
            format!("✅ {} completed successfully", self.tool)
        } else {
            format!("❌ {} failed", self.tool)
        };
        self.send(100.0, Some(100.0), message);
    }

    /// Ends the call without another notification (cancelled by the client).
    pub fn silence(&self) {
        self.lock().open = false;
    }

    fn is_open(&self) -> bool {
        self.lock().open
    }

    // Sending under the lock keeps the order: no keepalive can follow the final notification.
    fn send(&self, progress: f64, total: Option<f64>, message: String) {
        let mut params = Map::new();
        params.insert("progressToken".into(), self.token.clone());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        params.insert("message".into(), Value::String(message));
        self.out.send(&jsonrpc::notification("notifications/progress", Value::Object(params)));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Ticker {
    /// Starts the ticker thread.
    pub fn start(interval: Duration) -> std::io::Result<Ticker> {
        let (tx, rx) = unbounded();
        threads::spawn("progress-ticker".into(), Box::new(move || run(&rx, interval)))?;
        Ok(Ticker { tx })
    }

    pub fn watch(&self, progress: Arc<Progress>) {
        self.tx.send(progress);
    }
}

/// A progress token is a string or a number (D7: `0` and `""` are tokens too).
pub fn token_of(params: &Value) -> Option<Value> {
    match params.get("_meta")?.get("progressToken")? {
        token @ (Value::String(_) | Value::Number(_)) => Some(token.clone()),
        _ => None,
    }
}

/// The progress value of tick k (D7): k up to 98, then rising towards 99 without reaching it.
fn tick_value(k: u64) -> f64 {
    if k <= 98 {
        return k as f64;
    }
    let n = (k - 98) as f64;
    98.0 + n / (n + 1.0)
}

fn keepalive_text(index: usize, tool: &str) -> String {
    match index % 5 {
        0 => format!("🧠 {tool} - Gemini is analyzing your request..."),
        1 => format!("📊 {tool} - Processing files and generating insights..."),
        2 => format!("✨ {tool} - Creating structured response for your review..."),
        3 => format!("⏱️ {tool} - Large analysis in progress (this is normal for big requests)..."),
        _ => format!("🔍 {tool} - Still working... Gemini takes time for quality results..."),
    }
}

/// The last 150 characters of the output, trimmed.
fn preview(output: &str) -> &str {
    let start = output.char_indices().rev().nth(PREVIEW_CHARS - 1).map_or(0, |(i, _)| i);
    output[start..].trim()
}

/// Integers stay integers on the wire (`1`, not `1.0`).
fn number(x: f64) -> Value {
    if x.fract() == 0.0 { json!(x as u64) } else { json!(x) }
}

fn run(rx: &Receiver<Arc<Progress>>, interval: Duration) {
    let mut calls: Vec<(Instant, Arc<Progress>)> = Vec::new();
    loop {
        calls.retain(|(_, progress)| progress.is_open());
        let next_due = calls.iter().map(|(due, _)| *due).min();
        let timeout = next_due.map(|due| due.saturating_duration_since(Instant::now()));
        let received = match timeout {
            None => rx.recv().ok_or(()),
            Some(timeout) => match rx.recv_timeout(timeout) {
                Err(RecvTimeoutError::Timeout) => {
                    let now = Instant::now();
                    for (due, progress) in calls.iter_mut().filter(|(due, _)| *due <= now) {
                        progress.tick();
                        *due += interval;
                    }
                    continue;
                }
                received => received.map_err(|_| ()),
            },
        };
        match received {
            Ok(progress) => calls.push((Instant::now() + interval, progress)),
            Err(()) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_values_rise_but_stay_below_99() {
        assert_eq!(tick_value(1), 1.0);
        assert_eq!(tick_value(98), 98.0);
        assert_eq!(tick_value(99), 98.5);
        assert!((tick_value(100) - 98.666_666).abs() < 1e-5);
        assert_eq!(tick_value(101), 98.75);
        let mut last = 0.0;
        for k in 1..10_000 {
            let v = tick_value(k);
            assert!(v > last && v < 99.0, "tick {k}: {v}");
            last = v;
        }
    }

    #[test]
    fn keepalive_texts_rotate() {
        assert_eq!(
            keepalive_text(0, "gemini-ask"),
            "🧠 gemini-ask - Gemini is analyzing your request..."
        );
        assert_eq!(keepalive_text(5, "x"), keepalive_text(0, "x"));
        assert!(keepalive_text(3, "t").starts_with("⏱️ t - Large analysis"));
        assert!(keepalive_text(4, "t").starts_with("🔍 t - Still working"));
    }

    #[test]
    fn preview_is_the_trimmed_tail() {
        assert_eq!(preview("  short  "), "short");
        let long: String = "é".repeat(100) + &"x".repeat(100);
        let p = preview(&long);
        assert_eq!(p.chars().count(), 150);
        assert!(p.starts_with("éé") && p.ends_with('x'));
    }

    #[test]
    fn tokens_keep_their_type() {
        assert_eq!(token_of(&json!({"_meta": {"progressToken": 0}})), Some(json!(0)));
        assert_eq!(token_of(&json!({"_meta": {"progressToken": ""}})), Some(json!("")));
        assert_eq!(token_of(&json!({"_meta": {"progressToken": null}})), None);
        assert_eq!(token_of(&json!({})), None);
    }
}
