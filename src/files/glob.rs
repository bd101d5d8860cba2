//! Glob tokens: size bound, compilation and a backtracking-free matcher over root-relative paths.
//!
//! The original compiles a glob into an anchored JavaScript regex. This module compiles it into the
//! same language as a short list of pieces and simulates that list as a set of states, one input unit
//! at a time, so matching costs at most (path length × pattern length) steps and never backtracks.
//! Matching works on UTF-16 code units, as the JavaScript regex (without the `u` flag) does: `?`
//! matches one code unit and `.` excludes the four JavaScript line terminators.

/// Longest glob (in UTF-16 code units) that is compiled at all.
pub(crate) const MAX_GLOB_UNITS: usize = 200;

/// Most `*` characters a glob may contain.
pub(crate) const MAX_GLOB_STARS: usize = 6;

/// At most this many UTF-16 units of a glob's literal prefix and suffix are checked up front.
const AFFIX_UNITS: usize = 64;

/// A compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    pieces: Vec<Piece>,
    /// The literal text before the first wildcard and after the last one (at most
    /// [`AFFIX_UNITS`] of each): a path that does not start and end with them cannot match, which
    /// is checked before the state simulation.
    prefix: String,
    suffix: String,
}

/// Whether a reference is a glob: it contains `*` or `?` (brackets are not glob syntax).
pub(crate) fn is_glob(reference: &str) -> bool {
    // Byte searches (memchr) rather than a char-set scan: tokens can be megabytes long.
    let bytes = reference.as_bytes();
    bytes.contains(&b'*') || bytes.contains(&b'?')
}

/// The glob text used for matching and messages: the reference with `\` turned into `/`.
pub(crate) fn glob_text(reference: &str) -> String {
    reference.replace('\\', "/")
}

/// Whether a glob is too long (over 200 UTF-16 units) or has too many (over 6) `*` characters.
pub(crate) fn is_oversized(glob: &str) -> bool {
    crate::redact::utf16_len(glob) > MAX_GLOB_UNITS
        || glob.bytes().filter(|&it| it == b'*').count() > MAX_GLOB_STARS
}

impl Glob {
    /// Compiles a glob, scanning it left to right: `**/` at the start and `/**/` make an optional
    /// run of directories, other `**` match anything, `*` matches within one path segment, `?`
    /// matches one unit other than `/`, and every other character is literal.
    pub(crate) fn compile(glob: &str) -> Glob {
        let units: Vec<u16> = glob.encode_utf16().collect();
        let mut pieces = Vec::new();
        let mut idx = 0;
        while idx < units.len() {
            let next = |n: usize| units.get(idx + n).copied();
            match units[idx] {
                STAR if idx == 0 && next(1) == Some(STAR) && next(2) == Some(SLASH) => {
                    pieces.push(Piece::DirPrefix);
                    idx += 3;
                }
                STAR if next(1) == Some(STAR) => {
                    push_star(&mut pieces, Piece::Anything);
                    idx += 2;
                }
                STAR => {
                    push_star(&mut pieces, Piece::InSegment);
                    idx += 1;
                }
                SLASH
                    if next(1) == Some(STAR) && next(2) == Some(STAR) && next(3) == Some(SLASH) =>
                {
                    pieces.push(Piece::Unit(SLASH));
                    pieces.push(Piece::DirPrefix);
                    idx += 4;
                }
                QUESTION => {
                    pieces.push(Piece::OneInSegment);
                    idx += 1;
                }
                unit => {
                    pieces.push(Piece::Unit(unit));
                    idx += 1;
                }
            }
        }
        let literal = |run: &mut dyn Iterator<Item = &Piece>| -> Vec<u16> {
            run.map_while(|piece| match piece {
                Piece::Unit(unit) => Some(*unit),
                _ => None,
            })
            .take(AFFIX_UNITS)
            .collect()
        };
        let mut prefix = literal(&mut pieces.iter());
        let mut suffix = literal(&mut pieces.iter().rev());
        suffix.reverse();
        // Only whole characters: a cut may not fall inside a surrogate pair.
        if prefix.last().is_some_and(|unit| (0xd800..0xdc00).contains(unit)) {
            prefix.pop();
        }
        if suffix.first().is_some_and(|unit| (0xdc00..0xe000).contains(unit)) {
            suffix.remove(0);
        }
        let prefix = String::from_utf16_lossy(&prefix);
        let suffix = String::from_utf16_lossy(&suffix);
        Glob { pieces, prefix, suffix }
    }

