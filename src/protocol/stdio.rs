//! The stdio transport: the only code that touches stdin and stdout. A reader thread turns stdin
//! into bounded, parsed lines and hands each one over a rendezvous channel (it reads the next line
//! only once the event loop has taken this one); a writer thread writes one JSON message per line
//! from a small bounded channel, so a client that stops reading stdout stops the relay reading
//! stdin.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::thread;
use std::time::Instant;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError, bounded};
use serde_json::Value;

use crate::protocol::jsonrpc::Outgoing;

/// How many messages may wait for the writer before senders block: a client that stops
/// reading stdout makes the relay stop reading stdin.
const OUTBOX_CAPACITY: usize = 16;

/// One line of input, already parsed on the reader thread. End of input is the channel closing.
#[derive(Debug)]
pub enum Inbound {
    Message(Value),
    /// Not JSON, or not UTF-8.
    Malformed,
    /// Longer than the configured maximum; its bytes were discarded unread.
    TooLarge,
}

/// What the writer thread takes: a message, or a request to flush and acknowledge.
pub enum Outbound {
    Message(Outgoing),
    Flush(Sender<()>),
}

/// The sending side of stdout, cloned into every thread that answers or notifies.
#[derive(Clone)]
pub struct Out {
    tx: Sender<Outbound>,
}

/// Why a message could not be queued without waiting.
pub enum Blocked {
    /// The writer is behind (stdout is not being read); the message is handed back.
    Full(Outgoing),
    /// The writer is gone (stdout closed).
    Gone,
}

/// The two ends of the transport as the event loop sees them.
pub struct Transport {
    pub inbox: Receiver<Inbound>,
    pub out: Out,
    /// Disconnects when the writer thread ends (stdout closed or failing).
    pub writer_alive: Receiver<()>,
}

impl Out {
    /// A transport end for tests: the receiver sees everything that would be written.
    #[cfg(test)]
    pub fn memory() -> (Out, Receiver<Outbound>) {
        let (tx, rx) = bounded(OUTBOX_CAPACITY);
        (Out { tx }, rx)
    }

    /// Queues one message if there is room now.
    pub fn try_send(&self, message: Outgoing) -> Result<(), Blocked> {
        match self.tx.try_send(Outbound::Message(message)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(Outbound::Message(message))) => Err(Blocked::Full(message)),
            Err(_) => Err(Blocked::Gone),
        }
    }

    /// Queues one message, waiting at most until `deadline`; false when it was not queued.
    pub fn send_until(&self, message: Outgoing, deadline: Instant) -> bool {
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.tx.send_timeout(Outbound::Message(message), timeout) {
            Ok(()) => true,
            Err(SendTimeoutError::Timeout(_) | SendTimeoutError::Disconnected(_)) => false,
        }
    }

    /// Waits until everything queued so far has been written and flushed, or until `deadline`.
    pub fn flush_until(&self, deadline: Instant) {
        let (ack_tx, ack_rx) = bounded(1);
        let timeout = deadline.saturating_duration_since(Instant::now());
        if self.tx.send_timeout(Outbound::Flush(ack_tx), timeout).is_ok() {
            let _ = ack_rx.recv_deadline(deadline);
        }
    }

    /// The raw channel, for the event loop's `select` (it waits on the writer and on events at once).
    pub fn channel(&self) -> &Sender<Outbound> {
        &self.tx
    }
}

/// Starts the reader and writer threads. The reader stops at end of input (the inbox then
/// disconnects); the writer stops when stdout fails, logging why.
pub fn start(max_message_bytes: usize) -> io::Result<Transport> {
    let (inbox_tx, inbox) = bounded(0);
    thread::Builder::new().name("stdin-reader".into()).spawn(move || {
        let stdin = io::stdin();
        let mut input = BufReader::with_capacity(64 * 1024, stdin.lock());
        if let Err(err) =
            read_loop(&mut input, max_message_bytes, |inbound| inbox_tx.send(inbound).is_ok())
        {
            log::error!("stdin: {err}");
        }
    })?;
    let (tx, rx) = bounded(OUTBOX_CAPACITY);
    let (alive, writer_alive) = bounded::<()>(0);
    thread::Builder::new().name("stdout-writer".into()).spawn(move || {
        let _alive = alive;
        let stdout = io::stdout();
        let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
        if let Err(err) = write_loop(&rx, &mut out) {
            log::error!("stdout: {err}");
        }
    })?;
    Ok(Transport { inbox, out: Out { tx }, writer_alive })
}

