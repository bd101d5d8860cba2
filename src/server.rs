//! The event loop: one thread that owns the protocol state (in-flight calls, batches,
//! subscriptions), answers cheap requests inline, starts a thread per tool call, and turns worker
//! completions, cancellations, end of input and signals into the right messages.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use signal_hook::iterator::Signals;

use crate::call::{Call, Ctx, Services};
use crate::catalog::{self, ToolSpec};
use crate::chan::{Receiver, Sender, unbounded};
use crate::config::Config;
use crate::jsonrpc::{self, ErrorCode, Message, RequestId, RpcError};
use crate::mcp::{self, Era};
use crate::progress::{self, Progress, Ticker};
use crate::stdio::{self, Inbound, Out};
use crate::{logging, prompts, redact, threads, tools};
use std::collections::HashMap;

/// How long stdin EOF waits for calls that are finishing on their own.
const EOF_GRACE: Duration = Duration::from_millis(500);

/// What the event loop reacts to; the reader, the workers and the signal thread all send to it.
enum Event {
    Client(Inbound),
    EndOfInput,
    Done(Done),
    Signal,
}

/// Sends `event` when dropped: the reader's end of input, the signal thread's end.
struct SendOnDrop {
    events: Sender<Event>,
    event: fn() -> Event,
}

/// A finished tool call, sent back by its worker thread.
struct Done {
    id: RequestId,
    seq: u64,
    /// The whole response message; `None` when the call was interrupted and must not be answered.
    response: Option<Value>,
}

struct InFlight {
    seq: u64,
    call: Arc<Call>,
    batch: Option<u64>,
}

/// A JSON-RPC batch waiting for its last response.
struct Batch {
    sealed: bool,
    pending: usize,
    responses: Vec<Value>,
}

struct Server {
    services: Arc<Services>,
    specs: Arc<Vec<ToolSpec>>,
    out: Out,
    ticker: Ticker,
    events: Sender<Event>,
    in_flight: HashMap<RequestId, InFlight>,
    subscriptions: Vec<RequestId>,
    batches: HashMap<u64, Batch>,
    next_seq: u64,
    /// Serialized `tools/list` and `prompts/list` results, legacy and modern.
    list_cache: [Option<String>; 4],
}

/// Serves MCP on stdio until end of input or a termination signal.
pub fn run(config: Config, mut signals: Signals) -> io::Result<()> {
    let (events_tx, events) = unbounded();
    let on_signal = SendOnDrop { events: events_tx.clone(), event: || Event::Signal };
    threads::spawn(
        "signals".into(),
        Box::new(move || {
            for _ in signals.forever() {
                if !on_signal.events.send(Event::Signal) {
                    return;
                }
            }
        }),
    )
    .map_err(|err| io::Error::new(err.kind(), format!("could not watch signals: {err}")))?;
    let out = stdio::writer()?;
    logging::attach(out.clone());
    let end_of_input = SendOnDrop { events: events_tx.clone(), event: || Event::EndOfInput };
    // The reader waits until the loop has taken each line.
    stdio::reader(
        config.max_message_bytes,
        Box::new(move |inbound| end_of_input.events.send_and_wait(Event::Client(inbound))),
    )?;
    let ticker = Ticker::start(config.progress_interval)?;
    let specs = Arc::new(catalog::tool_specs(config.test_tools));
    let services = Arc::new(Services::new(config));
    let mut server = Server {
        services,
        specs,
        out,
        ticker,
        events: events_tx,
        in_flight: HashMap::new(),
        subscriptions: Vec::new(),
        batches: HashMap::new(),
        next_seq: 0,
        list_cache: Default::default(),
    };
    log::debug!("gemini-relay listening on stdio");

    // The server itself holds a sender, so the channel never disconnects.
    let end = loop {
        match events.recv().unwrap_or(Event::EndOfInput) {
            Event::Client(inbound) => server.handle_inbound(inbound),
            Event::Done(done) => server.complete(done),
            end @ (Event::EndOfInput | Event::Signal) => break end,
        }
    };
    if let Event::EndOfInput = end {
        server.drain_on_eof(&events);
    }
    server.shutdown();
    Ok(())
}