    /// Whether the whole of `path` (a root-relative POSIX path) matches the glob.
    pub(crate) fn matches(&self, path: &str) -> bool {
        let bytes = path.as_bytes();
        if !bytes.starts_with(self.prefix.as_bytes()) || !bytes.ends_with(self.suffix.as_bytes()) {
            return false;
        }
        let mut states = StateSet::new(self.pieces.len());
        let mut current = Vec::new();
        self.add_state(&mut states, &mut current, before(0));
        let mut next = Vec::new();
        for unit in path.encode_utf16() {
            states.next_generation();
            next.clear();
            for &state in &current {
                self.step(&mut states, state, unit, &mut next);
            }
            std::mem::swap(&mut current, &mut next);
            if current.is_empty() {
                return false;
            }
        }
        current.contains(&before(self.pieces.len()))
    }

    /// Adds `state` and every state reachable from it without consuming input, skipping states the
    /// set already holds (their closure is in it too).
    fn add_state(&self, states: &mut StateSet, list: &mut Vec<usize>, state: usize) {
        let mut state = state;
        loop {
            if !states.insert(state) {
                return;
            }
            list.push(state);
            if is_in_prefix(state) {
                return;
            }
            let idx = state / 2;
            match self.pieces.get(idx) {
                Some(Piece::InSegment | Piece::Anything) => state = before(idx + 1),
                Some(Piece::DirPrefix) => {
                    if states.insert(in_prefix(idx)) {
                        list.push(in_prefix(idx));
                    }
                    state = before(idx + 1);
                }
                Some(Piece::Unit(_) | Piece::OneInSegment) | None => return,
            }
        }
    }

    /// Adds the states reached from `state` by consuming `unit`.
    fn step(&self, states: &mut StateSet, state: usize, unit: u16, next: &mut Vec<usize>) {
        let idx = state / 2;
        if is_in_prefix(state) {
            if is_line_terminator(unit) {
                return;
            }
            self.add_state(states, next, state);
            if unit == SLASH {
                self.add_state(states, next, before(idx + 1));
            }
            return;
        }
        match self.pieces.get(idx) {
            Some(&Piece::Unit(expected)) if expected == unit => {
                self.add_state(states, next, before(idx + 1));
            }
            Some(Piece::OneInSegment) if unit != SLASH => {
                self.add_state(states, next, before(idx + 1));
            }
            Some(Piece::InSegment) if unit != SLASH => self.add_state(states, next, state),
            Some(Piece::Anything) if !is_line_terminator(unit) => {
                self.add_state(states, next, state)
            }
            _ => (),
        }
    }
}

/// One element of a compiled glob, with its regex equivalent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// A literal UTF-16 code unit.
    Unit(u16),
    /// `[^/]`
    OneInSegment,
    /// `[^/]*`
    InSegment,
    /// `.*` (JavaScript `.`: anything but a line terminator)
    Anything,
    /// `(?:.*/)?`
    DirPrefix,
}

/// The states of one simulation step, deduplicated with generation stamps.
///
/// State `2 * idx` is "before piece `idx`"; state `2 * idx + 1` is "inside the `.*` of the
/// `DirPrefix` at `idx`".
struct StateSet {
    stamps: Vec<u64>,
    generation: u64,
}

impl StateSet {
    fn new(n_pieces: usize) -> StateSet {
        StateSet { stamps: vec![0; 2 * n_pieces + 2], generation: 1 }
    }

    fn next_generation(&mut self) {
        self.generation += 1;
    }

    /// Marks `state` as present in this step; false when it already was.
    fn insert(&mut self, state: usize) -> bool {
        if self.stamps[state] == self.generation {
            return false;
        }
        self.stamps[state] = self.generation;
        true
    }
}

fn before(idx: usize) -> usize {
    2 * idx
}

fn in_prefix(idx: usize) -> usize {
    2 * idx + 1
}

fn is_in_prefix(state: usize) -> bool {
    state % 2 == 1
}

const SLASH: u16 = b'/' as u16;
const STAR: u16 = b'*' as u16;
const QUESTION: u16 = b'?' as u16;

/// Pushes a star piece, merging it with a directly preceding one of the same kind (`.*.*` is `.*`),
/// which keeps runs of stars from inflating the state set. Different kinds stay apart: `.*[^/]*`
/// also matches a line terminator, which `.*` alone does not.
fn push_star(pieces: &mut Vec<Piece>, star: Piece) {
    if pieces.last() != Some(&star) {
        pieces.push(star);
    }
}

