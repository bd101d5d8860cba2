//! What `gemini-relay config <host>` says differently on Windows: where each host keeps its
//! configuration there, the binary's path as a person would type it, and PowerShell quoting for the
//! one host whose snippet is a command line. The JSON and TOML snippets need nothing of their own:
//! their string escaping already doubles every backslash of a Windows path.

use crate::hosts::Host;

/// Where `host` keeps its configuration on Windows: the user's file (every host resolves `~` to
/// `%USERPROFILE%` there) and the project's, relative to the project root.
pub(crate) fn config_locations(host: Host) -> (&'static str, &'static str) {
    match host {
        Host::Claude => (r"%USERPROFILE%\.claude\settings.json", r".claude\settings.json"),
        Host::Codex => (r"%USERPROFILE%\.codex\config.toml", r".codex\config.toml"),
        Host::Gemini => (r"%USERPROFILE%\.gemini\settings.json", r".gemini\settings.json"),
        Host::Qwen => (r"%USERPROFILE%\.qwen\settings.json", r".qwen\settings.json"),
        Host::Opencode => (r"%USERPROFILE%\.config\opencode\opencode.json", "opencode.json"),
        Host::Cursor => (r"%USERPROFILE%\.cursor\mcp.json", r".cursor\mcp.json"),
        Host::Agy => (r"%USERPROFILE%\.gemini\config\mcp_config.json", r".agents\mcp_config.json"),
    }
}

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

    fn check_locations(host: Host, user: &str, project: &str) {
        assert_eq!(config_locations(host), (user, project), "{}", host.name());
    }

    #[test]
    fn every_host_has_its_windows_locations() {
        check_locations(
            Host::Claude,
            r"%USERPROFILE%\.claude\settings.json",
            r".claude\settings.json",
        );
        check_locations(Host::Codex, r"%USERPROFILE%\.codex\config.toml", r".codex\config.toml");
        check_locations(
            Host::Gemini,
            r"%USERPROFILE%\.gemini\settings.json",
            r".gemini\settings.json",
        );
        check_locations(Host::Qwen, r"%USERPROFILE%\.qwen\settings.json", r".qwen\settings.json");
        check_locations(
            Host::Opencode,
            r"%USERPROFILE%\.config\opencode\opencode.json",
            "opencode.json",
        );
        check_locations(Host::Cursor, r"%USERPROFILE%\.cursor\mcp.json", r".cursor\mcp.json");
        check_locations(
            Host::Agy,
            r"%USERPROFILE%\.gemini\config\mcp_config.json",
            r".agents\mcp_config.json",
        );
    }

    #[test]
    fn locations_use_windows_separators_only() {
        for host in Host::ALL {
            let (user, project) = config_locations(host);
            assert!(user.starts_with(r"%USERPROFILE%\"), "{user}");
            assert!(!user.contains('/') && !project.contains('/'), "{user} {project}");
        }
    }

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
    fn json_and_toml_snippets_carry_windows_paths_escaped() {
        let config = crate::config::Config::from_env(|name| {
            (name == "AGY_CLI_PATH").then(|| r"C:\Users\me\agy.exe".to_string())
        });
        let binary = shown_binary_path(r"\\?\C:\Program Files\gemini-relay.exe");
        let cwd = std::path::Path::new("/");
        for host in [Host::Gemini, Host::Qwen, Host::Opencode, Host::Cursor, Host::Agy] {
            let text = crate::hosts::render(host, &binary, cwd, &config).unwrap().text;
            assert!(text.contains(r#""C:\\Program Files\\gemini-relay.exe""#), "{text}");
            assert!(text.contains(r#"C:\\Users\\me\\agy.exe""#), "{text}");
        }
        let codex = crate::hosts::render(Host::Codex, &binary, cwd, &config).unwrap().text;
        assert!(codex.contains(r#"command = "C:\\Program Files\\gemini-relay.exe""#), "{codex}");
    }

    #[test]
    fn single_quotes_are_doubled() {
        check_word(r"C:\Users\O'Brien\gemini-relay.exe", r"'C:\Users\O''Brien\gemini-relay.exe'");
        check_word("it\u{2019}s", "'it\u{2019}\u{2019}s'");
    }
}
