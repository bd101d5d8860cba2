//! Progress: per-call state, the start / keepalive / final messages, and the ticker thread that
//! produces keepalives on each call's own schedule. A call's progress either goes to the client as
//! `notifications/progress` (when it carried a progress token) or, for a call answered as a task,
//! is the task's status text, built when the client asks for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, unbounded};
use serde_json::{Map, Value, json};

use crate::controls;
use crate::protocol::jsonrpc::Notification;
use crate::protocol::stdio::Out;

/// How much of a call's output is kept for the keepalive preview.
const ROLLING_BYTES: usize = 4096;
/// The preview shows this many characters of the tail of the output.
const PREVIEW_CHARS: usize = 150;

/// The progress state of one call.
pub struct Progress {
    tool: &'static str,
    sink: Sink,
    /// Cleared by the final message or by a cancellation; nothing is reported after that.
    open: AtomicBool,
    /// Keepalives sent so far. Held while a keepalive is being queued, so the final message can
    /// never overtake one.
    ticks: Mutex<u64>,
    /// The rolling tail of everything the call printed.
    output: Mutex<String>,
    /// Waiting for agy, or running since when.
    phase: Mutex<Phase>,
}

/// Where a call is: waiting for agy (the line saying why), or running since an instant.
#[derive(Clone)]
enum Phase {
    Waiting(String),
    Running(Instant),
}

/// Where a call's progress goes.
enum Sink {
    /// `notifications/progress` with the client's token.
    Client { token: Value, out: Out },
    /// A task's status text; its last message once the call is over.
    Status(Mutex<Option<String>>),
}

/// Hands calls to the ticker thread.
#[derive(Clone)]
pub struct Ticker {
    tx: Sender<Arc<Progress>>,
}

impl Progress {
    /// Progress reported to the client under `token`. The caller sends `start_message` first.
    pub fn client(token: Value, tool: &'static str, out: Out) -> Arc<Progress> {
        Progress::new(tool, Sink::Client { token, out })
    }

    /// Progress kept as a status text (a task's `statusMessage`).
    pub fn status(tool: &'static str) -> Arc<Progress> {
        Progress::new(tool, Sink::Status(Mutex::new(None)))
    }

    fn new(tool: &'static str, sink: Sink) -> Arc<Progress> {
        Arc::new(Progress {
            tool,
            sink,
            open: AtomicBool::new(true),
            ticks: Mutex::new(0),
            output: Mutex::new(String::new()),
            phase: Mutex::new(Phase::Running(Instant::now())),
        })
    }

    /// Why the call waits for agy (`why`, a line a person reads), or (`None`) its run starts and
    /// its running time counts from then.
    pub fn waiting(&self, why: Option<String>) {
        let mut phase = lock(&self.phase);
        match (why, &*phase) {
            (Some(why), _) => *phase = Phase::Waiting(why),
            (None, Phase::Waiting(_)) => *phase = Phase::Running(Instant::now()),
            (None, Phase::Running(_)) => (),
        }
    }

    /// The call's run starts now (a worker took it): its running time counts from here, not from
    /// its wait for a worker or for agy.
    pub fn started(&self) {
        *lock(&self.phase) = Phase::Running(Instant::now());
    }

    /// The `🔍 Starting <tool>` notification the call begins with (client progress only).
    pub fn start_message(&self) -> Option<Notification> {
        self.notification(0.0, None, starting_text(self.tool))
    }

    /// Appends a chunk of the child's stdout to the rolling preview buffer.
    pub fn record(&self, text: &str) {
        self.append(text, false);
    }

    /// Appends a message of the tool's own to the preview buffer, on a line of its own.
    pub fn note(&self, text: &str) {
        self.append(text, true);
    }

    /// Why the call waits for agy; `None` when it does not.
    pub fn waiting_text(&self) -> Option<String> {
        match &*lock(&self.phase) {
            Phase::Waiting(why) => Some(why.clone()),
            Phase::Running(_) => None,
        }
    }

    fn append(&self, mut text: &str, own_line: bool) {
        // Of a text longer than what is kept, only its tail is copied.
        if text.len() > ROLLING_BYTES {
            let mut cut = text.len() - ROLLING_BYTES;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text = &text[cut..];
        }
        let mut output = lock(&self.output);
        if own_line && !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(text);
        if own_line {
            output.push('\n');
        }
        if output.len() > 2 * ROLLING_BYTES {
            let mut cut = output.len() - ROLLING_BYTES;
            while !output.is_char_boundary(cut) {
                cut += 1;
            }
            output.drain(..cut);
        }
    }

