//! gemini-timeout-test texts and step plan.

use std::time::Duration;

use crate::js;

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

/// The first line: `Starting timeout test for <duration>ms (<duration/1000>s)`.
pub fn start_line(duration_ms: f64) -> String {
    format!(
        "Starting timeout test for {}ms ({}s)",
        js::number(duration_ms),
        js::number(duration_ms / 1000.0)
    )
}

/// One step line: `Step <i>/<steps> completed - Elapsed: <round(elapsed/1000)>s`.
pub fn step_line(step: u64, steps: u64, elapsed_ms: u64) -> String {
    let seconds = js::round(elapsed_ms as f64 / 1000.0);
    format!("Step {step}/{steps} completed - Elapsed: {}s", js::number(seconds))
}

/// The three closing lines; the first starts with `\n`, so joining by `\n` leaves a blank line.
pub fn final_lines(duration_ms: f64, elapsed_ms: u64) -> [String; 3] {
    [
        "\nTimeout test completed successfully!".to_owned(),
        format!("Target duration: {}ms", js::number(duration_ms)),
        format!("Actual duration: {elapsed_ms}ms"),
    ]
}

/// Runs the whole test with an injected waiter, so nothing here sleeps or reads the clock.
///
/// `wait(step)` must wait for `step` and return the milliseconds elapsed since the test started,
/// or an error (for example when the call was cancelled), which ends the test with that error.
/// After each step `on_progress` receives the lines it has not seen yet, joined by `\n` (the
/// call's preview buffer appends each on a line of its own, so it holds every line so far once).
/// The result is every line joined by `\n`.
pub fn run(
    duration_ms: f64,
    wait: &mut dyn FnMut(Duration) -> Result<u64, String>,
    on_progress: &mut dyn FnMut(&str),
) -> Result<String, String> {
    let (count, step_ms) = steps(duration_ms);
    let step = Duration::try_from_secs_f64(step_ms / 1000.0).unwrap_or(Duration::ZERO);
    let mut lines = vec![start_line(duration_ms)];
    let mut elapsed_ms = 0;
    let mut reported = 0;
    for idx in 1..=count {
        elapsed_ms = wait(step)?;
        lines.push(step_line(idx, count, elapsed_ms));
        on_progress(&lines[reported..].join("\n"));
        reported = lines.len();
    }
    lines.extend(final_lines(duration_ms, elapsed_ms));
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Each line is reported once, in order: together they are the output before its end.
        assert_eq!(
            progress,
            [
                "Starting timeout test for 12000ms (12s)\nStep 1/3 completed - Elapsed: 4s",
                "Step 2/3 completed - Elapsed: 8s",
                "Step 3/3 completed - Elapsed: 12s",
            ]
        );
        assert!(out.starts_with(&progress.join("\n")));
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
