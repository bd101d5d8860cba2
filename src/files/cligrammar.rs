//! The Gemini CLI's own `@` grammar (Gemini CLI 0.61, `parseAllAtCommands`, `unescapePath` and
//! `tryExtractPath` in its bundle), so that the gemini backend's jail checks the paths that CLI will
//! read, rather than splitting at whitespace (`@\S+`) as the agy backend's jail does.
//!
//! The CLI's regex is `(?<!\\)@(?:"[^"]*"|\\.|[^ \t\n\r,;!?()\[\]{}.]|\.(?!$|[ \t\n\r]))+`, global:
//! an `@` not preceded by a backslash, then one or more pieces, each tried in this order: a
//! double-quoted string (up to the next `"`), a backslash and any one character but a line
//! terminator, a character other than space, tab, CR, LF and `, ; ! ? ( ) [ ] { } .`, or a `.` not
//! followed by space, tab, CR, LF or the end of the text. Nothing follows the repetition, so the
//! greedy first-choice path is the match, which this scanner follows without backtracking. An `@`
//! inside a reference is part of it; the next search starts after the reference.

use crate::js;

/// One reference the Gemini CLI sees in a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliReference<'a> {
    /// The reference as written, without its `@` (the refusal text names `@` + this).
    pub(crate) written: &'a str,
    /// The path with the quotes of quoted pieces removed and backslash escapes resolved.
    pub(crate) path: String,
    /// What the CLI's `unescapePath` makes of it on POSIX: escapes resolved, quotes kept.
    pub(crate) literal: String,
}

/// Every reference of `prompt`, left to right.
pub(crate) fn references(prompt: &str) -> Vec<CliReference<'_>> {
    let bytes = prompt.as_bytes();
    let mut references = Vec::new();
    // Past this offset there is no `"` at all (a failed search for a closing quote proves it), so
    // later searches fail at once and the scan stays linear.
    let mut no_quote_from = bytes.len() + 1;
    let mut from = 0;
    while let Some(offset) = prompt[from..].find('@') {
        let at = from + offset;
        let start = at + 1;
        from = start;
        if at > 0 && bytes[at - 1] == b'\\' {
            continue;
        }
        let mut path = String::new();
        let mut idx = start;
        while let Some(c) = prompt[idx..].chars().next() {
            match c {
                '"' => {
                    let closing = match idx + 1 >= no_quote_from {
                        true => None,
                        false => prompt[idx + 1..].find('"').map(|it| idx + 1 + it),
                    };
                    match closing {
                        Some(end) => {
                            path.push_str(&unescape(&prompt[idx + 1..end]));
                            idx = end + 1;
                        }
                        None => {
                            no_quote_from = no_quote_from.min(idx + 1);
                            // An unmatched quote is an ordinary character.
                            path.push('"');
                            idx += 1;
                        }
                    }
                }
                '\\' => match prompt[idx + 1..].chars().next() {
                    Some(escaped) if !is_line_terminator(escaped) => {
                        path.push(escaped);
                        idx += 1 + escaped.len_utf8();
                    }
                    // A backslash that escapes nothing is an ordinary character.
                    _ => {
                        path.push('\\');
                        idx += 1;
                    }
                },
                '.' => match bytes.get(idx + 1) {
                    None | Some(b' ' | b'\t' | b'\n' | b'\r') => break,
                    Some(_) => {
                        path.push('.');
                        idx += 1;
                    }
                },
                ' ' | '\t' | '\n' | '\r' | ',' | ';' | '!' | '?' | '(' | ')' | '[' | ']' | '{'
                | '}' => break,
                other => {
                    path.push(other);
                    idx += other.len_utf8();
                }
            }
        }
        if idx == start {
            continue;
        }
        let written = &prompt[start..idx];
        references.push(CliReference { written, path, literal: unescape(written) });
        from = idx;
    }
    references
}

