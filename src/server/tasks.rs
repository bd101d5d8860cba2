//! The MCP tasks extension (`io.modelcontextprotocol/tasks`): the registry of calls answered as
//! tasks, owned by the event loop. A task records its call (to cancel it and to read its progress
//! text), its state, and its outcome once finished; finished tasks are kept for their TTL, with at
//! most a byte budget of outcomes in all (oldest dropped first). A result is kept serialized, once:
//! every poll that reads it writes the same bytes. The registry serves two wire forms: the
//! extension's (here) and the 2025-11-25 revision's (`tasks2025.rs`, from `snapshot`).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::Call;
use crate::js;
use crate::protocol::jsonrpc::RpcError;

/// How often clients are asked to poll a young task: a quick call's result is read about a
/// second after it started.
const EARLY_POLL_MS: u64 = 1000;
/// How often clients are asked to poll a task older than `EARLY_POLLS`.
const LATE_POLL_MS: u64 = 5000;
/// How long a task is polled at `EARLY_POLL_MS`.
const EARLY_POLLS: Duration = Duration::from_secs(30);
/// What a finished task costs besides its outcome (so that even empty outcomes are bounded).
const ENTRY_BYTES: usize = 256;

/// Every task of the session, by id.
pub struct Tasks {
    ttl: Duration,
    /// Outcomes kept at most, in bytes of their JSON.
    max_bytes: usize,
    map: HashMap<String, Task>,
    /// Finished tasks, oldest first, with when they finished and what their outcome costs, for
    /// expiry and the byte bound.
    finished: VecDeque<(String, Instant, usize)>,
    finished_bytes: usize,
}

/// One task.
pub struct Task {
    pub call: Arc<Call>,
    /// The call's key in the agy scheduler, to take it out while it waits.
    pub seq: u64,
    created: SystemTime,
    /// When it was created, for its poll interval.
    born: Instant,
    /// When the status or the status text last changed, as `tasks/get` saw them.
    updated: SystemTime,
    /// The status text the client was last shown.
    shown: String,
    state: State,
    /// A completed task's result has `isError: true`.
    result_is_error: bool,
}

/// Where a task stands, with its outcome once it has one.
#[derive(Clone)]
pub enum State {
    Working,
    Completed(Arc<RawValue>),
    Failed(RpcError),
    Cancelled,
}

impl Tasks {
    /// `ttl`: how long a task lives (the call's deadline plus ten minutes);
    /// `max_bytes`: the budget of kept outcomes.
    pub fn new(ttl: Duration, max_bytes: usize) -> Tasks {
        let (map, finished) = (HashMap::new(), VecDeque::new());
        Tasks { ttl, max_bytes, map, finished, finished_bytes: 0 }
    }

    /// Registers a working task for `call`; returns its id and its `CreateTaskResult` fields, to
    /// answer the call with.
    pub fn create(&mut self, call: Arc<Call>, seq: u64) -> io::Result<(String, Value)> {
        let id = new_id()?;
        let now = SystemTime::now();
        let shown = status_text(&call);
        let born = Instant::now();
        let state = State::Working;
        let result_is_error = false;
        let task =
            Task { call, seq, created: now, born, updated: now, shown, state, result_is_error };
        let mut view = self.view(&id, &task);
        view["resultType"] = json!("task");
        self.map.insert(id.clone(), task);
        Ok((id, view))
    }

    /// A task's current state as `tasks/get` shows it, or `-32602` for an unknown or expired id.
    /// A completed task's result is not in the view: it comes serialized, to be written as the
    /// view's `result` member.
    pub fn get(&mut self, id: &str) -> Result<(Value, Option<Arc<RawValue>>), RpcError> {
        self.expire();
        let task = self.map.get_mut(id).ok_or_else(|| unknown(id))?;
        refresh(task);
        let result = match &task.state {
            State::Completed(result) => Some(result.clone()),
            _ => None,
        };
        Ok((self.view(id, &self.map[id]), result))
    }

