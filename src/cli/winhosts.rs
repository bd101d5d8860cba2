//! What `gemini-relay config <host>` writes differently on Windows: the binary's path as a person
//! would type it, and PowerShell quoting for the one host whose snippet is a command line. Each
//! host's Windows files are in the hosts' own table, beside the POSIX ones. The JSON and TOML
//! snippets need nothing of their own: their string escaping already doubles every backslash.

/// The binary's path as a host should launch it: the `\\?\` form that canonical paths carry is
/// turned back into the ordinary one (`\\?\C:\x` → `C:\x`, `\\?\UNC\srv\share` → `\\srv\share`),
/// which every host's launcher accepts. Other paths are returned as they are.
pub(crate) fn shown_binary_path(path: &str) -> String {
    if let Some(unc) = path.strip_prefix(r"\\?\UNC\") {
        return format!(r"\\{unc}");
    }
    match path.strip_prefix(r"\\?\") {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => rest.to_string(),
        _ => path.to_string(),
    }
}

/// One PowerShell word: left bare when every character is plainly safe there, else a single-quoted
/// string, where nothing expands and a single quote is written twice. A comma is not plain: bare,
/// it makes an array of the word when the command is a script, such as npm's `.ps1` shims.
pub(crate) fn powershell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'_' | b'-' | b'.' | b'/' | b'\\' | b':' | b'=' | b'+')
        })
        && !text.starts_with('-');
    if plain {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        // PowerShell also ends a single-quoted string at the typographic single quotes.
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_shown(path: &str, expected: &str) {
        assert_eq!(shown_binary_path(path), expected, "{path}");
    }

    #[test]
    fn verbatim_paths_are_shown_ordinarily() {
        check_shown(r"\\?\C:\Tools\gemini-relay.exe", r"C:\Tools\gemini-relay.exe");
        check_shown(r"\\?\UNC\srv\share\gemini-relay.exe", r"\\srv\share\gemini-relay.exe");
        check_shown(r"C:\Program Files\gemini-relay.exe", r"C:\Program Files\gemini-relay.exe");
        check_shown(r"\\srv\share\gemini-relay.exe", r"\\srv\share\gemini-relay.exe");
        check_shown(r"\\?\Volume{1234}\gemini-relay.exe", r"\\?\Volume{1234}\gemini-relay.exe");
    }

    fn check_word(text: &str, expected: &str) {
        assert_eq!(powershell_word(text), expected, "{text}");
    }

    #[test]
    fn plain_words_stay_bare() {
        check_word(r"C:\Tools\gemini-relay.exe", r"C:\Tools\gemini-relay.exe");
        check_word("GEMINI_MCP_TIMEOUT=30", "GEMINI_MCP_TIMEOUT=30");
    }

    #[test]
    fn other_words_are_single_quoted() {
        check_word(r"C:\Program Files\gemini-relay.exe", r"'C:\Program Files\gemini-relay.exe'");
        check_word("AGY_CLI_PATH=$HOME\\agy.exe", "'AGY_CLI_PATH=$HOME\\agy.exe'");
        check_word("a`b", "'a`b'");
        check_word("%PATH%;x", "'%PATH%;x'");
        check_word("", "''");
        check_word("-x", "'-x'");
        check_word("GEMINI_MCP_MODEL=a,b", "'GEMINI_MCP_MODEL=a,b'");
    }

    #[test]
    fn single_quotes_are_doubled() {
        check_word(r"C:\Users\O'Brien\gemini-relay.exe", r"'C:\Users\O''Brien\gemini-relay.exe'");
        check_word("it\u{2019}s", "'it\u{2019}\u{2019}s'");
    }
}
