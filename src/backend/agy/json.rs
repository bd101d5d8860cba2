//! Reading agy's JSON lines for the few fields the relay uses: a lone UTF-16 surrogate escape
//! (an answer cut inside an emoji) is mended to U+FFFD before parsing, and whatever is not a
//! field the caller asked for is skipped unread, so a huge event costs no memory beyond its line.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// `json` with every `\uXXXX` escape of a lone surrogate replaced by `\ufffd` (same length), so
/// that a strict parser reads it; a pair is left as it is. Borrowed when there is none.
pub fn mend_surrogates(json: &[u8]) -> Cow<'_, [u8]> {
    let mut mended: Option<Vec<u8>> = None;
    let mut lone = |at: usize| {
        mended.get_or_insert_with(|| json.to_vec())[at..at + 6].copy_from_slice(b"\\ufffd");
    };
    let mut at = 0;
    // Where a leading half's escape starts, while it waits for its trailing half right after it.
    let mut high: Option<usize> = None;
    while let Some(offset) = json[at..].iter().position(|&b| b == b'\\') {
        let start = at + offset;
        let unit = match json.get(start + 1) {
            None => break,
            Some(b'u') => json.get(start + 2..start + 6).and_then(hex_unit),
            // Any other escape (`\\` included) is two bytes and no surrogate.
            Some(_) => None,
        };
        match (high.take(), unit) {
            (Some(lead), Some(0xDC00..=0xDFFF)) if lead + 6 == start => (),
            (lead, Some(0xDC00..=0xDFFF)) => {
                lead.into_iter().chain([start]).for_each(&mut lone);
            }
            (lead, Some(0xD800..=0xDBFF)) => {
                lead.into_iter().for_each(&mut lone);
                high = Some(start);
            }
            (lead, _) => lead.into_iter().for_each(&mut lone),
        }
        at = start + if unit.is_some() { 6 } else { 2 };
    }
    high.into_iter().for_each(&mut lone);
    match mended {
        Some(bytes) => Cow::Owned(bytes),
        None => Cow::Borrowed(json),
    }
}

/// The UTF-16 unit four hex digits spell.
fn hex_unit(digits: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok().filter(|_| digits.iter().all(u8::is_ascii_hexdigit))
}

/// Parses one JSON document of type `T` from `json` (lone surrogates mended); `None` when it is
/// not JSON of that shape.
pub fn parse<T: DeserializeOwned>(json: &[u8]) -> Option<T> {
    serde_json::from_slice(&mend_surrogates(json)).ok()
}

/// What the relay reads of a stream-json event line besides its result: its `event`, and the
/// `model` of an `init` object (each when a string). Everything else is skipped unread.
#[derive(Debug, Default)]
pub struct EventLine {
    pub event: Option<String>,
    pub init_model: Option<String>,
}

/// `line`'s `EventLine` (empty for JSON that is not an object); `None` when it is not JSON.
pub fn event_line(line: &[u8]) -> Option<EventLine> {
    match read(&mend_surrogates(line), Pick::Event)? {
        Picked::Event(event) => Some(event),
        _ => None,
    }
}

/// The id → cwd map of agy's `last_conversations.json` (`cwd → id`), for `ids` only; a later
/// entry wins. Empty when it is not a JSON object.
pub fn cwds_of(json: &[u8], ids: &HashSet<&str>) -> HashMap<String, String> {
    match read(&mend_surrogates(json), Pick::Cwds(ids)) {
        Some(Picked::Cwds(found)) => found,
        _ => HashMap::new(),
    }
}

/// The trimmed text when it is not blank.
pub fn non_blank(text: Option<String>) -> Option<String> {
    let text = crate::js::trim(text.as_deref()?);
    (!text.is_empty()).then(|| text.to_string())
}

/// One JSON document read with `pick`.
fn read(json: &[u8], pick: Pick<'_>) -> Option<Picked> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let picked = pick.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(picked)
}

/// Reads the string field `name` of an object as a map value (`None` for anything else).
pub struct FieldSeed {
    pub name: &'static str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Ok(Pick::Field(self.name).deserialize(deserializer)?.text())
    }
}

/// What to read of a value; everything else in it is skipped unread. One visitor for every
/// shape keeps the parser's code in the binary once.
#[derive(Clone, Copy)]
enum Pick<'a> {
    /// The value when it is a string.
    Str,
    /// An object's string field of this name.
    Field(&'static str),
    /// An event line's `event` and `init.model`.
    Event,
    /// `last_conversations.json`'s entries whose id is one of these.
    Cwds(&'a HashSet<&'a str>),
}

enum Picked {
    Str(Option<String>),
    Event(EventLine),
    Cwds(HashMap<String, String>),
}

impl Picked {
    fn text(self) -> Option<String> {
        match self {
            Picked::Str(text) => text,
            _ => None,
        }
    }
}

