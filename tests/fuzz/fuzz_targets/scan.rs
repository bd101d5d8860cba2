//! Fuzz target: the `@` token scanners (jail tokens and inline tokens) on arbitrary prompts.
//!
//! Properties: tokens are in order, disjoint, within bounds, on character boundaries and start at
//! an `@`; every reference is non-empty; every inline token is also a jail token; and every `@`
//! followed by a visible ASCII character lies inside a jail token, so the jail sees it.

#![no_main]

use gemini_relay::fuzz::{self, Token};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let prompt = utf8_prefix(data);
    let jail = fuzz::jail_tokens(prompt);
    let inline = fuzz::inline_tokens(prompt);
    check_well_formed(prompt, &jail);
    check_well_formed(prompt, &inline);
    for token in &inline {
        assert!(jail.contains(token), "inline token {token:?} of {prompt:?} is not a jail token");
    }
    let bytes = prompt.as_bytes();
    for (at, _) in prompt.match_indices('@') {
        if bytes.get(at + 1).is_some_and(u8::is_ascii_graphic) {
            assert!(
                jail.iter().any(|it| it.span.contains(&at)),
                "the @ at {at} of {prompt:?} escapes the jail tokens {jail:?}"
            );
        }
    }
});

fn check_well_formed(prompt: &str, tokens: &[Token]) {
    let mut previous_end = 0;
    for token in tokens {
        let span = &token.span;
        assert!(previous_end <= span.start && span.start < span.end, "{tokens:?} of {prompt:?}");
        assert!(span.end <= prompt.len(), "{tokens:?} of {prompt:?}");
        assert!(prompt.is_char_boundary(span.end), "{tokens:?} of {prompt:?}");
        assert_eq!(prompt.as_bytes()[span.start], b'@', "{tokens:?} of {prompt:?}");
        assert!(!token.reference.is_empty(), "{tokens:?} of {prompt:?}");
        previous_end = span.end;
    }
}

/// The longest valid UTF-8 prefix of the input.
fn utf8_prefix(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(err) => std::str::from_utf8(&data[..err.valid_up_to()]).unwrap_or_default(),
    }
}
