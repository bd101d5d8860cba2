//! gemini-doctor texts: the report, its verdict, and the Login & Quota check built from `/usage`.
//!
//! The original's `Node.js:` line is replaced by
//! ``- Runtime: `gemini-relay <version> (<os>/<arch>)` ``, and the `OS:` line uses the
//! `std::env::consts` names as they are, e.g. `linux (x86_64)` or `macos (aarch64)`, not Node's
//! `linux (x64)`.

use std::time::Duration;

use serde_json::Value;

use crate::backend::ModelChoice;
use crate::call::Ctx;
use crate::exec::Failure;
use crate::js::{
    number as js_number, round as js_round, string as js_string, truthy as is_truthy, utf16_prefix,
};
use crate::tools::models::BackendInfo;

/// What one `<cli> --version` probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliProbe<'a> {
    /// Whether the `--version` run succeeded.
    pub found: bool,
    /// The first line of its trimmed stdout.
    pub version: &'a str,
    /// The resolved path or bare command name; empty renders as `not resolved`.
    pub path: &'a str,
}

/// The outcome of the Login & Quota section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageCheck {
    /// True only when `/usage` parsed and some quota bucket has something left.
    pub ok: bool,
    /// The report lines shown under **Login & Quota**.
    pub report: String,
}

/// Everything the doctor report shows, gathered by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctorFacts<'a> {
    /// The active backend with its capability flags.
    pub backend: BackendInfo<'a>,
    /// The `via` source, see [`backend_source`].
    pub source: &'a str,
    pub agy: CliProbe<'a>,
    pub gemini: CliProbe<'a>,
    pub usage: UsageCheck,
    /// The default and fallback models, as the active backend's CLI is given them.
    pub models: ModelChoice,
    /// The relay's own version (the crate version).
    pub version: &'a str,
    /// `std::env::consts::OS`, e.g. `linux`.
    pub os: &'a str,
    /// `std::env::consts::ARCH`, e.g. `x86_64`.
    pub arch: &'a str,
}

/// The `via` source: `GEMINI_MCP_BACKEND` when that variable's value is non-empty (whitespace
/// counts), else `auto-default`.
pub fn backend_source(gemini_mcp_backend: Option<&str>) -> &'static str {
    match gemini_mcp_backend {
        Some(value) if !value.is_empty() => "GEMINI_MCP_BACKEND",
        _ => "auto-default",
    }
}

/// Runs the Login & Quota check, or says why it was skipped.
///
/// `run_usage` runs `agy -p /usage --output-format json` and returns its stdout or the error
/// message; it is called only when the agy backend is active and agy was found.
pub fn login_and_quota(
    backend_name: &str,
    agy_found: bool,
    run_usage: impl FnOnce() -> Result<String, String>,
) -> UsageCheck {
    if backend_name != "agy" {
        let report = format!(
            "- \u{2139}\u{FE0F} Skipped: the `{backend_name}` backend is active, so agy's account state does not affect this install."
        );
        return UsageCheck { ok: false, report };
    }
    if !agy_found {
        let report = "- \u{26A0}\u{FE0F} Skipped: `agy` was not found, so login and quota could not be checked.".to_owned();
        return UsageCheck { ok: false, report };
    }
    match run_usage() {
        Ok(stdout) => format_usage_report(&stdout),
        Err(message) => UsageCheck { ok: false, report: probe_failed_report(&message) },
    }
}

