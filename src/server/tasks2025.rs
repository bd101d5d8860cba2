//! The tasks of the 2025-11-25 revision (client-requested: a `tools/call` whose `params.task` is
//! set), served on a connection whose `initialize` negotiated 2025-11-25 and declared
//! `capabilities.tasks`: the server capability, `execution.taskSupport` on the task tools, the
//! `CreateTaskResult`, and `tasks/get`, `tasks/result` (held until the task ends), `tasks/list` and
//! `tasks/cancel` in that revision's wire form. The tasks live in the one registry (`tasks.rs`)
//! that also serves the 2026-07-28 extension; runs, cancellation, TTL and byte budget are the same.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::Call;
use crate::call::progress::Progress;
use crate::js;
use crate::protocol::jsonrpc::{ErrorCode, RequestId, Response, RpcError};
use crate::protocol::mcp::Era;
use crate::server::calls::{Job, Target, parsed, serialized};
use crate::server::tasks::{Snapshot, State};
use crate::server::{Flight, Origin, Server};
use crate::tools::catalog::{Tool, ToolSpec};

/// The protocol version whose tasks these are.
const VERSION: &str = "2025-11-25";
/// The `_meta` key that ties a `tasks/result` answer to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// At most this many tasks a `tasks/list` page.
const PAGE: usize = 32;

impl Server {
    /// The `initialize` result. A client that negotiates 2025-11-25 and declares
    /// `capabilities.tasks` is served that revision's tasks from now on, and told so.
    pub(super) fn initialize(&mut self, params: &Value) -> Value {
        let mut result = crate::protocol::mcp::initialize_result(params);
        self.tasks_2025 = result["protocolVersion"] == VERSION
            && params.pointer("/capabilities/tasks").is_some_and(Value::is_object);
        if self.tasks_2025 {
            result["capabilities"]["tasks"] =
                json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        }
        result
    }

    /// Whether a `tools/call` runs as a 2025-11-25 task: a legacy request with `params.task` on
    /// a connection that serves them (elsewhere `task` is ignored, as the revision asks of a
    /// server that did not declare tasks). A malformed `task` is `-32602`; a tool that cannot run
    /// as a task (its `taskSupport` is "forbidden") is `-32601`, as the revision says.
    pub(super) fn task_2025(
        &self,
        era: Era,
        params: &Value,
        tool: &Tool,
    ) -> Result<bool, RpcError> {
        if era != Era::Legacy || !self.tasks_2025 {
            return Ok(false);
        }
        let task = match params.get("task") {
            None | Some(Value::Null) => return Ok(false),
            Some(Value::Object(task)) => task,
            Some(_) => {
                return Err(RpcError::invalid_params("Invalid params: \"task\" must be an object"));
            }
        };
        if task.get("ttl").is_some_and(|ttl| !ttl.is_null() && ttl.as_u64().is_none()) {
            return Err(RpcError::invalid_params(
                "Invalid params: \"task.ttl\" must be a whole number of milliseconds",
            ));
        }
        if !tool.task {
            return Err(RpcError::new(
                ErrorCode::MethodNotFound,
                format!("Method not found: {} cannot run as a task", tool.name),
            ));
        }
        Ok(true)
    }

    /// Registers a validated call as a task, answers with its `CreateTaskResult` at once, then
    /// runs it like any call. The task is registered before the answer is written.
    pub(super) fn start_task_2025(&mut self, id: RequestId, origin: Origin, job: Job) {
        let call = task_call(job.tool, job.backend);
        let seq = self.next_seq();
        let Some(task) = self.create_2025(&id, origin, call.clone(), seq) else { return };
        self.dispatch(job, call, Target::Task(task), seq);
    }

    /// A task request whose arguments were refused: a task that has already ended with the
    /// result the synchronous call returns (the client reads it with `tasks/result`).
    pub(super) fn task_at_once(
        &mut self,
        id: RequestId,
        origin: Origin,
        tool: &Tool,
        result: &Value,
    ) {
        let call = task_call(tool, self.services.backends.active());
        if let Some(progress) = call.progress() {
            progress.finish(false);
        }
        let seq = self.next_seq();
        let created = self.create_2025(&id, origin, call, seq);
        if let Some(task) = created {
            self.tasks.finish(&task, serialized(result));
            log::info!("Task {task} failed");
        }
    }

