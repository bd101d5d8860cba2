//! `gemini-relay config <host>`: a ready-to-paste MCP configuration for Claude Code, Codex,
//! Gemini CLI, Qwen Code and opencode, with the running binary's path, the relay's own variables that
//! change something, and the host's tool timeout raised to the relay's deadline plus 2 minutes.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::backend::agy::args::sh_single_quote;
use crate::config::{self, Config};

/// A host that `gemini-relay config` writes a configuration for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    Claude,
    Codex,
    Gemini,
    Qwen,
    Opencode,
}

/// A host's configuration, split by where it goes.
#[derive(Debug)]
pub struct Snippet {
    /// The configuration itself, for stdout: valid shell, TOML or JSON, with its explanation in
    /// comments where the format has them.
    pub text: String,
    /// Where the snippet goes and why its timeout is there, for stderr, when the format has no
    /// comments (JSON); empty otherwise.
    pub note: String,
}

impl Host {
    /// Every host, in the order messages name them.
    pub const ALL: [Host; 5] =
        [Host::Claude, Host::Codex, Host::Gemini, Host::Qwen, Host::Opencode];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Qwen => "qwen",
            Host::Opencode => "opencode",
        }
    }

    /// The host named `name` on the command line.
    pub fn parse(name: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|host| host.name() == name)
    }
}

/// The known host names, comma-separated, for messages.
pub fn known_hosts() -> String {
    Host::ALL.map(Host::name).join(", ")
}

/// The configuration that makes `host` launch the relay at `binary` (an absolute path) with the
/// variables of `config` that change something.
pub fn render(host: Host, binary: &str, config: &Config) -> Snippet {
    let facts = Facts::new(binary, config);
    match host {
        Host::Claude => claude(&facts),
        Host::Codex => codex(&facts),
        Host::Gemini => Snippet {
            text: json_text(&mcp_servers(&facts)),
            note: gemini_note("Gemini CLI", ".gemini", &facts),
        },
        Host::Qwen => Snippet {
            text: json_text(&mcp_servers(&facts)),
            note: gemini_note("Qwen Code", ".qwen", &facts),
        },
        Host::Opencode => opencode(&facts),
    }
}

/// What the host waits beyond the relay's deadline, so that the relay's own timeout result (with
/// the CLI's partial output) reaches the host instead of the host's cut.
const MARGIN: Duration = Duration::from_secs(120);

/// Claude Code's own tool-call timeout when `MCP_TOOL_TIMEOUT` is unset: 100,000,000 ms, about
/// 28 hours (Claude Code 2.1.332).
const CLAUDE_DEFAULT_TOOL_TIMEOUT_MS: u64 = 100_000_000;

/// The server's name in every host's configuration.
const NAME: &str = "gemini-relay";

/// What every host's configuration is made of.
struct Facts<'a> {
    binary: &'a str,
    /// The relay's variables that change something, in `ENV_VARS` order, with their raw values.
    env: Vec<(&'static str, &'a str)>,
    /// The relay's deadline plus `MARGIN`, in milliseconds.
    timeout_ms: u64,
}

impl<'a> Facts<'a> {
    fn new(binary: &'a str, config: &'a Config) -> Facts<'a> {
        let env = config
            .set
            .iter()
            .filter(|(name, _)| changes_something(name, config))
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let timeout_ms = u64::try_from((config.timeout + MARGIN).as_millis()).unwrap_or(u64::MAX);
        Facts { binary, env, timeout_ms }
    }

    /// The host timeout in whole seconds, rounded up so that it never falls short of the deadline.
    fn timeout_secs(&self) -> u64 {
        self.timeout_ms.div_ceil(1000)
    }
}

/// Whether the relay's variable `name`, which is set, changes anything: a numeric variable that
/// comes out at its default (its default written out, or an invalid value that falls back to it)
/// does not, nor does an `AGY_MCP_PTY` that leaves recovery off. The others always do: the
/// backend's default depends on the date and setting it silences the migration notice, and the
/// agy path and print timeout have no fixed default.
fn changes_something(name: &str, config: &Config) -> bool {
    match name {
        "GEMINI_MCP_TIMEOUT" => {
            config.timeout != Duration::from_secs_f64(config::DEFAULT_TIMEOUT_MINUTES * 60.0)
        }
        "GEMINI_MCP_PROGRESS_INTERVAL_MS" => {
            config.progress_interval != Duration::from_millis(config::DEFAULT_PROGRESS_INTERVAL_MS)
        }
        "GEMINI_MCP_MAX_MESSAGE_BYTES" => {
            config.max_message_bytes as u64 != config::DEFAULT_MAX_MESSAGE_BYTES
        }
        "GEMINI_MCP_MAX_OUTPUT_BYTES" => {
            config.max_output_bytes as u64 != config::DEFAULT_MAX_OUTPUT_BYTES
        }
        "AGY_MCP_PTY" => config.agy_pty,
        _ => true,
    }
}

