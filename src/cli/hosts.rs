//! `gemini-relay config <host>`: a ready-to-paste MCP configuration for Claude Code, Codex, Gemini
//! CLI, Qwen Code, opencode, Cursor, the Antigravity CLI, VS Code, Copilot CLI, Zed, Windsurf and
//! Claude Desktop, with the running binary's path (or
//! `npx -y gemini-relay` when the npm launcher started it), the relay's variables that change
//! something (paths made absolute, values the host would rewrite left out with a warning), and the
//! host's tool timeout raised to the relay's deadline plus 2 minutes where the host has one, with
//! the inline wait that fits the host's limit. Each host's files are named per system (macOS, other
//! POSIX systems, Windows); on Windows it shows the binary's path as a person types it and writes
//! the command-line host's snippet for PowerShell (`winhosts`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::backend::agy::args::sh_single_quote;
use crate::cli::winhosts;
use crate::config::{self, Config};
use crate::js;

/// A host that `gemini-relay config` writes a configuration for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    Claude,
    Codex,
    Gemini,
    Qwen,
    Opencode,
    Cursor,
    Agy,
    Vscode,
    Copilot,
    Zed,
    Windsurf,
    ClaudeDesktop,
}

/// A host's configuration, split by where it goes.
#[derive(Debug)]
pub struct Snippet {
    /// The configuration itself, for stdout: shell commands, TOML or JSON that the host (or a
    /// shell) takes as it is.
    pub text: String,
    /// Where the snippet goes and what its timeout means, for stderr, when the format has no
    /// comments (JSON) or is pasted into a shell; empty otherwise.
    pub note: String,
    /// One line per variable left out because the host would rewrite its value, for stderr.
    pub warnings: Vec<String>,
    /// What `config <host> --write` merges into the host's file.
    pub document: Document,
}

/// The relay's part of a host's file.
#[derive(Debug)]
pub enum Document {
    /// A JSON object with one member (the host's servers object) holding one member (the relay's
    /// entry).
    Json(Value),
    /// Codex's `[mcp_servers.gemini-relay]` table, with its comment, ending in a newline.
    Toml(String),
}

impl Host {
    /// Every host, in the order messages name them.
    pub const ALL: [Host; 12] = [
        Host::Claude,
        Host::Codex,
        Host::Gemini,
        Host::Qwen,
        Host::Opencode,
        Host::Cursor,
        Host::Agy,
        Host::Vscode,
        Host::Copilot,
        Host::Zed,
        Host::Windsurf,
        Host::ClaudeDesktop,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Qwen => "qwen",
            Host::Opencode => "opencode",
            Host::Cursor => "cursor",
            Host::Agy => "agy",
            Host::Vscode => "vscode",
            Host::Copilot => "copilot",
            Host::Zed => "zed",
            Host::Windsurf => "windsurf",
            Host::ClaudeDesktop => "claude-desktop",
        }
    }

    /// The host named `name` on the command line.
    pub fn parse(name: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|host| host.name() == name)
    }

    /// The product's own name, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Host::Claude => "Claude Code",
            Host::Codex => "Codex",
            Host::Gemini => "Gemini CLI",
            Host::Qwen => "Qwen Code",
            Host::Opencode => "opencode",
            Host::Cursor => "Cursor",
            Host::Agy => "Antigravity CLI",
            Host::Vscode => "VS Code",
            Host::Copilot => "Copilot CLI",
            Host::Zed => "Zed",
            Host::Windsurf => "Windsurf",
            Host::ClaudeDesktop => "Claude Desktop",
        }
    }

    /// The substitution syntax in `value` that this host expands when it reads its configuration,
    /// if any. None of these hosts has an escape for it, so such a value cannot be written safely.
    /// Claude Code expands `${VAR}` in every MCP configuration; Cursor expands `${env:NAME}`,
    /// `${userHome}` and the like; Gemini CLI and Qwen Code expand `$VAR` and `${VAR}`, and the
    /// Antigravity CLI, their successor, is treated the same; opencode expands `{env:VAR}` and
    /// `{file:path}`; VS Code expands `${env:NAME}`, `${workspaceFolder}` and the like, Copilot CLI
    /// `${VAR}`, Windsurf `${env:NAME}` and `${file:path}`; Claude Desktop is treated as Claude Code;
    /// Codex and Zed expand nothing.
    fn substitution(self, value: &str) -> Option<&'static str> {
        match self {
            Host::Claude
            | Host::Cursor
            | Host::Vscode
            | Host::Copilot
            | Host::Windsurf
            | Host::ClaudeDesktop => value.contains("${").then_some("${...}"),
            Host::Gemini | Host::Qwen | Host::Agy => {
                dollar_reference(value).then_some("$NAME or ${...}")
            }
            Host::Opencode => ["{env:", "{file:"]
                .into_iter()
                .find(|syntax| value.contains(syntax))
                .map(|syntax| if syntax == "{env:" { "{env:...}" } else { "{file:...}" }),
            Host::Codex | Host::Zed => None,
        }
    }
}

/// Whether `value` holds a `$` followed by `{` or a word character: what Gemini CLI replaces.
fn dollar_reference(value: &str) -> bool {
    value.as_bytes().windows(2).any(|pair| {
        pair[0] == b'$' && (pair[1] == b'{' || pair[1] == b'_' || pair[1].is_ascii_alphanumeric())
    })
}

/// Which system's conventions a configuration is written in: where the hosts keep their files, how
/// the binary's path is shown, and the shell the command-line host's snippet is for. macOS is a
/// POSIX system whose desktop applications keep their files under `~/Library/Application Support`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    Posix,
    Mac,
    Windows,
}

impl System {
    /// The system the relay runs on, whose hosts it configures.
    const RUNNING: System = if cfg!(windows) {
        System::Windows
    } else if cfg!(target_os = "macos") {
        System::Mac
    } else {
        System::Posix
    };
}

