//! Parses a changeMode model reply into edits: the `**FILE:**`/`OLD:`/`NEW:` format and the
//! legacy `/old/`/`/new/` format, with the exact match semantics of the original JS regexes.
//!
//! The original used two backtracking regexes. Both are reproduced here by hand, without a regex
//! engine: every part of a pattern that could backtrack is decided from sorted lists of literal
//! occurrences that are computed once per reply, so a parse is linear in the reply (plus a log
//! factor) and never panics, whatever the input.

use crate::js;

/// One edit the model asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub filename: String,
    pub old_start_line: u64,
    pub old_end_line: u64,
    pub old_code: String,
    pub new_start_line: u64,
    pub new_end_line: u64,
    pub new_code: String,
}

/// Parses every edit in `text`: the primary format first and, only when it finds nothing, the
/// legacy format.
pub fn parse_change_mode_output(text: &str) -> Vec<Edit> {
    let scan = Scan::new(text);
    let edits = parse_primary(&scan);
    if !edits.is_empty() {
        return edits;
    }
    parse_legacy(&scan)
}

/// The characters JS `.` does not match.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// The reply with the occurrence lists both formats need.
///
/// All positions are byte offsets. Every literal the patterns use is ASCII, so a match position
/// is always a char boundary, and a `\n` byte is always a whole character.
struct Scan<'a> {
    text: &'a str,
    /// Positions of `\n`, `\r`, U+2028 and U+2029, ascending.
    terminators: Vec<usize>,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Scan<'a> {
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        let bytes = text.as_bytes();
        let terminators = (0..bytes.len())
            .filter(|&i| match bytes[i] {
                b'\n' | b'\r' => true,
                0xe2 => {
                    bytes.get(i + 1..i + 3).is_some_and(|rest| matches!(rest, [0x80, 0xa8 | 0xa9]))
                }
                _ => false,
            })
            .collect();
        Scan { text, terminators }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn starts_with(&self, pos: usize, literal: &str) -> bool {
        self.bytes().get(pos..).is_some_and(|rest| rest.starts_with(literal.as_bytes()))
    }

    /// Every position where `needle` starts, overlapping occurrences included.
    fn find_all(&self, needle: &str) -> Vec<usize> {
        let mut acc = Vec::new();
        let mut from = 0;
        while let Some(found) = self.text.get(from..).and_then(|rest| rest.find(needle)) {
            acc.push(from + found);
            // Every needle starts with an ASCII byte, so one byte further is a char boundary.
            from += found + 1;
        }
        acc
    }

    /// End of the maximal run of JS whitespace that starts at `pos`.
    fn space_run_end(&self, pos: usize) -> usize {
        let mut i = pos;
        while let Some(len) = self.space_len_at(i) {
            i += len;
        }
        i
    }

    /// Position of the first `\n` in the whitespace run that starts at `pos`.
    fn first_newline_in_run(&self, pos: usize) -> Option<usize> {
        let mut i = pos;
        while let Some(len) = self.space_len_at(i) {
            if self.bytes()[i] == b'\n' {
                return Some(i);
            }
            i += len;
        }
        None
    }

    /// The byte length of the character at `pos` if it is JS whitespace.
    fn space_len_at(&self, pos: usize) -> Option<usize> {
        match *self.bytes().get(pos)? {
            b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' => Some(1),
            b if b.is_ascii() => None,
            _ => {
                let c = self.text.get(pos..)?.chars().next()?;
                js::is_space(c).then(|| c.len_utf8())
            }
        }
    }

    /// The last `\n` at or after `from` and before `before`.
    fn last_newline_before(&self, from: usize, before: usize) -> Option<usize> {
        let window = self.bytes().get(from..before)?;
        window.iter().rposition(|&b| b == b'\n').map(|offset| from + offset)
    }

    /// End of the run of ASCII digits that starts at `pos`.
    fn digits_end(&self, pos: usize) -> usize {
        let rest = self.bytes().get(pos..).unwrap_or(&[]);
        pos + rest.iter().take_while(|b| b.is_ascii_digit()).count()
    }

    /// Whether `[from, to)` holds no character JS `.` refuses.
    fn single_line(&self, from: usize, to: usize) -> bool {
        first_at_or_after(&self.terminators, from).is_none_or(|t| t >= to)
    }

    /// The whitespace run at `pos` ends with `\n` and `literal` follows it: JS `\s*\n<literal>`.
    /// Returns the position after the literal.
    fn spaces_newline_then(&self, pos: usize, literal: &str) -> Option<usize> {
        let end = self.space_run_end(pos);
        let ends_with_newline = end > pos && self.bytes()[end - 1] == b'\n';
        (ends_with_newline && self.starts_with(end, literal)).then_some(end + literal.len())
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.text.get(from..to).unwrap_or("")
    }
}