/// Claude Code: a `claude mcp add` command line; `MCP_TOOL_TIMEOUT` only when its default is too
/// short.
fn claude(facts: &Facts) -> Snippet {
    let mut command = format!("claude mcp add --scope user {NAME}");
    for (name, value) in &facts.env {
        command.push_str(" -e ");
        command.push_str(&shell_word(&format!("{name}={value}")));
    }
    command.push_str(" -- ");
    command.push_str(&shell_word(facts.binary));
    let mut text = String::from(
        "# Claude Code: run this once in a shell (--scope user: for all your projects).\n",
    );
    if facts.timeout_ms > CLAUDE_DEFAULT_TOOL_TIMEOUT_MS {
        text.push_str(&format!(
            "{command}\n\
             # Claude Code gives up on a tool call after {CLAUDE_DEFAULT_TOOL_TIMEOUT_MS} ms, before \
             the relay's deadline plus 2 minutes:\n\
             # start it with this variable set (or put it under \"env\" in ~/.claude/settings.json).\n\
             export MCP_TOOL_TIMEOUT={}\n",
            facts.timeout_ms
        ));
    } else {
        text.push_str(&format!(
            "# No timeout to raise: Claude Code's own ({CLAUDE_DEFAULT_TOOL_TIMEOUT_MS} ms) outlasts \
             the relay's deadline plus 2 minutes.\n\
             {command}\n"
        ));
    }
    Snippet { text, note: String::new() }
}

/// Codex: a `[mcp_servers.gemini-relay]` table for `config.toml`.
fn codex(facts: &Facts) -> Snippet {
    let mut text = format!(
        "# Codex: add this to ~/.codex/config.toml (or to a trusted project's .codex/config.toml).\n\
         [mcp_servers.{NAME}]\n\
         command = {}\n",
        toml_string(facts.binary)
    );
    if !facts.env.is_empty() {
        let pairs: Vec<String> = facts
            .env
            .iter()
            .map(|(name, value)| format!("{name} = {}", toml_string(value)))
            .collect();
        text.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
    }
    text.push_str(&format!(
        "# The relay's deadline plus 2 minutes: Codex would otherwise stop a long call first.\n\
         tool_timeout_sec = {}\n",
        facts.timeout_secs()
    ));
    Snippet { text, note: String::new() }
}

/// Gemini CLI and Qwen Code: an `mcpServers` entry for `settings.json`.
fn mcp_servers(facts: &Facts) -> Value {
    let mut server = Map::new();
    server.insert("command".into(), facts.binary.into());
    if !facts.env.is_empty() {
        server.insert("env".into(), env_object(facts));
    }
    server.insert("timeout".into(), facts.timeout_ms.into());
    json!({ "mcpServers": { NAME: server } })
}

/// Where Gemini CLI's or Qwen Code's snippet goes (`dir` is its settings directory) and why.
fn gemini_note(host: &str, dir: &str, facts: &Facts) -> String {
    format!(
        "{host}: merge this into ~/{dir}/settings.json (or into the project's {dir}/settings.json).\n\
         \"timeout\" ({} ms) is the relay's deadline plus 2 minutes: {host} would otherwise stop a \
         long call after 600000 ms.\n",
        facts.timeout_ms
    )
}

/// opencode: an `mcp` entry for `opencode.json`.
fn opencode(facts: &Facts) -> Snippet {
    let mut server = Map::new();
    server.insert("type".into(), "local".into());
    server.insert("command".into(), json!([facts.binary]));
    if !facts.env.is_empty() {
        server.insert("environment".into(), env_object(facts));
    }
    server.insert("enabled".into(), true.into());
    server.insert("timeout".into(), facts.timeout_ms.into());
    Snippet {
        text: json_text(&json!({ "mcp": { NAME: server } })),
        note: format!(
            "opencode: merge this into ~/.config/opencode/opencode.json (or into the project's \
             opencode.json).\n\
             \"timeout\" ({} ms) is the relay's deadline plus 2 minutes: opencode applies it to \
             every request to the relay, tool calls included.\n",
            facts.timeout_ms
        ),
    }
}