    /// Reports the next keepalive; false once the call is over. A task's status text has no
    /// keepalives.
    pub fn tick(&self) -> bool {
        let mut ticks = lock(&self.ticks);
        if !self.is_open() {
            return false;
        }
        if let Sink::Status(_) = self.sink {
            return true;
        }
        *ticks += 1;
        let k = *ticks;
        let base = keepalive_text((k - 1) as usize, self.tool);
        // A call waiting for agy shows why instead of its (empty) output.
        let message = match (self.waiting_text(), preview(&lock(&self.output))) {
            (Some(why), _) => format!("{base}\n{why}"),
            (None, preview) if preview.is_empty() => base,
            (None, preview) => format!("{base}\n📝 Output: ...{preview}"),
        };
        self.report(tick_value(k), None, message);
        true
    }

    /// Closes the call and returns its final `100/100` message for the client, which the caller
    /// sends just before the response. `None` when it was already closed or goes to a task.
    pub fn finish(&self, ok: bool) -> Option<Notification> {
        let _ticks = lock(&self.ticks);
        if !self.open.swap(false, Ordering::SeqCst) {
            return None;
        }
        let message = if ok {
            format!("✅ {} completed successfully", self.tool)
        } else {
            format!("❌ {} failed", self.tool)
        };
        if let Sink::Status(status) = &self.sink {
            *lock(status) = Some(message);
            return None;
        }
        self.notification(100.0, Some(100.0), message)
    }

    /// Ends the call without another message (cancelled by the client, or shutdown); a task's
    /// status text then says it was stopped.
    pub fn silence(&self) {
        // Taken so that a keepalive being queued now is queued before this returns, and none after.
        let _ticks = lock(&self.ticks);
        if self.open.swap(false, Ordering::SeqCst)
            && let Sink::Status(status) = &self.sink
        {
            *lock(status) = Some(format!("❌ {} cancelled", self.tool));
        }
    }

    /// A task's status text as of now: why it waits while it waits for agy, else how long it
    /// has been running and the tail of its output; its last message once it is over.
    pub fn status_text(&self) -> String {
        let Sink::Status(last) = &self.sink else { return String::new() };
        if let Some(last) = &*lock(last) {
            return last.clone();
        }
        let since = match &*lock(&self.phase) {
            Phase::Waiting(why) => return why.clone(),
            Phase::Running(since) => *since,
        };
        let running = format!("🧠 {}: running for {}", self.tool, elapsed_text(since.elapsed()));
        match preview(&lock(&self.output)) {
            preview if preview.is_empty() => running,
            preview => format!("{running}\n📝 Output: ...{preview}"),
        }
    }

    /// Whether the call is still going (not finished, cancelled or stopped by shutdown).
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    /// Queues a keepalive if the writer has room; while stdout is not being read it is dropped
    /// (the next one carries a higher value), so the ticker never waits on one call's output
    /// while holding that call's lock.
    fn report(&self, progress: f64, total: Option<f64>, message: String) {
        if let Sink::Client { out, .. } = &self.sink
            && let Some(notification) = self.notification(progress, total, message)
        {
            let _ = out.try_send(notification.into());
        }
    }

    fn notification(
        &self,
        progress: f64,
        total: Option<f64>,
        message: String,
    ) -> Option<Notification> {
        let Sink::Client { token, .. } = &self.sink else { return None };
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        params.insert("message".into(), Value::String(message));
        Some(Notification::new("notifications/progress", Value::Object(params)))
    }
}

impl Ticker {
    /// Starts the ticker thread. It ends when every `Ticker` is dropped.
    pub fn start(interval: Duration) -> std::io::Result<Ticker> {
        let (tx, rx) = unbounded();
        thread::Builder::new().name("progress-ticker".into()).spawn(move || run(&rx, interval))?;
        Ok(Ticker { tx })
    }

    pub fn watch(&self, progress: Arc<Progress>) {
        let _ = self.tx.send(progress);
    }
}

