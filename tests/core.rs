//! The design card's promises through the real binary: a bounded worker pool that answers every
//! call even when threads run out, backpressure from an unread stdout, duplicate ids, and nothing
//! that outlives its call or the relay.

use std::io::Write;
#[cfg(unix)]
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
#[cfg(unix)]
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

#[cfg(unix)]
use serde_json::Value;
use serde_json::json;

#[cfg(unix)]
use crate::util::peak_rss_kb;
use crate::util::{self, Fakes, Relay, Setup};

/// Sends `signal` to the relay.
#[cfg(unix)]
fn signal(relay: &Relay, signal: &str) {
    let status = Command::new("kill").args([signal, &relay.pid().to_string()]).status().unwrap();
    assert!(status.success());
}

/// The responses to the requests with the given ids, in any order, within `deadline`.
#[cfg(unix)]
fn responses(relay: &mut Relay, ids: &[Value], deadline: Duration) -> Vec<Value> {
    let until = Instant::now() + deadline;
    let mut got = Vec::new();
    while got.len() < ids.len() {
        let left = until.saturating_duration_since(Instant::now());
        let Some(message) = relay.recv_within(left) else {
            relay.fail(&format!("{} of {} responses within the deadline", got.len(), ids.len()))
        };
        if message.get("id").is_some_and(|id| ids.contains(id)) {
            got.push(message);
        }
    }
    got
}

#[test]
fn duplicate_ids_in_a_batch_are_refused_and_the_batch_is_answered() {
    let mut relay = Relay::start();
    relay.send_raw(
        br#"[{"jsonrpc":"2.0","id":"bp","method":"ping"},{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gemini-ping","arguments":{}}},{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gemini-ping","arguments":{}}}]
"#,
    );
    let batch = relay.recv();
    let batch = batch.as_array().unwrap_or_else(|| relay.fail("not a batch answer"));
    assert_eq!(batch.len(), 3, "{batch:?}");
    assert_eq!(batch[0], json!({"jsonrpc": "2.0", "id": "bp", "result": {}}));
    assert_eq!(batch[1]["result"]["content"][0]["text"], "Pong!");
    assert_eq!(
        batch[2],
        json!({"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32600, "message": "Invalid Request", "data": "duplicate id 7 is still in flight"
        }})
    );
    // Once the batch is answered, the id is free again.
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn a_request_reusing_the_id_of_a_running_batched_call_is_refused() {
    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    relay.send(&json!([
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "gemini-timeout-test", "arguments": {"duration": 400}}},
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
    ]));
    relay.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}));
    let refused = relay.recv();
    assert_eq!(refused["id"], 9);
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(refused["error"]["data"], "duplicate id 9 is still in flight");
    let batch = relay.recv();
    let batch = batch.as_array().unwrap_or_else(|| relay.fail("not a batch answer"));
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[0]["id"], "p");
    assert_eq!(batch[1]["id"], 9);
    assert_eq!(batch[1]["result"]["isError"], false);
}

#[cfg(unix)]
#[test]
fn every_call_is_answered_when_the_relay_may_not_start_more_threads() {
    // The issue's repro: 400 calls that each hold a worker for a while, then a model call, under an
    // address-space limit that leaves room for far fewer than 400 threads.
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("MALLOC_ARENA_MAX", "2")
        .wrapped(&["prlimit", "--as=419430400", "--"])
        .spawn();
    let mut ids: Vec<Value> = (0..400)
        .map(|_| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-timeout-test", "arguments": {"duration": 300}}),
            )
        })
        .collect();
    ids.push(
        relay.send_request(
            "tools/call",
            json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}}),
        ),
    );
    let answers = responses(&mut relay, &ids, Duration::from_secs(60));
    let ask = answers.iter().find(|a| a["id"] == ids[400]).unwrap();
    assert!(
        ask["result"]["content"][0]["text"].as_str().unwrap_or("").contains("FAKE-ANSWER"),
        "{ask}"
    );
    for answer in &answers {
        assert!(answer.get("result").is_some() || answer["error"]["code"] == -32603, "{answer}");
    }
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[cfg(unix)]
#[test]
fn a_call_without_a_worker_is_answered_and_its_agy_slot_is_released() {
    // So little address space that hardly any worker can start: calls that get none are answered
    // -32603 at once, the agy slot each held goes to the next call, and the relay keeps serving.
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("MALLOC_ARENA_MAX", "1")
        .wrapped(&["prlimit", "--as=84934656", "--"])
        .spawn();
    let mut ids: Vec<Value> = (0..64)
        .map(|_| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-timeout-test", "arguments": {"duration": 3000}}),
            )
        })
        .collect();
    let asks: Vec<Value> = (0..3)
        .map(|_| {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}}),
            )
        })
        .collect();
    ids.extend(asks.iter().cloned());
    let answers = responses(&mut relay, &ids, Duration::from_secs(30));
    let refused: Vec<&Value> = answers.iter().filter(|a| a["error"]["code"] == -32603).collect();
    assert!(!refused.is_empty(), "the limit left room for every worker; lower it");
    assert!(refused[0]["error"]["message"].as_str().unwrap().contains("could not start a worker"));
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    // Every agy call was answered (none waits forever for a slot a refused call still held), and
    // a later model call gets a slot and is answered. Whether its run can start in what address
    // space the idle workers left depends on the binary's size, so only the answer is asserted.
    let again = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "again"}}),
    );
    let answer = &responses(&mut relay, &[again], Duration::from_secs(30))[0];
    assert!(answer.get("result").is_some() || answer["error"]["code"] == -32603, "{answer}");
}