    /// The task, if known (for `tasks/cancel` and `tasks/update`).
    pub fn find(&mut self, id: &str) -> Result<&Task, RpcError> {
        self.expire();
        self.map.get(id).ok_or_else(|| unknown(id))
    }

    /// The call of a working task finished: its serialized result (a CallToolResult) or its
    /// JSON-RPC error. A task cancelled meanwhile stays cancelled. A result larger than the whole
    /// budget is not kept (it would flush every other one): the task fails with an error that names
    /// the limit. Returns whether the task took the outcome.
    pub fn finish(&mut self, id: &str, outcome: Result<Arc<RawValue>, RpcError>) -> bool {
        let max_bytes = self.max_bytes;
        let Some(task) = self.map.get_mut(id) else { return false };
        if !matches!(task.state, State::Working) {
            return false;
        }
        let outcome = match outcome {
            Ok(result) if ENTRY_BYTES + result.get().len() > max_bytes => {
                Err(RpcError::internal(format!(
                    "Internal error: the result is {} bytes of JSON, more than the {max_bytes} bytes of results finished tasks can keep",
                    result.get().len()
                )))
            }
            outcome => outcome,
        };
        let bytes = ENTRY_BYTES
            + match &outcome {
                Ok(result) => result.get().len(),
                Err(error) => error.message.len(),
            };
        task.state = match outcome {
            Ok(result) => {
                task.result_is_error = is_error_result(&result);
                State::Completed(result)
            }
            Err(error) => State::Failed(error),
        };
        self.close(id, bytes);
        true
    }

    /// Marks a working task cancelled (its call is stopped by the caller).
    pub fn cancel(&mut self, id: &str) {
        let Some(task) = self.map.get_mut(id) else { return };
        if matches!(task.state, State::Working) {
            task.state = State::Cancelled;
            self.close(id, ENTRY_BYTES);
        }
    }

    /// A task as of now (its status text refreshed), or `-32602` for an unknown or expired id.
    pub fn snapshot(&mut self, id: &str) -> Result<Snapshot, RpcError> {
        self.expire();
        let task = self.map.get_mut(id).ok_or_else(|| unknown(id))?;
        refresh(task);
        Ok(Snapshot {
            tool: task.call.tool,
            seq: task.seq,
            state: task.state.clone(),
            result_is_error: task.result_is_error,
            created: task.created,
            updated: task.updated,
            ttl: self.ttl,
            poll_ms: poll_interval_ms(task.born.elapsed()),
            message: task.call.progress().map(|_| task.shown.clone()),
        })
    }

    /// The ids of the live tasks created after the one of sequence number `after`, oldest first, at
    /// most `limit` of them; and whether more follow.
    pub fn ids_after(&mut self, after: u64, limit: usize) -> (Vec<String>, bool) {
        self.expire();
        let mut live: Vec<(u64, &String)> = self
            .map
            .iter()
            .filter(|(_, task)| task.seq > after)
            .map(|(id, t)| (t.seq, id))
            .collect();
        live.sort_unstable();
        let more = live.len() > limit;
        (live.into_iter().take(limit).map(|(_, id)| id.clone()).collect(), more)
    }

    /// The calls of the tasks still working (to stop them at shutdown).
    pub fn working(&self) -> impl Iterator<Item = &Arc<Call>> {
        self.map.values().filter(|task| matches!(task.state, State::Working)).map(|t| &t.call)
    }

    /// A task just reached a terminal state.
    fn close(&mut self, id: &str, bytes: usize) {
        if let Some(task) = self.map.get_mut(id) {
            task.updated = SystemTime::now();
        }
        self.finished.push_back((id.to_string(), Instant::now(), bytes));
        self.finished_bytes += bytes;
        self.expire();
    }

