//! Transport, JSON-RPC strictness and the MCP lifecycle of both protocol eras, against the real binary.

#[cfg(unix)]
use std::io::Write;
use std::path::Path;
#[cfg(unix)]
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, Relay, Setup};

const MODERN: &str = "io.modelcontextprotocol/protocolVersion";

fn modern_meta() -> Value {
    json!({"_meta": {MODERN: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}})
}

#[test]
fn initialize_echoes_every_supported_version() {
    let mut relay = Relay::start();
    for version in ["2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let r =
            relay.request("initialize", json!({"protocolVersion": version, "capabilities": {}}));
        assert_eq!(
            r["result"],
            json!({
                "protocolVersion": version,
                "capabilities": {"tools": {}, "prompts": {}, "logging": {}},
                "serverInfo": {"name": "gemini-relay", "version": "1.2.0"}
            })
        );
    }
}

#[test]
fn initialize_answers_unknown_and_modern_versions_with_2025_11_25() {
    let mut relay = Relay::start();
    for version in ["1999-01-01", "2026-07-28"] {
        let r = relay.request("initialize", json!({"protocolVersion": version}));
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "asked {version}");
    }
}

#[test]
fn initialize_result_bytes_match_the_sdk() {
    let mut relay = Relay::start();
    relay.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\"}}\n");
    let r = relay.recv();
    assert_eq!(
        r.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{},"prompts":{},"logging":{}},"serverInfo":{"name":"gemini-relay","version":"1.2.0"}}}"#
    );
}

#[test]
fn ping_in_both_eras() {
    let mut relay = Relay::start();
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    let modern = relay.request("ping", modern_meta());
    assert_eq!(modern["result"]["resultType"], "complete");
    assert_eq!(
        modern["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gemini-relay"
    );
}

#[test]
fn server_discover_before_initialize() {
    let mut relay = Relay::start();
    let r = relay.request("server/discover", modern_meta());
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"])
    );
    assert_eq!(
        result["capabilities"],
        json!({"tools": {}, "prompts": {}, "logging": {},
               "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "gemini-relay", "version": "1.2.0"})
    );
}

#[test]
fn modern_lists_carry_the_envelope_and_cache_hints() {
    let mut relay = Relay::start();
    for method in ["tools/list", "prompts/list"] {
        let result = relay.request(method, modern_meta())["result"].clone();
        assert_eq!(result["resultType"], "complete", "{method}");
        assert_eq!(result["cacheScope"], "public", "{method}");
        assert!(result["ttlMs"].is_u64(), "{method}");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], "1.2.0");
    }
    let legacy = relay.request("tools/list", json!({}))["result"].clone();
    assert!(legacy.get("resultType").is_none() && legacy.get("ttlMs").is_none());
}

#[test]
fn modern_tool_call_is_stateless_and_enveloped() {
    let mut relay = Relay::start();
    let mut params = modern_meta();
    params["name"] = json!("gemini-ping");
    params["arguments"] = json!({"prompt": "modern"});
    let r = relay.request("tools/call", params);
    assert_eq!(r["result"]["content"][0]["text"], "modern");
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["isError"], false);
}

