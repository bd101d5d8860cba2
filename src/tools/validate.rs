//! Argument validation: checks `tools/call` arguments against a tool's JSON Schema (the subset the
//! catalog uses) and reports problems with zod 3's wording; also strips unknown keys
//! and fills in defaults.
//!
//! The validator mirrors how the original zod schemas behave, not just what the JSON Schema says:
//! * a value of the wrong type stops checking that value (zod "aborts"); failed constraints such
//!   as `minLength` or `maximum` are all reported (zod marks the value "dirty" and goes on);
//! * an `integer` schema is zod's `number().int()`, so a string gets `Expected number, received
//!   string` and a fraction `Expected integer, received float`;
//! * an `enum` given a non-string reports the joined options as the expected type
//!   (`Expected 'low' | 'medium' | 'high', received number`), exactly as zod 3's `ZodEnum` does;
//! * `anyOf` and type arrays are zod unions: a branch that matches wins, else the issues of the
//!   first branch whose type matched (only constraints failed), else `Invalid input`.

use serde_json::{Map, Value};

use crate::js;
use crate::redact::utf16_len;

/// Arguments that failed validation: what the client is told, and what the log may say.
#[derive(Debug)]
pub struct Invalid {
    tool: String,
    issues: Vec<Issue>,
}

/// One problem: `<path>: <message>`, and for an enum mismatch the value received, which the
/// client sees quoted and the log only as its length.
#[derive(Debug)]
struct Issue {
    path: String,
    message: String,
    received: Option<String>,
}

impl Invalid {
    /// `Invalid arguments for <tool>: <path>: <message>[, ...]`, zod's exact text.
    pub fn message(&self) -> String {
        self.render(|received| format!("'{received}'"))
    }

    /// The same with every received value replaced by `<N chars>`.
    pub fn log_message(&self) -> String {
        self.render(|received| format!("<{} chars>", utf16_len(received)))
    }

    fn render(&self, received: impl Fn(&str) -> String) -> String {
        let issues: Vec<String> = self
            .issues
            .iter()
            .map(|issue| match &issue.received {
                None => format!("{}: {}", issue.path, issue.message),
                Some(value) => {
                    format!("{}: {}, received {}", issue.path, issue.message, received(value))
                }
            })
            .collect();
        format!("Invalid arguments for {}: {}", self.tool, issues.join(", "))
    }
}

/// Validates `args` against `schema` (an object schema with `properties` and `required`).
/// Returns the arguments in schema property order, unknown keys dropped and defaults filled in.
pub fn validate(
    tool: &str,
    schema: &Value,
    args: Map<String, Value>,
) -> Result<Map<String, Value>, Invalid> {
    let mut issues = Vec::new();
    check_object_properties(schema, &args, "", &mut issues);
    if !issues.is_empty() {
        return Err(Invalid { tool: tool.to_string(), issues });
    }
    // Checking borrows; cleaning moves, so a 10 MB prompt is never copied.
    Ok(clean_properties(schema, args))
}

/// The accepted value as zod outputs it: objects with `properties` keep only those, in schema
/// order, with defaults filled in; everything else is unchanged.
fn clean(schema: &Value, value: Value) -> Value {
    match value {
        Value::Object(map) if schema.get("properties").is_some() => {
            Value::Object(clean_properties(schema, map))
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => {
                Value::Array(items.into_iter().map(|item| clean(item_schema, item)).collect())
            }
            None => Value::Array(items),
        },
        other => other,
    }
}

fn clean_properties(schema: &Value, mut map: Map<String, Value>) -> Map<String, Value> {
    let mut output = Map::new();
    let Some(Value::Object(properties)) = schema.get("properties") else { return output };
    for (key, property) in properties {
        match map.remove(key) {
            Some(value) => {
                output.insert(key.clone(), clean(property, value));
            }
            None => {
                if let Some(default) = property.get("default") {
                    output.insert(key.clone(), default.clone());
                }
            }
        }
    }
    output
}

/// How a value fared, as zod's parse status: `Aborted` when its type was wrong (further checks on
/// it were skipped), `Dirty` when its type matched but a constraint failed. Ordered by severity,
/// so `max` merges the statuses of an array's elements or an object's properties.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Valid,
    Dirty,
    Aborted,
}