    /// Drops finished tasks past their TTL, then the oldest ones while over the byte bound.
    fn expire(&mut self) {
        while let Some(&(_, at, bytes)) = self.finished.front() {
            if at.elapsed() < self.ttl && self.finished_bytes <= self.max_bytes {
                return;
            }
            self.finished_bytes -= bytes;
            if let Some((id, ..)) = self.finished.pop_front() {
                self.map.remove(&id);
            }
        }
    }

    /// The task object of the extension: status, times, TTL, poll interval, status text, and the
    /// error of a failed task.
    fn view(&self, id: &str, task: &Task) -> Value {
        let status = match task.state {
            State::Working => "working",
            State::Completed(_) => "completed",
            State::Failed(_) => "failed",
            State::Cancelled => "cancelled",
        };
        let mut view = json!({"resultType": "complete", "taskId": id, "status": status});
        view["createdAt"] = json!(js::iso_string(task.created));
        view["lastUpdatedAt"] = json!(js::iso_string(task.updated));
        view["ttlMs"] = json!(self.ttl.as_millis() as u64);
        view["pollIntervalMs"] = json!(poll_interval_ms(task.born.elapsed()));
        if task.call.progress().is_some() {
            view["statusMessage"] = json!(task.shown);
        }
        if let State::Failed(error) = &task.state {
            view["error"] = serde_json::to_value(error).unwrap_or(Value::Null);
        }
        view
    }
}

/// A task as `snapshot` saw it.
pub struct Snapshot {
    pub tool: &'static str,
    /// The call's sequence number: tasks are listed in this order.
    pub seq: u64,
    pub state: State,
    /// A completed task's result has `isError: true`.
    pub result_is_error: bool,
    pub created: SystemTime,
    pub updated: SystemTime,
    pub ttl: Duration,
    pub poll_ms: u64,
    /// The status text, when the call has progress.
    pub message: Option<String>,
}

/// Whether a serialized CallToolResult has `isError: true` (read once, when the task finishes;
/// only the top-level keys are looked at).
fn is_error_result(result: &RawValue) -> bool {
    serde_json::from_str::<std::collections::BTreeMap<String, &RawValue>>(result.get())
        .ok()
        .and_then(|members| members.get("isError").map(|flag| flag.get() == "true"))
        .unwrap_or(false)
}

/// How often a task of this age is to be polled.
fn poll_interval_ms(age: Duration) -> u64 {
    if age < EARLY_POLLS { EARLY_POLL_MS } else { LATE_POLL_MS }
}

/// Shows a task's status text as of now; its update time moves when the text changed.
fn refresh(task: &mut Task) {
    // A task that ended says how it ended, whatever its run last reported (a result too large to
    // keep fails after its run succeeded; a cancel may come after the run finished).
    let text = match &task.state {
        // A run that has ended but whose outcome the loop has not recorded yet keeps its last
        // running text, so a working task never reads as finished.
        State::Working if task.call.progress().is_some_and(|p| !p.is_open()) => return,
        State::Working | State::Completed(_) => status_text(&task.call),
        State::Failed(_) => format!("❌ {} failed", task.call.tool),
        State::Cancelled => format!("❌ {} cancelled", task.call.tool),
    };
    if text != task.shown {
        task.shown = text;
        task.updated = SystemTime::now();
    }
}

/// A task's status text as of now (empty when its call has no progress).
fn status_text(call: &Call) -> String {
    call.progress().map(|progress| progress.status_text()).unwrap_or_default()
}

fn unknown(id: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown task: {id}"))
}

/// 128 random bits from the system, as 32 lowercase hex digits.
fn new_id() -> io::Result<String> {
    let bytes = random_bytes()?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(unix)]
