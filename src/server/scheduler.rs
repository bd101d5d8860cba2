//! The agy scheduler: the relay's agy model calls wait here until their run may start, and each
//! holds its permit (`slots`) for its whole tool run: its quota fallback run, its transcript
//! recovery and its image search included. Up to `GEMINI_MCP_AGY_PARALLEL` runs go at once
//! across the user's relays, one turn per conversation, and a run that may edit files has the
//! project to itself (read-only runs share it).
//!
//! Waiting calls hold no worker thread: the scheduler keeps them as work and hands each to the
//! worker pool once its claim is granted. Each look at the waiting calls goes through them in
//! arrival order and starts every one that can start now, so a call blocked by its conversation
//! or by an editor never holds back a later call; a read-only call does not overtake an editor of
//! its project that waits before it (so an editor cannot be starved by a stream of readers). A
//! look happens when a call arrives or leaves, when a run of this relay ends (at once), and every
//! `slots::POLL` while a call waits for something held outside this relay.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

use serde_json::{Map, Value};

use crate::call::progress::Progress;
use crate::server::pool::{Pool, Work};
use crate::server::slots::{self, Blocked, Claim, Look, Permit, Slots};

pub struct Scheduler {
    pool: Arc<Pool>,
    slots: Slots,
    /// The relay's canonical working directory: the project its runs lock.
    project: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    waiting: VecDeque<Waiting>,
    /// The claims this relay's runs hold, by key.
    running: Vec<(u64, Claim)>,
    /// Shutdown: nothing more starts.
    closed: bool,
    /// A look is under way; whoever asks for another meanwhile leaves it to that one.
    looking: bool,
    /// Another look was asked for while one went on.
    again: bool,
    /// A waiting call waits for something held outside this relay: the poller looks again.
    external: bool,
    /// The poller thread is alive.
    polling: bool,
}

/// A call waiting for its claim.
struct Waiting {
    key: u64,
    claim: Claim,
    progress: Option<Arc<Progress>>,
    work: Box<dyn Work>,
}

/// A granted call on its way to a worker. When its work returns (or panics, or is rejected), its
/// permit is released and the scheduler looks again.
struct Head {
    scheduler: Arc<Scheduler>,
    key: u64,
    permit: Permit,
    progress: Option<Arc<Progress>>,
    work: Box<dyn Work>,
}

/// Releases a run's permit and starts what can start then, when dropped (so a panicking run
/// releases too).
struct Release<'a> {
    scheduler: &'a Arc<Scheduler>,
    key: u64,
    permit: Option<Permit>,
}

impl Scheduler {
    pub fn new(pool: Arc<Pool>, slots: Slots, project: PathBuf) -> Arc<Scheduler> {
        Arc::new(Scheduler { pool, slots, project, state: Mutex::new(State::default()) })
    }

    /// What an agy call of `tool` with these (validated) arguments must hold in this relay's
    /// project (`claim_for`).
    pub fn claim(&self, tool: &str, args: &Map<String, Value>) -> Claim {
        claim_for(tool, args, self.project.clone())
    }

    /// Adds a call under `key`; it starts at once when its claim can be granted, else its
    /// progress, if any, says why it waits until it starts.
    pub fn push(
        self: &Arc<Self>,
        key: u64,
        claim: Claim,
        progress: Option<Arc<Progress>>,
        work: Box<dyn Work>,
    ) {
        {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            state.waiting.push_back(Waiting { key, claim, progress, work });
        }
        self.look();
    }

    /// Takes a waiting call out (it was cancelled), so it never runs; false when it is not
    /// waiting (already started, finished, or never pushed).
    pub fn remove(self: &Arc<Self>, key: u64) -> bool {
        let removed = {
            let mut state = self.lock();
            let Some(at) = state.waiting.iter().position(|waiting| waiting.key == key) else {
                return false;
            };
            state.waiting.remove(at)
        };
        drop(removed);
        // The calls behind it move up, and a reader it held back may start.
        self.look();
        true
    }