#[test]
fn unsupported_modern_version_is_minus_32022() {
    let mut relay = Relay::start();
    let r = relay.request("tools/list", json!({"_meta": {MODERN: "2099-01-01"}}));
    assert_eq!(r["error"]["code"], -32022);
    assert_eq!(r["error"]["message"], "Unsupported protocol version");
    assert_eq!(r["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(r["error"]["data"]["supported"][0], "2026-07-28");
}

#[test]
fn subscriptions_listen_is_acknowledged_held_open_and_closed_at_shutdown() {
    let mut relay = Relay::start();
    let mut params = modern_meta();
    params["notifications"] = json!({"toolsListChanged": true, "resourcesListChanged": true});
    let id = relay.send_request("subscriptions/listen", params);
    let ack =
        relay.recv_matching("ack", |v| v["method"] == "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"],
        json!({"notifications": {"toolsListChanged": true}, "_meta": {"io.modelcontextprotocol/subscriptionId": id}})
    );
    // Held open: the next request is answered, the subscription is not.
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    assert!(relay.drain(Duration::from_millis(100)).is_empty());
    relay.close_stdin();
    let closed = relay.response(&id);
    assert_eq!(closed["result"]["resultType"], "complete");
    assert_eq!(closed["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id);
}

#[test]
fn cancelled_subscription_gets_no_answer() {
    let mut relay = Relay::start();
    let id = relay.send_request("subscriptions/listen", {
        let mut p = modern_meta();
        p["notifications"] = json!({});
        p
    });
    relay.recv_matching("ack", |v| v["method"] == "notifications/subscriptions/acknowledged");
    relay.notify("notifications/cancelled", json!({"requestId": id}));
    relay.close_stdin();
    assert!(relay.wait_exit(Duration::from_secs(5)).is_some());
    assert!(relay.drain(Duration::from_millis(50)).is_empty());
}

#[test]
fn parse_error_keeps_serving() {
    let mut relay = Relay::start();
    relay.send_raw(b"this is not json\n");
    assert_eq!(
        relay.recv(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
    );
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let mut relay = Relay::start();
    relay.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}\n",
    );
    assert_eq!(relay.recv()["error"]["code"], -32700);
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn blank_lines_are_ignored() {
    let mut relay = Relay::start();
    relay.send_raw(b"\n   \n\r\n");
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    assert!(relay.drain(Duration::from_millis(50)).is_empty());
}

#[test]
fn invalid_requests() {
    let mut relay = Relay::start();
    let cases = [
        (r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#, json!(5)),
        (r#"{"jsonrpc":"2.0","id":"s","method":7}"#, json!("s")),
        (r#"{"jsonrpc":"2.0","id":6}"#, json!(6)),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Value::Null),
        (r#""just a string""#, Value::Null),
        ("[]", Value::Null),
    ];
    for (line, id) in cases {
        relay.send_raw(format!("{line}\n").as_bytes());
        let r = relay.recv();
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "Invalid Request"}}),
            "for {line}"
        );
    }
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn ids_are_echoed_with_their_exact_type() {
    let mut relay = Relay::start();
    for id in [json!(0), json!("0"), json!(-7), json!(""), json!(9007199254740993u64), json!("a b")]
    {
        relay.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let r = relay.recv();
        assert_eq!(r["id"], id);
        assert_eq!(r["result"], json!({}));
    }
}

#[test]
fn unknown_method_and_notifications() {
    let mut relay = Relay::start();
    let r = relay.request("completion/complete", json!({}));
    assert_eq!(r["error"], json!({"code": -32601, "message": "Method not found"}));
    relay.notify("notifications/initialized", json!({}));
    relay.notify("some/unknown/notification", json!({}));
    relay.notify("notifications/cancelled", json!({"requestId": 12345}));
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    assert!(relay.drain(Duration::from_millis(100)).is_empty(), "notifications are never answered");
}

#[test]
fn batches_collect_responses_and_skip_notifications() {
    let mut relay = Relay::start();
    relay.send(&json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini-ping", "arguments": {"prompt": "in a batch"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        42
    ]));
    let r = relay.recv();
    let items = r.as_array().expect("one array of responses");
    assert_eq!(items.len(), 4);
    let by_id = |id: Value| items.iter().find(|v| v["id"] == id).cloned().unwrap();
    assert_eq!(by_id(json!(1))["result"], json!({}));
    assert_eq!(by_id(json!(2))["result"]["content"][0]["text"], "in a batch");
    assert_eq!(by_id(json!(3))["error"]["code"], -32601);
    assert_eq!(by_id(Value::Null)["error"]["code"], -32600);
}

#[test]
fn batch_of_notifications_gets_no_answer() {
    let mut relay = Relay::start();
    relay.send(&json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]));
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    assert!(relay.drain(Duration::from_millis(50)).is_empty());
}

#[test]
fn oversized_line_is_answered_and_skipped() {
    let mut relay = Setup::new().env("GEMINI_MCP_MAX_MESSAGE_BYTES", "1000").spawn();
    let pad = "x".repeat(5000);
    relay.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"pad": pad}}}),
    );
    assert_eq!(
        relay.recv(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Message too large"}})
    );
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn a_large_line_under_the_cap_is_served() {
    let mut relay = Relay::start();
    let pad = "y".repeat(8 * 1024 * 1024);
    let r =
        relay.request("tools/call", json!({"name": "gemini-ping", "arguments": {"prompt": pad}}));
    assert_eq!(r["result"]["content"][0]["text"].as_str().unwrap().len(), 8 * 1024 * 1024);
}

#[test]
fn resources_are_empty_lists() {
    let mut relay = Relay::start();
    assert_eq!(relay.request("resources/list", json!({}))["result"], json!({"resources": []}));
    assert_eq!(
        relay.request("resources/templates/list", json!({}))["result"],
        json!({"resourceTemplates": []})
    );
}

#[test]
fn logging_set_level() {
    let mut relay = Relay::start();
    assert_eq!(relay.request("logging/setLevel", json!({"level": "warning"}))["result"], json!({}));
    assert_eq!(
        relay.request("logging/setLevel", json!({"level": "loud"}))["error"]["code"],
        -32602
    );
}

#[test]
fn params_meta_is_tolerated_everywhere() {
    let mut relay = Relay::start();
    let meta = json!({"_meta": {"progressToken": 5}});
    for method in ["tools/list", "prompts/list", "ping", "resources/list"] {
        assert!(relay.request(method, meta.clone()).get("result").is_some(), "{method}");
    }
}

#[test]
fn tools_list_names_in_order_and_test_tool_gating() {
    let names = |relay: &mut Relay| -> Vec<String> {
        relay.request("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let base = [
        "gemini-ask",
        "gemini-plan",
        "gemini-image",
        "gemini-models",
        "gemini-doctor",
        "gemini-brainstorm",
        "gemini-fetch-chunk",
        "gemini-conversations",
        "gemini-cancel",
        "gemini-ping",
        "gemini-help",
    ];
    let mut relay = Relay::start();
    assert_eq!(names(&mut relay), base);
    let r = relay.request(
        "tools/call",
        json!({"name": "gemini-timeout-test", "arguments": {"duration": 10}}),
    );
    assert_eq!(r["error"], json!({"code": -32602, "message": "Unknown tool: gemini-timeout-test"}));

    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "0").spawn();
    let mut with_test = base.to_vec();
    with_test.push("gemini-timeout-test");
    assert_eq!(names(&mut relay), with_test);
}

#[test]
fn tool_entries_have_name_description_schema_and_annotations() {
    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    let tools = relay.request("tools/list", json!({}))["result"]["tools"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 12);
    for tool in tools.as_array().unwrap() {
        let keys: Vec<&String> =
            tool.as_object().unwrap().keys().filter(|k| *k != "_meta").collect();
        assert_eq!(keys, ["name", "description", "inputSchema", "annotations"]);
        let schema = tool["inputSchema"].as_object().unwrap();
        assert_eq!(schema.keys().collect::<Vec<_>>(), ["type", "properties", "required"]);
        for (name, property) in schema["properties"].as_object().unwrap() {
            assert!(property["description"].is_string(), "{}.{name}", tool["name"]);
        }
    }
}

#[test]
fn every_tool_has_all_four_hints_and_long_answers_declare_their_size() {
    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    let tools = relay.request("tools/list", json!({}))["result"]["tools"].clone();
    let mut long = Vec::new();
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let annotations = tool["annotations"].as_object().unwrap();
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
            assert!(annotations[hint].is_boolean(), "{name}: {hint}");
        }
        // A read-only tool is never destructive.
        if annotations["readOnlyHint"] == true {
            assert_eq!(annotations["destructiveHint"], false, "{name}");
        }
        if let Some(meta) = tool.get("_meta") {
            assert_eq!(meta, &json!({"anthropic/maxResultSizeChars": 500_000}), "{name}");
            long.push(name.to_string());
        }
    }
    assert_eq!(long, ["gemini-ask", "gemini-plan", "gemini-image", "gemini-brainstorm"]);
    // A modern-era list carries the same entries.
    let modern = relay.request("tools/list", modern_meta());
    assert_eq!(modern["result"]["tools"], tools);
}

