//! Capability detection: which optional flags the installed agy advertises in its `--help` text.

use crate::js;

/// What `agy --help` advertises, one field per optional flag; a flag is sent only when its
/// capability is true.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgyCaps {
    pub output_format_json: bool,
    pub stream_json_input: bool,
    pub model_flag: bool,
    pub effort_flag: bool,
    pub json_schema_flag: bool,
    pub mode_flag: bool,
    pub add_dir_flag: bool,
    pub conversation_id: bool,
    /// Probed but never used (`--continue` is never sent).
    pub continue_flag: bool,
    pub print_timeout: bool,
    pub sandbox_flag: bool,
    pub dangerously_skip_permissions: bool,
    pub disable_slash_commands: bool,
    pub agent_flag: bool,
    pub log_file: bool,
}

impl AgyCaps {
    /// No capability at all (`NO_AGY_CAPABILITIES`): agy is invoked as a bare `agy -p <prompt>`.
    pub fn none() -> AgyCaps {
        AgyCaps::default()
    }

    /// Every capability, as on a current agy build.
    #[cfg(test)]
    pub fn all() -> AgyCaps {
        AgyCaps {
            output_format_json: true,
            stream_json_input: true,
            model_flag: true,
            effort_flag: true,
            json_schema_flag: true,
            mode_flag: true,
            add_dir_flag: true,
            conversation_id: true,
            continue_flag: true,
            print_timeout: true,
            sandbox_flag: true,
            dangerously_skip_permissions: true,
            disable_slash_commands: true,
            agent_flag: true,
            log_file: true,
        }
    }
}

/// Parses the help text (stdout and stderr concatenated) into capabilities; empty text → none.
pub fn parse_help(text: &str) -> AgyCaps {
    let flag = |name: &str| ends_at_boundary(text, name);
    AgyCaps {
        output_format_json: flag("--output-format") && contains_json_word(text),
        stream_json_input: flag("--input-format") && contains_word(text, "stream-json"),
        model_flag: flag("--model"),
        effort_flag: flag("--effort"),
        json_schema_flag: flag("--json-schema"),
        mode_flag: flag("--mode"),
        add_dir_flag: flag("--add-dir"),
        conversation_id: flag("--conversation"),
        continue_flag: flag("--continue") || has_short_c(text),
        print_timeout: flag("--print-timeout"),
        sandbox_flag: flag("--sandbox"),
        dangerously_skip_permissions: flag("--dangerously-skip-permissions"),
        disable_slash_commands: flag("--disable-slash-commands"),
        agent_flag: flag("--agent"),
        log_file: flag("--log-file"),
    }
}

/// ASCII word character, as in a JavaScript regex without the `u` flag.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether a word boundary sits between the byte before `idx` and the byte at `idx`.
///
/// `needle_side` is the word-ness of the needle's own character next to the boundary.
fn boundary(hay: &[u8], idx: usize, before: bool, needle_side: bool) -> bool {
    let other = if before { idx.checked_sub(1).map(|i| hay[i]) } else { hay.get(idx).copied() };
    needle_side != other.is_some_and(is_word)
}

/// Byte offsets of every occurrence of `needle` in `hay`, optionally ASCII case-insensitive.
fn occurrences<'a>(
    hay: &'a [u8],
    needle: &'a [u8],
    ignore_case: bool,
) -> impl Iterator<Item = usize> + 'a {
    (0..hay.len().saturating_sub(needle.len() - 1)).filter(move |&i| {
        let window = &hay[i..i + needle.len()];
        if ignore_case { window.eq_ignore_ascii_case(needle) } else { window == needle }
    })
}

/// `<needle>\b`: an occurrence followed by a word boundary.
fn ends_at_boundary(text: &str, needle: &str) -> bool {
    let (hay, pat) = (text.as_bytes(), needle.as_bytes());
    let last_is_word = is_word(pat[pat.len() - 1]);
    occurrences(hay, pat, false).any(|i| boundary(hay, i + pat.len(), false, last_is_word))
}

/// `\b<needle>\b`, case-sensitive.
fn contains_word(text: &str, needle: &str) -> bool {
    word_match(text, needle, false)
}

/// `\bjson\b` with the `i` flag.
fn contains_json_word(text: &str) -> bool {
    word_match(text, "json", true)
}

fn word_match(text: &str, needle: &str, ignore_case: bool) -> bool {
    let (hay, pat) = (text.as_bytes(), needle.as_bytes());
    let first_is_word = is_word(pat[0]);
    let last_is_word = is_word(pat[pat.len() - 1]);
    occurrences(hay, pat, ignore_case).any(|i| {
        boundary(hay, i, true, first_is_word) && boundary(hay, i + pat.len(), false, last_is_word)
    })
}

