//! Hand-written scanners for `@` tokens: jail-check tokens anywhere, inline tokens after whitespace.
//!
//! Both scanners reproduce the original's JavaScript regexes (`@(\S+)` and `(?<=^|\s)@(\S+)`,
//! global, non-overlapping, left to right) without a regex engine. They run in linear time.

use crate::js;

/// One `@` token found in a prompt, as byte offsets into that prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    /// Offset of the `@` itself.
    pub(crate) at: usize,
    /// Offset just past the last character of the reference.
    pub(crate) end: usize,
    /// The reference: the text after the `@` (never empty, never contains whitespace).
    pub(crate) reference: &'a str,
}

/// Every match of `@(\S+)` anywhere in the prompt, also inside words (`user@example.com`).
pub(crate) fn jail_tokens(prompt: &str) -> Vec<Token<'_>> {
    scan(prompt, false)
}

/// Every match of `@(\S+)` whose `@` starts the prompt or follows a whitespace character.
pub(crate) fn inline_tokens(prompt: &str) -> Vec<Token<'_>> {
    scan(prompt, true)
}

fn scan(prompt: &str, after_whitespace_only: bool) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut from = 0;
    while let Some(offset) = prompt[from..].find('@') {
        let at = from + offset;
        // The `@` is one byte, so `at + 1` is always a character boundary.
        let start = at + 1;
        if after_whitespace_only && !starts_token_position(prompt, at) {
            from = start;
            continue;
        }
        let end = run_end(prompt, start);
        if end == start {
            from = start;
            continue;
        }
        tokens.push(Token { at, end, reference: &prompt[start..end] });
        from = end;
    }
    tokens
}

/// Whether position `at` is the start of the prompt or directly follows a whitespace character.
fn starts_token_position(prompt: &str, at: usize) -> bool {
    let Some(&previous) = prompt.as_bytes()[..at].last() else { return true };
    if previous.is_ascii() {
        return matches!(previous, b'\t'..=b'\r' | b' ');
    }
    prompt[..at].chars().next_back().is_some_and(js::is_space)
}

/// The end of the maximal run of non-whitespace characters starting at `start`.
///
/// ASCII bytes are tested directly; only non-ASCII characters are decoded.
fn run_end(prompt: &str, start: usize) -> usize {
    let bytes = prompt.as_bytes();
    let mut idx = start;
    while idx < bytes.len() {
        if bytes[idx].is_ascii() {
            if matches!(bytes[idx], b'\t'..=b'\r' | b' ') {
                return idx;
            }
            idx += 1;
            continue;
        }
        let Some(c) = prompt[idx..].chars().next() else { break };
        if js::is_space(c) {
            return idx;
        }
        idx += c.len_utf8();
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::{Duration, Instant};

    use crate::testutil::XorShift;

    fn refs(tokens: &[Token<'_>]) -> Vec<String> {
        tokens.iter().map(|it| it.reference.to_string()).collect()
    }

    fn check(prompt: &str, jail: &[&str], inline: &[&str]) {
        assert_eq!(refs(&jail_tokens(prompt)), jail, "jail tokens of {prompt:?}");
        assert_eq!(refs(&inline_tokens(prompt)), inline, "inline tokens of {prompt:?}");
    }

    #[test]
    fn plain_reference() {
        check("see @package.json", &["package.json"], &["package.json"]);
    }

    #[test]
    fn reference_at_start() {
        check("@src/a.ts please", &["src/a.ts"], &["src/a.ts"]);
    }

    #[test]
    fn email_is_jail_only() {
        check("mail user@example.com now", &["example.com"], &[]);
    }

    #[test]
    fn trailing_punctuation_is_part_of_the_token() {
        check("look at @src/a.ts, then", &["src/a.ts,"], &["src/a.ts,"]);
    }

    #[test]
    fn lone_at_signs_are_not_tokens() {
        check("a @ b @\t@", &[], &[]);
    }

    #[test]
    fn token_swallows_later_at_signs() {
        check("@a@/etc/passwd", &["a@/etc/passwd"], &["a@/etc/passwd"]);
        check("x@@y", &["@y"], &[]);
    }

    #[test]
    fn jail_sees_paths_inside_words() {
        check("x@/etc/y and a@~b", &["/etc/y", "~b"], &[]);
    }

    #[test]
    fn code_decorators() {
        check("/** @param x the value */", &["param"], &["param"]);
        check("class A { @Injectable() svc }", &["Injectable()"], &["Injectable()"]);
    }

    #[test]
    fn unicode_spaces_separate_tokens() {
        check("a\u{a0}@x\u{3000}@y", &["x", "y"], &["x", "y"]);
        check("a\u{feff}@x", &["x"], &["x"]);
        check("a\u{2028}@x\u{2029}", &["x"], &["x"]);
    }

    #[test]
    fn next_line_is_not_a_js_space() {
        check("a\u{85}@x\u{85}y", &["x\u{85}y"], &[]);
    }

    #[test]
    fn token_offsets_cover_the_at_sign() {
        let prompt = "é @ü/ß x";
        let tokens = inline_tokens(prompt);
        assert_eq!(tokens.len(), 1);
        assert_eq!(&prompt[tokens[0].at..tokens[0].end], "@ü/ß");
    }

    const ALPHABET: [char; 14] =
        ['@', '@', 'a', '/', '.', '*', ' ', '\n', '\u{a0}', '\u{85}', '\u{feff}', 'é', '😀', '~'];

    #[test]
    fn random_prompts_give_well_formed_tokens() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let len = rng.below(40);
            let prompt: String = (0..len).map(|_| ALPHABET[rng.below(ALPHABET.len())]).collect();
            let jail = jail_tokens(&prompt);
            let inline = inline_tokens(&prompt);
            for token in jail.iter().chain(&inline) {
                assert_eq!(&prompt[token.at..token.at + 1], "@");
                assert_eq!(&prompt[token.at + 1..token.end], token.reference);
                assert!(!token.reference.is_empty());
                assert!(!token.reference.chars().any(js::is_space));
            }
            for token in &inline {
                assert!(jail.contains(token), "inline token {token:?} of {prompt:?} not jailed");
            }
        }
    }

    fn assert_fast(prompt: &str) {
        let started = Instant::now();
        let jail = jail_tokens(prompt);
        let inline = inline_tokens(prompt);
        assert!(jail.len() <= prompt.len() && inline.len() <= prompt.len());
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "scanning took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn one_megabyte_inputs_scan_fast() {
        const MB: usize = 1 << 20;
        assert_fast(&"@".repeat(MB));
        assert_fast(&"*".repeat(MB));
        assert_fast(&"@*".repeat(MB / 2));
        assert_fast(&"@ ".repeat(MB / 2));
        assert_fast(&"a@".repeat(MB / 2));
    }
}
