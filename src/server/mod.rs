//! The event loop: one thread that owns the protocol state (calls in flight, batches,
//! subscriptions), answers cheap requests itself, hands tool calls to the worker pool (through the
//! agy scheduler when they run agy) or, when they read local files, to a small pool of their own,
//! and turns worker completions, cancellations, end of input and signals into the right messages.
//! It never blocks on stdout: while the writer is behind, what it has to send waits here and it
//! stops taking input. `calls.rs` holds what concerns tool calls.

mod calls;
pub mod pool;
pub mod scheduler;
pub mod slots;
pub mod tasks;
mod tasks2025;

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select, Sender, unbounded};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::progress::Ticker;
use crate::call::{Call, Services};
use crate::config::Config;
use crate::logging;
use crate::protocol::batch::{Batches, Complete};
use crate::protocol::jsonrpc::{
    self, Message, Notification, Outgoing, Request, RequestId, Response, RpcError,
};
use crate::protocol::mcp::{self, Era};
use crate::protocol::stdio::{Blocked, Inbound, Outbound, Transport};
use crate::server::calls::Done;
use crate::server::pool::Pool;
use crate::server::scheduler::Scheduler;
use crate::server::slots::Slots;
use crate::state::StateDir;
use crate::tools::catalog::{self, ToolSpec};
use crate::tools::prompts;
use tasks::Tasks;

/// At most this many tool calls run at once; more wait for a worker in arrival order.
const MAX_WORKERS: usize = 64;
/// At most this many calls read local files at once (`Lane::Local`), beside the workers.
const LOCAL_WORKERS: usize = 2;
/// How long a task outlives the call's deadline (its `ttlMs` is the deadline plus this).
const TASK_GRACE: Duration = Duration::from_secs(10 * 60);
/// How long shutdown may take in all, stdout blocked or not.
const SHUTDOWN_BUDGET: Duration = Duration::from_secs(1);

/// Serves MCP over `transport` until end of input, a signal on `signals`, or stdout closing.
pub fn run(services: Arc<Services>, transport: Transport, signals: Receiver<()>) -> io::Result<()> {
    let config = &services.config;
    let ticker = Ticker::start(config.progress_interval)?;
    let specs = catalog::tool_specs(config.test_tools);
    let pool = Arc::new(Pool::new(MAX_WORKERS));
    let task_ttl = config.timeout + TASK_GRACE;
    // Finished tasks keep at most as many bytes of results as one CLI may print.
    let task_bytes = config.max_output_bytes;
    let (done_tx, done) = unbounded();
    let state = open_state_dir(config);
    let slots = agy_slots(state.as_ref(), config.agy_parallel);
    let mut server = Server {
        services: services.clone(),
        specs: Arc::new(specs),
        transport,
        ticker,
        scheduler: Scheduler::new(pool.clone(), slots, scheduler::canonical_project()),
        state,
        pool,
        local: Pool::new(LOCAL_WORKERS),
        done_tx,
        done,
        signals,
        flights: HashMap::new(),
        tasks: Tasks::new(task_ttl, task_bytes),
        tasks_2025: false,
        batches: Batches::default(),
        next_seq: 0,
        lists: HashMap::new(),
        backlog: VecDeque::new(),
        held: None,
        writer_gone: false,
    };
    logging::attach(server.transport.out.clone());
    log::debug!("gemini-relay listening on stdio");
    loop {
        match server.next_event() {
            Event::Client(inbound) => server.handle_inbound(inbound),
            Event::Done(done) => server.complete(done),
            Event::Stop => break,
        }
    }
    server.shutdown();
    Ok(())
}

/// What the loop reacts to.
enum Event {
    Client(Inbound),
    Done(Done),
    /// End of input, a signal, or stdout gone.
    Stop,
}

/// A request id that is still in flight: a duplicate is refused with `-32600`.
enum Flight {
    /// A tool call running or waiting for a worker or for agy.
    Call { seq: u64, call: Arc<Call>, batch: Option<u64> },
    /// A `subscriptions/listen` held open until cancelled or shutdown.
    Subscription,
    /// A `tasks/result` waiting for its task to end.
    TaskResult { task: String, batch: Option<u64> },
    /// Answered, but its batch has not been sent yet.
    Answered { batch: u64 },
}

