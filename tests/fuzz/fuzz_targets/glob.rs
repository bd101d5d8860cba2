//! Fuzz target: the `@` glob matcher. The input is a glob and a path separated by a 0xff byte.
//!
//! Properties: any text compiles; a glob without `*` or `?` matches exactly itself; on short inputs
//! the matcher agrees with a memoized backtracking reading of the JavaScript regex the original
//! built; and matching is near-linear: a long repetition of the path, made 4 times longer, takes
//! at most 5 times as long (plus slack), as does compiling the glob repeated 4 times.
//!
//! The first run found that `***` was compiled as `.*` instead of `.*[^/]*` (fixed in
//! `src/files/glob.rs`).

#![no_main]

use std::collections::HashMap;
use std::time::Duration;

use gemini_relay::fuzz::{self, Glob};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (glob_bytes, path_bytes) = match data.iter().position(|&b| b == 0xff) {
        Some(split) => (&data[..split], &data[split + 1..]),
        None => (data, &[][..]),
    };
    let (text, path) = (utf8_prefix(glob_bytes), utf8_prefix(path_bytes));
    let glob = Glob::compile(text);
    let matched = glob.matches(path);

    if !fuzz::is_glob(text) {
        assert_eq!(matched, path == text, "literal glob {text:?} on {path:?}");
        assert!(glob.matches(text), "literal glob {text:?} on itself");
    }

    let (glob_units, path_units): (Vec<u16>, Vec<u16>) =
        (text.encode_utf16().collect(), path.encode_utf16().collect());
    if glob_units.len() <= 48 && path_units.len() <= 48 {
        let expected = Reference::new(&glob_units, &path_units).matches();
        assert_eq!(matched, expected, "glob {text:?} on {path:?}");
    }

    // A match costs at most (path length × live states) steps, with at most 2 states per glob
    // unit. The live-state set grows while the path feeds the glob what it waits for, which can
    // take a whole period of a repeated path per state (`*a*a*??.` on a path with one `a` takes
    // three periods, at a third of the final cost per unit), so the base is the path repeated 8
    // periods per state, and at least 16 times the glob's length; that keeps the growing phase to
    // a few percent of the time. Inputs whose base could cost over 500,000 state steps, and
    // globs the relay does not compile (oversized), are not timed.
    let states = 2 * glob_units.len() + 2;
    if !path.is_empty() && !fuzz::is_oversized_glob(text) {
        let periods = (8 * states).max((16 * glob_units.len()).div_ceil(path_units.len()));
        if periods * path_units.len() * states <= 500_000 {
            let base = path.repeat(periods);
            let scaled = base.repeat(4);
            check_near_linear("matching", || glob.matches(&base), || glob.matches(&scaled));
        }
    }
    if text.len() >= 16 {
        let long_text = text.repeat(4);
        check_near_linear("compiling", || Glob::compile(text), || Glob::compile(&long_text));
    }
});

/// Asserts that `scaled` (the input ×4) takes at most 5 times as long as `base`, plus slack, in at
/// least one of up to 30 rounds that time the two back to back. Time is the thread's CPU time,
/// which does not grow while a busy machine keeps the fuzzer waiting for a core; on this shared
/// virtual machine it still varies by about 25% between runs (a linear control loop measured
/// ratios of 3.2 to 4.1 at ×4), so a single round would report noise, while a superlinear cost
/// (×16 for a quadratic one) fails every round.
fn check_near_linear<A, B>(what: &str, mut base: impl FnMut() -> A, mut scaled: impl FnMut() -> B) {
    const SLACK: Duration = Duration::from_micros(250);
    let mut best = (Duration::ZERO, Duration::MAX);
    for _ in 0..30 {
        let started = thread_cpu_time();
        std::hint::black_box(base());
        let base_time = thread_cpu_time().saturating_sub(started);
        let started = thread_cpu_time();
        std::hint::black_box(scaled());
        let scaled_time = thread_cpu_time().saturating_sub(started);
        if scaled_time <= base_time * 5 + SLACK {
            return;
        }
        if scaled_time.as_secs_f64() / base_time.as_secs_f64()
            < best.1.as_secs_f64() / best.0.as_secs_f64()
        {
            best = (base_time, scaled_time);
        }
    }
    panic!(
        "{what} the input ×4 took {:?}, the input {:?} (the closest of 30 rounds)",
        best.1, best.0
    );
}