/// A relay whose stdout nobody reads, fed by a thread; returns the relay and the bytes written.
fn unread_relay() -> (std::process::Child, Arc<AtomicUsize>) {
    let child = util::relay_command()
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (child, Arc::new(AtomicUsize::new(0)))
}

/// A ping whose id is a 1 MiB string, as one line.
fn big_ping(n: usize) -> Vec<u8> {
    let id = format!("{n}-{}", "x".repeat(1 << 20));
    let mut line =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).unwrap();
    line.push(b'\n');
    line
}

/// The peak resident set of a live process in KiB, where the system tells it (`VmHWM` in `/proc`
/// on Linux); `None` elsewhere, where `reaped_children_peak_rss_kb` measures after the exit.
#[cfg(unix)]
fn live_peak_rss_kb(pid: u32) -> Option<u64> {
    cfg!(target_os = "linux").then(|| peak_rss_kb(pid))
}

/// The largest peak resident set, in KiB, of any child this test process has reaped
/// (`getrusage(RUSAGE_CHILDREN)`): an upper bound on each reaped child's own peak, on every POSIX
/// system.
#[cfg(unix)]
fn reaped_children_peak_rss_kb() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C structure.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage to the valid pointer it is given.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    let max = usage.ru_maxrss as u64;
    // Linux counts ru_maxrss in KiB, macOS in bytes.
    if cfg!(target_os = "linux") { max } else { max / 1024 }
}

/// The CPU time the process has used so far, in hundredths of a second: from `/proc` on Linux,
/// from `ps` elsewhere (a `ps` that cannot run fails the test).
#[cfg(unix)]
fn cpu_centis(pid: u32) -> u64 {
    if cfg!(target_os = "linux") {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> =
            stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or("").split(' ').collect();
        // utime and stime, in clock ticks of 1/100 s.
        return fields
            .get(11..13)
            .map_or(0, |times| times.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    }
    let out = Command::new("ps").args(["-o", "time=", "-p", &pid.to_string()]).output().unwrap();
    parse_cpu_time(String::from_utf8_lossy(&out.stdout).trim())
}

/// `ps`'s cumulative CPU time, `[[dd-]hh:]mm:ss[.cc]`, in hundredths of a second (0 when empty).
#[cfg(unix)]
fn parse_cpu_time(text: &str) -> u64 {
    let (days, clock) = text.split_once('-').unwrap_or(("0", text));
    let (clock, centis) = clock.split_once('.').unwrap_or((clock, "0"));
    let seconds = clock.split(':').fold(0, |acc, part| acc * 60 + part.parse::<u64>().unwrap_or(0));
    let days: u64 = days.parse().unwrap_or(0);
    (days * 86_400 + seconds) * 100 + centis.parse::<u64>().unwrap_or(0)
}

#[cfg(unix)]
#[test]
fn cpu_times_from_ps_are_read_in_hundredths() {
    assert_eq!(parse_cpu_time("0:00.05"), 5);
    assert_eq!(parse_cpu_time("1:02.50"), 6250);
    assert_eq!(parse_cpu_time("01:00:00"), 360_000);
    assert_eq!(parse_cpu_time("2-00:00:01"), (2 * 86_400 + 1) * 100);
    assert_eq!(parse_cpu_time(""), 0);
    // What this system's `ps` prints for a live process is in that form.
    let me = std::process::id().to_string();
    let out = Command::new("ps").args(["-o", "time=", "-p", &me]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || ":.-".contains(c)),
        "{text:?}"
    );
}