impl Drop for SendOnDrop {
    fn drop(&mut self) {
        self.events.send((self.event)());
    }
}

impl Server {
    fn handle_inbound(&mut self, inbound: Inbound) {
        match inbound {
            Inbound::Malformed => {
                self.send(&jsonrpc::error_response(None, &RpcError::parse_error()))
            }
            Inbound::TooLarge => self.send(&jsonrpc::error_response(None, &RpcError::too_large())),
            Inbound::Message(Value::Array(items)) => self.handle_batch(items),
            Inbound::Message(value) => self.handle_value(value, None),
        }
    }

    fn handle_batch(&mut self, items: Vec<Value>) {
        if items.is_empty() {
            self.send(&jsonrpc::error_response(None, &RpcError::invalid_request()));
            return;
        }
        let key = self.next_seq;
        self.next_seq += 1;
        self.batches.insert(key, Batch { sealed: false, pending: 0, responses: Vec::new() });
        for item in items {
            self.handle_value(item, Some(key));
        }
        if let Some(batch) = self.batches.get_mut(&key) {
            batch.sealed = true;
        }
        self.settle_batch(key);
    }

    fn handle_value(&mut self, value: Value, batch: Option<u64>) {
        match jsonrpc::classify(value) {
            Ok(Message::Request { id, method, params }) => {
                self.handle_request(id, &method, params, batch)
            }
            Ok(Message::Notification { method, params }) => {
                self.handle_notification(&method, &params)
            }
            Ok(Message::Response) => (),
            Err((id, error)) => self.reply(batch, jsonrpc::error_response(id.as_ref(), &error)),
        }
    }

    fn handle_request(&mut self, id: RequestId, method: &str, params: Value, batch: Option<u64>) {
        let era = match mcp::era_of(&params) {
            Ok(era) => era,
            Err(error) => return self.reply(batch, jsonrpc::error_response(Some(&id), &error)),
        };
        let result = match method {
            "initialize" => Ok(mcp::envelope(mcp::initialize_result(&params), era, false)),
            "ping" => Ok(mcp::envelope(json!({}), era, false)),
            "server/discover" => Ok(mcp::discover_result()),
            "tools/list" | "prompts/list" if batch.is_none() => {
                return self.send_list(&id, method, era);
            }
            "tools/list" => Ok(mcp::envelope(catalog::tools_list_result(&self.specs), era, true)),
            "prompts/list" => {
                Ok(mcp::envelope(prompts::prompts_list_result(&self.specs), era, true))
            }
            "prompts/get" => self.prompts_get(&params).map(|r| mcp::envelope(r, era, false)),
            "resources/list" => Ok(mcp::envelope(json!({"resources": []}), era, true)),
            "resources/templates/list" => {
                Ok(mcp::envelope(json!({"resourceTemplates": []}), era, true))
            }
            "logging/setLevel" => set_log_level(&params).map(|r| mcp::envelope(r, era, false)),
            "subscriptions/listen" => {
                let ack = mcp::subscription_ack(&id.to_value(), &params);
                self.send(&jsonrpc::notification("notifications/subscriptions/acknowledged", ack));
                self.subscriptions.push(id);
                return;
            }
            "tools/call" => return self.start_call(id, params, era, batch),
            _ => Err(RpcError::method_not_found()),
        };
        let response = match result {
            Ok(result) => jsonrpc::response(&id, result),
            Err(error) => jsonrpc::error_response(Some(&id), &error),
        };
        self.reply(batch, response);
    }

    fn handle_notification(&mut self, method: &str, params: &Value) {
        if method != "notifications/cancelled" {
            return;
        }
        let Some(id) = params.get("requestId").and_then(RequestId::from_json) else { return };
        if let Some(in_flight) = self.in_flight.remove(&id) {
            in_flight.call.abort(&self.services.backends.queue);
            if let Some(key) = in_flight.batch {
                if let Some(batch) = self.batches.get_mut(&key) {
                    batch.pending -= 1;
                }
                self.settle_batch(key);
            }
            return;
        }
        self.subscriptions.retain(|sub| *sub != id);
    }

