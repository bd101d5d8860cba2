//! Checks a message against a definition of the MCP JSON schema kept in
//! `fixtures/mcp-schema/<version>.json`: the keywords that schema uses (`$ref`, `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `const`, `enum`, `anyOf`, `allOf`,
//! `minimum`, `maximum`); `format` and descriptions are not checked.

use std::fs;

use serde_json::Value;

/// The schema of one protocol version.
pub struct Schema {
    root: Value,
}

impl Schema {
    pub fn load(version: &str) -> Schema {
        let path = crate::util::fixtures().join("mcp-schema").join(format!("{version}.json"));
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Schema { root: serde_json::from_str(&text).unwrap() }
    }

    /// Panics naming the first place where `value` breaks the definition `name`.
    pub fn check(&self, name: &str, value: &Value) {
        let definition = self.definition(name);
        if let Err(problem) = self.validate(definition, value, "$") {
            panic!("not a valid {name}: {problem}\n{value:#}");
        }
    }

    fn definition(&self, name: &str) -> &Value {
        self.root["$defs"].get(name).unwrap_or_else(|| panic!("no definition {name}"))
    }

    fn validate(&self, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
        let Some(schema) = schema.as_object() else { return Ok(()) };
        if let Some(Value::String(target)) = schema.get("$ref") {
            let name = target.strip_prefix("#/$defs/").expect("a local reference");
            self.validate(self.definition(name), value, at)?;
        }
        if let Some(types) = schema.get("type") {
            let names: Vec<&str> = match types {
                Value::String(one) => vec![one],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !names.iter().any(|name| is_type(value, name)) {
                return Err(format!("{at} is not of type {types}: {value}"));
            }
        }
        if let Some(expected) = schema.get("const")
            && value != expected
        {
            return Err(format!("{at} is {value}, not {expected}"));
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.contains(value)
        {
            return Err(format!("{at} is {value}, not one of {allowed:?}"));
        }
        if let Some(number) = value.as_f64() {
            let below = schema.get("minimum").and_then(Value::as_f64).is_some_and(|m| number < m);
            let above = schema.get("maximum").and_then(Value::as_f64).is_some_and(|m| number > m);
            if below || above {
                return Err(format!("{at} is out of range: {number}"));
            }
        }
        if let Some(Value::Array(all)) = schema.get("allOf") {
            for part in all {
                self.validate(part, value, at)?;
            }
        }
        if let Some(Value::Array(any)) = schema.get("anyOf")
            && !any.iter().any(|part| self.validate(part, value, at).is_ok())
        {
            return Err(format!("{at} matches none of its alternatives: {value}"));
        }
        if let (Some(items), Value::Array(elements)) = (schema.get("items"), value) {
            for (n, element) in elements.iter().enumerate() {
                self.validate(items, element, &format!("{at}[{n}]"))?;
            }
        }
        let Value::Object(members) = value else { return Ok(()) };
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !members.contains_key(key) {
                    return Err(format!("{at} lacks {key:?}"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, member) in members {
            let place = format!("{at}.{key}");
            match (properties.and_then(|p| p.get(key)), schema.get("additionalProperties")) {
                (Some(property), _) => self.validate(property, member, &place)?,
                (None, Some(Value::Bool(false))) => return Err(format!("{place} is not allowed")),
                (None, Some(extra)) => self.validate(extra, member, &place)?,
                (None, None) => (),
            }
        }
        Ok(())
    }
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => false,
    }
}

#[test]
fn the_checker_refuses_what_the_schema_refuses() {
    let schema = Schema::load("2025-11-25");
    let task = serde_json::json!({"taskId": "t", "status": "working", "createdAt": "x",
        "lastUpdatedAt": "x", "ttl": 1000, "pollInterval": 1000});
    schema.check("Task", &task);
    for broken in [
        serde_json::json!({"taskId": "t", "status": "working"}),
        serde_json::json!({"taskId": "t", "status": "done", "createdAt": "x", "lastUpdatedAt": "x", "ttl": 1}),
        serde_json::json!({"taskId": 1, "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": 1}),
        serde_json::json!({"taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": 1.5}),
    ] {
        let definition = schema.definition("Task");
        assert!(schema.validate(definition, &broken, "$").is_err(), "{broken}");
    }
    let created = serde_json::json!({"task": task});
    schema.check("CreateTaskResult", &created);
    let not_a_result = serde_json::json!({"content": [{"type": "text"}]});
    assert!(schema.validate(schema.definition("CallToolResult"), &not_a_result, "$").is_err());
}
