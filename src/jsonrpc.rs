//! JSON-RPC 2.0 on the wire: classifying one parsed value into a request, notification or error, and
//! building the response and notification values that go back.

use serde_json::{Map, Number, Value, json};

/// The error codes this server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The line is not valid JSON (or not valid UTF-8).
    ParseError = -32700,
    /// Valid JSON that is not a request or notification, an empty batch, or an oversized line.
    InvalidRequest = -32600,
    /// The method is not one this server answers.
    MethodNotFound = -32601,
    /// The params do not fit the method (unknown tool or prompt, malformed `tools/call`).
    InvalidParams = -32602,
    /// A handler failed unexpectedly (a caught panic).
    InternalError = -32603,
    /// A modern (2026-07-28) request names a protocol version this server does not speak.
    UnsupportedProtocolVersion = -32022,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<Box<Value>>,
}

/// A request id, echoed back with its exact JSON type (`92` and `"92"` are different ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    Number(Number),
    String(String),
}

/// One classified incoming message.
#[derive(Debug)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response from the client; this server never sends requests, so it is ignored.
    Response,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn parse_error() -> RpcError {
        RpcError::new(ErrorCode::ParseError, "Parse error")
    }

    pub fn invalid_request() -> RpcError {
        RpcError::new(ErrorCode::InvalidRequest, "Invalid Request")
    }

    pub fn too_large() -> RpcError {
        RpcError::new(ErrorCode::InvalidRequest, "Message too large")
    }

    pub fn method_not_found() -> RpcError {
        RpcError::new(ErrorCode::MethodNotFound, "Method not found")
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::InvalidParams, message)
    }

    fn to_value(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), json!(self.code as i32));
        error.insert("message".into(), json!(self.message));
        if let Some(data) = &self.data {
            error.insert("data".into(), (**data).clone());
        }
        Value::Object(error)
    }
}

impl RequestId {
    pub fn from_json(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(RequestId::Number(n.clone())),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::Number(n.clone()),
            RequestId::String(s) => Value::String(s.clone()),
        }
    }
}

/// Classifies one element of the wire (a whole line, or one element of a batch). On failure it
/// returns the id to answer with (`null` when none can be read) and the error.
pub fn classify(value: Value) -> Result<Message, (Option<RequestId>, RpcError)> {
    let Value::Object(mut object) = value else {
        return Err((None, RpcError::invalid_request()));
    };
    let id = match object.get("id") {
        None => None,
        Some(raw) => match RequestId::from_json(raw) {
            Some(id) => Some(id),
            None => return Err((None, RpcError::invalid_request())),
        },
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request()));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err((id, RpcError::invalid_request())),
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Ok(Message::Response);
        }
        None => return Err((id, RpcError::invalid_request())),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Null,
        Some(params @ (Value::Object(_) | Value::Array(_))) => params,
        Some(_) => return Err((id, RpcError::invalid_request())),
    };
    Ok(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

/// A success response.
pub fn response(id: &RequestId, result: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0"});
    message["id"] = id.to_value();
    message["result"] = result;
    message
}

/// An error response; `id` is `None` when the request id could not be read.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    let mut message = json!({"jsonrpc": "2.0"});
    message["id"] = id.map_or(Value::Null, RequestId::to_value);
    message["error"] = error.to_value();
    message
}

/// A notification from the server.
pub fn notification(method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    message["params"] = params;
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, expect: &str) {
        let value: Value = serde_json::from_str(line).unwrap();
        let got = match classify(value) {
            Ok(Message::Request { id, method, params }) => {
                format!("request {} {method} {params}", id.to_value())
            }
            Ok(Message::Notification { method, params }) => {
                format!("notification {method} {params}")
            }
            Ok(Message::Response) => "response".to_string(),
            Err((id, error)) => {
                serde_json::to_string(&error_response(id.as_ref(), &error)).unwrap()
            }
        };
        assert_eq!(got, expect, "for {line}");
    }

    #[test]
    fn request_with_integer_id() {
        check(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, "request 7 ping null");
    }

    #[test]
    fn request_with_string_id_keeps_its_type() {
        check(
            r#"{"jsonrpc":"2.0","id":"7","method":"ping","params":{}}"#,
            r#"request "7" ping {}"#,
        );
    }

    #[test]
    fn notification_has_no_id() {
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification notifications/initialized null",
        );
    }

    #[test]
    fn wrong_jsonrpc_version_keeps_the_id() {
        check(
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request"}}"#,
        );
    }

    #[test]
    fn missing_method_is_invalid() {
        check(
            r#"{"jsonrpc":"2.0","id":"a"}"#,
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid Request"}}"#,
        );
    }

    #[test]
    fn non_string_method_is_invalid() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request"}}"#,
        );
    }

    #[test]
    fn id_of_the_wrong_type_is_answered_with_null() {
        for id in ["1.5", "true", "{}", "[1]", "null"] {
            check(
                &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#,
            );
        }
    }

    #[test]
    fn scalar_params_are_invalid() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request"}}"#,
        );
    }

    #[test]
    fn non_object_is_invalid() {
        check(
            "42",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#,
        );
    }

    #[test]
    fn client_responses_are_recognised() {
        check(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "response");
    }

    #[test]
    fn response_bytes_are_pinned() {
        let id = RequestId::Number(3.into());
        assert_eq!(
            serde_json::to_string(&response(&id, json!("success"))).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"result":"success"}"#
        );
    }

    #[test]
    fn error_data_is_included() {
        let mut error =
            RpcError::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version");
        error.data = Some(Box::new(json!({"supported": ["a"], "requested": "b"})));
        assert_eq!(
            serde_json::to_string(&error_response(Some(&RequestId::String("x".into())), &error))
                .unwrap(),
            r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["a"],"requested":"b"}}}"#
        );
    }
}
