//! The worker pool: at most `max` named worker threads, started lazily when no idle worker is
//! left and reused afterwards; work beyond that waits in one FIFO channel, in submission order. A
//! worker that stays idle for a while exits, giving its memory back. When a needed worker cannot be
//! started (a pid or memory limit), the work is rejected with the reason instead of waiting for a
//! worker that may never come.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, unbounded};

/// How long an idle worker waits for work before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(60);

/// A unit of work the pool runs on one of its threads, or rejects when it cannot start a thread.
pub trait Work: Send {
    fn run(self: Box<Self>);
    fn reject(self: Box<Self>, reason: io::Error);
}

/// A pool of worker threads. Cheap to share behind an `Arc`.
pub struct Pool {
    jobs: Sender<Box<dyn Work>>,
    shared: Arc<Shared>,
}

/// What the workers share with the pool.
struct Shared {
    jobs: Receiver<Box<dyn Work>>,
    max: usize,
    /// Workers that are waiting for work and not yet promised to submitted work.
    idle: AtomicUsize,
    /// Workers alive (running or idle). Changed only under this lock, so two submissions never
    /// start more than `max` workers between them.
    started: Mutex<usize>,
}

impl Pool {
    pub fn new(max: usize) -> Pool {
        let (jobs, rx) = unbounded();
        let shared =
            Arc::new(Shared { jobs: rx, max, idle: AtomicUsize::new(0), started: Mutex::new(0) });
        Pool { jobs, shared }
    }

    /// Hands `work` to an idle worker, to a newly started one while there are fewer than `max`, or
    /// to the FIFO line when all `max` are busy. When a worker is needed but cannot be started, the
    /// work is rejected with the reason at once.
    pub fn submit(&self, work: Box<dyn Work>) {
        if self.shared.take_idle() {
            self.enqueue(work);
            return;
        }
        let mut started = self.shared.lock_started();
        if *started >= self.shared.max {
            drop(started);
            self.enqueue(work);
            return;
        }
        let shared = self.shared.clone();
        let spawned = thread::Builder::new().name("worker".into()).spawn(move || shared.serve());
        match spawned {
            Ok(_) => {
                *started += 1;
                drop(started);
                self.enqueue(work);
            }
            Err(err) => {
                drop(started);
                log::error!("could not start a worker thread: {err}");
                work.reject(err);
            }
        }
    }

    /// How many workers are alive.
    #[cfg(test)]
    pub fn workers(&self) -> usize {
        *self.shared.lock_started()
    }

    fn enqueue(&self, work: Box<dyn Work>) {
        // The pool holds a receiver, so the channel never disconnects.
        let _ = self.jobs.send(work);
    }
}

impl Shared {
    /// Promises one idle worker to the caller's work; false when none is idle.
    fn take_idle(&self) -> bool {
        self.idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok()
    }

    fn lock_started(&self) -> std::sync::MutexGuard<'_, usize> {
        self.started.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A worker's life: run work until idle for `IDLE_EXIT`.
    fn serve(&self) {
        loop {
            match self.jobs.recv_timeout(IDLE_EXIT) {
                Ok(work) => {
                    work.run();
                    self.idle.fetch_add(1, Ordering::AcqRel);
                }
                Err(RecvTimeoutError::Timeout) => {
                    // Leave only if nobody has been promised this idle worker meanwhile.
                    let mut started = self.lock_started();
                    if self.take_idle() {
                        *started -= 1;
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Instant;

    use crossbeam_channel::bounded;

    /// Work that reports its number when it runs (after waiting for `gate`) or is rejected.
    struct Probe {
        n: usize,
        gate: Option<Receiver<()>>,
        ran: Sender<Result<usize, usize>>,
    }

    impl Work for Probe {
        fn run(self: Box<Self>) {
            if let Some(gate) = &self.gate {
                let _ = gate.recv_timeout(Duration::from_secs(10));
            }
            let _ = self.ran.send(Ok(self.n));
        }

        fn reject(self: Box<Self>, _reason: io::Error) {
            let _ = self.ran.send(Err(self.n));
        }
    }

    #[test]
    fn runs_work_in_parallel_up_to_the_limit() {
        let pool = Pool::new(2);
        let (ran_tx, ran) = unbounded();
        let gates: Vec<(Sender<()>, Receiver<()>)> = (0..3).map(|_| bounded(0)).collect();
        for (n, (_, gate)) in gates.iter().enumerate() {
            pool.submit(Box::new(Probe { n, gate: Some(gate.clone()), ran: ran_tx.clone() }));
        }
        assert_eq!(pool.workers(), 2);
        // Two run (blocked at their gates); the third waits for a worker.
        gates[2].0.send_timeout((), Duration::from_millis(200)).unwrap_err();
        gates[0].0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(ran.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(0));
        gates[2].0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(ran.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(2));
        gates[1].0.send_timeout((), Duration::from_secs(5)).unwrap();
        assert_eq!(ran.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(1));
        assert_eq!(pool.workers(), 2);
    }

    #[test]
    fn waiting_work_runs_in_submission_order() {
        let pool = Pool::new(1);
        let (ran_tx, ran) = unbounded();
        let (open, gate) = bounded::<()>(0);
        pool.submit(Box::new(Probe { n: 0, gate: Some(gate), ran: ran_tx.clone() }));
        for n in 1..6 {
            pool.submit(Box::new(Probe { n, gate: None, ran: ran_tx.clone() }));
        }
        drop(open);
        let order: Vec<usize> =
            (0..6).map(|_| ran.recv_timeout(Duration::from_secs(5)).unwrap().unwrap()).collect();
        assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn idle_workers_are_reused() {
        let pool = Pool::new(8);
        let (ran_tx, ran) = unbounded();
        for n in 0..20 {
            pool.submit(Box::new(Probe { n, gate: None, ran: ran_tx.clone() }));
            ran.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
            // Wait until the worker is idle again, so the next submission can find it.
            let deadline = Instant::now() + Duration::from_secs(5);
            while pool.shared.idle.load(Ordering::Acquire) == 0 && Instant::now() < deadline {
                thread::yield_now();
            }
        }
        assert_eq!(pool.workers(), 1);
    }
}