/// Turns `/usage` JSON output into one line per quota bucket; the check fails when the output
/// cannot be read, reports a bad status, or shows no quota left.
pub fn format_usage_report(raw: &str) -> UsageCheck {
    let failed = |report: &str| UsageCheck { ok: false, report: report.to_owned() };
    let payload: Value = match serde_json::from_slice(raw.as_bytes()) {
        Ok(payload) => payload,
        Err(_) => {
            return failed(
                "- \u{26A0}\u{FE0F} `/usage` returned output this tool could not parse, so the account could not be verified.",
            );
        }
    };
    let bad_status = payload
        .get("status")
        .filter(|status| is_truthy(status) && status.as_str() != Some("SUCCESS"));
    if let Some(status) = bad_status {
        return failed(&format!(
            "- \u{274C} `/usage` reported status `{}` \u{2014} most likely signed out. Run `agy` once interactively to sign in.",
            js_string(status)
        ));
    }
    let Some(groups) = payload.pointer("/command/data/groups").and_then(Value::as_array) else {
        return failed(
            "- \u{26A0}\u{FE0F} `/usage` returned no quota groups, so the account could not be verified.",
        );
    };
    let mut lines = Vec::new();
    let mut any_remaining = false;
    for group in groups {
        let buckets = group.get("buckets").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let group_name = truthy_field(group, &["name"]).unwrap_or_else(|| "?".to_owned());
        for bucket in buckets {
            let remaining = match bucket.get("remaining_fraction").and_then(Value::as_f64) {
                Some(fraction) => {
                    any_remaining |= fraction > 0.0;
                    format!("{}%", js_number(js_round(fraction * 100.0)))
                }
                None => {
                    any_remaining = true;
                    "unknown".to_owned()
                }
            };
            let window =
                truthy_field(bucket, &["name", "window"]).unwrap_or_else(|| "quota".to_owned());
            let reset =
                truthy_field(bucket, &["reset_time"]).unwrap_or_else(|| "unknown".to_owned());
            lines.push(format!(
                "- `{group_name}` \u{2014} {window}: **{remaining} left**, resets `{reset}`"
            ));
        }
    }
    if lines.is_empty() {
        return failed(
            "- \u{26A0}\u{FE0F} `/usage` returned no quota buckets, so the account could not be verified.",
        );
    }
    let report = lines.join("\n");
    if !any_remaining {
        return UsageCheck {
            ok: false,
            report: format!(
                "{report}\n- \u{274C} Every quota bucket is exhausted \u{2014} model calls will fail until one resets."
            ),
        };
    }
    UsageCheck { ok: true, report }
}

/// The verdict line and whether the system is ready (the `doctor` subcommand's exit status).
pub fn verdict(facts: &DoctorFacts) -> (bool, String) {
    let name = facts.backend.name;
    if name != "agy" {
        if facts.gemini.found {
            return (true, format!("\u{1F389} **System Ready!** The `{name}` backend is active."));
        }
        return (
            false,
            format!(
                "\u{26A0}\u{FE0F} **Action needed:** the `{name}` backend is selected but its CLI was not found."
            ),
        );
    }
    if !facts.agy.found {
        return (
            false,
            "\u{26A0}\u{FE0F} **Action needed:** Install Antigravity CLI: `curl -fsSL https://antigravity.google/cli/install.sh | bash`".to_owned(),
        );
    }
    if facts.usage.ok {
        return (
            true,
            "\u{1F389} **System Ready!** The modern Antigravity CLI backend is active, signed in, and operational.".to_owned(),
        );
    }
    (
        false,
        "\u{26A0}\u{FE0F} **Action needed:** `agy` is installed, but its account check did not come back healthy \u{2014} see **Login & Quota** above.".to_owned(),
    )
}

