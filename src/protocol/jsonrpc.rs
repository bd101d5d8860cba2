//! JSON-RPC 2.0 on the wire: classifying one parsed value into a request, notification or response,
//! and the typed messages that go back (`Outgoing`), serialized with `"jsonrpc":"2.0"` added on write.

use std::fmt;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// The error codes this server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The line is not valid JSON (or not valid UTF-8).
    ParseError = -32700,
    /// Valid JSON that is not a request or notification, an empty batch, an oversized line, or an
    /// id that is still in flight.
    InvalidRequest = -32600,
    /// The method is not one this server answers.
    MethodNotFound = -32601,
    /// The params do not fit the method (unknown tool, prompt or task, malformed `tools/call`).
    InvalidParams = -32602,
    /// A handler failed unexpectedly (a worker that could not be started, a result that could not
    /// be serialized).
    InternalError = -32603,
    /// A `tasks/*` request that does not declare the tasks extension.
    MissingCapability = -32021,
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
    Request(Request),
    Notification(Notification),
    /// A response from the client; this server never sends requests, so it is ignored.
    Response,
}

#[derive(Debug)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Value,
}

/// A response: the result or the error for one id (`None` when the request's id could not be read,
/// written as `null`).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Option<RequestId>,
    pub result: Result<Value, RpcError>,
}

/// Everything the server writes to stdout.
#[derive(Debug, Clone)]
pub enum Outgoing {
    Response(Response),
    /// A success response whose result was serialized once and is sent many times (the lists).
    Cached {
        id: RequestId,
        result: Arc<RawValue>,
    },
    /// A success response whose result object gets one more member, serialized once and shared
    /// (a finished task's result, written to every poll that reads it).
    Shared {
        id: RequestId,
        result: Box<Map<String, Value>>,
        key: &'static str,
        shared: Arc<RawValue>,
    },
    /// The answer to a batch: its responses in one array.
    Batch(Vec<Response>),
    Notification(Notification),
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(Box::new(data));
        self
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

    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::InternalError, message)
    }
}

impl RequestId {
    /// An id of a valid type: a string or an integer. `-0` parses as a float but is the integer 0.
    pub fn from_json(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(s.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(RequestId::Number(n.clone())),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(RequestId::Number(0.into())),
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

/// Strings are shown quoted, so `92` and `"92"` look different in logs and messages.
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Response {
    pub fn ok(id: RequestId, result: Value) -> Response {
        Response { id: Some(id), result: Ok(result) }
    }

    pub fn err(id: Option<RequestId>, error: RpcError) -> Response {
        Response { id, result: Err(error) }
    }
}

impl Notification {
    pub fn new(method: &str, params: Value) -> Notification {
        Notification { method: method.to_string(), params }
    }
}

impl From<Response> for Outgoing {
    fn from(response: Response) -> Outgoing {
        Outgoing::Response(response)
    }
}

impl From<Notification> for Outgoing {
    fn from(notification: Notification) -> Outgoing {
        Outgoing::Notification(notification)
    }
}

/// Classifies one element of the wire (a whole line, or one element of a batch). On failure it
/// returns the response to send: the error with the id when it can be read, else `null`.
pub fn classify(value: Value) -> Result<Message, Response> {
    let Value::Object(mut object) = value else {
        return Err(Response::err(None, RpcError::invalid_request()));
    };
    let id = match object.get("id") {
        None => None,
        Some(raw) => match RequestId::from_json(raw) {
            Some(id) => Some(id),
            None => return Err(Response::err(None, RpcError::invalid_request())),
        },
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Response::err(id, RpcError::invalid_request()));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(Response::err(id, RpcError::invalid_request())),
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Ok(Message::Response);
        }
        None => return Err(Response::err(id, RpcError::invalid_request())),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Null,
        Some(params @ (Value::Object(_) | Value::Array(_))) => params,
        Some(_) => return Err(Response::err(id, RpcError::invalid_request())),
    };
    Ok(match id {
        Some(id) => Message::Request(Request { id, method, params }),
        None => Message::Notification(Notification { method, params }),
    })
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => n.serialize(serializer),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl Serialize for RpcError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", &(self.code as i32))?;
        map.serialize_entry("message", &self.message)?;
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        map.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", &self.id)?;
        match &self.result {
            Ok(result) => map.serialize_entry("result", result)?,
            Err(error) => map.serialize_entry("error", error)?,
        }
        map.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("method", &self.method)?;
        map.serialize_entry("params", &self.params)?;
        map.end()
    }
}

