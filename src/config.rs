//! Configuration: the one table of the relay's environment variables (name, kind, default, range,
//! help, whether `gemini-relay config` writes it), and `Config`, every value read once at startup
//! through that table. Nothing outside the process can change its environment, so reading once is
//! the same as reading per call. An invalid number logs one warning naming the variable and falls
//! back to its default; an out-of-range one is clamped with a warning; nothing here is fatal. A
//! path (and what the search for a CLI reads) is taken as the system gives it; any other value that
//! is not UTF-8 is invalid.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

use crate::exec::{self, SearchEnv, System};
use crate::js;

/// What `GEMINI_MCP_BACKEND` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// Unset or blank: the date decides (agy since the Gemini CLI's retirement).
    #[default]
    Auto,
    /// `agy` or `antigravity`, any case.
    Agy,
    /// `gemini`, any case.
    Gemini,
    /// Anything else, trimmed and lower-cased: answered by gemini with a warning on each call.
    Unknown(String),
}

/// What the relay was configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `GEMINI_MCP_BACKEND`.
    pub backend: BackendChoice,
    /// `AGY_CLI_PATH`, trimmed (when UTF-8), when set and non-empty.
    pub agy_cli_path: Option<PathBuf>,
    /// `GEMINI_CLI_PATH`, trimmed (when UTF-8), when set and non-empty (used on Windows only).
    pub gemini_cli_path: Option<PathBuf>,
    /// `GEMINI_MCP_TIMEOUT`: the deadline of every CLI run.
    pub timeout: Duration,
    /// `AGY_PRINT_TIMEOUT`, trimmed, when set and non-empty.
    pub agy_print_timeout: Option<String>,
    /// `AGY_MCP_PTY`: PTY recovery on.
    pub agy_pty: bool,
    /// `GEMINI_MCP_TEST_TOOLS`: registers `gemini-timeout-test`.
    pub test_tools: bool,
    /// `GEMINI_MCP_MODEL`: the model of a call that names none (`None`: the CLI's default).
    pub model: Option<String>,
    /// `GEMINI_MCP_FALLBACK_MODEL`: the model a quota failure is retried with (`None`: off).
    pub fallback_model: Option<String>,
    /// `GEMINI_MCP_PROGRESS_INTERVAL_MS`: the keepalive cadence.
    pub progress_interval: Duration,
    /// `GEMINI_MCP_MAX_MESSAGE_BYTES`: the largest JSON-RPC line accepted.
    pub max_message_bytes: usize,
    /// `GEMINI_MCP_MAX_OUTPUT_BYTES`: the cap on each of a child's stdout and stderr.
    pub max_output_bytes: usize,
    /// `GEMINI_MCP_MAX_ATTACHMENT_BYTES`: the largest file a call may attach.
    pub max_attachment_bytes: u64,
    /// What the search for the CLIs reads: `PATH`, `PATHEXT`, `LOCALAPPDATA` and the user's home
    /// directory (`HOME`; `USERPROFILE` on Windows), which also locates agy's conversation store.
    pub search: SearchEnv,
    /// `GEMINI_MCP_AGY_PARALLEL`: how many agy runs the user's relays start at once.
    pub agy_parallel: usize,
    /// `GEMINI_MCP_STATE_DIR`, else the platform's state directory: where jobs and agy's run
    /// slots live (`None`: no home to put it under).
    pub state_dir: Option<PathBuf>,
    /// The table's variables that are set and non-empty, in table order, with their raw values.
    pub set: Vec<(&'static str, OsString)>,
}