/// Where `host` keeps its configuration on `system`: the user's file and the project's, relative
/// to the project root (empty when the host has none). On Windows every host resolves `~` to
/// `%USERPROFILE%`; `%APPDATA%` is the roaming application data of Electron and Zed.
fn locations(system: System, host: Host) -> (&'static str, &'static str) {
    let (posix, windows) = match host {
        Host::Claude => (
            ("~/.claude/settings.json", ".claude/settings.json"),
            (r"%USERPROFILE%\.claude\settings.json", r".claude\settings.json"),
        ),
        Host::Codex => (
            ("~/.codex/config.toml", ".codex/config.toml"),
            (r"%USERPROFILE%\.codex\config.toml", r".codex\config.toml"),
        ),
        Host::Gemini => (
            ("~/.gemini/settings.json", ".gemini/settings.json"),
            (r"%USERPROFILE%\.gemini\settings.json", r".gemini\settings.json"),
        ),
        Host::Qwen => (
            ("~/.qwen/settings.json", ".qwen/settings.json"),
            (r"%USERPROFILE%\.qwen\settings.json", r".qwen\settings.json"),
        ),
        Host::Opencode => (
            ("~/.config/opencode/opencode.json", "opencode.json"),
            (r"%USERPROFILE%\.config\opencode\opencode.json", "opencode.json"),
        ),
        Host::Cursor => (
            ("~/.cursor/mcp.json", ".cursor/mcp.json"),
            (r"%USERPROFILE%\.cursor\mcp.json", r".cursor\mcp.json"),
        ),
        Host::Agy => (
            ("~/.gemini/config/mcp_config.json", ".agents/mcp_config.json"),
            (r"%USERPROFILE%\.gemini\config\mcp_config.json", r".agents\mcp_config.json"),
        ),
        Host::Vscode => (
            ("~/.config/Code/User/mcp.json", ".vscode/mcp.json"),
            (r"%APPDATA%\Code\User\mcp.json", r".vscode\mcp.json"),
        ),
        Host::Copilot => (
            ("~/.copilot/mcp-config.json", ".mcp.json"),
            (r"%USERPROFILE%\.copilot\mcp-config.json", ".mcp.json"),
        ),
        Host::Zed => (
            ("~/.config/zed/settings.json", ".zed/settings.json"),
            (r"%APPDATA%\Zed\settings.json", r".zed\settings.json"),
        ),
        Host::Windsurf => (
            ("~/.codeium/windsurf/mcp_config.json", ""),
            (r"%USERPROFILE%\.codeium\windsurf\mcp_config.json", ""),
        ),
        Host::ClaudeDesktop => (
            ("~/.config/Claude/claude_desktop_config.json", ""),
            (r"%APPDATA%\Claude\claude_desktop_config.json", ""),
        ),
    };
    let mac = match host {
        Host::Vscode => "~/Library/Application Support/Code/User/mcp.json",
        Host::ClaudeDesktop => "~/Library/Application Support/Claude/claude_desktop_config.json",
        _ => posix.0,
    };
    match system {
        System::Posix => posix,
        System::Mac => (mac, posix.1),
        System::Windows => windows,
    }
}

/// The file `config <host> --write` edits on `system`: the user's (`project` false) or the
/// project's, as `locations` names it. Claude Code keeps its MCP servers apart from its settings,
/// in `~/.claude.json` and the project's `.mcp.json`.
fn target_file(system: System, host: Host, project: bool) -> Option<&'static str> {
    let (user, in_project) = match (host, system) {
        (Host::Claude, System::Windows) => (r"%USERPROFILE%\.claude.json", ".mcp.json"),
        (Host::Claude, _) => ("~/.claude.json", ".mcp.json"),
        _ => locations(system, host),
    };
    Some(if project { in_project } else { user }).filter(|file| !file.is_empty())
}

/// The file `config <host> --write` edits on this system, as a path: `~`, `%USERPROFILE%` and
/// `%APPDATA%` from the environment (on POSIX systems other than macOS, `~/.config` is
/// `$XDG_CONFIG_HOME` when that is set, as the hosts there read it), a project's file under `cwd`.
/// `None` when the host has no such file; an error names a variable that is missing.
pub fn target_path(host: Host, project: bool, cwd: &Path) -> Option<Result<PathBuf, String>> {
    let shown = target_file(System::RUNNING, host, project)?;
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|value| Path::new(value).is_absolute())
            .map(PathBuf::from)
            .ok_or_else(|| format!("cannot find {shown}: {name} is not set to an absolute path"))
    };
    let xdg = std::env::var_os("XDG_CONFIG_HOME").filter(|value| Path::new(value).is_absolute());
    Some(if let Some(rest) = shown.strip_prefix("~/") {
        match (rest.strip_prefix(".config/"), xdg) {
            (Some(rest), Some(xdg)) if System::RUNNING == System::Posix => {
                Ok(PathBuf::from(xdg).join(rest))
            }
            _ => var("HOME").map(|home| home.join(rest)),
        }
    } else if let Some(rest) = shown.strip_prefix(r"%USERPROFILE%\") {
        var("USERPROFILE").map(|home| home.join(rest))
    } else if let Some(rest) = shown.strip_prefix(r"%APPDATA%\") {
        var("APPDATA").map(|home| home.join(rest))
    } else {
        Ok(cwd.join(shown))
    })
}

/// The known host names, comma-separated, for messages.
pub fn known_hosts() -> String {
    Host::ALL.map(Host::name).join(", ")
}

/// The configuration that makes `host` launch the relay as `binary` (an absolute path, or a
/// program on `PATH` such as `npx`) with `args`, and the variables of `config` that change
/// something; relative paths among them are resolved against `cwd`. Fails when the binary's own
/// path holds syntax the host would expand.
pub fn render(
    host: Host,
    binary: &str,
    args: &[&str],
    cwd: &Path,
    config: &Config,
) -> Result<Snippet, String> {
    render_for(System::RUNNING, host, binary, args, cwd, config)
}

/// How a host starts the relay that its npm launcher started (`npx -y gemini-relay`): the binary
/// then sits in npx's cache, which npm may clear or fill with another version at any time.
pub const NPX: (&str, [&str; 2]) = ("npx", ["-y", "gemini-relay"]);

/// `render` in the conventions of `system`.
fn render_for(
    system: System,
    host: Host,
    binary: &str,
    args: &[&str],
    cwd: &Path,
    config: &Config,
) -> Result<Snippet, String> {
    let binary = match system {
        System::Windows => winhosts::shown_binary_path(binary),
        System::Posix | System::Mac => binary.to_string(),
    };
    if let Some(syntax) = host.substitution(&binary) {
        return Err(format!(
            "the binary's path {binary:?} contains {syntax}, which {} would expand; install \
             gemini-relay under a path without it",
            host.title()
        ));
    }
    let facts = Facts::new(system, host, binary, args, cwd, config);
    let (text, note, document) = match host {
        Host::Claude => {
            let (text, note) = claude(&facts);
            (text, note, Document::Json(json_document(&facts)))
        }
        Host::Codex => {
            let text = codex(&facts);
            let table = text.split_once('\n').map_or("", |(_, table)| table).to_string();
            (text, String::new(), Document::Toml(table))
        }
        _ => {
            let document = json_document(&facts);
            (json_text(&document), json_note(&facts), Document::Json(document))
        }
    };
    Ok(Snippet { text, note, warnings: facts.warnings, document })
}

/// What the host waits beyond the relay's deadline, so that the relay's own timeout result (with
/// the CLI's partial output) reaches the host instead of the host's cut.
const MARGIN: Duration = Duration::from_secs(120);

