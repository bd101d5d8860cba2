//! agy's stream-json output decoded for the progress preview as it arrives: the answer so far and
//! one line per tool step, chunk by chunk, each byte looked at once.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::backend::agy::json::FieldSeed;
use crate::exec::OnStdout;

/// A tool name longer than this is cut (the preview is short).
const TOOL_NAME_CHARS: usize = 60;

/// Wraps a stdout sink so that it sees the decoded text of a stream-json run instead of its events.
pub fn stream_json(inner: OnStdout) -> OnStdout {
    let decoder = Mutex::new(StreamJson::default());
    Arc::new(move |chunk: &[u8]| lock(&decoder).feed(chunk, &mut |bytes| inner(bytes)))
}

/// Where the stream-json decoder is within the current line.
#[derive(Default, PartialEq, Eq)]
enum Line {
    /// Nothing but white space so far (kept in `line`).
    #[default]
    Start,
    /// A line that starts with `{`: kept whole until its newline, then decoded.
    Event,
    /// Any other line: shown as it is, as it comes.
    Text,
}

/// The stream-json decoder's state across chunks.
#[derive(Default)]
struct StreamJson {
    line: Vec<u8>,
    state: Line,
    /// The leading half of a UTF-16 surrogate pair that one `text_delta` ended with.
    high_surrogate: Option<u16>,
    /// Whether the last byte emitted was a newline (a tool line starts a line of its own).
    at_line_start: bool,
}

impl StreamJson {
    fn feed(&mut self, chunk: &[u8], emit: &mut dyn FnMut(&[u8])) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n');
            let (part, newline) = match end {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            rest = end.map_or(&[][..], |at| &rest[at + 1..]);
            self.take(part, emit);
            if newline {
                self.end_line(emit);
            }
        }
    }

    /// A piece of the current line (no newline in it).
    fn take(&mut self, mut part: &[u8], emit: &mut dyn FnMut(&[u8])) {
        if self.state == Line::Start {
            let blank = part.iter().take_while(|b| b.is_ascii_whitespace()).count();
            self.line.extend_from_slice(&part[..blank]);
            part = &part[blank..];
            match part.first() {
                None => return,
                Some(b'{') => self.state = Line::Event,
                Some(_) => {
                    self.state = Line::Text;
                    let blank = std::mem::take(&mut self.line);
                    self.out(&blank, emit);
                }
            }
        }
        match self.state {
            Line::Text => self.out(part, emit),
            _ => self.line.extend_from_slice(part),
        }
    }

    fn end_line(&mut self, emit: &mut dyn FnMut(&[u8])) {
        match std::mem::take(&mut self.state) {
            Line::Text => self.out(b"\n", emit),
            Line::Event => {
                let line = std::mem::take(&mut self.line);
                if !self.event(&line, emit) {
                    self.out(&line, emit);
                    self.out(b"\n", emit);
                }
            }
            Line::Start => (),
        }
        self.line.clear();
    }

    /// Decodes one event line; false when it is not JSON (it is then shown as it is). JSON of
    /// another shape adds nothing.
    fn event(&mut self, line: &[u8], emit: &mut dyn FnMut(&[u8])) -> bool {
        let event = match serde_json::from_slice::<Event>(line) {
            Ok(event) => event,
            // JSON that is not an event object is still JSON: it adds nothing.
            Err(err) => return err.is_data(),
        };
        if event.kind.as_deref() != Some("step_update") {
            return true;
        }
        if let Some(delta) = event.text_delta {
            self.delta(&delta, emit);
        }
        if let Some(name) = event.tool_name.as_deref().and_then(tool_name) {
            self.flush_surrogate(emit);
            if !self.at_line_start {
                self.out(b"\n", emit);
            }
            for part in ["🔧 ", &name, "\n"] {
                self.out(part.as_bytes(), emit);
            }
        }
        true
    }

    /// A `text_delta`'s bytes, as serde_json reads a string that may hold lone surrogates (each as
    /// its three-byte generalized UTF-8 form). A pair split across two deltas is joined; any other
    /// lone surrogate is U+FFFD (and other bad bytes are the inner sink's to replace).
    fn delta(&mut self, bytes: &[u8], emit: &mut dyn FnMut(&[u8])) {
        let mut rest = bytes;
        if let (Some(high), Some(low @ 0xDC00..=0xDFFF)) = (self.high_surrogate, surrogate(rest)) {
            self.high_surrogate = None;
            let joined = char::decode_utf16([high, low]).next().and_then(Result::ok);
            self.out(joined.unwrap_or('\u{FFFD}').encode_utf8(&mut [0; 4]).as_bytes(), emit);
            rest = &rest[3..];
        }
        self.flush_surrogate(emit);
        while let Some(at) = rest.windows(3).position(|w| surrogate(w).is_some()) {
            self.out(&rest[..at], emit);
            match surrogate(&rest[at..]) {
                // A leading half that ends the delta may find its trailing half in the next one.
                Some(high @ 0xD800..=0xDBFF) if at + 3 == rest.len() => {
                    self.high_surrogate = Some(high);
                }
                _ => self.out("\u{FFFD}".as_bytes(), emit),
            }
            rest = &rest[at + 3..];
        }
        self.out(rest, emit);
    }

    /// A leading surrogate that no trailing one followed is shown as U+FFFD.
    fn flush_surrogate(&mut self, emit: &mut dyn FnMut(&[u8])) {
        if self.high_surrogate.take().is_some() {
            self.out("\u{FFFD}".as_bytes(), emit);
        }
    }

    fn out(&mut self, bytes: &[u8], emit: &mut dyn FnMut(&[u8])) {
        if let Some(&last) = bytes.last() {
            self.at_line_start = last == b'\n';
            emit(bytes);
        }
    }
}

