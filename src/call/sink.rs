//! What a child's stdout adds to its call's progress preview when shown as it is: complete UTF-8
//! text (a character split across chunks is joined again), chunk by chunk.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::exec::OnStdout;

/// A stdout sink that hands complete UTF-8 text to `emit` (invalid bytes become U+FFFD).
pub fn text_sink(emit: impl Fn(&str) + Send + Sync + 'static) -> OnStdout {
    let joiner = Mutex::new(Utf8Joiner::default());
    Arc::new(move |chunk: &[u8]| lock(&joiner).feed(chunk, &mut |text| emit(text)))
}

/// Holds back the bytes of a character that a chunk ends in the middle of.
#[derive(Default)]
struct Utf8Joiner {
    pending: Vec<u8>,
}

impl Utf8Joiner {
    fn feed(&mut self, chunk: &[u8], emit: &mut dyn FnMut(&str)) {
        let joined;
        let mut rest = if self.pending.is_empty() {
            chunk
        } else {
            let mut bytes = std::mem::take(&mut self.pending);
            bytes.extend_from_slice(chunk);
            joined = bytes;
            &joined[..]
        };
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => return emit(text),
                Err(err) => {
                    let (valid, after) = rest.split_at(err.valid_up_to());
                    if !valid.is_empty() {
                        emit(std::str::from_utf8(valid).unwrap_or_default());
                    }
                    match err.error_len() {
                        Some(bad) => {
                            emit("\u{FFFD}");
                            rest = &after[bad..];
                        }
                        None => {
                            self.pending = after.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sink shows when `chunks` arrive one after another.
    fn shown(chunks: &[&[u8]]) -> String {
        let text = Arc::new(Mutex::new(String::new()));
        let seen = text.clone();
        let sink = text_sink(move |piece| lock(&seen).push_str(piece));
        for chunk in chunks {
            sink(chunk);
        }
        lock(&text).clone()
    }

    #[test]
    fn plain_text_is_shown_as_it_is_with_split_characters_joined() {
        assert_eq!(shown(&[b"a {\"event\":1}\n", b"b"]), "a {\"event\":1}\nb");
        let bytes = "hé😀".as_bytes();
        for at in 1..bytes.len() {
            assert_eq!(shown(&[&bytes[..at], &bytes[at..]]), "hé😀", "split at {at}");
        }
        assert_eq!(shown(&[b"a\xffb", b"\xc3"]), "a\u{FFFD}b");
    }
}