    /// Answers `tools/list` or `prompts/list` from a serialization made once per era: the lists never
    /// change while the process lives, and they are the largest answers a host asks for repeatedly.
    fn send_list(&mut self, id: &RequestId, method: &str, era: Era) {
        let slot = usize::from(method == "prompts/list") * 2 + usize::from(era == Era::Modern);
        let specs = &self.specs;
        let result = self.list_cache[slot].get_or_insert_with(|| {
            let result = match method {
                "tools/list" => catalog::tools_list_result(specs),
                _ => prompts::prompts_list_result(specs),
            };
            serde_json::to_string(&mcp::envelope(result, era, true)).unwrap_or_default()
        });
        let id = serde_json::to_string(&id.to_value()).unwrap_or_default();
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}");
        self.out.send_serialized(line.into_bytes());
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

    fn start_call(&mut self, id: RequestId, mut params: Value, era: Era, batch: Option<u64>) {
        let (spec, args) = match parse_call(&self.specs, &mut params) {
            Ok(found) => found,
            Err(error) => return self.reply(batch, jsonrpc::error_response(Some(&id), &error)),
        };
        let name = spec.name;
        let progress = progress::token_of(&params).map(|token| {
            let progress = Progress::start(token, name, self.out.clone());
            self.ticker.watch(progress.clone());
            progress
        });
        // Model tools take their agy queue place now, in arrival order (§4.1).
        let ticket = tools::may_run_agy(name).then(|| self.services.backends.queue.reserve());
        let call = Arc::new(Call::new(name, progress, ticket));
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight.insert(id.clone(), InFlight { seq, call: call.clone(), batch });
        if let Some(key) = batch {
            if let Some(batch) = self.batches.get_mut(&key) {
                batch.pending += 1;
            }
        }
        let worker = Worker {
            services: self.services.clone(),
            specs: self.specs.clone(),
            events: self.events.clone(),
            log_level: mcp::request_log_level(&params).map(str::to_string),
        };
        let spawned = threads::spawn(
            format!("call-{name}"),
            Box::new(move || worker.run(id, seq, era, &call, args)),
        );
        if let Err(err) = spawned {
            log::error!("Error in tool '{name}': could not start a thread: {err}");
        }
    }

    fn complete(&mut self, done: Done) {
        match self.in_flight.get(&done.id) {
            Some(in_flight) if in_flight.seq == done.seq => (),
            _ => return,
        }
        let Some(in_flight) = self.in_flight.remove(&done.id) else { return };
        let Some(response) = done.response else {
            if let Some(key) = in_flight.batch {
                if let Some(batch) = self.batches.get_mut(&key) {
                    batch.pending -= 1;
                }
                self.settle_batch(key);
            }
            return;
        };
        match in_flight.batch {
            None => self.send(&response),
            Some(key) => {
                if let Some(batch) = self.batches.get_mut(&key) {
                    batch.pending -= 1;
                    batch.responses.push(response);
                }
                self.settle_batch(key);
            }
        }
    }

    /// Sends a response now, or keeps it for its batch.
    fn reply(&mut self, batch: Option<u64>, response: Value) {
        match batch.and_then(|key| self.batches.get_mut(&key)) {
            Some(batch) => batch.responses.push(response),
            None => self.send(&response),
        }
    }

    fn settle_batch(&mut self, key: u64) {
        let Some(batch) = self.batches.get(&key) else { return };
        if !batch.sealed || batch.pending > 0 {
            return;
        }
        let Some(batch) = self.batches.remove(&key) else { return };
        if !batch.responses.is_empty() {
            self.send(&Value::Array(batch.responses));
        }
    }

    fn send(&self, message: &Value) {
        self.out.send(message);
    }