    /// Shutdown: waiting calls are dropped and nothing more starts.
    pub fn close(&self) {
        let waiting = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.waiting)
        };
        drop(waiting);
    }

    /// How many calls wait.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Looks at the waiting calls until nothing more changes, starting those whose claims are
    /// granted. Never recursive: a look asked for meanwhile (a call rejected at once because no
    /// worker could be started) is done by the loop here.
    fn look(self: &Arc<Self>) {
        let mut state = self.lock();
        if state.looking {
            state.again = true;
            return;
        }
        state.looking = true;
        loop {
            state.again = false;
            let granted = self.grant(&mut state);
            let start_poller = state.external && !state.polling;
            if start_poller {
                state.polling = true;
            }
            drop(state);
            for (waiting, permit) in granted {
                let Waiting { key, progress, work, .. } = waiting;
                let head = Head { scheduler: self.clone(), key, permit, progress, work };
                self.pool.submit(Box::new(head));
            }
            if start_poller {
                self.start_poller();
            }
            state = self.lock();
            if !state.again || state.closed {
                break;
            }
        }
        state.looking = false;
    }

    /// One look: takes out every waiting call whose claim is granted now, in arrival order, and
    /// tells each of the others why it waits.
    fn grant(&self, state: &mut State) -> Vec<(Waiting, Permit)> {
        let mut granted = Vec::new();
        let mut look = Look::default();
        // Projects with an editor waiting for its readers to finish: later readers wait too.
        let mut editors_waiting: HashSet<PathBuf> = HashSet::new();
        let mut ahead = 0;
        state.external = false;
        if state.closed {
            return granted;
        }
        let mut at = 0;
        while at < state.waiting.len() {
            let claim = &state.waiting[at].claim;
            let outcome = if !claim.edits && editors_waiting.contains(&claim.project) {
                Err((Blocked::Editor, false))
            } else {
                self.slots.try_acquire_in(claim, &mut look).map_err(|blocked| {
                    let outside = self.slots.shared() && !in_sight(blocked, claim, state);
                    (blocked, outside)
                })
            };
            match outcome {
                Ok(permit) => {
                    let waiting = state.waiting.remove(at).expect("a waiting call is there");
                    state.running.push((waiting.key, waiting.claim.clone()));
                    granted.push((waiting, permit));
                }
                Err((blocked, outside)) => {
                    let waiting = &state.waiting[at];
                    if waiting.claim.edits && blocked == Blocked::Editor {
                        editors_waiting.insert(waiting.claim.project.clone());
                    }
                    if let Some(progress) = &waiting.progress {
                        progress.waiting(Some(waiting_text(blocked, ahead)));
                    }
                    if let Blocked::Slots { .. } = blocked {
                        ahead += 1;
                    }
                    state.external |= outside;
                    at += 1;
                }
            }
        }
        state.external &= !state.waiting.is_empty();
        granted
    }

    /// Looks again every `POLL` while some call waits for a holder outside this relay, which
    /// cannot tell when it is done.
    fn start_poller(self: &Arc<Self>) {
        let scheduler = self.clone();
        let spawned = thread::Builder::new().name("agy-poller".into()).spawn(move || {
            loop {
                thread::sleep(slots::POLL);
                {
                    let mut state = scheduler.lock();
                    if state.closed || !state.external {
                        state.polling = false;
                        return;
                    }
                }
                scheduler.look();
            }
        });
        if let Err(err) = spawned {
            // Waiting calls still start when this relay's own runs end.
            log::error!("could not start the agy poller thread: {err}");
            self.lock().polling = false;
        }
    }

    /// A run of this relay ended: its claim is no longer held.
    fn finished(self: &Arc<Self>, key: u64) {
        {
            let mut state = self.lock();
            if let Some(at) = state.running.iter().position(|(running, _)| *running == key) {
                state.running.swap_remove(at);
            }
        }
        self.look();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What an agy call of `tool` with these (validated) arguments must hold in `project`: its
/// conversation when it continues one, and the project, alone when it may edit files
/// (`mode: "accept-edits"` or `skipPermissions`; `gemini-image` never does: the relay writes its
/// `outputPath` itself).
pub fn claim_for(tool: &str, args: &Map<String, Value>, project: PathBuf) -> Claim {
    let conversation = args
        .get("conversationId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_string);
    let accept_edits = args.get("mode").and_then(Value::as_str) == Some("accept-edits");
    let skip_permissions = args.get("skipPermissions").and_then(Value::as_bool) == Some(true);
    let edits = tool != "gemini-image" && (accept_edits || skip_permissions);
    Claim { conversation, project, edits }
}

/// What a waiting call shows: why it waits, with true numbers (`ahead`: this relay's earlier
/// calls that still wait for a slot).
pub fn waiting_text(blocked: Blocked, ahead: usize) -> String {
    match blocked {
        Blocked::Slots { busy, cap } => {
            format!(
                "⏳ Waiting for agy: {busy} of {cap} runs busy, {ahead} call(s) of this relay ahead"
            )
        }
        Blocked::Conversation => {
            "⏳ Waiting for the previous turn of this conversation to finish".to_string()
        }
        Blocked::Editor => "⏳ Waiting for a run that may edit this project to finish".to_string(),
    }
}

/// The relay's canonical working directory (its working directory as it is when that cannot be
/// resolved).
pub fn canonical_project() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    std::fs::canonicalize(&cwd).unwrap_or(cwd)
}

/// Whether what blocks `claim` is held by this relay's own runs (whose end wakes the scheduler at
/// once), not by another process.
fn in_sight(blocked: Blocked, claim: &Claim, state: &State) -> bool {
    let mut running = state.running.iter().map(|(_, claim)| claim);
    match blocked {
        Blocked::Slots { cap, .. } => state.running.len() >= cap,
        Blocked::Conversation => running.any(|other| other.conversation == claim.conversation),
        Blocked::Editor => running
            .filter(|other| other.project == claim.project)
            .any(|other| claim.edits || other.edits),
    }
}

impl Work for Head {
    fn run(self: Box<Self>) {
        let Head { scheduler, key, permit, progress, work } = *self;
        let _release = Release { scheduler: &scheduler, key, permit: Some(permit) };
        if let Some(progress) = progress {
            progress.waiting(None);
        }
        work.run();
    }

    fn reject(self: Box<Self>, reason: io::Error) {
        let Head { scheduler, key, permit, work, .. } = *self;
        // The call is answered before its claim is released.
        let _release = Release { scheduler: &scheduler, key, permit: Some(permit) };
        work.reject(reason);
    }
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        drop(self.permit.take());
        self.scheduler.finished(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::{Duration, Instant};

    use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
    use serde_json::json;

    use crate::state::StateDir;
    use crate::testutil::TempDir;

    /// A call that reports when it starts, then runs until its gate opens. It reports `dropped`
    /// when its work is gone (after its run returned, or when it was removed).
    struct Call {
        n: usize,
        gate: Receiver<()>,
        events: Sender<String>,
    }

    impl Work for Call {
        fn run(self: Box<Self>) {
            let _ = self.events.send(format!("start {}", self.n));
            let _ = self.gate.recv_timeout(Duration::from_secs(10));
            let _ = self.events.send(format!("end {}", self.n));
        }

        fn reject(self: Box<Self>, _reason: io::Error) {
            let _ = self.events.send(format!("rejected {}", self.n));
        }
    }

    impl Drop for Call {
        fn drop(&mut self) {
            let _ = self.events.send(format!("dropped {}", self.n));
        }
    }

    fn call(n: usize, events: &Sender<String>) -> (Sender<()>, Box<dyn Work>) {
        let (open, gate) = bounded(0);
        (open, Box::new(Call { n, gate, events: events.clone() }))
    }

    fn next(events: &Receiver<String>) -> String {
        events.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    fn quiet(events: &Receiver<String>) {
        assert_eq!(events.recv_timeout(Duration::from_millis(100)).ok(), None);
    }

    fn scheduler(cap: usize) -> (Arc<Pool>, Arc<Scheduler>) {
        let pool = Arc::new(Pool::new(16));
        (pool.clone(), Scheduler::new(pool, Slots::in_memory(cap), PathBuf::from("/p")))
    }

    fn fresh(scheduler: &Scheduler) -> Claim {
        scheduler.claim("gemini-ask", &Map::new())
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn claims_follow_the_arguments() {
        let (_, scheduler) = scheduler(2);
        let claim = |tool, value| scheduler.claim(tool, &args(value));
        let plain = claim("gemini-ask", json!({}));
        assert_eq!(plain, Claim { conversation: None, project: "/p".into(), edits: false });
        assert_eq!(claim("gemini-ask", json!({"conversationId": ""})).conversation, None);
        let turn = claim("gemini-ask", json!({"conversationId": "c-1"}));
        assert_eq!(turn.conversation.as_deref(), Some("c-1"));
        assert!(claim("gemini-ask", json!({"mode": "accept-edits"})).edits);
        assert!(!claim("gemini-ask", json!({"mode": "plan"})).edits);
        assert!(claim("gemini-brainstorm", json!({"skipPermissions": true})).edits);
        assert!(!claim("gemini-ask", json!({"skipPermissions": false})).edits);
        let image = json!({"outputPath": "a.png", "skipPermissions": true});
        assert!(!claim("gemini-image", image).edits, "the relay writes an image itself");
    }

    #[test]
    fn up_to_cap_runs_at_once_in_arrival_order_and_waiting_calls_hold_no_worker() {
        let (pool, scheduler) = scheduler(2);
        let (events_tx, events) = unbounded();
        let gates: Vec<Sender<()>> = (0..4)
            .map(|n| {
                let (open, work) = call(n, &events_tx);
                scheduler.push(n as u64, fresh(&scheduler), None, work);
                open
            })
            .collect();
        let mut started = [next(&events), next(&events)];
        started.sort();
        assert_eq!(started, ["start 0", "start 1"]);
        quiet(&events);
        assert_eq!(scheduler.waiting(), 2);
        assert_eq!(pool.workers(), 2, "waiting calls hold no worker");
        gates[1].send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 1");
        assert_eq!(next(&events), "dropped 1");
        assert_eq!(next(&events), "start 2");
        gates[0].send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        assert_eq!(next(&events), "start 3");
        for (n, gate) in gates.iter().enumerate().skip(2) {
            gate.send_timeout((), Duration::from_secs(5)).unwrap();
            assert_eq!(next(&events), format!("end {n}"));
            assert_eq!(next(&events), format!("dropped {n}"));
        }
        assert_eq!(scheduler.waiting(), 0);
    }

    #[test]
    fn a_call_blocked_by_its_conversation_does_not_hold_back_later_calls() {
        let (_, scheduler) = scheduler(4);
        let (events_tx, events) = unbounded();
        let turn = scheduler.claim("gemini-ask", &args(json!({"conversationId": "c"})));
        let (open0, first) = call(0, &events_tx);
        let (open1, second) = call(1, &events_tx);
        let (open2, third) = call(2, &events_tx);
        let status = Progress::status("gemini-ask");
        scheduler.push(0, turn.clone(), None, first);
        assert_eq!(next(&events), "start 0");
        scheduler.push(1, turn, Some(status.clone()), second);
        scheduler.push(2, fresh(&scheduler), None, third);
        assert_eq!(next(&events), "start 2");
        quiet(&events);
        assert_eq!(
            status.waiting_text().as_deref(),
            Some("⏳ Waiting for the previous turn of this conversation to finish")
        );
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        assert_eq!(next(&events), "start 1");
        assert_eq!(status.waiting_text(), None);
        for open in [open1, open2] {
            open.send_timeout((), Duration::from_secs(5)).unwrap();
        }
    }

    #[test]
    fn an_editor_waits_for_the_readers_and_later_readers_wait_for_it() {
        let (_, scheduler) = scheduler(4);
        let (events_tx, events) = unbounded();
        let editor = scheduler.claim("gemini-ask", &args(json!({"mode": "accept-edits"})));
        let (open0, reader) = call(0, &events_tx);
        let (open1, editing) = call(1, &events_tx);
        let (open2, late_reader) = call(2, &events_tx);
        let editor_status = Progress::status("gemini-ask");
        let reader_status = Progress::status("gemini-ask");
        scheduler.push(0, fresh(&scheduler), None, reader);
        assert_eq!(next(&events), "start 0");
        scheduler.push(1, editor, Some(editor_status.clone()), editing);
        scheduler.push(2, fresh(&scheduler), Some(reader_status.clone()), late_reader);
        quiet(&events);
        let text = "⏳ Waiting for a run that may edit this project to finish";
        assert_eq!(editor_status.waiting_text().as_deref(), Some(text));
        assert_eq!(reader_status.waiting_text().as_deref(), Some(text));
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        assert_eq!(next(&events), "start 1");
        quiet(&events);
        open1.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 1");
        assert_eq!(next(&events), "dropped 1");
        assert_eq!(next(&events), "start 2");
        open2.send_timeout((), Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn waiting_calls_say_how_many_of_this_relay_wait_for_a_slot_ahead_of_them() {
        let (_, scheduler) = scheduler(2);
        let (events_tx, events) = unbounded();
        let mut gates = Vec::new();
        let mut progress = Vec::new();
        for n in 0..5 {
            let (open, work) = call(n, &events_tx);
            let status = Progress::status("gemini-ask");
            scheduler.push(n as u64, fresh(&scheduler), Some(status.clone()), work);
            gates.push(open);
            progress.push(status);
        }
        next(&events);
        next(&events);
        let texts = || progress.iter().map(|p| p.waiting_text()).collect::<Vec<_>>();
        let busy = |ahead| {
            Some(format!(
                "⏳ Waiting for agy: 2 of 2 runs busy, {ahead} call(s) of this relay ahead"
            ))
        };
        assert_eq!(texts(), [None, None, busy(0), busy(1), busy(2)]);
        // A call leaving from the middle moves those behind it up.
        assert!(scheduler.remove(3));
        assert_eq!(next(&events), "dropped 3");
        assert_eq!(progress[4].waiting_text(), busy(1));
        assert!(!scheduler.remove(3));
        assert!(!scheduler.remove(0), "a running call is not waiting");
        gates[0].send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        assert_eq!(next(&events), "start 2");
        assert_eq!(progress[4].waiting_text(), busy(0));
        scheduler.close();
        assert_eq!(next(&events), "dropped 4");
        for gate in &gates[1..3] {
            gate.send_timeout((), Duration::from_secs(5)).unwrap();
        }
    }

    #[test]
    fn the_next_call_starts_only_after_the_whole_previous_work_returned() {
        /// A call whose run does its main part, then more work (as gemini-image looks for its
        /// file after the CLI returned) until its second gate opens.
        struct TwoPart {
            main: Receiver<()>,
            after: Receiver<()>,
            events: Sender<&'static str>,
        }
        impl Work for TwoPart {
            fn run(self: Box<Self>) {
                let _ = self.main.recv_timeout(Duration::from_secs(10));
                let _ = self.events.send("main part done");
                let _ = self.after.recv_timeout(Duration::from_secs(10));
                let _ = self.events.send("returning");
            }
            fn reject(self: Box<Self>, _reason: io::Error) {}
        }
        struct Second(Sender<&'static str>);
        impl Work for Second {
            fn run(self: Box<Self>) {
                let _ = self.0.send("second started");
            }
            fn reject(self: Box<Self>, _reason: io::Error) {}
        }

        let (_, scheduler) = scheduler(1);
        let (events_tx, events) = unbounded();
        let (main_open, main) = bounded(0);
        let (after_open, after) = bounded(0);
        let first = TwoPart { main, after, events: events_tx.clone() };
        scheduler.push(0, fresh(&scheduler), None, Box::new(first));
        scheduler.push(1, fresh(&scheduler), None, Box::new(Second(events_tx)));
        main_open.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(events.recv_timeout(Duration::from_secs(5)), Ok("main part done"));
        // The first call's run has not returned: the second waits however long that takes.
        assert!(events.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(scheduler.waiting(), 1);
        after_open.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(events.recv_timeout(Duration::from_secs(5)), Ok("returning"));
        assert_eq!(events.recv_timeout(Duration::from_secs(5)), Ok("second started"));
    }

    #[test]
    fn a_closed_scheduler_starts_nothing_more() {
        let (_, scheduler) = scheduler(1);
        let (events_tx, events) = unbounded();
        let (open0, first) = call(0, &events_tx);
        let (_open1, second) = call(1, &events_tx);
        scheduler.push(0, fresh(&scheduler), None, first);
        scheduler.push(1, fresh(&scheduler), None, second);
        assert_eq!(next(&events), "start 0");
        scheduler.close();
        assert_eq!(next(&events), "dropped 1");
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        let (_open2, third) = call(2, &events_tx);
        scheduler.push(2, fresh(&scheduler), None, third);
        assert_eq!(next(&events), "dropped 2");
        quiet(&events);
    }

    #[test]
    fn a_slot_held_by_another_process_is_noticed_by_polling() {
        let temp = TempDir::new();
        let state = StateDir::open(&temp.path().join("state")).unwrap();
        let outside = Slots::in_dir(&state, 1).unwrap();
        let slots = Slots::in_dir(&state, 1).unwrap();
        let scheduler = Scheduler::new(Arc::new(Pool::new(4)), slots, PathBuf::from("/p"));
        let held = outside.try_acquire(&fresh(&scheduler)).unwrap();
        let (events_tx, events) = unbounded();
        let (open, work) = call(0, &events_tx);
        let status = Progress::status("gemini-ask");
        scheduler.push(0, fresh(&scheduler), Some(status.clone()), work);
        quiet(&events);
        let text = "⏳ Waiting for agy: 1 of 1 runs busy, 0 call(s) of this relay ahead";
        assert_eq!(status.waiting_text().as_deref(), Some(text));
        let released = Instant::now();
        drop(held);
        assert_eq!(next(&events), "start 0");
        assert!(released.elapsed() < slots::POLL * 3, "{:?}", released.elapsed());
        open.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        // Nothing waits any more: the poller has stopped.
        let deadline = Instant::now() + Duration::from_secs(5);
        while scheduler.lock().polling {
            assert!(Instant::now() < deadline, "the poller goes on");
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_rejected_call_releases_its_claim() {
        struct Rejected(Sender<String>);
        impl Work for Rejected {
            fn run(self: Box<Self>) {}
            fn reject(self: Box<Self>, _reason: io::Error) {
                let _ = self.0.send("rejected".into());
            }
        }
        let (_, scheduler) = scheduler(1);
        let (events_tx, events) = unbounded();
        let head = Head {
            scheduler: scheduler.clone(),
            key: 7,
            permit: Slots::in_memory(1).try_acquire(&fresh(&scheduler)).unwrap(),
            progress: None,
            work: Box::new(Rejected(events_tx.clone())),
        };
        scheduler.lock().running.push((7, fresh(&scheduler)));
        Box::new(head).reject(io::Error::other("no thread"));
        assert_eq!(next(&events), "rejected");
        assert!(scheduler.lock().running.is_empty());
        let (open, work) = call(1, &events_tx);
        scheduler.push(1, fresh(&scheduler), None, work);
        assert_eq!(next(&events), "start 1");
        open.send_timeout((), Duration::from_secs(5)).unwrap();
    }
}
