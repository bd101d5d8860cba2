//! MCP protocol facts for both eras (the `initialize` handshake and the stateless 2026-07-28 era):
//! supported versions, negotiation, the initialize and server/discover results, the modern
//! (2026-07-28) result envelope, and whether a request declares the tasks extension.

use serde_json::{Map, Value, json};

use crate::protocol::jsonrpc::{ErrorCode, RpcError};

/// The stateless era's protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Versions answered by `initialize`, newest first. The first is the fallback.
pub const LEGACY_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];
/// How long clients may cache lists and discovery: they never change while the process lives.
pub const TTL_MS: u64 = 3_600_000;

/// The tasks extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// Which era a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    Legacy,
    Modern,
}

pub fn server_info() -> Value {
    json!({"name": "gemini-relay", "version": env!("CARGO_PKG_VERSION")})
}

pub fn capabilities() -> Value {
    json!({"tools": {}, "prompts": {}, "logging": {}})
}

/// The version `initialize` answers: the requested one when supported, else the newest legacy one
/// (never the modern version, which real hosts reject in `initialize`).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    LEGACY_VERSIONS.iter().find(|v| Some(**v) == requested).copied().unwrap_or(LEGACY_VERSIONS[0])
}

pub fn initialize_result(params: &Value) -> Value {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let mut result = json!({"protocolVersion": negotiate(requested)});
    result["capabilities"] = capabilities();
    result["serverInfo"] = server_info();
    result
}

/// Every version this server speaks, modern first.
pub fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION).chain(LEGACY_VERSIONS.iter().copied()).collect()
}

/// The era of a request, from `params._meta`. A modern request naming a version this server does
/// not speak gets `-32022` with the supported list.
pub fn era_of(params: &Value) -> Result<Era, RpcError> {
    let Some(requested) = params.get("_meta").and_then(|meta| meta.get(PROTOCOL_VERSION_KEY))
    else {
        return Ok(Era::Legacy);
    };
    if requested.as_str() == Some(MODERN_VERSION) {
        return Ok(Era::Modern);
    }
    let mut error =
        RpcError::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version");
    let mut data = json!({});
    data["supported"] = Value::from(supported_versions());
    data["requested"] = requested.clone();
    error = error.with_data(data);
    Err(error)
}

/// The per-request log level a modern client asked for, if any.
pub fn request_log_level(params: &Value) -> Option<&str> {
    params.get("_meta")?.get(LOG_LEVEL_KEY)?.as_str()
}

pub fn discover_result() -> Value {
    let mut result = json!({"resultType": "complete"});
    result["supportedVersions"] = Value::from(supported_versions());
    result["capabilities"] = capabilities();
    result["capabilities"]["extensions"] = json!({TASKS_EXTENSION: {}});
    result["ttlMs"] = Value::from(TTL_MS);
    result["cacheScope"] = Value::from("public");
    result["_meta"] = json!({});
    result["_meta"][SERVER_INFO_KEY] = server_info();
    result
}

/// Adds the modern envelope to a result: `resultType` and serverInfo in `_meta`. Legacy results
/// pass through unchanged.
pub fn envelope(result: Value, era: Era) -> Value {
    wrap(result, era, false)
}

/// `envelope` for a list result, which also carries the cache hints.
pub fn list_envelope(result: Value, era: Era) -> Value {
    wrap(result, era, true)
}

fn wrap(result: Value, era: Era, cacheable: bool) -> Value {
    let mut object = match (era, result) {
        (Era::Modern, Value::Object(object)) => object,
        (_, result) => return result,
    };
    object.entry("resultType").or_insert_with(|| json!("complete"));
    if cacheable {
        object.insert("ttlMs".into(), json!(TTL_MS));
        object.insert("cacheScope".into(), json!("public"));
    }
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(SERVER_INFO_KEY.into(), server_info());
    }
    Value::Object(object)
}

