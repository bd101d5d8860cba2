//! gemini-timeout-test texts and step plan, plus JavaScript's Number-to-string formatting.

use std::time::Duration;

use crate::prompts;

/// The longest time one step of the test waits, in milliseconds.
const MAX_STEP_MS: f64 = 5000.0;

/// Splits a duration into `(steps, step_ms)`: `ceil(duration / 5000)` steps of equal length.
///
/// The schema guarantees `duration >= 10`; anything smaller (or not a number) still yields one
/// step, so the division never produces NaN.
pub fn steps(duration_ms: f64) -> (u64, f64) {
    let count = (duration_ms / MAX_STEP_MS).ceil();
    // The `as` cast saturates, and the comparison also turns NaN into one step.
    let count = if count >= 1.0 { count as u64 } else { 1 };
    (count, duration_ms / count as f64)
}

/// Formats a number the way JavaScript's `String(x)` does: `5000 / 1000` → `5`, `1.5`, `0.1`,
/// shortest round-trip digits, exponent form from 1e21 up and below 1e-6, `-0` → `0`.
pub fn js_number(x: f64) -> String {
    prompts::js_f64_string(x)
}

/// Rounds like JavaScript's `Math.round`: halves go up (towards positive infinity).
pub fn js_round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 { floor + 1.0 } else { floor }
}

/// The first line: `Starting timeout test for <duration>ms (<duration/1000>s)`.
pub fn start_line(duration_ms: f64) -> String {
    format!(
        "Starting timeout test for {}ms ({}s)",
        js_number(duration_ms),
        js_number(duration_ms / 1000.0)
    )
}

/// One step line: `Step <i>/<steps> completed - Elapsed: <round(elapsed/1000)>s`.
pub fn step_line(step: u64, steps: u64, elapsed_ms: u64) -> String {
    let seconds = js_round(elapsed_ms as f64 / 1000.0);
    format!("Step {step}/{steps} completed - Elapsed: {}s", js_number(seconds))
}

/// The three closing lines; the first starts with `\n`, so joining by `\n` leaves a blank line.
pub fn final_lines(duration_ms: f64, elapsed_ms: u64) -> [String; 3] {
    [
        "\nTimeout test completed successfully!".to_owned(),
        format!("Target duration: {}ms", js_number(duration_ms)),
        format!("Actual duration: {elapsed_ms}ms"),
    ]
}

