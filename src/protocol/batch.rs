//! JSON-RPC batches (2025-03-26): each open batch collects its members' responses, some answered at
//! once and some later by tool calls, and is complete once it has been read whole (sealed) and no
//! answer is pending.

use std::collections::HashMap;

use crate::protocol::jsonrpc::{RequestId, Response};

/// The batches whose answer has not been sent yet.
#[derive(Default)]
pub struct Batches {
    next: u64,
    open: HashMap<u64, Batch>,
}

/// A batch ready to go: its responses (empty when it held only notifications) and the ids of its
/// members that were answered, which are no longer in flight once it is sent.
pub struct Complete {
    pub responses: Vec<Response>,
    pub ids: Vec<RequestId>,
}

#[derive(Default)]
struct Batch {
    sealed: bool,
    pending: usize,
    responses: Vec<Response>,
}

impl Batches {
    /// Opens a batch and returns its key.
    pub fn open(&mut self) -> u64 {
        let key = self.next;
        self.next += 1;
        self.open.insert(key, Batch::default());
        key
    }

    /// A member's response, given now.
    pub fn push(&mut self, key: u64, response: Response) {
        if let Some(batch) = self.open.get_mut(&key) {
            batch.responses.push(response);
        }
    }

    /// A member will be answered later (a tool call started).
    pub fn expect(&mut self, key: u64) {
        if let Some(batch) = self.open.get_mut(&key) {
            batch.pending += 1;
        }
    }

    /// A member answered later (`None`: it was cancelled and gets no answer).
    pub fn fulfil(&mut self, key: u64, response: Option<Response>) -> Option<Complete> {
        let batch = self.open.get_mut(&key)?;
        batch.pending = batch.pending.saturating_sub(1);
        batch.responses.extend(response);
        self.take_if_complete(key)
    }

    /// Every member has been read.
    pub fn seal(&mut self, key: u64) -> Option<Complete> {
        self.open.get_mut(&key)?.sealed = true;
        self.take_if_complete(key)
    }

    fn take_if_complete(&mut self, key: u64) -> Option<Complete> {
        let batch = self.open.get(&key)?;
        if !batch.sealed || batch.pending > 0 {
            return None;
        }
        let responses = self.open.remove(&key)?.responses;
        let ids = responses.iter().filter_map(|response| response.id.clone()).collect();
        Some(Complete { responses, ids })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn response(id: i64) -> Response {
        Response::ok(RequestId::Number(id.into()), json!({}))
    }

    fn ids(complete: &Complete) -> Vec<RequestId> {
        complete.ids.clone()
    }

    #[test]
    fn a_batch_answered_at_once_completes_when_sealed() {
        let mut batches = Batches::default();
        let key = batches.open();
        batches.push(key, response(1));
        batches.push(key, response(2));
        let complete = batches.seal(key).unwrap();
        assert_eq!(complete.responses, [response(1), response(2)]);
        assert_eq!(ids(&complete), [RequestId::Number(1.into()), RequestId::Number(2.into())]);
        assert!(batches.seal(key).is_none(), "sent once");
    }

    #[test]
    fn a_batch_waits_for_its_calls() {
        let mut batches = Batches::default();
        let key = batches.open();
        batches.push(key, response(1));
        batches.expect(key);
        batches.expect(key);
        assert!(batches.seal(key).is_none());
        assert!(batches.fulfil(key, Some(response(3))).is_none());
        let complete = batches.fulfil(key, None).unwrap();
        assert_eq!(complete.responses, [response(1), response(3)]);
    }

    #[test]
    fn a_batch_of_notifications_completes_empty() {
        let mut batches = Batches::default();
        let key = batches.open();
        assert!(batches.seal(key).unwrap().responses.is_empty());
    }
}
