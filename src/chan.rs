//! Channels between threads: a FIFO queue under a mutex with one condition variable, many senders
//! and one receiver. The queue holds boxed `Any` values, so all the logic is compiled once rather
//! than once per message type (crossbeam-channel cost tens of kilobytes of a static binary).

use std::any::Any;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The sending side; clone it for more senders.
pub struct Sender<T> {
    core: Arc<Core>,
    _message: PhantomData<fn(T)>,
}

/// The receiving side; there is exactly one.
pub struct Receiver<T> {
    core: Arc<Core>,
    _message: PhantomData<fn() -> T>,
}

/// Why a bounded wait ended without a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvTimeoutError {
    Timeout,
    /// Every sender is gone and the queue is empty.
    Disconnected,
}

/// A new channel without a capacity limit.
pub fn unbounded<T: Send + 'static>() -> (Sender<T>, Receiver<T>) {
    let core = Arc::new(Core {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            senders: 1,
            receiver: true,
            pushed: 0,
            popped: 0,
        }),
        changed: Condvar::new(),
    });
    (Sender { core: core.clone(), _message: PhantomData }, Receiver { core, _message: PhantomData })
}

impl<T: Send + 'static> Sender<T> {
    /// Queues a message; false (and the message is dropped) once the receiver is gone.
    pub fn send(&self, message: T) -> bool {
        self.core.push(Box::new(message), false)
    }

    /// Queues a message and waits until the receiver has taken it (a rendezvous); false once the
    /// receiver is gone.
    pub fn send_and_wait(&self, message: T) -> bool {
        self.core.push(Box::new(message), true)
    }
}

impl<T: Send + 'static> Receiver<T> {
    /// The next message; `None` once every sender is gone and the queue is empty.
    pub fn recv(&self) -> Option<T> {
        downcast(self.core.pop(None)).ok()
    }

    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.recv_deadline(Instant::now() + timeout)
    }

    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        downcast(self.core.pop(Some(deadline)))
    }

    pub fn is_empty(&self) -> bool {
        self.core.lock().queue.is_empty()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.core.lock().senders += 1;
        Sender { core: self.core.clone(), _message: PhantomData }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.core.lock();
        state.senders -= 1;
        if state.senders == 0 {
            self.core.changed.notify_all();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let queued = {
            let mut state = self.core.lock();
            state.receiver = false;
            std::mem::take(&mut state.queue)
        };
        self.core.changed.notify_all();
        // Queued messages are dropped outside the lock: one may hold a sender of this channel.
        drop(queued);
    }
}

/// What a receiver gets from the queue.
type Message = Box<dyn Any + Send>;

struct Core {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    queue: VecDeque<Message>,
    senders: usize,
    receiver: bool,
    /// Messages ever queued and ever taken, for rendezvous sends.
    pushed: u64,
    popped: u64,
}

impl Core {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(state).unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, message: Message, rendezvous: bool) -> bool {
        let mut state = self.lock();
        if !state.receiver {
            drop(state);
            return false;
        }
        let ticket = state.pushed;
        state.pushed += 1;
        state.queue.push_back(message);
        self.changed.notify_all();
        if !rendezvous {
            return true;
        }
        while state.receiver && state.popped <= ticket {
            state = self.wait(state);
        }
        state.popped > ticket
    }

    fn pop(&self, deadline: Option<Instant>) -> Result<Message, RecvTimeoutError> {
        let mut state = self.lock();
        loop {
            if let Some(message) = state.queue.pop_front() {
                state.popped += 1;
                self.changed.notify_all();
                return Ok(message);
            }
            if state.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            state = match deadline {
                None => self.wait(state),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    let waited = self.changed.wait_timeout(state, deadline - now);
                    waited.unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }
}

fn downcast<T: 'static>(message: Result<Message, RecvTimeoutError>) -> Result<T, RecvTimeoutError> {
    match message?.downcast::<T>() {
        Ok(message) => Ok(*message),
        // A channel only ever carries its own type.
        Err(_) => Err(RecvTimeoutError::Disconnected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::thread;

    #[test]
    fn messages_arrive_in_order_then_disconnect() {
        let (tx, rx) = unbounded();
        for n in 0..3 {
            assert!(tx.send(n));
        }
        drop(tx);
        assert_eq!((rx.recv(), rx.recv(), rx.recv(), rx.recv()), (Some(0), Some(1), Some(2), None));
    }

    #[test]
    fn clones_keep_the_channel_connected() {
        let (tx, rx) = unbounded();
        let other = tx.clone();
        drop(tx);
        assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
        assert!(other.send("x"));
        drop(other);
        assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Ok("x"));
        assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Disconnected));
    }

    #[test]
    fn send_fails_without_a_receiver_and_queued_messages_are_dropped() {
        let (tx, rx) = unbounded();
        let (ack_tx, ack_rx) = unbounded::<()>();
        assert!(tx.send(ack_tx));
        assert!(!rx.is_empty());
        drop(rx);
        assert!(!tx.send(unbounded::<()>().0));
        // The queued sender was dropped with the receiver, so its channel is disconnected.
        assert_eq!(ack_rx.recv(), None);
    }

    #[test]
    fn rendezvous_waits_for_the_receiver() {
        let (tx, rx) = unbounded();
        let (taken_tx, taken_rx) = unbounded();
        let sender = thread::spawn(move || {
            let delivered = tx.send_and_wait(1);
            taken_tx.send(delivered);
            tx.send_and_wait(2)
        });
        assert_eq!(
            taken_rx.recv_timeout(Duration::from_millis(50)),
            Err(RecvTimeoutError::Timeout)
        );
        assert_eq!(rx.recv(), Some(1));
        assert_eq!(taken_rx.recv(), Some(true));
        drop(rx);
        assert!(!sender.join().unwrap());
    }
}