/// `(^|\s)-c\b`: a `-c` at the start of the text or after a (JavaScript) whitespace character.
fn has_short_c(text: &str) -> bool {
    let hay = text.as_bytes();
    occurrences(hay, b"-c", false).any(|i| {
        let preceded = i == 0 || text[..i].chars().next_back().is_some_and(js::is_space);
        preceded && boundary(hay, i + 2, false, true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL_HELP: &str = "Usage: agy [options] [command]\n\
        \n\
        Options:\n\
        \x20 -p, --prompt <text>             Run headless\n\
        \x20 --output-format <format>        Output format (text, json, stream-json)\n\
        \x20 --input-format <format>         Input format (text, stream-json)\n\
        \x20 --model <id>                    Model\n\
        \x20 --effort <level>                Reasoning effort\n\
        \x20 --json-schema <schema>          Structured output\n\
        \x20 --mode <mode>                   Execution mode\n\
        \x20 --add-dir <dir>                 Extra workspace dir\n\
        \x20 --conversation <id>             Resume a conversation\n\
        \x20 -c, --continue                  Continue the last conversation\n\
        \x20 --print-timeout <duration>      Print-mode timeout\n\
        \x20 --sandbox                       Sandbox tools\n\
        \x20 --dangerously-skip-permissions  Skip approvals\n\
        \x20 --disable-slash-commands        No slash commands\n\
        \x20 --agent <name>                  Custom agent\n\
        \x20 --log-file <file>               Debug log\n";

    fn check(help: &str, expect: AgyCaps) {
        assert_eq!(parse_help(help), expect, "help text: {help:?}");
    }

    #[test]
    fn full_help_detects_everything() {
        check(FULL_HELP, AgyCaps::all());
    }

    #[test]
    fn empty_text_is_no_capabilities() {
        check("", AgyCaps::none());
        assert_eq!(AgyCaps::none(), AgyCaps::default());
    }

    #[test]
    fn output_format_json_conversation_continue_print_timeout() {
        let help = "  --output-format <fmt>  text, json\n  --conversation <id>\n  \
                    -c, --continue\n  --print-timeout <d>\n";
        let caps = parse_help(help);
        assert!(caps.output_format_json);
        assert!(caps.conversation_id);
        assert!(caps.continue_flag);
        assert!(caps.print_timeout);
        assert!(!caps.stream_json_input);
        assert!(!caps.model_flag);
    }

    #[test]
    fn help_without_json_has_no_output_format_json() {
        check("  --output-format <fmt>  text only\n", AgyCaps::none());
    }

    #[test]
    fn json_word_is_case_insensitive_and_bounded() {
        assert!(parse_help("--output-format JSON").output_format_json);
        assert!(parse_help("--output-format (Json)").output_format_json);
        assert!(parse_help("--output-format stream-json").output_format_json);
        assert!(!parse_help("--output-format jsonl").output_format_json);
        assert!(!parse_help("--output-format ndjson").output_format_json);
        assert!(!parse_help("--output-format_x json").output_format_json);
    }

    #[test]
    fn stream_json_from_input_format_line_not_output_format() {
        let only_output = "  --input-format <fmt>  text\n  --output-format <fmt>  text, json\n";
        assert!(!parse_help(only_output).stream_json_input);
        let with_input = "  --input-format <fmt>  (text, stream-json)\n";
        assert!(parse_help(with_input).stream_json_input);
        assert!(!parse_help("--input-format x Stream-JSON").stream_json_input);
        assert!(!parse_help("--input-format xstream-json").stream_json_input);
        assert!(!parse_help("--input-format stream-jsonl").stream_json_input);
    }

    #[test]
    fn disable_slash_commands_and_agent() {
        let caps = parse_help("  --disable-slash-commands\n  --agent <name>\n");
        assert_eq!(
            caps,
            AgyCaps { disable_slash_commands: true, agent_flag: true, ..AgyCaps::none() }
        );
    }

    #[test]
    fn model_does_not_imply_mode() {
        check("--model <id>", AgyCaps { model_flag: true, ..AgyCaps::none() });
        check("--mode <m>", AgyCaps { mode_flag: true, ..AgyCaps::none() });
        check("--models", AgyCaps::none());
        check("--mode_x", AgyCaps::none());
        check("--mode-x", AgyCaps { mode_flag: true, ..AgyCaps::none() });
        check("--mode", AgyCaps { mode_flag: true, ..AgyCaps::none() });
        check("--model=x", AgyCaps { model_flag: true, ..AgyCaps::none() });
    }

    #[test]
    fn short_c_needs_start_or_whitespace_before_and_boundary_after() {
        let cont = AgyCaps { continue_flag: true, ..AgyCaps::none() };
        check("-c", cont);
        check("  -c, --cont", cont);
        check("x\t-c ", cont);
        check("x\u{00A0}-c", cont);
        check("a-c", AgyCaps::none());
        check(" -cx", AgyCaps::none());
        check(" -c_", AgyCaps::none());
        check(" -c-", cont);
        check("--continue", cont);
        check("--continued", AgyCaps::none());
    }

    #[test]
    fn flags_inside_multibyte_text() {
        let caps = parse_help("é--sandboxé --effort");
        assert!(caps.sandbox_flag);
        assert!(caps.effort_flag);
        assert!(!parse_help("—-c").continue_flag);
    }
}