/// The lists the server caches once serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum List {
    Tools,
    /// `tools/list` where the 2025-11-25 tasks are served: the task tools say so.
    TaskTools,
    Prompts,
}

/// Where a request came from: alone on its line, or inside a batch.
#[derive(Debug, Clone, Copy)]
enum Origin {
    Direct,
    Batch(u64),
}

struct Server {
    services: Arc<Services>,
    specs: Arc<Vec<ToolSpec>>,
    transport: Transport,
    ticker: Ticker,
    pool: Arc<Pool>,
    /// The pool of `Lane::Local` calls, never behind model calls.
    local: Pool,
    scheduler: Arc<Scheduler>,
    /// The user's state directory, when it is usable (`None`: everything stays in this process).
    #[allow(dead_code, reason = "for the job store")]
    state: Option<StateDir>,
    done_tx: Sender<Done>,
    done: Receiver<Done>,
    signals: Receiver<()>,
    flights: HashMap<RequestId, Flight>,
    tasks: Tasks,
    /// This connection negotiated 2025-11-25 and declared `capabilities.tasks` in `initialize`:
    /// legacy requests get that revision's tasks.
    tasks_2025: bool,
    batches: Batches,
    next_seq: u64,
    /// `tools/list` and `prompts/list` results per era: they never change while the process lives.
    lists: HashMap<(List, Era), Arc<RawValue>>,
    /// Messages waiting for the writer (stdout is not being read fast enough).
    backlog: VecDeque<Outgoing>,
    /// One input message taken while the backlog waited (to see end of input); handled next.
    held: Option<Inbound>,
    /// The writer thread ended (stdout closed or failing).
    writer_gone: bool,
}

impl Server {
    /// Waits for the next thing to do, writing the backlog meanwhile. Input is not taken while the
    /// backlog waits (backpressure), except one message, to notice end of input.
    fn next_event(&mut self) -> Event {
        loop {
            if self.writer_gone {
                return Event::Stop;
            }
            if self.backlog.is_empty()
                && let Some(inbound) = self.held.take()
            {
                return Event::Client(inbound);
            }
            let mut select = Select::new();
            let done = select.recv(&self.done);
            let signal = select.recv(&self.signals);
            let writer = select.recv(&self.transport.writer_alive);
            let input = self.held.is_none().then(|| select.recv(&self.transport.inbox));
            let output =
                (!self.backlog.is_empty()).then(|| select.send(self.transport.out.channel()));
            let operation = select.select();
            let index = operation.index();
            if index == done {
                // The server holds a sender, so this never disconnects.
                if let Ok(done) = operation.recv(&self.done) {
                    return Event::Done(done);
                }
            } else if index == signal {
                let _ = operation.recv(&self.signals);
                return Event::Stop;
            } else if index == writer {
                // Only ever disconnects: the writer thread ended.
                let _ = operation.recv(&self.transport.writer_alive);
                return Event::Stop;
            } else if Some(index) == input {
                match operation.recv(&self.transport.inbox) {
                    Ok(inbound) if self.backlog.is_empty() => return Event::Client(inbound),
                    Ok(inbound) => self.held = Some(inbound),
                    Err(_) => return Event::Stop,
                }
            } else if Some(index) == output {
                let Some(message) = self.backlog.pop_front() else { continue };
                if operation.send(self.transport.out.channel(), Outbound::Message(message)).is_err()
                {
                    self.writer_gone = true;
                }
            }
        }
    }

    /// Queues a message for stdout without blocking: behind a backlog, or in it when the writer is
    /// full.
    fn send(&mut self, message: impl Into<Outgoing>) {
        let message = message.into();
        if !self.backlog.is_empty() {
            self.backlog.push_back(message);
            return;
        }
        match self.transport.out.try_send(message) {
            Ok(()) => (),
            Err(Blocked::Full(message)) => self.backlog.push_back(message),
            // Nobody can be answered any more: the loop stops at its next turn.
            Err(Blocked::Gone) => self.writer_gone = true,
        }
    }