/// The server's name in every host's configuration.
pub const NAME: &str = "gemini-relay";

/// The longest per-server `timeout` Zed accepts, in seconds (10 minutes).
const ZED_MAX_TIMEOUT_SECS: u64 = 600;

/// What every host's configuration is made of.
struct Facts {
    system: System,
    host: Host,
    /// The binary's path as the host is given it.
    binary: String,
    /// The arguments the host starts it with.
    args: Vec<String>,
    /// The relay's variables that change something, in table order, with the values to write.
    env: Vec<(&'static str, String)>,
    /// The variables left out, one warning line each.
    warnings: Vec<String>,
    /// The relay's deadline.
    deadline: Duration,
    /// The relay's deadline plus `MARGIN`, in milliseconds.
    timeout_ms: u64,
}

impl Facts {
    fn new(
        system: System,
        host: Host,
        binary: String,
        args: &[&str],
        cwd: &Path,
        config: &Config,
    ) -> Facts {
        let mut env = Vec::new();
        let mut warnings = Vec::new();
        for var in config::VARS.iter().filter(|var| var.carried) {
            let Some(raw) = config.raw(var.name).filter(|raw| var.changes_something(raw)) else {
                continue;
            };
            let value = if var.is_path() {
                match absolute(cwd, raw) {
                    Some(path) => path,
                    None => {
                        warnings.push(format!(
                            "{} is left out: its absolute path is not valid UTF-8",
                            var.name
                        ));
                        continue;
                    }
                }
            } else {
                raw.to_string()
            };
            match host.substitution(&value) {
                Some(syntax) => warnings.push(format!(
                    "{} is left out: {} would expand the {syntax} in its value, and has no way \
                     to escape it",
                    var.name,
                    host.title()
                )),
                None => env.push((var.name, value)),
            }
        }
        let deadline = config.timeout;
        let timeout_ms = u64::try_from((deadline + MARGIN).as_millis()).unwrap_or(u64::MAX);
        let args = args.iter().map(|arg| arg.to_string()).collect();
        Facts { system, host, binary, args, env, warnings, deadline, timeout_ms }
    }

    /// How long the host waits for a call, in seconds, when the configuration raises it: the
    /// relay's deadline plus `MARGIN`, within Zed's ceiling.
    fn raised_timeout_secs(&self) -> Option<u64> {
        match self.host {
            Host::Codex | Host::Gemini | Host::Qwen | Host::Opencode => Some(self.timeout_secs()),
            Host::Zed => Some(self.timeout_secs().min(ZED_MAX_TIMEOUT_SECS)),
            _ => None,
        }
    }

    /// The host timeout in whole seconds, rounded up so that it never falls short of the deadline.
    fn timeout_secs(&self) -> u64 {
        self.timeout_ms.div_ceil(1000)
    }

    /// The relay's deadline in minutes, for notes.
    fn deadline_minutes(&self) -> f64 {
        self.deadline.as_millis() as f64 / 60_000.0
    }

