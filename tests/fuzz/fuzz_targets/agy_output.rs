//! Fuzz target: parsing what agy prints (result objects, JSON replies, direct replies, the model
//! list, `script` output). The first byte holds flags; the rest is agy's stdout.
//!
//! Properties: nothing panics (every result is a `String`, so valid UTF-8 by type); a result object
//! is an object (or, from stream-json, an array); the reply with the usage line is the reply without
//! it plus at most one well-formed usage line; the direct reply of a parsed result equals parsing
//! that result's serialization; with `json` output the direct reply equals parsing stdout; a raw
//! reply is non-empty, trimmed and taken from stdout; a model list is never empty.

#![no_main]

use gemini_relay::fuzz;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let stdout = String::from_utf8_lossy(rest);
    let stdout = stdout.as_ref();
    let schema = (flags & 1 != 0).then(|| json!({ "type": "object" }));
    let include_usage = flags & 2 != 0;
    let prefer_structured = schema.is_some();
    let usage_wanted = include_usage && !prefer_structured;

    for stream in [false, true] {
        let Some(result) = fuzz::agy_result(stdout, stream) else { continue };
        assert!(result.is_object() || (stream && result.is_array()), "{result}");
        let (error, conversation, notices) = fuzz::agy_result_fields(&result);
        assert!(error.is_none_or(|it| !it.is_empty()));
        assert!(conversation.is_none_or(|it| !it.is_empty()));
        assert!(notices.iter().all(|it| !it.is_empty()));
        if stream {
            let direct = fuzz::agy_direct_reply(
                stdout,
                Some(result.clone()),
                true,
                false,
                schema.clone(),
                include_usage,
            );
            let text = serde_json::to_string(&result).expect("a value serializes");
            let reparsed = fuzz::agy_json_reply(&text, prefer_structured, usage_wanted);
            assert_eq!(direct, reparsed, "stdin run of {stdout:?}");
        }
    }

    for prefer in [false, true] {
        let plain = fuzz::agy_json_reply(stdout, prefer, false);
        let with_usage = fuzz::agy_json_reply(stdout, prefer, true);
        match (&plain, &with_usage) {
            (None, None) => (),
            (Some(plain), Some(with_usage)) => {
                let tail =
                    with_usage.strip_prefix(plain.as_str()).expect("the usage line is a suffix");
                assert!(
                    tail.is_empty()
                        || (tail.starts_with("\n\n📊 [Tokens: ") && tail.ends_with(']')),
                    "usage line {tail:?}"
                );
            }
            _ => panic!("the usage line changed whether {stdout:?} has a reply"),
        }
    }

    let result = fuzz::agy_result(stdout, false);
    let direct = fuzz::agy_direct_reply(stdout, result, false, true, schema.clone(), include_usage);
    assert_eq!(direct, fuzz::agy_json_reply(stdout, prefer_structured, usage_wanted), "json run");

    let raw = fuzz::agy_direct_reply(stdout, None, false, false, schema, include_usage);
    if let Some(raw) = raw {
        assert!(!raw.is_empty() && stdout.contains(&raw), "{raw:?}");
        // JavaScript's and Rust's whitespace differ outside ASCII (U+0085, U+FEFF).
        const SPACE: [char; 6] = [' ', '\t', '\n', '\r', '\u{b}', '\u{c}'];
        assert!(!raw.starts_with(SPACE) && !raw.ends_with(SPACE), "{raw:?}");
    }

    if let Ok(models) = fuzz::agy_models(stdout) {
        assert!(!models.is_empty());
    }
    let cleaned = fuzz::strip_script_noise(stdout);
    assert!(!cleaned.contains('\r'), "{cleaned:?}");
});
