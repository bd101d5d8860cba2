//! Fuzz target: the stdio line reader and the JSON-RPC classifier on arbitrary bytes.
//!
//! Properties: the reader splits, bounds and parses lines exactly as a plain model of it does; a
//! request keeps its method, params and id, and the id and method round trip through the
//! serialized response; a refusal carries `id` null or the request's id; nothing else is refused.

#![no_main]

use gemini_relay::fuzz::{self, Classified, Line};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    // The whole input as one line.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        check_message(value);
    }
    // The whole input as stdin, with a line limit chosen by its first byte.
    let max = match data.first() {
        Some(&first) if first & 0x80 == 0 => usize::from(first) + 1,
        _ => 1 << 20,
    };
    let lines = fuzz::read_lines(data, max);
    assert_eq!(lines, model_lines(data, max), "max {max}");
    for line in lines {
        if let Line::Message(value) = line {
            check_message(value);
        }
    }
});

/// What the reader must deliver: lines split at `\n` (one `\r` before it dropped), longer than
/// `max` bytes reported as too large, blank ones skipped, the rest parsed as JSON.
fn model_lines(data: &[u8], max: usize) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let (line, ended) = match rest.iter().position(|&b| b == b'\n') {
            Some(newline) => {
                let line = &rest[..newline];
                rest = &rest[newline + 1..];
                (line, true)
            }
            None => (std::mem::take(&mut rest), false),
        };
        if line.len() > max {
            lines.push(Line::TooLarge);
            continue;
        }
        let line = if ended { line.strip_suffix(b"\r").unwrap_or(line) } else { line };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        lines.push(match serde_json::from_slice(line) {
            Ok(value) => Line::Message(value),
            Err(_) => Line::Malformed,
        });
    }
    lines
}

/// A whole line: a batch is classified element by element, anything else as one message.
fn check_message(value: Value) {
    if let Value::Array(items) = &value {
        for item in items {
            check_one(item.clone());
        }
        return;
    }
    check_one(value);
}

/// The id a request is answered with: a string or an integer (`-0` is the integer 0).
fn echoed_id(raw: &Value) -> Option<Value> {
    match raw {
        Value::String(_) => Some(raw.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(raw.clone()),
        Value::Number(n) if n.as_f64() == Some(0.0) => Some(json!(0)),
        _ => None,
    }
}

fn check_one(input: Value) {
    let id = input.get("id").and_then(echoed_id);
    let is_two = input.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    let method = input.get("method").and_then(Value::as_str).map(str::to_owned);
    match fuzz::classify(input.clone()) {
        Classified::Request { id: got, method: got_method, params } => {
            assert!(is_two, "{input}");
            assert_eq!(Some(&got), id.as_ref(), "{input}");
            assert_eq!(Some(&got_method), method.as_ref(), "{input}");
            match input.get("params") {
                None | Some(Value::Null) => assert_eq!(params, Value::Null),
                Some(sent) => {
                    assert_eq!(&params, sent);
                    assert!(params.is_object() || params.is_array(), "{input}");
                }
            }
            let result = json!({ "method": got_method });
            let line = fuzz::respond(&got, result.clone()).expect("a request's id is valid");
            assert!(!line.contains('\n'), "{line}");
            let back: Value = serde_json::from_str(&line).expect("the response is JSON");
            assert_eq!(back, json!({ "jsonrpc": "2.0", "id": got, "result": result }));
        }
        Classified::Notification { method: got_method, params: _ } => {
            assert!(is_two, "{input}");
            assert!(input.get("id").is_none(), "{input}");
            assert_eq!(Some(&got_method), method.as_ref(), "{input}");
        }
        Classified::Response => {
            assert!(is_two && id.is_some() && input.get("method").is_none(), "{input}");
            assert!(input.get("result").is_some() || input.get("error").is_some(), "{input}");
        }
        Classified::Refused(line) => {
            let back: Value = serde_json::from_str(&line).expect("the refusal is JSON");
            assert_eq!(back["jsonrpc"], "2.0", "{line}");
            assert!(back["id"].is_null() || Some(&back["id"]) == id.as_ref(), "{input} -> {line}");
            assert_eq!(back["error"]["code"], -32600, "{line}");
            assert_eq!(back.as_object().map(|it| it.len()), Some(3), "{line}");
            // A well-formed request or notification is never refused.
            let params_ok = matches!(
                input.get("params"),
                None | Some(Value::Null | Value::Object(_) | Value::Array(_))
            );
            let id_ok = input.get("id").is_none() || id.is_some();
            assert!(!(is_two && method.is_some() && params_ok && id_ok), "{input} -> {line}");
        }
    }
}