#[cfg(unix)]
#[test]
fn the_peak_memory_of_a_reaped_child_is_measured() {
    // A child that touches 64 MiB: its peak, once it is reaped, is at least that.
    let status = Command::new("sh")
        .args(["-c", "x=$(head -c 67108864 /dev/zero | tr '\\0' x); echo ${#x}"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let peak = reaped_children_peak_rss_kb();
    assert!(peak >= 60 * 1024, "peak {peak} KiB");
}

fn wait_exit(child: &mut std::process::Child, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        thread::sleep(Duration::from_millis(5));
    }
    false
}

#[cfg(unix)]
#[test]
fn a_client_that_stops_reading_stdout_stops_the_relay_reading_stdin() {
    let (mut child, written) = unread_relay();
    let mut stdin = child.stdin.take().unwrap();
    let counter = written.clone();
    let feeder = thread::spawn(move || {
        for n in 0..400 {
            if stdin.write_all(&big_ping(n)).is_err() {
                return;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    // Backpressure: the feeder stalls early, with the relay idle (blocked on its stdout), however
    // slowly the relay works through lines. Without it the relay would take in all 400 MiB.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = (usize::MAX, u64::MAX);
    loop {
        let now = (written.load(Ordering::SeqCst), cpu_centis(child.id()));
        if now == last || now.0 >= 60 || feeder.is_finished() || Instant::now() > deadline {
            break;
        }
        last = now;
        thread::sleep(Duration::from_millis(500));
    }
    let sent = written.load(Ordering::SeqCst);
    assert!(sent < 60, "the relay read {sent} MiB lines without anyone reading its answers");
    let live_peak_kb = live_peak_rss_kb(child.id());
    // A signal still ends it promptly, stdout blocked or not.
    let start = Instant::now();
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(wait_exit(&mut child, Duration::from_secs(2)), "no exit after SIGTERM");
    assert!(start.elapsed() < Duration::from_millis(1500), "exit took {:?}", start.elapsed());
    let peak_mb = live_peak_kb.unwrap_or_else(reaped_children_peak_rss_kb) / 1024;
    assert!(peak_mb < 120, "peak RSS {peak_mb} MB");
    drop(child.stdout.take());
    let _ = feeder.join();
}

#[test]
fn end_of_input_ends_the_relay_promptly_while_stdout_is_blocked() {
    let (mut child, _) = unread_relay();
    let mut stdin = child.stdin.take().unwrap();
    // More than the stdout pipe holds, but less than the relay absorbs while it waits.
    for n in 0..8 {
        stdin.write_all(&big_ping(n)).unwrap();
    }
    let start = Instant::now();
    drop(stdin);
    assert!(wait_exit(&mut child, Duration::from_secs(2)), "no exit after end of input");
    assert!(start.elapsed() < Duration::from_millis(1500), "exit took {:?}", start.elapsed());
}

#[test]
fn what_a_cli_leaves_behind_is_killed_before_the_call_is_answered() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_GRANDCHILD", "detached")
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
    assert!(!is_error, "{text}");
    let left = fakes.leftovers(relay.pid(), Duration::from_millis(500));
    assert!(left.is_empty(), "still running after the answer: {left:?}");
}

#[cfg(unix)]
#[test]
fn a_signal_right_after_calls_start_leaves_no_process_behind() {
    for round in 0..12u64 {
        let fakes = Fakes::new();
        let mut relay =
            fakes.setup().env("GEMINI_MCP_BACKEND", "gemini").env("FAKE_SLEEP", "30").spawn();
        for _ in 0..10 {
            relay.send_request(
                "tools/call",
                json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}}),
            );
        }
        // The race window: the signal lands while workers are spawning their children.
        thread::sleep(Duration::from_millis(round * 5));
        signal(&relay, if round % 2 == 0 { "-TERM" } else { "-INT" });
        let limit = util::slack(Duration::from_secs(2));
        assert!(relay.wait_exit(limit).is_some(), "round {round}: no exit");
        let left = fakes.leftovers(relay.pid(), Duration::from_millis(300));
        assert!(left.is_empty(), "round {round}: left running: {left:?}");
    }
}

#[test]
fn a_closed_stdout_ends_the_relay() {
    let (mut child, _) = unread_relay();
    // Nobody will ever read an answer: the writer fails, and the relay stops instead of serving
    // requests it cannot answer.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").unwrap();
    let _ = stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    assert!(wait_exit(&mut child, Duration::from_secs(3)), "still running with stdout closed");
    drop(stdin);
}