/// Runs the whole test with an injected waiter, so nothing here sleeps or reads the clock.
///
/// `wait(step)` must wait for `step` and return the milliseconds elapsed since the test started,
/// or an error (for example when the call was cancelled), which ends the test with that error.
/// After each step `on_progress` receives all lines so far joined by `\n`. The result is every
/// line joined by `\n`.
pub fn run(
    duration_ms: f64,
    wait: &mut dyn FnMut(Duration) -> Result<u64, String>,
    on_progress: &mut dyn FnMut(&str),
) -> Result<String, String> {
    let (count, step_ms) = steps(duration_ms);
    let step = Duration::try_from_secs_f64(step_ms / 1000.0).unwrap_or(Duration::ZERO);
    let mut lines = vec![start_line(duration_ms)];
    let mut elapsed_ms = 0;
    for idx in 1..=count {
        elapsed_ms = wait(step)?;
        lines.push(step_line(idx, count, elapsed_ms));
        on_progress(&lines.join("\n"));
    }
    lines.extend(final_lines(duration_ms, elapsed_ms));
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_number(x: f64, expected: &str) {
        assert_eq!(js_number(x), expected, "js_number({x:?})");
    }

    #[test]
    fn js_number_integers() {
        check_number(5.0, "5");
        check_number(5000.0, "5000");
        check_number(-42.0, "-42");
        check_number(0.0, "0");
        check_number(-0.0, "0");
        check_number(123456789012345680000.0, "123456789012345680000");
    }

    #[test]
    fn js_number_fractions() {
        check_number(1.5, "1.5");
        check_number(0.01, "0.01");
        check_number(0.1 + 0.2, "0.30000000000000004");
        check_number(-2.25, "-2.25");
        check_number(0.000001, "0.000001");
        check_number(123.456, "123.456");
    }

    #[test]
    fn js_number_exponent_forms() {
        check_number(1e21, "1e+21");
        check_number(1.5e22, "1.5e+22");
        check_number(1e-7, "1e-7");
        check_number(-1.25e-7, "-1.25e-7");
        check_number(f64::MAX, "1.7976931348623157e+308");
        check_number(5e-324, "5e-324");
    }

    #[test]
    fn js_number_non_finite() {
        check_number(f64::NAN, "NaN");
        check_number(f64::INFINITY, "Infinity");
        check_number(f64::NEG_INFINITY, "-Infinity");
    }

    #[test]
    fn js_round_halves_go_up() {
        for (x, expected) in [
            (0.5, 1.0),
            (1.4, 1.0),
            (2.5, 3.0),
            (-2.5, -2.0),
            (-0.4, -0.0),
            (0.49999999999999994, 0.0),
        ] {
            assert_eq!(js_round(x), expected, "js_round({x})");
        }
    }

    #[test]
    fn step_plan() {
        assert_eq!(steps(5000.0), (1, 5000.0));
        assert_eq!(steps(5001.0), (2, 2500.5));
        assert_eq!(steps(12000.0), (3, 4000.0));
        assert_eq!(steps(10.0), (1, 10.0));
        assert_eq!(steps(0.0), (1, 0.0));
    }

    #[test]
    fn line_texts() {
        assert_eq!(start_line(5000.0), "Starting timeout test for 5000ms (5s)");
        assert_eq!(start_line(1500.0), "Starting timeout test for 1500ms (1.5s)");
        assert_eq!(start_line(10.5), "Starting timeout test for 10.5ms (0.0105s)");
        assert_eq!(step_line(2, 3, 8499), "Step 2/3 completed - Elapsed: 8s");
        assert_eq!(step_line(2, 3, 8500), "Step 2/3 completed - Elapsed: 9s");
        assert_eq!(
            final_lines(5000.0, 5003),
            [
                "\nTimeout test completed successfully!".to_owned(),
                "Target duration: 5000ms".to_owned(),
                "Actual duration: 5003ms".to_owned(),
            ]
        );
    }

    #[test]
    fn run_with_fake_clock() {
        let mut waits = Vec::new();
        let mut clock = 0;
        let mut wait = |step: Duration| {
            waits.push(step);
            clock += 4001;
            Ok(clock)
        };
        let mut progress = Vec::new();
        let mut on_progress = |text: &str| progress.push(text.to_owned());
        let out = run(12000.0, &mut wait, &mut on_progress).unwrap();
        assert_eq!(waits, vec![Duration::from_secs(4); 3]);
        assert_eq!(
            out,
            "Starting timeout test for 12000ms (12s)\n\
             Step 1/3 completed - Elapsed: 4s\n\
             Step 2/3 completed - Elapsed: 8s\n\
             Step 3/3 completed - Elapsed: 12s\n\
             \n\
             Timeout test completed successfully!\n\
             Target duration: 12000ms\n\
             Actual duration: 12003ms"
        );
        assert_eq!(progress.len(), 3);
        assert_eq!(
            progress[0],
            "Starting timeout test for 12000ms (12s)\nStep 1/3 completed - Elapsed: 4s"
        );
        assert!(out.starts_with(&progress[2]));
    }

    #[test]
    fn run_stops_on_wait_error() {
        let mut calls = 0;
        let mut wait = |_: Duration| {
            calls += 1;
            Err("cancelled".to_owned())
        };
        let mut on_progress = |_: &str| panic!("no progress after a failed wait");
        assert_eq!(run(9000.0, &mut wait, &mut on_progress), Err("cancelled".to_owned()));
        assert_eq!(calls, 1);
    }
}
