//! JavaScript semantics the original server's output depends on: `Number.prototype.toString`,
//! `String(value)`, truthiness, the regex class `\s` and the `trim` family built on it, string
//! slicing in UTF-16 units, `Math.round`, `toFixed(1)` and `Date.prototype.toISOString`.

use std::time::SystemTime;

use serde_json::Value;

/// `Number.prototype.toString()` for an f64 (ECMA-262 Number::toString, radix 10): integers
/// without a fraction, the shortest round-trip digits otherwise, exponent form below 1e-6 and
/// from 1e21, `-0` as `0`, and `NaN`, `Infinity`, `-Infinity`.
pub fn number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // In ECMAScript terms the value is 0.<digits> × 10^n, with the shortest round-trip digits,
    // which std's exponent form prints as `d.ddde<n - 1>`.
    let (digits, n) = shortest_digits(x);
    let k = digits.len() as i64;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int_part, frac_part) = digits.split_at(n as usize);
        format!("{int_part}.{frac_part}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        format!("{first}{dot}{rest}e{e_sign}{}", e.abs())
    };
    format!("{sign}{body}")
}

/// `String(value)` for a JSON value: strings verbatim, numbers as JavaScript prints them (through
/// f64, so integers beyond 2^53 lose digits as they do in JS), arrays comma-joined with `null`
/// elements empty, objects `[object Object]`.
pub fn string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(n) => number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(text) => text.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|item| if item.is_null() { String::new() } else { string(item) })
                .collect();
            parts.join(",")
        }
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `0`, `NaN` and `""` are false.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(text) => !text.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The regex class `\s` (also the set `trim` removes): ASCII whitespace, the Unicode space
/// separators, the line and paragraph separators and the byte order mark. Unlike
/// `char::is_whitespace` it excludes U+0085 and includes U+FEFF.
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `String.prototype.trim`.
pub fn trim(text: &str) -> &str {
    text.trim_matches(is_space)
}

/// `String.prototype.trimStart`.
pub fn trim_start(text: &str) -> &str {
    text.trim_start_matches(is_space)
}

/// `String.prototype.trimEnd`.
pub fn trim_end(text: &str) -> &str {
    text.trim_end_matches(is_space)
}

/// `text.slice(0, max_units)` with the length in UTF-16 code units as JavaScript counts it, except
/// that a character is never split: one that would straddle the cut is left out whole.
pub fn utf16_prefix(text: &str, max_units: usize) -> &str {
    let mut units = 0;
    for (idx, c) in text.char_indices() {
        units += c.len_utf16();
        if units > max_units {
            return &text[..idx];
        }
    }
    text
}

/// `Math.round`: the nearest integer, halves towards positive infinity (`-2.5` → `-2`).
pub fn round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 { floor + 1.0 } else { floor }
}

/// `x.toFixed(1)`: like `{:.1}` (which rounds the exact binary value, ties to even), except that
/// an exact tie rounds away from zero. The only exact ties at one decimal are the odd multiples of
/// 0.25 (x × 4 is an odd integer), and there x × 10 is exact, so its ceiling is the answer.
pub fn to_fixed_1(x: f64) -> String {
    let quarters = x.abs() * 4.0;
    if quarters.fract() != 0.0 || quarters % 2.0 != 1.0 {
        return format!("{x:.1}");
    }
    let tenths = (x.abs() * 10.0).ceil() as u64;
    let sign = if x < 0.0 { "-" } else { "" };
    format!("{sign}{}.{}", tenths / 10, tenths % 10)
}

/// The shortest round-trip digits of a finite, non-zero `x` (sign ignored) and the position `n` of
/// the decimal point, so that `|x| = 0.d₁d₂…dₖ × 10ⁿ`.
fn shortest_digits(x: f64) -> (String, i64) {
    let text = format!("{:e}", x.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse::<i64>().unwrap_or(0) + 1)
}

