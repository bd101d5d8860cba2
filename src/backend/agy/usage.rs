//! The `gemini-doctor` login-and-quota report built from `agy -p /usage --output-format json`
//! (SPEC §2.4.5).

use serde_json::Value;

use crate::backend::agy::{js_number, js_string, truthy};

/// `(ok, report)`: ok when the payload parsed, reported success and some quota bucket has quota left.
pub fn format_usage_report(raw: &str) -> (bool, String) {
    let Ok(payload) = serde_json::from_str::<Value>(raw) else {
        let r1 = "- ⚠️ `/usage` returned output this tool could not parse, so the account could not be verified.";
        return (false, r1.to_string());
    };
    let status = &payload["status"];
    if truthy(status) && status.as_str() != Some("SUCCESS") {
        return (
            false,
            format!(
                "- ❌ `/usage` reported status `{}` — most likely signed out. Run `agy` once \
                 interactively to sign in.",
                js_string(status)
            ),
        );
    }
    let Some(groups) = payload["command"]["data"]["groups"].as_array() else {
        let r3 = "- ⚠️ `/usage` returned no quota groups, so the account could not be verified.";
        return (false, r3.to_string());
    };

    let mut lines = Vec::new();
    let mut any_remaining = false;
    for group in groups {
        let group_name = first_truthy(&[&group["name"]], "?");
        let Some(buckets) = group["buckets"].as_array() else { continue };
        for bucket in buckets {
            let remaining = match bucket["remaining_fraction"].as_f64() {
                Some(fraction) => {
                    any_remaining |= fraction > 0.0;
                    format!("{}%", js_number(round_half_up(fraction * 100.0)))
                }
                None => {
                    any_remaining = true;
                    "unknown".to_string()
                }
            };
            let window = first_truthy(&[&bucket["name"], &bucket["window"]], "quota");
            let reset = first_truthy(&[&bucket["reset_time"]], "unknown");
            lines.push(format!(
                "- `{group_name}` — {window}: **{remaining} left**, resets `{reset}`"
            ));
        }
    }

    if lines.is_empty() {
        let r4 = "- ⚠️ `/usage` returned no quota buckets, so the account could not be verified.";
        return (false, r4.to_string());
    }
    let report = lines.join("\n");
    if !any_remaining {
        let r5 = "- ❌ Every quota bucket is exhausted — model calls will fail until one resets.";
        return (false, format!("{report}\n{r5}"));
    }
    (true, report)
}

/// JavaScript `Math.round`: the nearest integer, ties toward positive infinity.
fn round_half_up(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 { floor + 1.0 } else { floor }
}