    /// Where the host keeps its configuration: the user's file and the project's.
    fn locations(&self) -> (&'static str, &'static str) {
        locations(self.system, self.host)
    }
}

/// `raw` (trimmed, as the relay reads it) as an absolute path: a host starts the relay inside each
/// project, so a relative path would name a file of whatever project it is started in.
fn absolute(cwd: &Path, raw: &str) -> Option<String> {
    let path: std::path::PathBuf = cwd.join(js::trim(raw)).components().collect();
    path.to_str().map(str::to_string)
}

// Claude Code's texts. Claude Code's own tool-call timeout when `MCP_TOOL_TIMEOUT` is unset is
// 100,000,000 ms, about 28 hours (Claude Code 2.1.332). Its other limit, 30 minutes without a
// response or progress from a stdio server, never applies while the relay's keepalives flow
// (measured with `claude -p`: a silent 2,000 s call is stopped after 1,800 s, one with keepalives
// every 25 s completes).
const CLAUDE_DEFAULT_TOOL_TIMEOUT_MS: u64 = 100_000_000;

/// Where the claude snippet runs.
fn claude_where(facts: &Facts) -> String {
    let shell = match facts.system {
        System::Posix | System::Mac => "a shell",
        System::Windows => "PowerShell",
    };
    format!(
        "Claude Code: run the command above once in {shell} (--scope user: for all your projects)."
    )
}

/// What the claude snippet's note says about the host's timeout.
fn claude_timeout_note(facts: &Facts) -> String {
    if facts.timeout_ms > CLAUDE_DEFAULT_TOOL_TIMEOUT_MS {
        let (shell, line) = match facts.system {
            System::Posix | System::Mac => ("shell", "export"),
            System::Windows => ("PowerShell", "$env:"),
        };
        format!(
            "Claude Code gives up on a tool call after {CLAUDE_DEFAULT_TOOL_TIMEOUT_MS} ms, before \
             the relay's deadline plus 2 minutes: start Claude Code from the {shell} that ran the \
             {line} line, or put MCP_TOOL_TIMEOUT={} under \"env\" in {}.",
            facts.timeout_ms,
            facts.locations().0
        )
    } else {
        format!(
            "No timeout to raise: Claude Code allows a call {CLAUDE_DEFAULT_TOOL_TIMEOUT_MS} ms, and \
             stops one early only after 30 minutes without progress, which the relay sends every \
             progress interval (25 s by default)."
        )
    }
}

/// Claude Code: a `claude mcp add` command line, and `export MCP_TOOL_TIMEOUT` only when its
/// default is too short. The commands carry no comment, so they paste into any shell, zsh without
/// `interactive_comments` included; their explanation is the note.
///
/// On Windows they are PowerShell: words in its quoting, the variable set with `$env:`, and the
/// `--` before the binary quoted, because PowerShell takes a bare `--` as its own end-of-parameters
/// mark and drops it before npm's `claude.ps1` shim sees it; `claude` would then read the binary's
/// path as one more `-e` value.
fn claude(facts: &Facts) -> (String, String) {
    let (word, end_of_options): (fn(&str) -> String, &str) = match facts.system {
        System::Posix | System::Mac => (shell_word, "--"),
        System::Windows => (winhosts::powershell_word, "'--'"),
    };
    let mut text = format!("claude mcp add --scope user {NAME}");
    for (name, value) in &facts.env {
        text.push_str(" -e ");
        text.push_str(&word(&format!("{name}={value}")));
    }
    text.push_str(&format!(" {end_of_options} "));
    text.push_str(&word(&facts.binary));
    for arg in &facts.args {
        text.push(' ');
        text.push_str(&word(arg));
    }
    text.push('\n');
    if facts.timeout_ms > CLAUDE_DEFAULT_TOOL_TIMEOUT_MS {
        let ms = facts.timeout_ms;
        text.push_str(&match facts.system {
            System::Posix | System::Mac => format!("export MCP_TOOL_TIMEOUT={ms}\n"),
            System::Windows => format!("$env:MCP_TOOL_TIMEOUT = '{ms}'\n"),
        });
    }
    (text, format!("{}\n{}\n", claude_where(facts), claude_timeout_note(facts)))
}

/// Codex: a `[mcp_servers.gemini-relay]` table for `config.toml`.
fn codex(facts: &Facts) -> String {
    let (user, project) = facts.locations();
    let mut text = format!(
        "# Codex: add this to {user} (or to a trusted project's {project}).\n\
         [mcp_servers.{NAME}]\n\
         command = {}\n",
        toml_string(&facts.binary)
    );
    if !facts.args.is_empty() {
        let args: Vec<String> = facts.args.iter().map(|arg| toml_string(arg)).collect();
        text.push_str(&format!("args = [{}]\n", args.join(", ")));
    }
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
    text
}

/// The `command`, `args` and `env` of a server entry.
fn server_entry(facts: &Facts) -> Map<String, Value> {
    let mut server = Map::new();
    server.insert("command".into(), facts.binary.as_str().into());
    if !facts.args.is_empty() {
        server.insert("args".into(), facts.args.clone().into());
    }
    if !facts.env.is_empty() {
        server.insert("env".into(), env_object(facts));
    }
    server
}

/// A JSON host's configuration: its servers object with the relay's entry. Claude Code's is the
/// entry that `claude mcp add` writes to `~/.claude.json`.
fn json_document(facts: &Facts) -> Value {
    let mut server = Map::new();
    let kind = match facts.host {
        Host::Claude | Host::Vscode => Some("stdio"),
        Host::Copilot | Host::Opencode => Some("local"),
        _ => None,
    };
    if let Some(kind) = kind {
        server.insert("type".into(), kind.into());
    }
    if facts.host == Host::Opencode {
        let command: Vec<&str> = std::iter::once(facts.binary.as_str())
            .chain(facts.args.iter().map(String::as_str))
            .collect();
        server.insert("command".into(), command.into());
        if !facts.env.is_empty() {
            server.insert("environment".into(), env_object(facts));
        }
        server.insert("enabled".into(), true.into());
    } else {
        server.extend(server_entry(facts));
    }
    match facts.host {
        Host::Gemini | Host::Qwen | Host::Opencode => {
            server.insert("timeout".into(), facts.timeout_ms.into());
        }
        Host::Zed => {
            server.insert("timeout".into(), facts.raised_timeout_secs().into());
        }
        Host::Copilot => {
            server.insert("tools".into(), vec!["*"].into());
        }
        _ => (),
    }
    let servers = match facts.host {
        Host::Opencode => "mcp",
        Host::Vscode => "servers",
        Host::Zed => "context_servers",
        _ => "mcpServers",
    };
    let one = |key: &str, value: Value| Value::Object(Map::from_iter([(key.to_string(), value)]));
    one(servers, one(NAME, Value::Object(server)))
}

/// Where a JSON host's snippet goes and what bounds a call there.
fn json_note(facts: &Facts) -> String {
    let title = facts.host.title();
    let (user, project) = facts.locations();
    let mut place = format!("{title}: merge this into {user}");
    if !project.is_empty() {
        place.push_str(&format!(" (or into the project's {project})"));
    }
    let ms = facts.timeout_ms;
    let limit = match facts.host {
        Host::Gemini | Host::Qwen => format!(
            "\"timeout\" ({ms} ms) is the relay's deadline plus 2 minutes: {title} would otherwise \
             stop a long call after 600000 ms."
        ),
        Host::Opencode => format!(
            "\"timeout\" ({ms} ms) is the relay's deadline plus 2 minutes: opencode applies it to \
             every request to the relay, tool calls included."
        ),
        Host::Agy => return agy_note(facts),
        Host::Zed => format!(
            "\"timeout\" ({} s) is the relay's deadline plus 2 minutes, at most the 600 s Zed \
             allows: Zed would otherwise stop a call after 60 s.",
            facts.raised_timeout_secs().unwrap_or_default()
        ),
        Host::Copilot => {
            "Copilot CLI stops a tool call after about 60 s, whatever \"timeout\" says \
             (github/copilot-cli#1535)."
                .to_string()
        }
        Host::Cursor | Host::Vscode | Host::Windsurf => {
            format!("{title}'s file has no tool timeout to raise.")
        }
        _ => format!("{title} stops a tool call after about 60 s and has no setting to raise it."),
    };
    format!("{place}.\n{limit}\n")
}

/// How long the Antigravity CLI waits for a tool call: about 180 s, with no setting to change it.
const AGY_TOOL_LIMIT: Duration = Duration::from_secs(180);

/// Where the Antigravity CLI's snippet goes and what its limit means for long calls.
fn agy_note(facts: &Facts) -> String {
    let limit = AGY_TOOL_LIMIT.as_secs();
    let timing = if facts.deadline < AGY_TOOL_LIMIT {
        format!(
            "agy stops a tool call after about {limit} s and has no MCP tasks; the relay's \
             deadline ({} min) ends first, so its own timeout result reaches agy.",
            facts.deadline_minutes()
        )
    } else {
        format!(
            "agy stops a tool call after about {limit} s, long before the relay's deadline ({} \
             min), and has neither MCP tasks nor a timeout setting in mcp_config.json, so a longer \
             call is cut: set GEMINI_MCP_TIMEOUT=2.5 before running this command to get the \
             relay's own timeout result, with what the CLI printed so far, instead.",
            facts.deadline_minutes()
        )
    };
    let (user, project) = facts.locations();
    format!(
        "Antigravity CLI (agy): merge this into {user} (or into the project's {project}), then \
         restart agy.\n{timing}\n"
    )
}

fn env_object(facts: &Facts) -> Value {
    let env: Map<String, Value> = facts
        .env
        .iter()
        .map(|(name, value)| (name.to_string(), Value::from(value.as_str())))
        .collect();
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
    use serde_json::json;

    const BINARY: &str = "/path/to/gemini-relay";
    /// Where `config` runs: relative paths are made absolute against it by the running system's
    /// rules, so it is a path of that system.
    const CWD: &str = if cfg!(windows) { r"C:\Users\u\project" } else { "/home/u/project" };

    /// `posix` (an absolute POSIX path) as an absolute path of the running system: on Windows on
    /// drive C:, with backslashes.
    fn native(posix: &str) -> String {
        match cfg!(windows) {
            true => format!("C:{}", posix.replace('/', "\\")),
            false => posix.to_string(),
        }
    }

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_env(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    /// A snippet in the POSIX forms, which every system can check; the Windows forms have tests of
    /// their own below (`windows`), and `render` picks the running system's.
    fn snippet(host: Host, pairs: &[(&str, &str)]) -> Snippet {
        snippet_for(System::Posix, host, pairs)
    }

    fn snippet_for(system: System, host: Host, pairs: &[(&str, &str)]) -> Snippet {
        render_for(system, host, BINARY, &[], Path::new(CWD), &config(pairs)).unwrap()
    }

    fn text(host: Host, pairs: &[(&str, &str)]) -> String {
        snippet(host, pairs).text
    }

    fn json(host: Host, pairs: &[(&str, &str)]) -> Value {
        serde_json::from_str(&text(host, pairs)).unwrap()
    }

    /// The `gemini-relay` server entry of a JSON host's snippet.
    fn server(host: Host, pairs: &[(&str, &str)]) -> Value {
        let json = json(host, pairs);
        let servers = json.as_object().unwrap().values().next().unwrap();
        servers["gemini-relay"].clone()
    }

    /// The environment a host's snippet gives the relay, as JSON (Claude's and Codex's parsed by
    /// hand from their one-line forms).
    fn env_of(host: Host, pairs: &[(&str, &str)]) -> Value {
        all_env_of(host, pairs)
    }

    fn all_env_of(host: Host, pairs: &[(&str, &str)]) -> Value {
        match host {
            Host::Opencode => server(host, pairs)["environment"].clone(),
            Host::Claude | Host::Codex => {
                let c = config(pairs);
                let facts =
                    Facts::new(System::Posix, host, BINARY.to_string(), &[], Path::new(CWD), &c);
                let env: Map<String, Value> =
                    facts.env.into_iter().map(|(k, v)| (k.to_string(), v.into())).collect();
                if env.is_empty() { Value::Null } else { Value::Object(env) }
            }
            _ => server(host, pairs)["env"].clone(),
        }
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
        for bad in ["", "Claude", "codex ", "antigravity", "gemini-cli", "Cursor"] {
            assert_eq!(Host::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            known_hosts(),
            "claude, codex, gemini, qwen, opencode, cursor, agy, vscode, copilot, zed, windsurf, \
             claude-desktop"
        );
    }

    #[test]
    fn started_by_npx_every_host_runs_npx_with_its_arguments() {
        let (npx, args) = NPX;
        let cwd = Path::new(CWD);
        let snippet =
            |host| render_for(System::Posix, host, npx, &args, cwd, &config(&[])).unwrap();
        let claude = snippet(Host::Claude).text;
        assert!(
            claude.starts_with("claude mcp add --scope user gemini-relay -- npx -y gemini-relay\n")
        );
        let codex = snippet(Host::Codex).text;
        assert!(
            codex.contains("command = \"npx\"\nargs = [\"-y\", \"gemini-relay\"]\n"),
            "{codex}"
        );
        for host in [Host::Gemini, Host::Qwen, Host::Cursor, Host::Agy] {
            let json: Value = serde_json::from_str(&snippet(host).text).unwrap();
            let server = &json["mcpServers"]["gemini-relay"];
            assert_eq!(server["command"], "npx", "{host:?}");
            assert_eq!(server["args"], json!(["-y", "gemini-relay"]), "{host:?}");
        }
        let opencode: Value = serde_json::from_str(&snippet(Host::Opencode).text).unwrap();
        assert_eq!(
            opencode["mcp"]["gemini-relay"]["command"],
            json!(["npx", "-y", "gemini-relay"])
        );
        // A binary's own snippet has no arguments.
        assert!(server(Host::Cursor, &[]).get("args").is_none());
        assert!(!text(Host::Codex, &[]).contains("args"));
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
        assert!(snippet(Host::Codex, &[]).note.is_empty());
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
        let note = snippet(Host::Qwen, &[]).note;
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
        let note = snippet(Host::Opencode, &[]).note;
        assert!(note.contains("~/.config/opencode/opencode.json"), "{note}");
    }

    #[test]
    fn cursor_and_agy_default_to_a_bare_mcp_servers_entry() {
        for host in [Host::Cursor, Host::Agy] {
            assert_eq!(
                json(host, &[]),
                json!({"mcpServers": {"gemini-relay": {"command": "/path/to/gemini-relay"}}})
            );
        }
        let note = snippet(Host::Cursor, &[]).note;
        assert!(note.starts_with("Cursor: merge this into ~/.cursor/mcp.json (or into the project's .cursor/mcp.json).\n"), "{note}");
        assert!(note.ends_with("no tool timeout to raise.\n"), "{note}");
        let note = snippet(Host::Agy, &[]).note;
        assert!(note.contains("~/.gemini/config/mcp_config.json"), "{note}");
        assert!(note.contains(".agents/mcp_config.json"), "{note}");
        assert!(note.contains("about 180 s, long before the relay's deadline (45 min)"), "{note}");
        assert!(note.contains("GEMINI_MCP_TIMEOUT=2.5"), "{note}");
        // A deadline under agy's own limit reaches agy first.
        let note = snippet(Host::Agy, &[("GEMINI_MCP_TIMEOUT", "2.5")]).note;
        assert!(note.contains("deadline (2.5 min) ends first"), "{note}");
        assert_eq!(
            server(Host::Agy, &[("GEMINI_MCP_TIMEOUT", "2.5")])["env"],
            json!({"GEMINI_MCP_TIMEOUT": "2.5"})
        );
    }

    #[test]
    fn claude_default_needs_no_timeout_and_its_commands_carry_no_comment() {
        let snippet = snippet(Host::Claude, &[]);
        assert_eq!(
            snippet.text,
            "claude mcp add --scope user gemini-relay -- /path/to/gemini-relay\n"
        );
        assert_eq!(
            snippet.note,
            "Claude Code: run the command above once in a shell (--scope user: for all your projects).\n\
             No timeout to raise: Claude Code allows a call 100000000 ms, and stops one early only \
             after 30 minutes without progress, which the relay sends every progress interval (25 s \
             by default).\n"
        );
    }

    #[test]
    fn a_longer_deadline_raises_every_timeout() {
        let sixty = [("GEMINI_MCP_TIMEOUT", "60")];
        assert_eq!(codex_value(&sixty, "tool_timeout_sec").as_deref(), Some("3720"));
        assert_eq!(codex_value(&sixty, "env").as_deref(), Some("{ GEMINI_MCP_TIMEOUT = \"60\" }"));
        for host in [Host::Gemini, Host::Qwen, Host::Opencode] {
            assert_eq!(server(host, &sixty)["timeout"], 3_720_000);
        }
        for host in Host::ALL {
            assert_eq!(env_of(host, &sixty), json!({"GEMINI_MCP_TIMEOUT": "60"}), "{host:?}");
        }
        assert!(text(Host::Claude, &sixty).contains(" -e GEMINI_MCP_TIMEOUT=60 -- "));
        assert!(!text(Host::Claude, &sixty).contains("MCP_TOOL_TIMEOUT"));
    }

    #[test]
    fn fractional_deadlines_give_whole_units_rounded_up() {
        // Half a minute: 30 s + 2 min.
        let half = [("GEMINI_MCP_TIMEOUT", "0.5")];
        assert_eq!(codex_value(&half, "tool_timeout_sec").as_deref(), Some("150"));
        assert_eq!(server(Host::Gemini, &half)["timeout"], 150_000);
        // 1.0001 minutes is 60,006 ms: the host gets 180,006 ms, or 181 whole seconds (never 180,
        // which would cut the call 6 ms before the relay's own deadline).
        let odd = [("GEMINI_MCP_TIMEOUT", "1.0001")];
        assert_eq!(codex_value(&odd, "tool_timeout_sec").as_deref(), Some("181"));
        assert_eq!(server(Host::Opencode, &odd)["timeout"], 180_006);
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
        let snippet = snippet(Host::Claude, &[("GEMINI_MCP_TIMEOUT", "1665")]);
        assert_eq!(
            snippet.text,
            "claude mcp add --scope user gemini-relay -e GEMINI_MCP_TIMEOUT=1665 -- /path/to/gemini-relay\n\
             export MCP_TOOL_TIMEOUT=100020000\n"
        );
        assert!(
            snippet.note.contains("MCP_TOOL_TIMEOUT=100020000 under \"env\""),
            "{}",
            snippet.note
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
            ("GEMINI_MCP_FALLBACK_MODEL", "flash"),
            ("GEMINI_MCP_BACKEND", "agy"),
            ("GEMINI_MCP_TEST_TOOLS", "1"),
            ("RUST_LOG", "debug"),
        ];
        assert_eq!(
            env_of(Host::Gemini, &pairs),
            json!({"GEMINI_MCP_BACKEND": "agy", "GEMINI_MCP_TEST_TOOLS": "1"})
        );
        let agy = native("/opt/agy");
        let pairs = [
            ("GEMINI_MCP_MAX_OUTPUT_BYTES", "2048"),
            ("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100"),
            ("AGY_MCP_PTY", "yes"),
            ("AGY_CLI_PATH", &agy),
            ("GEMINI_MCP_MODEL", "pro"),
            ("GEMINI_MCP_FALLBACK_MODEL", "off"),
            ("HOME", "/home/u"),
            ("USERPROFILE", r"C:\Users\u"),
        ];
        // In table order, raw values, and never a variable that is not the relay's own.
        assert_eq!(
            codex_value(&pairs, "env"),
            Some(format!(
                "{{ AGY_CLI_PATH = {}, AGY_MCP_PTY = \"yes\", GEMINI_MCP_MODEL = \"pro\", \
                 GEMINI_MCP_FALLBACK_MODEL = \"off\", GEMINI_MCP_PROGRESS_INTERVAL_MS = \"100\", \
                 GEMINI_MCP_MAX_OUTPUT_BYTES = \"2048\" }}",
                toml_string(&agy)
            ))
        );
    }

    #[test]
    fn relative_cli_paths_are_written_absolute() {
        let in_project = if cfg!(windows) {
            r"C:\Users\u\project\tools\agy"
        } else {
            "/home/u/project/tools/agy"
        };
        for raw in ["tools/agy", "./tools/agy", " tools//agy ", r"tools\agy"] {
            // A backslash separates only on Windows; elsewhere it is part of a name.
            if raw.contains('\\') && !cfg!(windows) {
                continue;
            }
            for host in Host::ALL {
                assert_eq!(
                    env_of(host, &[("AGY_CLI_PATH", raw)]),
                    json!({"AGY_CLI_PATH": in_project}),
                    "{host:?} {raw:?}"
                );
            }
        }
        let opt = native("/opt/agy");
        assert_eq!(env_of(Host::Codex, &[("AGY_CLI_PATH", &opt)]), json!({"AGY_CLI_PATH": opt}));
        let parent = if cfg!(windows) {
            r"C:\Users\u\project\..\bin\gemini.cmd"
        } else {
            "/home/u/project/../bin/gemini.cmd"
        };
        assert_eq!(absolute(Path::new(CWD), "../bin/gemini.cmd").as_deref(), Some(parent));
        // GEMINI_CLI_PATH is read, and so written, on Windows only.
        let gemini = env_of(Host::Codex, &[("GEMINI_CLI_PATH", "bin/gemini.cmd")]);
        let expected = match cfg!(windows) {
            true => json!({"GEMINI_CLI_PATH": r"C:\Users\u\project\bin\gemini.cmd"}),
            false => Value::Null,
        };
        assert_eq!(gemini, expected);
    }

    #[test]
    fn values_a_host_would_expand_are_left_out_with_a_warning() {
        // (host, a value it would expand, a value it leaves alone)
        let cases = [
            (Host::Claude, "/opt/${HOME}/agy", "/opt/$HOME/{env:HOME}/agy"),
            (Host::Cursor, "/opt/${userHome}/agy", "/opt/$HOME/agy"),
            (Host::Gemini, "/opt/$HOME/agy", "/opt/$-/{env:HOME}/agy"),
            (Host::Qwen, "/opt/${HOME}/agy", "/opt/a$/agy"),
            (Host::Agy, "/opt/$_x/agy", "/opt/$/agy"),
            (Host::Opencode, "/opt/{env:HOME}/agy", "/opt/${HOME}/agy"),
            (Host::Opencode, "/opt/{file:~/.ssh/id}/agy", "/opt/{files}/agy"),
        ];
        for (host, expanded, kept) in cases {
            let (expanded, kept) = (&native(expanded), &native(kept));
            let pairs = [("AGY_CLI_PATH", expanded.as_str()), ("GEMINI_MCP_TEST_TOOLS", "1")];
            assert_eq!(env_of(host, &pairs), json!({"GEMINI_MCP_TEST_TOOLS": "1"}), "{host:?}");
            let warnings = snippet(host, &pairs).warnings;
            assert_eq!(warnings.len(), 1, "{host:?}: {warnings:?}");
            assert!(warnings[0].starts_with("AGY_CLI_PATH is left out: "), "{warnings:?}");
            assert!(warnings[0].contains(host.title()), "{warnings:?}");
            assert_eq!(
                env_of(host, &[("AGY_CLI_PATH", kept)]),
                json!({"AGY_CLI_PATH": kept}),
                "{host:?}"
            );
            assert!(snippet(host, &[("AGY_CLI_PATH", kept)]).warnings.is_empty());
        }
        // Codex expands nothing.
        let all = native("/opt/$HOME/${HOME}/{env:HOME}/{file:x}/agy");
        assert_eq!(env_of(Host::Codex, &[("AGY_CLI_PATH", &all)]), json!({"AGY_CLI_PATH": all}));
        // Any variable, not only paths.
        let warnings = snippet(Host::Gemini, &[("GEMINI_MCP_MODEL", "$MODEL")]).warnings;
        assert_eq!(
            warnings,
            ["GEMINI_MCP_MODEL is left out: Gemini CLI would expand the $NAME or ${...} in its \
              value, and has no way to escape it"]
        );
    }

    #[test]
    fn a_binary_path_a_host_would_expand_is_refused() {
        let err =
            render(Host::Gemini, "/opt/$HOME/gemini-relay", &[], Path::new(CWD), &config(&[]))
                .unwrap_err();
        assert!(err.contains("\"/opt/$HOME/gemini-relay\" contains $NAME or ${...}"), "{err}");
        assert!(
            render(Host::Codex, "/opt/$HOME/gemini-relay", &[], Path::new(CWD), &config(&[]))
                .is_ok()
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
        // An absolute path of the running system, with characters each format must escape.
        let root = if cfg!(windows) { "" } else { "/" };
        let value = format!("{root}C:\\agy \"x\"\n'y'\tz");
        let config = config(&[("AGY_CLI_PATH", &value)]);
        let cwd = Path::new(CWD);
        let render =
            |host| render_for(System::Posix, host, binary, &[], cwd, &config).unwrap().text;
        // JSON: what goes in comes back out.
        for host in [Host::Gemini, Host::Qwen, Host::Cursor, Host::Agy] {
            let parsed: Value = serde_json::from_str(&render(host)).unwrap();
            assert_eq!(parsed["mcpServers"]["gemini-relay"]["command"], binary);
            assert_eq!(parsed["mcpServers"]["gemini-relay"]["env"]["AGY_CLI_PATH"], value);
        }
        let parsed: Value = serde_json::from_str(&render(Host::Opencode)).unwrap();
        assert_eq!(parsed["mcp"]["gemini-relay"]["command"], json!([binary]));
        assert_eq!(parsed["mcp"]["gemini-relay"]["environment"]["AGY_CLI_PATH"], value);
        // TOML: each value is one escaped basic string on its own line.
        let codex = render(Host::Codex);
        assert!(
            codex.contains(r#"command = "/opt/my \"relay\" \\dir/it's/gemini-relay""#),
            "{codex}"
        );
        let env = format!(r#"env = {{ AGY_CLI_PATH = "{root}C:\\agy \"x\"\n'y'\tz" }}"#);
        assert!(codex.contains(&env), "{codex}");
        // Shell: single-quoted words.
        assert_eq!(
            render(Host::Claude),
            format!(
                "claude mcp add --scope user gemini-relay -e 'AGY_CLI_PATH={root}C:\\agy \"x\"\n'\\''y'\\''\tz' \
                 -- '/opt/my \"relay\" \\dir/it'\\''s/gemini-relay'\n"
            )
        );
    }

    const WINDOWS_BINARY: &str = r"\\?\C:\Program Files\gemini-relay.exe";

    fn windows_snippet(host: Host, pairs: &[(&str, &str)]) -> Snippet {
        render_for(System::Windows, host, WINDOWS_BINARY, &[], Path::new(CWD), &config(pairs))
            .unwrap()
    }

    #[test]
    fn windows_snippets_name_each_hosts_windows_files() {
        for host in Host::ALL {
            let snippet = windows_snippet(host, &[("GEMINI_MCP_TIMEOUT", "1665")]);
            let (user, project) = locations(System::Windows, host);
            let told = format!("{}{}", snippet.text, snippet.note);
            assert!(told.contains(user), "{host:?}: {told}");
            if host != Host::Claude && !project.is_empty() {
                assert!(told.contains(&format!("project's {project}")), "{host:?}: {told}");
            }
            assert!(!told.contains("~/"), "{host:?}: {told}");
        }
        assert!(windows_snippet(Host::Codex, &[]).text.starts_with(
            "# Codex: add this to %USERPROFILE%\\.codex\\config.toml (or to a trusted \
                 project's .codex\\config.toml).\n"
        ));
        let note = windows_snippet(Host::Agy, &[]).note;
        assert!(
            note.starts_with(
                "Antigravity CLI (agy): merge this into %USERPROFILE%\\.gemini\\config\\mcp_config.json \
                 (or into the project's .agents\\mcp_config.json), then restart agy.\n"
            ),
            "{note}"
        );
    }

    #[test]
    fn windows_snippets_show_the_binary_without_the_verbatim_prefix_escaped() {
        for host in [Host::Gemini, Host::Qwen, Host::Cursor, Host::Agy] {
            let text = windows_snippet(host, &[]).text;
            assert!(text.contains(r#""command": "C:\\Program Files\\gemini-relay.exe""#), "{text}");
            let parsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                parsed["mcpServers"]["gemini-relay"]["command"],
                r"C:\Program Files\gemini-relay.exe"
            );
        }
        let text = windows_snippet(Host::Opencode, &[]).text;
        assert!(text.contains(r#""C:\\Program Files\\gemini-relay.exe""#), "{text}");
        let text = windows_snippet(Host::Codex, &[]).text;
        assert!(text.contains(r#"command = "C:\\Program Files\\gemini-relay.exe""#), "{text}");
        let unc = r"\\?\UNC\srv\tools\gemini-relay.exe";
        let snippet =
            render_for(System::Windows, Host::Cursor, unc, &[], Path::new(CWD), &config(&[]))
                .unwrap();
        assert!(snippet.text.contains(r#""command": "\\\\srv\\tools\\gemini-relay.exe""#));
        // The POSIX forms leave a path as it is.
        let posix = render_for(System::Posix, Host::Cursor, unc, &[], Path::new(CWD), &config(&[]))
            .unwrap();
        assert!(posix.text.contains(r#""command": "\\\\?\\UNC\\srv\\tools\\gemini-relay.exe""#));
    }

    #[test]
    fn windows_claude_snippet_is_a_powershell_command() {
        let plain = r"\\?\C:\Tools\gemini-relay.exe";
        let snippet =
            render_for(System::Windows, Host::Claude, plain, &[], Path::new(CWD), &config(&[]))
                .unwrap();
        assert_eq!(
            snippet.text,
            "claude mcp add --scope user gemini-relay '--' C:\\Tools\\gemini-relay.exe\n"
        );
        assert!(
            snippet.note.starts_with(
                "Claude Code: run the command above once in PowerShell (--scope user: for all \
                 your projects).\nNo timeout to raise"
            ),
            "{}",
            snippet.note
        );
        let snippet = windows_snippet(
            Host::Claude,
            &[("GEMINI_MCP_TIMEOUT", "1665"), ("GEMINI_MCP_MODEL", "it's $x, `y`")],
        );
        assert_eq!(
            snippet.text,
            "claude mcp add --scope user gemini-relay -e GEMINI_MCP_TIMEOUT=1665 \
             -e 'GEMINI_MCP_MODEL=it''s $x, `y`' '--' 'C:\\Program Files\\gemini-relay.exe'\n\
             $env:MCP_TOOL_TIMEOUT = '100020000'\n"
        );
        assert!(
            snippet.note.contains(
                "start Claude Code from the PowerShell that ran the $env: line, or put \
                 MCP_TOOL_TIMEOUT=100020000 under \"env\" in %USERPROFILE%\\.claude\\settings.json."
            ),
            "{}",
            snippet.note
        );
    }

    #[test]
    fn render_writes_the_running_systems_forms() {
        let text = render(Host::Codex, BINARY, &[], Path::new(CWD), &config(&[])).unwrap().text;
        assert_eq!(text.contains(r"%USERPROFILE%\.codex\config.toml"), cfg!(windows), "{text}");
        assert_eq!(text.contains("~/.codex/config.toml"), !cfg!(windows), "{text}");
        let text = render(Host::Claude, BINARY, &[], Path::new(CWD), &config(&[])).unwrap().text;
        assert_eq!(text.contains(" '--' "), cfg!(windows), "{text}");
    }

    #[test]
    fn the_readme_shows_every_default_configuration() {
        let readme = include_str!("../../README.md");
        for host in Host::ALL {
            let snippet = snippet(host, &[]);
            assert!(
                readme.contains(&snippet.text),
                "README lacks the {} block:\n{}",
                host.name(),
                snippet.text
            );
        }
    }

    fn check_locations(host: Host, user: &str, project: &str) {
        assert_eq!(locations(System::Windows, host), (user, project), "{}", host.name());
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
        check_locations(Host::Vscode, r"%APPDATA%\Code\User\mcp.json", r".vscode\mcp.json");
        check_locations(Host::Copilot, r"%USERPROFILE%\.copilot\mcp-config.json", ".mcp.json");
        check_locations(Host::Zed, r"%APPDATA%\Zed\settings.json", r".zed\settings.json");
        check_locations(Host::Windsurf, r"%USERPROFILE%\.codeium\windsurf\mcp_config.json", "");
        check_locations(Host::ClaudeDesktop, r"%APPDATA%\Claude\claude_desktop_config.json", "");
    }

    #[test]
    fn macos_names_the_desktop_applications_files_and_shares_the_rest() {
        assert_eq!(
            locations(System::Mac, Host::Vscode),
            ("~/Library/Application Support/Code/User/mcp.json", ".vscode/mcp.json")
        );
        assert_eq!(
            locations(System::Mac, Host::ClaudeDesktop),
            ("~/Library/Application Support/Claude/claude_desktop_config.json", "")
        );
        for host in [Host::Codex, Host::Zed, Host::Copilot, Host::Windsurf, Host::Cursor] {
            assert_eq!(locations(System::Mac, host), locations(System::Posix, host), "{host:?}");
        }
        assert_eq!(target_file(System::Mac, Host::Claude, false), Some("~/.claude.json"));
        assert_eq!(target_file(System::Posix, Host::Claude, true), Some(".mcp.json"));
        assert_eq!(
            target_file(System::Windows, Host::Claude, false),
            Some(r"%USERPROFILE%\.claude.json")
        );
        assert_eq!(target_file(System::Posix, Host::Windsurf, true), None);
        assert_eq!(target_file(System::Posix, Host::Zed, true), Some(".zed/settings.json"));
    }

    #[test]
    fn new_hosts_take_their_documented_shapes() {
        let servers = |host| json(host, &[("GEMINI_MCP_TIMEOUT", "60")]);
        let entry = |kind: Option<&str>| {
            let mut entry = json!({
                "command": BINARY,
                "env": {"GEMINI_MCP_TIMEOUT": "60"}
            });
            if let Some(kind) = kind {
                entry["type"] = kind.into();
            }
            entry
        };
        assert_eq!(servers(Host::Vscode), json!({"servers": {NAME: entry(Some("stdio"))}}));
        let mut copilot = entry(Some("local"));
        copilot["tools"] = json!(["*"]);
        assert_eq!(servers(Host::Copilot), json!({"mcpServers": {NAME: copilot}}));
        assert_eq!(servers(Host::Windsurf), json!({"mcpServers": {NAME: entry(None)}}));
        assert_eq!(servers(Host::ClaudeDesktop), json!({"mcpServers": {NAME: entry(None)}}));
        // Zed: "timeout" in seconds, at most 600.
        let mut zed = entry(None);
        zed["timeout"] = 600.into();
        assert_eq!(servers(Host::Zed), json!({"context_servers": {NAME: zed}}));
        let short = json(Host::Zed, &[("GEMINI_MCP_TIMEOUT", "1")]);
        assert_eq!(short["context_servers"][NAME]["timeout"], 180);
        // Claude Code's file entry, for --write.
        let Document::Json(claude) = snippet(Host::Claude, &[]).document else { panic!() };
        assert_eq!(claude, json!({"mcpServers": {NAME: {"type": "stdio", "command": BINARY}}}));
        let Document::Toml(codex) = snippet(Host::Codex, &[]).document else { panic!() };
        assert!(codex.starts_with("[mcp_servers.gemini-relay]\n"), "{codex}");
    }

    #[test]
    fn locations_use_windows_separators_only() {
        for host in Host::ALL {
            let (user, project) = locations(System::Windows, host);
            let home = user.starts_with(r"%USERPROFILE%\") || user.starts_with(r"%APPDATA%\");
            assert!(home, "{user}");
            assert!(!user.contains('/') && !project.contains('/'), "{user} {project}");
        }
    }

    #[test]
    fn json_and_toml_snippets_carry_windows_paths_escaped() {
        let config = crate::config::Config::from_env(|name| {
            (name == "AGY_CLI_PATH").then(|| r"C:\Users\me\agy.exe".to_string())
        });
        let binary = winhosts::shown_binary_path(r"\\?\C:\Program Files\gemini-relay.exe");
        let cwd = std::path::Path::new("/");
        for host in [Host::Gemini, Host::Qwen, Host::Opencode, Host::Cursor, Host::Agy] {
            let text = render(host, &binary, &[], cwd, &config).unwrap().text;
            assert!(text.contains(r#""C:\\Program Files\\gemini-relay.exe""#), "{text}");
            assert!(text.contains(r#"C:\\Users\\me\\agy.exe""#), "{text}");
        }
        let codex = render(Host::Codex, &binary, &[], cwd, &config).unwrap().text;
        assert!(codex.contains(r#"command = "C:\\Program Files\\gemini-relay.exe""#), "{codex}");
    }
}
