//! Tool calls on the event loop: validating a `tools/call`, deciding its backend, running it on its
//! lane or as a task, the work handed to the pool and the agy scheduler, and turning a finished
//! call into its answer.

use std::io;
use std::sync::Arc;

use crossbeam_channel::Sender;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::backend::Backend;
use crate::call::progress::{self, Progress};
use crate::call::{Call, Ctx, Services};
use crate::protocol::jsonrpc::{Notification, Outgoing, RequestId, Response, RpcError};
use crate::protocol::mcp::{self, Era};
use crate::server::pool::Work;
use crate::server::{Flight, Origin, Server};
use crate::tools::Lane;
use crate::tools::catalog::{self, Tool, ToolSpec};
use crate::tools::validate;
use crate::{controls, logging, redact};

/// A tool call's outcome, sent back by whoever finished it.
pub(super) struct Done {
    target: Target,
    /// The final progress notification, sent just before the response.
    finale: Option<Notification>,
    /// The result, serialized by the worker (a task keeps it so, and a poll writes those bytes).
    result: Result<Arc<RawValue>, RpcError>,
}

/// Who waits for a call's outcome.
pub(super) enum Target {
    /// The request (its id, and the call's sequence number, which tells a reused id apart).
    Request { id: RequestId, seq: u64 },
    /// The task it was answered with.
    Task(String),
}

/// A validated tool call: what runs, with what, on which lane and backend, and how its result is
/// shaped.
pub(super) struct Job {
    pub(super) tool: &'static Tool,
    pub(super) args: Map<String, Value>,
    pub(super) lane: Lane,
    pub(super) backend: Backend,
    pub(super) era: Era,
    /// The log level a modern request asked for, in force while it runs.
    pub(super) log_level: Option<String>,
}

/// A tool call on its way to a worker (possibly through the agy scheduler).
struct CallWork {
    services: Arc<Services>,
    job: Job,
    call: Arc<Call>,
    target: Target,
    done: Sender<Done>,
}

impl Server {
    /// `tools/call`: finds the tool, validates the arguments, and runs the call on its lane, or as a
    /// task when the request declares the tasks extension.
    pub(super) fn start_call(
        &mut self,
        id: RequestId,
        mut params: Value,
        era: Era,
        origin: Origin,
    ) {
        let (spec_index, args) = match parse_call(&self.specs, &mut params) {
            Ok(found) => found,
            Err(error) => return self.reply(origin, Response::err(Some(id), error)),
        };
        let tool = self.specs[spec_index].tool;
        log::info!("Tool {}({})", tool.name, redact::invocation_shape(&args));
        // A call of the 2025-11-25 revision that asks to run as a task (`params.task`).
        let as_task = match self.task_2025(era, &params, tool) {
            Ok(as_task) => as_task,
            Err(error) => return self.reply(origin, Response::err(Some(id), error)),
        };
        let args = match validate::validate(tool.name, &self.specs[spec_index].input_schema, args) {
            Ok(args) => args,
            Err(invalid) => {
                log::error!("Error in tool '{}': {}", tool.name, invalid.log_message());
                if as_task {
                    let result = tool_result(tool.name, Err(invalid.message()), era);
                    return self.task_at_once(id, origin, tool, &result);
                }
                let progress = self.client_progress(&params, tool.name);
                let finale = progress.and_then(|progress| progress.finish(false));
                let result = Ok(tool_result(tool.name, Err(invalid.message()), era));
                return self.answer(origin, id, finale, result);
            }
        };
        let lane = (tool.lane)(&args);
        // The backend is decided here, once: the call is routed and run on the same one.
        let backend = self.services.backends.active();
        let log_level = mcp::request_log_level(&params).map(str::to_string);
        if as_task {
            let job = Job { tool, args, lane, backend, era, log_level };
            return self.start_task_2025(id, origin, job);
        }
        // Argument errors and cheap tools are answered at once, never as tasks.
        if tool.task && lane != Lane::Inline && era == Era::Modern && mcp::tasks_declared(&params) {
            let job = Job { tool, args, lane, backend, era, log_level };
            return self.start_task(id, origin, job);
        }
        let progress = self.client_progress(&params, tool.name);
        let call = Arc::new(Call::new(tool.name, backend, progress));
        if lane == Lane::Inline {
            let ctx = Ctx { services: &self.services, call: &call };
            let (finale, result) = execute(&ctx, tool.run, args, era, log_level.as_deref());
            return self.answer(origin, id, finale, Ok(result));
        }
        let seq = self.next_seq();
        let batch = self.expect_answer(origin);
        self.flights.insert(id.clone(), Flight::Call { seq, call: call.clone(), batch });
        let job = Job { tool, args, lane, backend, era, log_level };
        self.dispatch(job, call, Target::Request { id, seq }, seq);
    }