/// `String(a || b || fallback)`.
fn first_truthy(values: &[&Value], fallback: &str) -> String {
    match values.iter().find(|value| truthy(value)) {
        Some(value) => js_string(value),
        None => fallback.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    const R1: &str = "- ⚠️ `/usage` returned output this tool could not parse, so the account could not be verified.";
    const R3: &str =
        "- ⚠️ `/usage` returned no quota groups, so the account could not be verified.";
    const R4: &str =
        "- ⚠️ `/usage` returned no quota buckets, so the account could not be verified.";
    const R5: &str =
        "- ❌ Every quota bucket is exhausted — model calls will fail until one resets.";

    fn payload(fractions: [f64; 3]) -> String {
        json!({"status": "SUCCESS", "command": {"name": "usage", "data": {"groups": [
            {"name": "Gemini Models", "description": "…", "buckets": [
                {"id": "gemini-weekly", "name": "Weekly", "window": "7d",
                 "remaining_fraction": fractions[0], "reset_time": "2026-09-10T18:41Z"},
                {"id": "gemini-daily", "window": "1d",
                 "remaining_fraction": fractions[1], "reset_time": "2026-09-04T00:00Z"}
            ]},
            {"name": "Claude and GPT models", "buckets": [
                {"id": "other", "name": "Weekly",
                 "remaining_fraction": fractions[2], "reset_time": "2026-09-11T00:00Z"}
            ]}
        ]}}})
        .to_string()
    }

    fn check(raw: &str, ok: bool, report: &str) {
        assert_eq!(format_usage_report(raw), (ok, report.to_string()), "raw: {raw}");
    }

    #[test]
    fn healthy_report() {
        check(
            &payload([0.73, 0.934, 1.0]),
            true,
            "- `Gemini Models` — Weekly: **73% left**, resets `2026-09-10T18:41Z`\n\
             - `Gemini Models` — 1d: **93% left**, resets `2026-09-04T00:00Z`\n\
             - `Claude and GPT models` — Weekly: **100% left**, resets `2026-09-11T00:00Z`",
        );
    }

    #[test]
    fn all_exhausted() {
        check(
            &payload([0.0, 0.0, 0.0]),
            false,
            &format!(
                "- `Gemini Models` — Weekly: **0% left**, resets `2026-09-10T18:41Z`\n\
                 - `Gemini Models` — 1d: **0% left**, resets `2026-09-04T00:00Z`\n\
                 - `Claude and GPT models` — Weekly: **0% left**, resets `2026-09-11T00:00Z`\n{R5}"
            ),
        );
        let (ok, report) = format_usage_report(&payload([0.0, 0.0, 0.0]));
        assert!(!ok && report.contains("exhausted"));
    }

    #[test]
    fn one_bucket_left_is_ok() {
        let (ok, report) = format_usage_report(&payload([0.5, 0.0, 0.0]));
        assert!(ok);
        assert!(report.contains("**50% left**"));
        assert!(!report.contains("exhausted"));
    }

    #[test]
    fn error_status() {
        let raw = r#"{"status":"ERROR","command":{"data":{"groups":[]}}}"#;
        check(
            raw,
            false,
            "- ❌ `/usage` reported status `ERROR` — most likely signed out. Run `agy` once \
             interactively to sign in.",
        );
        let (ok, report) = format_usage_report(r#"{"status":"success"}"#);
        assert!(!ok && report.contains("`success`"));
        let (ok, report) = format_usage_report(r#"{"status":7}"#);
        assert!(!ok && report.contains("`7`"));
    }

    #[test]
    fn unverifiable_payloads() {
        for (raw, expect) in [
            ("not json at all", R1),
            ("update available\n{}", R1),
            ("", R1),
            ("{}", R3),
            ("null", R3),
            ("[1]", R3),
            (r#"{"status":"","command":{"data":{"groups":{}}}}"#, R3),
            (r#"{"status":"SUCCESS","command":{"data":{"groups":[]}}}"#, R4),
            (r#"{"command":{"data":{"groups":[{"name":"g","buckets":{}},{"name":"h"}]}}}"#, R4),
        ] {
            check(raw, false, expect);
            assert!(
                expect.contains("⚠️") && !expect.contains("left") && !expect.contains("Signed in")
            );
        }
    }

    #[test]
    fn unknown_fields_and_defaults() {
        let raw = r#"{"command":{"data":{"groups":[{"buckets":[{"remaining_fraction":"x"},null,{"name":"","window":"","remaining_fraction":0}]}]}}}"#;
        check(
            raw,
            true,
            "- `?` — quota: **unknown left**, resets `unknown`\n\
             - `?` — quota: **unknown left**, resets `unknown`\n\
             - `?` — quota: **0% left**, resets `unknown`",
        );
    }

    #[test]
    fn rounding_half_up() {
        let line = |fraction: f64| {
            let raw = json!({"command":{"data":{"groups":[{"name":"g","buckets":[{"name":"w","remaining_fraction":fraction}]}]}}});
            format_usage_report(&raw.to_string()).1
        };
        assert!(line(0.005).contains("**1% left**"));
        assert!(line(0.125).contains("**13% left**"));
        assert!(line(0.994).contains("**99% left**"));
        assert!(line(0.995).contains("**100% left**"));
        assert!(line(-0.004).contains("**0% left**"));
        assert!(line(-0.005).contains("**0% left**"));
        assert!(line(1.5).contains("**150% left**"));
    }

    #[test]
    fn round_half_up_cases() {
        assert_eq!(round_half_up(72.5), 73.0);
        assert_eq!(round_half_up(-0.5), 0.0);
        assert_eq!(round_half_up(-1.5), -1.0);
        assert_eq!(round_half_up(93.4), 93.0);
        assert_eq!(round_half_up(0.49999999999999994), 0.0);
    }
}
