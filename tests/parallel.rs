//! agy runs side by side: up to `GEMINI_MCP_AGY_PARALLEL` at once across every relay sharing a
//! state directory, one turn per conversation, one editor per project; a relay killed while it
//! holds a slot frees it; a state directory that cannot hold the slots leaves them to each relay;
//! cancels racing their calls' start.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::util::{self, Fakes, Relay, Setup, TempDir};

/// A relay on agy with these fakes, `cap` runs at once, and its own state directory unless the
/// test names one.
fn agy(fakes: &Fakes, cap: usize) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy").env("GEMINI_MCP_AGY_PARALLEL", cap.to_string())
}

/// One prompt run as the fake logged it: when it started and ended (ms since the epoch), its argv
/// and its tag.
#[derive(Debug)]
struct Run {
    start: i64,
    end: i64,
    argv: Vec<String>,
    tag: String,
}

/// Every prompt run that has ended.
fn runs(fakes: &Fakes) -> Vec<Run> {
    let records = fakes.records();
    records
        .iter()
        .filter(|r| r["event"] == "start" && r["kind"] == "run")
        .filter_map(|start| {
            let end = records.iter().find(|r| r["event"] == "end" && r["pid"] == start["pid"])?;
            let argv = start["argv"].as_array()?.iter().filter_map(Value::as_str);
            Some(Run {
                start: start["t_ms"].as_i64()?,
                end: end["t_ms"].as_i64()?,
                argv: argv.map(str::to_string).collect(),
                tag: start["tag"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

fn overlap(a: &Run, b: &Run) -> bool {
    a.start < b.end && b.start < a.end
}

/// The most runs that were going at one moment.
fn most_at_once(runs: &[Run]) -> usize {
    runs.iter()
        .map(|run| {
            runs.iter().filter(|other| other.start <= run.start && run.start < other.end).count()
        })
        .max()
        .unwrap_or(0)
}

fn ask(relay: &mut Relay, args: Value) -> Value {
    relay.send_request("tools/call", json!({"name": "gemini-ask", "arguments": args}))
}

fn answered(relay: &mut Relay, id: &Value) {
    let response = relay.response(id);
    assert_eq!(response["result"]["isError"], false, "{response}");
}

/// Sends `n` fresh asks at once and waits for every answer; returns how long that took.
fn concurrent_asks(relay: &mut Relay, n: usize) -> Duration {
    let start = Instant::now();
    let ids: Vec<Value> = (0..n).map(|i| ask(relay, json!({"prompt": format!("p{i}")}))).collect();
    for id in &ids {
        answered(relay, id);
    }
    start.elapsed()
}

#[test]
fn four_asks_at_cap_two_take_two_rounds_and_never_run_more_than_two_at_once() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, 2).env("FAKE_SLEEP", "2").spawn();
    let took = concurrent_asks(&mut relay, 4);
    let runs = runs(&fakes);
    assert_eq!(runs.len(), 4);
    assert_eq!(most_at_once(&runs), 2, "{runs:#?}");
    assert!(took >= Duration::from_millis(3900), "{took:?}");
    assert!(
        took < Duration::from_millis(4000) + util::slack(Duration::from_millis(2500)),
        "{took:?}"
    );
}

#[test]
fn four_asks_at_cap_four_take_one_round() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, 4).env("FAKE_SLEEP", "2").spawn();
    let took = concurrent_asks(&mut relay, 4);
    let runs = runs(&fakes);
    assert_eq!(most_at_once(&runs), 4, "{runs:#?}");
    assert!(
        took < Duration::from_millis(2000) + util::slack(Duration::from_millis(1800)),
        "{took:?}"
    );
}

#[test]
fn two_relays_sharing_a_state_directory_never_exceed_the_cap_together() {
    let fakes = Fakes::new();
    let state = TempDir::new("state");
    let dir = state.path.display().to_string();
    let mut relays: Vec<Relay> = ["one", "two"]
        .iter()
        .map(|tag| {
            agy(&fakes, 2)
                .env("FAKE_SLEEP", "1")
                .env("FAKE_TAG", tag)
                .env("GEMINI_MCP_STATE_DIR", &dir)
                .spawn()
        })
        .collect();
    let ids: Vec<Vec<Value>> = relays
        .iter_mut()
        .map(|relay| (0..3).map(|i| ask(relay, json!({"prompt": format!("p{i}")}))).collect())
        .collect();
    for (relay, ids) in relays.iter_mut().zip(&ids) {
        for id in ids {
            answered(relay, id);
        }
    }
    let runs = runs(&fakes);
    assert_eq!(runs.len(), 6);
    assert_eq!(most_at_once(&runs), 2, "{runs:#?}");
    // Both relays ran while the other had a run going: the slots were shared, not taken in turn.
    let across = runs.iter().any(|a| runs.iter().any(|b| a.tag != b.tag && overlap(a, b)));
    assert!(across, "{runs:#?}");
}

#[test]
fn turns_of_one_conversation_never_overlap_while_fresh_calls_do() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, 4).env("FAKE_SLEEP", "1").spawn();
    let ids = [
        ask(&mut relay, json!({"prompt": "turn 1", "conversationId": "conv-7"})),
        ask(&mut relay, json!({"prompt": "fresh 1"})),
        ask(&mut relay, json!({"prompt": "turn 2", "conversationId": "conv-7"})),
        ask(&mut relay, json!({"prompt": "fresh 2"})),
    ];
    for id in &ids {
        answered(&mut relay, id);
    }
    let runs = runs(&fakes);
    let (turns, fresh): (Vec<&Run>, Vec<&Run>) =
        runs.iter().partition(|run| run.argv.iter().any(|arg| arg == "conv-7"));
    assert_eq!((turns.len(), fresh.len()), (2, 2), "{runs:#?}");
    assert!(!overlap(turns[0], turns[1]), "two turns of one conversation overlapped: {runs:#?}");
    assert!(overlap(fresh[0], fresh[1]), "{runs:#?}");
    // The second turn waited without holding back the fresh call sent after it.
    assert!(overlap(turns[0], fresh[1]), "{runs:#?}");
}