    /// Registers a task and answers `id` with its `CreateTaskResult`; `None` (and the error
    /// answered) when no task id could be made.
    fn create_2025(
        &mut self,
        id: &RequestId,
        origin: Origin,
        call: Arc<Call>,
        seq: u64,
    ) -> Option<String> {
        let tool = call.tool;
        let task = match self.tasks.create(call, seq) {
            Ok((task, _)) => task,
            Err(err) => {
                let error = RpcError::internal(format!("Internal error: no task id: {err}"));
                self.reply(origin, Response::err(Some(id.clone()), error));
                return None;
            }
        };
        log::info!("Task {task} created for {tool}");
        let view = self.tasks.snapshot(&task).map(|snapshot| task_object(&task, &snapshot));
        let created = view.map(|view| json!({"task": view}));
        self.reply(origin, Response { id: Some(id.clone()), result: created });
        Some(task)
    }

    /// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` of the 2025-11-25 revision.
    pub(super) fn task_request_2025(
        &mut self,
        id: RequestId,
        method: &str,
        params: &Value,
        origin: Origin,
    ) {
        if method == "tasks/list" {
            let result = self.list_2025(params);
            return self.reply(origin, Response { id: Some(id), result });
        }
        let Some(task) = params.get("taskId").and_then(Value::as_str) else {
            let error = RpcError::invalid_params(format!(
                "Invalid params: {method} needs a string \"taskId\""
            ));
            return self.reply(origin, Response::err(Some(id), error));
        };
        let result = match method {
            "tasks/get" => self.tasks.snapshot(task).map(|snapshot| task_object(task, &snapshot)),
            "tasks/cancel" => self.cancel_2025(task),
            _ => return self.task_result(id, task, origin),
        };
        self.reply(origin, Response { id: Some(id), result });
    }

    /// `tasks/result`: the outcome of an ended task at once; for a working one the request waits
    /// (in flight, so a cancel or a duplicate id is handled as for a call) until the task ends.
    fn task_result(&mut self, id: RequestId, task: &str, origin: Origin) {
        let working = match self.tasks.snapshot(task) {
            Ok(snapshot) => matches!(snapshot.state, State::Working),
            Err(error) => return self.reply(origin, Response::err(Some(id), error)),
        };
        let batch = self.expect_answer(origin);
        if working {
            self.flights.insert(id, Flight::TaskResult { task: task.to_string(), batch });
            return;
        }
        let payload = self.payload(task);
        self.answer_request(id, batch, None, payload);
    }

    /// A task ended (finished or cancelled): the `tasks/result` requests waiting for it are
    /// answered.
    pub(super) fn task_ended(&mut self, task: &str) {
        let waiting: Vec<(RequestId, Option<u64>)> = self
            .flights
            .iter()
            .filter_map(|(id, flight)| match flight {
                Flight::TaskResult { task: waited, batch } if waited == task => {
                    Some((id.clone(), *batch))
                }
                _ => None,
            })
            .collect();
        for (id, batch) in waiting {
            self.flights.remove(&id);
            let payload = self.payload(task);
            self.answer_request(id, batch, None, payload);
        }
    }

    /// What `tasks/result` returns for an ended task: exactly what the synchronous call returned
    /// (its CallToolResult, with the related task in `_meta`, or its JSON-RPC error). A cancelled
    /// task returns the text of a cancelled call.
    fn payload(&mut self, task: &str) -> Result<Arc<RawValue>, RpcError> {
        let snapshot = self.tasks.snapshot(task)?;
        let mut result = match snapshot.state {
            State::Completed(result) => parsed(&result),
            State::Failed(error) => return Err(error),
            State::Cancelled => {
                let text = format!("Error executing {0}: {0} was cancelled", snapshot.tool);
                json!({"content": [{"type": "text", "text": text}], "isError": true})
            }
            State::Working => {
                return Err(RpcError::internal(format!("Internal error: task {task} is working")));
            }
        };
        if let Value::Object(members) = &mut result {
            let meta = members.entry("_meta").or_insert_with(|| json!({}));
            meta[RELATED_TASK] = json!({"taskId": task});
        }
        serialized(&result)
    }