/// How a variable's value is read, with its default and range, and where it goes in `Config`.
pub enum ValueKind {
    /// Minutes as a number above 0 (fractions and exponents allowed), at most `max`.
    Minutes { default: f64, max: f64, set: fn(&mut Config, Duration) },
    /// A whole number from `min` to `max`.
    Integer { default: u64, min: u64, max: u64, unit: Unit, set: fn(&mut Config, u64) },
    /// On for `1`, `true` or `yes` (any case), off otherwise.
    Switch { set: fn(&mut Config, bool) },
    /// On for any non-empty value.
    Flag { set: fn(&mut Config, bool) },
    /// Trimmed text; blank is unset. `default` says what happens when it is unset.
    Text { default: &'static str, set: fn(&mut Config, Option<String>) },
    /// An executable's path, trimmed; blank is unset. `gemini-relay config` writes it absolute.
    Path { default: &'static str, set: fn(&mut Config, Option<PathBuf>) },
    /// The backend's name.
    Backend { set: fn(&mut Config, BackendChoice) },
    /// A model name or alias, trimmed; blank is the default. With a default, `off` (any case)
    /// turns it off.
    Model { default: Option<&'static str>, set: fn(&mut Config, Option<String>) },
    /// The log filter, read by the logger itself.
    LogFilter { default: &'static str },
}

/// The unit of an `Integer` variable.
#[derive(Clone, Copy)]
pub enum Unit {
    Milliseconds,
    Bytes,
    /// A plain count.
    Count,
}

/// One row of the table.
pub struct EnvVar {
    pub name: &'static str,
    pub kind: ValueKind,
    /// What it does, in Markdown (the README's table shows it as is, `--help` without backticks).
    pub help: &'static str,
    /// Whether `gemini-relay config <host>` writes it into the host's configuration when it is set
    /// and changes something.
    pub carried: bool,
    /// Read on Windows only.
    pub windows_only: bool,
}

const WEEK_MINUTES: f64 = 7.0 * 24.0 * 60.0;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// Every environment variable of the relay's own, in the order `--help`, the README and
/// `gemini-relay config` list them.
pub static VARS: &[EnvVar] = &[
    EnvVar {
        name: "GEMINI_MCP_BACKEND",
        kind: ValueKind::Backend { set: |c, v| c.backend = v },
        help: "Which CLI answers. Any other value falls back to `gemini` with a warning. Setting \
               it silences the one-time migration notice.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "AGY_CLI_PATH",
        kind: ValueKind::Path {
            default: "`~/.local/bin/agy` if it exists, else `agy` on `PATH` (Windows: `agy.exe` \
                      on `PATH`, then agy's install locations)",
            set: |c, v| c.agy_cli_path = v,
        },
        help: "Full path of the agy executable, resolved once.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_CLI_PATH",
        kind: ValueKind::Path {
            default: "`gemini` on `PATH` (Windows: `gemini.exe` or npm's `gemini.cmd`)",
            set: |c, v| c.gemini_cli_path = v,
        },
        help: "Windows only: full path of the legacy gemini executable. Elsewhere it is ignored \
               and `gemini` is found on `PATH`.",
        carried: true,
        windows_only: true,
    },
    EnvVar {
        name: "GEMINI_MCP_TIMEOUT",
        kind: ValueKind::Minutes { default: 45.0, max: WEEK_MINUTES, set: |c, v| c.timeout = v },
        help: "Deadline of each CLI run. Past it the CLI's whole process tree is killed (its \
               process group; on Windows its Job Object).",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "AGY_PRINT_TIMEOUT",
        kind: ValueKind::Text {
            default: "derived: the deadline minus 60 s (half of it below 2 min)",
            set: |c, v| c.agy_print_timeout = v,
        },
        help: "Value for agy's `--print-timeout` (a Go duration such as `30m`), passed verbatim.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "AGY_MCP_PTY",
        kind: ValueKind::Switch { set: |c, v| c.agy_pty = v },
        help: "When an old agy build prints nothing on the argv path, rerun it under `script` (a \
               pseudo-terminal).",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_TEST_TOOLS",
        kind: ValueKind::Flag { set: |c, v| c.test_tools = v },
        help: "Registers `gemini-timeout-test`.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_MODEL",
        kind: ValueKind::Model { default: None, set: |c, v| c.model = v },
        help: "The model of a call that names none (unset: the CLI's own default); \
               `gemini-models` and `gemini-doctor` show it.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_FALLBACK_MODEL",
        kind: ValueKind::Model { default: Some("flash"), set: |c, v| c.fallback_model = v },
        help: "A run that fails because its model's quota is exhausted is retried once with this \
               model (never after a cancel or a timeout).",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_PROGRESS_INTERVAL_MS",
        kind: ValueKind::Integer {
            default: 25_000,
            min: 10,
            max: 3_600_000,
            unit: Unit::Milliseconds,
            set: |c, v| c.progress_interval = Duration::from_millis(v),
        },
        help: "Interval of progress keepalives.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_MESSAGE_BYTES",
        kind: ValueKind::Integer {
            default: 64 * MIB,
            min: KIB,
            max: GIB,
            unit: Unit::Bytes,
            set: |c, v| c.max_message_bytes = usize::try_from(v).unwrap_or(usize::MAX),
        },
        help: "Largest JSON-RPC line accepted; longer lines get `-32600 Message too large` and \
               are skipped unbuffered.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_OUTPUT_BYTES",
        kind: ValueKind::Integer {
            default: 64 * MIB,
            min: KIB,
            max: GIB,
            unit: Unit::Bytes,
            set: |c, v| c.max_output_bytes = usize::try_from(v).unwrap_or(usize::MAX),
        },
        help: "Cap on a CLI's stdout and on its stderr; past it the CLI is stopped and the call \
               fails. Also the most bytes of results finished tasks keep in all.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_ATTACHMENT_BYTES",
        kind: ValueKind::Integer {
            default: 20 * MIB,
            min: 1,
            max: GIB,
            unit: Unit::Bytes,
            set: |c, v| c.max_attachment_bytes = v,
        },
        help: "Largest file a call may attach (`attachments`, or an `@` token naming an image, a \
               PDF, audio or video on agy); a file of exactly this size is accepted.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_AGY_PARALLEL",
        kind: ValueKind::Integer {
            default: 2,
            min: 1,
            max: 8,
            unit: Unit::Count,
            set: |c, v| c.agy_parallel = usize::try_from(v).unwrap_or(1),
        },
        help: "How many agy runs may go at once, counted across every relay of the user (through \
               lock files in the state directory). Two turns of one conversation never overlap, \
               and a run that may edit files has its project to itself.",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "GEMINI_MCP_STATE_DIR",
        kind: ValueKind::Path {
            default: "`$XDG_STATE_HOME/gemini-relay`, else `~/.local/state/gemini-relay` \
                      (Windows: `%LOCALAPPDATA%\\gemini-relay`)",
            set: |c, v| c.state_dir = v,
        },
        help: "Private directory shared by every relay of the user (created 0700; refused when \
               another user owns it or others may write in it).",
        carried: true,
        windows_only: false,
    },
    EnvVar {
        name: "RUST_LOG",
        kind: ValueKind::LogFilter { default: "info" },
        help: "stderr log filter. `gemini-relay config` leaves it out, because a shell often sets \
               it for other programs: add it to the host's configuration by hand to debug the \
               relay.",
        carried: false,
        windows_only: false,
    },
];

impl Config {
    /// Reads the configuration through `get`, which gives UTF-8 values.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Config {
        Config::from_env_os(|name| get(name).map(OsString::from))
    }

    /// Reads the configuration through `get` (the process environment in production).
    pub fn from_env_os(get: impl Fn(&str) -> Option<OsString>) -> Config {
        // Every field the table sets is filled in below; these are placeholders.
        let mut config = Config {
            backend: BackendChoice::Auto,
            agy_cli_path: None,
            gemini_cli_path: None,
            timeout: Duration::ZERO,
            agy_print_timeout: None,
            agy_pty: false,
            test_tools: false,
            model: None,
            fallback_model: None,
            progress_interval: Duration::ZERO,
            max_message_bytes: 0,
            max_output_bytes: 0,
            max_attachment_bytes: 0,
            agy_parallel: 0,
            search: SearchEnv::read(&get),
            state_dir: None,
            set: Vec::new(),
        };
        for var in VARS {
            let raw = get(var.name);
            let warning = match raw.as_deref().map(|raw| (raw, raw.to_str())) {
                Some((raw, None)) => var.read_os(raw, &mut config),
                Some((_, text)) => var.read(text, &mut config),
                None => var.read(None, &mut config),
            };
            if let Some(warning) = warning {
                log::warn!("{warning}");
            }
            if let Some(raw) = raw.filter(|raw| !raw.is_empty()) {
                config.set.push((var.name, raw));
            }
        }
        if config.state_dir.is_none() {
            config.state_dir = default_state_dir(&config, get("XDG_STATE_HOME"));
        }
        config
    }

    /// The raw value of one of the relay's variables, when set, non-empty and UTF-8.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.raw_os(name).and_then(OsStr::to_str)
    }

    /// The raw value of one of the relay's variables, when set and non-empty, as the system gave
    /// it.
    pub fn raw_os(&self, name: &str) -> Option<&OsStr> {
        self.set.iter().find(|(n, _)| *n == name).map(|(_, value)| value.as_os_str())
    }

    /// The configuration of this process.
    pub fn from_process_env() -> Config {
        Config::from_env_os(|name| std::env::var_os(name))
    }
}

impl EnvVar {
    /// Stores a value that is not UTF-8 in `config`: a path as given; anything else is invalid,
    /// with the warning of an invalid number, or the one of a value it ignores.
    fn read_os(&self, raw: &OsStr, config: &mut Config) -> Option<String> {
        let shown = raw.to_string_lossy();
        match self.kind {
            ValueKind::Path { set, .. } => {
                set(config, Some(PathBuf::from(raw)));
                None
            }
            ValueKind::Minutes { .. } | ValueKind::Integer { .. } => {
                self.read(Some(&shown), config)
            }
            ValueKind::LogFilter { .. } => None,
            _ => {
                self.read(None, config);
                Some(format!("{}={shown:?} is not UTF-8; ignoring it", self.name))
            }
        }
    }

    /// Stores the value of `raw` (unset when `None`) in `config`; returns the warning for an
    /// invalid or out-of-range number.
    fn read(&self, raw: Option<&str>, config: &mut Config) -> Option<String> {
        let name = self.name;
        let text = raw.map(js::trim).filter(|text| !text.is_empty());
        match self.kind {
            ValueKind::Minutes { default, max, set } => {
                let (value, warning) = minutes(name, text, default, max);
                set(config, value);
                warning
            }
            ValueKind::Integer { default, min, max, set, .. } => {
                let (value, warning) = integer(name, text, default, (min, max));
                set(config, value);
                warning
            }
            ValueKind::Switch { set } => {
                set(config, switch(text));
                None
            }
            ValueKind::Flag { set } => {
                set(config, raw.is_some_and(|raw| !raw.is_empty()));
                None
            }
            ValueKind::Text { set, .. } => {
                set(config, text.map(str::to_string));
                None
            }
            ValueKind::Path { set, .. } => {
                set(config, text.map(PathBuf::from));
                None
            }
            ValueKind::Backend { set } => {
                set(config, backend(text));
                None
            }
            ValueKind::Model { default, set } => {
                set(config, model(text, default));
                None
            }
            ValueKind::LogFilter { .. } => None,
        }
    }

    /// Whether the set value `raw` changes anything: a number that comes out at its default (its
    /// default written out, or an invalid value that falls back to it) does not, nor does a switch
    /// left off, a model equal to its default, a blank text, or a variable of another platform.
    pub fn changes_something(&self, raw: &str) -> bool {
        if self.windows_only && exec::SYSTEM != System::Windows {
            return false;
        }
        let name = self.name;
        let text = Some(js::trim(raw)).filter(|text| !text.is_empty());
        match self.kind {
            ValueKind::Minutes { default, max, .. } => {
                minutes(name, text, default, max).0 != minutes(name, None, default, max).0
            }
            ValueKind::Integer { default, min, max, .. } => {
                integer(name, text, default, (min, max)).0 != default
            }
            ValueKind::Switch { .. } => switch(text),
            ValueKind::Flag { .. } => !raw.is_empty(),
            ValueKind::Text { .. } | ValueKind::Path { .. } | ValueKind::Backend { .. } => {
                text.is_some()
            }
            ValueKind::Model { default, .. } => model(text, default) != model(None, default),
            ValueKind::LogFilter { default } => text != Some(default),
        }
    }

    /// Whether the value is a path, written absolute by `gemini-relay config`.
    pub fn is_path(&self) -> bool {
        matches!(self.kind, ValueKind::Path { .. })
    }

    /// The default, in Markdown.
    pub fn default_text(&self) -> String {
        match self.kind {
            ValueKind::Minutes { default, .. } => format!("`{default}`"),
            ValueKind::Integer { default, unit: Unit::Bytes, .. } => {
                format!("`{default}` ({})", bytes(default))
            }
            ValueKind::Integer { default, .. } => format!("`{default}`"),
            ValueKind::Switch { .. } => "off".to_string(),
            ValueKind::Flag { .. } | ValueKind::Model { default: None, .. } => "unset".to_string(),
            ValueKind::Model { default: Some(default), .. } => format!("`{default}`"),
            ValueKind::Text { default, .. } | ValueKind::Path { default, .. } => {
                default.to_string()
            }
            ValueKind::Backend { .. } => "`agy` (it was `gemini` before 2026-06-18)".to_string(),
            ValueKind::LogFilter { default } => format!("`{default}`"),
        }
    }

    /// The values it takes, in Markdown.
    pub fn values_text(&self) -> String {
        match self.kind {
            ValueKind::Minutes { max, .. } => {
                format!("minutes above 0, fractions allowed (`0.5` is 30 s), at most `{max}`")
            }
            ValueKind::Integer { min, max, unit: Unit::Milliseconds, .. } => {
                format!("`{min}` to `{max}` ms")
            }
            ValueKind::Integer { min, max, unit: Unit::Bytes, .. } => {
                format!("`{min}` to `{max}` bytes ({} to {})", bytes(min), bytes(max))
            }
            ValueKind::Integer { min, max, unit: Unit::Count, .. } => format!("`{min}` to `{max}`"),
            ValueKind::Switch { .. } => "`1`, `true` or `yes` (any case) is on".to_string(),
            ValueKind::Flag { .. } => "any non-empty value is on".to_string(),
            ValueKind::Text { .. } => "text".to_string(),
            ValueKind::Path { .. } => "a path".to_string(),
            ValueKind::Backend { .. } => "`agy`, `antigravity` or `gemini`, any case".to_string(),
            ValueKind::Model { default: None, .. } => "a model name or alias".to_string(),
            ValueKind::Model { default: Some(_), .. } => {
                "a model name or alias, or `off` (no retry)".to_string()
            }
            ValueKind::LogFilter { .. } => {
                "`error`, `warn`, `info`, `debug` or an env_logger filter".to_string()
            }
        }
    }
}

/// The platform's place for the state directory: `%LOCALAPPDATA%\gemini-relay` on Windows; else
/// `$XDG_STATE_HOME/gemini-relay` when that is absolute (the XDG rule: a relative one is ignored),
/// else `~/.local/state/gemini-relay`.
fn default_state_dir(config: &Config, xdg_state_home: Option<OsString>) -> Option<PathBuf> {
    let search = &config.search;
    let base = match exec::SYSTEM {
        System::Windows => {
            search.local_app_data.as_ref().map(PathBuf::from).filter(|dir| dir.is_absolute())
        }
        System::Posix => xdg_state_home
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| search.home.as_ref().map(|home| home.join(".local").join("state"))),
    };
    base.map(|base| base.join("gemini-relay"))
}

/// `n` bytes as the largest binary unit that divides it, e.g. `64 MiB`.
fn bytes(n: u64) -> String {
    match n {
        n if n >= GIB && n % GIB == 0 => format!("{} GiB", n / GIB),
        n if n >= MIB && n % MIB == 0 => format!("{} MiB", n / MIB),
        n if n >= KIB && n % KIB == 0 => format!("{} KiB", n / KIB),
        1 => "1 byte".to_string(),
        n => format!("{n} bytes"),
    }
}

/// Minutes as a number (decimals and exponents); finite and positive → `round(minutes × 60000)`
/// ms, at most `max`; otherwise the default.
fn minutes(name: &str, text: Option<&str>, default: f64, max: f64) -> (Duration, Option<String>) {
    let duration =
        |minutes: f64| Duration::from_millis((minutes * 60_000.0).round().max(1.0) as u64);
    let Some(text) = text else { return (duration(default), None) };
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n <= max => (duration(n), None),
        Ok(n) if n.is_finite() && n > max => (
            duration(max),
            Some(format!("{name}={text:?} is more than {max} minutes; using {max}")),
        ),
        _ => (
            duration(default),
            Some(format!("{name}={text:?} is not a positive number of minutes; using {default}")),
        ),
    }
}