#[test]
fn an_editing_run_never_overlaps_another_run_in_its_project() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, 4).env("FAKE_SLEEP", "1").spawn();
    let ids = [
        ask(&mut relay, json!({"prompt": "read 1"})),
        ask(&mut relay, json!({"prompt": "edit", "mode": "accept-edits"})),
        ask(&mut relay, json!({"prompt": "read 2"})),
        ask(&mut relay, json!({"prompt": "skip", "skipPermissions": true})),
    ];
    for id in &ids {
        answered(&mut relay, id);
    }
    let runs = runs(&fakes);
    assert_eq!(runs.len(), 4);
    let editors: Vec<&Run> = runs
        .iter()
        .filter(|run| {
            run.argv
                .iter()
                .any(|arg| arg == "accept-edits" || arg == "--dangerously-skip-permissions")
        })
        .collect();
    assert_eq!(editors.len(), 2, "{runs:#?}");
    for editor in &editors {
        let others = runs.iter().filter(|run| !std::ptr::eq(*run, *editor));
        for other in others {
            assert!(!overlap(editor, other), "an editor overlapped a run: {runs:#?}");
        }
    }
}

#[test]
fn read_only_runs_share_their_project_and_an_image_with_an_output_path_is_no_editor() {
    let fakes = Fakes::new();
    let project = TempDir::new("project");
    let mut relay =
        agy(&fakes, 4).env("FAKE_SLEEP", "1").env("FAKE_AGY_IMAGE", "1").cwd(&project.path).spawn();
    let image = relay.send_request(
        "tools/call",
        json!({"name": "gemini-image", "arguments": {"prompt": "a cat", "outputPath": "cat.png"}}),
    );
    let plan = ask(&mut relay, json!({"prompt": "read", "mode": "plan"}));
    answered(&mut relay, &image);
    answered(&mut relay, &plan);
    assert!(project.path.join("cat.png").is_file());
    let runs = runs(&fakes);
    assert_eq!(runs.len(), 2);
    assert!(overlap(&runs[0], &runs[1]), "{runs:#?}");
}

#[cfg(unix)]
#[test]
fn a_killed_relay_frees_its_slot_and_the_other_relays_waiter_starts_within_a_second() {
    let fakes = Fakes::new();
    let state = TempDir::new("state");
    let dir = state.path.display().to_string();
    let setup = |tag: &str, sleep: &str| {
        agy(&fakes, 1)
            .env("FAKE_TAG", tag)
            .env("FAKE_SLEEP", sleep)
            .env("GEMINI_MCP_STATE_DIR", &dir)
            .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "50")
    };
    let mut holder = setup("holder", "60").spawn();
    ask(&mut holder, json!({"prompt": "long"}));
    util::wait_for_runs(&fakes, 1);
    let mut waiter = setup("waiter", "0").spawn();
    let id = waiter.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "next"}, "_meta": {"progressToken": "w"}}),
    );
    // The waiter says what it waits for.
    let text = "⏳ Waiting for agy: 1 of 1 runs busy, 0 call(s) of this relay ahead";
    let deadline = Instant::now() + util::slack(Duration::from_secs(5));
    loop {
        let progress = waiter.take_progress(&json!("w"));
        if progress.iter().any(|p| p["message"].as_str().unwrap_or_default().ends_with(text)) {
            break;
        }
        assert!(Instant::now() < deadline, "no waiting text: {progress:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fakes.prompt_runs().len(), 1, "the waiter waits for the other relay's run");
    let orphan = fakes.prompt_runs()[0].pgid();
    holder.child.kill().unwrap();
    let killed = Instant::now();
    let _ = holder.child.wait();
    util::wait_for_runs(&fakes, 2);
    let waited = killed.elapsed();
    // SAFETY: kill(2) on the process group the killed relay left behind.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(-(orphan as i32), libc::SIGKILL)
    };
    assert!(waited < util::slack(Duration::from_secs(1)), "{waited:?}");
    answered(&mut waiter, &id);
}