    fn handle_inbound(&mut self, inbound: Inbound) {
        match inbound {
            Inbound::Malformed => self.send(Response::err(None, RpcError::parse_error())),
            Inbound::TooLarge => self.send(Response::err(None, RpcError::too_large())),
            Inbound::Message(Value::Array(items)) => self.handle_batch(items),
            Inbound::Message(value) => self.handle_value(value, Origin::Direct),
        }
    }

    fn handle_batch(&mut self, items: Vec<Value>) {
        if items.is_empty() {
            self.send(Response::err(None, RpcError::invalid_request()));
            return;
        }
        let key = self.batches.open();
        for item in items {
            self.handle_value(item, Origin::Batch(key));
        }
        if let Some(complete) = self.batches.seal(key) {
            self.send_batch(key, complete);
        }
    }

    fn handle_value(&mut self, value: Value, origin: Origin) {
        match jsonrpc::classify(value) {
            Ok(Message::Request(request)) => self.handle_request(request, origin),
            Ok(Message::Notification(notification)) => self.handle_notification(&notification),
            Ok(Message::Response) => (),
            Err(response) => self.reply(origin, response),
        }
    }

    fn handle_request(&mut self, request: Request, origin: Origin) {
        let Request { id, method, params } = request;
        if self.flights.contains_key(&id) {
            let error = RpcError::invalid_request()
                .with_data(json!(format!("duplicate id {id} is still in flight")));
            return self.reply(origin, Response::err(Some(id), error));
        }
        let era = match mcp::era_of(&params) {
            Ok(era) => era,
            Err(error) => return self.reply(origin, Response::err(Some(id), error)),
        };
        let result = match method.as_str() {
            "initialize" => Ok(mcp::envelope(self.initialize(&params), era)),
            "ping" => Ok(mcp::envelope(json!({}), era)),
            "server/discover" => Ok(mcp::discover_result()),
            "tools/list" | "prompts/list" => {
                let list = match method.as_str() {
                    "prompts/list" => List::Prompts,
                    _ if era == Era::Legacy && self.tasks_2025 => List::TaskTools,
                    _ => List::Tools,
                };
                let result = self.list(list, era).clone();
                match origin {
                    Origin::Direct => return self.send(Outgoing::Cached { id, result }),
                    // A batch answer is assembled as a `Value`; lists in batches are rare.
                    Origin::Batch(_) => {
                        Ok(serde_json::from_str(result.get()).expect("a serialized list parses"))
                    }
                }
            }
            "prompts/get" => self.prompts_get(&params).map(|r| mcp::envelope(r, era)),
            "resources/list" => Ok(mcp::list_envelope(json!({"resources": []}), era)),
            "resources/templates/list" => {
                Ok(mcp::list_envelope(json!({"resourceTemplates": []}), era))
            }
            "logging/setLevel" => set_log_level(&params).map(|r| mcp::envelope(r, era)),
            // Task status notifications are part of the tasks extension.
            "subscriptions/listen"
                if params.pointer("/notifications/taskIds").is_some()
                    && !(era == Era::Modern && mcp::tasks_declared(&params)) =>
            {
                Err(mcp::missing_capability())
            }
            "subscriptions/listen" => {
                let ack = mcp::subscription_ack(&id.to_value(), &params);
                self.send(Notification::new("notifications/subscriptions/acknowledged", ack));
                self.flights.insert(id, Flight::Subscription);
                return;
            }
            "tools/call" => return self.start_call(id, params, era, origin),
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
                if era == Era::Legacy && self.tasks_2025 =>
            {
                return self.task_request_2025(id, &method, &params, origin);
            }
            "tasks/get" | "tasks/cancel" | "tasks/update" => {
                return self.task_request(id, &method, &params, era, origin);
            }
            _ => Err(RpcError::method_not_found()),
        };
        self.reply(origin, Response { id: Some(id), result });
    }

