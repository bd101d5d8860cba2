//! What a CLI printed, made safe to show a person or a host: terminal control sequences (colours,
//! title changes, clipboard writes, screen clears) and other control characters are removed, and a
//! bare carriage return becomes a newline. Newlines and tabs stay.

use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The C1 forms of CSI and of the string introducers (DCS, SOS, OSC, PM, APC), and ST.
const C1_CSI: char = '\u{9b}';
const C1_STRINGS: [char; 5] = ['\u{90}', '\u{98}', '\u{9d}', '\u{9e}', '\u{9f}'];
const C1_ST: char = '\u{9c}';

/// `text` without control sequences and control characters other than newline and tab; a
/// carriage return not followed by a newline becomes one. Borrowed when there is nothing to remove.
pub fn strip(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => (),
            '\r' => out.push('\n'),
            ESC => escape_sequence(&mut chars),
            C1_CSI => control_sequence(&mut chars),
            c if C1_STRINGS.contains(&c) => control_string(&mut chars),
            c if c.is_control() => (),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Skips what follows an ESC: a CSI sequence (`ESC [`), a control string (`ESC ]`, `ESC P`,
/// `ESC X`, `ESC ^`, `ESC _`), or intermediates and a final character (`ESC ( B`, `ESC c`).
fn escape_sequence(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            control_sequence(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            control_string(chars);
        }
        Some(' '..='/') => {
            while chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
            chars.next_if(|c| matches!(c, '0'..='~'));
        }
        Some('0'..='~') => {
            chars.next();
        }
        _ => (),
    }
}

/// Skips a CSI sequence's parameters and intermediates, and its final character.
fn control_sequence(chars: &mut Peekable<Chars<'_>>) {
    while chars.next_if(|c| matches!(c, '0'..='?' | ' '..='/')).is_some() {}
    chars.next_if(|c| matches!(c, '@'..='~'));
}

/// Skips a control string up to and including its terminator: BEL, `ESC \` or ST (or the end).
fn control_string(chars: &mut Peekable<Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | C1_ST => return,
            ESC if chars.peek() == Some(&'\\') => {
                chars.next();
                return;
            }
            _ => (),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_controls_is_borrowed() {
        assert!(matches!(strip("plain\ttext\nhere é😀"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_go_whole() {
        let cases = [
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}[2J\u{1b}[Hclear", "clear"),
            ("\u{1b}[?25lhidden cursor\u{1b}[?25h", "hidden cursor"),
            ("\u{1b}]0;a title\u{7}after", "after"),
            ("\u{1b}]52;c;ZXZpbA==\u{1b}\\after", "after"),
            ("\u{1b}]8;;http://x\u{9c}link", "link"),
            ("\u{1b}Pdevice\u{1b}\\x", "x"),
            ("\u{1b}(Bcharset", "charset"),
            ("\u{1b}creset", "reset"),
            ("\u{9b}1mC1\u{9d}0;t\u{7}!", "C1!"),
            ("an unterminated \u{1b}]0;title", "an unterminated "),
            ("a lone escape at the end \u{1b}", "a lone escape at the end "),
        ];
        for (text, want) in cases {
            assert_eq!(strip(text), want, "{text:?}");
        }
    }

    #[test]
    fn carriage_returns_and_other_controls() {
        assert_eq!(strip("10%\r20%\r\n"), "10%\n20%\n");
        assert_eq!(strip("a\u{0}b\u{7}c\u{8}d\u{7f}e\u{85}f"), "abcdef");
        assert_eq!(strip("tab\tand\nnewline\r"), "tab\tand\nnewline\n");
    }
}
