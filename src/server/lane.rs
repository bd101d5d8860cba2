//! The agy lane: one process-wide line of agy model calls that runs the whole tool run of each, one
//! at a time, in arrival order. agy keeps one conversation store and one image directory per user
//! (each run rewrites its `last_conversations.json`), so a call's run, its transcript recovery and
//! its image scan all happen before the next call starts. Waiting calls hold no worker thread: the
//! lane keeps them as work and hands the head call to the worker pool when its turn comes, and
//! starts the next one when that work has returned (or was rejected because no worker could be
//! started). Each waiting call's progress shows how many calls wait ahead of it.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::call::progress::Progress;
use crate::server::pool::{Pool, Work};

/// The lane itself.
pub struct AgyLane {
    pool: Arc<Pool>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// A call is out: handed to the pool, running, or being rejected.
    running: bool,
    /// Some thread is starting the next calls; a call that ends meanwhile leaves that to it.
    advancing: bool,
    /// Shutdown: nothing more starts.
    closed: bool,
    waiting: VecDeque<Waiting>,
}

/// A call in the line.
struct Waiting {
    key: u64,
    progress: Option<Arc<Progress>>,
    work: Box<dyn Work>,
}

/// The head call on its way to a worker. When its work returns (or panics, or is rejected), the
/// lane starts the next call.
struct Head {
    lane: Arc<AgyLane>,
    progress: Option<Arc<Progress>>,
    work: Box<dyn Work>,
}

/// Starts the lane's next call when dropped, so that a panicking run moves the lane on too.
struct Next<'a>(&'a Arc<AgyLane>);

impl AgyLane {
    pub fn new(pool: Arc<Pool>) -> Arc<AgyLane> {
        Arc::new(AgyLane { pool, state: Mutex::new(State::default()) })
    }