#[test]
fn unknown_tool_and_malformed_calls_are_json_rpc_errors() {
    let mut relay = Relay::start();
    let r = relay.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(r["error"], json!({"code": -32602, "message": "Unknown tool: nope"}));
    let r = relay.request("tools/call", json!({"arguments": {}}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("name"));
    let r = relay.request("tools/call", json!({"name": "gemini-ping", "arguments": [1]}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("arguments"));
}

#[test]
fn validation_errors_are_tool_results() {
    let mut relay = Relay::start();
    let result = relay.call("gemini-ask", json!({}));
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "Error executing gemini-ask: Invalid arguments for gemini-ask: prompt: Required"}], "isError": true})
    );
    let (text, is_error) = relay.call_text("gemini-conversations", json!({"limit": 101}));
    assert!(is_error);
    assert_eq!(
        text,
        "Error executing gemini-conversations: Invalid arguments for gemini-conversations: limit: Number must be less than or equal to 100"
    );
}

#[test]
fn ping_tool_echoes_or_pongs() {
    let mut relay = Relay::start();
    assert_eq!(
        relay.call_text("gemini-ping", json!({"prompt": "hello & world"})),
        ("hello & world".into(), false)
    );
    assert_eq!(relay.call_text("gemini-ping", json!({})), ("Pong!".into(), false));
    assert_eq!(
        relay.call_text("gemini-ping", json!({"message": "dropped"})),
        ("Pong!".into(), false)
    );
}

#[test]
fn cancel_with_nothing_running() {
    let mut relay = Relay::start();
    assert_eq!(relay.call_text("gemini-cancel", json!({})), ("Nothing was running.".into(), false));
}

#[test]
fn prompts_list_and_get() {
    let mut relay = Relay::start();
    let prompts = relay.request("prompts/list", json!({}))["result"]["prompts"].clone();
    assert_eq!(prompts[0]["name"], "gemini-ask");
    assert_eq!(prompts.as_array().unwrap().len(), 11);
    let fetch =
        prompts.as_array().unwrap().iter().find(|p| p["name"] == "gemini-fetch-chunk").unwrap();
    assert_eq!(
        fetch["arguments"],
        json!([{"name": "prompt", "description": "gemini-fetch-chunk cacheKey=<key> chunkIndex=<number>", "required": true}])
    );
    let r = relay.request(
        "prompts/get",
        json!({"name": "gemini-ask", "arguments": {"prompt": "Explain @src/index.ts", "model": "pro", "changeMode": true}}),
    );
    assert_eq!(
        r["result"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Use the gemini-ask tool: Explain @src/index.ts (model: pro) [changeMode]"}}]})
    );
    let r = relay.request("prompts/get", json!({"name": "nope"}));
    assert_eq!(r["error"], json!({"code": -32602, "message": "Unknown prompt: nope"}));
}

#[test]
fn progress_start_and_final_come_before_the_response() {
    let mut relay = Relay::start();
    for token in [json!("tok"), json!(0), json!(""), json!(17)] {
        relay.send(&json!({"jsonrpc": "2.0", "id": "p", "method": "tools/call",
            "params": {"name": "gemini-ping", "arguments": {}, "_meta": {"progressToken": token}}}));
        let first = relay.recv();
        assert_eq!(
            first["params"],
            json!({"progressToken": token, "progress": 0, "message": "🔍 Starting gemini-ping"})
        );
        let second = relay.recv();
        assert_eq!(
            second["params"],
            json!({"progressToken": token, "progress": 100, "total": 100, "message": "✅ gemini-ping completed successfully"})
        );
        assert_eq!(relay.recv()["id"], "p");
    }
}

#[test]
fn failed_call_ends_with_the_failure_progress() {
    let mut relay = Relay::start();
    relay.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "gemini-ask", "arguments": {}, "_meta": {"progressToken": "f"}}}));
    relay.response(&json!(1));
    let progress = relay.take_progress(&json!("f"));
    assert_eq!(progress.last().unwrap()["message"], "❌ gemini-ask failed");
}