/// The first element of an ascending list that is at least `pos`.
fn first_at_or_after(list: &[usize], pos: usize) -> Option<usize> {
    list.get(list.partition_point(|&x| x < pos)).copied()
}

/// Parses a run of ASCII digits like JS `parseInt(s, 10)`, saturating instead of losing precision.
fn parse_line_number(digits: &str) -> u64 {
    digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0u64, |acc, b| acc.saturating_mul(10).saturating_add(u64::from(b - b'0')))
}

/// `0` for an empty text, else the number of lines.
fn line_count(code: &str) -> u64 {
    if code.is_empty() {
        return 0;
    }
    code.bytes().filter(|&b| b == b'\n').count() as u64 + 1
}

// The primary format:
//
//   \*\*FILE:\s*(.+?):(\d+)\*\*\s*\n```\s*\nOLD:\s*\n([\s\S]*?)\nNEW:\s*\n([\s\S]*?)\n```
//
// Read right to left, each part is either deterministic or decided by one list:
// * `([\s\S]*?)\n```` from `q` ends at the first fence at or after `q`, so it can succeed exactly
//   when `q <= last fence`.
// * `NEW:\s*\n` then that: the greedy `\s*` tries the newlines of the run after `NEW:` from the
//   last one back, so it takes the last newline before the last fence.
// * `([\s\S]*?)\nNEW:` takes the first `\nNEW:` that can be completed (a "good NEW").
// * `OLD:\s*\n` takes the last newline of its run that lies before the last good NEW.
// * `\*\*\s*\n```` and ````\s*\nOLD:` need the newline to be the last character of the run,
//   because a non-space literal follows it.
// * `(\d+)\*\*` takes every digit (a digit can never match `*`).
// * `(.+?):` takes the first colon on the line that can be completed.

/// Occurrence lists for the primary format.
struct Primary<'s, 'a> {
    scan: &'s Scan<'a>,
    /// Positions of `\n` followed by three backticks.
    fences: Vec<usize>,
    /// Positions of `\nNEW:` whose `\s*\n` can be followed by a closing fence.
    good_new: Vec<usize>,
    /// Positions of colons that `:(\d+)\*\*…` can be completed from.
    good_colons: Vec<usize>,
}

impl<'s, 'a> Primary<'s, 'a> {
    fn new(scan: &'s Scan<'a>) -> Primary<'s, 'a> {
        let fences = scan.find_all("\n```");
        let last_fence = fences.last().copied();
        let good_new = scan
            .find_all("\nNEW:")
            .into_iter()
            .filter(|&u| {
                let newline = scan.first_newline_in_run(u + 5);
                matches!((newline, last_fence), (Some(nl), Some(fence)) if nl < fence)
            })
            .collect();
        let mut primary = Primary { scan, fences, good_new, good_colons: Vec::new() };
        primary.good_colons =
            scan.find_all(":").into_iter().filter(|&h| primary.colon_completes(h)).collect();
        primary
    }

    /// `:(\d+)\*\*\s*\n```\s*\nOLD:\s*\n…` can match at `colon`.
    fn colon_completes(&self, colon: usize) -> bool {
        let digits_end = self.scan.digits_end(colon + 1);
        if digits_end == colon + 1 || !self.scan.starts_with(digits_end, "**") {
            return false;
        }
        self.opening_fence(digits_end + 2)
            .and_then(|after_fence| self.scan.spaces_newline_then(after_fence, "OLD:"))
            .is_some_and(|after_old| self.old_newline(after_old).is_some())
    }

