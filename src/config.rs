//! Startup configuration: the environment variables read once when the server starts, turned into
//! typed values in one place. Invalid numbers log one warning and fall back to their defaults.

use std::time::Duration;

/// Defaults, centralised.
pub const DEFAULT_TIMEOUT_MINUTES: f64 = 45.0;
pub const DEFAULT_PROGRESS_INTERVAL_MS: u64 = 25_000;
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// What the server reads once at startup. Per-call variables (`GEMINI_MCP_BACKEND`,
/// `AGY_PRINT_TIMEOUT`, `AGY_MCP_PTY`) are read where they are used, at call time.
#[derive(Debug, Clone)]
pub struct Config {
    /// `GEMINI_MCP_TIMEOUT`: the wrapper deadline of every CLI run.
    pub timeout: Duration,
    /// `GEMINI_MCP_PROGRESS_INTERVAL_MS`: the keepalive cadence.
    pub progress_interval: Duration,
    /// `GEMINI_MCP_MAX_MESSAGE_BYTES`: the largest JSON-RPC line accepted.
    pub max_message_bytes: usize,
    /// `GEMINI_MCP_MAX_OUTPUT_BYTES`: the cap on each of a child's stdout and stderr.
    pub max_output_bytes: usize,
    /// `GEMINI_MCP_TEST_TOOLS`: registers `gemini-timeout-test`.
    pub test_tools: bool,
}

/// One row of the `--help` environment table.
pub struct EnvVar {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every environment variable the server reads, for `--help` and the README.
pub const ENV_VARS: &[EnvVar] = &[
    EnvVar {
        name: "GEMINI_MCP_BACKEND",
        default: "agy (gemini before 2026-06-18)",
        meaning: "backend: agy, antigravity or gemini; read per call",
    },
    EnvVar {
        name: "AGY_CLI_PATH",
        default: "~/.local/bin/agy if it exists, else agy on PATH",
        meaning: "full path of the agy executable",
    },
    EnvVar {
        name: "GEMINI_MCP_TIMEOUT",
        default: "45",
        meaning: "deadline of each CLI run, in minutes (fractions allowed)",
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
        meaning: "interval of progress keepalives, in milliseconds",
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_MESSAGE_BYTES",
        default: "67108864",
        meaning: "largest JSON-RPC message accepted, in bytes",
    },
    EnvVar {
        name: "GEMINI_MCP_MAX_OUTPUT_BYTES",
        default: "67108864",
        meaning: "cap on a CLI's stdout and on its stderr, in bytes",
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
        Config {
            timeout: parse_timeout(get("GEMINI_MCP_TIMEOUT").as_deref()),
            progress_interval: Duration::from_millis(positive_int(
                "GEMINI_MCP_PROGRESS_INTERVAL_MS",
                get("GEMINI_MCP_PROGRESS_INTERVAL_MS").as_deref(),
                DEFAULT_PROGRESS_INTERVAL_MS,
            )),
            max_message_bytes: positive_int(
                "GEMINI_MCP_MAX_MESSAGE_BYTES",
                get("GEMINI_MCP_MAX_MESSAGE_BYTES").as_deref(),
                DEFAULT_MAX_MESSAGE_BYTES as u64,
            ) as usize,
            max_output_bytes: positive_int(
                "GEMINI_MCP_MAX_OUTPUT_BYTES",
                get("GEMINI_MCP_MAX_OUTPUT_BYTES").as_deref(),
                DEFAULT_MAX_OUTPUT_BYTES as u64,
            ) as usize,
            test_tools: get("GEMINI_MCP_TEST_TOOLS").is_some_and(|v| !v.is_empty()),
        }
    }
}

/// `GEMINI_MCP_TIMEOUT` (§4.3): minutes as a number (JS `Number()`-like: decimals and exponents);
/// finite and positive → `round(minutes × 60000)` ms, otherwise the default.
fn parse_timeout(raw: Option<&str>) -> Duration {
    let default = Duration::from_millis((DEFAULT_TIMEOUT_MINUTES * 60_000.0) as u64);
    let Some(raw) = raw else { return default };
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return default;
    }
    match trimmed.parse::<f64>().ok() {
        Some(minutes) if minutes.is_finite() && minutes > 0.0 => {
            Duration::from_millis((minutes * 60_000.0).round().max(1.0) as u64)
        }
        _ => {
            log::warn!(
                "GEMINI_MCP_TIMEOUT={trimmed:?} is not a positive number of minutes; using 45"
            );
            default
        }
    }
}

fn positive_int(name: &str, raw: Option<&str>, default: u64) -> u64 {
    let Some(raw) = raw else { return default };
    match raw.trim().parse::<u64>() {
        Ok(n) if n > 0 => n,
        _ => {
            log::warn!("{name}={:?} is not a positive integer; using {default}", raw.trim());
            default
        }
    }
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
        assert!(!c.test_tools);
    }

    #[test]
    fn timeout_accepts_fractions_and_exponents() {
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", " 0.5 ")]).timeout, Duration::from_secs(30));
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", "0.05")]).timeout, Duration::from_secs(3));
        assert_eq!(config(&[("GEMINI_MCP_TIMEOUT", "1e1")]).timeout, Duration::from_secs(600));
    }

    #[test]
    fn invalid_timeouts_fall_back() {
        for bad in ["", "abc", "0", "-3", "NaN", "inf"] {
            assert_eq!(
                config(&[("GEMINI_MCP_TIMEOUT", bad)]).timeout,
                Duration::from_secs(2700),
                "{bad}"
            );
        }
    }

    #[test]
    fn invalid_integers_fall_back() {
        let c = config(&[
            ("GEMINI_MCP_PROGRESS_INTERVAL_MS", "soon"),
            ("GEMINI_MCP_MAX_OUTPUT_BYTES", "0"),
        ]);
        assert_eq!(c.progress_interval, Duration::from_millis(25_000));
        assert_eq!(c.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES);
        assert_eq!(
            config(&[("GEMINI_MCP_PROGRESS_INTERVAL_MS", "50")]).progress_interval.as_millis(),
            50
        );
    }

    #[test]
    fn any_non_empty_test_tools_value_registers() {
        assert!(config(&[("GEMINI_MCP_TEST_TOOLS", "0")]).test_tools);
        assert!(!config(&[("GEMINI_MCP_TEST_TOOLS", "")]).test_tools);
    }
}