/// A progress token: a string or an integer (`0` and `""` are tokens too); any other type is
/// no token at all.
pub fn token_of(params: &Value) -> Option<Value> {
    match params.get("_meta")?.get("progressToken")? {
        token @ Value::String(_) => Some(token.clone()),
        token @ Value::Number(n) if n.is_i64() || n.is_u64() => Some(token.clone()),
        _ => None,
    }
}

fn starting_text(tool: &str) -> String {
    format!("🔍 Starting {tool}")
}

/// A running time as people write it: `7s`, `1m 05s`, `2h 03m 09s`.
fn elapsed_text(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match h {
        0 if m == 0 => format!("{s}s"),
        0 => format!("{m}m {s:02}s"),
        _ => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// The progress value of tick k: k up to 98, then rising towards 99 without reaching it, so
/// progress strictly increases and the final `100/100` stays above every keepalive.
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

/// The last 150 characters of the output, trimmed, without the control sequences a CLI printed.
fn preview(output: &str) -> String {
    let output = controls::strip(output);
    let start = output.char_indices().rev().nth(PREVIEW_CHARS - 1).map_or(0, |(i, _)| i);
    output[start..].trim().to_string()
}

/// Integers stay integers on the wire (`1`, not `1.0`).
fn number(x: f64) -> Value {
    if x.fract() == 0.0 { json!(x as u64) } else { json!(x) }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ticker's loop: each watched call gets a keepalive every `interval` from when it was
/// watched, until it closes.
fn run(rx: &Receiver<Arc<Progress>>, interval: Duration) {
    let mut calls: Vec<(Instant, Arc<Progress>)> = Vec::new();
    loop {
        calls.retain(|(_, progress)| progress.is_open());
        let received = match calls.iter().map(|(due, _)| *due).min() {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(due) => rx.recv_deadline(due),
        };
        match received {
            Ok(progress) => calls.push((Instant::now() + interval, progress)),
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                for (due, progress) in calls.iter_mut().filter(|(due, _)| *due <= now) {
                    progress.tick();
                    *due += interval;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::protocol::jsonrpc::Outgoing;
    use crate::protocol::stdio::Outbound;

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
        assert_eq!(preview("\u{1b}[1mbold\u{1b}[0m 1%\r2%"), "bold 1%\n2%");
        let long: String = "é".repeat(100) + &"x".repeat(100);
        let p = preview(&long);
        assert_eq!(p.chars().count(), 150);
        assert!(p.starts_with("éé") && p.ends_with('x'));
    }

    #[test]
    fn tokens_are_strings_or_integers() {
        assert_eq!(token_of(&json!({"_meta": {"progressToken": 0}})), Some(json!(0)));
        assert_eq!(token_of(&json!({"_meta": {"progressToken": ""}})), Some(json!("")));
        assert_eq!(token_of(&json!({"_meta": {"progressToken": 1.5}})), None);
        assert_eq!(token_of(&json!({"_meta": {"progressToken": null}})), None);
        assert_eq!(token_of(&json!({"_meta": {"progressToken": [1]}})), None);
        assert_eq!(token_of(&json!({})), None);
    }

    #[test]
    fn a_keepalive_never_waits_for_a_full_writer_and_none_follows_a_cancel() {
        let (out, written) = Out::memory();
        let filler = Progress::client(json!("f"), "gemini-ask", out.clone());
        while out.try_send(filler.start_message().unwrap().into()).is_ok() {}
        let progress = Progress::client(json!("t"), "gemini-ask", out);
        // The writer is full: the keepalive is dropped at once instead of blocking the ticker.
        assert!(progress.tick());
        progress.silence();
        while written.try_recv().is_ok() {}
        assert!(!progress.tick(), "nothing after the cancel");
        assert!(written.try_recv().is_err());
    }

    #[test]
    fn client_progress_ends_with_one_final_message_and_nothing_after() {
        let (out, written) = Out::memory();
        let progress = Progress::client(json!("t"), "gemini-ask", out);
        let start = progress.start_message().unwrap();
        assert_eq!(
            start.params,
            json!({"progressToken": "t", "progress": 0, "message": "🔍 Starting gemini-ask"})
        );
        progress.record("some output");
        assert!(progress.tick());
        let Ok(Outbound::Message(Outgoing::Notification(tick))) = written.try_recv() else {
            panic!("no keepalive")
        };
        assert_eq!(tick.params["progress"], 1);
        assert!(tick.params["message"].as_str().unwrap().ends_with("📝 Output: ...some output"));
        let last = progress.finish(true).unwrap();
        assert_eq!(
            last.params,
            json!({"progressToken": "t", "progress": 100, "total": 100, "message": "✅ gemini-ask completed successfully"})
        );
        assert!(progress.finish(false).is_none());
        assert!(!progress.tick());
        assert!(written.try_recv().is_err());
    }

    #[test]
    fn task_progress_is_a_status_text_built_when_asked() {
        let progress = Progress::status("gemini-plan");
        assert_eq!(progress.status_text(), "🧠 gemini-plan: running for 0s");
        assert!(progress.start_message().is_none());
        assert!(progress.tick());
        assert_eq!(progress.status_text(), "🧠 gemini-plan: running for 0s", "no keepalive texts");
        progress.record("  {\"partial\": answer  ");
        assert_eq!(
            progress.status_text(),
            "🧠 gemini-plan: running for 0s\n📝 Output: ...{\"partial\": answer"
        );
        *lock(&progress.phase) = Phase::Running(Instant::now() - Duration::from_secs(65));
        assert!(progress.status_text().starts_with("🧠 gemini-plan: running for 1m 05s\n"));
        assert!(progress.finish(false).is_none());
        assert_eq!(progress.status_text(), "❌ gemini-plan failed");
    }

    #[test]
    fn a_waiting_task_shows_why_and_its_running_time_starts_with_its_run() {
        let progress = Progress::status("gemini-ask");
        *lock(&progress.phase) = Phase::Running(Instant::now() - Duration::from_secs(30));
        progress.waiting(Some("⏳ first reason".into()));
        assert_eq!(progress.status_text(), "⏳ first reason");
        progress.waiting(Some("⏳ second reason".into()));
        assert_eq!(progress.status_text(), "⏳ second reason");
        progress.waiting(None);
        assert_eq!(progress.status_text(), "🧠 gemini-ask: running for 0s");
        // A call that never waited keeps its clock.
        *lock(&progress.phase) = Phase::Running(Instant::now() - Duration::from_secs(3));
        progress.waiting(None);
        assert_eq!(progress.status_text(), "🧠 gemini-ask: running for 3s");
    }

    #[test]
    fn running_times_read_like_a_clock() {
        let text = |secs| elapsed_text(Duration::from_secs(secs));
        assert_eq!(text(0), "0s");
        assert_eq!(text(59), "59s");
        assert_eq!(text(65), "1m 05s");
        assert_eq!(text(3600 + 3 * 60 + 9), "1h 03m 09s");
    }

    #[test]
    fn tool_messages_start_a_line_of_their_own() {
        let progress = Progress::status("t");
        progress.record("partial");
        progress.note("Step 1");
        progress.note("Step 2");
        progress.record("more");
        assert_eq!(*lock(&progress.output), "partial\nStep 1\nStep 2\nmore");
    }

    #[test]
    fn a_waiting_call_shows_why_until_its_run_starts() {
        let (out, written) = Out::memory();
        let progress = Progress::client(json!("q"), "gemini-ask", out);
        let keepalive = || {
            assert!(progress.tick());
            let Ok(Outbound::Message(Outgoing::Notification(tick))) = written.try_recv() else {
                panic!("no keepalive")
            };
            tick.params["message"].as_str().unwrap().to_string()
        };
        progress.note("a tool message");
        progress.waiting(Some(
            "⏳ Waiting for agy: 2 of 2 runs busy, 1 call(s) of this relay ahead".into(),
        ));
        assert_eq!(
            keepalive(),
            "🧠 gemini-ask - Gemini is analyzing your request...\n⏳ Waiting for agy: 2 of 2 runs busy, 1 call(s) of this relay ahead"
        );
        progress.waiting(None);
        assert_eq!(
            keepalive(),
            "📊 gemini-ask - Processing files and generating insights...\n📝 Output: ...a tool message"
        );
    }

    #[test]
    fn a_silenced_call_reports_nothing_more() {
        let (out, written) = Out::memory();
        let progress = Progress::client(json!(1), "x", out);
        progress.silence();
        assert!(!progress.tick());
        assert!(progress.finish(true).is_none());
        assert!(written.try_recv().is_err());
    }
}