    /// `\s*\n```` at `pos`; returns the position after the fence.
    fn opening_fence(&self, pos: usize) -> Option<usize> {
        self.scan.spaces_newline_then(pos, "```")
    }

    /// The newline `OLD:\s*\n` ends with, given the position after `OLD:`.
    fn old_newline(&self, after_old: usize) -> Option<usize> {
        let last_good_new = *self.good_new.last()?;
        let first = self.scan.first_newline_in_run(after_old)?;
        if first >= last_good_new {
            return None;
        }
        let run_end = self.scan.space_run_end(after_old).min(last_good_new);
        self.scan.last_newline_before(after_old, run_end)
    }

    /// The newline `NEW:\s*\n` ends with, given the position after `NEW:`.
    fn new_newline(&self, after_new: usize) -> Option<usize> {
        let last_fence = *self.fences.last()?;
        let run_end = self.scan.space_run_end(after_new).min(last_fence);
        self.scan.last_newline_before(after_new, run_end)
    }

    /// The end of group 1 (the colon) for a match that starts at `start`.
    fn filename_end(&self, start: usize) -> Option<(usize, usize)> {
        let after_label = start + "**FILE:".len();
        let name_start = self.scan.space_run_end(after_label);
        // The greedy `\s*` keeps the whole run when a colon later on the line completes.
        if let Some(colon) = first_at_or_after(&self.good_colons, name_start + 1)
            && self.scan.single_line(name_start, colon)
        {
            return Some((name_start, colon));
        }
        // Otherwise `\s*` gives back one space so that `(.+?)` is that space and the colon right
        // after the run completes; giving back more only adds spaces or crosses a line end.
        let colon_right_after =
            first_at_or_after(&self.good_colons, name_start) == Some(name_start);
        if !colon_right_after || name_start == after_label {
            return None;
        }
        let before = self.scan.slice(after_label, name_start).chars().next_back()?;
        if is_line_terminator(before) {
            return None;
        }
        Some((name_start - before.len_utf8(), name_start))
    }

    /// The match starting at `start`, as an edit and the end of the match.
    fn match_at(&self, start: usize) -> Option<(Edit, usize)> {
        let (name_start, colon) = self.filename_end(start)?;
        let digits_end = self.scan.digits_end(colon + 1);
        let after_fence = self.opening_fence(digits_end + 2)?;
        let after_old = self.scan.spaces_newline_then(after_fence, "OLD:")?;
        let old_start = self.old_newline(after_old)? + 1;
        let new_label = first_at_or_after(&self.good_new, old_start)?;
        let new_start = self.new_newline(new_label + "\nNEW:".len())? + 1;
        let fence = first_at_or_after(&self.fences, new_start)?;

        let start_line = parse_line_number(self.scan.slice(colon + 1, digits_end));
        let old_code = js::trim_end(self.scan.slice(old_start, new_label));
        let new_code = js::trim_end(self.scan.slice(new_start, fence));
        let edit = Edit {
            filename: js::trim(self.scan.slice(name_start, colon)).to_owned(),
            old_start_line: start_line,
            old_end_line: start_line.saturating_add(line_count(old_code).saturating_sub(1)),
            old_code: old_code.to_owned(),
            new_start_line: start_line,
            new_end_line: start_line.saturating_add(line_count(new_code).saturating_sub(1)),
            new_code: new_code.to_owned(),
        };
        Some((edit, fence + "\n```".len()))
    }
}

fn parse_primary(scan: &Scan<'_>) -> Vec<Edit> {
    let starts = scan.find_all("**FILE:");
    if starts.is_empty() {
        return Vec::new();
    }
    let primary = Primary::new(scan);
    let mut edits = Vec::new();
    let mut last_index = 0;
    for start in starts {
        if start < last_index {
            continue;
        }
        if let Some((edit, end)) = primary.match_at(start) {
            edits.push(edit);
            last_index = end;
        }
    }
    edits
}

