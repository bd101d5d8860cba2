//! gemini-ask: one prompt to the active backend, with every option of its schema, the cached-chunk
//! shortcut and changeMode rendering, the `Gemini response:` prefix and the conversation id line.

use serde_json::{Map, Value};

use crate::backend::RunRequest;
use crate::call::Ctx;
use crate::changemode;
use crate::js;
use crate::tools::{Lane, bool_arg, run_options, str_arg};

const BLANK_PROMPT_ERROR: &str = "Please provide a prompt for analysis. Use @ syntax to include files (e.g., '@largefile.js explain what this does') or ask general questions";

/// The cached-chunk shortcut (`chunkIndex` with `chunkCacheKey`) answers from the chunk cache
/// without a model run, so it is cheap; every other call runs the model.
pub fn lane(args: &Map<String, Value>) -> Lane {
    let shortcut = bool_arg(args, "changeMode")
        && str_arg(args, "chunkCacheKey").is_some_and(|key| !key.is_empty())
        && args.get("chunkIndex").is_some_and(|i| changemode::parse_chunk_index(i).is_given());
    if shortcut { Lane::Inline } else { Lane::Model }
}

pub fn run(ctx: &Ctx<'_>, mut args: Map<String, Value>) -> Result<String, String> {
    // The prompt is moved out, never copied: it may be many megabytes.
    let prompt = match args.remove("prompt") {
        Some(Value::String(prompt)) => prompt,
        _ => String::new(),
    };
    if js::trim(&prompt).is_empty() {
        return Err(BLANK_PROMPT_ERROR.to_string());
    }
    let args = &args;
    let change_mode = bool_arg(args, "changeMode");
    let chunks = &ctx.services.chunks;
    if change_mode
        && let (Some(index), Some(key)) = (args.get("chunkIndex"), str_arg(args, "chunkCacheKey"))
        && let Some(text) = changemode::cached_chunk_reply(chunks, key, index, &prompt)
    {
        return Ok(text);
    }
    let options = run_options(args);
    let has_schema = options.json_schema_arg().is_some();
    // changeMode keys its chunk cache by the prompt, so only then is a copy kept.
    let kept = change_mode.then(|| prompt.clone());
    let request = RunRequest { prompt, options, change_mode };
    let reply = ctx.run_model(request)?;
    let backends = &ctx.services.backends;
    if change_mode {
        let body = changemode::process_change_mode_output(
            chunks,
            &reply.text,
            args.get("chunkIndex"),
            None,
            kept.as_deref(),
        );
        return Ok(backends.with_notices(&reply.notices, &body));
    }
    let mut body = format!("Gemini response:\n{}", reply.text);
    if let (Some(id), false) = (&reply.conversation_id, has_schema) {
        body.push_str(&format!(
            "\n\n🧵 conversationId: {id} (pass it back to continue this thread)"
        ));
    }
    Ok(backends.with_notices(&reply.notices, &body))
}
