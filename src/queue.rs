//! The agy queue: one process-wide FIFO that serializes agy runs in arrival order (each run
//! rewrites agy's `last_conversations.json`, so concurrent runs would read each other's ids).
//! Waiting calls hold no worker thread: the queue keeps them as work and hands the head to the
//! worker pool when its turn comes, with a `Turn` that passes the turn on when it is dropped (the run
//! finished, failed, panicked, or its worker could not be started).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::pool::{Pool, Work};

/// A call waiting for agy: it runs with the turn, or is rejected when no worker can run it.
pub trait TurnWork: Send {
    fn run(self: Box<Self>, turn: Turn);
    fn reject(self: Box<Self>, reason: io::Error);
}

/// The queue itself.
pub struct AgyQueue {
    pool: Arc<Pool>,
    state: Mutex<State>,
}

/// Proof that its holder is the one agy run allowed now; dropping it lets the next call start.
pub struct Turn {
    queue: Arc<AgyQueue>,
}

#[derive(Default)]
struct State {
    /// A turn is out (its call is running or about to).
    running: bool,
    /// Some thread is handing out turns; a turn dropped meanwhile leaves the rest to it.
    advancing: bool,
    /// Shutdown: nothing more starts.
    closed: bool,
    waiting: VecDeque<(u64, Box<dyn TurnWork>)>,
}

/// A call whose turn has come, on its way to a worker.
struct Handoff {
    work: Box<dyn TurnWork>,
    turn: Turn,
}

impl AgyQueue {
    pub fn new(pool: Arc<Pool>) -> Arc<AgyQueue> {
        Arc::new(AgyQueue { pool, state: Mutex::new(State::default()) })
    }

    /// Puts a call at the back of the line under `key`; it starts at once when the line is empty.
    pub fn push(self: &Arc<Self>, key: u64, work: Box<dyn TurnWork>) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        if state.running || !state.waiting.is_empty() {
            state.waiting.push_back((key, work));
            return;
        }
        state.running = true;
        drop(state);
        self.pool.submit(Box::new(Handoff { work, turn: Turn { queue: self.clone() } }));
    }

    /// Takes a waiting call out of the line (it has been cancelled); `None` when it is not waiting
    /// (already running, finished, or never queued).
    pub fn remove(&self, key: u64) -> Option<Box<dyn TurnWork>> {
        let mut state = self.lock();
        let at = state.waiting.iter().position(|(k, _)| *k == key)?;
        state.waiting.remove(at).map(|(_, work)| work)
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

    /// The turn came back: hand it to the next waiting call. A turn dropped while this runs (a
    /// worker that could not be started rejects its call at once, or a quick run ends) only clears
    /// `running`; the loop here goes on, so rejections never recurse.
    fn release(self: &Arc<Self>) {
        let mut state = self.lock();
        state.running = false;
        if state.advancing {
            return;
        }
        state.advancing = true;
        while !state.running && !state.closed {
            let Some((_, work)) = state.waiting.pop_front() else { break };
            state.running = true;
            drop(state);
            self.pool.submit(Box::new(Handoff { work, turn: Turn { queue: self.clone() } }));
            state = self.lock();
        }
        state.advancing = false;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.queue.release();
    }
}

impl Work for Handoff {
    fn run(self: Box<Self>) {
        let Handoff { work, turn } = *self;
        work.run(turn);
    }

    fn reject(self: Box<Self>, reason: io::Error) {
        let Handoff { work, turn } = *self;
        // The call is answered before the next one starts.
        work.reject(reason);
        drop(turn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

    /// A queued call that reports when it starts, then holds its turn until its gate opens.
    struct Call {
        n: usize,
        gate: Receiver<()>,
        events: Sender<String>,
    }

    impl TurnWork for Call {
        fn run(self: Box<Self>, turn: Turn) {
            let _ = self.events.send(format!("start {}", self.n));
            let _ = self.gate.recv_timeout(Duration::from_secs(10));
            let _ = self.events.send(format!("end {}", self.n));
            drop(turn);
        }

        fn reject(self: Box<Self>, _reason: io::Error) {
            let _ = self.events.send(format!("rejected {}", self.n));
        }
    }

    fn call(n: usize, events: &Sender<String>) -> (Sender<()>, Box<dyn TurnWork>) {
        let (open, gate) = bounded(0);
        (open, Box::new(Call { n, gate, events: events.clone() }))
    }

    fn next(events: &Receiver<String>) -> String {
        events.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    #[test]
    fn one_run_at_a_time_in_arrival_order_and_waiting_calls_hold_no_worker() {
        let pool = Arc::new(Pool::new(8));
        let queue = AgyQueue::new(pool.clone());
        let (events_tx, events) = unbounded();
        let gates: Vec<Sender<()>> = (0..3)
            .map(|n| {
                let (open, work) = call(n, &events_tx);
                queue.push(n as u64, work);
                open
            })
            .collect();
        assert_eq!(next(&events), "start 0");
        assert_eq!(queue.waiting(), 2);
        assert_eq!(pool.workers(), 1, "waiting calls hold no worker");
        for (n, gate) in gates.iter().enumerate() {
            gate.send_timeout((), Duration::from_secs(5)).unwrap();
            assert_eq!(next(&events), format!("end {n}"));
            if n < 2 {
                assert_eq!(next(&events), format!("start {}", n + 1));
            }
        }
        assert_eq!(queue.waiting(), 0);
    }

    #[test]
    fn a_removed_call_never_runs() {
        let queue = AgyQueue::new(Arc::new(Pool::new(8)));
        let (events_tx, events) = unbounded();
        let (open0, first) = call(0, &events_tx);
        let (_open1, second) = call(1, &events_tx);
        let (open2, third) = call(2, &events_tx);
        queue.push(0, first);
        queue.push(1, second);
        queue.push(2, third);
        assert_eq!(next(&events), "start 0");
        assert!(queue.remove(1).is_some());
        assert!(queue.remove(1).is_none());
        assert!(queue.remove(0).is_none(), "a running call is not waiting");
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert_eq!(next(&events), "start 2");
        open2.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 2");
    }

    #[test]
    fn a_closed_queue_starts_nothing_more() {
        let queue = AgyQueue::new(Arc::new(Pool::new(8)));
        let (events_tx, events) = unbounded();
        let (open0, first) = call(0, &events_tx);
        let (_open1, second) = call(1, &events_tx);
        queue.push(0, first);
        queue.push(1, second);
        assert_eq!(next(&events), "start 0");
        queue.close();
        open0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(next(&events), "end 0");
        assert!(events.recv_timeout(Duration::from_millis(200)).is_err());
    }
}