#[cfg(unix)]
#[test]
fn a_state_directory_others_may_write_in_gives_one_warning_and_this_relays_own_slots() {
    use std::os::unix::fs::PermissionsExt;

    let fakes = Fakes::new();
    let state = TempDir::new("state");
    std::fs::set_permissions(&state.path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut relay = agy(&fakes, 1)
        .env("FAKE_SLEEP", "0.5")
        .env("GEMINI_MCP_STATE_DIR", state.path.display().to_string())
        .spawn();
    concurrent_asks(&mut relay, 2);
    let runs = runs(&fakes);
    assert_eq!(most_at_once(&runs), 1, "the cap still holds within the relay: {runs:#?}");
    let refused = "its group or others may write in it (mode 777); agy's run slots are counted in this relay only";
    assert!(relay.logged(refused), "{}", relay.stderr());
    assert_eq!(relay.stderr().matches("counted in this relay only").count(), 1);
    assert_eq!(std::fs::read_dir(&state.path).unwrap().count(), 0, "nothing was created there");
}

#[test]
fn two_hundred_calls_with_cancels_racing_their_start_none_starts_after_its_cancel_none_lost() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes, 2).env("FAKE_SLEEP", "0.02").spawn();
    let ids: Vec<Value> =
        (0..200).map(|i| ask(&mut relay, json!({"prompt": format!("call-{i:03}")}))).collect();
    // Every other call is cancelled while the first ones run and the rest wait.
    for id in ids.iter().skip(1).step_by(2) {
        relay.notify("notifications/cancelled", json!({"requestId": id}));
    }
    // Once the ping is answered, the relay has read every cancel before it.
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    let processed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    for id in ids.iter().step_by(2) {
        answered(&mut relay, id);
    }
    // A cancelled call is answered only when it ended before its cancel was read.
    let late = relay.drain(Duration::from_millis(300));
    let cancelled: Vec<&Value> = ids.iter().skip(1).step_by(2).collect();
    assert!(late.iter().all(|m| cancelled.contains(&&m["id"])), "{late:?}");
    // Each run's prompt, as far as the fake read it: a run killed by its call's cancel may have
    // read nothing (it is a cancelled call's run, then).
    let started: Vec<(i64, Option<String>)> = fakes
        .prompt_runs()
        .iter()
        .map(|run| {
            let prompt = run.stdin_text();
            let name = prompt.find("call-").map(|at| prompt[at..at + 8].to_string());
            (run.record["t_ms"].as_i64().unwrap(), name)
        })
        .collect();
    for i in (0..200).step_by(2) {
        let name = format!("call-{i:03}");
        let runs = started.iter().filter(|(_, p)| p.as_deref() == Some(&name)).count();
        assert_eq!(runs, 1, "{name} ran once");
    }
    // A cancelled call may have started before its cancel was read, never after: the runs that
    // start later (the queue takes seconds to drain) are all of calls that were not cancelled.
    let cancelled_runs: Vec<&(i64, Option<String>)> = started
        .iter()
        .filter(|(_, p)| p.as_ref().is_none_or(|p| p[5..].parse::<usize>().unwrap() % 2 == 1))
        .collect();
    let margin = util::slack(Duration::from_millis(500)).as_millis() as i64;
    for (at, prompt) in &cancelled_runs {
        assert!(
            *at <= processed + margin,
            "{prompt:?} started {} ms after its cancel",
            at - processed
        );
    }
    // Most cancels are read while their calls still wait (the queue takes seconds to drain); how
    // many calls started first depends on how fast the relay reads (slower under emulation).
    assert!(cancelled_runs.len() < 50, "{} of 100 cancelled calls ran", cancelled_runs.len());
}