impl Serialize for Outgoing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Outgoing::Response(response) => response.serialize(serializer),
            Outgoing::Cached { id, result } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("result", &**result)?;
                map.end()
            }
            Outgoing::Shared { id, result, key, shared } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("result", &WithMember { object: result, key, value: shared })?;
                map.end()
            }
            Outgoing::Batch(responses) => responses.serialize(serializer),
            Outgoing::Notification(notification) => notification.serialize(serializer),
        }
    }
}

/// An object written with one more member after its own.
struct WithMember<'a> {
    object: &'a Map<String, Value>,
    key: &'a str,
    value: &'a RawValue,
}

impl Serialize for WithMember<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.object.len() + 1))?;
        for (key, value) in self.object {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(self.key, self.value)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn check(line: &str, expect: &str) {
        let value: Value = serde_json::from_str(line).unwrap();
        let got = match classify(value) {
            Ok(Message::Request(Request { id, method, params })) => {
                format!("request {} {method} {params}", id.to_value())
            }
            Ok(Message::Notification(Notification { method, params })) => {
                format!("notification {method} {params}")
            }
            Ok(Message::Response) => "response".to_string(),
            Err(response) => serde_json::to_string(&response).unwrap(),
        };
        assert_eq!(got, expect, "for {line}");
    }

    #[test]
    fn request_with_integer_id() {
        check(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, "request 7 ping null");
    }

    #[test]
    fn negative_zero_id_is_the_integer_zero() {
        check(r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#, "request 0 ping null");
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
        for id in ["1.5", "-0.5", "true", "{}", "[1]", "null"] {
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
    fn wire_bytes_are_pinned() {
        let ok = Response::ok(RequestId::Number(3.into()), json!("success"));
        assert_eq!(
            serde_json::to_string(&Outgoing::from(ok.clone())).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"result":"success"}"#
        );
        let err = Response::err(None, RpcError::parse_error());
        assert_eq!(
            serde_json::to_string(&Outgoing::Batch(vec![ok, err])).unwrap(),
            r#"[{"jsonrpc":"2.0","id":3,"result":"success"},{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}]"#
        );
        let cached = serde_json::value::to_raw_value(&json!({"tools": []})).unwrap();
        let cached = Outgoing::Cached { id: RequestId::String("l".into()), result: cached.into() };
        assert_eq!(
            serde_json::to_string(&cached).unwrap(),
            r#"{"jsonrpc":"2.0","id":"l","result":{"tools":[]}}"#
        );
        let note = Notification::new("notifications/progress", json!({"progress": 1}));
        assert_eq!(
            serde_json::to_string(&Outgoing::from(note)).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#
        );
    }

    #[test]
    fn error_data_is_included() {
        let error =
            RpcError::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version")
                .with_data(json!({"supported": ["a"], "requested": "b"}));
        let response = Response::err(Some(RequestId::String("x".into())), error);
        assert_eq!(
            serde_json::to_string(&response).unwrap(),
            r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["a"],"requested":"b"}}}"#
        );
    }

    #[test]
    fn ids_display_with_their_type() {
        assert_eq!(RequestId::Number(7.into()).to_string(), "7");
        assert_eq!(RequestId::String("7".into()).to_string(), "\"7\"");
    }
}
