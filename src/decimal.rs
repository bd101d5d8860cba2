//! Decimal text of `f64` values (shortest round-trip digits, Rust's `{}` and exact `{:.N}`) without
//! core's float formatting, which costs a size-optimised static binary tens of kilobytes; the
//! shortest digits come from serde_json's float printer, which the wire format needs anyway.

use serde_json::Number;

/// The shortest round-trip digits of a finite, non-zero `x` (sign ignored) and the decimal point
/// position `n`, so that `|x| = 0.d₁d₂…dₖ × 10ⁿ` (ECMA-262's `k` and `n`); `d₁` and `dₖ` are not zero.
pub fn shortest(x: f64) -> (String, i64) {
    let text = Number::from_f64(x.abs()).map_or_else(|| "0".to_string(), |it| it.to_string());
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i64>().unwrap_or(0)),
        None => (text.as_str(), 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int_part}{frac_part}");
    let digits = all.trim_start_matches('0').trim_end_matches('0');
    let leading_zeros = all.len() - all.trim_start_matches('0').len();
    let mut point = int_part.len() as i64 + exponent - leading_zeros as i64;
    let mut digits = digits.as_bytes().to_vec();
    // When the value lies exactly halfway between two shortest candidates, serde_json's printer
    // picks the even one and core's formatter (which this replaces) the one above.
    let (exact, scale) = exact(x);
    let significant = exact.iter().rposition(|d| *d != b'0').map_or(0, |last| last + 1);
    let exact_point = exact.len() as i64 - scale as i64;
    if exact_point == point
        && significant == digits.len() + 1
        && exact[digits.len()] == b'5'
        && exact.starts_with(&digits)
    {
        if round_up(&mut digits) {
            point += 1;
        }
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
    }
    (String::from_utf8_lossy(&digits).into_owned(), point)
}

/// Rust's `format!("{x}")`: the shortest round-trip digits, never in exponent form.
pub fn display(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return special(x).unwrap_or_else(|| sign(x).to_string() + "0");
    }
    let (digits, n) = shortest(x);
    let k = digits.len() as i64;
    let body = if n <= 0 {
        format!("0.{}{digits}", "0".repeat(n.unsigned_abs() as usize))
    } else if n < k {
        let (int_part, frac_part) = digits.split_at(n as usize);
        format!("{int_part}.{frac_part}")
    } else {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    };
    format!("{}{body}", sign(x))
}

/// Rust's `format!("{x:.places$}")`: the exact binary value rounded half to even.
pub fn fixed(x: f64, places: usize) -> String {
    rounded(x, places, false)
}

/// Like `fixed`, except that an exact tie rounds away from zero (JavaScript's `toFixed` below 1e21).
pub fn fixed_ties_away(x: f64, places: usize) -> String {
    rounded(x, places, true)
}

/// One base-10⁹ limb of the exact integers `fixed` works with.
const LIMB: u64 = 1_000_000_000;

fn rounded(x: f64, places: usize, ties_away: bool) -> String {
    if let Some(text) = special(x) {
        return text;
    }
    let (mut digits, scale) = exact(x);
    if digits.len() <= scale {
        let mut padded = vec![b'0'; scale + 1 - digits.len()];
        padded.append(&mut digits);
        digits = padded;
    }
    let mut int_len = digits.len() - scale;
    let keep = int_len + places;
    if keep < digits.len() {
        let next = digits[keep];
        let rest_nonzero = digits[keep + 1..].iter().any(|d| *d != b'0');
        let tie_up = ties_away || digits[keep - 1] % 2 == 1;
        digits.truncate(keep);
        let above_half = next > b'5' || (next == b'5' && (rest_nonzero || tie_up));
        if above_half && round_up(&mut digits) {
            int_len += 1;
        }
    }
    digits.resize(int_len + places, b'0');
    let mut text = String::from(sign(x));
    text.push_str(&String::from_utf8_lossy(&digits[..int_len]));
    if places > 0 {
        text.push('.');
        text.push_str(&String::from_utf8_lossy(&digits[int_len..]));
    }
    text
}

fn sign(x: f64) -> &'static str {
    if x.is_sign_negative() { "-" } else { "" }
}

/// How Rust prints NaN and the infinities.
fn special(x: f64) -> Option<String> {
    if x.is_nan() {
        return Some("NaN".to_string());
    }
    x.is_infinite().then(|| format!("{}inf", sign(x)))
}