fn random_bytes() -> io::Result<[u8; 16]> {
    use std::fs::File;
    use std::io::Read;

    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Windows' system RNG, `ProcessPrng` (the call std itself uses), which is documented never to fail.
#[cfg(windows)]
fn random_bytes() -> io::Result<[u8; 16]> {
    let mut bytes = [0u8; 16];
    // SAFETY: the buffer is writable for exactly the length passed.
    #[allow(unsafe_code)]
    let ok = unsafe {
        windows_sys::Win32::Security::Cryptography::ProcessPrng(bytes.as_mut_ptr(), bytes.len())
    };
    if ok == 0 {
        return Err(io::Error::other("the system random number generator failed"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::Backend;
    use crate::call::progress::Progress;
    use crate::protocol::jsonrpc::ErrorCode;

    const BUDGET: usize = 64 * 1024 * 1024;

    fn call() -> Arc<Call> {
        Arc::new(Call::new("gemini-ask", Backend::Agy, Some(Progress::status("gemini-ask"))))
    }

    fn raw(value: &Value) -> Arc<RawValue> {
        Arc::from(serde_json::value::to_raw_value(value).unwrap())
    }

    fn status(tasks: &mut Tasks, id: &str) -> Value {
        tasks.get(id).unwrap().0["status"].clone()
    }

    #[test]
    fn a_task_is_created_working_and_then_completes() {
        let mut tasks = Tasks::new(Duration::from_secs(60), BUDGET);
        let (id, created) = tasks.create(call(), 0).unwrap();
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(created["resultType"], "task");
        assert_eq!(created["status"], "working");
        assert_eq!(created["statusMessage"], "🧠 gemini-ask: running for 0s");
        assert_eq!(created["ttlMs"], 60_000);
        assert_eq!(created["pollIntervalMs"], 1000);
        let (view, result) = tasks.get(&id).unwrap();
        assert_eq!(view["resultType"], "complete");
        assert!(result.is_none());
        let result = json!({"content": [{"type": "text", "text": "hi"}], "isError": true});
        assert!(tasks.finish(&id, Ok(raw(&result))));
        let (view, kept) = tasks.get(&id).unwrap();
        assert_eq!(view["status"], "completed");
        assert_eq!(serde_json::from_str::<Value>(kept.unwrap().get()).unwrap(), result);
    }

    #[test]
    fn a_task_is_polled_every_second_for_its_first_half_minute_then_every_five() {
        assert_eq!(poll_interval_ms(Duration::ZERO), 1000);
        assert_eq!(poll_interval_ms(Duration::from_millis(29_999)), 1000);
        assert_eq!(poll_interval_ms(Duration::from_secs(30)), 5000);
        assert_eq!(poll_interval_ms(Duration::from_secs(3600)), 5000);
    }

    #[test]
    fn a_failed_call_carries_its_error_and_a_cancelled_task_stays_cancelled() {
        let mut tasks = Tasks::new(Duration::from_secs(60), BUDGET);
        let (failed, _) = tasks.create(call(), 0).unwrap();
        tasks.finish(&failed, Err(RpcError::internal("Internal error")));
        let (view, _) = tasks.get(&failed).unwrap();
        assert_eq!(view["status"], "failed");
        assert_eq!(view["error"], json!({"code": -32603, "message": "Internal error"}));
        let (cancelled, _) = tasks.create(call(), 1).unwrap();
        tasks.cancel(&cancelled);
        assert!(!tasks.finish(&cancelled, Ok(raw(&json!({})))));
        assert_eq!(status(&mut tasks, &cancelled), "cancelled");
        assert!(tasks.get(&cancelled).unwrap().1.is_none());
    }

    #[test]
    fn the_update_time_moves_when_the_status_text_changes() {
        let mut tasks = Tasks::new(Duration::from_secs(60), BUDGET);
        let call = call();
        let (id, created) = tasks.create(call.clone(), 0).unwrap();
        let at = |tasks: &mut Tasks| tasks.get(&id).unwrap().0["lastUpdatedAt"].clone();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(at(&mut tasks), created["lastUpdatedAt"], "nothing changed");
        call.progress().unwrap().record("first words");
        let moved = at(&mut tasks);
        assert_ne!(moved, created["lastUpdatedAt"]);
        assert!(
            tasks.get(&id).unwrap().0["statusMessage"].as_str().unwrap().ends_with("first words")
        );
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(at(&mut tasks), moved);
        call.abort();
        tasks.cancel(&id);
        let (cancelled, _) = tasks.get(&id).unwrap();
        assert_eq!(cancelled["statusMessage"], "❌ gemini-ask cancelled");
        assert_ne!(cancelled["lastUpdatedAt"], moved);
    }

    #[test]
    fn unknown_and_expired_tasks_are_invalid_params() {
        let mut tasks = Tasks::new(Duration::ZERO, BUDGET);
        assert_eq!(tasks.get("nope").unwrap_err().message, "Unknown task: nope");
        let (id, _) = tasks.create(call(), 0).unwrap();
        assert!(tasks.get(&id).is_ok(), "a working task never expires");
        tasks.finish(&id, Ok(raw(&json!({}))));
        assert_eq!(tasks.get(&id).unwrap_err().code, ErrorCode::InvalidParams);
    }

    #[test]
    fn outcomes_are_bounded_in_bytes_oldest_first() {
        let mut tasks = Tasks::new(Duration::from_secs(3600), BUDGET);
        let big = raw(&json!({"text": "x".repeat(30 * 1024 * 1024)}));
        let ids: Vec<String> = (0..3).map(|n| tasks.create(call(), n).unwrap().0).collect();
        for id in &ids {
            tasks.finish(id, Ok(big.clone()));
        }
        assert!(tasks.get(&ids[0]).is_err(), "the oldest outcome was dropped");
        assert!(tasks.get(&ids[1]).is_ok() && tasks.get(&ids[2]).is_ok());
    }

    #[test]
    fn a_run_that_ended_reads_as_working_until_its_outcome_is_recorded() {
        let mut tasks = Tasks::new(Duration::from_secs(60), BUDGET);
        let call = call();
        let (id, _) = tasks.create(call.clone(), 0).unwrap();
        call.progress().unwrap().finish(true);
        let (view, _) = tasks.get(&id).unwrap();
        assert_eq!(view["status"], "working");
        let message = view["statusMessage"].as_str().unwrap();
        assert!(message.starts_with("🧠 gemini-ask: running for "), "{message}");
        tasks.finish(&id, Ok(raw(&json!({}))));
        let (view, _) = tasks.get(&id).unwrap();
        assert_eq!(view["statusMessage"], "✅ gemini-ask completed successfully");
    }

    #[test]
    fn a_result_larger_than_the_budget_fails_and_evicts_nothing() {
        let mut tasks = Tasks::new(Duration::from_secs(3600), BUDGET);
        let kept: Vec<String> = (0..15).map(|n| tasks.create(call(), n).unwrap().0).collect();
        for id in &kept {
            tasks.finish(id, Ok(raw(&json!({"text": "small"}))));
        }
        // 36 MiB of quotes are 72 MiB of JSON. The run itself succeeded, as its progress says.
        let big_call = call();
        let (big, _) = tasks.create(big_call.clone(), 15).unwrap();
        big_call.progress().unwrap().finish(true);
        assert!(tasks.finish(&big, Ok(raw(&json!({"text": "\"".repeat(36 << 20)})))));
        let (view, result) = tasks.get(&big).unwrap();
        assert_eq!(view["status"], "failed");
        assert!(result.is_none());
        let message = view["error"]["message"].as_str().unwrap();
        assert!(message.contains("bytes of JSON, more than the 67108864 bytes"), "{message}");
        assert_eq!(view["statusMessage"], "❌ gemini-ask failed", "the message follows the status");
        for id in &kept {
            assert_eq!(status(&mut tasks, id), "completed");
        }
    }
}