/// The paths the Gemini CLI may read for one reference, each of which the jail checks: the path
/// without quotes, the literal path (the CLI's first try), each whitespace-separated part of either
/// (a reference spanning whitespace through quotes or escapes), and, when the CLI would find the
/// literal path invalid, what its `tryExtractPath` makes of every part.
pub(crate) fn candidate_paths(reference: &CliReference<'_>) -> Vec<String> {
    let mut candidates = vec![reference.path.clone(), reference.literal.clone()];
    for text in [&reference.path, &reference.literal] {
        if text.contains(js::is_space) {
            candidates
                .extend(text.split(js::is_space).filter(|it| !it.is_empty()).map(String::from));
        }
    }
    if may_be_invalid(&reference.literal) {
        candidates.extend(extracted_paths(&reference.literal));
    }
    candidates.sort();
    candidates.dedup();
    candidates
}

/// `unescapePath` on POSIX: every backslash followed by a character other than a line terminator
/// is dropped (`/\\(.)/g` → `$1`).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && !is_line_terminator(next)
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// The characters JavaScript's `.` does not match.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Whether the CLI's `validatePath` might refuse `path`, which sends it to `tryExtractPath`. A
/// superset of the CLI's rules (its log-marker patterns are matched anywhere), so that extraction
/// is never missed.
fn may_be_invalid(path: &str) -> bool {
    const MARKERS: [&str; 5] =
        ["AssertionError:", "FAIL ", "\u{2713} ", "\u{d7} ", "TestingLibraryElementError:"];
    let units = crate::redact::utf16_len(path);
    path.is_empty()
        || path.contains(['\n', '\r', '\0', '\t'])
        || MARKERS.iter().any(|marker| path.contains(marker))
        || ((path.contains('"') || path.contains("...")) && units > 20)
        || units > 4096
        || path.split(['/', '\\']).any(|part| crate::redact::utf16_len(part) > 255)
}

/// `tryExtractPath`'s candidates, all of them rather than the first: each whitespace-separated
/// part with the wrapper characters `( ) [ ] { } " ' , ; ! .` stripped from both ends (first the
/// front, then the back, repeatedly), cut before a `:<digit>` line suffix, kept when it contains
/// `/`, `\` or `.`.
fn extracted_paths(path: &str) -> Vec<String> {
    const WRAPPERS: [char; 12] = ['(', ')', '[', ']', '{', '}', '"', '\'', ',', ';', '!', '.'];
    let mut paths = Vec::new();
    for part in path.split(js::is_space) {
        let mut part = part;
        loop {
            if let Some(rest) = part.strip_prefix(WRAPPERS) {
                part = rest;
            } else if let Some(rest) = part.strip_suffix(WRAPPERS) {
                part = rest;
            } else {
                break;
            }
        }
        if part.is_empty() {
            continue;
        }
        let part = strip_line_suffix(part);
        if part.contains(['/', '\\', '.']) {
            paths.push(part.to_string());
        }
    }
    paths
}