/// Checks one value against one schema, appending `<path>: <message>` issues, and returns its
/// status and the cleaned value.
fn check_value(schema: &Value, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        return check_union(branches, value, path, issues);
    }
    if let Some(Value::Array(types)) = schema.get("type") {
        let branches: Vec<Value> = types
            .iter()
            .map(|type_name| {
                let mut branch = schema.clone();
                branch["type"] = type_name.clone();
                branch
            })
            .collect();
        return check_union(&branches, value, path, issues);
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        return check_enum(options, value, path, issues);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => check_string(schema, value, path, issues),
        Some("number") => check_number(schema, value, false, path, issues),
        Some("integer") => check_number(schema, value, true, path, issues),
        Some("boolean") => check_type(value.is_boolean(), "boolean", value, path, issues),
        Some("null") => check_type(value.is_null(), "null", value, path, issues),
        Some("array") => check_array(schema, value, path, issues),
        Some("object") => check_object(schema, value, path, issues),
        // No type (or one this validator does not know) accepts anything, like `z.any()`.
        _ => Status::Valid,
    }
}

/// zod's union: the first branch that passes wins; otherwise the issues of the first branch that
/// only failed constraints; otherwise one `Invalid input` issue.
fn check_union(branches: &[Value], value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    let mut first_dirty = None;
    for branch in branches {
        let mut branch_issues = Vec::new();
        match check_value(branch, value, path, &mut branch_issues) {
            Status::Valid => return Status::Valid,
            Status::Dirty if first_dirty.is_none() => first_dirty = Some(branch_issues),
            Status::Dirty | Status::Aborted => (),
        }
    }
    if let Some(branch_issues) = first_dirty {
        issues.extend(branch_issues);
        return Status::Dirty;
    }
    push_issue(issues, path, "Invalid input");
    Status::Aborted
}

/// zod's `enum`: string options only; a non-string reports the joined options as expected type.
fn check_enum(options: &[Value], value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    let joined = join_values(options);
    let Value::String(text) = value else {
        push_issue(issues, path, &format!("Expected {joined}, received {}", received_type(value)));
        return Status::Aborted;
    };
    if options.iter().any(|option| option.as_str() == Some(text)) {
        return Status::Valid;
    }
    issues.push(Issue {
        path: path.to_string(),
        message: format!("Invalid enum value. Expected {joined}"),
        received: Some(text.clone()),
    });
    Status::Aborted
}

fn check_string(schema: &Value, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    let Value::String(text) = value else {
        return type_mismatch("string", value, path, issues);
    };
    // zod measures `String.length`, i.e. UTF-16 code units. A string of n bytes has between n/4
    // and n of them, so a long prompt is counted only when its bytes cannot settle a bound.
    let bytes = text.len() as f64;
    let length = || utf16_len(text) as f64;
    let mut messages = Vec::new();
    let short = |min: f64| bytes < min * 4.0 && length() < min;
    if let Some((_, text)) = bound(schema, "minLength").filter(|(min, _)| short(*min)) {
        messages.push(format!("String must contain at least {text} character(s)"));
    }
    let long = |max: f64| bytes > max && length() > max;
    if let Some((_, text)) = bound(schema, "maxLength").filter(|(max, _)| long(*max)) {
        messages.push(format!("String must contain at most {text} character(s)"));
    }
    report_constraints(&messages, path, issues)
}