    fn handle_notification(&mut self, notification: &Notification) {
        if notification.method != "notifications/cancelled" {
            return;
        }
        let Some(id) = notification.params.get("requestId").and_then(RequestId::from_json) else {
            return;
        };
        match self.flights.remove(&id) {
            Some(Flight::Call { seq, call, batch }) => {
                call.abort();
                // A call still waiting for agy leaves the scheduler and never runs.
                self.scheduler.remove(seq);
                if let Some(key) = batch
                    && let Some(complete) = self.batches.fulfil(key, None)
                {
                    self.send_batch(key, complete);
                }
            }
            Some(Flight::TaskResult { batch: Some(key), .. }) => {
                if let Some(complete) = self.batches.fulfil(key, None) {
                    self.send_batch(key, complete);
                }
            }
            Some(Flight::Subscription | Flight::TaskResult { .. }) | None => (),
            // Already answered: the cancellation comes too late to matter.
            Some(answered @ Flight::Answered { .. }) => {
                self.flights.insert(id, answered);
            }
        }
    }

    /// `tools/list` or `prompts/list`, built and serialized once per era: the lists never change
    /// while the process lives, they are the largest answers a host asks for again and again, and
    /// building one afresh costs hundreds of small allocations (measured: 265 µs a `tools/list`
    /// against 91 µs for a baseline server that clones its list, because of musl's allocator).
    fn list(&mut self, list: List, era: Era) -> &Arc<RawValue> {
        let specs = &self.specs;
        self.lists.entry((list, era)).or_insert_with(|| {
            let result = match list {
                List::Tools => catalog::tools_list_result(specs),
                List::TaskTools => {
                    tasks2025::with_task_support(catalog::tools_list_result(specs), specs)
                }
                List::Prompts => prompts::prompts_list_result(specs),
            };
            let value = mcp::list_envelope(result, era);
            let serialized = serde_json::value::to_raw_value(&value)
                .expect("a list of tools or prompts serializes");
            Arc::from(serialized)
        })
    }

    fn prompts_get(&self, params: &Value) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "Invalid params: prompts/get needs a string \"name\"",
            ));
        };
        let args = match params.get("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(args)) => Some(args),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: \"arguments\" must be an object",
                ));
            }
        };
        prompts::prompts_get_result(&self.specs, name, args).map_err(RpcError::invalid_params)
    }

    /// Sends a response now, or keeps it for its batch.
    fn reply(&mut self, origin: Origin, response: Response) {
        match origin {
            Origin::Direct => self.send(response),
            Origin::Batch(key) => {
                if let Some(id) = &response.id {
                    self.flights.entry(id.clone()).or_insert(Flight::Answered { batch: key });
                }
                self.batches.push(key, response);
            }
        }
    }

    fn send_batch(&mut self, key: u64, complete: Complete) {
        for id in &complete.ids {
            if let Some(Flight::Answered { batch }) = self.flights.get(id)
                && *batch == key
            {
                self.flights.remove(id);
            }
        }
        if !complete.responses.is_empty() {
            self.send(Outgoing::Batch(complete.responses));
        }
    }

    /// Stops everything within the shutdown budget: calls waiting for agy are dropped, running calls
    /// aborted and their process groups killed (nothing is answered for them), open subscriptions
    /// are answered, and what is queued for stdout is flushed as far as the client reads it.
    fn shutdown(&mut self) {
        let deadline = Instant::now() + SHUTDOWN_BUDGET;
        self.scheduler.close();
        let mut subscriptions = Vec::new();
        for call in self.tasks.working() {
            call.abort();
        }
        for (id, flight) in self.flights.drain() {
            match flight {
                Flight::Call { call, .. } => call.abort(),
                Flight::Subscription => subscriptions.push(id),
                Flight::Answered { .. } | Flight::TaskResult { .. } => (),
            }
        }
        self.services.runs.kill_all();
        let out = &self.transport.out;
        let closing = subscriptions.into_iter().map(|id| {
            let closed = mcp::subscription_closed(&id.to_value());
            Outgoing::from(Response::ok(id, closed))
        });
        for message in self.backlog.drain(..).chain(closing) {
            if !out.send_until(message, deadline) {
                return;
            }
        }
        out.flush_until(deadline);
    }
}

