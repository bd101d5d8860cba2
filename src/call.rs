//! What a tool call can reach: the services shared by every call, and the call's own state (its
//! progress reporting and its abort flag). Tools see this, never JSON-RPC ids.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::Backends;
use crate::changemode::cache::ChunkCache;
use crate::config::Config;
use crate::exec::{self, OnStdout};
use crate::progress::Progress;
use crate::queue::{AgyQueue, Ticket};

/// Shared by every call for the life of the process.
pub struct Services {
    pub config: Config,
    pub runs: exec::Runs,
    pub backends: Backends,
    pub chunks: ChunkCache,
}

impl Services {
    pub fn new(config: Config) -> Services {
        Services {
            config,
            runs: exec::Runs::default(),
            backends: Backends::default(),
            chunks: ChunkCache::new(),
        }
    }
}

/// One `tools/call` in flight.
pub struct Call {
    pub tool: String,
    progress: Option<Arc<Progress>>,
    aborted: AtomicBool,
    interrupted: AtomicBool,
    /// The agy queue place reserved when the call arrived (model tools only).
    ticket: Mutex<Option<Ticket>>,
}

/// A tool's view of the world: the services and its own call.
pub struct Ctx<'a> {
    pub services: &'a Services,
    pub call: &'a Arc<Call>,
}

impl Call {
    pub fn new(tool: &str, progress: Option<Arc<Progress>>, ticket: Option<Ticket>) -> Call {
        Call {
            tool: tool.to_string(),
            progress,
            aborted: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            ticket: Mutex::new(ticket),
        }
    }

    /// Takes the call's reserved agy queue place, if it still has one.
    pub fn take_ticket(&self) -> Option<Ticket> {
        self.ticket.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Reports text produced by the call (tool messages, child stdout) for the keepalive preview.
    pub fn report(&self, text: &str) {
        if let Some(progress) = &self.progress {
            progress.record(text);
        }
    }

    pub fn progress(&self) -> Option<&Arc<Progress>> {
        self.progress.as_ref()
    }

    /// The client cancelled the request or the server is shutting down: stop its child, leave the
    /// agy queue, send nothing more for it.
    pub fn abort(&self, queue: &AgyQueue) {
        if let Some(progress) = &self.progress {
            progress.silence();
        }
        self.stop(queue);
    }

    /// Shutdown: stop the call's child and queue wait; a call that finishes anyway is still
    /// answered (with its final progress notification).
    pub fn stop(&self, queue: &AgyQueue) {
        self.aborted.store(true, Ordering::SeqCst);
        queue.wake();
    }

    pub fn aborted_flag(&self) -> &AtomicBool {
        &self.aborted
    }

    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }

    /// Records that the abort actually stopped work (a child was killed, a queue slot given up).
    pub fn mark_interrupted(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }

    pub fn was_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// A stdout callback feeding the preview, or `None` when nobody watches progress.
    pub fn stdout_sink(&self) -> Option<OnStdout> {
        let progress = self.progress.clone()?;
        Some(Arc::new(move |chunk: &[u8]| progress.record(&String::from_utf8_lossy(chunk))))
    }
}

impl Ctx<'_> {
    /// A CLI run on behalf of this call, with the server's deadline and output cap, registered for
    /// `gemini-cancel` and logged.
    pub fn cli<'a>(
        &self,
        name: &'a str,
        program: &'a OsStr,
        args: &'a [String],
        stdin: Option<Arc<String>>,
    ) -> exec::Spec<'a> {
        let config = &self.services.config;
        exec::Spec {
            name,
            program,
            args,
            stdin,
            timeout: config.timeout,
            max_output: config.max_output_bytes,
            cancellable: true,
            logged: true,
        }
    }

    /// Runs a child through the common executor on behalf of this call.
    pub fn execute(&self, spec: exec::Spec<'_>) -> Result<String, exec::Failure> {
        let result = exec::execute(
            spec,
            &self.services.runs,
            self.call.aborted_flag(),
            self.call.stdout_sink(),
        );
        if let Err(exec::Failure::Aborted(_)) = &result {
            self.call.mark_interrupted();
        }
        result
    }
}
