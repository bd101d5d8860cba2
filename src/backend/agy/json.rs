//! Reading agy's JSON lines for the few fields the relay uses: a lone UTF-16 surrogate escape
//! (an answer cut inside an emoji) is mended to U+FFFD before parsing, and whatever is not a
//! field the caller asked for is skipped unread, so a huge event costs no memory beyond its line.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
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

/// A value read only if it is a string; anything else (an object or array of any size) is
/// skipped unread.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Text(pub Option<String>);

impl Text {
    /// The string, trimmed, when it is not blank.
    pub fn non_blank(self) -> Option<String> {
        let text = crate::js::trim(self.0.as_deref()?);
        (!text.is_empty()).then(|| text.to_string())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        Str::deserialize(deserializer).map(|text| Text(text.0.map(Cow::into_owned)))
    }
}

/// `Text`, borrowed from the input when the string has no escapes.
pub struct Str<'de>(pub Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Str<'de>, D::Error> {
        deserializer.deserialize_any(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Str<'de>, E> {
        Ok(Str(Some(Cow::Borrowed(text))))
    }

    fn visit_str<E>(self, text: &str) -> Result<Str<'de>, E> {
        Ok(Str(Some(Cow::Owned(text.to_string()))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Str<'de>, E> {
        Ok(Str(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Str<'de>, E> {
        Ok(Str(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Str<'de>, E> {
        Ok(Str(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Str<'de>, E> {
        Ok(Str(None))
    }

    fn visit_unit<E>(self) -> Result<Str<'de>, E> {
        Ok(Str(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Str<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Str(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Str<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Str(None))
    }
}

/// Reads field `name` of the value `deserializer` holds when it is an object; everything else
/// in it is skipped unread.
pub fn string_field<'de, D: Deserializer<'de>>(
    deserializer: D,
    name: &'static str,
) -> Result<Text, D::Error> {
    deserializer.deserialize_any(FieldVisitor { name })
}

struct FieldVisitor {
    name: &'static str,
}

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
        let mut found = Text(None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == self.name {
                found = map.next_value()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text, A::Error> {
        StrVisitor.visit_seq(seq).map(|_| Text(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Text, E> {
        Ok(Text(None))
    }

    fn visit_unit<E>(self) -> Result<Text, E> {
        Ok(Text(None))
    }
}

/// What the relay reads of a stream-json event line besides its result: its `event`, and the
/// `model` of an `init` object. Everything else is skipped unread.
#[derive(Debug, Default)]
pub struct EventLine {
    pub event: Text,
    pub init_model: Text,
}

impl<'de> Deserialize<'de> for EventLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EventLine, D::Error> {
        deserializer.deserialize_map(EventLineVisitor)
    }
}

struct EventLineVisitor;

impl<'de> Visitor<'de> for EventLineVisitor {
    type Value = EventLine;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventLine, A::Error> {
        let mut line = EventLine::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "event" => line.event = map.next_value()?,
                "init" => line.init_model = map.next_value_seed(FieldSeed { name: "model" })?,
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(line)
    }
}

/// Reads the string field `name` of an object (see `string_field`) as a map value.
pub struct FieldSeed {
    pub name: &'static str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Text;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Text, D::Error> {
        string_field(deserializer, self.name)
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
    fn only_strings_and_named_fields_are_kept() {
        let text: Text = serde_json::from_str(r#""  hi ""#).unwrap();
        assert_eq!(text.non_blank().as_deref(), Some("hi"));
        for other in ["1", "null", "true", "[1,[2]]", r#"{"a":{"b":[]}}"#] {
            assert_eq!(serde_json::from_str::<Text>(other).unwrap(), Text(None), "{other}");
        }
        let field = |json: &str| {
            let mut de = serde_json::Deserializer::from_str(json);
            string_field(&mut de, "name").unwrap().0
        };
        assert_eq!(field(r#"{"args":[1,2],"name":"read_file"}"#).as_deref(), Some("read_file"));
        assert_eq!(field(r#"{"name":7}"#), None);
        assert_eq!(field(r#"[{"name":"x"}]"#), None);
        assert_eq!(field(r#""name""#), None);
    }
}
