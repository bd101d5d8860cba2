//! Configuration: every environment variable the relay reads, read once at startup in this one
//! place and turned into typed, clamped values. (The original read some "per call"; nothing
//! outside the process can change its environment, so reading once is the same.) An invalid value
//! logs one warning and falls back to its default; an out-of-range one is clamped with a warning.

use std::path::PathBuf;
use std::time::Duration;

use crate::js;

pub const DEFAULT_TIMEOUT_MINUTES: f64 = 45.0;
pub const DEFAULT_PROGRESS_INTERVAL_MS: u64 = 25_000;
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 64 * 1024 * 1024;
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;

/// The byte limits' range: 1 KiB to 1 GiB.
const MIN_BYTES: u64 = 1024;
const MAX_BYTES: u64 = 1024 * 1024 * 1024;
/// The deadline's range: a millisecond to a week.
const MAX_TIMEOUT_MINUTES: f64 = 7.0 * 24.0 * 60.0;
/// The keepalive interval's range: 10 ms to an hour.
const MIN_PROGRESS_INTERVAL_MS: u64 = 10;
const MAX_PROGRESS_INTERVAL_MS: u64 = 3_600_000;

/// What the relay was configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `GEMINI_MCP_TIMEOUT`: the deadline of every CLI run.
    pub timeout: Duration,
    /// `GEMINI_MCP_PROGRESS_INTERVAL_MS`: the keepalive cadence.
    pub progress_interval: Duration,
    /// `GEMINI_MCP_MAX_MESSAGE_BYTES`: the largest JSON-RPC line accepted.
    pub max_message_bytes: usize,
    /// `GEMINI_MCP_MAX_OUTPUT_BYTES`: the cap on each of a child's stdout and stderr.
    pub max_output_bytes: usize,
    /// `GEMINI_MCP_TEST_TOOLS`: registers `gemini-timeout-test`.
    pub test_tools: bool,
    /// `GEMINI_MCP_BACKEND`, trimmed and lower-cased; empty when unset.
    pub backend: String,
    /// `AGY_CLI_PATH`, trimmed, when set and non-empty.
    pub agy_cli_path: Option<PathBuf>,
    /// `AGY_PRINT_TIMEOUT`, trimmed, when set and non-empty.
    pub agy_print_timeout: Option<String>,
    /// `AGY_MCP_PTY`: `1`, `true` or `yes` (any case) turns PTY recovery on.
    pub agy_pty: bool,
    /// `HOME`: locates `~/.local/bin/agy` and agy's conversation store.
    pub home: Option<PathBuf>,
    /// The relay's own variables that are set, in `ENV_VARS` order, for `gemini-relay config`.
    pub set: Vec<(&'static str, String)>,
}

/// One row of the `--help` environment table.
pub struct EnvVar {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every environment variable of the relay's own, for `--help` and the README.
pub const ENV_VARS: &[EnvVar] = &[
    EnvVar {
        name: "GEMINI_MCP_BACKEND",
        default: "agy (gemini before 2026-06-18)",
        meaning: "backend: agy, antigravity or gemini",
    },
    EnvVar {
        name: "AGY_CLI_PATH",
        default: "~/.local/bin/agy if it exists, else agy on PATH",
        meaning: "full path of the agy executable",
    },
    EnvVar {
        name: "GEMINI_MCP_TIMEOUT",
        default: "45",
        meaning: "deadline of each CLI run, in minutes (fractions allowed, at most a week)",
    },
    EnvVar {
        name: "AGY_PRINT_TIMEOUT",
        default: "derived from GEMINI_MCP_TIMEOUT",
        meaning: "value passed to agy --print-timeout, e.g. 30m",
    },
    EnvVar {
        name: "AGY_MCP_PTY",
        default: "off",
        meaning: "1/true/yes: recover agy output through a pseudo-terminal",
    },
    EnvVar {
        name: "GEMINI_MCP_TEST_TOOLS",
        default: "unset",
        meaning: "any non-empty value registers gemini-timeout-test",
    },
    EnvVar {
        name: "GEMINI_MCP_PROGRESS_INTERVAL_MS",
        default: "25000",
        meaning: "interval of progress keepalives, in milliseconds (10 to 3600000)",
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_MESSAGE_BYTES",
        default: "67108864",
        meaning: "largest JSON-RPC message accepted, in bytes (1 KiB to 1 GiB)",
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_OUTPUT_BYTES",
        default: "67108864",
        meaning: "cap on a CLI's stdout and on its stderr, in bytes (1 KiB to 1 GiB)",
    },
    EnvVar {
        name: "RUST_LOG",
        default: "info",
        meaning: "stderr log filter (error, warn, info, debug)",
    },
];

impl Config {
    /// Reads the configuration through `get` (the process environment in production).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Config {
        let text =
            |name: &str| get(name).map(|v| js::trim(&v).to_string()).filter(|v| !v.is_empty());
        let set = ENV_VARS
            .iter()
            .filter(|var| var.name != "RUST_LOG")
            .filter_map(|var| Some((var.name, get(var.name).filter(|v| !v.is_empty())?)))
            .collect();
        Config {
            timeout: timeout(get("GEMINI_MCP_TIMEOUT").as_deref()),
            progress_interval: Duration::from_millis(integer(
                "GEMINI_MCP_PROGRESS_INTERVAL_MS",
                get("GEMINI_MCP_PROGRESS_INTERVAL_MS").as_deref(),
                DEFAULT_PROGRESS_INTERVAL_MS,
                (MIN_PROGRESS_INTERVAL_MS, MAX_PROGRESS_INTERVAL_MS),
            )),
            max_message_bytes: integer(
                "GEMINI_MCP_MAX_MESSAGE_BYTES",
                get("GEMINI_MCP_MAX_MESSAGE_BYTES").as_deref(),
                DEFAULT_MAX_MESSAGE_BYTES,
                (MIN_BYTES, MAX_BYTES),
            ) as usize,
            max_output_bytes: integer(
                "GEMINI_MCP_MAX_OUTPUT_BYTES",
                get("GEMINI_MCP_MAX_OUTPUT_BYTES").as_deref(),
                DEFAULT_MAX_OUTPUT_BYTES,
                (MIN_BYTES, MAX_BYTES),
            ) as usize,
            test_tools: get("GEMINI_MCP_TEST_TOOLS").is_some_and(|v| !v.is_empty()),
            backend: text("GEMINI_MCP_BACKEND").unwrap_or_default().to_lowercase(),
            agy_cli_path: text("AGY_CLI_PATH").map(PathBuf::from),
            agy_print_timeout: text("AGY_PRINT_TIMEOUT"),
            agy_pty: text("AGY_MCP_PTY")
                .is_some_and(|v| matches!(v.to_lowercase().as_str(), "1" | "true" | "yes")),
            home: get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
            set,
        }
    }