/// Renders the whole doctor report.
pub fn render_doctor(facts: &DoctorFacts) -> String {
    let backend = &facts.backend;
    let is_agy = backend.name == "agy";
    let flag = |capability: bool| match (is_agy, capability) {
        (false, _) => "N/A",
        (true, true) => "\u{2705} Yes",
        (true, false) => "\u{274C} No",
    };
    let agy_status = if facts.agy.found {
        format!("\u{2705} Installed (`{}`)", facts.agy.version)
    } else {
        "\u{274C} Not found".to_owned()
    };
    let gemini_status = if facts.gemini.found {
        format!("\u{2705} Installed (`{}`)", facts.gemini.version)
    } else {
        "\u{26A0}\u{FE0F} Not installed (retired on 2026-06-18)".to_owned()
    };
    let (_, verdict_line) = verdict(facts);
    let lines = [
        "### Gemini MCP Tool Doctor & Environment Diagnostic".to_owned(),
        String::new(),
        "**Runtime Environment:**".to_owned(),
        format!("- Runtime: `gemini-relay {} ({}/{})`", facts.version, facts.os, facts.arch),
        format!("- OS: `{} ({})`", facts.os, facts.arch),
        format!(
            "- Active Backend: **`{}`** (via `{}`)",
            backend.name.to_ascii_uppercase(),
            facts.source
        ),
        match &facts.models.default {
            Some(model) => format!("- Default Model: `{model}` (`GEMINI_MCP_MODEL`)"),
            None => "- Default Model: none (the CLI's own)".to_owned(),
        },
        match &facts.models.fallback {
            Some(model) => format!("- Quota Fallback Model: `{model}` (`GEMINI_MCP_FALLBACK_MODEL`)"),
            None => "- Quota Fallback Model: off (`GEMINI_MCP_FALLBACK_MODEL=off`)".to_owned(),
        },
        String::new(),
        "**Antigravity CLI (`agy`) - Modern Default:**".to_owned(),
        format!("- Status: {agy_status}"),
        format!("- Executable: `{}`", shown_path(facts.agy.path)),
        format!("- Model Selection: {}", flag(backend.model_selection)),
        format!("- Reasoning Effort: {}", flag(backend.reasoning_effort)),
        format!("- Structured Output: {}", flag(backend.structured_output)),
        String::new(),
        "**Gemini CLI (`gemini`) - Legacy Backend:**".to_owned(),
        format!("- Status: {gemini_status}"),
        format!("- Executable: `{}`", shown_path(facts.gemini.path)),
        String::new(),
        "**Login & Quota** (`agy -p \"/usage\"` \u{2014} answered without an agent turn, costs no tokens):".to_owned(),
        facts.usage.report.clone(),
        String::new(),
        verdict_line,
    ];
    lines.join("\n")
}

/// The two-line report for a `/usage` run that failed; `<detail>` is the error's first line,
/// cut to 300 UTF-16 units (never splitting a character).
fn probe_failed_report(message: &str) -> String {
    let first_line = message.split('\n').next().unwrap_or("");
    let first_line = first_line.strip_suffix('\r').unwrap_or(first_line);
    let detail = utf16_prefix(first_line, 300);
    format!(
        "- \u{274C} Login check failed \u{2014} most likely signed out, offline, or out of quota. Run `agy` once interactively to sign in.\n- Detail: `{detail}`"
    )
}

fn shown_path(path: &str) -> &str {
    if path.is_empty() { "not resolved" } else { path }
}

/// The first truthy field among `keys`, rendered as JavaScript would in a template literal.
fn truthy_field(object: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().filter_map(|key| object.get(key)).find(|v| is_truthy(v)).map(js_string)
}

/// The `--version` probes' bound.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);
/// The `/usage` probe's bound.
const USAGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs gemini-doctor's probes and renders the report; the flag is the verdict ("System Ready").
pub fn run(ctx: &Ctx<'_>) -> (bool, String) {
    let backends = &ctx.services.backends;
    let runner = ctx.runner();
    let backend = ctx.call.backend;
    backends.warn_if_unknown();
    let agy_path = backends.agy.program().display().to_string();
    let agy_version = first_line(backends.agy.version(&runner, VERSION_TIMEOUT));
    let gemini_path = backends.gemini.program().display().to_string();
    let gemini_version = first_line(backends.gemini.version(&runner, VERSION_TIMEOUT));
    let usage = login_and_quota(backend.name(), agy_version.is_some(), || {
        backends.agy.usage(&runner, USAGE_TIMEOUT).map_err(|failure| failure.to_string())
    });
    let facts = DoctorFacts {
        backend: crate::tools::models::info(backend),
        source: backend_source(ctx.services.config.raw("GEMINI_MCP_BACKEND")),
        agy: CliProbe {
            found: agy_version.is_some(),
            version: agy_version.as_deref().unwrap_or_default(),
            path: &agy_path,
        },
        gemini: CliProbe {
            found: gemini_version.is_some(),
            version: gemini_version.as_deref().unwrap_or_default(),
            path: &gemini_path,
        },
        usage,
        models: backends.model_choice(backend),
        version: env!("CARGO_PKG_VERSION"),
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
    };
    // The report quotes the CLIs (a version line, a failure's detail, `/usage` names): shown
    // without their control sequences, on a terminal as in a host.
    (verdict(&facts).0, crate::controls::strip(&render_doctor(&facts)).into_owned())
}