/// Writes every message as one line, flushing whenever nothing else is queued (a burst goes out in
/// one write). Returns when every sender is gone or stdout fails.
fn write_loop(rx: &Receiver<Outbound>, out: &mut impl Write) -> io::Result<()> {
    for outbound in rx {
        match outbound {
            Outbound::Message(message) => {
                serde_json::to_writer(&mut *out, &message)?;
                out.write_all(b"\n")?;
                if rx.is_empty() {
                    out.flush()?;
                }
            }
            Outbound::Flush(ack) => {
                out.flush()?;
                let _ = ack.send(());
            }
        }
    }
    out.flush()
}

/// Reads lines until end of input, handing each one to `deliver` (which returns false to stop).
pub(crate) fn read_loop(
    input: &mut impl BufRead,
    max: usize,
    mut deliver: impl FnMut(Inbound) -> bool,
) -> io::Result<()> {
    let mut line = Vec::new();
    loop {
        if line.capacity() > 1024 * 1024 {
            // Give a big line's memory back instead of keeping it for the rest of the session.
            line = Vec::new();
        }
        let inbound = match read_line(input, &mut line, max)? {
            RawLine::Eof => return Ok(()),
            RawLine::TooLarge => Inbound::TooLarge,
            RawLine::Line => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let parsed = serde_json::from_slice::<Value>(&line);
                if line.capacity() > 1024 * 1024 {
                    // Free a big line now, not when the next one arrives: the call it carries
                    // may hold its own copy of the payload for a long time.
                    line = Vec::new();
                }
                match parsed {
                    Ok(value) => Inbound::Message(value),
                    Err(_) => Inbound::Malformed,
                }
            }
        };
        if !deliver(inbound) {
            return Ok(());
        }
    }
}

/// A line as read from stdin, before parsing.
enum RawLine {
    Line,
    TooLarge,
    Eof,
}

/// Reads one line into `line` (without its `\n`), never buffering more than `max + 1` bytes.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<RawLine> {
    line.clear();
    let limit = max as u64 + 1;
    let n = input.by_ref().take(limit).read_until(b'\n', line)?;
    if n == 0 {
        return Ok(RawLine::Eof);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        return Ok(RawLine::Line);
    }
    if line.len() > max {
        line.clear();
        input.skip_until(b'\n')?;
        return Ok(RawLine::TooLarge);
    }
    Ok(RawLine::Line)
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    use crate::protocol::jsonrpc::{Notification, RequestId, Response};

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut got = Vec::new();
        read_loop(&mut &input[..], max, |inbound| {
            got.push(match inbound {
                Inbound::Message(v) => v.to_string(),
                Inbound::Malformed => "malformed".to_string(),
                Inbound::TooLarge => "too large".to_string(),
            });
            true
        })
        .unwrap();
        got
    }

    #[test]
    fn splits_lines_and_skips_blank_ones() {
        assert_eq!(lines(b"{\"a\":1}\n\n  \r\n[2]\r\n3", 100), ["{\"a\":1}", "[2]", "3"]);
    }

    #[test]
    fn malformed_and_invalid_utf8() {
        assert_eq!(lines(b"{nope\n\"\xff\"\n{}\n", 100), ["malformed", "malformed", "{}"]);
    }

    #[test]
    fn oversized_line_is_skipped_and_reading_goes_on() {
        let mut input = b"{\"x\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'a', 1000));
        input.extend(b"\"}\n{\"ok\":true}\n");
        assert_eq!(lines(&input, 64), ["too large", "{\"ok\":true}"]);
    }

    #[test]
    fn line_of_exactly_the_maximum_is_accepted() {
        assert_eq!(lines(b"[1,2]\n[1,2,3]\n", 5), ["[1,2]", "too large"]);
    }

    #[test]
    fn oversized_last_line_without_newline() {
        assert_eq!(lines(b"[1]\n[1,2,3,4,5,6]", 5), ["[1]", "too large"]);
    }

    #[test]
    fn the_writer_writes_one_line_per_message_and_acknowledges_flushes() {
        let (tx, rx) = bounded(4);
        let (ack_tx, ack_rx) = bounded(1);
        tx.send(Outbound::Message(Response::ok(RequestId::Number(1.into()), json!({})).into()))
            .unwrap();
        tx.send(Outbound::Message(Notification::new("n", json!({})).into())).unwrap();
        tx.send(Outbound::Flush(ack_tx)).unwrap();
        drop(tx);
        let mut written = Vec::new();
        write_loop(&rx, &mut written).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{}}\n"
        );
        assert!(ack_rx.try_recv().is_ok());
    }
}