/// The `subscriptions/listen` acknowledgement: only list-changed types the client asked for, which
/// this server honours by never sending one (its lists never change).
pub fn subscription_ack(id: &Value, params: &Value) -> Value {
    let mut honoured = Map::new();
    if let Some(Value::Object(asked)) = params.get("notifications") {
        for key in ["toolsListChanged", "promptsListChanged"] {
            if asked.get(key) == Some(&Value::Bool(true)) {
                honoured.insert(key.into(), Value::Bool(true));
            }
        }
    }
    let mut ack = json!({});
    ack["notifications"] = Value::Object(honoured);
    ack["_meta"] = json!({});
    ack["_meta"]["io.modelcontextprotocol/subscriptionId"] = id.clone();
    ack
}

/// The result that closes a subscription at shutdown.
pub fn subscription_closed(id: &Value) -> Value {
    let mut closed = json!({"resultType": "complete", "_meta": {}});
    closed["_meta"]["io.modelcontextprotocol/subscriptionId"] = id.clone();
    closed["_meta"][SERVER_INFO_KEY] = server_info();
    closed
}

/// Whether a request's own capabilities declare the tasks extension (never inferred from
/// earlier requests).
pub fn tasks_declared(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|meta| meta.get("io.modelcontextprotocol/clientCapabilities"))
        .and_then(|caps| caps.get("extensions"))
        .and_then(Value::as_object)
        .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION))
}

/// `-32021` for a `tasks/*` request that does not declare the extension.
pub fn missing_capability() -> RpcError {
    RpcError::new(ErrorCode::MissingCapability, "Missing required client capability")
        .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_supported_versions() {
        for v in LEGACY_VERSIONS {
            assert_eq!(negotiate(Some(v)), *v);
        }
        assert_eq!(negotiate(Some("1999-01-01")), "2025-11-25");
        assert_eq!(negotiate(Some(MODERN_VERSION)), "2025-11-25");
        assert_eq!(negotiate(None), "2025-11-25");
    }

    #[test]
    fn initialize_result_bytes() {
        let got = initialize_result(&json!({"protocolVersion": "2024-11-05"}));
        assert_eq!(
            got.to_string(),
            r#"{"protocolVersion":"2024-11-05","capabilities":{"tools":{},"prompts":{},"logging":{}},"serverInfo":{"name":"gemini-relay","version":"1.2.0"}}"#
        );
    }

    #[test]
    fn era_detection() {
        assert_eq!(era_of(&json!({})), Ok(Era::Legacy));
        assert_eq!(era_of(&json!({"_meta": {"progressToken": 1}})), Ok(Era::Legacy));
        assert_eq!(
            era_of(&json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}})),
            Ok(Era::Modern)
        );
        let err = era_of(&json!({"_meta": {PROTOCOL_VERSION_KEY: "2030-01-01"}})).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedProtocolVersion);
        assert_eq!(err.data.unwrap()["requested"], "2030-01-01");
    }

    #[test]
    fn modern_envelope() {
        let got = list_envelope(json!({"tools": []}), Era::Modern);
        assert_eq!(got["resultType"], "complete");
        assert_eq!(got["ttlMs"], TTL_MS);
        assert_eq!(got["cacheScope"], "public");
        assert_eq!(got["_meta"][SERVER_INFO_KEY]["name"], "gemini-relay");
        assert_eq!(list_envelope(json!({}), Era::Legacy), json!({}));
    }

    #[test]
    fn subscription_ack_honours_only_list_changes() {
        let ack = subscription_ack(
            &json!(4),
            &json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["x"]}}),
        );
        assert_eq!(
            ack,
            json!({"notifications": {"toolsListChanged": true}, "_meta": {"io.modelcontextprotocol/subscriptionId": 4}})
        );
    }

    #[test]
    fn the_declaration_is_read_from_the_request_itself() {
        let declaring = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}}}});
        assert!(tasks_declared(&declaring));
        assert!(!tasks_declared(&json!({"_meta": {}})));
        assert!(!tasks_declared(&json!({})));
        let error = missing_capability();
        assert_eq!(error.code as i32, -32021);
        assert_eq!(
            error.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
            json!({})
        );
    }
}