/// The units JavaScript's `.` does not match: LF, CR, U+2028 and U+2029.
fn is_line_terminator(unit: u16) -> bool {
    matches!(unit, 0x0a | 0x0d | 0x2028 | 0x2029)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::{Duration, Instant};

    use crate::testutil::XorShift;

    fn check(glob: &str, path: &str, expected: bool) {
        assert_eq!(Glob::compile(glob).matches(path), expected, "glob {glob:?} on path {path:?}");
    }

    #[test]
    fn double_star_directory_in_the_middle() {
        check("src/**/*.ts", "src/a.ts", true);
        check("src/**/*.ts", "src/deep/b.ts", true);
        check("src/**/*.ts", "src/deep/er/c.ts", true);
        check("src/**/*.ts", "src/a.js", false);
        check("src/**/*.ts", "lib/a.ts", false);
    }

    #[test]
    fn double_star_directory_at_the_start() {
        check("**/*.md", "README.md", true);
        check("**/*.md", "docs/guide/x.md", true);
        check("**/*.ts", "a.ts", true);
        check("**/*.ts", "a.tsx", false);
    }

    #[test]
    fn single_star_stays_in_one_segment() {
        check("src/*.rs", "src/main.rs", true);
        check("src/*.rs", "src/files/glob.rs", false);
        check("*", "a.ts", true);
        check("*", "nested/b.md", false);
        check("*.txt", ".hidden.txt", true);
    }

    #[test]
    fn other_double_stars_cross_directories() {
        check("a**", "a/b/c", true);
        check("src**.ts", "src/x/y.ts", true);
        check("**", "any/thing/at/all", true);
        check("a/**", "a/", true);
        check("a/**", "a", false);
    }

    #[test]
    fn question_mark_is_one_unit_but_not_a_slash() {
        check("?.ts", "a.ts", true);
        check("?.ts", "ab.ts", false);
        check("a?b", "a/b", false);
        check("?.txt", "é.txt", true);
        check("??.txt", "😀.txt", true);
        check("?.txt", "😀.txt", false);
    }

    #[test]
    fn literal_prefix_and_suffix_filter_first() {
        let glob = Glob::compile("src/*é😀.ts");
        assert_eq!((glob.prefix.as_str(), glob.suffix.as_str()), ("src/", "é😀.ts"));
        check("src/*é😀.ts", "src/aé😀.ts", true);
        check("src/*é😀.ts", "src/a😀.ts", false);
        check("😀?😀", "😀x😀", true);
        check("😀?😀", "😀", false);
        let long = format!("{}*{}", "😀".repeat(40), "é😀".repeat(40));
        let glob = Glob::compile(&long);
        assert_eq!((glob.prefix.chars().count(), glob.suffix.chars().count()), (32, 42));
        assert!(glob.matches(&format!("{}x{}", "😀".repeat(40), "é😀".repeat(40))));
        assert_eq!(Glob::compile("**/x").prefix, "");
    }

    #[test]
    fn everything_else_is_literal() {
        check("a.?s", "a.ts", true);
        check("a.*", "abts", false);
        check("[ab].*", "[ab].ts", true);
        check("[ab].*", "a.ts", false);
        check("(x)+$^{1}|.*", "(x)+$^{1}|.md", true);
        check("src/*.ts", "SRC/a.ts", false);
    }

    #[test]
    fn dot_excludes_line_terminators() {
        check("**", "a\nb", false);
        check("**/x*", "a\u{2028}b/x", false);
        check("*", "a\nb", true);
    }

    #[test]
    fn slash_double_star_slash_may_be_empty() {
        check("a/**/b", "a/b", true);
        check("a/**/b", "a/x/y/b", true);
        check("a/**/b", "ab", false);
        check("a/**/**/b", "a/x/b", true);
    }

    #[test]
    fn runs_of_stars_merge() {
        assert_eq!(Glob::compile("a****b"), Glob::compile("a**b"));
        assert_eq!(Glob::compile("a**b").pieces.len(), 3);
        assert_eq!(Glob::compile("a***b").pieces.len(), 4);
        assert_eq!(Glob::compile(&"*".repeat(1 << 20)).pieces.len(), 1);
        assert_eq!(Glob::compile(&"*".repeat((1 << 20) + 1)).pieces.len(), 2);
    }

    #[test]
    fn a_star_after_a_double_star_still_matches_line_terminators() {
        // Found by the glob fuzz target (minimized: glob `***`, path `\r`): `***` is `.*[^/]*`,
        // and `[^/]*` matches the line terminators that `.*` does not.
        check("***", "\r", true);
        check("***", "a\nb", true);
        check("a***.txt", "a\u{2028}x.txt", true);
        check("***", "a/b\nc", true);
        check("***", "a\n/b", false);
        check("**", "a\nb", false);
    }

    #[test]
    fn backslashes_become_slashes() {
        assert_eq!(glob_text(r"src\**\*.ts"), "src/**/*.ts");
    }

    #[test]
    fn glob_detection() {
        assert!(is_glob("src/*.ts"));
        assert!(is_glob("a?"));
        assert!(!is_glob("[ab].ts"));
        assert!(!is_glob("src/a.ts"));
    }

    #[test]
    fn size_bounds() {
        assert!(!is_oversized(&"a".repeat(200)));
        assert!(is_oversized(&"a".repeat(201)));
        assert!(is_oversized(&format!("{}*", "a".repeat(249))));
        assert!(!is_oversized("******"));
        assert!(is_oversized("*******"));
        assert!(is_oversized(&format!("{}ab", "a**".repeat(20))));
        assert!(!is_oversized(&"😀".repeat(100)));
        assert!(is_oversized(&"😀".repeat(101)));
    }

    #[test]
    fn pathological_pattern_is_linear() {
        let glob = Glob::compile(&format!("{}ab", "a**".repeat(20)));
        let path = "a".repeat(5_000);
        let started = Instant::now();
        assert!(!glob.matches(&path));
        assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
    }

    /// A direct backtracking interpretation of the regex the original builds, for short inputs only.
    fn reference_match(pieces: &[Piece], path: &[u16]) -> bool {
        let Some((first, rest)) = pieces.split_first() else { return path.is_empty() };
        match *first {
            Piece::Unit(unit) => path.first() == Some(&unit) && reference_match(rest, &path[1..]),
            Piece::OneInSegment => {
                path.first().is_some_and(|&it| it != SLASH) && reference_match(rest, &path[1..])
            }
            Piece::InSegment | Piece::Anything => {
                let allowed = |unit: u16| match first {
                    Piece::InSegment => unit != SLASH,
                    _ => !is_line_terminator(unit),
                };
                let run = path.iter().take_while(|&&it| allowed(it)).count();
                (0..=run).any(|taken| reference_match(rest, &path[taken..]))
            }
            Piece::DirPrefix => {
                let run = path.iter().take_while(|&&it| !is_line_terminator(it)).count();
                reference_match(rest, path)
                    || (0..run).any(|slash| {
                        path[slash] == SLASH && reference_match(rest, &path[slash + 1..])
                    })
            }
        }
    }

    /// A random string of at most `max_len` characters from `alphabet`.
    fn random_string(rng: &mut XorShift, alphabet: &[char], max_len: usize) -> String {
        let len = rng.below(max_len + 1);
        (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect()
    }

    #[test]
    fn random_globs_agree_with_the_backtracking_reference() {
        let glob_alphabet = ['a', 'b', '/', '*', '*', '?', '.', '\n', '😀'];
        let path_alphabet = ['a', 'b', '/', '.', '\n', '😀'];
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        for _ in 0..5_000 {
            let glob = Glob::compile(&random_string(&mut rng, &glob_alphabet, 8));
            let path = random_string(&mut rng, &path_alphabet, 8);
            let units: Vec<u16> = path.encode_utf16().collect();
            assert_eq!(
                glob.matches(&path),
                reference_match(&glob.pieces, &units),
                "glob {glob:?} on path {path:?}"
            );
        }
    }

    #[test]
    fn one_megabyte_patterns_stay_fast() {
        const MB: usize = 1 << 20;
        let paths = ["a.ts", "src/deep/b.ts", "@*@*@*", &"@".repeat(1_000)];
        for pattern in ["*".repeat(MB), "@*".repeat(MB / 2), "@".repeat(MB), "?*/".repeat(MB / 3)] {
            let started = Instant::now();
            let glob = Glob::compile(&pattern);
            for path in paths {
                glob.matches(path);
            }
            assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
        }
    }
}
