//! What a tool call can reach: the services shared by every call, and the call's own state (its
//! progress, its abort flag and its agy queue turn). Tools see this, never JSON-RPC ids.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::Backends;
use crate::changemode::cache::ChunkCache;
use crate::config::Config;
use crate::exec::{Limits, OnStdout, Runner, Runs};
use crate::progress::Progress;
use crate::queue::Turn;

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
    progress: Option<Arc<Progress>>,
    aborted: AtomicBool,
    /// The agy queue's turn, handed over when the call's turn came (model tools on agy only).
    turn: Mutex<Option<Turn>>,
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
    pub fn new(tool: &'static str, progress: Option<Arc<Progress>>) -> Call {
        Call { tool, progress, aborted: AtomicBool::new(false), turn: Mutex::new(None) }
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

    /// Hands the call its agy queue turn (before it runs).
    pub fn give_turn(&self, turn: Turn) {
        *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = Some(turn);
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

    /// Takes the call's agy queue turn for its model run.
    pub fn take_turn(&self) -> Option<Turn> {
        self.call.turn.lock().unwrap_or_else(|e| e.into_inner()).take()
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
        Some(Arc::new(move |chunk: &[u8]| progress.record(&String::from_utf8_lossy(chunk))))
    }
}