/// A positive integer within `range`: invalid → the default, out of range → the nearest bound,
/// each with a warning.
fn integer(
    name: &str,
    text: Option<&str>,
    default: u64,
    (min, max): (u64, u64),
) -> (u64, Option<String>) {
    let Some(text) = text else { return (default, None) };
    let n = match text.parse::<u64>() {
        Ok(n) if n > 0 => n,
        // Too many digits for u64 is still a number, and far above the range.
        Err(_) if text.bytes().all(|b| b.is_ascii_digit()) => u64::MAX,
        _ => {
            return (
                default,
                Some(format!("{name}={text:?} is not a positive integer; using {default}")),
            );
        }
    };
    let clamped = n.clamp(min, max);
    let warning = (clamped != n)
        .then(|| format!("{name}={text:?} is out of range ({min} to {max}); using {clamped}"));
    (clamped, warning)
}

fn switch(text: Option<&str>) -> bool {
    text.is_some_and(|text| matches!(text.to_lowercase().as_str(), "1" | "true" | "yes"))
}

fn backend(text: Option<&str>) -> BackendChoice {
    let Some(text) = text else { return BackendChoice::Auto };
    match text.to_lowercase().as_str() {
        "agy" | "antigravity" => BackendChoice::Agy,
        "gemini" => BackendChoice::Gemini,
        other => BackendChoice::Unknown(other.to_string()),
    }
}