// The legacy format:
//
//   \/old\/ \* (.+?) 'start:' (\d+)\n([\s\S]*?)\n\/\/ 'end:' (\d+)\s*\n\s*\\new\\ \* (.+?)
//   'start:' (\d+)\n([\s\S]*?)\n\/\/ 'end:' (\d+)
//
// (one line in the original). The ancestor spelled the second marker `/new/`, the relay's
// specification spells it `\new\`; both are accepted. The same right-to-left reading applies:
// `(\d+)` parts take every digit, `\s*\n\s*` only needs one newline in the run before the marker,
// and each lazy part takes the first occurrence that can be completed.

const LEGACY_OLD: &str = "/old/ * ";
const LEGACY_NEW: [&str; 2] = ["/new/ * ", "\\new\\ * "];
const LEGACY_START: &str = " 'start:' ";
const LEGACY_END: &str = "\n// 'end:' ";

/// Occurrence lists for the legacy format.
struct Legacy<'s, 'a> {
    scan: &'s Scan<'a>,
    /// Positions of `\n// 'end:' ` followed by a digit.
    ends: Vec<usize>,
    /// Positions of ` 'start:' ` that complete as the new header.
    good_new_starts: Vec<usize>,
    /// Positions of end markers that complete the old block (the new header follows them).
    good_old_ends: Vec<usize>,
    /// Positions of ` 'start:' ` that complete as the old header.
    good_old_starts: Vec<usize>,
}

impl<'s, 'a> Legacy<'s, 'a> {
    fn new(scan: &'s Scan<'a>) -> Legacy<'s, 'a> {
        let ends: Vec<usize> = scan
            .find_all(LEGACY_END)
            .into_iter()
            .filter(|&u| scan.digits_end(u + LEGACY_END.len()) > u + LEGACY_END.len())
            .collect();
        let starts = scan.find_all(LEGACY_START);
        let mut legacy = Legacy {
            scan,
            ends,
            good_new_starts: Vec::new(),
            good_old_ends: Vec::new(),
            good_old_starts: Vec::new(),
        };
        let last_end = legacy.ends.last().copied();
        legacy.good_new_starts = starts
            .iter()
            .copied()
            .filter(|&h| {
                legacy.code_start(h).is_some_and(|code| last_end.is_some_and(|e| code <= e))
            })
            .collect();
        legacy.good_old_ends =
            legacy.ends.iter().copied().filter(|&u| legacy.new_marker_after(u).is_some()).collect();
        let last_old_end = legacy.good_old_ends.last().copied();
        legacy.good_old_starts = starts
            .iter()
            .copied()
            .filter(|&h| {
                legacy.code_start(h).is_some_and(|code| last_old_end.is_some_and(|e| code <= e))
            })
            .collect();
        legacy
    }

    /// ` 'start:' (\d+)\n` at `start`; returns the position after the newline.
    fn code_start(&self, start: usize) -> Option<usize> {
        let digits = start + LEGACY_START.len();
        let digits_end = self.scan.digits_end(digits);
        let newline = digits_end > digits && self.scan.starts_with(digits_end, "\n");
        newline.then_some(digits_end + 1)
    }

    /// `\n// 'end:' (\d+)\s*\n\s*<new marker>` at `end`; returns the position after the marker
    /// when the new header can also be completed there.
    fn new_marker_after(&self, end: usize) -> Option<usize> {
        let digits_end = self.scan.digits_end(end + LEGACY_END.len());
        self.scan.first_newline_in_run(digits_end)?;
        let marker = self.scan.space_run_end(digits_end);
        let marker_end = LEGACY_NEW
            .iter()
            .find(|literal| self.scan.starts_with(marker, literal))
            .map(|literal| marker + literal.len())?;
        self.filename_end(marker_end, &self.good_new_starts)?;
        Some(marker_end)
    }