    /// Progress for a call that carried a progress token: its start notification goes out now.
    fn client_progress(&mut self, params: &Value, tool: &'static str) -> Option<Arc<Progress>> {
        let token = progress::token_of(params)?;
        let progress = Progress::client(token, tool, self.transport.out.clone());
        if let Some(start) = progress.start_message() {
            self.send(start);
        }
        Some(progress)
    }

    /// Registers a validated model call as a task, answers it with the task at once, then runs it
    /// like any call. Nothing of the call happens before that answer is written: a host may cancel
    /// a task-declared call it has not seen answered within about 150 ms.
    fn start_task(&mut self, id: RequestId, origin: Origin, job: Job) {
        let progress = Progress::status(job.tool.name);
        let call = Arc::new(Call::new(job.tool.name, job.backend, Some(progress)));
        let seq = self.next_seq();
        // The task is registered before its answer is written, so a `tasks/get` that follows the
        // answer at once finds it.
        let (task, created) = match self.tasks.create(call.clone(), seq) {
            Ok(created) => created,
            Err(err) => {
                let error = RpcError::internal(format!("Internal error: no task id: {err}"));
                return self.reply(origin, Response::err(Some(id), error));
            }
        };
        log::info!("Task {task} created for {}", job.tool.name);
        self.reply(origin, Response::ok(id, mcp::envelope(created, job.era)));
        self.dispatch(job, call, Target::Task(task), seq);
    }

    /// A call answered later waits in its batch, if it came in one.
    pub(super) fn expect_answer(&mut self, origin: Origin) -> Option<u64> {
        match origin {
            Origin::Batch(key) => {
                self.batches.expect(key);
                Some(key)
            }
            Origin::Direct => None,
        }
    }

    /// Hands a call to the pool, through the agy scheduler when it is a model call on agy.
    pub(super) fn dispatch(&mut self, job: Job, call: Arc<Call>, target: Target, seq: u64) {
        if let Some(progress) = call.progress() {
            self.ticker.watch(progress.clone());
        }
        let on_agy = job.lane == Lane::Model && job.backend == Backend::Agy;
        let claim = on_agy.then(|| self.scheduler.claim(job.tool.name, &job.args));
        let local = job.lane == Lane::Local;
        let progress = call.progress().cloned();
        let work = Box::new(CallWork {
            services: self.services.clone(),
            job,
            call,
            target,
            done: self.done_tx.clone(),
        });
        match claim {
            Some(claim) => self.scheduler.push(seq, claim, progress, work),
            None if local => self.local.submit(work),
            None => self.pool.submit(work),
        }
    }

