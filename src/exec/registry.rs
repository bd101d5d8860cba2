//! Every running child, for `gemini-cancel` and for shutdown: the registry (`Runs`), the spawn
//! gate that lets shutdown kill the last child spawned, and the guard that deregisters a run and
//! kills its tree on every way out, unless the child was already reaped.

use std::collections::HashMap;
use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::sys;

/// How long shutdown waits for children being spawned, so it can kill them too.
const SPAWN_WAIT: Duration = Duration::from_millis(500);

/// Every child that is running, for `gemini-cancel` and for shutdown.
#[derive(Default)]
pub struct Runs {
    next: AtomicU64,
    gate: Gate,
    map: Mutex<HashMap<u64, RunEntry>>,
}

/// The spawn gate. A run holds a pass from before its spawn until its child is registered;
/// shutdown closes the gate and waits for the passes out, so no child can be spawned after the
/// last kill. The wait is bounded, so a spawn that never returns cannot hold shutdown up.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    settled: Condvar,
}

#[derive(Default)]
struct GateState {
    closed: bool,
    passes: usize,
}

/// Permission to spawn one child; returned when dropped.
pub(super) struct Pass<'a> {
    gate: &'a Gate,
}

struct RunEntry {
    tree: Arc<sys::Tree>,
    cancellable: bool,
    cancelled: Arc<AtomicBool>,
}

/// A registered child: deregisters it and kills its tree on every way out (an early return, a
/// panic) until `finish` reaps it. After the reap nothing is signalled: the child's id, and on
/// POSIX its process group's, may already belong to another process.
pub(super) struct Guard<'a> {
    runs: &'a Runs,
    key: u64,
    tree: Arc<sys::Tree>,
    armed: bool,
    /// Raised by `gemini-cancel` (for a cancellable run) and by shutdown.
    pub(super) cancelled: Arc<AtomicBool>,
}

/// Why a spawn did not give a registered child.
pub(super) enum SpawnError {
    /// The OS refused the spawn.
    Os(io::Error),
    /// The child started, but its tree could not be made; it was killed and reaped.
    Tree(io::Error),
}

impl Runs {
    /// Marks every cancellable running child as cancelled; their runs kill their trees within a
    /// poll slice. Returns how many were signalled.
    pub fn cancel_all(&self) -> usize {
        let map = self.lock();
        let mut count = 0;
        for entry in map.values().filter(|entry| entry.cancellable) {
            if !entry.cancelled.swap(true, Ordering::SeqCst) {
                count += 1;
            }
        }
        count
    }

    /// Shutdown: closes the registry (a run about to spawn gives up; one spawning now is waited
    /// for, at most `SPAWN_WAIT`) and kills the tree of every child, cancellable or not.
    pub fn kill_all(&self) {
        self.gate.close(SPAWN_WAIT);
        for entry in self.lock().values() {
            entry.cancelled.store(true, Ordering::SeqCst);
            entry.tree.kill();
        }
    }

    /// A pass to spawn, or `None` once shutdown has closed the gate.
    pub(super) fn enter(&self) -> Option<Pass<'_>> {
        self.gate.enter()
    }

    /// Spawns `cmd` (prepared by `sys::own_tree`) in a tree of its own and registers it. The
    /// caller holds a pass for the whole call.
    pub(super) fn spawn(
        &self,
        _pass: &Pass<'_>,
        cmd: &mut Command,
        cancellable: bool,
    ) -> Result<(Child, Guard<'_>), SpawnError> {
        let mut child = cmd.spawn().map_err(SpawnError::Os)?;
        let tree = match sys::Tree::of(&child) {
            Ok(tree) => Arc::new(tree),
            Err(err) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SpawnError::Tree(err));
            }
        };
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let cancelled = Arc::new(AtomicBool::new(false));
        let entry = RunEntry { tree: tree.clone(), cancellable, cancelled: cancelled.clone() };
        self.lock().insert(key, entry);
        Ok((child, Guard { runs: self, key, tree, armed: true, cancelled }))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, RunEntry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Guard<'_> {
    /// Kills the child's tree: the child and everything it spawned.
    pub(super) fn kill(&self) {
        if self.armed {
            self.tree.kill();
        }
    }

    /// Ends the run of a child that exited or must stop: kills its tree (also what the child
    /// left behind: while it is not reaped, its ids stay its own), deregisters it, then reaps it.
    /// From then on its tree is never signalled again.
    pub(super) fn finish(mut self, child: &mut Child) -> ExitStatus {
        self.kill();
        self.runs.lock().remove(&self.key);
        let status = child.wait().unwrap_or_else(|err| {
            log::error!("Process error: {err}");
            sys::killed_status()
        });
        self.armed = false;
        status
    }
}

impl Gate {
    fn enter(&self) -> Option<Pass<'_>> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        state.passes += 1;
        Some(Pass { gate: self })
    }

    /// Closes the gate and waits, at most `within`, until every pass is returned.
    fn close(&self, within: Duration) {
        let mut state = self.lock();
        state.closed = true;
        let (state, _) = self
            .settled
            .wait_timeout_while(state, within, |state| state.passes > 0)
            .unwrap_or_else(|e| e.into_inner());
        if state.passes > 0 {
            log::warn!("shutdown: {} child process(es) still being spawned", state.passes);
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.gate.lock().passes -= 1;
        self.gate.settled.notify_all();
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // Nothing outlives its run: whatever is left in an unreaped child's tree dies with it.
        self.kill();
        self.runs.lock().remove(&self.key);
    }
}