/// The UTF-16 unit of a surrogate in its three-byte generalized UTF-8 form, when `bytes` starts
/// with one.
fn surrogate(bytes: &[u8]) -> Option<u16> {
    match bytes {
        [0xED, b1 @ 0xA0..=0xBF, b2 @ 0x80..=0xBF, ..] => {
            Some(0xD000 | (u16::from(b1 & 0x3F) << 6) | u16::from(b2 & 0x3F))
        }
        _ => None,
    }
}

/// What the preview needs of one stream-json event: its kind, and a `step_update`'s text and the
/// name of its tool call. Everything else (a tool call's arguments included) is skipped unread.
#[derive(Default)]
struct Event<'de> {
    kind: Option<String>,
    /// The delta's bytes as serde_json reads a byte string: a lone surrogate is kept (in its
    /// three-byte generalized UTF-8 form), so that a pair split across two events can be joined.
    /// Borrowed from the line when it has no escapes.
    text_delta: Option<Cow<'de, [u8]>>,
    tool_name: Option<String>,
}

impl<'de> Deserialize<'de> for Event<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Event<'de>, D::Error> {
        deserializer.deserialize_map(EventVisitor { step: false })
    }
}

/// Reads an event object (`step: false`), or the `step_update` object inside it.
struct EventVisitor {
    step: bool,
}

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event<'de>, A::Error> {
        let mut event = Event::default();
        while let Some(key) = map.next_key::<String>()? {
            match (self.step, key.as_str()) {
                (false, "event") => event.kind = Some(map.next_value()?),
                (false, "step_update") => {
                    let step = map.next_value_seed(EventVisitor { step: true })?;
                    event.text_delta = step.text_delta;
                    event.tool_name = step.tool_name;
                }
                (true, "text_delta") => event.text_delta = Some(map.next_value_seed(ByteString)?),
                (true, "tool_call") => {
                    event.tool_name = map.next_value_seed(FieldSeed { name: "name" })?;
                }
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(event)
    }
}

