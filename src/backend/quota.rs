//! Exhausted quotas: recognising the CLIs' quota texts and the reset they name, and the sentences a
//! client reads about them (the failure, and the notice on an answer from the fallback model).

use std::time::{Duration, SystemTime};

use crate::js;

/// Texts agy and the Gemini CLI print when a model's quota is used up.
const MARKERS: [&str; 5] = [
    "Individual quota reached",
    "RESOURCE_EXHAUSTED",
    "TerminalQuotaError",
    "You have exhausted your capacity",
    "Quota exceeded",
];

/// Where a CLI names the time left: agy's `Resets in 3h38m47s.`, the Gemini CLI's `Your quota will
/// reset after 8h44m7s.`
const RESET_MARKERS: [&str; 3] = ["Resets in ", "resets in ", "reset after "];

/// An exhausted quota, as a failed run reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// How long until it resets, when the CLI said.
    pub reset: Option<Duration>,
}

/// The longest reset the texts name: a year (a longer one is read as none).
const MAX_RESET_SECS: u64 = 366 * 24 * 3600;

/// The quota failure `text` reports, if it is one; the reset is looked for in `text`, then in
/// `more` (agy prints it on a line of its own).
pub fn find(text: &str, more: &str) -> Option<Quota> {
    if !MARKERS.iter().any(|marker| text.contains(marker)) {
        return None;
    }
    Some(Quota { reset: reset_in(text).or_else(|| reset_in(more)) })
}

/// The failure a client reads: `Gemini quota is exhausted for <model> (resets in 3h39m, at
/// <RFC 3339 UTC>). Try model: "flash", or wait.`, the reset part only when the CLI named one.
/// When flash is a model that was just refused (`try_flash` false), the advice is only to wait.
pub fn exhausted_text(model: &str, quota: &Quota, now: SystemTime, try_flash: bool) -> String {
    let advice = if try_flash { "Try model: \"flash\", or wait." } else { WAIT };
    format!("Gemini quota is exhausted for {model}{}. {advice}", reset_part(quota, now))
}

/// The advice when no other model is worth a try.
const WAIT: &str = "Wait for it to reset.";

/// `<model> quota is exhausted (resets in …)`: the start of the notice on a fallback answer, and of
/// the text when the fallback failed too.
pub fn exhausted_clause(model: &str, quota: &Quota, now: SystemTime) -> String {
    format!("{model} quota is exhausted{}", reset_part(quota, now))
}

/// ` (resets in <h>h<m>m, at <time>)`, or nothing without a reset. The minutes are rounded up, so
/// a wait of that long is enough; the time is whole seconds, UTC.
fn reset_part(quota: &Quota, now: SystemTime) -> String {
    let Some(reset) = quota.reset else { return String::new() };
    let minutes = reset.as_millis().div_ceil(60_000);
    let Some(at) = now.checked_add(reset) else { return String::new() };
    let at = js::iso_string(at);
    // `toISOString` ends `.mmmZ`; a reset time to the millisecond would claim a precision no CLI gives.
    let at = format!("{}Z", &at[..at.len().min(19)]);
    format!(" (resets in {}h{}m, at {at})", minutes / 60, minutes % 60)
}

/// The duration after the first reset marker in `text`.
fn reset_in(text: &str) -> Option<Duration> {
    RESET_MARKERS.iter().find_map(|marker| {
        let at = text.find(marker)?;
        parse_duration(&text[at + marker.len()..])
    })
}

