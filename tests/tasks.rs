//! The MCP tasks extension through the real binary: a modern `tools/call` for a model tool that
//! declares the extension is answered with a task at once, then polled, cancelled, or left to
//! finish; requests that do not declare it are served as before.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, Fakes, Relay, Setup, wait_for_runs};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Modern `_meta`, declaring the tasks extension when `tasks` is set.
fn meta(tasks: bool) -> Value {
    let extensions = if tasks { json!({EXTENSION: {}}) } else { json!({}) };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    })
}

fn call_params(name: &str, args: Value, tasks: bool) -> Value {
    json!({"name": name, "arguments": args, "_meta": meta(tasks)})
}

/// Starts a call as a task and returns the `CreateTaskResult`.
fn start_task(relay: &mut Relay, name: &str, args: Value) -> Value {
    let response = relay.request("tools/call", call_params(name, args, true));
    let result = response["result"].clone();
    if result["resultType"] != "task" {
        relay.fail(&format!("not a task: {response}"));
    }
    result
}

fn get(relay: &mut Relay, task_id: &Value) -> Value {
    relay.request("tasks/get", json!({"taskId": task_id, "_meta": meta(true)}))
}

/// Polls `tasks/get` until the task leaves `working` (bounded).
fn wait_done(relay: &mut Relay, task_id: &Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = get(relay, task_id)["result"].clone();
        if task["status"] != "working" {
            return task;
        }
        if Instant::now() > deadline {
            relay.fail(&format!("task {task_id} still working"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a task's status text is `🧠 <tool>: running for <n>s`, with `n` in `secs`.
fn running_for(task: &Value, tool: &str, secs: std::ops::RangeInclusive<u64>) -> bool {
    let prefix = format!("🧠 {tool}: running for ");
    let message = task["statusMessage"].as_str().unwrap_or_default();
    let n = message.strip_prefix(&prefix).and_then(|rest| rest.strip_suffix('s'));
    n.and_then(|n| n.parse().ok()).is_some_and(|n| secs.contains(&n))
}

/// A relay on the gemini backend whose CLI hangs and leaves a grandchild holding its pipes.
fn hanging_gemini(fakes: &Fakes) -> Relay {
    fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_HANG", "1")
        .env("FAKE_GRANDCHILD", "1")
        .spawn()
}

fn test_tools() -> Setup {
    Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100")
}

#[test]
fn a_declaring_call_becomes_a_task_that_completes_with_the_synchronous_result() {
    let mut relay = test_tools().spawn();
    let created = start_task(&mut relay, "gemini-timeout-test", json!({"duration": 3000}));
    let task_id = created["taskId"].clone();
    assert!(task_id.as_str().is_some_and(|id| id.len() == 32), "{created}");
    assert_eq!(created["status"], "working");
    // Answered at once, as the call starts.
    assert!(running_for(&created, "gemini-timeout-test", 0..=0), "{created}");
    assert_eq!(created["pollIntervalMs"], 1000);
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(created["ttlMs"].as_u64().unwrap() > 45 * 60 * 1000);
    assert_eq!(created["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "gemini-relay");
    // A poll while it runs (before its first step) shows how long it has run, never the
    // keepalive texts, though they tick every 100 ms.
    std::thread::sleep(Duration::from_millis(300));
    let working = get(&mut relay, &task_id)["result"].clone();
    assert_eq!(working["resultType"], "complete");
    assert_eq!(working["status"], "working");
    assert!(running_for(&working, "gemini-timeout-test", 0..=1), "{working}");
    assert_eq!(working["pollIntervalMs"], 1000);
    let done = wait_done(&mut relay, &task_id);
    assert_eq!(done["status"], "completed");
    // The same call without the declaration answers synchronously, with progress.
    let mut params = call_params("gemini-timeout-test", json!({"duration": 3000}), false);
    params["_meta"]["progressToken"] = json!("p");
    let sync = relay.request("tools/call", params)["result"].clone();
    assert_eq!(sync["resultType"], "complete");
    let progress = relay.take_progress(&json!("p"));
    assert!(progress.len() >= 2, "{progress:?}");
    // Their texts differ only in the measured times, so compare their shape line by line.
    let lines = |v: &Value| v["content"][0]["text"].as_str().unwrap().lines().count();
    assert_eq!(lines(&done["result"]), lines(&sync));
    assert_eq!(done["result"]["isError"], sync["isError"]);
    assert!(
        relay
            .drain(Duration::from_millis(200))
            .iter()
            .all(|m| m["method"] != "notifications/progress")
    );
}

#[test]
fn a_failing_run_completes_with_the_same_error_result_as_a_synchronous_call() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_EXIT", "3")
        .env("FAKE_STDERR", "boom")
        .env("FAKE_SLEEP", "1.5")
        .spawn();
    let created = start_task(&mut relay, "gemini-ask", json!({"prompt": "hi"}));
    let done = wait_done(&mut relay, &created["taskId"]);
    assert_eq!(done["status"], "completed", "a result with isError is completed");
    let sync =
        relay.request("tools/call", call_params("gemini-ask", json!({"prompt": "hi"}), false));
    let mut expected = sync["result"].clone();
    expected.as_object_mut().unwrap().remove("_meta");
    expected.as_object_mut().unwrap().remove("resultType");
    let mut got = done["result"].clone();
    got.as_object_mut().unwrap().remove("_meta");
    got.as_object_mut().unwrap().remove("resultType");
    assert_eq!(got, expected);
    assert_eq!(got["isError"], true);
}

#[test]
fn a_task_status_message_is_the_running_time_and_the_decoded_answer_so_far() {
    let fakes = Fakes::new();
    let mut relay = fakes.setup().env("FAKE_AGY_STREAM_SCRIPT", util::STAGED_STREAM).spawn();
    let created = start_task(&mut relay, "gemini-ask", json!({"prompt": "hi"}));
    let task_id = created["taskId"].clone();
    let mut seen = vec![created];
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.last().unwrap()["status"] == "working" {
        assert!(Instant::now() < deadline, "task still working");
        std::thread::sleep(Duration::from_millis(50));
        seen.push(get(&mut relay, &task_id)["result"].clone());
    }
    let done = seen.pop().unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["statusMessage"], "✅ gemini-ask completed successfully");
    let messages: Vec<&str> = seen.iter().map(|t| t["statusMessage"].as_str().unwrap()).collect();
    for message in &messages {
        assert!(message.starts_with("🧠 gemini-ask: running for "), "{message}");
        assert!(!message.contains("{\"event\"") && !message.contains("Starting"), "{message}");
    }
    let output = |m: &&str| m.split_once("s\n📝 Output: ...").map(|(_, p)| p.to_string());
    let previews: Vec<String> = messages.iter().filter_map(output).collect();
    assert!(previews.iter().any(|p| p == util::STAGED_FIRST), "{messages:#?}");
    assert_eq!(previews.last().map(String::as_str), Some(util::STAGED_ALL), "{messages:#?}");
    // `lastUpdatedAt` moves exactly when what the client sees changes.
    for pair in seen.windows(2).chain([[seen.last().unwrap().clone(), done.clone()].as_slice()]) {
        let changed = pair[0]["statusMessage"] != pair[1]["statusMessage"]
            || pair[0]["status"] != pair[1]["status"];
        let moved = pair[0]["lastUpdatedAt"] != pair[1]["lastUpdatedAt"];
        assert_eq!(changed, moved, "{:#?}", pair);
    }
}

#[test]
fn tasks_cancel_kills_the_process_group_and_the_task_reads_cancelled() {
    let fakes = Fakes::new();
    let mut relay = hanging_gemini(&fakes);
    let created = start_task(&mut relay, "gemini-ask", json!({"prompt": "hi"}));
    let task_id = created["taskId"].clone();
    wait_for_runs(&fakes, 1);
    let ack = relay.request("tasks/cancel", json!({"taskId": task_id, "_meta": meta(true)}));
    assert_eq!(ack["result"]["resultType"], "complete");
    let cancelled = get(&mut relay, &task_id)["result"].clone();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["statusMessage"], "❌ gemini-ask cancelled");
    let left = fakes.leftovers(relay.pid(), Duration::from_secs(2));
    assert!(left.is_empty(), "left running: {left:?}");
    // It stays cancelled.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(&mut relay, &task_id)["result"]["status"], "cancelled");
}

#[test]
fn unknown_tasks_and_undeclared_requests_are_errors() {
    let mut relay = test_tools().spawn();
    let unknown = get(&mut relay, &json!("0123"));
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "Unknown task: 0123");
    let created = start_task(&mut relay, "gemini-timeout-test", json!({"duration": 3000}));
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let undeclared =
            relay.request(method, json!({"taskId": created["taskId"], "_meta": meta(false)}));
        assert_eq!(undeclared["error"]["code"], -32021, "{method}: {undeclared}");
        assert_eq!(
            undeclared["error"]["data"],
            json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
        );
    }
    let update =
        relay.request("tasks/update", json!({"taskId": created["taskId"], "_meta": meta(true)}));
    assert_eq!(update["result"]["resultType"], "complete");
}

#[test]
fn legacy_calls_cheap_tools_and_invalid_arguments_are_never_tasks() {
    let mut relay = test_tools().spawn();
    // Declaring the extension without the modern protocol version is a legacy request.
    let mut legacy = call_params("gemini-timeout-test", json!({"duration": 10}), true);
    legacy["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/protocolVersion");
    let answer = relay.request("tools/call", legacy);
    assert!(answer["result"]["content"].is_array(), "{answer}");
    let ping = relay.request("tools/call", call_params("gemini-ping", json!({}), true));
    assert_eq!(ping["result"]["content"][0]["text"], "Pong!");
    let invalid = relay.request("tools/call", call_params("gemini-timeout-test", json!({}), true));
    assert_eq!(invalid["result"]["isError"], true);
    assert_eq!(invalid["result"]["resultType"], "complete");
}

#[test]
fn tasks_get_is_answered_promptly_with_64_tasks_in_flight() {
    let mut relay = test_tools().spawn();
    let ids = start_tasks(&mut relay, "gemini-timeout-test", json!({"duration": 5000}), 64);
    let start = Instant::now();
    for id in &ids[..8] {
        assert_eq!(get(&mut relay, id)["result"]["status"], "working");
    }
    assert!(start.elapsed() < Duration::from_millis(500), "8 polls took {:?}", start.elapsed());
}

#[test]
fn a_task_waiting_for_agy_says_why_until_its_run_starts() {
    let fakes = Fakes::new();
    let mut relay =
        fakes.setup().env("FAKE_SLEEP", "2.5").env("GEMINI_MCP_AGY_PARALLEL", "2").spawn();
    let requests: Vec<Value> = ["first", "second", "third", "fourth", "fifth"]
        .iter()
        .map(|prompt| {
            let params = call_params("gemini-ask", json!({"prompt": prompt}), true);
            relay.send_request("tools/call", params)
        })
        .collect();
    let answers: Vec<Value> =
        requests.iter().map(|id| relay.response(id)["result"].clone()).collect();
    // A first poll says where each call is: two run, three wait for a slot.
    let polled: Vec<Value> =
        answers.iter().map(|task| get(&mut relay, &task["taskId"])["result"].clone()).collect();
    let [first, second, third, fourth, fifth] = [0, 1, 2, 3, 4].map(|n| &polled[n]);
    assert!(running_for(first, "gemini-ask", 0..=1), "{first}");
    assert!(running_for(second, "gemini-ask", 0..=1), "{second}");
    let busy = |ahead| {
        format!("⏳ Waiting for agy: 2 of 2 runs busy, {ahead} call(s) of this relay ahead")
    };
    assert_eq!(third["statusMessage"], busy(0));
    assert_eq!(fourth["statusMessage"], busy(1));
    assert_eq!(fifth["statusMessage"], busy(2));
    // The first two runs end together and the next two start: the fifth waits 2.5 s more.
    wait_for_runs(&fakes, 4);
    let moved = get(&mut relay, &fifth["taskId"])["result"].clone();
    assert_eq!(moved["statusMessage"], busy(0));
    assert_ne!(moved["lastUpdatedAt"], fifth["lastUpdatedAt"]);
    // A run that just started counts its time from its start, not from its wait (2.5 s).
    let started = get(&mut relay, &third["taskId"])["result"].clone();
    let message = started["statusMessage"].as_str().unwrap();
    assert!(
        ["0s", "1s"].iter().any(|t| message == format!("🧠 gemini-ask: running for {t}")),
        "{message}"
    );
}

#[test]
fn a_task_waiting_for_its_conversation_or_for_an_editor_says_so() {
    let fakes = Fakes::new();
    let mut relay =
        fakes.setup().env("FAKE_SLEEP", "2.5").env("GEMINI_MCP_AGY_PARALLEL", "4").spawn();
    let turn = json!({"prompt": "turn", "conversationId": "conv-3"});
    start_task(&mut relay, "gemini-ask", turn.clone());
    wait_for_runs(&fakes, 1);
    let next_turn = start_task(&mut relay, "gemini-ask", turn);
    let editor =
        start_task(&mut relay, "gemini-ask", json!({"prompt": "e", "mode": "accept-edits"}));
    let status = |relay: &mut Relay, task: &Value| {
        get(relay, &task["taskId"])["result"]["statusMessage"].as_str().unwrap().to_string()
    };
    assert_eq!(
        status(&mut relay, &next_turn),
        "⏳ Waiting for the previous turn of this conversation to finish"
    );
    assert_eq!(
        status(&mut relay, &editor),
        "⏳ Waiting for a run that may edit this project to finish"
    );
    assert_eq!(fakes.prompt_runs().len(), 1, "neither has started");
    assert_eq!(wait_done(&mut relay, &editor["taskId"])["status"], "completed");
    assert_eq!(wait_done(&mut relay, &next_turn["taskId"])["status"], "completed");
}

#[test]
fn at_a_cap_of_one_agy_tasks_complete_in_arrival_order() {
    let fakes = Fakes::new();
    let mut relay =
        fakes.setup().env("FAKE_SLEEP", "1.2").env("GEMINI_MCP_AGY_PARALLEL", "1").spawn();
    let requests: Vec<Value> = (0..3)
        .map(|n| {
            let args = json!({"prompt": format!("p{n}")});
            relay.send_request("tools/call", call_params("gemini-ask", args, true))
        })
        .collect();
    let ids: Vec<Value> =
        requests.iter().map(|id| relay.response(id)["result"]["taskId"].clone()).collect();
    assert!(ids.iter().all(Value::is_string), "{ids:?}");
    // While the first runs, the others wait for agy and read `working`.
    assert_eq!(get(&mut relay, &ids[2])["result"]["status"], "working");
    let mut finished = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while finished.len() < ids.len() {
        assert!(Instant::now() < deadline, "tasks still working");
        for (n, id) in ids.iter().enumerate() {
            if !finished.contains(&n) && get(&mut relay, id)["result"]["status"] == "completed" {
                finished.push(n);
            }
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(finished, [0, 1, 2]);
    let prompts: Vec<String> = fakes.prompt_runs().iter().map(|run| run.stdin_text()).collect();
    assert!(prompts[0].contains("p0") && prompts[1].contains("p1") && prompts[2].contains("p2"));
}

#[test]
fn end_of_input_with_tasks_running_leaves_no_process_behind() {
    let fakes = Fakes::new();
    let mut relay = hanging_gemini(&fakes);
    start_tasks(&mut relay, "gemini-ask", json!({"prompt": "p"}), 3);
    wait_for_runs(&fakes, 3);
    relay.close_stdin();
    assert!(relay.wait_exit(Duration::from_secs(2)).is_some(), "no exit after end of input");
    let left = fakes.leftovers(relay.pid(), Duration::from_secs(1));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_call_cancelled_while_it_waits_for_a_worker_never_starts_its_cli() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("FAKE_SLEEP", "0.3")
        .spawn();
    // 64 tasks hold every worker.
    let fillers: Vec<Value> = (0..64)
        .map(|_| {
            let params = call_params("gemini-timeout-test", json!({"duration": 5000}), true);
            relay.send_request("tools/call", params)
        })
        .collect();
    let first = relay.response(&fillers[0])["result"]["taskId"].clone();
    for id in &fillers[1..] {
        relay.response(id);
    }
    // A synchronous call and a task wait for a worker, and are cancelled at once.
    let call = relay.send_request(
        "tools/call",
        json!({"name": "gemini-ask", "arguments": {"prompt": "cancelled call"}}),
    );
    relay.notify("notifications/cancelled", json!({"requestId": call}));
    let task = start_task(&mut relay, "gemini-ask", json!({"prompt": "cancelled task"}));
    let ack = relay.request("tasks/cancel", json!({"taskId": task["taskId"], "_meta": meta(true)}));
    assert_eq!(ack["result"]["resultType"], "complete");
    assert_eq!(get(&mut relay, &first)["result"]["status"], "working", "a worker was free");
    // A call queued behind them gets a worker after them, once the fillers end.
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "after"}));
    assert!(!is_error, "{text}");
    let runs: Vec<String> = fakes.prompt_runs().iter().map(|run| run.stdin_text()).collect();
    assert_eq!(runs, ["after"], "only the call that was not cancelled ran");
    let stderr = relay.stderr();
    assert_eq!(stderr.matches("Starting: gemini").count(), 1, "{stderr}");
    assert_eq!(get(&mut relay, &task["taskId"])["result"]["status"], "cancelled");
}