    pub(super) fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// `tasks/get`, `tasks/cancel` and `tasks/update`, for modern requests that declare the
    /// extension (it is negotiated only in the modern era). A completed task's result is written
    /// from its one serialized copy, however many polls wait for stdout.
    pub(super) fn task_request(
        &mut self,
        id: RequestId,
        method: &str,
        params: &Value,
        era: Era,
        origin: Origin,
    ) {
        let (view, shared) = match self.task_answer(method, params, era) {
            Ok(answer) => answer,
            Err(error) => return self.reply(origin, Response::err(Some(id), error)),
        };
        match (mcp::envelope(view, era), shared, origin) {
            (Value::Object(result), Some(shared), Origin::Direct) => {
                let result = Box::new(result);
                self.send(Outgoing::Shared { id, result, key: "result", shared });
            }
            // A batch answer is assembled as a `Value`.
            (mut view, Some(shared), _) => {
                view["result"] = parsed(&shared);
                self.reply(origin, Response::ok(id, view));
            }
            (view, None, _) => self.reply(origin, Response::ok(id, view)),
        }
    }

    fn task_answer(
        &mut self,
        method: &str,
        params: &Value,
        era: Era,
    ) -> Result<(Value, Option<Arc<RawValue>>), RpcError> {
        if era != Era::Modern || !mcp::tasks_declared(params) {
            return Err(mcp::missing_capability());
        }
        let Some(task_id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: {method} needs a string \"taskId\""
            )));
        };
        let acknowledged = (json!({"resultType": "complete"}), None);
        match method {
            "tasks/get" => self.tasks.get(task_id),
            "tasks/cancel" => {
                self.cancel_task(task_id)?;
                Ok(acknowledged)
            }
            // The relay never asks for input, so there is nothing to update.
            _ => self.tasks.find(task_id).map(|_| acknowledged),
        }
    }

    /// Stops a task's run (or takes it out of the agy scheduler's queue) and marks it cancelled,
    /// for both wire forms of a task; `-32602` for an unknown or expired id.
    pub(super) fn cancel_task(&mut self, task: &str) -> Result<(), RpcError> {
        let found = self.tasks.find(task)?;
        let (call, seq) = (found.call.clone(), found.seq);
        call.abort();
        self.scheduler.remove(seq);
        self.tasks.cancel(task);
        log::info!("Task {task} cancelled");
        self.task_ended(task);
        Ok(())
    }

    /// A worker finished a call (or could not start it).
    pub(super) fn complete(&mut self, done: Done) {
        let (id, seq) = match done.target {
            Target::Request { id, seq } => (id, seq),
            Target::Task(task) => {
                let ending = if done.result.is_ok() { "completed" } else { "failed" };
                if self.tasks.finish(&task, done.result) {
                    log::info!("Task {task} {ending}");
                }
                self.task_ended(&task);
                return;
            }
        };
        let batch = match self.flights.get(&id) {
            Some(Flight::Call { seq: running, batch, .. }) if *running == seq => *batch,
            // Cancelled (or a stale completion): nothing more is sent for it.
            _ => return,
        };
        self.flights.remove(&id);
        self.answer_request(id, batch, done.finale, done.result);
    }

    /// Sends a call's answer (after its final progress), or adds it to its batch.
    pub(super) fn answer_request(
        &mut self,
        id: RequestId,
        batch: Option<u64>,
        finale: Option<Notification>,
        result: Result<Arc<RawValue>, RpcError>,
    ) {
        if let Some(finale) = finale {
            self.send(finale);
        }
        match (batch, result) {
            (None, Ok(result)) => self.send(Outgoing::Cached { id, result }),
            (None, Err(error)) => self.send(Response::err(Some(id), error)),
            (Some(key), result) => {
                // A batch answer is assembled as a `Value`; tool calls in batches are rare.
                let result = result.map(|raw| parsed(&raw));
                let response = Response { id: Some(id.clone()), result };
                self.flights.insert(id, Flight::Answered { batch: key });
                if let Some(complete) = self.batches.fulfil(key, Some(response)) {
                    self.send_batch(key, complete);
                }
            }
        }
    }

    /// Answers a call at once: its final progress, then its response.
    fn answer(
        &mut self,
        origin: Origin,
        id: RequestId,
        finale: Option<Notification>,
        result: Result<Value, RpcError>,
    ) {
        if let Some(finale) = finale {
            self.send(finale);
        }
        self.reply(origin, Response { id: Some(id), result });
    }
}