/// A Go-style duration at the start of `text`, such as `143h57m55s`, `58s` or `1h2m3.5s`; `None`
/// when `text` does not start with one.
fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut seconds = 0.0;
    let mut any = false;
    loop {
        let int = rest.bytes().take_while(u8::is_ascii_digit).count();
        if int == 0 {
            break;
        }
        let mut end = int;
        if rest[end..].starts_with('.') {
            let frac = rest[end + 1..].bytes().take_while(u8::is_ascii_digit).count();
            if frac > 0 {
                end += 1 + frac;
            }
        }
        let Ok(value) = rest[..end].parse::<f64>() else { break };
        let unit = &rest[end..];
        let (scale, len) = match unit.as_bytes().first() {
            Some(b'm') if unit.starts_with("ms") => (0.001, 2),
            Some(b'd') => (86_400.0, 1),
            Some(b'h') => (3_600.0, 1),
            Some(b'm') => (60.0, 1),
            Some(b's') => (1.0, 1),
            _ => break,
        };
        seconds += value * scale;
        rest = &unit[len..];
        any = true;
    }
    // A reset no clock can reach (say `Resets in 99999999999999999999h`) is no reset at all.
    let reset = Duration::try_from_secs_f64(seconds).ok().filter(|d| d.as_secs() <= MAX_RESET_SECS);
    any.then_some(reset).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::UNIX_EPOCH;

    /// 2026-12-01T22:00:00Z.
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_162_400)
    }

    #[test]
    fn each_cli_quota_text_is_recognised_with_its_reset() {
        let cases = [
            (
                "Individual quota reached. Contact your administrator to enable overages. Resets in 3h38m47s.",
                Some(3 * 3600 + 38 * 60 + 47),
            ),
            ("Individual quota reached. Contact your administrator to enable overages.", None),
            ("RESOURCE_EXHAUSTED: Individual quota reached", None),
            (
                "TerminalQuotaError: You have exhausted your capacity on this model. Your quota will reset after 8h44m7s.",
                Some(8 * 3600 + 44 * 60 + 7),
            ),
            (
                "Attempt 1 failed: You have exhausted your capacity on this model. Your quota will reset after 5s.. Retrying",
                Some(5),
            ),
            ("Quota exceeded for quota metric 'Gemini 2.5 Pro Requests'", None),
        ];
        for (text, reset) in cases {
            let quota = find(text, "").unwrap_or_else(|| panic!("not a quota text: {text}"));
            assert_eq!(quota.reset, reset.map(Duration::from_secs), "{text}");
        }
        for other in ["invalid model selection", "quota", "Command failed with exit code 1: boom"] {
            assert_eq!(find(other, ""), None, "{other}");
        }
    }

    #[test]
    fn the_reset_may_be_on_another_line() {
        let first =
            "⚠ Individual quota reached. Please upgrade your subscription to increase your limits.";
        let whole = format!("{first}\nResets in 143h57m55s.");
        let quota = find(first, &whole).unwrap();
        assert_eq!(quota.reset, Some(Duration::from_secs(143 * 3600 + 57 * 60 + 55)));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2d3h"), Some(Duration::from_secs(2 * 86_400 + 3 * 3600)));
        assert_eq!(parse_duration("1m30.5s."), Some(Duration::from_millis(90_500)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("3h 5m"), Some(Duration::from_secs(3 * 3600)));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("12"), None);
    }

    #[test]
    fn a_reset_no_clock_can_reach_is_no_reset_and_never_panics() {
        for huge in ["99999999999999999999h", "3000000000000000h", "367d"] {
            assert_eq!(parse_duration(huge), None, "{huge}");
            let text = format!("Individual quota reached. Resets in {huge}.");
            let quota = find(&text, "").unwrap();
            let shown = exhausted_text("the default model", &quota, now(), true);
            assert_eq!(
                shown,
                "Gemini quota is exhausted for the default model. Try model: \"flash\", or wait."
            );
        }
        assert_eq!(parse_duration("366d"), Some(Duration::from_secs(366 * 86_400)));
    }

    #[test]
    fn texts_with_and_without_a_reset() {
        let quota = Quota { reset: Some(Duration::from_secs(3 * 3600 + 38 * 60 + 47)) };
        assert_eq!(
            exhausted_text("gemini-3.1-pro-high", &quota, now(), true),
            "Gemini quota is exhausted for gemini-3.1-pro-high (resets in 3h39m, at 2026-12-02T01:38:47Z). Try model: \"flash\", or wait."
        );
        let none = Quota { reset: None };
        assert_eq!(
            exhausted_text("the default model", &none, now(), true),
            "Gemini quota is exhausted for the default model. Try model: \"flash\", or wait."
        );
        assert_eq!(
            exhausted_text("gemini-3.8-flash-high", &none, now(), false),
            "Gemini quota is exhausted for gemini-3.8-flash-high. Wait for it to reset."
        );
        assert_eq!(exhausted_clause("pro", &none, now()), "pro quota is exhausted");
        let week = Quota { reset: Some(Duration::from_secs(143 * 3600 + 57 * 60 + 55)) };
        assert_eq!(
            exhausted_clause("pro", &week, now()),
            "pro quota is exhausted (resets in 143h58m, at 2026-12-07T21:57:55Z)"
        );
    }

    #[test]
    fn minutes_round_up() {
        let text =
            |secs: f64| reset_part(&Quota { reset: Some(Duration::from_secs_f64(secs)) }, now());
        assert!(text(0.0).starts_with(" (resets in 0h0m,"));
        assert!(text(1.0).starts_with(" (resets in 0h1m,"));
        assert!(text(60.0).starts_with(" (resets in 0h1m,"));
        assert!(text(60.5).starts_with(" (resets in 0h2m,"));
        assert!(text(7200.0).starts_with(" (resets in 2h0m,"));
    }
}