    /// `(.+?) 'start:'` from `name_start`: the first completing header on the same line.
    fn filename_end(&self, name_start: usize, good_starts: &[usize]) -> Option<usize> {
        let header = first_at_or_after(good_starts, name_start + 1)?;
        self.scan.single_line(name_start, header).then_some(header)
    }

    /// The match starting at `start`, as the two filenames, an edit and the end of the match.
    fn match_at(&self, start: usize) -> Option<(String, String, Edit, usize)> {
        let old_name_start = start + LEGACY_OLD.len();
        let old_header = self.filename_end(old_name_start, &self.good_old_starts)?;
        let old_code_start = self.code_start(old_header)?;
        let old_end = first_at_or_after(&self.good_old_ends, old_code_start)?;
        let new_name_start = self.new_marker_after(old_end)?;
        let new_header = self.filename_end(new_name_start, &self.good_new_starts)?;
        let new_code_start = self.code_start(new_header)?;
        let new_end = first_at_or_after(&self.ends, new_code_start)?;

        let old_end_digits = old_end + LEGACY_END.len();
        let new_end_digits = new_end + LEGACY_END.len();
        let number = |from: usize, to: usize| parse_line_number(self.scan.slice(from, to));
        let old_name = self.scan.slice(old_name_start, old_header);
        let new_name = self.scan.slice(new_name_start, new_header);
        let match_end = self.scan.digits_end(new_end_digits);
        let edit = Edit {
            filename: js::trim(old_name).to_owned(),
            old_start_line: number(old_header + LEGACY_START.len(), old_code_start - 1),
            old_end_line: number(old_end_digits, self.scan.digits_end(old_end_digits)),
            old_code: js::trim_end(self.scan.slice(old_code_start, old_end)).to_owned(),
            new_start_line: number(new_header + LEGACY_START.len(), new_code_start - 1),
            new_end_line: number(new_end_digits, match_end),
            new_code: js::trim_end(self.scan.slice(new_code_start, new_end)).to_owned(),
        };
        Some((old_name.to_owned(), new_name.to_owned(), edit, match_end))
    }
}