    /// End of input: children are killed (their calls get no answer), calls finishing on their own
    /// are still answered for a short grace.
    fn drain_on_eof(&mut self, events: &Receiver<Event>) {
        // Each run notices its call's abort flag within a poll slice, kills its group and reports
        // the call as interrupted, so only calls that finish on their own are answered.
        for in_flight in self.in_flight.values() {
            in_flight.call.stop(&self.services.backends.queue);
        }
        let deadline = Instant::now() + EOF_GRACE;
        while !self.in_flight.is_empty() {
            match events.recv_deadline(deadline) {
                Ok(Event::Done(done)) => self.complete(done),
                // A signal now changes nothing: shutdown follows the grace anyway.
                Ok(_) => (),
                Err(_) => break,
            }
        }
    }

    fn shutdown(&mut self) {
        for in_flight in self.in_flight.values() {
            in_flight.call.abort(&self.services.backends.queue);
        }
        self.services.runs.kill_all();
        for id in std::mem::take(&mut self.subscriptions) {
            let closed = mcp::subscription_closed(&id.to_value());
            self.send(&jsonrpc::response(&id, closed));
        }
        self.out.flush(Duration::from_secs(1));
    }
}

/// What a worker thread needs to run one call and report back.
struct Worker {
    services: Arc<Services>,
    specs: Arc<Vec<ToolSpec>>,
    events: Sender<Event>,
    log_level: Option<String>,
}

impl Worker {
    fn run(self, id: RequestId, seq: u64, era: Era, call: &Arc<Call>, args: Map<String, Value>) {
        let ctx = Ctx { services: &self.services, call };
        let Some(spec) = self.specs.iter().find(|spec| spec.name == call.tool) else { return };
        log::info!("Tool {}({})", spec.name, redact::invocation_shape(&args));
        let outcome = logging::with_request_level(self.log_level.as_deref(), || {
            catch_unwind(AssertUnwindSafe(|| tools::call(&ctx, spec, args)))
        });
        if let Some(ticket) = call.take_ticket() {
            self.services.backends.queue.release(ticket);
        }
        let (text, ok) = match outcome {
            Ok(Ok(text)) => (text, true),
            Ok(Err(message)) => {
                log::error!("Error in tool '{}': {message}", spec.name);
                (format!("Error executing {}: {message}", spec.name), false)
            }
            Err(_) => {
                if let Some(progress) = call.progress() {
                    progress.finish(false);
                }
                let error = RpcError::new(ErrorCode::InternalError, "Internal error");
                let response = Some(jsonrpc::error_response(Some(&id), &error));
                self.events.send(Event::Done(Done { id, seq, response }));
                return;
            }
        };
        if call.was_interrupted() {
            if let Some(progress) = call.progress() {
                progress.silence();
            }
            self.events.send(Event::Done(Done { id, seq, response: None }));
            return;
        }
        // The final progress notification goes out before the response (D7).
        if let Some(progress) = call.progress() {
            progress.finish(ok);
        }
        let result = json!({"content": [{"type": "text", "text": text}], "isError": !ok});
        let response = jsonrpc::response(&id, mcp::envelope(result, era, false));
        self.events.send(Event::Done(Done { id, seq, response: Some(response) }));
    }
}

/// Checks the shape of `tools/call` params, finds the tool and takes the arguments out (a large
/// prompt is moved, never copied).
fn parse_call<'a>(
    specs: &'a [ToolSpec],
    params: &mut Value,
) -> Result<(&'a ToolSpec, Map<String, Value>), RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: tools/call needs a string \"name\""));
    };
    let not_an_object =
        || RpcError::invalid_params("Invalid params: \"arguments\" must be an object");
    let Some(spec) = specs.iter().find(|spec| spec.name == name) else {
        if matches!(params.get("arguments"), None | Some(Value::Object(_))) {
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
        }
        return Err(not_an_object());
    };
    match params.get_mut("arguments").map(Value::take) {
        None => Ok((spec, Map::new())),
        Some(Value::Object(args)) => Ok((spec, args)),
        Some(_) => Err(not_an_object()),
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
