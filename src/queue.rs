//! The agy queue (§4.1, D5): one process-wide FIFO that serializes agy runs. Waiting happens on the
//! caller's own thread, so queued calls never hold a worker that other requests need.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// The queue itself.
#[derive(Default)]
pub struct AgyQueue {
    next: AtomicU64,
    waiting: Mutex<VecDeque<u64>>,
    turn: Condvar,
}

/// The head of the queue; dropping it lets the next run start.
pub struct Slot<'a> {
    queue: &'a AgyQueue,
    ticket: u64,
}

impl AgyQueue {
    /// Waits for this caller's turn. `None` when `aborted` was set while waiting (the caller left the
    /// queue without running).
    pub fn acquire(&self, aborted: &AtomicBool) -> Option<Slot<'_>> {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.push_back(ticket);
        loop {
            if aborted.load(Ordering::SeqCst) {
                waiting.retain(|t| *t != ticket);
                drop(waiting);
                self.turn.notify_all();
                return None;
            }
            if waiting.front() == Some(&ticket) {
                return Some(Slot { queue: self, ticket });
            }
            waiting = self.turn.wait(waiting).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wakes every waiter so they can notice an abort.
    pub fn wake(&self) {
        let _guard = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        self.turn.notify_all();
    }

    /// How many runs are queued or running.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut waiting = self.queue.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.retain(|t| *t != self.ticket);
        drop(waiting);
        self.queue.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn runs_in_arrival_order() {
        let queue = Arc::new(AgyQueue::default());
        let never = Arc::new(AtomicBool::new(false));
        let first = queue.acquire(&never).unwrap();
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::new();
        for i in 0..3 {
            let (waiter_queue, never, tx) = (queue.clone(), never.clone(), tx.clone());
            handles.push(thread::spawn(move || {
                let _slot = waiter_queue.acquire(&never).unwrap();
                tx.send(i).unwrap();
            }));
            // Wait until this waiter is in line before starting the next one.
            while queue.len() < i + 2 {
                thread::yield_now();
            }
        }
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "nobody runs before the head");
        drop(first);
        let order: Vec<usize> =
            (0..3).map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        assert_eq!(order, [0, 1, 2]);
        handles.into_iter().for_each(|h| h.join().unwrap());
    }

    #[test]
    fn an_aborted_waiter_leaves_the_queue() {
        let queue = Arc::new(AgyQueue::default());
        let never = AtomicBool::new(false);
        let head = queue.acquire(&never).unwrap();
        let aborted = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (waiter_queue, aborted) = (queue.clone(), aborted.clone());
            thread::spawn(move || waiter_queue.acquire(&aborted).is_none())
        };
        while queue.len() < 2 {
            thread::yield_now();
        }
        aborted.store(true, Ordering::SeqCst);
        queue.wake();
        assert!(waiter.join().unwrap());
        assert_eq!(queue.len(), 1);
        drop(head);
        assert_eq!(queue.len(), 0);
    }
}