impl Work for CallWork {
    fn run(self: Box<Self>) {
        let CallWork { services, job, call, target, done } = *self;
        // A call cancelled (or stopped by shutdown) while it waited never starts: its tool does
        // not run, so its CLI never starts and its prompt goes nowhere. Nobody waits for an answer.
        if call.is_aborted() {
            return;
        }
        if let Some(progress) = call.progress() {
            progress.started();
        }
        let ctx = Ctx { services: &services, call: &call };
        let (finale, result) =
            execute(&ctx, job.tool.run, job.args, job.era, job.log_level.as_deref());
        let result = serialized(&result);
        let _ = done.send(Done { target, finale, result });
    }

    /// No worker could be started: the call is answered with the reason (the agy scheduler, if
    /// the call waited there, releases its claim when this returns).
    fn reject(self: Box<Self>, reason: io::Error) {
        let finale = self.call.progress().and_then(|progress| progress.finish(false));
        let error =
            RpcError::internal(format!("Internal error: could not start a worker: {reason}"));
        let _ = self.done.send(Done { target: self.target, finale, result: Err(error) });
    }
}

/// Runs a tool with its validated arguments, and returns its final progress notification and its
/// result.
fn execute(
    ctx: &Ctx<'_>,
    run: catalog::Run,
    args: Map<String, Value>,
    era: Era,
    log_level: Option<&str>,
) -> (Option<Notification>, Value) {
    let tool = ctx.call.tool;
    let outcome = logging::with_request_level(log_level, || run(ctx, args));
    match &outcome {
        // A stop the client asked for (or shutdown) is no error.
        Err(message) if ctx.call.is_aborted() => log::info!("Tool '{tool}' stopped: {message}"),
        Err(message) => log::error!("Error in tool '{tool}': {message}"),
        Ok(_) => (),
    }
    let finale = ctx.call.progress().and_then(|progress| progress.finish(outcome.is_ok()));
    (finale, tool_result(tool, outcome, era))
}

/// A result serialized once, to be written (or kept by its task) as those bytes.
pub(super) fn serialized(result: &Value) -> Result<Arc<RawValue>, RpcError> {
    serde_json::value::to_raw_value(result)
        .map(Arc::from)
        .map_err(|err| RpcError::internal(format!("Internal error: {err}")))
}

/// A serialized result as a `Value` again (it was serialized from one, so it parses).
pub(super) fn parsed(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

/// The CallToolResult of a tool's outcome: its text, or `Error executing <tool>: <message>` with
/// `isError: true`.
fn tool_result(tool: &str, outcome: Result<String, String>, era: Era) -> Value {
    // A failure's text often quotes a CLI (its error line, its stderr): shown without control
    // sequences.
    let (text, is_error) = match outcome {
        Ok(text) => (text, false),
        Err(message) => (format!("Error executing {tool}: {}", controls::strip(&message)), true),
    };
    let result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    mcp::envelope(result, era)
}

/// Checks the shape of `tools/call` params, finds the tool and takes the arguments out (a large
/// prompt is moved, never copied).
fn parse_call(
    specs: &[ToolSpec],
    params: &mut Value,
) -> Result<(usize, Map<String, Value>), RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: tools/call needs a string \"name\""));
    };
    let not_an_object =
        || RpcError::invalid_params("Invalid params: \"arguments\" must be an object");
    let Some(index) = specs.iter().position(|spec| spec.tool.name == name) else {
        if matches!(params.get("arguments"), None | Some(Value::Object(_))) {
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
        }
        return Err(not_an_object());
    };
    match params.get_mut("arguments").map(Value::take) {
        None => Ok((index, Map::new())),
        Some(Value::Object(args)) => Ok((index, args)),
        Some(_) => Err(not_an_object()),
    }
}
