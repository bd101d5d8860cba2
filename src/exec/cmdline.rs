//! The Windows command-line budget: how long the command line is that std's `Command` builds for a
//! program and its arguments, and the refusal when it exceeds what `CreateProcessW` accepts, so the
//! relay fails before spawning rather than letting Windows fail or cut the prompt.

/// The most UTF-16 units `CreateProcessW` takes in one command line, its terminating NUL included.
pub(crate) const COMMAND_LINE_LIMIT: usize = 32_767;

/// The UTF-16 length of the command line std's `Command` builds for `program` and `args`, without
/// the terminating NUL. The program is always wrapped in quotes, unescaped. Each argument follows a
/// space and is quoted only when it is empty or holds a space or a tab; a `"` becomes `\"`, with
/// the backslashes right before it doubled, and in a quoted argument the backslashes right before
/// the closing quote are doubled too.
pub(crate) fn command_line_units(program: &str, args: &[String]) -> usize {
    let mut units = 2 + program.encode_utf16().count();
    for arg in args {
        units += 1 + argument_units(arg);
    }
    units
}

fn argument_units(arg: &str) -> usize {
    let quoted = arg.is_empty() || arg.contains([' ', '\t']);
    let mut units = 0;
    let mut backslashes = 0;
    for unit in arg.encode_utf16() {
        if unit == u16::from(b'\\') {
            backslashes += 1;
        } else {
            if unit == u16::from(b'"') {
                units += backslashes + 1;
            }
            backslashes = 0;
        }
        units += 1;
    }
    match quoted {
        true => units + backslashes + 2,
        false => units,
    }
}

/// `Err` with the refusal text when the command line of `program` and `args` would not fit;
/// `cli` names the CLI in it.
pub(crate) fn check_command_line(cli: &str, program: &str, args: &[String]) -> Result<(), String> {
    let n = command_line_units(program, args) + 1;
    match n <= COMMAND_LINE_LIMIT {
        true => Ok(()),
        false => Err(command_line_too_long_text(cli, n)),
    }
}