#[test]
fn a_task_cancelled_while_it_waits_for_agy_never_runs() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "agy")
        .env("FAKE_SLEEP", "1.5")
        .env("GEMINI_MCP_AGY_PARALLEL", "1")
        .spawn();
    let requests: Vec<Value> = ["first", "second", "third"]
        .iter()
        .map(|prompt| {
            let params = call_params("gemini-ask", json!({"prompt": prompt}), true);
            relay.send_request("tools/call", params)
        })
        .collect();
    let ids: Vec<Value> =
        requests.iter().map(|id| relay.response(id)["result"]["taskId"].clone()).collect();
    assert!(ids.iter().all(Value::is_string), "{ids:?}");
    let ack = relay.request("tasks/cancel", json!({"taskId": ids[1], "_meta": meta(true)}));
    assert_eq!(ack["result"]["resultType"], "complete");
    assert_eq!(wait_done(&mut relay, &ids[2])["status"], "completed");
    assert_eq!(get(&mut relay, &ids[0])["result"]["status"], "completed");
    assert_eq!(get(&mut relay, &ids[1])["result"]["status"], "cancelled");
    let prompts: Vec<String> = fakes.prompt_runs().iter().map(|run| run.stdin_text()).collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(prompts.iter().all(|prompt| !prompt.contains("second")), "{prompts:?}");
}

