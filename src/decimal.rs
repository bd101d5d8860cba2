//! Decimal text of `f64` values (shortest round-trip digits, Rust's `{}` and exact `{:.N}`, and
//! parsing) without core's float formatting and parsing, which cost a size-optimised static binary
//! tens of kilobytes; the shortest digits come from serde_json's float printer, which the wire
//! format needs anyway.

use std::cmp::Ordering;

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

/// Rust's `text.parse::<f64>()`: an optional sign, then `inf`, `infinity` or `nan` in any case, or
/// decimal digits with an optional point and exponent; correctly rounded (ties to even).
pub fn parse(text: &str) -> Option<f64> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'+') => (false, &text[1..]),
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let magnitude = if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else if body.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else {
        parse_decimal(body.as_bytes())?
    };
    Some(if negative { -magnitude } else { magnitude })
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

/// The most significant digits `parse` works with; a nonzero tail beyond them only matters as a
/// sticky digit, since no value halfway between two doubles has this many significant digits.
const MAX_DIGITS: usize = 800;

/// `digits[.digits][(e|E)[sign]digits]` (at least one mantissa digit) as the nearest double.
fn parse_decimal(bytes: &[u8]) -> Option<f64> {
    let mut idx = 0;
    let mut digits = Vec::new();
    let mut exp10: i64 = 0;
    let mut any_digit = false;
    let mut sticky = false;
    let mut in_fraction = false;
    while idx < bytes.len() {
        match bytes[idx] {
            b'.' if !in_fraction => in_fraction = true,
            digit @ b'0'..=b'9' => {
                any_digit = true;
                if in_fraction {
                    exp10 -= 1;
                }
                if digits.len() == MAX_DIGITS {
                    sticky |= digit != b'0';
                    exp10 += 1;
                } else if digit != b'0' || !digits.is_empty() {
                    digits.push(digit - b'0');
                }
            }
            _ => break,
        }
        idx += 1;
    }
    if !any_digit {
        return None;
    }
    if idx < bytes.len() {
        if !matches!(bytes[idx], b'e' | b'E') {
            return None;
        }
        idx += 1;
        let negative = bytes.get(idx) == Some(&b'-');
        if matches!(bytes.get(idx), Some(b'-' | b'+')) {
            idx += 1;
        }
        if idx == bytes.len() {
            return None;
        }
        let mut exponent: i64 = 0;
        for &byte in &bytes[idx..] {
            if !byte.is_ascii_digit() {
                return None;
            }
            exponent = (exponent * 10 + i64::from(byte - b'0')).min(1 << 40);
        }
        exp10 += if negative { -exponent } else { exponent };
    }
    if sticky {
        digits.push(1);
        exp10 -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
        exp10 += 1;
    }
    let magnitude = digits.len() as i64 + exp10;
    if digits.is_empty() || magnitude <= -324 {
        return Some(0.0);
    }
    if magnitude > 310 {
        return Some(f64::INFINITY);
    }
    // value = numerator / denominator exactly; find q × 2^e nearest to it with 53-bit q.
    let mut numerator = Big::from_digits(&digits);
    let mut denominator = Big::from_digits(&[1]);
    let scaled = if exp10 > 0 { &mut numerator } else { &mut denominator };
    for _ in 0..exp10.unsigned_abs() {
        scaled.mul_add(10, 0);
    }
    let mut exponent = numerator.bits() as i64 - denominator.bits() as i64 - 53;
    let (mut q, remainder, divisor) = loop {
        exponent = exponent.max(-1074);
        let (scaled_numerator, divisor) = match exponent {
            0.. => (numerator.clone(), denominator.shl(exponent as usize)),
            _ => (numerator.shl(exponent.unsigned_abs() as usize), denominator.clone()),
        };
        let (q, remainder) = scaled_numerator.div_rem(&divisor);
        if q < 1 << 53 {
            break (q, remainder, divisor);
        }
        exponent += 1;
    };
    let twice_remainder = remainder.shl(1);
    match twice_remainder.cmp(&divisor) {
        Ordering::Greater => q += 1,
        Ordering::Equal => q += q & 1,
        Ordering::Less => (),
    }
    if q == 1 << 53 {
        q >>= 1;
        exponent += 1;
    }
    if exponent > 971 {
        return Some(f64::INFINITY);
    }
    if q < 1 << 52 {
        return Some(f64::from_bits(q));
    }
    Some(f64::from_bits(((exponent + 1075) as u64) << 52 | (q - (1 << 52))))
}