impl<'de> DeserializeSeed<'de> for EventVisitor {
    type Value = Event<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Event<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

/// A JSON string read as bytes, borrowed from the line when it holds no escape.
struct ByteString;

impl<'de> Visitor<'de> for ByteString {
    type Value = Cow<'de, [u8]>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(bytes))
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
        Ok(Cow::Owned(bytes.to_vec()))
    }
}

impl<'de> DeserializeSeed<'de> for ByteString {
    type Value = Cow<'de, [u8]>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_bytes(self)
    }
}

/// The name a `tool_call` object gives its tool, trimmed and cut.
fn tool_name(name: &str) -> Option<String> {
    let name = name.trim();
    (!name.is_empty()).then(|| name.chars().take(TOOL_NAME_CHARS).collect())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    /// What the decoder shows when `chunks` arrive one after another.
    fn shown(chunks: &[&[u8]]) -> String {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let seen = bytes.clone();
        let sink = stream_json(Arc::new(move |piece: &[u8]| lock(&seen).extend_from_slice(piece)));
        for chunk in chunks {
            sink(chunk);
        }
        String::from_utf8_lossy(&lock(&bytes)).into_owned()
    }

    fn delta(text: &str) -> String {
        format!("{}\n", json!({"event": "step_update", "step_update": {"text_delta": text}}))
    }

    #[test]
    fn stream_json_shows_the_deltas_and_tool_steps_only() {
        let init = "{\"event\":\"init\",\"init\":{\"model\":\"gemini-3.8-flash-low\"}}\n";
        let tool = "{\"event\":\"step_update\",\"step_update\":{\"tool_call\":{\"name\":\" read_file \"}}}\n";
        let unknown = "{\"event\":\"thought\",\"thought\":{\"text_delta\":\"no\"}}\n{\"x\":1}\n\
            {\"event\":7}\n{\"event\":\"step_update\",\"step_update\":{\"text_delta\":[1]}}\n";
        let result = "{\"event\":\"result\",\"result\":{\"response\":\"Hello, world\"}}\n";
        let stdout =
            [init, &delta("Hello, "), tool, &delta("wor"), &delta("ld"), unknown, result].concat();
        let want = "Hello, \n🔧 read_file\nworld";
        assert_eq!(shown(&[stdout.as_bytes()]), want);
        // The same stream cut at every byte gives the same text.
        let bytes = stdout.as_bytes();
        for at in 1..bytes.len() {
            assert_eq!(shown(&[&bytes[..at], &bytes[at..]]), want, "split at {at}");
        }
    }

    #[test]
    fn a_line_that_is_not_json_is_shown_as_it_is() {
        let stdout = format!("{}Loading…\n  {{not json\n\n{}", delta("A"), delta("B"));
        assert_eq!(shown(&[stdout.as_bytes()]), "ALoading…\n  {not json\nB");
        // A text line is shown as it comes, before its newline.
        assert_eq!(shown(&[b"  50%"]), "  50%");
    }

    #[test]
    fn a_surrogate_pair_split_across_two_deltas_is_joined() {
        let first =
            "{\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"smile \\ud83d\"}}\n";
        let second = "{\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"\\ude00!\"}}\n";
        assert_eq!(shown(&[first.as_bytes(), second.as_bytes()]), "smile 😀!");
        // A half that finds no other half is a replacement character.
        let lone =
            "{\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"a\\ud83db\\ude00\"}}\n";
        assert_eq!(shown(&[lone.as_bytes(), delta("c").as_bytes()]), "a\u{FFFD}b\u{FFFD}c");
        assert_eq!(shown(&[first.as_bytes(), delta("x").as_bytes()]), "smile \u{FFFD}x");
    }

    #[test]
    fn a_character_split_across_chunks_inside_an_event_is_whole() {
        let stdout = delta("día 😀");
        let bytes = stdout.as_bytes();
        let at = stdout.find('😀').unwrap() + 2;
        assert_eq!(shown(&[&bytes[..at], &bytes[at..]]), "día 😀");
    }
}