    /// Puts a call at the back of the line under `key`; it starts at once when the line is empty.
    /// Its progress, if any, shows its place until it starts.
    pub fn push(self: &Arc<Self>, key: u64, progress: Option<Arc<Progress>>, work: Box<dyn Work>) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        if state.running || !state.waiting.is_empty() {
            if let Some(progress) = &progress {
                progress.queued(Some(state.waiting.len()));
            }
            state.waiting.push_back(Waiting { key, progress, work });
            return;
        }
        state.running = true;
        drop(state);
        self.pool.submit(Box::new(Head { lane: self.clone(), progress, work }));
    }

    /// Takes a waiting call out of the line (it was cancelled), so it never runs; false when it is
    /// not waiting (already started, finished, or never queued).
    pub fn remove(&self, key: u64) -> bool {
        let mut state = self.lock();
        let Some(at) = state.waiting.iter().position(|waiting| waiting.key == key) else {
            return false;
        };
        let removed = state.waiting.remove(at);
        renumber(&state.waiting);
        drop(state);
        drop(removed);
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

    /// How many calls wait (not counting the one running).
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// The call that was out has ended: start the next waiting one. A call that ends while this
    /// runs (one rejected at once because no worker could be started, or a quick run) only clears
    /// `running`; the loop here goes on, so rejections never recurse.
    fn advance(self: &Arc<Self>) {
        let mut state = self.lock();
        state.running = false;
        if state.advancing {
            return;
        }
        state.advancing = true;
        while !state.running && !state.closed {
            let Some(Waiting { progress, work, .. }) = state.waiting.pop_front() else { break };
            renumber(&state.waiting);
            state.running = true;
            drop(state);
            self.pool.submit(Box::new(Head { lane: self.clone(), progress, work }));
            state = self.lock();
        }
        state.advancing = false;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Tells every waiting call how many wait ahead of it. Linear in the line's length, once per
/// call that leaves the line.
fn renumber(waiting: &VecDeque<Waiting>) {
    for (ahead, waiting) in waiting.iter().enumerate() {
        if let Some(progress) = &waiting.progress {
            progress.queued(Some(ahead));
        }
    }
}

impl Work for Head {
    fn run(self: Box<Self>) {
        let Head { lane, progress, work } = *self;
        let _next = Next(&lane);
        if let Some(progress) = progress {
            progress.queued(None);
        }
        work.run();
    }

    fn reject(self: Box<Self>, reason: io::Error) {
        let Head { lane, work, .. } = *self;
        // The call is answered before the next one starts.
        let _next = Next(&lane);
        work.reject(reason);
    }
}

impl Drop for Next<'_> {
    fn drop(&mut self) {
        self.0.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

    /// A queued call that reports when it starts, then runs until its gate opens. It reports
    /// `dropped` when its work is gone (after its run returned).
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

    #[test]
    fn one_run_at_a_time_in_arrival_order_and_waiting_calls_hold_no_worker() {
        let pool = Arc::new(Pool::new(8));
        let lane = AgyLane::new(pool.clone());
        let (events_tx, events) = unbounded();
        let gates: Vec<Sender<()>> = (0..3)
            .map(|n| {
                let (open, work) = call(n, &events_tx);
                lane.push(n as u64, None, work);
                open
            })
            .collect();
        assert_eq!(next(&events), "start 0");
        assert_eq!(lane.waiting(), 2);
        assert_eq!(pool.workers(), 1, "waiting calls hold no worker");
        for (n, gate) in gates.iter().enumerate() {
            gate.send_timeout((), Duration::from_secs(5)).unwrap();
            assert_eq!(next(&events), format!("end {n}"));
            assert_eq!(next(&events), format!("dropped {n}"));
            if n < 2 {
                assert_eq!(next(&events), format!("start {}", n + 1));
            }
        }
        assert_eq!(lane.waiting(), 0);
    }

    #[test]
    fn the_next_call_starts_only_after_the_whole_previous_work_returned() {
        /// A call whose run does its main part, then more work (as gemini-image scans for its
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

        let lane = AgyLane::new(Arc::new(Pool::new(8)));
        let (events_tx, events) = unbounded();
        let (main_open, main) = bounded(0);
        let (after_open, after) = bounded(0);
        lane.push(0, None, Box::new(TwoPart { main, after, events: events_tx.clone() }));
        lane.push(1, None, Box::new(Second(events_tx)));
        main_open.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(events.recv_timeout(Duration::from_secs(5)), Ok("main part done"));
        // The first call's run has not returned: the second waits however long that takes.
        assert!(events.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(lane.waiting(), 1);
        after_open.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(events.recv_timeout(Duration::from_secs(5)), Ok("returning"));
        assert_eq!(events.recv_timeout(Duration::from_secs(5)), Ok("second started"));
    }

    #[test]
    fn a_removed_call_never_runs() {
        let lane = AgyLane::new(Arc::new(Pool::new(8)));
        let (events_tx, events) = unbounded();
        let (open0, first) = call(0, &events_tx);
        let (_open1, second) = call(1, &events_tx);
        let (open2, third) = call(2, &events_tx);
        lane.push(0, None, first);
        lane.push(1, None, second);
        lane.push(2, None, third);
        assert_eq!(next(&events), "start 0");
        assert!(lane.remove(1));
        assert_eq!(next(&events), "dropped 1");
        assert!(!lane.remove(1));
        assert!(!lane.remove(0), "a running call is not waiting");
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        assert_eq!(next(&events), "start 2");
        open2.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 2");
    }

    #[test]
    fn a_closed_lane_starts_nothing_more() {
        let lane = AgyLane::new(Arc::new(Pool::new(8)));
        let (events_tx, events) = unbounded();
        let (open0, first) = call(0, &events_tx);
        let (_open1, second) = call(1, &events_tx);
        lane.push(0, None, first);
        lane.push(1, None, second);
        assert_eq!(next(&events), "start 0");
        lane.close();
        assert_eq!(next(&events), "dropped 1");
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "dropped 0");
        assert!(events.recv_timeout(Duration::from_millis(200)).is_err());
    }

    #[test]
    fn waiting_calls_count_the_calls_ahead_down_until_they_start() {
        let lane = AgyLane::new(Arc::new(Pool::new(8)));
        let (events_tx, events) = unbounded();
        let mut gates = Vec::new();
        let mut progress = Vec::new();
        for n in 0..4 {
            let (open, work) = call(n, &events_tx);
            let status = Progress::status("gemini-ask");
            lane.push(n as u64, Some(status.clone()), work);
            gates.push(open);
            progress.push(status);
        }
        let places = || progress.iter().map(|p| p.queue_position()).collect::<Vec<_>>();
        assert_eq!(next(&events), "start 0");
        assert_eq!(places(), [None, Some(0), Some(1), Some(2)]);
        for (n, expected) in [(0, [None, None, Some(0), Some(1)]), (1, [None, None, None, Some(0)])]
        {
            gates[n].send_timeout((), Duration::from_secs(5)).unwrap();
            assert_eq!(next(&events), format!("end {n}"));
            assert_eq!(next(&events), format!("dropped {n}"));
            assert_eq!(next(&events), format!("start {}", n + 1));
            assert_eq!(places(), expected);
        }
        // A call leaving the line from the middle moves those behind it up.
        let (_open, fifth) = call(4, &events_tx);
        let status = Progress::status("gemini-ask");
        lane.push(4, Some(status.clone()), fifth);
        assert_eq!(status.queue_position(), Some(1));
        assert!(lane.remove(3));
        assert_eq!(status.queue_position(), Some(0));
        lane.close();
    }
}