fn parse_legacy(scan: &Scan<'_>) -> Vec<Edit> {
    let starts = scan.find_all(LEGACY_OLD);
    if starts.is_empty() {
        return Vec::new();
    }
    let legacy = Legacy::new(scan);
    let mut edits = Vec::new();
    let mut last_index = 0;
    for start in starts {
        if start < last_index {
            continue;
        }
        let Some((old_name, new_name, edit, end)) = legacy.match_at(start) else {
            continue;
        };
        last_index = end;
        if old_name != new_name {
            log::warn!("[changeModeParser] Filename mismatch: {old_name} vs {new_name}");
            continue;
        }
        edits.push(edit);
    }
    edits
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    use crate::changemode::tests::measure;
    use crate::testutil::XorShift;

    /// An expected edit: filename, old start/end, old code, new start/end, new code.
    type Expect<'a> = (&'a str, u64, u64, &'a str, u64, u64, &'a str);

    /// Parses `text` and compares every field of every edit. The expectations of the tricky
    /// cases were taken from the original JS regexes run by node.
    fn check(text: &str, expect: &[Expect<'_>]) {
        let got: Vec<Expect<'_>> = parse_change_mode_output(text)
            .iter()
            .map(|e| {
                (
                    leak(&e.filename),
                    e.old_start_line,
                    e.old_end_line,
                    leak(&e.old_code),
                    e.new_start_line,
                    e.new_end_line,
                    leak(&e.new_code),
                )
            })
            .collect();
        assert_eq!(got, expect, "input: {text:?}");
    }

    fn leak(text: &str) -> &'static str {
        Box::leak(text.to_owned().into_boxed_str())
    }

    fn block(file_and_line: &str, old: &str, new: &str) -> String {
        format!("**FILE: {file_and_line}**\n```\nOLD:\n{old}\nNEW:\n{new}\n```\n")
    }

    #[test]
    fn single_edit() {
        check(
            &block("src/a.ts:1", "const x = 1;", "const x = 2;"),
            &[("src/a.ts", 1, 1, "const x = 1;", 1, 1, "const x = 2;")],
        );
    }

    #[test]
    fn line_arithmetic() {
        check(
            &block("a.ts:10", "one\ntwo\nthree", "single"),
            &[("a.ts", 10, 12, "one\ntwo\nthree", 10, 10, "single")],
        );
        check(&block("a.ts:0", "x", "y\nz"), &[("a.ts", 0, 0, "x", 0, 1, "y\nz")]);
    }

    #[test]
    fn multiple_edits_in_order() {
        let text = format!(
            "Here you go.\n\n{}\nSome prose.\n{}{}",
            block("a.ts:1", "a", "b"),
            block("b.ts:5", "c", "d"),
            block("a.ts:9", "e", "f")
        );
        check(
            &text,
            &[
                ("a.ts", 1, 1, "a", 1, 1, "b"),
                ("b.ts", 5, 5, "c", 5, 5, "d"),
                ("a.ts", 9, 9, "e", 9, 9, "f"),
            ],
        );
    }

    #[test]
    fn language_tagged_fence_does_not_parse() {
        check("**FILE: a.ts:1**\n```ts\nOLD:\nx\nNEW:\ny\n```", &[]);
        check("**FILE: a.ts:1**\n````\nOLD:\nx\nNEW:\ny\n```", &[]);
    }

    #[test]
    fn empty_old_section() {
        check(
            "**FILE: a.ts:4**\n```\nOLD:\n\nNEW:\nadded\n```",
            &[("a.ts", 4, 4, "", 4, 4, "added")],
        );
    }

    #[test]
    fn empty_new_section() {
        check(
            "**FILE: a.ts:3**\n```\nOLD:\nremove me\nNEW:\n\n```",
            &[("a.ts", 3, 3, "remove me", 3, 3, "")],
        );
    }

    #[test]
    fn empty_old_swallows_the_next_block_like_the_original() {
        // The greedy `OLD:\s*\n` keeps both newlines when a later `\nNEW:` exists.
        let text = "**FILE: a.ts:1**\n```\nOLD:\n\nNEW:\nadded\n```\n\n\
                    **FILE: b.ts:2**\n```\nOLD:\nx\nNEW:\ny\n```";
        check(
            text,
            &[("a.ts", 1, 8, "NEW:\nadded\n```\n\n**FILE: b.ts:2**\n```\nOLD:\nx", 1, 1, "y")],
        );
    }

    #[test]
    fn blank_lines_are_swallowed_and_indentation_kept() {
        let text = "**FILE: a.ts:7**\n\n\n```\n\nOLD:\n\n\n    indented\n  more\n\n\n\
                    NEW:\n\n\n\tnew\n\n```";
        check(text, &[("a.ts", 7, 8, "    indented\n  more", 7, 7, "\tnew")]);
    }

    #[test]
    fn spaces_after_markers_are_allowed() {
        check(
            "**FILE: a.ts:3**  \n```   \nOLD:  \nx\nNEW:\t\ny\n```",
            &[("a.ts", 3, 3, "x", 3, 3, "y")],
        );
    }

    #[test]
    fn unicode_spaces_count_as_js_whitespace() {
        check(
            "**FILE:\u{a0}a.ts\u{a0}:3**\u{a0}\n```\u{3000}\nOLD:\u{2028}\nx\u{a0}\nNEW:\n y \u{a0}\n```",
            &[("a.ts", 3, 3, "x", 3, 3, " y")],
        );
    }

    #[test]
    fn crlf_reply_parses_with_inner_carriage_returns() {
        check(
            "**FILE: a.ts:1**\r\n```\r\nOLD:\r\nx\r\ny\r\nNEW:\r\nz\r\n```",
            &[("a.ts", 1, 2, "x\r\ny", 1, 1, "z")],
        );
    }

    #[test]
    fn filename_is_lazy_up_to_the_first_completing_colon() {
        let text = format!("{}{}", block("C:/x.ts:5", "x", "y"), block("a:1:2", "x", "y"));
        check(&text, &[("C:/x.ts", 5, 5, "x", 5, 5, "y"), ("a:1", 2, 2, "x", 2, 2, "y")]);
    }

    #[test]
    fn filename_is_trimmed_and_may_end_up_empty() {
        check(&block("  spaced.ts  :2", "x", "y"), &[("spaced.ts", 2, 2, "x", 2, 2, "y")]);
        check("**FILE: :1**\n```\nOLD:\nx\nNEW:\ny\n```", &[("", 1, 1, "x", 1, 1, "y")]);
    }

    #[test]
    fn filename_never_spans_lines() {
        check("**FILE: a\nb.ts:1**\n```\nOLD:\nx\nNEW:\ny\n```", &[]);
    }

    #[test]
    fn codes_are_trimmed_at_the_end_only() {
        check(&block("a.ts:1", "  x  \n\n", "\ty \t"), &[("a.ts", 1, 1, "  x", 1, 1, "\ty")]);
    }

    #[test]
    fn missing_parts_do_not_parse() {
        check("**FILE: a.ts:1**\n```\nOLD:\nx\nNEW:\ny", &[]);
        check("**FILE: a.ts**\n```\nOLD:\nx\nNEW:\ny\n```", &[]);
        check("**FILE: a.ts:1**\n```\nx\nNEW:\ny\n```", &[]);
        check("**FILE: a.ts:1** ```\nOLD:\nx\nNEW:\ny\n```", &[]);
        check("", &[]);
        check("No edits here, just prose.", &[]);
    }

    #[test]
    fn huge_line_numbers_saturate() {
        check(
            &block("a.ts:99999999999999999999999", "x", "y"),
            &[("a.ts", u64::MAX, u64::MAX, "x", u64::MAX, u64::MAX, "y")],
        );
    }

    fn legacy(old_name: &str, new_marker: &str, new_name: &str) -> String {
        format!(
            "/old/ * {old_name} 'start:' 3\nbefore\n// 'end:' 4\n\n{new_marker} * {new_name} 'start:' 3\n\
             after\nmore\n// 'end:' 5"
        )
    }

    #[test]
    fn legacy_format() {
        check(
            &legacy("src/a.ts", "/new/", "src/a.ts"),
            &[("src/a.ts", 3, 4, "before", 3, 5, "after\nmore")],
        );
    }

    #[test]
    fn legacy_format_with_backslash_marker() {
        check(&legacy("a.ts", "\\new\\", "a.ts"), &[("a.ts", 3, 4, "before", 3, 5, "after\nmore")]);
    }

    #[test]
    fn legacy_line_numbers_are_literal() {
        let text =
            "/old/ * a.ts 'start:' 9\nx\n// 'end:' 2\n/new/ * a.ts 'start:' 7\ny\n// 'end:' 1";
        check(text, &[("a.ts", 9, 2, "x", 7, 1, "y")]);
    }

    #[test]
    fn legacy_filename_mismatch_is_skipped() {
        let text =
            format!("{}\n{}", legacy("a.ts", "/new/", "b.ts"), legacy("c.ts", "/new/", "c.ts"));
        check(&text, &[("c.ts", 3, 4, "before", 3, 5, "after\nmore")]);
        // Filenames are compared before trimming.
        check(&legacy("a.ts ", "/new/", "a.ts"), &[]);
    }

    #[test]
    fn legacy_is_only_a_fallback() {
        let text = format!("{}\n{}", legacy("a.ts", "/new/", "a.ts"), block("b.ts:1", "x", "y"));
        check(&text, &[("b.ts", 1, 1, "x", 1, 1, "y")]);
    }

    const PIECES: &[&str] = &[
        "**FILE:",
        "**FILE: ",
        " ",
        "\n",
        "\n",
        "\r\n",
        "\r",
        "```",
        "\n```",
        "\n```\n",
        "OLD:",
        "OLD:\n",
        "\nNEW:",
        "NEW:\n",
        ":",
        "1",
        "23",
        "**",
        "a.ts",
        "\t",
        "\u{a0}",
        "\u{2028}",
        "`",
        "*",
        "/old/ * ",
        "/new/ * ",
        "\\new\\ * ",
        " 'start:' ",
        "\n// 'end:' ",
        "é",
        "😀",
        "\u{3000}",
        "\u{feff}",
        ":7**\n",
        "\n\n",
    ];

    /// Random concatenations of format fragments: the parser must never panic and must agree
    /// with itself on a suffix that starts at a match boundary.
    #[test]
    fn random_inputs_never_panic() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let started = Instant::now();
        let mut with_edits = 0;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..rng.below(40) {
                text.push_str(PIECES[rng.below(PIECES.len())]);
            }
            if rng.below(3) == 0 {
                text.push_str(&block("x.ts:1", "a", "b"));
            }
            let edits = parse_change_mode_output(&text);
            with_edits += usize::from(!edits.is_empty());
            for edit in &edits {
                assert!(edit.old_end_line >= edit.old_start_line || edit.old_code.is_empty());
            }
        }
        assert!(with_edits > 500, "the generator should produce parsable inputs: {with_edits}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    fn repeat_to_1mb(unit: &str) -> String {
        unit.repeat((1 << 20) / unit.len() + 1)
    }

    /// Parses a 1 MB adversarial input and requires it to finish well under a second of the
    /// thread's CPU time (time spent waiting for a core on a busy machine does not count).
    fn check_fast(text: &str, expect_edits: usize) {
        let mut edits = Vec::new();
        let elapsed = measure(|| edits = parse_change_mode_output(text));
        assert_eq!(edits.len(), expect_edits);
        assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    }

    #[test]
    fn fast_on_stars() {
        check_fast(&repeat_to_1mb("*"), 0);
    }

    #[test]
    fn fast_on_backticks() {
        check_fast(&repeat_to_1mb("`"), 0);
        check_fast(&repeat_to_1mb("\n```"), 0);
    }

    #[test]
    fn fast_on_repeated_file_markers() {
        check_fast(&repeat_to_1mb("**FILE:"), 0);
        check_fast(&repeat_to_1mb("**FILE: a:1**"), 0);
        check_fast(&repeat_to_1mb("**FILE: a:1**\n```\nOLD:\n"), 0);
    }

    #[test]
    fn fast_on_colons_digits_and_spaces() {
        check_fast(&repeat_to_1mb(":1"), 0);
        check_fast(&format!("**FILE:{}", repeat_to_1mb(" ")), 0);
        check_fast(&format!("**FILE: a{}", repeat_to_1mb(":1**")), 0);
        check_fast(&repeat_to_1mb("\n"), 0);
    }

    #[test]
    fn fast_on_unclosed_blocks() {
        // Each match's NEW section runs on to the next unit's opening fence, so units pair up
        // (32 bytes a unit, 32,769 units); node's regex finds the same 16,384 matches.
        check_fast(&repeat_to_1mb("**FILE: a:1**\n```\nOLD:\nx\nNEW:\ny\n"), 16_384);
        check_fast(&repeat_to_1mb("\nNEW:\n"), 0);
        let mut text = repeat_to_1mb("**FILE: a:1**\n```\nOLD:\n\n");
        text.push_str("\nNEW:\n\n```");
        check_fast(&text, 1);
    }

    #[test]
    fn fast_on_many_real_blocks() {
        let unit = block("a.ts:1", "x", "y");
        check_fast(&repeat_to_1mb(&unit), (1 << 20) / unit.len() + 1);
    }

    #[test]
    fn fast_on_legacy_fragments() {
        check_fast(&repeat_to_1mb("/old/ * a 'start:' 1\n"), 0);
        check_fast(&repeat_to_1mb("/old/ * a 'start:' 1\nx\n// 'end:' 1\n"), 0);
        check_fast(&repeat_to_1mb(" 'start:' "), 0);
        let unit = "/old/ * a 'start:' 1\nx\n// 'end:' 2\n/new/ * a 'start:' 1\ny\n// 'end:' 2\n";
        check_fast(&repeat_to_1mb(unit), (1 << 20) / unit.len() + 1);
    }
}
