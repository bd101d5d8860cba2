//! The tasks of the 2025-11-25 revision through the real binary: a client that negotiates
//! 2025-11-25 and declares `capabilities.tasks` may call a model tool with `params.task`, gets a
//! `CreateTaskResult` at once, and reads, waits for, lists and cancels its tasks; every answer is
//! checked against that revision's JSON schema. Other clients are served as before.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp_schema::Schema;
use crate::util::{Fakes, Relay, Setup, wait_for_runs};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Sends `initialize` for `version` with `capabilities`, then `notifications/initialized`.
fn initialize(relay: &mut Relay, version: &str, capabilities: Value) -> Value {
    let params = json!({"protocolVersion": version, "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "0"}});
    let answer = relay.request("initialize", params);
    relay.notify("notifications/initialized", json!({}));
    answer["result"].clone()
}

/// A client that declares tasks, as VS Code does.
fn client_tasks() -> Value {
    json!({"tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}}})
}

/// A relay with the test tools, initialized by a 2025-11-25 client that declares tasks.
fn task_relay(setup: Setup) -> Relay {
    let mut relay = setup.env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    initialize(&mut relay, "2025-11-25", client_tasks());
    relay
}

/// Calls `name` as a task and returns the `CreateTaskResult`, checked against the schema.
fn start(relay: &mut Relay, schema: &Schema, name: &str, args: Value) -> Value {
    let params = json!({"name": name, "arguments": args, "task": {"ttl": 60000}});
    let answer = relay.request("tools/call", params);
    let Some(created) = answer.get("result").filter(|r| r.get("task").is_some()) else {
        relay.fail(&format!("not a task: {answer}"))
    };
    schema.check("CreateTaskResult", created);
    created.clone()
}

fn task_id(created: &Value) -> Value {
    created["task"]["taskId"].clone()
}

/// `tasks/get`, checked against the schema.
fn get(relay: &mut Relay, schema: &Schema, id: &Value) -> Value {
    let answer = relay.request("tasks/get", json!({"taskId": id}));
    let Some(task) = answer.get("result") else { relay.fail(&format!("tasks/get: {answer}")) };
    schema.check("GetTaskResult", task);
    task.clone()
}

/// Polls until the task leaves `working` (bounded).
fn wait_ended(relay: &mut Relay, schema: &Schema, id: &Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = get(relay, schema, id);
        if task["status"] != "working" {
            return task;
        }
        if Instant::now() > deadline {
            relay.fail(&format!("task {id} still working"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tasks/result`'s answer, its result checked against the schema.
fn result_of(relay: &mut Relay, schema: &Schema, id: &Value) -> Value {
    let answer = relay.request("tasks/result", json!({"taskId": id}));
    if let Some(result) = answer.get("result") {
        schema.check("GetTaskPayloadResult", result);
        schema.check("CallToolResult", result);
        assert_eq!(result["_meta"][RELATED_TASK], json!({"taskId": id}), "{answer}");
    }
    answer
}

/// A result without its `_meta`, to compare with the synchronous call's.
fn without_meta(result: &Value) -> Value {
    let mut result = result.clone();
    result.as_object_mut().unwrap().remove("_meta");
    result
}

fn hanging_gemini(fakes: &Fakes) -> Relay {
    let setup = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_HANG", "1")
        .env("FAKE_GRANDCHILD", "1");
    task_relay(setup)
}

#[test]
fn a_declaring_2025_11_25_client_is_told_of_tasks_and_sees_task_support_on_the_model_tools() {
    let schema = Schema::load("2025-11-25");
    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    let init = initialize(&mut relay, "2025-11-25", client_tasks());
    schema.check("InitializeResult", &init);
    assert_eq!(
        init["capabilities"],
        json!({"tools": {}, "prompts": {}, "logging": {}, "tasks": {"list": {}, "cancel": {},
            "requests": {"tools": {"call": {}}}}})
    );
    let list = relay.request("tools/list", json!({}))["result"].clone();
    schema.check("ListToolsResult", &list);
    let mut optional = Vec::new();
    for tool in list["tools"].as_array().unwrap() {
        if let Some(execution) = tool.get("execution") {
            assert_eq!(execution, &json!({"taskSupport": "optional"}), "{tool}");
            optional.push(tool["name"].as_str().unwrap().to_string());
        }
    }
    let model_tools = [
        "gemini-ask",
        "gemini-plan",
        "gemini-image",
        "gemini-brainstorm",
        "gemini-help",
        "gemini-timeout-test",
    ];
    assert_eq!(optional, model_tools);
}

#[test]
fn other_clients_get_todays_capabilities_and_tools_list_byte_for_byte() {
    let lists: Vec<(Value, String)> =
        [("2025-11-25", json!({})), ("2025-06-18", client_tasks()), ("2024-11-05", json!({}))]
            .into_iter()
            .map(|(version, capabilities)| {
                let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
                let init = initialize(&mut relay, version, capabilities);
                let list = relay.request("tools/list", json!({}))["result"].clone();
                (init["capabilities"].clone(), serde_json::to_string(&list).unwrap())
            })
            .collect();
    for (capabilities, list) in &lists {
        assert_eq!(capabilities, &json!({"tools": {}, "prompts": {}, "logging": {}}));
        assert!(!list.contains("execution") && !list.contains("taskSupport"), "{list}");
        assert_eq!(list, &lists[0].1);
    }
}

#[test]
fn a_task_is_created_at_once_and_tasks_result_waits_for_the_synchronous_result() {
    let schema = Schema::load("2025-11-25");
    let mut relay = task_relay(Setup::new());
    let started = Instant::now();
    let created = start(&mut relay, &schema, "gemini-timeout-test", json!({"duration": 1500}));
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    let task = &created["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["pollInterval"], 1000);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'), "{task}");
    // The relay keeps a task for the call's deadline plus ten minutes, whatever `ttl` asked.
    assert!(task["ttl"].as_u64().unwrap() > 45 * 60 * 1000, "{task}");
    let id = task_id(&created);
    assert_eq!(get(&mut relay, &schema, &id)["status"], "working");
    // tasks/result is held until the task ends.
    let answer = result_of(&mut relay, &schema, &id);
    assert!(started.elapsed() >= Duration::from_millis(1500), "{:?}", started.elapsed());
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let done = get(&mut relay, &schema, &id);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["statusMessage"], "✅ gemini-timeout-test completed successfully");
    // The same call made synchronously: the texts differ only in the measured times.
    let sync = relay.call("gemini-timeout-test", json!({"duration": 1500}));
    let lines = |v: &Value| v["content"][0]["text"].as_str().unwrap().lines().count();
    assert_eq!(lines(result), lines(&sync));
    assert_eq!(without_meta(result).as_object().unwrap().len(), sync.as_object().unwrap().len());
    // It can be read again, and no progress went out for it.
    assert_eq!(result_of(&mut relay, &schema, &id)["result"], *result);
    let stray = relay.drain(Duration::from_millis(200));
    assert!(stray.iter().all(|m| m["method"] != "notifications/progress"), "{stray:?}");
}

#[test]
fn a_failing_run_reads_failed_and_its_result_is_the_synchronous_error_result() {
    let schema = Schema::load("2025-11-25");
    let fakes = Fakes::new();
    let setup = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_EXIT", "3")
        .env("FAKE_STDERR", "boom")
        .env("FAKE_SLEEP", "0.5");
    let mut relay = task_relay(setup);
    let created = start(&mut relay, &schema, "gemini-ask", json!({"prompt": "hi"}));
    let id = task_id(&created);
    // The revision counts a tool result with isError as a failed task.
    let ended = wait_ended(&mut relay, &schema, &id);
    assert_eq!(ended["status"], "failed");
    assert_eq!(ended["statusMessage"], "❌ gemini-ask failed");
    let answer = result_of(&mut relay, &schema, &id);
    let sync = relay.call("gemini-ask", json!({"prompt": "hi"}));
    assert_eq!(without_meta(&answer["result"]), sync);
    assert_eq!(sync["isError"], true);
}

#[test]
fn a_result_too_large_to_keep_makes_tasks_result_answer_the_json_rpc_error() {
    let schema = Schema::load("2025-11-25");
    let fakes = Fakes::new();
    // Finished tasks keep at most the output cap in results; 40,000 quotes are 80,000 bytes of JSON.
    let setup = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("GEMINI_MCP_MAX_OUTPUT_BYTES", "65536")
        .env("FAKE_GEMINI_RESPONSE_FILE", fakes.file("reply", &"\"".repeat(40_000)));
    let mut relay = task_relay(setup);
    let created = start(&mut relay, &schema, "gemini-ask", json!({"prompt": "hi"}));
    let id = task_id(&created);
    let answer = result_of(&mut relay, &schema, &id);
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("65536 bytes"), "{answer}");
    assert_eq!(get(&mut relay, &schema, &id)["status"], "failed");
}

#[test]
fn tasks_cancel_kills_the_run_answers_the_cancelled_task_and_releases_waiting_results() {
    let schema = Schema::load("2025-11-25");
    let fakes = Fakes::new();
    let mut relay = hanging_gemini(&fakes);
    let created = start(&mut relay, &schema, "gemini-ask", json!({"prompt": "hi"}));
    let id = task_id(&created);
    wait_for_runs(&fakes, 1);
    // Two clients wait for the result; one of them gives up (notifications/cancelled).
    let waiting = relay.send_request("tasks/result", json!({"taskId": id}));
    let abandoned = relay.send_request("tasks/result", json!({"taskId": id}));
    relay.notify("notifications/cancelled", json!({"requestId": abandoned}));
    assert_eq!(get(&mut relay, &schema, &id)["status"], "working", "still served meanwhile");
    let cancel = relay.request("tasks/cancel", json!({"taskId": id}));
    let cancelled = &cancel["result"];
    schema.check("CancelTaskResult", cancelled);
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["taskId"], id);
    assert_eq!(cancelled["statusMessage"], "❌ gemini-ask cancelled");
    let left = fakes.leftovers(relay.pid(), Duration::from_secs(2));
    assert!(left.is_empty(), "left running: {left:?}");
    let released = relay.response(&waiting);
    let result = &released["result"];
    schema.check("CallToolResult", result);
    assert_eq!(
        result["content"][0]["text"],
        "Error executing gemini-ask: gemini-ask was cancelled"
    );
    assert_eq!(result["isError"], true);
    assert_eq!(result["_meta"][RELATED_TASK]["taskId"], id);
    let stray = relay.drain(Duration::from_millis(300));
    assert!(stray.iter().all(|m| m["id"] != abandoned), "answered after its cancel: {stray:?}");
    // It stays cancelled; a second cancel is refused as the revision says.
    let again = relay.request("tasks/cancel", json!({"taskId": id}));
    assert_eq!(again["error"]["code"], -32602);
    assert_eq!(
        again["error"]["message"],
        "Cannot cancel task: already in terminal status 'cancelled'"
    );
    assert_eq!(result_of(&mut relay, &schema, &id)["result"], *result);
    assert_eq!(get(&mut relay, &schema, &id)["status"], "cancelled");
}

#[test]
fn unknown_tasks_malformed_params_and_bad_cursors_are_invalid_params() {
    let schema = Schema::load("2025-11-25");
    let mut relay = task_relay(Setup::new());
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let unknown = relay.request(method, json!({"taskId": "0123"}));
        assert_eq!(unknown["error"]["code"], -32602, "{method}: {unknown}");
        assert_eq!(unknown["error"]["message"], "Unknown task: 0123");
        let missing = relay.request(method, json!({}));
        assert_eq!(missing["error"]["code"], -32602, "{method}: {missing}");
        assert_eq!(
            missing["error"]["message"],
            format!("Invalid params: {method} needs a string \"taskId\"")
        );
    }
    for cursor in [json!("nope"), json!("999999"), json!(12), json!("-1")] {
        let bad = relay.request("tasks/list", json!({"cursor": cursor}));
        assert_eq!(bad["error"]["code"], -32602, "{cursor}: {bad}");
    }
    for (task, message) in [
        (json!(5), "Invalid params: \"task\" must be an object"),
        (
            json!({"ttl": "soon"}),
            "Invalid params: \"task.ttl\" must be a whole number of milliseconds",
        ),
        (json!({"ttl": -1}), "Invalid params: \"task.ttl\" must be a whole number of milliseconds"),
    ] {
        let params =
            json!({"name": "gemini-timeout-test", "arguments": {"duration": 10}, "task": task});
        let bad = relay.request("tools/call", params);
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        assert_eq!(bad["error"]["message"], message);
    }
    // The relay still serves: an empty list is a valid one.
    let list = relay.request("tasks/list", json!({}))["result"].clone();
    schema.check("ListTasksResult", &list);
    assert_eq!(list, json!({"tasks": []}));
}

#[test]
fn a_cheap_tool_refuses_a_task_and_refused_arguments_make_an_ended_task() {
    let schema = Schema::load("2025-11-25");
    let mut relay = task_relay(Setup::new());
    let ping =
        relay.request("tools/call", json!({"name": "gemini-ping", "arguments": {}, "task": {}}));
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
    assert_eq!(ping["error"]["message"], "Method not found: gemini-ping cannot run as a task");
    let unknown = relay.request("tools/call", json!({"name": "nope", "task": {}}));
    assert_eq!(unknown["error"]["message"], "Unknown tool: nope");
    // Arguments the tool refuses: the task has ended with the synchronous call's result.
    let created = start(&mut relay, &schema, "gemini-timeout-test", json!({}));
    let id = task_id(&created);
    assert_eq!(get(&mut relay, &schema, &id)["status"], "failed");
    let answer = result_of(&mut relay, &schema, &id);
    let sync = relay.call("gemini-timeout-test", json!({}));
    assert_eq!(sync["isError"], true);
    assert_eq!(without_meta(&answer["result"]), sync);
    // The same tool without `task` answers synchronously, as ever.
    let plain = relay.call("gemini-timeout-test", json!({"duration": 10}));
    assert_eq!(plain["isError"], false, "{plain}");
}

#[test]
fn tasks_list_pages_through_every_task_oldest_first() {
    let schema = Schema::load("2025-11-25");
    let mut relay = task_relay(Setup::new());
    let created: Vec<Value> = (0..40)
        .map(|_| {
            let params = json!({"name": "gemini-help", "arguments": {}, "task": {}});
            relay.send_request("tools/call", params)
        })
        .collect::<Vec<_>>()
        .iter()
        .map(|request| relay.response(request)["result"]["task"]["taskId"].clone())
        .collect();
    assert!(created.iter().all(Value::is_string), "{created:?}");
    let mut listed = Vec::new();
    let mut pages = 0;
    let mut params = json!({});
    loop {
        let answer = relay.request("tasks/list", params.clone());
        let page = &answer["result"];
        schema.check("ListTasksResult", page);
        pages += 1;
        listed.extend(page["tasks"].as_array().unwrap().iter().map(|t| t["taskId"].clone()));
        match page.get("nextCursor") {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => break,
        }
        assert!(pages < 10, "{answer}");
    }
    assert_eq!(pages, 2);
    assert_eq!(listed, created);
}

#[test]
fn without_the_declaration_task_requests_are_served_as_before() {
    for (version, capabilities) in [("2025-11-25", json!({})), ("2025-06-18", client_tasks())] {
        let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
        initialize(&mut relay, version, capabilities);
        // `task` is ignored: the call is answered synchronously.
        let params =
            json!({"name": "gemini-timeout-test", "arguments": {"duration": 10}, "task": {}});
        let answer = relay.request("tools/call", params);
        assert_eq!(answer["result"]["isError"], false, "{version}: {answer}");
        assert!(answer["result"].get("task").is_none(), "{version}: {answer}");
        for method in ["tasks/result", "tasks/list"] {
            let refused = relay.request(method, json!({"taskId": "0123"}));
            assert_eq!(refused["error"]["code"], -32601, "{version} {method}: {refused}");
        }
        // The extension's methods keep their answer to a request that does not declare it.
        for method in ["tasks/get", "tasks/cancel"] {
            let refused = relay.request(method, json!({"taskId": "0123"}));
            assert_eq!(refused["error"]["code"], -32021, "{version} {method}: {refused}");
        }
    }
}

#[test]
fn the_extension_still_answers_modern_requests_on_a_2025_11_25_task_connection() {
    let mut relay = task_relay(Setup::new());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let params = json!({"name": "gemini-timeout-test", "arguments": {"duration": 10},
        "_meta": meta});
    let created = relay.request("tools/call", params)["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    // One registry: the 2025-11-25 form reads the extension's task too.
    let schema = Schema::load("2025-11-25");
    let ended = wait_ended(&mut relay, &schema, &created["taskId"]);
    assert_eq!(ended["status"], "completed");
    let modern = relay.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    let list = serde_json::to_string(&modern["result"]).unwrap();
    assert!(!list.contains("taskSupport"), "{list}");
}

#[test]
fn the_task_answer_goes_out_at_once_with_every_worker_busy() {
    let schema = Schema::load("2025-11-25");
    let mut relay = task_relay(Setup::new());
    let busy: Vec<Value> = (0..64)
        .map(|_| {
            let params =
                json!({"name": "gemini-timeout-test", "arguments": {"duration": 5000}, "task": {}});
            relay.send_request("tools/call", params)
        })
        .collect();
    for request in &busy {
        assert!(relay.response(request)["result"]["task"].is_object());
    }
    let started = Instant::now();
    let created = start(&mut relay, &schema, "gemini-timeout-test", json!({"duration": 10}));
    let waited = started.elapsed();
    assert!(waited < crate::util::slack(Duration::from_millis(50)), "answered in {waited:?}");
    // Registered before its answer, and waiting for a worker meanwhile.
    assert_eq!(get(&mut relay, &schema, &task_id(&created))["status"], "working");
}

#[test]
fn a_waiting_tasks_result_holds_its_batch_until_the_task_ends() {
    let schema = Schema::load("2025-11-25");
    let mut relay = task_relay(Setup::new());
    let created = start(&mut relay, &schema, "gemini-timeout-test", json!({"duration": 1000}));
    let id = task_id(&created);
    relay.send(&json!([
        {"jsonrpc": "2.0", "id": "r", "method": "tasks/result", "params": {"taskId": id}},
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
    ]));
    let batch = relay.recv_matching("the batch", Value::is_array);
    let answers = batch.as_array().unwrap();
    assert_eq!(answers.len(), 2, "{batch}");
    let result = answers.iter().find(|a| a["id"] == "r").unwrap();
    schema.check("CallToolResult", &result["result"]);
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(result["result"]["_meta"][RELATED_TASK]["taskId"], id);
    assert_eq!(get(&mut relay, &schema, &id)["status"], "completed");
}