fn model(text: Option<&str>, default: Option<&str>) -> Option<String> {
    match text {
        Some(text) if default.is_some() && text.eq_ignore_ascii_case("off") => None,
        Some(text) => Some(text.to_string()),
        None => default.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_env(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    impl EnvVar {
        /// The row named `name`.
        fn named(name: &str) -> Option<&'static EnvVar> {
            VARS.iter().find(|var| var.name == name)
        }
    }

    #[test]
    fn defaults() {
        let c = config(&[]);
        assert_eq!(c.timeout, Duration::from_millis(2_700_000));
        assert_eq!(c.progress_interval, Duration::from_millis(25_000));
        assert_eq!(c.max_message_bytes, 64 * 1024 * 1024);
        assert_eq!(c.max_output_bytes, 64 * 1024 * 1024);
        assert!(!c.test_tools && !c.agy_pty);
        assert_eq!(c.backend, BackendChoice::Auto);
        assert!(c.agy_cli_path.is_none() && c.gemini_cli_path.is_none());
        assert!(c.agy_print_timeout.is_none() && c.search.home.is_none());
        assert_eq!(c.model, None);
        assert_eq!(c.fallback_model.as_deref(), Some("flash"));
        assert!(c.set.is_empty());
    }

    #[test]
    fn timeout_accepts_fractions_and_exponents() {
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", " 0.5 ")]).timeout, Duration::from_secs(30));
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", "0.05")]).timeout, Duration::from_secs(3));
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", "1e1")]).timeout, Duration::from_secs(600));
    }

    #[test]
    fn invalid_timeouts_fall_back_and_huge_ones_are_clamped() {
        for bad in ["", "abc", "0", "-3", "NaN", "inf"] {
            assert_eq!(
                config(&[("GEMINI_MCP_TIMEOUT", bad)]).timeout,
                Duration::from_secs(2700),
                "{bad}"
            );
        }
        let week = Duration::from_secs(7 * 24 * 3600);
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", "1e300")]).timeout, week);
    }

    #[test]
    fn invalid_integers_fall_back() {
        let c = config(&[
            ("GEMINI_MCP_PROGRESS_INTERVAL_MS", "soon"),
            ("GEMINI_MCP_MAX_OUTPUT_BYTES", "0"),
        ]);
        assert_eq!(c.progress_interval, Duration::from_millis(25_000));
        assert_eq!(c.max_output_bytes, 64 << 20);
        assert_eq!(
            config(&[("GEMINI_MCP_PROGRESS_INTERVAL_MS", "50")]).progress_interval.as_millis(),
            50
        );
    }

    #[test]
    fn byte_limits_are_clamped_to_a_kibibyte_and_a_gibibyte() {
        let c = config(&[
            ("GEMINI_MCP_MAX_MESSAGE_BYTES", "18446744073709551615"),
            ("GEMINI_MCP_MAX_OUTPUT_BYTES", "5"),
        ]);
        assert_eq!(c.max_message_bytes, 1 << 30);
        assert_eq!(c.max_output_bytes, 1024);
        let c = config(&[("GEMINI_MCP_MAX_MESSAGE_BYTES", "99999999999999999999999")]);
        assert_eq!(c.max_message_bytes, 1 << 30);
    }

    #[test]
    fn each_invalid_number_gets_one_warning_naming_its_variable() {
        let warn = |name: &str, raw: &str| {
            EnvVar::named(name).unwrap().read(Some(raw), &mut Config::from_env(|_| None))
        };
        assert_eq!(
            warn("GEMINI_MCP_TIMEOUT", "soon").as_deref(),
            Some("GEMINI_MCP_TIMEOUT=\"soon\" is not a positive number of minutes; using 45")
        );
        assert_eq!(
            warn("GEMINI_MCP_TIMEOUT", "1e9").as_deref(),
            Some("GEMINI_MCP_TIMEOUT=\"1e9\" is more than 10080 minutes; using 10080")
        );
        assert_eq!(
            warn("GEMINI_MCP_MAX_OUTPUT_BYTES", "5").as_deref(),
            Some(
                "GEMINI_MCP_MAX_OUTPUT_BYTES=\"5\" is out of range (1024 to 1073741824); using 1024"
            )
        );
        assert_eq!(
            warn("GEMINI_MCP_PROGRESS_INTERVAL_MS", "-1").as_deref(),
            Some("GEMINI_MCP_PROGRESS_INTERVAL_MS=\"-1\" is not a positive integer; using 25000")
        );
        for (name, fine) in [
            ("GEMINI_MCP_TIMEOUT", "10080"),
            ("GEMINI_MCP_PROGRESS_INTERVAL_MS", "10"),
            ("GEMINI_MCP_MAX_MESSAGE_BYTES", " 1024 "),
            ("AGY_MCP_PTY", "maybe"),
            ("GEMINI_MCP_BACKEND", "bogus"),
        ] {
            assert_eq!(warn(name, fine), None, "{name}={fine}");
        }
    }

    #[test]
    fn any_non_empty_test_tools_value_registers() {
        assert!(config(&[("GEMINI_MCP_TEST_TOOLS", "0")]).test_tools);
        assert!(!config(&[("GEMINI_MCP_TEST_TOOLS", "")]).test_tools);
    }

    #[test]
    fn the_backend_is_a_choice_and_an_unknown_name_is_kept() {
        let backend = |raw: &str| config(&[("GEMINI_MCP_BACKEND", raw)]).backend;
        assert_eq!(backend(" Antigravity "), BackendChoice::Agy);
        assert_eq!(backend("AGY"), BackendChoice::Agy);
        assert_eq!(backend("Gemini"), BackendChoice::Gemini);
        assert_eq!(backend("  "), BackendChoice::Auto);
        assert_eq!(backend(" Bogus "), BackendChoice::Unknown("bogus".to_string()));
    }

    #[test]
    fn models_are_trimmed_and_the_fallback_can_be_off() {
        let c = config(&[("GEMINI_MCP_MODEL", " pro "), ("GEMINI_MCP_FALLBACK_MODEL", " OFF ")]);
        assert_eq!(c.model.as_deref(), Some("pro"));
        assert_eq!(c.fallback_model, None);
        let c = config(&[("GEMINI_MCP_MODEL", "off"), ("GEMINI_MCP_FALLBACK_MODEL", " ")]);
        assert_eq!(c.model.as_deref(), Some("off"));
        assert_eq!(c.fallback_model.as_deref(), Some("flash"));
        let c = config(&[("GEMINI_MCP_FALLBACK_MODEL", "gemini-3.1-pro-high")]);
        assert_eq!(c.fallback_model.as_deref(), Some("gemini-3.1-pro-high"));
    }

    #[test]
    fn paths_and_agy_settings_are_trimmed() {
        let c = config(&[
            ("GEMINI_MCP_BACKEND", " Antigravity "),
            ("AGY_CLI_PATH", " /opt/agy "),
            ("GEMINI_CLI_PATH", " C:\\gemini.cmd "),
            ("AGY_PRINT_TIMEOUT", " 30m "),
            ("AGY_MCP_PTY", " Yes "),
            (SearchEnv::HOME_VAR, "/home/u"),
            ("PATHEXT", ".COM;.EXE"),
            ("LOCALAPPDATA", r"C:\Users\u\AppData\Local"),
        ]);
        assert_eq!(c.agy_cli_path, Some(PathBuf::from("/opt/agy")));
        assert_eq!(c.gemini_cli_path, Some(PathBuf::from("C:\\gemini.cmd")));
        assert_eq!(c.agy_print_timeout.as_deref(), Some("30m"));
        assert!(c.agy_pty);
        assert_eq!(c.search.home, Some(PathBuf::from("/home/u")));
        assert_eq!(c.search.pathext.as_deref(), Some(OsStr::new(".COM;.EXE")));
        assert_eq!(
            c.search.local_app_data.as_deref(),
            Some(OsStr::new(r"C:\Users\u\AppData\Local"))
        );
        assert_eq!(
            c.set,
            [
                ("GEMINI_MCP_BACKEND", " Antigravity ".into()),
                ("AGY_CLI_PATH", " /opt/agy ".into()),
                ("GEMINI_CLI_PATH", " C:\\gemini.cmd ".into()),
                ("AGY_PRINT_TIMEOUT", " 30m ".into()),
                ("AGY_MCP_PTY", " Yes ".into()),
            ]
        );
        for off in ["0", "no", "", "on"] {
            assert!(!config(&[("AGY_MCP_PTY", off)]).agy_pty, "{off}");
        }
    }

    #[test]
    fn the_state_dir_is_the_variable_else_the_platforms_state_directory() {
        let set = config(&[("GEMINI_MCP_STATE_DIR", " /srv/state "), ("XDG_STATE_HOME", "/x")]);
        assert_eq!(set.state_dir, Some(PathBuf::from("/srv/state")));
        let vars =
            [(SearchEnv::HOME_VAR, "/home/u"), ("LOCALAPPDATA", r"C:\Users\u\AppData\Local")];
        let (xdg, relative) = (
            [vars[0], vars[1], ("XDG_STATE_HOME", "/x")],
            [vars[0], vars[1], ("XDG_STATE_HOME", "x")],
        );
        if exec::SYSTEM == System::Windows {
            let expected = PathBuf::from(r"C:\Users\u\AppData\Local\gemini-relay");
            assert_eq!(config(&xdg).state_dir, Some(expected));
        } else {
            assert_eq!(config(&xdg).state_dir, Some(PathBuf::from("/x/gemini-relay")));
            let home = PathBuf::from("/home/u/.local/state/gemini-relay");
            assert_eq!(config(&relative).state_dir, Some(home.clone()));
            assert_eq!(config(&vars).state_dir, Some(home));
        }
        assert_eq!(config(&[]).state_dir, None);
    }

    #[test]
    fn home_is_userprofile_on_windows_and_home_elsewhere() {
        let both = config(&[("HOME", "/home/u"), ("USERPROFILE", r"C:\Users\u")]);
        let (expected, other) = match exec::SYSTEM {
            System::Windows => (r"C:\Users\u", "HOME"),
            System::Posix => ("/home/u", "USERPROFILE"),
        };
        assert_eq!(both.search.home, Some(PathBuf::from(expected)));
        // No fallback from one to the other, and an empty value is unset.
        assert_eq!(config(&[(other, "/elsewhere")]).search.home, None);
        assert_eq!(config(&[(SearchEnv::HOME_VAR, "")]).search.home, None);
    }

    #[test]
    fn a_value_at_its_default_changes_nothing() {
        let changes = |name: &str, raw: &str| EnvVar::named(name).unwrap().changes_something(raw);
        assert!(!changes("GEMINI_MCP_TIMEOUT", "45"));
        assert!(!changes("GEMINI_MCP_TIMEOUT", "4.5e1"));
        assert!(!changes("GEMINI_MCP_TIMEOUT", "never"));
        assert!(changes("GEMINI_MCP_TIMEOUT", "46"));
        assert!(!changes("GEMINI_MCP_MAX_OUTPUT_BYTES", "67108864"));
        assert!(changes("GEMINI_MCP_MAX_OUTPUT_BYTES", "5"));
        assert!(!changes("AGY_MCP_PTY", "no"));
        assert!(changes("AGY_MCP_PTY", "TRUE"));
        assert!(!changes("GEMINI_MCP_FALLBACK_MODEL", " flash "));
        assert!(changes("GEMINI_MCP_FALLBACK_MODEL", "off"));
        assert!(changes("GEMINI_MCP_MODEL", "pro"));
        assert!(!changes("AGY_PRINT_TIMEOUT", "   "));
        assert!(changes("GEMINI_MCP_BACKEND", "agy"));
        assert!(changes("GEMINI_MCP_TEST_TOOLS", "0"));
        assert_eq!(changes("GEMINI_CLI_PATH", "C:\\gemini.cmd"), exec::SYSTEM == System::Windows);
    }

    /// The README's "Environment variables" table, row by row, as its four cells.
    fn readme_rows() -> Vec<[String; 4]> {
        let readme = include_str!("../README.md");
        let mut lines =
            readme.lines().skip_while(|line| *line != "| Variable | Default | Values | Meaning |");
        assert!(lines.next().is_some(), "README has no environment table");
        lines
            .skip(1)
            .take_while(|line| line.starts_with('|'))
            .map(|line| {
                let cells: Vec<String> = line
                    .strip_prefix("| ")
                    .and_then(|line| line.strip_suffix(" |"))
                    .unwrap_or_else(|| panic!("malformed README row: {line}"))
                    .split(" | ")
                    .map(str::to_string)
                    .collect();
                cells.try_into().unwrap_or_else(|cells| panic!("not four cells: {cells:?}"))
            })
            .collect()
    }

    #[test]
    fn the_readme_table_is_this_table() {
        let expected: Vec<[String; 4]> = VARS
            .iter()
            .map(|var| {
                [format!("`{}`", var.name), var.default_text(), var.values_text(), var.help.into()]
            })
            .collect();
        assert_eq!(readme_rows(), expected);
    }

    #[test]
    fn rows_that_config_leaves_out_say_so() {
        for var in VARS {
            assert_eq!(
                var.help.contains("`gemini-relay config` leaves it out"),
                !var.carried,
                "{}",
                var.name
            );
            assert!(!var.help.contains(" | "), "{} would split its README cell", var.name);
        }
    }
}