fn env_object(facts: &Facts) -> Value {
    let env: Map<String, Value> =
        facts.env.iter().map(|(name, value)| (name.to_string(), Value::from(*value))).collect();
    Value::Object(env)
}

/// Pretty JSON with a final newline (serde_json escapes every string correctly).
fn json_text(value: &Value) -> String {
    format!("{value:#}\n")
}

/// A TOML basic string: quotes, backslashes and control characters escaped
/// (<https://toml.io/en/v1.0.0#string>).
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One POSIX shell word: left bare when every byte is plainly safe, single-quoted otherwise (a
/// single quote inside becomes `'\''`).
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'_' | b'-' | b'.' | b'/' | b':' | b'=' | b'@' | b'%' | b'+' | b',')
        });
    if plain { text.to_string() } else { sh_single_quote(text) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINARY: &str = "/path/to/gemini-relay";

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_env(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    fn text(host: Host, pairs: &[(&str, &str)]) -> String {
        render(host, BINARY, &config(pairs)).text
    }

    fn json(host: Host, pairs: &[(&str, &str)]) -> Value {
        serde_json::from_str(&text(host, pairs)).unwrap()
    }

    /// The value of `key = …` in the Codex table.
    fn codex_value(pairs: &[(&str, &str)], key: &str) -> Option<String> {
        let text = text(Host::Codex, pairs);
        let prefix = format!("{key} = ");
        text.lines().find_map(|line| line.strip_prefix(&prefix)).map(str::to_string)
    }

    #[test]
    fn host_names_round_trip_and_unknown_names_are_refused() {
        for host in Host::ALL {
            assert_eq!(Host::parse(host.name()), Some(host));
        }
        for bad in ["", "Claude", "codex ", "cursor", "gemini-cli"] {
            assert_eq!(Host::parse(bad), None, "{bad:?}");
        }
        assert_eq!(known_hosts(), "claude, codex, gemini, qwen, opencode");
    }

    #[test]
    fn codex_default() {
        assert_eq!(
            text(Host::Codex, &[]),
            "# Codex: add this to ~/.codex/config.toml (or to a trusted project's .codex/config.toml).\n\
             [mcp_servers.gemini-relay]\n\
             command = \"/path/to/gemini-relay\"\n\
             # The relay's deadline plus 2 minutes: Codex would otherwise stop a long call first.\n\
             tool_timeout_sec = 2820\n"
        );
        assert!(render(Host::Codex, BINARY, &config(&[])).note.is_empty());
    }

    #[test]
    fn gemini_and_qwen_default() {
        for host in [Host::Gemini, Host::Qwen] {
            assert_eq!(
                json(host, &[]),
                json!({"mcpServers": {"gemini-relay": {
                    "command": "/path/to/gemini-relay",
                    "timeout": 2_820_000
                }}})
            );
        }
        let note = render(Host::Qwen, BINARY, &config(&[])).note;
        assert!(note.starts_with("Qwen Code: merge this into ~/.qwen/settings.json"), "{note}");
        assert!(note.contains("\"timeout\" (2820000 ms)"), "{note}");
    }

    #[test]
    fn opencode_default() {
        assert_eq!(
            json(Host::Opencode, &[]),
            json!({"mcp": {"gemini-relay": {
                "type": "local",
                "command": ["/path/to/gemini-relay"],
                "enabled": true,
                "timeout": 2_820_000
            }}})
        );
        let note = render(Host::Opencode, BINARY, &config(&[])).note;
        assert!(note.contains("~/.config/opencode/opencode.json"), "{note}");
    }

    #[test]
    fn claude_default_needs_no_timeout() {
        assert_eq!(
            text(Host::Claude, &[]),
            "# Claude Code: run this once in a shell (--scope user: for all your projects).\n\
             # No timeout to raise: Claude Code's own (100000000 ms) outlasts the relay's deadline \
             plus 2 minutes.\n\
             claude mcp add --scope user gemini-relay -- /path/to/gemini-relay\n"
        );
    }

    #[test]
    fn a_longer_deadline_raises_every_timeout() {
        let sixty = [("GEMINI_MCP_TIMEOUT", "60")];
        assert_eq!(codex_value(&sixty, "tool_timeout_sec").as_deref(), Some("3720"));
        assert_eq!(codex_value(&sixty, "env").as_deref(), Some("{ GEMINI_MCP_TIMEOUT = \"60\" }"));
        for host in [Host::Gemini, Host::Qwen] {
            let server = &json(host, &sixty)["mcpServers"]["gemini-relay"];
            assert_eq!(server["timeout"], 3_720_000);
            assert_eq!(server["env"], json!({"GEMINI_MCP_TIMEOUT": "60"}));
        }
        let server = &json(Host::Opencode, &sixty)["mcp"]["gemini-relay"];
        assert_eq!(server["timeout"], 3_720_000);
        assert_eq!(server["environment"], json!({"GEMINI_MCP_TIMEOUT": "60"}));
        assert!(text(Host::Claude, &sixty).contains(" -e GEMINI_MCP_TIMEOUT=60 -- "));
        assert!(!text(Host::Claude, &sixty).contains("MCP_TOOL_TIMEOUT"));
    }

    #[test]
    fn fractional_deadlines_give_whole_units_rounded_up() {
        // Half a minute: 30 s + 2 min.
        let half = [("GEMINI_MCP_TIMEOUT", "0.5")];
        assert_eq!(codex_value(&half, "tool_timeout_sec").as_deref(), Some("150"));
        assert_eq!(json(Host::Gemini, &half)["mcpServers"]["gemini-relay"]["timeout"], 150_000);
        // 1.0001 minutes is 60,006 ms: the host gets 180,006 ms, or 181 whole seconds (never 180,
        // which would cut the call 6 ms before the relay's own deadline).
        let odd = [("GEMINI_MCP_TIMEOUT", "1.0001")];
        assert_eq!(codex_value(&odd, "tool_timeout_sec").as_deref(), Some("181"));
        assert_eq!(json(Host::Opencode, &odd)["mcp"]["gemini-relay"]["timeout"], 180_006);
        // An exponent, and a value past a week (clamped to a week like the deadline itself).
        let exp = [("GEMINI_MCP_TIMEOUT", "1.5e1")];
        assert_eq!(codex_value(&exp, "tool_timeout_sec").as_deref(), Some("1020"));
        let huge = [("GEMINI_MCP_TIMEOUT", "1e9")];
        assert_eq!(codex_value(&huge, "tool_timeout_sec").as_deref(), Some("604920"));
    }

    #[test]
    fn claude_gets_mcp_tool_timeout_only_past_its_default() {
        // 1,664 minutes + 2 is 99,960,000 ms, under Claude Code's 100,000,000.
        assert!(
            !text(Host::Claude, &[("GEMINI_MCP_TIMEOUT", "1664")]).contains("MCP_TOOL_TIMEOUT")
        );
        // 1,665 minutes + 2 is 100,020,000 ms.
        let text = text(Host::Claude, &[("GEMINI_MCP_TIMEOUT", "1665")]);
        assert!(text.ends_with("\nexport MCP_TOOL_TIMEOUT=100020000\n"), "{text}");
        assert!(
            text.contains(
                "claude mcp add --scope user gemini-relay -e GEMINI_MCP_TIMEOUT=1665 -- "
            )
        );
    }

    #[test]
    fn only_variables_that_change_something_are_written() {
        let pairs = [
            ("GEMINI_MCP_TIMEOUT", "45"),
            ("GEMINI_MCP_PROGRESS_INTERVAL_MS", "25000"),
            ("GEMINI_MCP_MAX_MESSAGE_BYTES", "67108864"),
            ("GEMINI_MCP_MAX_OUTPUT_BYTES", "not a number"),
            ("AGY_MCP_PTY", "0"),
            ("GEMINI_MCP_BACKEND", "agy"),
            ("GEMINI_MCP_TEST_TOOLS", "1"),
        ];
        assert_eq!(
            json(Host::Gemini, &pairs)["mcpServers"]["gemini-relay"]["env"],
            json!({"GEMINI_MCP_BACKEND": "agy", "GEMINI_MCP_TEST_TOOLS": "1"})
        );
        let pairs = [
            ("GEMINI_MCP_MAX_OUTPUT_BYTES", "2048"),
            ("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100"),
            ("AGY_MCP_PTY", "yes"),
            ("AGY_CLI_PATH", "/opt/agy"),
            ("HOME", "/home/u"),
        ];
        // In `ENV_VARS` order, raw values, and never a variable that is not the relay's own.
        assert_eq!(
            codex_value(&pairs, "env").as_deref(),
            Some(
                "{ AGY_CLI_PATH = \"/opt/agy\", AGY_MCP_PTY = \"yes\", \
                 GEMINI_MCP_PROGRESS_INTERVAL_MS = \"100\", GEMINI_MCP_MAX_OUTPUT_BYTES = \"2048\" }"
            )
        );
    }

    #[test]
    fn toml_strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(toml_string("plain"), "\"plain\"");
        assert_eq!(toml_string(r#"a "b" \c"#), r#""a \"b\" \\c""#);
        assert_eq!(toml_string("l1\nl2\r\t\u{8}\u{c}"), r#""l1\nl2\r\t\b\f""#);
        assert_eq!(toml_string("\u{0}\u{1b}\u{7f}"), r#""\u0000\u001B\u007F""#);
        assert_eq!(toml_string("é 🧵 \u{85}"), "\"é 🧵 \u{85}\"");
        assert_eq!(toml_string(""), "\"\"");
    }

    #[test]
    fn shell_words_quote_everything_but_plain_text() {
        assert_eq!(shell_word("/usr/local/bin/gemini-relay"), "/usr/local/bin/gemini-relay");
        assert_eq!(shell_word("GEMINI_MCP_TIMEOUT=0.5"), "GEMINI_MCP_TIMEOUT=0.5");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("/my tools/relay"), "'/my tools/relay'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME `x` \\ \"q\" ~ * ;"), "'$HOME `x` \\ \"q\" ~ * ;'");
        assert_eq!(shell_word("a\nb"), "'a\nb'");
    }

    #[test]
    fn awkward_paths_and_values_are_escaped_in_every_format() {
        let binary = r#"/opt/my "relay" \dir/it's/gemini-relay"#;
        let value = "C:\\agy \"x\"\n'y'\t$z";
        let config = config(&[("AGY_CLI_PATH", value)]);
        // JSON: what goes in comes back out.
        for host in [Host::Gemini, Host::Qwen] {
            let parsed: Value = serde_json::from_str(&render(host, binary, &config).text).unwrap();
            assert_eq!(parsed["mcpServers"]["gemini-relay"]["command"], binary);
            assert_eq!(parsed["mcpServers"]["gemini-relay"]["env"]["AGY_CLI_PATH"], value);
        }
        let parsed: Value =
            serde_json::from_str(&render(Host::Opencode, binary, &config).text).unwrap();
        assert_eq!(parsed["mcp"]["gemini-relay"]["command"], json!([binary]));
        assert_eq!(parsed["mcp"]["gemini-relay"]["environment"]["AGY_CLI_PATH"], value);
        // TOML: each value is one escaped basic string on its own line.
        let codex = render(Host::Codex, binary, &config).text;
        assert!(
            codex.contains(r#"command = "/opt/my \"relay\" \\dir/it's/gemini-relay""#),
            "{codex}"
        );
        assert!(codex.contains(r#"env = { AGY_CLI_PATH = "C:\\agy \"x\"\n'y'\t$z" }"#), "{codex}");
        // Shell: single-quoted words.
        let claude = render(Host::Claude, binary, &config).text;
        assert!(
            claude.ends_with(
                "claude mcp add --scope user gemini-relay -e 'AGY_CLI_PATH=C:\\agy \"x\"\n'\\''y'\\''\t$z' \
                 -- '/opt/my \"relay\" \\dir/it'\\''s/gemini-relay'\n"
            ),
            "{claude}"
        );
    }

    #[test]
    fn the_readme_shows_every_default_configuration() {
        let readme = include_str!("../README.md");
        for host in Host::ALL {
            let snippet = render(host, BINARY, &config(&[]));
            assert!(
                readme.contains(&snippet.text),
                "README lacks the {} block:\n{}",
                host.name(),
                snippet.text
            );
        }
    }
}
