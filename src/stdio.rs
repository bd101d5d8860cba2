//! The stdio transport: the only code that touches stdin and stdout. A reader thread turns stdin
//! into bounded, parsed lines; a writer thread writes one JSON message per line and flushes.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::time::Duration;

use serde_json::Value;

use crate::chan::{Sender, unbounded};
use crate::threads;

/// One line of input, already parsed on the reader thread.
#[derive(Debug)]
pub enum Inbound {
    Message(Value),
    /// Not JSON, or not UTF-8.
    Malformed,
    /// Longer than the configured maximum; its bytes were discarded unread.
    TooLarge,
}

/// One message for the writer thread.
pub enum Outbound {
    /// A serialized JSON message without its newline.
    Line(Vec<u8>),
    /// Flush and acknowledge (used at shutdown).
    Flush(Sender<()>),
}

/// The sending side of stdout, cloned into every thread that answers or notifies.
#[derive(Clone)]
pub struct Out {
    tx: Sender<Outbound>,
}

/// A line as read from stdin, before parsing.
enum RawLine {
    Line,
    TooLarge,
    Eof,
}

impl Out {
    /// Serializes and queues one message. After the writer is gone (stdout closed) it is dropped.
    pub fn send(&self, message: &Value) {
        match serde_json::to_vec(message) {
            Ok(line) => {
                self.tx.send(Outbound::Line(line));
            }
            Err(err) => log::error!("notification failed: {err}"),
        }
    }

    /// Queues a message that is already serialized (one JSON value, no newline).
    pub fn send_serialized(&self, line: Vec<u8>) {
        let _ = self.tx.send(Outbound::Line(line));
    }

    /// Waits (bounded) until everything queued so far has been written.
    pub fn flush(&self, within: Duration) {
        let (ack_tx, ack_rx) = unbounded();
        if self.tx.send(Outbound::Flush(ack_tx)) {
            let _ = ack_rx.recv_timeout(within);
        }
    }
}

/// Starts the reader thread, which hands every line to `deliver` (returning false stops it) and
/// drops `deliver` at end of input.
pub fn reader(
    max_message_bytes: usize,
    mut deliver: Box<dyn FnMut(Inbound) -> bool + Send>,
) -> io::Result<()> {
    threads::spawn(
        "stdin-reader".into(),
        Box::new(move || {
            let stdin = io::stdin();
            let mut input = BufReader::with_capacity(64 * 1024, stdin.lock());
            let _ = read_loop(&mut input, max_message_bytes, &mut deliver);
        }),
    )
}

/// Starts the writer thread.
pub fn writer() -> io::Result<Out> {
    let (tx, rx) = unbounded::<Outbound>();
    let body = move || -> io::Result<()> {
        let stdout = io::stdout();
        let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
        while let Some(outbound) = rx.recv() {
            match outbound {
                Outbound::Line(line) => {
                    out.write_all(&line)?;
                    out.write_all(b"\n")?;
                    // Flush once nothing else is queued: a burst goes out in one write.
                    if rx.is_empty() {
                        out.flush()?;
                    }
                }
                Outbound::Flush(ack) => {
                    out.flush()?;
                    ack.send(());
                }
            }
        }
        out.flush()
    };
    threads::spawn("stdout-writer".into(), Box::new(move || drop(body())))?;
    Ok(Out { tx })
}

/// Reads lines until end of input, handing each one to `deliver` (which returns false to stop).
fn read_loop(
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
}