fn first_line(probe: Result<String, Failure>) -> Option<String> {
    let stdout = probe.ok()?;
    Some(stdout.trim().lines().next().unwrap_or_default().trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::Backend;
    use crate::tools::models::info;

    const AGY: BackendInfo<'static> = info(Backend::Agy);
    const GEMINI: BackendInfo<'static> = info(Backend::Gemini);

    const HEALTHY: &str = r#"{"status":"SUCCESS","command":{"name":"usage","data":{"groups":[
        {"name":"Gemini Models","description":"x","buckets":[
            {"id":"gemini-weekly","name":"Weekly","window":"7d","remaining_fraction":0.73,"reset_time":"2026-09-10T18:41Z"},
            {"id":"gemini-daily","name":"Daily","window":"1d","remaining_fraction":0.934,"reset_time":"2026-09-04T00:00Z"}]},
        {"name":"Claude and GPT models","buckets":[
            {"id":"other","window":"7d","remaining_fraction":1,"reset_time":"2026-09-11T00:00Z"}]}]}}}"#;

    const HEALTHY_REPORT: &str =
        "- `Gemini Models` — Weekly: **73% left**, resets `2026-09-10T18:41Z`
- `Gemini Models` — Daily: **93% left**, resets `2026-09-04T00:00Z`
- `Claude and GPT models` — 7d: **100% left**, resets `2026-09-11T00:00Z`";

    fn usage_with_fractions(fractions: &[&str]) -> String {
        let buckets: Vec<String> = fractions
            .iter()
            .map(|f| format!(r#"{{"name":"W","remaining_fraction":{f},"reset_time":"r"}}"#))
            .collect();
        format!(
            r#"{{"status":"SUCCESS","command":{{"data":{{"groups":[{{"name":"G","buckets":[{}]}}]}}}}}}"#,
            buckets.join(",")
        )
    }

    fn check_usage(raw: &str, ok: bool, report: &str) {
        assert_eq!(format_usage_report(raw), UsageCheck { ok, report: report.to_owned() }, "{raw}");
    }

    const R1: &str = "- ⚠️ `/usage` returned output this tool could not parse, so the account could not be verified.";
    const R3: &str =
        "- ⚠️ `/usage` returned no quota groups, so the account could not be verified.";
    const R4: &str =
        "- ⚠️ `/usage` returned no quota buckets, so the account could not be verified.";
    const R5: &str =
        "- ❌ Every quota bucket is exhausted — model calls will fail until one resets.";

    #[test]
    fn usage_healthy() {
        check_usage(HEALTHY, true, HEALTHY_REPORT);
    }

    #[test]
    fn usage_all_exhausted() {
        check_usage(
            &usage_with_fractions(&["0", "0", "0"]),
            false,
            &format!("{}\n{R5}", ["- `G` — W: **0% left**, resets `r`"; 3].join("\n")),
        );
    }

    #[test]
    fn usage_one_bucket_left_is_ok() {
        let check = format_usage_report(&usage_with_fractions(&["0.5", "0", "0"]));
        assert!(check.ok);
        assert!(check.report.starts_with("- `G` — W: **50% left**, resets `r`\n"));
        assert!(!check.report.contains("exhausted"));
    }

    #[test]
    fn usage_unknown_fraction_counts_as_remaining() {
        check_usage(
            r#"{"command":{"data":{"groups":[{"buckets":[{"remaining_fraction":"lots"},{},7]}]}}}"#,
            true,
            "- `?` — quota: **unknown left**, resets `unknown`\n\
             - `?` — quota: **unknown left**, resets `unknown`\n\
             - `?` — quota: **unknown left**, resets `unknown`",
        );
    }

    #[test]
    fn usage_rounds_half_up() {
        let check = format_usage_report(&usage_with_fractions(&["0.125", "0.004"]));
        assert_eq!(
            check.report,
            "- `G` — W: **13% left**, resets `r`\n- `G` — W: **0% left**, resets `r`"
        );
        assert!(check.ok);
    }

    #[test]
    fn usage_window_falls_back_to_window_then_quota() {
        check_usage(
            r#"{"command":{"data":{"groups":[{"name":"G","buckets":[
                {"name":"","window":"7d","remaining_fraction":1},
                {"name":null,"window":"","remaining_fraction":1}]}]}}}"#,
            true,
            "- `G` — 7d: **100% left**, resets `unknown`\n- `G` — quota: **100% left**, resets `unknown`",
        );
    }

    #[test]
    fn usage_bad_status() {
        check_usage(
            r#"{"status":"ERROR"}"#,
            false,
            "- ❌ `/usage` reported status `ERROR` — most likely signed out. Run `agy` once interactively to sign in.",
        );
        check_usage(
            r#"{"status":3,"command":{"data":{"groups":[]}}}"#,
            false,
            "- ❌ `/usage` reported status `3` — most likely signed out. Run `agy` once interactively to sign in.",
        );
    }

    #[test]
    fn usage_falsy_status_is_ignored() {
        check_usage(r#"{"status":"","command":{"data":{"groups":[]}}}"#, false, R4);
        check_usage(r#"{"status":0}"#, false, R3);
    }

    #[test]
    fn usage_unparseable() {
        for raw in ["not json at all", "update available\n{}", ""] {
            check_usage(raw, false, R1);
        }
    }

    #[test]
    fn usage_no_groups() {
        for raw in ["{}", "null", "[1]", "42", r#"{"command":{"data":{"groups":{}}}}"#] {
            check_usage(raw, false, R3);
        }
    }

    #[test]
    fn usage_no_buckets() {
        for raw in [
            r#"{"command":{"data":{"groups":[]}}}"#,
            r#"{"command":{"data":{"groups":[{"name":"G","buckets":[]},{"buckets":"x"},null]}}}"#,
        ] {
            check_usage(raw, false, R4);
        }
    }

    #[test]
    fn usage_failure_texts_have_no_left_and_warn() {
        for raw in ["not json at all", "{}", r#"{"command":{"data":{"groups":[]}}}"#] {
            let check = format_usage_report(raw);
            assert!(!check.ok);
            assert!(check.report.contains("⚠️"));
            assert!(!check.report.contains("left"));
            assert!(!check.report.contains("Signed in"));
        }
    }

    fn check_login(
        backend: &str,
        agy_found: bool,
        run: Result<&str, &str>,
        expect_run: bool,
        ok: bool,
        report: &str,
    ) {
        let mut ran = false;
        let check = login_and_quota(backend, agy_found, || {
            ran = true;
            run.map(str::to_owned).map_err(str::to_owned)
        });
        assert_eq!(ran, expect_run);
        assert_eq!(check, UsageCheck { ok, report: report.to_owned() });
    }

    #[test]
    fn login_skipped_for_other_backend() {
        check_login(
            "gemini",
            true,
            Ok(HEALTHY),
            false,
            false,
            "- ℹ️ Skipped: the `gemini` backend is active, so agy's account state does not affect this install.",
        );
    }

    #[test]
    fn login_skipped_without_agy() {
        check_login(
            "agy",
            false,
            Ok(HEALTHY),
            false,
            false,
            "- ⚠️ Skipped: `agy` was not found, so login and quota could not be checked.",
        );
    }

    #[test]
    fn login_probe_failed_keeps_first_line() {
        check_login(
            "agy",
            true,
            Err("agy timed out after 10s\r\nsecond line"),
            true,
            false,
            "- ❌ Login check failed — most likely signed out, offline, or out of quota. Run `agy` once interactively to sign in.\n- Detail: `agy timed out after 10s`",
        );
    }

    #[test]
    fn login_probe_failed_detail_truncated_to_300() {
        let message = format!("{}tail\nnext", "é".repeat(298));
        let check = login_and_quota("agy", true, || Err(message));
        let detail = check.report.split("- Detail: `").nth(1).unwrap();
        assert_eq!(detail, format!("{}ta`", "é".repeat(298)));
        let emoji = "😀".repeat(151);
        let check = login_and_quota("agy", true, || Err(emoji));
        assert!(check.report.ends_with(&format!("`{}`", "😀".repeat(150))));
    }

    #[test]
    fn login_probe_output_goes_through_format() {
        check_login("agy", true, Ok(HEALTHY), true, true, HEALTHY_REPORT);
    }

    #[test]
    fn source_rule() {
        assert_eq!(backend_source(None), "auto-default");
        assert_eq!(backend_source(Some("")), "auto-default");
        assert_eq!(backend_source(Some(" ")), "GEMINI_MCP_BACKEND");
        assert_eq!(backend_source(Some("agy")), "GEMINI_MCP_BACKEND");
    }

    fn facts(
        backend: BackendInfo<'static>,
        agy_found: bool,
        gemini_found: bool,
        usage: UsageCheck,
    ) -> DoctorFacts<'static> {
        DoctorFacts {
            backend,
            source: "auto-default",
            agy: CliProbe { found: agy_found, version: "1.1.27", path: "/home/u/.local/bin/agy" },
            gemini: CliProbe { found: gemini_found, version: "0.61.0", path: "" },
            usage,
            models: ModelChoice {
                default: None,
                fallback: Some("gemini-3.8-flash-high".to_owned()),
            },
            version: "1.2.0",
            os: "linux",
            arch: "x86_64",
        }
    }

    fn check_verdict(facts: &DoctorFacts, ready: bool, line: &str) {
        assert_eq!(verdict(facts), (ready, line.to_owned()));
        assert!(render_doctor(facts).ends_with(&format!("\n\n{line}")));
    }

    #[test]
    fn verdict_other_backend_found() {
        let facts = facts(GEMINI, false, true, login_and_quota("gemini", false, || unreachable!()));
        check_verdict(&facts, true, "🎉 **System Ready!** The `gemini` backend is active.");
        assert!(!render_doctor(&facts).contains("sign in"));
    }

    #[test]
    fn verdict_other_backend_missing() {
        let facts = facts(GEMINI, true, false, login_and_quota("gemini", true, || unreachable!()));
        check_verdict(
            &facts,
            false,
            "⚠️ **Action needed:** the `gemini` backend is selected but its CLI was not found.",
        );
    }

    #[test]
    fn verdict_agy_missing() {
        let facts = facts(AGY, false, true, login_and_quota("agy", false, || unreachable!()));
        check_verdict(
            &facts,
            false,
            "⚠️ **Action needed:** Install Antigravity CLI: `curl -fsSL https://antigravity.google/cli/install.sh | bash`",
        );
        assert!(!render_doctor(&facts).contains("System Ready"));
    }

    #[test]
    fn verdict_agy_healthy() {
        let facts = facts(AGY, true, false, format_usage_report(HEALTHY));
        check_verdict(
            &facts,
            true,
            "🎉 **System Ready!** The modern Antigravity CLI backend is active, signed in, and operational.",
        );
    }

    #[test]
    fn verdict_agy_unhealthy() {
        let line = "⚠️ **Action needed:** `agy` is installed, but its account check did not come back healthy — see **Login & Quota** above.";
        for usage in [
            format_usage_report(&usage_with_fractions(&["0", "0"])),
            format_usage_report("update available\n{}"),
            login_and_quota("agy", true, || Err("exit 1".to_owned())),
        ] {
            let facts = facts(AGY, true, true, usage);
            check_verdict(&facts, false, line);
            let report = render_doctor(&facts);
            assert!(!report.contains("System Ready"));
            assert!(report.contains("Action needed"));
        }
    }

    #[test]
    fn full_report_agy() {
        let facts = facts(AGY, true, false, format_usage_report(HEALTHY));
        let expected = format!(
            "### Gemini MCP Tool Doctor & Environment Diagnostic

**Runtime Environment:**
- Runtime: `gemini-relay 1.2.0 (linux/x86_64)`
- OS: `linux (x86_64)`
- Active Backend: **`AGY`** (via `auto-default`)
- Default Model: none (the CLI's own)
- Quota Fallback Model: `gemini-3.8-flash-high` (`GEMINI_MCP_FALLBACK_MODEL`)

**Antigravity CLI (`agy`) - Modern Default:**
- Status: ✅ Installed (`1.1.27`)
- Executable: `/home/u/.local/bin/agy`
- Model Selection: ✅ Yes
- Reasoning Effort: ✅ Yes
- Structured Output: ✅ Yes

**Gemini CLI (`gemini`) - Legacy Backend:**
- Status: ⚠️ Not installed (retired on 2026-06-18)
- Executable: `not resolved`

**Login & Quota** (`agy -p \"/usage\"` — answered without an agent turn, costs no tokens):
{HEALTHY_REPORT}

🎉 **System Ready!** The modern Antigravity CLI backend is active, signed in, and operational."
        );
        assert_eq!(render_doctor(&facts), expected);
    }

    #[test]
    fn full_report_gemini() {
        let mut facts =
            facts(GEMINI, false, true, login_and_quota("gemini", false, || unreachable!()));
        facts.source = "GEMINI_MCP_BACKEND";
        facts.agy.path = "agy";
        facts.gemini.path = "/usr/bin/gemini";
        facts.os = "macos";
        facts.arch = "aarch64";
        facts.models = ModelChoice { default: Some("pro".to_owned()), fallback: None };
        let expected = "### Gemini MCP Tool Doctor & Environment Diagnostic

**Runtime Environment:**
- Runtime: `gemini-relay 1.2.0 (macos/aarch64)`
- OS: `macos (aarch64)`
- Active Backend: **`GEMINI`** (via `GEMINI_MCP_BACKEND`)
- Default Model: `pro` (`GEMINI_MCP_MODEL`)
- Quota Fallback Model: off (`GEMINI_MCP_FALLBACK_MODEL=off`)

**Antigravity CLI (`agy`) - Modern Default:**
- Status: ❌ Not found
- Executable: `agy`
- Model Selection: N/A
- Reasoning Effort: N/A
- Structured Output: N/A

**Gemini CLI (`gemini`) - Legacy Backend:**
- Status: ✅ Installed (`0.61.0`)
- Executable: `/usr/bin/gemini`

**Login & Quota** (`agy -p \"/usage\"` — answered without an agent turn, costs no tokens):
- ℹ️ Skipped: the `gemini` backend is active, so agy's account state does not affect this install.

🎉 **System Ready!** The `gemini` backend is active.";
        assert_eq!(render_doctor(&facts), expected);
    }

    #[test]
    fn agy_flag_follows_capability() {
        let backend = BackendInfo { reasoning_effort: false, ..AGY };
        let report = render_doctor(&facts(backend, true, true, format_usage_report(HEALTHY)));
        assert!(report.contains("- Model Selection: ✅ Yes\n- Reasoning Effort: ❌ No\n"));
    }
}