/// `_meta` that declares the extension but names no modern protocol version: a legacy request.
fn legacy_meta() -> Value {
    let mut meta = meta(true);
    meta.as_object_mut().unwrap().remove("io.modelcontextprotocol/protocolVersion");
    meta
}

fn missing_capability(answer: &Value) -> bool {
    answer["error"]["code"] == -32021
        && answer["error"]["data"]
            == json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
}

#[test]
fn legacy_task_requests_that_declare_the_extension_are_refused_and_touch_nothing() {
    let mut relay = test_tools().spawn();
    let created = start_task(&mut relay, "gemini-timeout-test", json!({"duration": 3000}));
    let task_id = created["taskId"].clone();
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let answer = relay.request(method, json!({"taskId": task_id, "_meta": legacy_meta()}));
        assert!(missing_capability(&answer), "{method}: {answer}");
    }
    assert_eq!(get(&mut relay, &task_id)["result"]["status"], "working", "the legacy cancel ran");
}

#[test]
fn listening_for_task_ids_needs_the_declaration() {
    let mut relay = test_tools().spawn();
    let mut params = json!({"_meta": meta(false), "notifications": {"taskIds": ["0123"]}});
    let refused = relay.request("subscriptions/listen", params.clone());
    assert!(missing_capability(&refused), "{refused}");
    params["_meta"] = meta(true);
    let id = relay.send_request("subscriptions/listen", params);
    let ack =
        relay.recv_matching("ack", |v| v["method"] == "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id);
    // The same request in the legacy era is refused: the extension is a modern one.
    let legacy = json!({"_meta": legacy_meta(), "notifications": {"taskIds": ["0123"]}});
    let refused = relay.request("subscriptions/listen", legacy);
    assert!(missing_capability(&refused), "{refused}");
}

/// Waits until the relay's stderr contains `text` (bounded).
fn wait_stderr(relay: &Relay, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stderr = relay.stderr();
        if stderr.contains(text) {
            return stderr;
        }
        if Instant::now() > deadline {
            relay.fail(&format!("stderr never said {text:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stop_the_user_asked_for_is_no_error_and_tasks_are_logged_by_id() {
    let fakes = Fakes::new();
    let mut relay = hanging_gemini(&fakes);
    // Warnings and errors are also sent as notifications/message from now on.
    relay.request("logging/setLevel", json!({"level": "warning"}));
    let created = start_task(&mut relay, "gemini-ask", json!({"prompt": "hi"}));
    let task_id = created["taskId"].as_str().unwrap().to_string();
    wait_for_runs(&fakes, 1);
    relay.request("tasks/cancel", json!({"taskId": task_id, "_meta": meta(true)}));
    let id = relay
        .send_request("tools/call", json!({"name": "gemini-ask", "arguments": {"prompt": "hi"}}));
    wait_for_runs(&fakes, 2);
    relay.notify("notifications/cancelled", json!({"requestId": id}));
    // Each run is stopped on its worker, which logs it once the child is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    while relay.stderr().matches("gemini was cancelled").count() < 2 {
        assert!(Instant::now() < deadline, "the stopped calls were never logged");
        std::thread::sleep(Duration::from_millis(20));
    }
    let messages: Vec<Value> = relay
        .drain(Duration::from_millis(200))
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert!(
        messages.is_empty(),
        "a stop the user asked for was reported as an error: {messages:?}"
    );
    let stderr = relay.stderr();
    assert!(stderr.contains(&format!("Task {task_id} created for gemini-ask")), "{stderr}");
    assert!(stderr.contains(&format!("Task {task_id} cancelled")), "{stderr}");
}

#[test]
fn a_finished_task_is_logged_with_its_id() {
    let mut relay = test_tools().spawn();
    let created = start_task(&mut relay, "gemini-timeout-test", json!({"duration": 1500}));
    let task_id = created["taskId"].as_str().unwrap().to_string();
    wait_done(&mut relay, &created["taskId"]);
    let stderr = wait_stderr(&relay, &format!("Task {task_id} completed"));
    assert!(
        stderr.contains(&format!("Task {task_id} created for gemini-timeout-test")),
        "{stderr}"
    );
}

/// Starts `n` calls as tasks at once and returns their task ids in order.
fn start_tasks(relay: &mut Relay, name: &str, args: Value, n: usize) -> Vec<Value> {
    let ids: Vec<Value> = (0..n)
        .map(|_| relay.send_request("tools/call", call_params(name, args.clone(), true)))
        .collect();
    ids.iter()
        .map(|id| {
            let response = relay.response(id);
            if response["result"]["resultType"] != "task" {
                relay.fail(&format!("not a task: {response}"));
            }
            response["result"]["taskId"].clone()
        })
        .collect()
}

#[test]
fn a_result_too_large_to_keep_fails_naming_the_limit_and_evicts_nothing() {
    let fakes = Fakes::new();
    // Finished tasks keep at most the output cap in results; 40,000 quotes are 80,000 bytes of JSON.
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("GEMINI_MCP_MAX_OUTPUT_BYTES", "65536")
        .env("FAKE_GEMINI_RESPONSE_FILE", fakes.file("reply", &"\"".repeat(40_000)))
        .env("FAKE_SLEEP", "1.5")
        .spawn();
    let kept = start_tasks(&mut relay, "gemini-timeout-test", json!({"duration": 1500}), 15);
    for id in &kept {
        assert_eq!(wait_done(&mut relay, id)["status"], "completed");
    }
    let big = start_task(&mut relay, "gemini-ask", json!({"prompt": "hi"}));
    let done = wait_done(&mut relay, &big["taskId"]);
    assert_eq!(done["status"], "failed", "{}", done["error"]);
    assert_eq!(done["error"]["code"], -32603);
    let message = done["error"]["message"].as_str().unwrap();
    assert!(message.contains("65536 bytes"), "{message}");
    assert_eq!(get(&mut relay, &big["taskId"])["result"]["status"], "failed", "it stays readable");
    for id in &kept {
        assert_eq!(get(&mut relay, id)["result"]["status"], "completed", "{id} was evicted");
    }
    // The same call made synchronously returns its result.
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "hi"}));
    assert!(!is_error && text.ends_with(&"\"".repeat(40_000)), "{}", text.len());
}