/// The user's state directory, or `None` (with one warning) when there is none or it is refused.
fn open_state_dir(config: &Config) -> Option<StateDir> {
    let Some(root) = &config.state_dir else {
        log::warn!(
            "No state directory (no home directory and GEMINI_MCP_STATE_DIR unset): agy's run slots are counted in this relay only"
        );
        return None;
    };
    match StateDir::open(root) {
        Ok(state) => Some(state),
        Err(why) => {
            log::warn!("{why}; agy's run slots are counted in this relay only");
            None
        }
    }
}

/// agy's run slots: in the state directory, shared by the user's relays; else (with one warning
/// when the directory cannot hold locks) this relay's own.
fn agy_slots(state: Option<&StateDir>, cap: usize) -> Slots {
    let Some(state) = state else { return Slots::in_memory(cap) };
    match Slots::in_dir(state, cap) {
        Ok(slots) => slots,
        Err(why) => {
            log::warn!("{why}; agy's run slots are counted in this relay only");
            Slots::in_memory(cap)
        }
    }
}

fn set_log_level(params: &Value) -> Result<Value, RpcError> {
    match params.get("level").and_then(Value::as_str) {
        Some(level) if logging::set_level(level) => Ok(json!({})),
        _ => Err(RpcError::invalid_params(
            "Invalid params: \"level\" must be one of debug, info, notice, warning, error, critical, alert, emergency",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::thread;

    use crossbeam_channel::bounded;

    use crate::protocol::stdio::Out;

    /// A server on an in-memory transport: lines go in, messages come out, like lsp-server's
    /// `Connection::memory()`.
    struct Memory {
        input: Option<Sender<Inbound>>,
        output: Receiver<Outbound>,
        _signals: Sender<()>,
        _writer_alive: Sender<()>,
        server: thread::JoinHandle<io::Result<()>>,
    }

    impl Memory {
        fn start() -> Memory {
            let (input, inbox) = bounded(0);
            let (out, output) = Out::memory();
            let (signals_tx, signals) = bounded(1);
            let (alive, writer_alive) = bounded(0);
            let services = Arc::new(Services::new(Config::from_env(|_| None)));
            let transport = Transport { inbox, out, writer_alive };
            let server = thread::spawn(move || run(services, transport, signals));
            Memory {
                input: Some(input),
                output,
                _signals: signals_tx,
                _writer_alive: alive,
                server,
            }
        }

        fn send(&self, message: Value) {
            self.input.as_ref().unwrap().send(Inbound::Message(message)).unwrap();
        }

        fn recv(&self) -> Value {
            match self.output.recv_timeout(Duration::from_secs(10)).unwrap() {
                Outbound::Message(message) => serde_json::to_value(&message).unwrap(),
                Outbound::Flush(ack) => {
                    let _ = ack.send(());
                    self.recv()
                }
            }
        }
    }

    #[test]
    fn answers_in_memory_and_stops_at_end_of_input() {
        let memory = Memory::start();
        memory.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        assert_eq!(memory.recv(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        memory.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "gemini-ping", "arguments": {"prompt": "echo"}}}));
        let answer = memory.recv();
        assert_eq!(answer["id"], 2);
        assert_eq!(answer["result"]["content"][0]["text"], "echo");
        memory.send(json!({"jsonrpc": "2.0", "id": 3, "method": "nope"}));
        assert_eq!(memory.recv()["error"]["code"], -32601);
        let Memory { input, output, server, .. } = memory;
        drop(input);
        // The shutdown flush is acknowledged by the (memory) writer.
        let flush = output.recv_timeout(Duration::from_secs(10)).unwrap();
        let Outbound::Flush(ack) = flush else { panic!("expected the shutdown flush") };
        ack.send(()).unwrap();
        server.join().unwrap().unwrap();
    }
}