#[test]
fn keepalives_tick_with_rising_progress_and_a_preview() {
    let mut relay = Setup::new()
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "50")
        .spawn();
    relay.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "gemini-timeout-test", "arguments": {"duration": 600}, "_meta": {"progressToken": "k"}}}));
    let response = relay.response(&json!(1));
    assert!(
        response["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Timeout test completed successfully!")
    );
    let progress = relay.take_progress(&json!("k"));
    assert!(progress.len() >= 5, "start, several ticks, final: {progress:?}");
    let values: Vec<f64> = progress.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "strictly increasing: {values:?}");
    assert_eq!(
        progress[1]["message"],
        "🧠 gemini-timeout-test - Gemini is analyzing your request..."
    );
    assert_eq!(progress.last().unwrap()["total"], 100);
    assert!(relay.drain(Duration::from_millis(150)).is_empty(), "nothing after the response");
}

#[test]
fn ping_is_answered_while_64_calls_are_in_flight() {
    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    for i in 0..64 {
        relay.send(&json!({"jsonrpc": "2.0", "id": format!("slow-{i}"), "method": "tools/call",
            "params": {"name": "gemini-timeout-test", "arguments": {"duration": 3000}}}));
    }
    let start = Instant::now();
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    let ping = start.elapsed();
    let start = Instant::now();
    assert_eq!(relay.call_text("gemini-ping", json!({})).0, "Pong!");
    let tool = start.elapsed();
    // Starting 64 threads under emulation takes a good part of a second.
    let limit = util::slack(Duration::from_millis(100));
    assert!(ping < limit, "ping took {ping:?}");
    assert!(tool < limit, "gemini-ping took {tool:?}");
}

#[test]
fn cancelled_request_gets_no_response_and_no_more_progress() {
    let mut relay = Setup::new()
        .env("GEMINI_MCP_TEST_TOOLS", "1")
        .env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "20")
        .spawn();
    relay.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "gemini-timeout-test", "arguments": {"duration": 800}, "_meta": {"progressToken": "c"}}}));
    relay.recv_matching("start", |v| v["params"]["message"] == "🔍 Starting gemini-timeout-test");
    relay.notify("notifications/cancelled", json!({"requestId": 9, "reason": "user"}));
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    let _ = relay.take_progress(&json!("c"));
    let later = relay.drain(Duration::from_millis(1200));
    assert!(later.is_empty(), "nothing for the cancelled call: {later:?}");
}

#[test]
fn stdin_eof_exits_zero_promptly() {
    let mut relay = Relay::start();
    relay.initialize();
    let start = Instant::now();
    relay.close_stdin();
    let status = relay.wait_exit(Duration::from_secs(5)).expect("exits");
    assert!(status.success());
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
}

#[cfg(unix)]
#[test]
fn sigterm_and_sigint_exit_promptly_without_closing_stdin() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let mut relay = Relay::start();
        relay.initialize();
        let start = Instant::now();
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(relay.pid() as i32, signal) };
        let status = relay.wait_exit(Duration::from_secs(5)).expect("exits");
        assert!(status.success(), "signal {signal}: {status:?}");
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}

#[test]
fn logs_carry_shapes_never_argument_text() {
    let mut relay = Relay::start();
    relay.call_text("gemini-ping", json!({"prompt": "SECRET-🙂", "n": 3, "flag": true}));
    relay.close_stdin();
    relay.wait_exit(Duration::from_secs(5));
    let stderr = relay.stderr();
    assert!(
        stderr.contains("[GMCPT] Tool gemini-ping(prompt=<9 chars> n=3 flag=true)"),
        "{stderr}"
    );
    assert!(!stderr.contains("SECRET"), "{stderr}");
    assert!(
        stderr.lines().filter(|l| !l.is_empty()).all(|l| l.starts_with("[GMCPT] ")),
        "{stderr}"
    );
}

fn relay_cli(args: &[&str]) -> std::process::Output {
    util::relay_command().args(args).output().unwrap()
}

#[test]
fn command_line_version_help_and_unknown_arguments() {
    let out = relay_cli(&["--version"]);
    assert!(out.status.success());
    let version = String::from_utf8_lossy(&out.stdout);
    // `gemini-relay <version> (<target>[, <commit>])`: scripts split the first two words.
    assert_eq!(version.split_whitespace().take(2).collect::<Vec<_>>(), ["gemini-relay", "1.2.0"]);
    let detail = version
        .strip_prefix("gemini-relay 1.2.0 (")
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("unexpected --version line: {version:?}"));
    let (target, commit) = detail.split_once(", ").unwrap_or((detail, ""));
    assert!(
        ["-linux-", "-apple-", "-windows-"].iter().any(|os| target.contains(os)),
        "target {target:?}"
    );
    assert!(commit.len() <= 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()), "{commit:?}");

    let out = relay_cli(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for var in [
        "GEMINI_MCP_BACKEND",
        "AGY_CLI_PATH",
        "GEMINI_MCP_TIMEOUT",
        "AGY_PRINT_TIMEOUT",
        "AGY_MCP_PTY",
        "GEMINI_MCP_TEST_TOOLS",
        "GEMINI_MCP_PROGRESS_INTERVAL_MS",
        "GEMINI_MCP_MAX_MESSAGE_BYTES",
        "GEMINI_MCP_MAX_OUTPUT_BYTES",
        "RUST_LOG",
        "GEMINI_MCP_MODEL",
        "GEMINI_MCP_FALLBACK_MODEL",
        "GEMINI_CLI_PATH",
    ] {
        assert!(help.contains(&format!("\n    {var}  (default: ")), "--help lacks {var}");
    }
    assert!(help.contains("(default: 45)\n        Deadline of each CLI run."), "{help}");

    let out = relay_cli(&["--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--frobnicate"));
}

