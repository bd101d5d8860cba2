//! What a tool call can reach: the services shared by every call, and the call's own state (the
//! backend decided for it, its progress and its abort flag). Tools see this, never JSON-RPC ids.

pub mod progress;
pub mod sink;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{self, Backend, Backends, Reply, RunRequest};
use crate::changemode::cache::ChunkCache;
use crate::config::Config;
use crate::exec::{Limits, OnStdout, Runner, Runs};

use crate::call::progress::Progress;

/// Shared by every call for the life of the process.
pub struct Services {
    pub config: Config,
    pub runs: Runs,
    pub backends: Backends,
    pub chunks: ChunkCache,
}

/// One tool call in flight.
pub struct Call {
    pub tool: &'static str,
    /// The backend that answers this call, decided once when the call was accepted.
    pub backend: Backend,
    progress: Option<Arc<Progress>>,
    aborted: AtomicBool,
}

/// A tool's view of the world: the services and its own call.
pub struct Ctx<'a> {
    pub services: &'a Services,
    pub call: &'a Call,
}

impl Services {
    pub fn new(config: Config) -> Services {
        Services {
            backends: Backends::new(&config),
            config,
            runs: Runs::default(),
            chunks: ChunkCache::new(),
        }
    }
}

impl Call {
    pub fn new(tool: &'static str, backend: Backend, progress: Option<Arc<Progress>>) -> Call {
        Call { tool, backend, progress, aborted: AtomicBool::new(false) }
    }

    pub fn progress(&self) -> Option<&Arc<Progress>> {
        self.progress.as_ref()
    }

    /// The client cancelled the call or the server is shutting down: its child is killed within a
    /// poll slice and nothing more is reported for it.
    pub fn abort(&self) {
        if let Some(progress) = &self.progress {
            progress.silence();
        }
        self.aborted.store(true, Ordering::SeqCst);
    }

    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }
}

impl Ctx<'_> {
    /// What the call's backend runs children with: the registry, the abort flag, the preview sink
    /// and the configured limits.
    pub fn runner(&self) -> Runner<'_> {
        let config = &self.services.config;
        let limits = Limits { timeout: config.timeout, max_output: config.max_output_bytes };
        Runner::new(&self.services.runs, &self.call.aborted, self.stdout_sink(), limits)
    }

    /// Runs one prompt through the call's backend with the call's runner.
    pub fn run_model(&self, request: RunRequest) -> Result<Reply, String> {
        backend::run_with_backend(
            &self.services.backends,
            self.call.backend,
            self.call.tool,
            &self.runner(),
            request,
        )
    }

    /// Reports a message of the tool's own for the keepalive preview.
    pub fn report(&self, text: &str) {
        if let Some(progress) = &self.call.progress {
            progress.note(text);
        }
    }

    /// A stdout callback feeding the preview, or `None` when nobody watches progress.
    fn stdout_sink(&self) -> Option<OnStdout> {
        let progress = self.call.progress.clone()?;
        Some(sink::text_sink(move |text| progress.record(text)))
    }
}