impl Pick<'_> {
    /// What a value that holds nothing wanted gives.
    fn nothing(self) -> Picked {
        match self {
            Pick::Str | Pick::Field(_) => Picked::Str(None),
            Pick::Event => Picked::Event(EventLine::default()),
            Pick::Cwds(_) => Picked::Cwds(HashMap::new()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Pick<'_> {
    type Value = Picked;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Picked, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Picked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, text: &str) -> Result<Picked, E> {
        Ok(match self {
            Pick::Str => Picked::Str(Some(text.to_string())),
            other => other.nothing(),
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<Picked, E> {
        Ok(self.nothing())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Picked, E> {
        Ok(self.nothing())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Picked, E> {
        Ok(self.nothing())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Picked, E> {
        Ok(self.nothing())
    }

    fn visit_unit<E>(self) -> Result<Picked, E> {
        Ok(self.nothing())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Picked, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.nothing())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Picked, A::Error> {
        let mut picked = self.nothing();
        while let Some(key) = map.next_key::<String>()? {
            let wanted = match (self, key.as_str()) {
                (Pick::Field(name), key) if key == name => Some(Pick::Str),
                (Pick::Event, "event") => Some(Pick::Str),
                (Pick::Event, "init") => Some(Pick::Field("model")),
                (Pick::Cwds(_), _) => Some(Pick::Str),
                _ => None,
            };
            let Some(wanted) = wanted else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let text = map.next_value_seed(wanted)?.text();
            match (&mut picked, key.as_str()) {
                (Picked::Event(event), "event") => event.event = text,
                (Picked::Event(event), _) => event.init_model = text,
                (Picked::Cwds(found), _) => {
                    if let (Pick::Cwds(ids), Some(id)) = (self, text)
                        && ids.contains(id.as_str())
                    {
                        found.insert(id, key);
                    }
                }
                (Picked::Str(found), _) => *found = text,
            }
        }
        Ok(picked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mended(json: &str) -> String {
        String::from_utf8(mend_surrogates(json.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn lone_surrogate_escapes_are_mended_and_pairs_kept() {
        assert_eq!(mended(r#""a \ud83d""#), r#""a \ufffd""#);
        assert_eq!(mended(r#""\ud83d""#), r#""\ufffd""#);
        assert_eq!(mended(r#""\ud83d\ude00""#), r#""\ud83d\ude00""#);
        assert_eq!(mended(r#""\ude00\ud83d x""#), r#""\ufffd\ufffd x""#);
        assert_eq!(mended(r#""\ud83d\ud83d\ude00""#), r#""\ufffd\ud83d\ude00""#);
        assert_eq!(mended(r#""\ud83d\n""#), r#""\ufffd\n""#);
        assert_eq!(mended(r#""\\ud83d""#), r#""\\ud83d""#, "an escaped backslash, then text");
        assert_eq!(mended(r#""\\\ud83d""#), r#""\\\ufffd""#);
        assert_eq!(
            mended(r#""\u00e9 \ud8""#),
            r#""\u00e9 \ud8""#,
            "not an escape: left to the parser"
        );
        assert!(matches!(mend_surrogates(br#"{"a":"\u00e9"}"#), Cow::Borrowed(_)));
        let value: serde_json::Value = parse(br#"{"r":"cut \ud83d"}"#).unwrap();
        assert_eq!(value["r"], "cut \u{FFFD}");
    }

    #[test]
    fn only_the_fields_asked_for_are_kept() {
        let line = |json: &str| event_line(json.as_bytes()).unwrap();
        let init = line(r#"{"tools":[1,{"a":[]}],"init":{"x":[2],"model":" m "},"event":"init"}"#);
        assert_eq!(init.event.as_deref(), Some("init"));
        assert_eq!(non_blank(init.init_model).as_deref(), Some("m"));
        for other in [r#"{"event":7,"init":"m"}"#, r#"{"event":null,"init":[{"model":"m"}]}"#] {
            let parsed = line(other);
            assert_eq!((parsed.event, parsed.init_model), (None, None), "{other}");
        }
        assert_eq!(event_line(b"[1]").unwrap().event, None);
        assert!(event_line(b"{not json").is_none());
        assert!(event_line(br#"{"event":"x"} trailing"#).is_none());
        let ids = HashSet::from(["a", "c"]);
        let found = cwds_of(br#"{"/one":"a","/two":"b","/three":"a","/four":{"id":"c"}}"#, &ids);
        assert_eq!(found, HashMap::from([("a".to_string(), "/three".to_string())]));
        let field = |json: &str| {
            let mut de = serde_json::Deserializer::from_str(json);
            FieldSeed { name: "name" }.deserialize(&mut de).unwrap()
        };
        assert_eq!(field(r#"{"args":[1,2],"name":"read_file"}"#).as_deref(), Some("read_file"));
        assert_eq!(field(r#"{"name":7}"#), None);
        assert_eq!(field(r#"[{"name":"x"}]"#), None);
        assert_eq!(field(r#""name""#), None);
    }
}