    /// `tasks/cancel`: stops a working task's run (kills its process group, or takes it out of the
    /// agy scheduler) and answers with the task, now cancelled. An ended task is `-32602`.
    fn cancel_2025(&mut self, task: &str) -> Result<Value, RpcError> {
        let snapshot = self.tasks.snapshot(task)?;
        if !matches!(snapshot.state, State::Working) {
            return Err(RpcError::invalid_params(format!(
                "Cannot cancel task: already in terminal status '{}'",
                status(&snapshot)
            )));
        }
        self.cancel_task(task)?;
        self.tasks.snapshot(task).map(|snapshot| task_object(task, &snapshot))
    }

    /// `tasks/list`: the live tasks, oldest first, a page at a time. The cursor is the position
    /// after the last task of the previous page; one this server never gave is `-32602`.
    fn list_2025(&mut self, params: &Value) -> Result<Value, RpcError> {
        let after = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .parse::<u64>()
                .ok()
                .filter(|after| *after <= self.next_seq)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("Invalid params: unknown cursor {cursor:?}"))
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: \"cursor\" must be a string",
                ));
            }
        };
        let (ids, more) = self.tasks.ids_after(after, PAGE);
        let mut last = after;
        let mut tasks = Vec::with_capacity(ids.len());
        for id in &ids {
            if let Ok(snapshot) = self.tasks.snapshot(id) {
                last = snapshot.seq;
                tasks.push(task_object(id, &snapshot));
            }
        }
        let mut result = json!({"tasks": tasks});
        if more {
            result["nextCursor"] = json!(last.to_string());
        }
        Ok(result)
    }
}

/// A call run as a task: its progress is only the status text `tasks/get` shows.
fn task_call(tool: &Tool, backend: crate::backend::Backend) -> Arc<Call> {
    Arc::new(Call::new(tool.name, backend, Some(Progress::status(tool.name))))
}

/// The revision's `Task`: id, status, status text, times, TTL and poll interval.
fn task_object(id: &str, snapshot: &Snapshot) -> Value {
    let mut task = json!({"taskId": id, "status": status(snapshot)});
    if let Some(message) = &snapshot.message {
        task["statusMessage"] = json!(message);
    }
    task["createdAt"] = json!(js::iso_string(snapshot.created));
    task["lastUpdatedAt"] = json!(js::iso_string(snapshot.updated));
    task["ttl"] = json!(snapshot.ttl.as_millis() as u64);
    task["pollInterval"] = json!(snapshot.poll_ms);
    task
}

/// The revision's status: a tool result with `isError: true` is `failed` there (its
/// `tasks/result` is still that result).
fn status(snapshot: &Snapshot) -> &'static str {
    match snapshot.state {
        State::Working => "working",
        State::Completed(_) if snapshot.result_is_error => "failed",
        State::Completed(_) => "completed",
        State::Failed(_) => "failed",
        State::Cancelled => "cancelled",
    }
}

/// A `tools/list` result in which every tool that can run as a task says so:
/// `execution: {"taskSupport": "optional"}` (never "required": a call without `task` is served
/// as ever).
pub(super) fn with_task_support(mut list: Value, specs: &[ToolSpec]) -> Value {
    if let Some(Value::Array(tools)) = list.get_mut("tools") {
        for (entry, spec) in tools.iter_mut().zip(specs) {
            if spec.tool.task {
                entry["execution"] = json!({"taskSupport": "optional"});
            }
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tools::catalog;

    #[test]
    fn only_the_task_tools_carry_optional_task_support() {
        let specs = catalog::tool_specs(true);
        let list = with_task_support(catalog::tools_list_result(&specs), &specs);
        let supported: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|tool| tool["execution"] == json!({"taskSupport": "optional"}))
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            supported,
            [
                "gemini-ask",
                "gemini-plan",
                "gemini-image",
                "gemini-brainstorm",
                "gemini-help",
                "gemini-timeout-test"
            ]
        );
        let plain = catalog::tools_list_result(&specs);
        for (with, without) in
            list["tools"].as_array().unwrap().iter().zip(plain["tools"].as_array().unwrap())
        {
            let mut with = with.clone();
            with.as_object_mut().unwrap().remove("execution");
            assert_eq!(&with, without);
        }
    }
}