/// The exact value of `|x|` as decimal digits without leading zeros (`0` for zero) and the number
/// of them after the decimal point: `|x| = digits / 10^scale`.
fn exact(x: f64) -> (Vec<u8>, usize) {
    // |x| = mantissa × 2^exponent, which is mantissa × 5^-exponent / 10^-exponent when the
    // exponent is negative.
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) =
        if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) };
    let mut limbs = vec![mantissa % LIMB, mantissa / LIMB % LIMB, mantissa / LIMB / LIMB];
    let (factor, scale) = if exponent >= 0 { (2, 0) } else { (5, exponent.unsigned_abs()) };
    if mantissa != 0 {
        for _ in 0..exponent.unsigned_abs() {
            multiply(&mut limbs, factor);
        }
    }
    (to_decimal(&limbs).into_bytes(), scale as usize)
}

/// `limbs *= factor`, little-endian base 10⁹.
fn multiply(limbs: &mut Vec<u64>, factor: u64) {
    let mut carry = 0;
    for limb in limbs.iter_mut() {
        let product = *limb * factor + carry;
        *limb = product % LIMB;
        carry = product / LIMB;
    }
    if carry > 0 {
        limbs.push(carry);
    }
}

/// The decimal digits of a little-endian base-10⁹ number, without leading zeros (`0` for zero).
fn to_decimal(limbs: &[u64]) -> String {
    let mut text = String::new();
    for limb in limbs.iter().rev() {
        if text.is_empty() {
            if *limb != 0 {
                text = limb.to_string();
            }
        } else {
            let part = limb.to_string();
            text.push_str(&"0".repeat(9 - part.len()));
            text.push_str(&part);
        }
    }
    if text.is_empty() { "0".to_string() } else { text }
}

/// Adds one unit in the last place of ASCII digits; true when a new leading digit was needed.
fn round_up(digits: &mut Vec<u8>) -> bool {
    for digit in digits.iter_mut().rev() {
        if *digit == b'9' {
            *digit = b'0';
        } else {
            *digit += 1;
            return false;
        }
    }
    digits.insert(0, b'1');
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interesting values plus a xorshift walk over bit patterns and over "human" decimals.
    fn samples() -> Vec<f64> {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.5,
            2.5,
            0.25,
            0.125,
            0.375,
            0.05,
            0.15,
            0.35,
            1.45,
            9.95,
            99.95,
            999.9999,
            0.1 + 0.2,
            1e21,
            1e22,
            1e-7,
            1.5e-7,
            123.456,
            5e-324,
            2.2e-308,
            f64::MAX,
            f64::MIN_POSITIVE,
            9007199254740993.0,
            4503599627370497.5,
            1e300,
            12.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        for idx in 0..1200 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = match idx % 4 {
                0 => f64::from_bits(state),
                1 => {
                    (state % 100_000) as f64
                        / [10.0, 100.0, 1000.0, 20.0][(state >> 40) as usize % 4]
                }
                2 => (state >> 11) as f64 * 2f64.powi((state % 200) as i32 - 100),
                _ => f64::from_bits(state >> 2),
            };
            values.push(value);
        }
        values
    }

    #[test]
    fn shortest_matches_lower_exp() {
        for x in samples().into_iter().filter(|x| x.is_finite() && *x != 0.0) {
            let scientific = format!("{:e}", x.abs());
            let (mantissa, exponent) = scientific.split_once('e').expect("exponent");
            let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
            let n = exponent.parse::<i64>().expect("exponent") + 1;
            assert_eq!(shortest(x), (digits, n), "{x:e}");
        }
    }

    #[test]
    fn display_matches_std() {
        for x in samples() {
            assert_eq!(display(x), format!("{x}"), "{x:e}");
        }
    }

    #[test]
    fn fixed_matches_std() {
        for x in samples() {
            assert_eq!(fixed(x, 0), format!("{x:.0}"), "{x:e}");
            assert_eq!(fixed(x, 1), format!("{x:.1}"), "{x:e}");
            assert_eq!(fixed(x, 3), format!("{x:.3}"), "{x:e}");
        }
    }

    #[test]
    fn fixed_examples() {
        let check = |x: f64, places: usize, expect: &str| assert_eq!(fixed(x, places), expect);
        check(0.25, 1, "0.2");
        check(0.35, 1, "0.3");
        check(9.96, 1, "10.0");
        check(-0.04, 1, "-0.0");
        check(1234.5, 3, "1234.500");
        check(2.5, 0, "2");
        check(3.5, 0, "4");
        assert_eq!(fixed_ties_away(0.25, 1), "0.3");
        assert_eq!(fixed_ties_away(-0.25, 1), "-0.3");
        assert_eq!(fixed_ties_away(0.35, 1), "0.3");
        assert_eq!(fixed_ties_away(2.5, 0), "3");
    }
}