/// Arguments that are not UTF-8: an unknown one is a one-line error, and the program's own path is
/// never looked at.
#[cfg(unix)]
#[test]
fn arguments_that_are_not_utf8_are_one_line_errors_and_the_binary_path_never_matters() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let out = util::relay_command().arg(OsStr::from_bytes(b"\xff")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "gemini-relay: unknown argument '\\xFF' (try --help)\n"
    );
    let out =
        util::relay_command().arg("config").arg(OsStr::from_bytes(b"co\xffdex")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("gemini-relay: unknown host 'co\\xFFdex' (known hosts: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // Installed under a directory whose name is not UTF-8, it still serves.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(OsStr::from_bytes(format!("bad-{}-\u{1}", std::process::id()).as_bytes()))
        .join(OsStr::from_bytes(b"\xff"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("gemini-relay");
    std::fs::copy(util::relay_bin(), &binary).unwrap();
    let mut relay = util::relay_command_for(&binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    relay.stdin.take().unwrap().write_all(format!("{initialize}\n").as_bytes()).unwrap();
    let out = relay.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let answer: Value =
        serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "gemini-relay", "{answer}");
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn warnings_reach_the_client_only_after_set_level() {
    let mut relay =
        Setup::new().env("GEMINI_MCP_BACKEND", "bogus").env("PATH", "/nonexistent").spawn();
    relay.call_text("gemini-help", json!({}));
    assert!(
        relay.drain(Duration::from_millis(100)).is_empty(),
        "no notifications/message by default"
    );
    assert!(
        relay
            .stderr()
            .contains("[GMCPT] Unknown GEMINI_MCP_BACKEND=\"bogus\", falling back to gemini.")
    );

    relay.request("logging/setLevel", json!({"level": "warning"}));
    relay.call_text("gemini-help", json!({}));
    let message = relay.recv_matching("log message", |v| v["method"] == "notifications/message");
    assert_eq!(message["params"]["level"], "warning");
    assert_eq!(
        message["params"]["data"],
        "Unknown GEMINI_MCP_BACKEND=\"bogus\", falling back to gemini."
    );

    relay.request("logging/setLevel", json!({"level": "error"}));
    relay.call_text("gemini-help", json!({}));
    let rest = relay.drain(Duration::from_millis(100));
    assert!(
        rest.iter().all(|v| v["params"]["level"] != "warning"),
        "warnings are below error: {rest:?}"
    );
}

#[test]
fn a_modern_request_opts_into_log_messages_for_itself() {
    let mut relay =
        Setup::new().env("GEMINI_MCP_BACKEND", "bogus").env("PATH", "/nonexistent").spawn();
    let mut params = modern_meta();
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    params["name"] = json!("gemini-help");
    params["arguments"] = json!({});
    let id = relay.send_request("tools/call", params);
    let message = relay.recv_matching("log message", |v| v["method"] == "notifications/message");
    assert_eq!(message["params"]["level"], "warning");
    relay.response(&id);
    let more = relay.drain(Duration::from_millis(100));
    assert!(more.iter().all(|v| v["method"] == "notifications/message"), "{more:?}");
    relay.call_text("gemini-help", json!({}));
    assert!(relay.drain(Duration::from_millis(100)).is_empty(), "only for the request that asked");
}

/// Starts a relay with `setup`, checks that it answers a ping, stops it and returns its stderr.
fn stderr_after_a_ping(setup: Setup) -> String {
    let mut relay = setup.spawn();
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
    relay.close_stdin();
    relay.wait_exit(Duration::from_secs(5));
    relay.stderr()
}

/// Settings that are not UTF-8: a number or a name is invalid and says so in one line like any
/// invalid value; the relay keeps serving.
#[cfg(unix)]
#[test]
fn settings_that_are_not_utf8_warn_like_invalid_ones() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let setup = Setup::new()
        .env_os("GEMINI_MCP_TIMEOUT", OsStr::from_bytes(b"1\xff"))
        .env_os("GEMINI_MCP_MODEL", OsStr::from_bytes(b"pro\xe9"));
    let stderr = stderr_after_a_ping(setup);
    assert!(
        stderr.contains(
            "GEMINI_MCP_TIMEOUT=\"1\u{fffd}\" is not a positive number of minutes; using 45"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("GEMINI_MCP_MODEL=\"pro\u{fffd}\" is not UTF-8; ignoring it"),
        "{stderr}"
    );
}

#[test]
fn invalid_numeric_settings_warn_and_fall_back() {
    let stderr = stderr_after_a_ping(
        Setup::new().env("GEMINI_MCP_TIMEOUT", "soon").env("GEMINI_MCP_PROGRESS_INTERVAL_MS", "-5"),
    );
    assert!(
        stderr
            .contains("GEMINI_MCP_TIMEOUT=\"soon\" is not a positive number of minutes; using 45"),
        "{stderr}"
    );
    assert!(
        stderr.contains("GEMINI_MCP_PROGRESS_INTERVAL_MS=\"-5\" is not a positive integer"),
        "{stderr}"
    );
}

#[test]
fn huge_byte_limits_are_clamped_and_the_relay_still_serves() {
    let stderr = stderr_after_a_ping(
        Setup::new()
            .env("GEMINI_MCP_MAX_MESSAGE_BYTES", "18446744073709551615")
            .env("GEMINI_MCP_MAX_OUTPUT_BYTES", "12"),
    );
    assert!(
        stderr.contains(
            "GEMINI_MCP_MAX_MESSAGE_BYTES=\"18446744073709551615\" is out of range (1024 to 1073741824); using 1073741824"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("GEMINI_MCP_MAX_OUTPUT_BYTES=\"12\" is out of range"), "{stderr}");
}

#[test]
fn malformed_prompts_get_params_are_json_rpc_errors() {
    let mut relay = Relay::start();
    let r = relay.request("prompts/get", json!({"arguments": {}}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("name"));
    let r = relay.request("prompts/get", json!({"name": "gemini-ask", "arguments": "prompt"}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("arguments"));
    assert_eq!(relay.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn secrets_in_arguments_never_reach_the_logs() {
    let fakes = crate::util::Fakes::new();
    let mut relay = fakes.setup().env("FAKE_AGY_STRICT", "0").spawn();
    relay.request("logging/setLevel", json!({"level": "debug"}));
    let (text, _) =
        relay.call_text("gemini-ask", json!({"prompt": "p", "effort": "sk-live-SECRET1"}));
    assert!(text.contains("received 'sk-live-SECRET1'"), "the client keeps zod's text: {text}");
    relay.call_text(
        "gemini-ask",
        json!({"prompt": "p", "model": "--sk-abc=SECRET2", "agent": "--SECRET3",
               "conversationId": "--SECRET4", "jsonSchema": "--SECRET5", "addDirs": ["/SECRET6"]}),
    );
    relay.call_text("gemini-brainstorm", json!({"prompt": "p", "domain": "SECRET7"}));
    relay.call_text("gemini-ping", json!({"a\n[GMCPT] Fatal error: forged": 1}));
    let notifications = relay.drain(Duration::from_millis(200));
    relay.close_stdin();
    relay.wait_exit(Duration::from_secs(5));
    let stderr = relay.stderr();
    for n in 1..=7 {
        assert!(!stderr.contains(&format!("SECRET{n}")), "SECRET{n} logged:\n{stderr}");
    }
    let sent = serde_json::to_string(&notifications).unwrap();
    assert!(!sent.contains("SECRET"), "a secret went out as notifications/message: {sent}");
    assert!(stderr.contains("received <15 chars>"), "{stderr}");
    assert!(stderr.contains("--model <16 chars>"), "{stderr}");
    assert!(
        !stderr.lines().any(|line| line.starts_with("[GMCPT] Fatal error: forged")),
        "{stderr}"
    );
    assert!(stderr.lines().all(|line| line.is_empty() || line.starts_with("[GMCPT] ")), "{stderr}");
}

#[test]
fn every_line_of_a_clis_multi_line_stderr_is_prefixed() {
    let fakes = crate::util::Fakes::new();
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_EXIT", "1")
        .env("FAKE_STDERR", "first line\nsecond line\n[GMCPT] Fatal error: forged\n")
        .spawn();
    let (text, is_error) = relay.call_text("gemini-ask", json!({"prompt": "p"}));
    assert!(is_error && text.contains("second line"), "{text}");
    relay.close_stdin();
    relay.wait_exit(Duration::from_secs(5));
    let stderr = relay.stderr();
    assert!(stderr.contains("[GMCPT] second line"), "{stderr}");
    assert!(stderr.lines().all(|line| line.is_empty() || line.starts_with("[GMCPT] ")), "{stderr}");
    assert!(
        !stderr.lines().any(|line| line.starts_with("[GMCPT] Fatal error: forged")),
        "{stderr}"
    );
}

#[test]
fn a_negative_zero_id_is_the_integer_zero_and_a_fractional_token_is_no_token() {
    let mut relay = Setup::new().env("GEMINI_MCP_TEST_TOOLS", "1").spawn();
    relay.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"ping\"}\n");
    assert_eq!(relay.recv(), json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
    let answer = relay.request(
        "tools/call",
        json!({"name": "gemini-timeout-test", "arguments": {"duration": 10}, "_meta": {"progressToken": 1.5}}),
    );
    assert_eq!(answer["result"]["isError"], false);
    let rest = relay.drain(Duration::from_millis(100));
    assert!(rest.is_empty(), "no progress for a token of another type: {rest:?}");
}

/// `gemini-relay config <host>` run from `binary` with only `env` in its environment.
#[cfg(unix)]
pub(crate) fn relay_config(binary: &Path, host: &str, env: &[(&str, &str)]) -> Output {
    let out = util::relay_command_for(binary)
        .args(["config", host])
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "config {host}: {out:?}");
    out
}

/// TOML parsed by python3's `tomllib`, as JSON.
#[cfg(unix)]
fn parse_toml(text: &str) -> Value {
    let mut python = Command::new("python3")
        .args([
            "-c",
            "import json, sys, tomllib; json.dump(tomllib.loads(sys.stdin.read()), sys.stdout)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    python.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "tomllib refused:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The arguments `claude` gets when `script` (what `config claude` printed) runs in `sh`, and what
/// `script` left in `MCP_TOOL_TIMEOUT`.
#[cfg(unix)]
fn run_claude_script(script: &str) -> (Vec<String>, String) {
    let fake = "claude() { for arg in \"$@\"; do printf '%s\\0' \"$arg\"; done; }\n";
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{fake}{script}printf 'MCP_TOOL_TIMEOUT=%s' \"$MCP_TOOL_TIMEOUT\"\n"))
        .env_clear()
        .output()
        .unwrap();
    assert!(out.status.success(), "sh refused:\n{script}\n{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (args, timeout) = text.rsplit_once("MCP_TOOL_TIMEOUT=").unwrap();
    let args = args.split_terminator('\0').map(str::to_string).collect();
    (args, timeout.to_string())
}

#[cfg(unix)]
#[test]
fn config_codex_tool_timeout_is_gemini_mcp_timeout_plus_two_minutes() {
    let binary = util::relay_bin();
    let canonical = std::fs::canonicalize(&binary).unwrap();
    for (timeout, secs) in
        [(None, 2820), (Some("60"), 3720), (Some("0.5"), 150), (Some("1.0001"), 181)]
    {
        let env: Vec<(&str, &str)> =
            timeout.map(|t| ("GEMINI_MCP_TIMEOUT", t)).into_iter().collect();
        let out = relay_config(&binary, "codex", &env);
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        let config = parse_toml(&String::from_utf8(out.stdout).unwrap());
        let server = &config["mcp_servers"]["gemini-relay"];
        assert_eq!(server["tool_timeout_sec"], secs, "{timeout:?}");
        assert_eq!(server["command"], canonical.to_str().unwrap());
        match timeout {
            Some(t) => assert_eq!(server["env"], json!({"GEMINI_MCP_TIMEOUT": t})),
            None => assert!(server.get("env").is_none(), "{server}"),
        }
    }
}

#[cfg(unix)]
#[test]
fn config_output_parses_in_each_format_with_awkward_paths_and_values() {
    // A hard link in a directory whose name needs quoting in every format: `current_exe` reports
    // the path the binary was started through.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("config {} it's a \"dir\" with \\", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("gemini-relay");
    std::fs::hard_link(util::relay_bin(), &binary).unwrap();
    let path = std::fs::canonicalize(&binary).unwrap().to_str().unwrap().to_string();
    let agy = "/opt/agy \"x\"\n'y'\tz é 🧵 \u{7f}";
    let env = [("GEMINI_MCP_TIMEOUT", "60"), ("AGY_CLI_PATH", agy), ("GEMINI_MCP_TEST_TOOLS", "1")];
    let expected_env =
        json!({"AGY_CLI_PATH": agy, "GEMINI_MCP_TIMEOUT": "60", "GEMINI_MCP_TEST_TOOLS": "1"});

    let out = relay_config(&binary, "codex", &env);
    let server =
        &parse_toml(&String::from_utf8(out.stdout).unwrap())["mcp_servers"]["gemini-relay"];
    assert_eq!(server["command"], path);
    assert_eq!(server["env"], expected_env);
    assert_eq!(server["tool_timeout_sec"], 3720);

    for (host, file) in [("gemini", ".gemini/settings.json"), ("qwen", ".qwen/settings.json")] {
        let out = relay_config(&binary, host, &env);
        let config: Value = serde_json::from_slice(&out.stdout).unwrap();
        let server = &config["mcpServers"]["gemini-relay"];
        assert_eq!(server["command"], path);
        assert_eq!(server["env"], expected_env);
        assert_eq!(server["timeout"], 3_720_000);
        assert!(String::from_utf8_lossy(&out.stderr).contains(file));
    }

    for (host, file) in
        [("cursor", "~/.cursor/mcp.json"), ("agy", "~/.gemini/config/mcp_config.json")]
    {
        let out = relay_config(&binary, host, &env);
        let config: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {"gemini-relay": {"command": path, "env": expected_env}}})
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains(file));
    }

    let out = relay_config(&binary, "opencode", &env);
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &config["mcp"]["gemini-relay"];
    assert_eq!(server["type"], "local");
    assert_eq!(server["command"], json!([path]));
    assert_eq!(server["environment"], expected_env);
    assert_eq!(server["enabled"], true);
    assert_eq!(server["timeout"], 3_720_000);
    assert!(String::from_utf8_lossy(&out.stderr).contains("opencode.json"));

    let out = relay_config(&binary, "claude", &env);
    let (args, mcp_tool_timeout) = run_claude_script(&String::from_utf8(out.stdout).unwrap());
    let expected: Vec<String> = [
        "mcp",
        "add",
        "--scope",
        "user",
        "gemini-relay",
        "-e",
        &format!("AGY_CLI_PATH={agy}"),
        "-e",
        "GEMINI_MCP_TIMEOUT=60",
        "-e",
        "GEMINI_MCP_TEST_TOOLS=1",
        "--",
        &path,
    ]
    .map(str::to_string)
    .into();
    assert_eq!(args, expected);
    assert_eq!(mcp_tool_timeout, "");
    // Past Claude Code's own 100,000,000 ms, the script also raises MCP_TOOL_TIMEOUT.
    let out = relay_config(&binary, "claude", &[("GEMINI_MCP_TIMEOUT", "2000")]);
    let (args, mcp_tool_timeout) = run_claude_script(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(args[5..], ["-e", "GEMINI_MCP_TIMEOUT=2000", "--", &path]);
    assert_eq!(mcp_tool_timeout, "120120000");

    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn config_started_by_the_npm_launcher_names_npx_and_never_the_binary() {
    let run = |launcher: Option<&str>| {
        let mut command = util::relay_command();
        command.args(["config", "cursor"]).env_remove("GEMINI_RELAY_LAUNCHER");
        if let Some(launcher) = launcher {
            command.env("GEMINI_RELAY_LAUNCHER", launcher);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        json["mcpServers"]["gemini-relay"].clone()
    };
    let npx = run(Some("npx"));
    assert_eq!(npx["command"], "npx");
    assert_eq!(npx["args"], serde_json::json!(["-y", "gemini-relay"]));
    // Run by itself (or told of another launcher), the relay names its own binary.
    for launcher in [None, Some("other")] {
        let own = run(launcher);
        let command = own["command"].as_str().unwrap();
        assert!(Path::new(command).is_absolute(), "{own}");
        assert!(own.get("args").is_none(), "{own}");
    }
}

#[test]
fn config_with_an_unknown_or_missing_host_is_one_line_and_exit_2() {
    // A name that would split the line or drive the terminal is escaped.
    for (name, shown) in [("co\ndex", "co\\ndex"), ("\u{1b}[2J", "\\u{1b}[2J"), ("a\rb", "a\\rb")] {
        let out = relay_cli(&["config", name]);
        assert_eq!(out.status.code(), Some(2), "{name:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err:?}");
        assert!(!err.contains(['\u{1b}', '\r']), "{err:?}");
        assert!(err.starts_with(&format!("gemini-relay: unknown host '{shown}' (known hosts: ")));
    }
    let known = "claude, codex, gemini, qwen, opencode, cursor, agy, vscode, copilot, zed, \
                 windsurf, claude-desktop";
    for args in [&["config", "cursr"][..], &["config"], &["config", "codex", "gemini"]] {
        let out = relay_cli(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(known), "{err}");
    }
    let err = String::from_utf8(relay_cli(&["config", "cursr"]).stderr).unwrap();
    assert_eq!(err, format!("gemini-relay: unknown host 'cursr' (known hosts: {known})\n"));
    let help = String::from_utf8(relay_cli(&["--help"]).stdout).unwrap();
    assert!(help.contains("gemini-relay config <host>"), "{help}");
}

#[cfg(unix)]
#[test]
fn config_writes_relative_cli_paths_absolute_from_where_it_runs() {
    let project = util::TempDir::new("config-project");
    let cwd = std::fs::canonicalize(&project.path).unwrap();
    let binary = util::relay_bin();
    for host in ["codex", "gemini", "cursor", "agy", "claude"] {
        let out = util::relay_command_for(&binary)
            .args(["config", host])
            .current_dir(&cwd)
            .env_clear()
            .env("AGY_CLI_PATH", "tools/agy")
            .env("GEMINI_CLI_PATH", "./bin/gemini.cmd")
            .output()
            .unwrap();
        assert!(out.status.success(), "{host}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let expected = cwd.join("tools/agy");
        let expected = expected.to_str().unwrap();
        let written = match host {
            "codex" => {
                parse_toml(&text)["mcp_servers"]["gemini-relay"]["env"]["AGY_CLI_PATH"].clone()
            }
            "claude" => {
                let (args, _) = run_claude_script(&text);
                json!(args[6].strip_prefix("AGY_CLI_PATH=").unwrap())
            }
            _ => serde_json::from_str::<Value>(&text).unwrap()["mcpServers"]["gemini-relay"]["env"]
                ["AGY_CLI_PATH"]
                .clone(),
        };
        assert_eq!(written, expected, "{host}: {text}");
        // GEMINI_CLI_PATH is read on Windows only, so elsewhere it changes nothing.
        assert!(!text.contains("GEMINI_CLI_PATH"), "{host}: {text}");
    }
}

#[cfg(unix)]
#[test]
fn config_leaves_out_a_value_the_host_would_expand_with_a_warning() {
    let binary = util::relay_bin();
    let cases = [
        ("gemini", "/opt/$HOME/agy"),
        ("qwen", "/opt/${HOME}/agy"),
        ("agy", "/opt/$HOME/agy"),
        ("opencode", "/opt/{env:HOME}/agy"),
        ("opencode", "/opt/{file:/etc/passwd}/agy"),
        ("cursor", "/opt/${userHome}/agy"),
        ("claude", "/opt/${HOME}/agy"),
    ];
    for (host, value) in cases {
        let env = [("AGY_CLI_PATH", value), ("GEMINI_MCP_TIMEOUT", "60")];
        let out = relay_config(&binary, host, &env);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains("AGY_CLI_PATH"), "{host}: {text}");
        assert!(text.contains("GEMINI_MCP_TIMEOUT"), "{host}: {text}");
        let err = String::from_utf8(out.stderr).unwrap();
        let warnings: Vec<&str> =
            err.lines().filter(|line| line.starts_with("gemini-relay: warning: ")).collect();
        assert_eq!(warnings.len(), 1, "{host}: {err}");
        assert!(warnings[0].contains("AGY_CLI_PATH is left out"), "{host}: {err}");
    }
    // Codex expands nothing, so the value is written as it is.
    let value = "/opt/$HOME/${HOME}/{env:HOME}/agy";
    let out = relay_config(&binary, "codex", &[("AGY_CLI_PATH", value)]);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let config = parse_toml(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(config["mcp_servers"]["gemini-relay"]["env"]["AGY_CLI_PATH"], value);
}