/// The error for a command line over the limit; `n` counts its UTF-16 units and the terminating
/// NUL, like the limit the text states, so the text appears exactly when `n` exceeds it.
pub(crate) fn command_line_too_long_text(cli: &str, n: usize) -> String {
    format!(
        "The command line is {n} characters; {cli} accepts at most {COMMAND_LINE_LIMIT} characters in one command line."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expected` is the command line written out by hand.
    fn check(program: &str, args: &[&str], expected: &str) {
        let args: Vec<String> = args.iter().map(|it| it.to_string()).collect();
        let units = command_line_units(program, &args);
        assert_eq!(units, expected.encode_utf16().count(), "{program} {args:?} → {expected}");
    }

    #[test]
    fn the_program_is_always_quoted() {
        check(r"C:\bin\agy.exe", &[], r#""C:\bin\agy.exe""#);
        check(r"C:\Program Files\agy\agy.exe", &[], r#""C:\Program Files\agy\agy.exe""#);
        check(r"C:\trail\", &[], r#""C:\trail\""#);
    }

    #[test]
    fn plain_arguments_are_copied() {
        check("agy", &["-p", "hello"], r#""agy" -p hello"#);
        check(
            "agy",
            &["--model", "gemini-3.8-flash-high"],
            r#""agy" --model gemini-3.8-flash-high"#,
        );
        check("agy", &["%PATH%", "&calc", "a|b", "x^y"], r#""agy" %PATH% &calc a|b x^y"#);
    }

    #[test]
    fn empty_arguments_become_two_quotes() {
        check("agy", &[""], r#""agy" """#);
        check("agy", &["", ""], r#""agy" "" """#);
    }

    #[test]
    fn spaces_and_tabs_quote_an_argument() {
        check("agy", &["two words"], r#""agy" "two words""#);
        check("agy", &["a\tb"], "\"agy\" \"a\tb\"");
        check("agy", &[" "], r#""agy" " ""#);
    }

    #[test]
    fn other_whitespace_does_not_quote() {
        check("agy", &["a\nb"], "\"agy\" a\nb");
        check("agy", &["a\rb\u{b}"], "\"agy\" a\rb\u{b}");
    }

    #[test]
    fn quotes_are_escaped() {
        check("agy", &[r#"a"b"#], r#""agy" a\"b"#);
        check("agy", &[r#"""#], r#""agy" \""#);
        check("agy", &[r#"say "hi" now"#], r#""agy" "say \"hi\" now""#);
    }

    #[test]
    fn backslashes_before_a_quote_are_doubled() {
        check("agy", &[r#"a\"b"#], r#""agy" a\\\"b"#);
        check("agy", &[r#"\\""#], r#""agy" \\\\\""#);
        check("agy", &[r#"a\\\" b"#], r#""agy" "a\\\\\\\" b""#);
    }

    #[test]
    fn other_backslashes_are_copied() {
        check("agy", &[r"C:\dir\file"], r#""agy" C:\dir\file"#);
        check("agy", &[r"path\"], r#""agy" path\"#);
        check("agy", &[r"a\\b"], r#""agy" a\\b"#);
    }

    #[test]
    fn trailing_backslashes_of_a_quoted_argument_are_doubled() {
        check("agy", &[r"dir name\"], r#""agy" "dir name\\""#);
        check("agy", &[r"a b\\"], r#""agy" "a b\\\\""#);
        check("agy", &[r"a\ b"], r#""agy" "a\ b""#);
    }

    #[test]
    fn characters_count_in_utf16_units() {
        check("agy", &["é"], "\"agy\" é");
        check("agy", &["😀"], "\"agy\" 😀");
        assert_eq!(command_line_units("agy", &["😀".to_string()]), 8);
        check(r"C:\Users\Zoë\agy.exe", &["日本 語"], "\"C:\\Users\\Zoë\\agy.exe\" \"日本 語\"");
    }

    #[test]
    fn a_node_shim_command_line() {
        check(
            r"C:\Program Files\nodejs\node.exe",
            &[
                r"C:\Users\me\AppData\Roaming\npm\node_modules\@google\gemini-cli\dist\index.js",
                "-m",
                "gemini-2.5-pro",
            ],
            r#""C:\Program Files\nodejs\node.exe" C:\Users\me\AppData\Roaming\npm\node_modules\@google\gemini-cli\dist\index.js -m gemini-2.5-pro"#,
        );
    }

    fn check_budget(prompt_units: usize, expected: Result<(), String>) {
        // `"agy" -p ` is 9 units before the prompt.
        let args = vec!["-p".to_string(), "x".repeat(prompt_units)];
        assert_eq!(check_command_line("agy", "agy", &args), expected, "{prompt_units}");
    }

    #[test]
    fn the_budget_counts_the_terminating_nul() {
        check_budget(32_767 - 9 - 1, Ok(()));
        check_budget(32_767 - 9, Err(command_line_too_long_text("agy", 32_768)));
        check_budget(40_000, Err(command_line_too_long_text("agy", 40_010)));
        check_budget(0, Ok(()));
    }

    #[test]
    fn the_budget_counts_escapes() {
        // Each `"` takes two units: 9 + 2 × 16,378 + 1 = 32,766.
        let quotes = vec!["-p".to_string(), "\"".repeat(16_378)];
        assert_eq!(check_command_line("agy", "agy", &quotes), Ok(()));
        let quotes = vec!["-p".to_string(), "\"".repeat(16_378), "\"".to_string()];
        let expected = Err(command_line_too_long_text("agy", 32_769));
        assert_eq!(check_command_line("agy", "agy", &quotes), expected);
    }

    #[test]
    fn the_refusal_text() {
        assert_eq!(
            command_line_too_long_text("agy", 40_010),
            "The command line is 40010 characters; agy accepts at most 32767 characters in one command line."
        );
        assert_eq!(
            command_line_too_long_text("gemini", 32_768),
            "The command line is 32768 characters; gemini accepts at most 32767 characters in one command line."
        );
    }
}
