//! The agy queue (§4.1, D5): one process-wide FIFO that serializes agy runs in call arrival order.
//! The event loop reserves a place for every model-tool call as it dispatches it, so the order is
//! the order requests arrived, not the order worker threads happened to start. Waiting happens on
//! the caller's own thread, so queued calls never hold a worker that other requests need.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The queue itself.
#[derive(Default)]
pub struct AgyQueue {
    next: AtomicU64,
    line: Mutex<VecDeque<u64>>,
    turn: Condvar,
}

/// A reserved place in line. Give it back with `release` when the call turns out not to run agy.
#[derive(Debug)]
pub struct Ticket(u64);

/// The head of the queue; dropping it lets the next run start.
pub struct Slot<'a> {
    queue: &'a AgyQueue,
    ticket: u64,
}

impl AgyQueue {
    /// Takes a place at the back of the line.
    pub fn reserve(&self) -> Ticket {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push_back(ticket);
        Ticket(ticket)
    }

    /// Waits for the ticket's turn. `None` when `aborted` was set while waiting (the place is given
    /// up without running).
    pub fn wait(&self, ticket: Ticket, aborted: &AtomicBool) -> Option<Slot<'_>> {
        let mut line = self.lock();
        loop {
            if aborted.load(Ordering::SeqCst) {
                line.retain(|t| *t != ticket.0);
                drop(line);
                self.turn.notify_all();
                return None;
            }
            if line.front() == Some(&ticket.0) {
                return Some(Slot { queue: self, ticket: ticket.0 });
            }
            line = self.turn.wait(line).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Gives a place back without running.
    pub fn release(&self, ticket: Ticket) {
        self.remove(ticket.0);
    }

    /// Wakes every waiter so they can notice an abort.
    pub fn wake(&self) {
        let _line = self.lock();
        self.turn.notify_all();
    }

    /// How many places are taken (waiting or running).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    fn remove(&self, ticket: u64) {
        self.lock().retain(|t| *t != ticket);
        self.turn.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<u64>> {
        self.line.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.queue.remove(self.ticket);
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
    fn runs_in_reservation_order_whatever_order_the_waiters_arrive_in() {
        let queue = Arc::new(AgyQueue::default());
        let never = Arc::new(AtomicBool::new(false));
        let tickets: Vec<Ticket> = (0..4).map(|_| queue.reserve()).collect();
        let (tx, rx) = mpsc::channel();
        // Start the waiters in reverse order: the reservations, not arrival at `wait`, decide.
        let handles: Vec<_> = tickets
            .into_iter()
            .enumerate()
            .rev()
            .map(|(i, ticket)| {
                let (queue, never, tx) = (queue.clone(), never.clone(), tx.clone());
                thread::spawn(move || {
                    let _slot = queue.wait(ticket, &never).unwrap();
                    tx.send(i).unwrap();
                    thread::sleep(Duration::from_millis(5));
                })
            })
            .collect();
        let order: Vec<usize> =
            (0..4).map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        assert_eq!(order, [0, 1, 2, 3]);
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn a_released_place_lets_the_next_one_run() {
        let queue = AgyQueue::default();
        let never = AtomicBool::new(false);
        let first = queue.reserve();
        let second = queue.reserve();
        queue.release(first);
        assert!(queue.wait(second, &never).is_some());
    }

    #[test]
    fn an_aborted_waiter_leaves_the_line() {
        let queue = Arc::new(AgyQueue::default());
        let never = AtomicBool::new(false);
        let head = queue.wait(queue.reserve(), &never).unwrap();
        let aborted = Arc::new(AtomicBool::new(false));
        let ticket = queue.reserve();
        let waiter = {
            let (waiter_queue, aborted) = (queue.clone(), aborted.clone());
            thread::spawn(move || waiter_queue.wait(ticket, &aborted).is_none())
        };
        aborted.store(true, Ordering::SeqCst);
        queue.wake();
        assert!(waiter.join().unwrap());
        assert_eq!(queue.len(), 1);
        drop(head);
        assert_eq!(queue.len(), 0);
    }
}