/// zod's `number()` (with `.int()` for an `integer` schema): checks run in the order integer,
/// lower bound, upper bound, and every failing one is reported.
fn check_number(
    schema: &Value,
    value: &Value,
    integer: bool,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Status {
    let Some(n) = value.as_f64() else {
        return type_mismatch("number", value, path, issues);
    };
    let mut messages = Vec::new();
    if integer && n.fract() != 0.0 {
        messages.push("Expected integer, received float".to_string());
    }
    if let Some((_, text)) = bound(schema, "minimum").filter(|(min, _)| n < *min) {
        messages.push(format!("Number must be greater than or equal to {text}"));
    }
    if let Some((_, text)) = bound(schema, "exclusiveMinimum").filter(|(min, _)| n <= *min) {
        messages.push(format!("Number must be greater than {text}"));
    }
    if let Some((_, text)) = bound(schema, "maximum").filter(|(max, _)| n > *max) {
        messages.push(format!("Number must be less than or equal to {text}"));
    }
    if let Some((_, text)) = bound(schema, "exclusiveMaximum").filter(|(max, _)| n >= *max) {
        messages.push(format!("Number must be less than {text}"));
    }
    report_constraints(&messages, path, issues)
}

fn check_type(
    matches: bool,
    expected: &str,
    value: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Status {
    if matches {
        return Status::Valid;
    }
    type_mismatch(expected, value, path, issues)
}

/// zod's `array()`: every element is checked (issues at `<path>.<index>`); one element of the
/// wrong type makes the whole array fail.
fn check_array(schema: &Value, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    let Value::Array(items) = value else {
        return type_mismatch("array", value, path, issues);
    };
    // zod checks the length first, then every item.
    let mut messages = Vec::new();
    if let Some((_, text)) = bound(schema, "maxItems").filter(|(max, _)| items.len() as f64 > *max)
    {
        messages.push(format!("Array must contain at most {text} element(s)"));
    }
    let mut status = report_constraints(&messages, path, issues);
    let Some(item_schema) = schema.get("items") else {
        return status;
    };
    for (idx, item) in items.iter().enumerate() {
        let item_status =
            check_value(item_schema, item, &join_path(path, &idx.to_string()), issues);
        status = status.max(item_status);
    }
    status
}

/// An object: with `properties` it is a zod object (unknown keys dropped, defaults filled);
/// otherwise a record whose values are checked against `additionalProperties` when that is a
/// schema (`{}` accepts anything).
fn check_object(schema: &Value, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    let Value::Object(map) = value else {
        return type_mismatch("object", value, path, issues);
    };
    if schema.get("properties").is_some() {
        return check_object_properties(schema, map, path, issues);
    }
    let Some(value_schema) = schema.get("additionalProperties").filter(|it| it.is_object()) else {
        return Status::Valid;
    };
    let mut status = Status::Valid;
    for (key, item) in map {
        status = status.max(check_value(value_schema, item, &join_path(path, key), issues));
    }
    status
}

/// The properties of an object schema, in schema order: a missing property takes its `default`,
/// is reported `Required` when listed in `required`, and is left out otherwise. Keys the schema
/// does not list are dropped.
fn check_object_properties(
    schema: &Value,
    map: &Map<String, Value>,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Status {
    let mut status = Status::Valid;
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return status;
    };
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for (key, property) in properties {
        let property_path = join_path(path, key);
        let Some(value) = map.get(key) else {
            if property.get("default").is_none() && required.contains(&key.as_str()) {
                push_issue(issues, &property_path, "Required");
                status = Status::Aborted;
            }
            continue;
        };
        status = status.max(check_value(property, value, &property_path, issues));
    }
    status
}

fn type_mismatch(expected: &str, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Status {
    push_issue(issues, path, &format!("Expected {expected}, received {}", received_type(value)));
    Status::Aborted
}

/// Records the failed constraints of a value whose type matched: none leaves it valid, any makes
/// it dirty.
fn report_constraints(messages: &[String], path: &str, issues: &mut Vec<Issue>) -> Status {
    if messages.is_empty() {
        return Status::Valid;
    }
    for message in messages {
        push_issue(issues, path, message);
    }
    Status::Dirty
}

/// A numeric schema keyword as (value, text the way zod prints it).
fn bound(schema: &Value, keyword: &str) -> Option<(f64, String)> {
    let number = schema.get(keyword)?.as_f64()?;
    Some((number, js::number(number)))
}

/// zod's name for the type of a parsed JSON value.
fn received_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// zod's `joinValues`: strings quoted with `'`, everything joined by ` | `.
fn join_values(options: &[Value]) -> String {
    let rendered: Vec<String> = options
        .iter()
        .map(|option| match option {
            Value::String(text) => format!("'{text}'"),
            other => js::string(other),
        })
        .collect();
    rendered.join(" | ")
}

/// zod's `path.join(".")`.
fn join_path(path: &str, segment: &str) -> String {
    if path.is_empty() {
        return segment.to_string();
    }
    format!("{path}.{segment}")
}

fn push_issue(issues: &mut Vec<Issue>, path: &str, message: &str) {
    issues.push(Issue { path: path.to_string(), message: message.to_string(), received: None });
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    use crate::tools::catalog::tool_specs;

    fn schema_of(tool: &str) -> Value {
        let specs = tool_specs(true);
        let spec = specs.iter().find(|it| it.tool.name == tool).expect("tool in catalog");
        spec.input_schema.clone()
    }

    fn run(tool: &str, args: Value) -> Result<Map<String, Value>, String> {
        let args = args.as_object().cloned().expect("test arguments are an object");
        validate(tool, &schema_of(tool), args).map_err(|invalid| invalid.message())
    }

    /// Asserts that `args` fail for `tool` with exactly `issues` after the standard prefix.
    fn check_err(tool: &str, args: Value, issues: &str) {
        let err = run(tool, args).expect_err("arguments should be rejected");
        assert_eq!(err, format!("Invalid arguments for {tool}: {issues}"));
    }

    /// Asserts that `args` pass for `tool` and come out exactly as `expected`, key order included.
    fn check_ok(tool: &str, args: Value, expected: Value) {
        let output = run(tool, args).expect("arguments should be accepted");
        assert_eq!(Value::Object(output).to_string(), expected.to_string());
    }

    #[test]
    fn the_log_never_sees_a_received_enum_value() {
        let args = json!({"prompt": "p", "effort": "sk-live-SECRET"});
        let args = args.as_object().cloned().unwrap();
        let invalid = validate("gemini-ask", &schema_of("gemini-ask"), args).unwrap_err();
        assert_eq!(
            invalid.message(),
            "Invalid arguments for gemini-ask: effort: Invalid enum value. Expected 'low' | 'medium' | 'high', received 'sk-live-SECRET'"
        );
        assert_eq!(
            invalid.log_message(),
            "Invalid arguments for gemini-ask: effort: Invalid enum value. Expected 'low' | 'medium' | 'high', received <14 chars>"
        );
    }

    #[test]
    fn spec_example_required() {
        check_err("gemini-ask", json!({}), "prompt: Required");
        assert_eq!(
            run("gemini-ask", json!({})).expect_err("rejected"),
            "Invalid arguments for gemini-ask: prompt: Required"
        );
    }

    #[test]
    fn spec_example_two_required() {
        check_err("gemini-fetch-chunk", json!({}), "cacheKey: Required, chunkIndex: Required");
    }

    #[test]
    fn spec_example_maximum() {
        check_err(
            "gemini-conversations",
            json!({"limit": 101}),
            "limit: Number must be less than or equal to 100",
        );
    }

    #[test]
    fn message_string_too_short() {
        check_err(
            "gemini-ask",
            json!({"prompt": ""}),
            "prompt: String must contain at least 1 character(s)",
        );
        check_err(
            "gemini-plan",
            json!({"task": ""}),
            "task: String must contain at least 1 character(s)",
        );
    }

    #[test]
    fn message_wrong_primitive_type() {
        check_err("gemini-ask", json!({"prompt": 5}), "prompt: Expected string, received number");
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "addDirs": "src"}),
            "addDirs: Expected array, received string",
        );
        check_err(
            "gemini-fetch-chunk",
            json!({"cacheKey": "deadbeef", "chunkIndex": "2"}),
            "chunkIndex: Expected number, received string",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "model": null}),
            "model: Expected string, received null",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "sandbox": "yes"}),
            "sandbox: Expected boolean, received string",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": ["x"]}),
            "prompt: Expected string, received array",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": {"text": "x"}}),
            "prompt: Expected string, received object",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": true}),
            "prompt: Expected string, received boolean",
        );
    }

    #[test]
    fn message_integer_given_fraction() {
        check_err(
            "gemini-conversations",
            json!({"limit": 2.5}),
            "limit: Expected integer, received float",
        );
        check_err(
            "gemini-brainstorm",
            json!({"prompt": "x", "ideaCount": 1.5}),
            "ideaCount: Expected integer, received float",
        );
    }

    #[test]
    fn message_integer_given_string_names_number() {
        check_err(
            "gemini-conversations",
            json!({"limit": "5"}),
            "limit: Expected number, received string",
        );
    }

    #[test]
    fn integer_accepts_whole_float() {
        check_ok("gemini-conversations", json!({"limit": 3.0}), json!({"limit": 3.0}));
    }

    #[test]
    fn message_enum_mismatch() {
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "effort": "max"}),
            "effort: Invalid enum value. Expected 'low' | 'medium' | 'high', received 'max'",
        );
        check_err(
            "gemini-image",
            json!({"prompt": "x", "size": "8K"}),
            "size: Invalid enum value. Expected '512' | '1K' | '2K' | '4K', received '8K'",
        );
    }

    #[test]
    fn message_enum_given_non_string() {
        // zod 3's ZodEnum reports a non-string as invalid_type with the joined options expected.
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "effort": 3}),
            "effort: Expected 'low' | 'medium' | 'high', received number",
        );
        check_err(
            "gemini-plan",
            json!({"task": "x", "effort": null}),
            "effort: Expected 'low' | 'medium' | 'high', received null",
        );
    }

    #[test]
    fn message_union_mismatch() {
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "jsonSchema": 5}),
            "jsonSchema: Invalid input",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "jsonSchema": ["a"]}),
            "jsonSchema: Invalid input",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "jsonSchema": null}),
            "jsonSchema: Invalid input",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "chunkIndex": true}),
            "chunkIndex: Invalid input",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "chunkIndex": null}),
            "chunkIndex: Invalid input",
        );
    }

    #[test]
    fn unions_accept_each_branch() {
        for json_schema in [json!("{\"type\":\"object\"}"), json!({"type": "object", "x": [1]})] {
            let output = run("gemini-ask", json!({"prompt": "x", "jsonSchema": json_schema}))
                .expect("accepted");
            assert_eq!(output["jsonSchema"], json_schema);
        }
        for chunk_index in [json!(2), json!(1.5), json!("2"), json!("abc")] {
            let output = run("gemini-ask", json!({"prompt": "x", "chunkIndex": chunk_index}))
                .expect("accepted");
            assert_eq!(output["chunkIndex"], chunk_index);
        }
    }

    #[test]
    fn message_number_below_minimum() {
        check_err(
            "gemini-fetch-chunk",
            json!({"cacheKey": "deadbeef", "chunkIndex": 0}),
            "chunkIndex: Number must be greater than or equal to 1",
        );
        check_err(
            "gemini-timeout-test",
            json!({"duration": 9.5}),
            "duration: Number must be greater than or equal to 10",
        );
    }

    #[test]
    fn message_number_not_above_exclusive_minimum() {
        check_err(
            "gemini-conversations",
            json!({"limit": 0}),
            "limit: Number must be greater than 0",
        );
        check_err(
            "gemini-brainstorm",
            json!({"prompt": "x", "ideaCount": -3}),
            "ideaCount: Number must be greater than 0",
        );
    }

    #[test]
    fn every_failed_number_check_is_reported() {
        check_err(
            "gemini-conversations",
            json!({"limit": -0.5}),
            "limit: Expected integer, received float, limit: Number must be greater than 0",
        );
        check_err(
            "gemini-conversations",
            json!({"limit": 100.5}),
            "limit: Expected integer, received float, limit: Number must be less than or equal to 100",
        );
    }

    #[test]
    fn nested_array_paths() {
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "addDirs": ["a", 1, "b", null]}),
            "addDirs.1: Expected string, received number, addDirs.3: Expected string, received null",
        );
    }

    #[test]
    fn issues_follow_schema_order_not_caller_order() {
        check_err(
            "gemini-ask",
            json!({"chunkIndex": false, "sandbox": 1, "effort": "max", "prompt": ""}),
            "prompt: String must contain at least 1 character(s), \
             effort: Invalid enum value. Expected 'low' | 'medium' | 'high', received 'max', \
             sandbox: Expected boolean, received number, chunkIndex: Invalid input",
        );
    }

    #[test]
    fn null_is_never_accepted_for_optional_or_defaulted() {
        check_err("gemini-ping", json!({"prompt": null}), "prompt: Expected string, received null");
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "includeUsage": null}),
            "includeUsage: Expected boolean, received null",
        );
        check_err(
            "gemini-ask",
            json!({"prompt": "x", "addDirs": null}),
            "addDirs: Expected array, received null",
        );
    }

    #[test]
    fn defaults_filled_in_schema_order() {
        check_ok(
            "gemini-ask",
            json!({"model": "pro", "prompt": "hi"}),
            json!({
                "prompt": "hi",
                "model": "pro",
                "allowSlashCommands": false,
                "skipPermissions": false,
                "includeUsage": false,
                "sandbox": false,
                "changeMode": false,
            }),
        );
        check_ok(
            "gemini-plan",
            json!({"task": "t"}),
            json!({"task": "t", "effort": "high", "includeUsage": true}),
        );
        check_ok(
            "gemini-brainstorm",
            json!({"prompt": "p"}),
            json!({"prompt": "p", "methodology": "auto", "ideaCount": 12, "includeAnalysis": true}),
        );
        check_ok(
            "gemini-image",
            json!({"prompt": "cat"}),
            json!({"prompt": "cat", "aspectRatio": "1:1"}),
        );
        check_ok("gemini-conversations", json!({}), json!({"limit": 20}));
        check_ok("gemini-ping", json!({}), json!({"prompt": ""}));
    }

    #[test]
    fn given_values_override_defaults() {
        check_ok(
            "gemini-plan",
            json!({"includeUsage": false, "task": "t", "effort": "low"}),
            json!({"task": "t", "effort": "low", "includeUsage": false}),
        );
    }

    #[test]
    fn unknown_keys_dropped() {
        check_ok("gemini-ping", json!({"message": "hi"}), json!({"prompt": ""}));
        check_ok(
            "gemini-ping",
            json!({"prompt": "hello & world", "x": 1}),
            json!({"prompt": "hello & world"}),
        );
        check_ok("gemini-models", json!({"anything": [1, 2]}), json!({}));
        check_ok("gemini-help", json!({}), json!({}));
        check_ok(
            "gemini-fetch-chunk",
            json!({"chunkIndex": 2, "extra": null, "cacheKey": "abcd1234"}),
            json!({"cacheKey": "abcd1234", "chunkIndex": 2}),
        );
    }

    #[test]
    fn unknown_keys_never_produce_issues() {
        check_err("gemini-ask", json!({"bogus": null}), "prompt: Required");
    }

    #[test]
    fn blank_but_non_empty_strings_pass() {
        check_ok(
            "gemini-brainstorm",
            json!({"prompt": "   "}),
            json!({"prompt": "   ", "methodology": "auto", "ideaCount": 12, "includeAnalysis": true}),
        );
    }

    #[test]
    fn generic_nested_objects_and_records() {
        let schema = json!({
            "type": "object",
            "properties": {
                "inner": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 2},
                        "flag": {"type": "boolean", "default": true},
                    },
                    "required": ["name"],
                },
                "tags": {"type": "object", "additionalProperties": {"type": "number"}},
            },
            "required": [],
        });
        let args = json!({"inner": {"extra": 1, "name": "ab"}, "tags": {"a": 1}});
        let output =
            validate("t", &schema, args.as_object().expect("object").clone()).expect("accepted");
        assert_eq!(
            Value::Object(output).to_string(),
            json!({"inner": {"name": "ab", "flag": true}, "tags": {"a": 1}}).to_string()
        );
        let args = json!({"inner": {"name": "a"}, "tags": {"a": "x"}});
        let err = validate("t", &schema, args.as_object().expect("object").clone())
            .expect_err("rejected")
            .message();
        assert_eq!(
            err,
            "Invalid arguments for t: inner.name: String must contain at least 2 character(s), \
             tags.a: Expected number, received string"
        );
        let args = json!({"inner": {}});
        let err = validate("t", &schema, args.as_object().expect("object").clone())
            .expect_err("rejected")
            .message();
        assert_eq!(err, "Invalid arguments for t: inner.name: Required");
    }

    #[test]
    fn union_reports_dirty_branch_issues() {
        let schema = json!({
            "type": "object",
            "properties": {
                "x": {"anyOf": [{"type": "number"}, {"type": "string", "minLength": 3}]},
            },
            "required": [],
        });
        let args = json!({"x": "ab"});
        let err = validate("t", &schema, args.as_object().expect("object").clone())
            .expect_err("rejected")
            .message();
        assert_eq!(err, "Invalid arguments for t: x: String must contain at least 3 character(s)");
    }

    #[test]
    fn min_length_counts_utf16_units() {
        let schema = json!({
            "type": "object",
            "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 2}},
            "required": [],
        });
        let args = json!({"s": "🧵"});
        assert!(validate("t", &schema, args.as_object().expect("object").clone()).is_ok());
        let args = json!({"s": "é"});
        let err = validate("t", &schema, args.as_object().expect("object").clone())
            .expect_err("rejected")
            .message();
        assert_eq!(err, "Invalid arguments for t: s: String must contain at least 2 character(s)");
        let args = json!({"s": "abc"});
        let err = validate("t", &schema, args.as_object().expect("object").clone())
            .expect_err("rejected")
            .message();
        assert_eq!(err, "Invalid arguments for t: s: String must contain at most 2 character(s)");
    }

    #[test]
    fn schema_without_type_accepts_anything() {
        let schema = json!({"type": "object", "properties": {"any": {}}, "required": ["any"]});
        let args = json!({"any": null});
        let output =
            validate("t", &schema, args.as_object().expect("object").clone()).expect("accepted");
        assert_eq!(output["any"], Value::Null);
    }
}