/// `^(.+?):(\d+)` → the part before the first `:` that has at least one character before it and
/// an ASCII digit after it; the whole text when there is none.
fn strip_line_suffix(part: &str) -> &str {
    let bytes = part.as_bytes();
    (1..bytes.len())
        .find(|&idx| bytes[idx] == b':' && bytes.get(idx + 1).is_some_and(u8::is_ascii_digit))
        .map_or(part, |idx| &part[..idx])
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::{Duration, Instant};

    use crate::testutil::XorShift;

    /// `(written, path, literal)` of one reference.
    type Reference = (&'static str, &'static str, &'static str);

    /// `(written, path, literal)` of every reference.
    fn scan(prompt: &str) -> Vec<(String, String, String)> {
        references(prompt)
            .into_iter()
            .map(|it| (it.written.to_string(), it.path, it.literal))
            .collect()
    }

    #[test]
    fn tokenizer_table() {
        #[rustfmt::skip]
        let table: &[(&str, &[Reference])] = &[
            // Plain references and terminators.
            ("see @src/a.ts now", &[("src/a.ts", "src/a.ts", "src/a.ts")]),
            ("@a.ts,b", &[("a.ts", "a.ts", "a.ts")]),
            ("@a;b @c!d @e?f @g(h) @i[j] @k{l}", &[("a", "a", "a"), ("c", "c", "c"), ("e", "e", "e"),
                ("g", "g", "g"), ("i", "i", "i"), ("k", "k", "k")]),
            ("@a\tb @c\nd @e\rf", &[("a", "a", "a"), ("c", "c", "c"), ("e", "e", "e")]),
            // Only space, tab, CR and LF end a reference: other whitespace is part of it.
            ("@a\u{a0}b @c\u{b}d", &[("a\u{a0}b", "a\u{a0}b", "a\u{a0}b"), ("c\u{b}d", "c\u{b}d", "c\u{b}d")]),
            // Dots: kept unless followed by whitespace or the end.
            ("@a.ts. end", &[("a.ts", "a.ts", "a.ts")]),
            ("@a.ts.", &[("a.ts", "a.ts", "a.ts")]),
            ("@../x", &[("../x", "../x", "../x")]),
            ("@a..b.,", &[("a..b.", "a..b.", "a..b.")]),
            ("@.", &[]),
            ("@. x", &[]),
            ("@.x", &[(".x", ".x", ".x")]),
            ("@...", &[("..", "..", "..")]),
            // Quoted pieces, whole or mixed with unquoted ones.
            (r#"@"../secret.txt""#, &[(r#""../secret.txt""#, "../secret.txt", r#""../secret.txt""#)]),
            (r#"see @"a b/../../../secret.txt" now"#, &[(r#""a b/../../../secret.txt""#,
                "a b/../../../secret.txt", r#""a b/../../../secret.txt""#)]),
            (r#"@docs/"my file".md,"#, &[(r#"docs/"my file".md"#, "docs/my file.md", r#"docs/"my file".md"#)]),
            (r#"@"a"b"c""#, &[(r#""a"b"c""#, "abc", r#""a"b"c""#)]),
            (r#"@"""#, &[(r#""""#, "", r#""""#)]),
            ("@\"a\nb\" c", &[("\"a\nb\"", "a\nb", "\"a\nb\"")]),
            // An unmatched quote is an ordinary character.
            (r#"@"abc def"#, &[(r#""abc"#, r#""abc"#, r#""abc"#)]),
            (r#"@a"b"#, &[(r#"a"b"#, r#"a"b"#, r#"a"b"#)]),
            // Escapes.
            (r"@docs\ ../../secret.txt", &[(r"docs\ ../../secret.txt", "docs ../../secret.txt", "docs ../../secret.txt")]),
            (r"@a\,b\(c\)", &[(r"a\,b\(c\)", "a,b(c)", "a,b(c)")]),
            (r"@a\.", &[(r"a\.", "a.", "a.")]),
            (r"@a\\b", &[(r"a\\b", r"a\b", r"a\b")]),
            ("@a\\\nb", &[("a\\", "a\\", "a\\")]),
            (r"@a\", &[(r"a\", r"a\", r"a\")]),
            (r#"@"a\"b"#, &[(r#""a\"b"#, r"a\b", r#""a"b"#)]),
            (r"@\é", &[(r"\é", "é", "é")]),
            // A backslash before the `@` hides the reference.
            (r"\@x @y", &[("y", "y", "y")]),
            (r"\\@x", &[]),
            // Inside words, and `@` inside a reference.
            ("mail user@example.com.", &[("example.com", "example.com", "example.com")]),
            ("@a@b c@d", &[("a@b", "a@b", "a@b"), ("d", "d", "d")]),
            ("@@x", &[("@x", "@x", "@x")]),
            // Lone `@`s.
            ("a @ b @, @", &[]),
        ];
        for (prompt, expected) in table {
            let expected: Vec<(String, String, String)> = expected
                .iter()
                .map(|(w, p, l)| (w.to_string(), p.to_string(), l.to_string()))
                .collect();
            assert_eq!(scan(prompt), expected, "references of {prompt:?}");
        }
    }

    fn candidates(prompt: &str) -> Vec<String> {
        let refs = references(prompt);
        assert_eq!(refs.len(), 1, "{prompt:?}");
        candidate_paths(&refs[0])
    }

    #[test]
    fn candidates_cover_every_reading() {
        assert_eq!(candidates("@src/a.ts"), ["src/a.ts"]);
        assert_eq!(candidates(r#"@"../s.txt""#), [r#""../s.txt""#, "../s.txt"]);
        assert_eq!(candidates(r"@docs\ ../../s.txt"), ["../../s.txt", "docs", "docs ../../s.txt"]);
        // Long quoted text is invalid to the CLI, which then extracts paths from its parts.
        assert_eq!(
            candidates(r#"@"(see docs/a.md:12) notes""#),
            [
                r#""(see"#,
                r#""(see docs/a.md:12) notes""#,
                "(see",
                "(see docs/a.md:12) notes",
                "docs/a.md",
                "docs/a.md:12)",
                "notes",
                r#"notes""#
            ]
        );
        // tryExtractPath strips leading dots: `../x` becomes `/x`.
        assert!(candidates(r#"@"a long quoted name ../x""#).contains(&"/x".to_string()));
    }

    #[test]
    fn validity_and_extraction_helpers() {
        assert!(!may_be_invalid("src/a.ts"));
        assert!(!may_be_invalid(r#""short""#));
        assert!(may_be_invalid(r#""twenty-one characters""#));
        assert!(may_be_invalid("a...b.........................."));
        assert!(may_be_invalid("a\tb"));
        assert!(may_be_invalid("FAIL src/x"));
        assert!(may_be_invalid(&"a".repeat(256)));
        assert!(!may_be_invalid(&format!("{}/{}", "a".repeat(255), "b".repeat(255))));
        assert!(may_be_invalid(&"a/".repeat(2049)));
        assert_eq!(strip_line_suffix("a.ts:12:3"), "a.ts");
        assert_eq!(strip_line_suffix(":1"), ":1");
        assert_eq!(strip_line_suffix("a:b"), "a:b");
        assert_eq!(extracted_paths("[x/y], 'a.b' ../c ..d ( ) noext"), ["x/y", "a.b", "/c"]);
    }

    #[test]
    fn random_prompts_give_well_formed_references() {
        const ALPHABET: [char; 14] =
            ['@', '@', '"', '\\', '.', ' ', '\n', 'a', '/', ',', '\u{a0}', 'é', '😀', '\u{2028}'];
        let mut rng = XorShift::new(0x1234_5678_9abc_def1);
        for _ in 0..3_000 {
            let prompt: String =
                (0..rng.below(30)).map(|_| ALPHABET[rng.below(ALPHABET.len())]).collect();
            let mut previous_end = 0;
            for reference in references(&prompt) {
                let start = reference.written.as_ptr() as usize - prompt.as_ptr() as usize;
                assert!(start > previous_end, "{prompt:?}");
                assert_eq!(&prompt[start - 1..start], "@");
                assert!(start < 2 || prompt.as_bytes()[start - 2] != b'\\', "{prompt:?}");
                assert!(!reference.written.is_empty());
                previous_end = start + reference.written.len();
                assert!(reference.path.len() <= reference.written.len());
                assert!(reference.literal.len() <= reference.written.len());
            }
        }
    }

    #[test]
    fn one_megabyte_prompts_scan_fast() {
        const MB: usize = 1 << 20;
        for prompt in [
            "@\"".repeat(MB / 2),
            "@a\" ".repeat(MB / 4),
            "\"@".repeat(MB / 2),
            "@.".repeat(MB / 2),
            "@\\".repeat(MB / 2),
            "@".repeat(MB),
        ] {
            let started = Instant::now();
            let refs = references(&prompt);
            assert!(refs.len() <= prompt.len());
            assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
        }
    }
}