/// `Date.prototype.toISOString()` of `t`: `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds truncated).
pub fn iso_string(t: SystemTime) -> String {
    let ms: i128 = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => after.as_millis() as i128,
        Err(before) => -(before.duration().as_nanos().div_ceil(1_000_000) as i128),
    };
    let days = ms.div_euclid(86_400_000) as i64;
    let in_day = ms.rem_euclid(86_400_000) as i64;
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn check_number(x: f64, expected: &str) {
        assert_eq!(number(x), expected, "number({x:?})");
    }

    fn check_json_number(json_text: &str, expected: &str) {
        let value: Value = serde_json::from_str(json_text).expect("valid JSON number");
        assert_eq!(string(&value), expected, "{json_text}");
    }

    #[test]
    fn number_integers() {
        check_number(5.0, "5");
        check_number(5000.0, "5000");
        check_number(-42.0, "-42");
        check_number(0.0, "0");
        check_number(-0.0, "0");
        check_number(123_456_789_012_345_680_000.0, "123456789012345680000");
    }

    #[test]
    fn number_fractions() {
        check_number(1.5, "1.5");
        check_number(0.01, "0.01");
        check_number(0.1 + 0.2, "0.30000000000000004");
        check_number(-2.25, "-2.25");
        check_number(0.000001, "0.000001");
        check_number(123.456, "123.456");
    }

    #[test]
    fn number_exponent_forms() {
        check_number(1e21, "1e+21");
        check_number(1.5e22, "1.5e+22");
        check_number(1e-7, "1e-7");
        check_number(-1.25e-7, "-1.25e-7");
        check_number(f64::MAX, "1.7976931348623157e+308");
        check_number(5e-324, "5e-324");
    }

    #[test]
    fn number_non_finite() {
        check_number(f64::NAN, "NaN");
        check_number(f64::INFINITY, "Infinity");
        check_number(f64::NEG_INFINITY, "-Infinity");
    }

    #[test]
    fn json_numbers_integers() {
        check_json_number("1", "1");
        check_json_number("-7", "-7");
        check_json_number("0", "0");
        check_json_number("-0", "0");
        check_json_number("1.0", "1");
        check_json_number("-0.0", "0");
        check_json_number("100", "100");
        check_json_number("9007199254740991", "9007199254740991");
        check_json_number("12345678901234567890", "12345678901234567000");
        check_json_number("-9223372036854775808", "-9223372036854776000");
    }

    #[test]
    fn json_numbers_fractions() {
        check_json_number("1.5", "1.5");
        check_json_number("0.1", "0.1");
        check_json_number("-2.25", "-2.25");
        check_json_number("123.456", "123.456");
        check_json_number("0.000001", "0.000001");
        check_json_number("0.0000001", "1e-7");
        check_json_number("1.5e-7", "1.5e-7");
    }

    #[test]
    fn json_numbers_large() {
        check_json_number("1e20", "100000000000000000000");
        check_json_number("1e21", "1e+21");
        check_json_number("1.5e21", "1.5e+21");
        check_json_number("-1e300", "-1e+300");
    }

    #[test]
    fn string_conversions() {
        assert_eq!(string(&json!(null)), "null");
        assert_eq!(string(&json!(true)), "true");
        assert_eq!(string(&json!(5)), "5");
        assert_eq!(string(&json!(1.5)), "1.5");
        assert_eq!(string(&json!("x")), "x");
        assert_eq!(string(&json!("a b")), "a b");
        assert_eq!(string(&json!([])), "");
        assert_eq!(string(&json!([null])), "");
        assert_eq!(string(&json!([1, null, "b"])), "1,,b");
        assert_eq!(string(&json!([[1, [2, 3]], true, 1.5])), "1,2,3,true,1.5");
        assert_eq!(string(&json!({})), "[object Object]");
        assert_eq!(string(&json!({"a": 1})), "[object Object]");
    }

    #[test]
    fn truthiness() {
        for falsy in [json!(null), json!(false), json!(0), json!(0.0), json!(-0.0), json!("")] {
            assert!(!truthy(&falsy), "{falsy}");
        }
        for t in [json!(true), json!(1), json!(-0.5), json!(" "), json!("0"), json!([]), json!({})]
        {
            assert!(truthy(&t), "{t}");
        }
    }

    #[test]
    fn space_matches_the_regex_class() {
        let js = [
            '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2003}',
            '\u{2005}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
            '\u{feff}',
        ];
        for c in js {
            assert!(is_space(c), "{c:?} is \\s in JavaScript");
        }
        for c in ['a', '-', '@', '\0', '\u{85}', '\u{180e}', '\u{200b}', '\u{1f600}'] {
            assert!(!is_space(c), "{c:?} is not \\s in JavaScript");
        }
    }

    #[test]
    fn space_is_unicode_white_space_without_nel_and_with_bom() {
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let expected = c == '\u{feff}' || (c != '\u{85}' && c.is_whitespace());
            assert_eq!(is_space(c), expected, "{c:?}");
        }
    }

    #[test]
    fn trims() {
        let text = "\u{feff}\u{a0} a b\u{3000}\n";
        assert_eq!(trim(text), "a b");
        assert_eq!(trim_start(text), "a b\u{3000}\n");
        assert_eq!(trim_end(text), "\u{feff}\u{a0} a b");
        assert_eq!(trim("\u{85}x\u{85}"), "\u{85}x\u{85}");
        assert_eq!(trim(" \t\r\n"), "");
    }

    #[test]
    fn utf16_prefix_never_splits_a_character() {
        let check = |text: &str, max: usize, expected: &str| {
            assert_eq!(utf16_prefix(text, max), expected, "{text:?} cut at {max}");
        };
        check("", 3, "");
        check("hello", 3, "hel");
        check("hello", 5, "hello");
        check("hello", 9, "hello");
        check("hello", 0, "");
        check("é日本", 2, "é日");
        check("a🙂b", 1, "a");
        check("a🙂b", 2, "a");
        check("a🙂b", 3, "a🙂");
        check("🙂", 1, "");
    }

    #[test]
    fn round_halves_go_up() {
        for (x, expected) in [
            (0.5, 1.0),
            (1.4, 1.0),
            (2.5, 3.0),
            (-2.5, -2.0),
            (-0.4, -0.0),
            (0.49999999999999994, 0.0),
            (73.0, 73.0),
            (93.4, 93.0),
        ] {
            assert_eq!(round(x), expected, "round({x})");
        }
    }

    #[test]
    fn to_fixed_1_matches_javascript() {
        let check = |x: f64, expect: &str| assert_eq!(to_fixed_1(x), expect, "{x}");
        check(2.0, "2.0");
        check(17.3, "17.3");
        check(0.25, "0.3");
        check(0.75, "0.8");
        check(2.25, "2.3");
        check(-0.25, "-0.3");
        check(0.15, "0.1");
        check(0.35, "0.3");
        check(0.05, "0.1");
        check(1.45, "1.4");
        check(123.456, "123.5");
    }

    #[test]
    fn iso_string_dates() {
        use std::time::Duration;
        let at = |ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
        let check = |ms: u64, expect: &str| assert_eq!(iso_string(at(ms)), expect);
        check(0, "1970-01-01T00:00:00.000Z");
        check(951_782_400_000, "2000-02-29T00:00:00.000Z");
        check(1_709_164_799_999, "2024-02-28T23:59:59.999Z");
        check(1_781_740_800_000, "2026-06-18T00:00:00.000Z");
        check(4_102_444_800_000, "2100-01-01T00:00:00.000Z");
        check(253_402_300_799_999, "9999-12-31T23:59:59.999Z");
        let before = SystemTime::UNIX_EPOCH - Duration::from_millis(1);
        assert_eq!(iso_string(before), "1969-12-31T23:59:59.999Z");
        let sub_ms = at(5) + Duration::from_micros(999);
        assert_eq!(iso_string(sub_ms), "1970-01-01T00:00:00.005Z");
    }
}