/// A non-negative integer in little-endian base-2³² limbs without high zero limbs.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn from_digits(digits: &[u8]) -> Big {
        let mut big = Big(Vec::new());
        for &digit in digits {
            big.mul_add(10, u32::from(digit));
        }
        big
    }

    /// `self = self × factor + addend`.
    fn mul_add(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.0 {
            let value = u64::from(*limb) * u64::from(factor) + carry;
            *limb = value as u32;
            carry = value >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn bits(&self) -> usize {
        self.0.last().map_or(0, |top| self.0.len() * 32 - top.leading_zeros() as usize)
    }

    fn shl(&self, bits: usize) -> Big {
        let mut limbs = vec![0; bits / 32];
        let shift = bits % 32;
        let mut carry = 0;
        for &limb in &self.0 {
            limbs.push(((u64::from(limb) << shift) as u32) | carry);
            carry = if shift == 0 { 0 } else { limb >> (32 - shift) };
        }
        if carry > 0 {
            limbs.push(carry);
        }
        Big(limbs)
    }

    fn cmp(&self, other: &Big) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    /// `self -= other`, for `self >= other`.
    fn sub(&mut self, other: &Big) {
        let mut borrow = 0;
        for (idx, limb) in self.0.iter_mut().enumerate() {
            let value =
                i64::from(*limb) - i64::from(other.0.get(idx).copied().unwrap_or(0)) - borrow;
            *limb = value as u32;
            borrow = i64::from(value < 0);
        }
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// Quotient (below 2⁵⁵) and remainder by shift-and-subtract.
    fn div_rem(mut self, divisor: &Big) -> (u64, Big) {
        let mut quotient = 0;
        for bit in (0..55).rev() {
            let shifted = divisor.shl(bit);
            if self.cmp(&shifted) != Ordering::Less {
                self.sub(&shifted);
                quotient |= 1 << bit;
            }
        }
        (quotient, self)
    }
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

    fn check_parse(text: &str) {
        let expected = text.parse::<f64>().ok();
        let actual = parse(text);
        match (expected, actual) {
            (Some(e), Some(a)) if e.is_nan() => assert!(a.is_nan(), "{text:?}"),
            (e, a) => assert_eq!(a.map(f64::to_bits), e.map(f64::to_bits), "{text:?}"),
        }
    }

    #[test]
    fn parse_grammar_matches_std() {
        for text in [
            "",
            "+",
            "-",
            ".",
            "e5",
            "1e",
            "1e+",
            "1e-",
            "1.",
            ".5",
            "+.5",
            "-.5e-3",
            "1.2.3",
            " 1",
            "1 ",
            "1_0",
            "0x10",
            "1e5",
            "1E5",
            "1e+05",
            "00012.500",
            "0",
            "-0",
            "0.000",
            "0e999999",
            "inf",
            "+INF",
            "-Infinity",
            "iNfInItY",
            "infin",
            "infx",
            "nan",
            "NaN",
            "-nan",
            "+nan",
            "na",
            "1e99999999999999999999",
            "1e-99999999999999999999",
            "1..2",
            "1e5.5",
            "--1",
            "12345678901234567890123456789",
            "9007199254740993",
            "9007199254740993.0000000001",
            "2.9999999999999999",
            "2.999999999999999",
            "4.9406564584124654e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "2.2250738585072011e-308",
            "2.2250738585072012e-308",
            "0.1",
            "0.3",
            "123.456",
            "1e-7",
            "1e21",
            "1e23",
        ] {
            check_parse(text);
        }
    }

    #[test]
    fn parse_values_match_std() {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for idx in 0..1500 {
            let bits = next();
            let text = match idx % 4 {
                // Shortest and long exact renderings of arbitrary doubles.
                0 => format!("{:e}", f64::from_bits(bits)),
                1 => format!("{:.30e}", f64::from_bits(bits >> 1)),
                // Values exactly halfway between two doubles, (2m + 1) × 2^(k - 1) with a 53-bit
                // m, and the same digits a little above and below.
                2 => {
                    let odd = u128::from((bits >> 11) | 1 << 53) | 1;
                    let k = (next() % 40) as i64 - 20;
                    let (digits, scale) = match k {
                        1.. => ((odd << (k - 1)).to_string(), 0),
                        _ => ((odd * 5u128.pow((1 - k) as u32)).to_string(), 1 - k),
                    };
                    let tail = ["", "0000001", "1"][(next() % 3) as usize];
                    let digits = match next() % 4 {
                        0 => format!("{}9{tail}", &digits[..digits.len() - 1]),
                        _ => format!("{digits}{tail}"),
                    };
                    format!("{digits}e-{}", scale + tail.len() as i64)
                }
                // Short random decimals with random exponents, signs and points.
                _ => {
                    let digits = (next() % 10_000_000_000_000_000_000).to_string();
                    let point = (next() % (digits.len() as u64 + 1)) as usize;
                    let exponent = (next() % 700) as i64 - 350;
                    let sign = ["", "-", "+"][(next() % 3) as usize];
                    format!("{sign}{}.{}e{exponent}", &digits[..point], &digits[point..])
                }
            };
            check_parse(&text);
        }
    }

    #[test]
    fn parse_keeps_long_inputs_exact() {
        let long = format!("1.{}1e0", "0".repeat(5000));
        check_parse(&long);
        check_parse(&format!("0.{}5", "0".repeat(400)));
        check_parse(&format!("{}e-900", "7".repeat(1200)));
        // Halfway between zero and the smallest subnormal (2^-1075), and just beside it.
        let (digits, scale) = exact(5e-324);
        let mut halved = String::new();
        let mut carry = 0;
        for digit in digits.iter().chain(b"0") {
            let value = carry * 10 + u32::from(digit - b'0');
            halved.push(char::from(b'0' + (value / 2) as u8));
            carry = value % 2;
        }
        for tail in ["", "1", "0000000001"] {
            check_parse(&format!("{halved}{tail}e-{}", scale + 1 + tail.len()));
        }
        check_parse(&format!("{}e-{}", &halved[..halved.len() - 1], scale));
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