#[cfg(unix)]
#[test]
fn polling_a_large_result_with_stdout_unread_holds_it_once() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    const RESULT: usize = 8 << 20;
    let fakes = Fakes::new();
    let setup = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_FLOOD_STDOUT", RESULT.to_string())
        .env("FAKE_SLEEP", "1.5");
    let mut child = crate::util::relay_command()
        .env_clear()
        .envs(setup.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut ask = |stdin: &mut std::process::ChildStdin, id: u64, method: &str, params: Value| {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let created =
        ask(&mut stdin, 1, "tools/call", call_params("gemini-ask", json!({"prompt": "x"}), true));
    let task_id = created["result"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 2;
    loop {
        let task = ask(&mut stdin, n, "tasks/get", json!({"taskId": task_id, "_meta": meta(true)}));
        n += 1;
        if task["result"]["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "{task}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = crate::util::peak_rss_kb(child.id());
    // 40 polls in one write, and nobody reads the answers.
    let mut burst = String::new();
    for id in 100..140 {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
            "params": {"taskId": task_id, "_meta": meta(true)}});
        burst.push_str(&format!("{request}\n"));
    }
    stdin.write_all(burst.as_bytes()).unwrap();
    // The relay works until its stdout is full; then its memory stops growing.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = 0;
    let mut steady = 0;
    while steady < 5 && Instant::now() < deadline {
        let now = crate::util::peak_rss_kb(child.id());
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = crate::util::peak_rss_kb(child.id());
    eprintln!("peak RSS before the polls {before} KiB, after {after} KiB");
    let grown = after.saturating_sub(before) as usize * 1024;
    assert!(grown < RESULT + (6 << 20), "peak RSS grew by {grown} bytes: {before} -> {after} KiB");
    // Every poll is answered in full once the client reads.
    for _ in 100..140 {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert!(line.len() > RESULT, "{}", line.len());
    }
    drop(stdin);
    let _ = child.wait();
}

/// How long the task answer may take, from the request's write to the answer's read: a host
/// cancels a task-declared call it has not seen answered within about 150 ms.
fn task_answer_budget() -> Duration {
    util::slack(Duration::from_millis(50))
}

#[test]
fn a_quick_call_is_a_task_whose_result_is_there_at_the_first_poll() {
    let fakes = Fakes::new();
    let mut relay = fakes.setup().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    let start = Instant::now();
    let created = start_task(&mut relay, "gemini-help", json!({}));
    assert!(start.elapsed() < task_answer_budget(), "answered in {:?}", start.elapsed());
    // The client polls after `pollIntervalMs`; by then the help has long been written.
    let interval = Duration::from_millis(created["pollIntervalMs"].as_u64().unwrap());
    assert_eq!(interval, Duration::from_secs(1));
    std::thread::sleep(interval);
    let done = get(&mut relay, &created["taskId"])["result"].clone();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("Usage"), "{done}");
}

#[test]
fn the_task_answer_goes_out_at_once_while_every_worker_and_agy_are_busy() {
    let fakes = Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("FAKE_HANG", "1")
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "100")
        .env("GEMINI_MCP_AGY_PARALLEL", "1")
        .spawn();
    // The only agy slot is taken, 64 tasks hold every worker.
    start_task(&mut relay, "gemini-ask", json!({"prompt": "first"}));
    wait_for_runs(&fakes, 1);
    start_tasks(&mut relay, "gemini-timeout-test", json!({"duration": 5000}), 64);
    for (name, args) in [
        ("gemini-ask", json!({"prompt": "second"})),
        ("gemini-timeout-test", json!({"duration": 5000})),
    ] {
        let start = Instant::now();
        let created = start_task(&mut relay, name, args);
        let waited = start.elapsed();
        assert!(waited < task_answer_budget(), "{name} answered in {waited:?}");
        // The task was registered before its answer: it is found at once.
        assert_eq!(get(&mut relay, &created["taskId"])["result"]["status"], "working");
    }
}