/// The CPU time this thread has used so far.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) writes one timespec into `now`, which outlives the call; std has no
    // per-thread CPU clock.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The regex the original compiled a glob into, read by backtracking with memoization: `**/` at the
/// start and `/**/` make `(?:.*/)?`, other `**` are `.*`, `*` is `[^/]*`, `?` is `[^/]`, and
/// everything else is literal; `.` excludes the JavaScript line terminators. Works on UTF-16 units.
struct Reference<'a> {
    glob: &'a [u16],
    path: &'a [u16],
    memo: HashMap<(usize, usize), bool>,
}

const SLASH: u16 = b'/' as u16;
const STAR: u16 = b'*' as u16;
const QUESTION: u16 = b'?' as u16;

fn is_line_terminator(unit: u16) -> bool {
    matches!(unit, 0x0a | 0x0d | 0x2028 | 0x2029)
}

impl<'a> Reference<'a> {
    fn new(glob: &'a [u16], path: &'a [u16]) -> Reference<'a> {
        Reference { glob, path, memo: HashMap::new() }
    }

    fn matches(&mut self) -> bool {
        self.at(0, 0)
    }

    fn glob_has(&self, i: usize, literal: &[u16]) -> bool {
        self.glob.get(i..i + literal.len()) == Some(literal)
    }

    /// The end of the run of path units from `j` that `allowed` accepts.
    fn run_end(&self, j: usize, allowed: impl Fn(u16) -> bool) -> usize {
        j + self.path[j..].iter().take_while(|&&unit| allowed(unit)).count()
    }

    /// Whether glob units `i..` match path units `j..`.
    fn at(&mut self, i: usize, j: usize) -> bool {
        if let Some(&known) = self.memo.get(&(i, j)) {
            return known;
        }
        let result = if i == self.glob.len() {
            j == self.path.len()
        } else if i == 0 && self.glob_has(0, &[STAR, STAR, SLASH]) {
            self.dir_prefix_then(3, j)
        } else if self.glob_has(i, &[SLASH, STAR, STAR, SLASH]) {
            self.path.get(j) == Some(&SLASH) && self.dir_prefix_then(i + 4, j + 1)
        } else if self.glob_has(i, &[STAR, STAR]) {
            let end = self.run_end(j, |unit| !is_line_terminator(unit));
            (j..=end).any(|k| self.at(i + 2, k))
        } else if self.glob[i] == STAR {
            let end = self.run_end(j, |unit| unit != SLASH);
            (j..=end).any(|k| self.at(i + 1, k))
        } else if self.glob[i] == QUESTION {
            self.path.get(j).is_some_and(|&unit| unit != SLASH) && self.at(i + 1, j + 1)
        } else {
            self.path.get(j) == Some(&self.glob[i]) && self.at(i + 1, j + 1)
        };
        self.memo.insert((i, j), result);
        result
    }

    /// `(?:.*/)?` at path unit `j`, then glob units `i..`.
    fn dir_prefix_then(&mut self, i: usize, j: usize) -> bool {
        let end = self.run_end(j, |unit| !is_line_terminator(unit));
        self.at(i, j) || (j..end).any(|k| self.path[k] == SLASH && self.at(i, k + 1))
    }
}

/// The longest valid UTF-8 prefix of the input.
fn utf8_prefix(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(err) => std::str::from_utf8(&data[..err.valid_up_to()]).unwrap_or_default(),
    }
}