    /// The raw value of one of the relay's variables, when set and non-empty.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.set.iter().find(|(n, _)| *n == name).map(|(_, value)| value.as_str())
    }

    /// The configuration of this process.
    pub fn from_process_env() -> Config {
        Config::from_env(|name| std::env::var(name).ok())
    }
}

/// `GEMINI_MCP_TIMEOUT`: minutes as a number (decimals and exponents); finite and positive
/// → `round(minutes × 60000)` ms, at most a week; otherwise the default.
fn timeout(raw: Option<&str>) -> Duration {
    let default = Duration::from_millis((DEFAULT_TIMEOUT_MINUTES * 60_000.0) as u64);
    let Some(trimmed) = raw.map(str::trim).filter(|raw| !raw.is_empty()) else { return default };
    let minutes = match trimmed.parse::<f64>() {
        Ok(minutes) if minutes.is_finite() && minutes > 0.0 => minutes,
        _ => {
            log::warn!(
                "GEMINI_MCP_TIMEOUT={trimmed:?} is not a positive number of minutes; using 45"
            );
            return default;
        }
    };
    if minutes > MAX_TIMEOUT_MINUTES {
        log::warn!(
            "GEMINI_MCP_TIMEOUT={trimmed:?} is more than a week; using {MAX_TIMEOUT_MINUTES}"
        );
    }
    let minutes = minutes.min(MAX_TIMEOUT_MINUTES);
    Duration::from_millis((minutes * 60_000.0).round().max(1.0) as u64)
}

/// A positive integer within `range`: invalid → the default, out of range → the nearest bound,
/// each with a warning.
fn integer(name: &str, raw: Option<&str>, default: u64, (min, max): (u64, u64)) -> u64 {
    let Some(raw) = raw.map(str::trim) else { return default };
    let n = match raw.parse::<u64>() {
        Ok(n) if n > 0 => n,
        // Too many digits for u64 is still a number, and far above the range.
        Err(_) if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) => u64::MAX,
        _ => {
            log::warn!("{name}={raw:?} is not a positive integer; using {default}");
            return default;
        }
    };
    let clamped = n.clamp(min, max);
    if clamped != n {
        log::warn!("{name}={raw:?} is out of range ({min} to {max}); using {clamped}");
    }
    clamped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        Config::from_env(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn defaults() {
        let c = config(&[]);
        assert_eq!(c.timeout, Duration::from_millis(2_700_000));
        assert_eq!(c.progress_interval, Duration::from_millis(25_000));
        assert_eq!(c.max_message_bytes, 64 * 1024 * 1024);
        assert_eq!(c.max_output_bytes, 64 * 1024 * 1024);
        assert!(!c.test_tools && !c.agy_pty);
        assert_eq!(c.backend, "");
        assert!(c.agy_cli_path.is_none() && c.agy_print_timeout.is_none() && c.home.is_none());
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
        assert_eq!(c.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES as usize);
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
    fn any_non_empty_test_tools_value_registers() {
        assert!(config(&[("GEMINI_MCP_TEST_TOOLS", "0")]).test_tools);
        assert!(!config(&[("GEMINI_MCP_TEST_TOOLS", "")]).test_tools);
    }

    #[test]
    fn backend_and_agy_settings_are_trimmed() {
        let c = config(&[
            ("GEMINI_MCP_BACKEND", " Antigravity "),
            ("AGY_CLI_PATH", " /opt/agy "),
            ("AGY_PRINT_TIMEOUT", " 30m "),
            ("AGY_MCP_PTY", " Yes "),
            ("HOME", "/home/u"),
        ]);
        assert_eq!(c.backend, "antigravity");
        assert_eq!(c.agy_cli_path, Some(PathBuf::from("/opt/agy")));
        assert_eq!(c.agy_print_timeout.as_deref(), Some("30m"));
        assert!(c.agy_pty);
        assert_eq!(c.home, Some(PathBuf::from("/home/u")));
        assert_eq!(
            c.set,
            [
                ("GEMINI_MCP_BACKEND", " Antigravity ".to_string()),
                ("AGY_CLI_PATH", " /opt/agy ".to_string()),
                ("AGY_PRINT_TIMEOUT", " 30m ".to_string()),
                ("AGY_MCP_PTY", " Yes ".to_string()),
            ]
        );
        for off in ["0", "no", "", "on"] {
            assert!(!config(&[("AGY_MCP_PTY", off)]).agy_pty, "{off}");
        }
    }
}
