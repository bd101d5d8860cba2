//! changeMode, the structured-edit mode of `gemini-ask` and `gemini-fetch-chunk`: turns a model
//! reply into rendered edits, chunks long replies, caches the chunks and serves them back.
//!
//! `prompt` wraps the request, `parse` reads the reply, `render` validates and formats edits,
//! `chunk` splits them and `cache` keeps the chunks; this file holds the tool-level flows.

pub mod cache;
pub mod chunk;
pub mod parse;
pub mod prompt;
pub mod render;

use std::sync::Arc;

use serde_json::Value;

use crate::changemode::cache::{ChunkCache, is_valid_cache_key};
use crate::changemode::chunk::{Chunk, MAX_CHUNK_CHARS, chunk_change_mode_edits};
use crate::changemode::parse::{js_trim, parse_change_mode_output};
use crate::changemode::render::{
    ChunkInfo, format_change_mode_response, summarize_change_mode_edits,
    validate_change_mode_edits, validation_failure_text,
};

/// A `chunkIndex` argument after coercion (Part I D10, Q7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkIndex {
    /// Absent or falsy: `null`, `false`, `0`, `"0"`, `""`.
    NotGiven,
    /// An integer, from a number or a numeric string; it may be out of range.
    Index(i64),
    /// Truthy but not an integer (`1.5`, `"x"`); holds the text it is shown as.
    Invalid(String),
}

impl ChunkIndex {
    /// Whether the index counts as given (JS truthiness after coercion).
    pub fn is_given(&self) -> bool {
        !matches!(self, ChunkIndex::NotGiven)
    }

    /// The 1-based chunk this index selects among `count` chunks, if it is in range.
    fn select(&self, count: usize) -> Option<usize> {
        match *self {
            ChunkIndex::Index(i) => usize::try_from(i).ok().filter(|&i| i >= 1 && i <= count),
            _ => None,
        }
    }
}

/// Coerces a `chunkIndex` value: integral numbers and numeric strings become integers, `0` and
/// other falsy values mean "not given", anything else is an invalid index.
pub fn parse_chunk_index(value: &Value) -> ChunkIndex {
    let integer = match value {
        Value::Null | Value::Bool(false) => return ChunkIndex::NotGiven,
        Value::String(text) if text.is_empty() => return ChunkIndex::NotGiven,
        Value::Number(number) => number.as_i64().or_else(|| number.as_f64().and_then(integral)),
        Value::String(text) => {
            let text = text.trim();
            text.parse::<i64>().ok().or_else(|| text.parse::<f64>().ok().and_then(integral))
        }
        _ => None,
    };
    match integer {
        Some(0) => ChunkIndex::NotGiven,
        Some(i) => ChunkIndex::Index(i),
        None => ChunkIndex::Invalid(value_text(value)),
    }
}

/// `process_change_mode_output` of SPEC §6.6: renders a fresh reply (`raw`) or, when both
/// `chunk_index` and `cache_key` are given, a cached chunk.
pub fn process_change_mode_output(
    cache: &ChunkCache,
    raw: &str,
    chunk_index: Option<&Value>,
    cache_key: Option<&str>,
    prompt: Option<&str>,
) -> String {
    let index = chunk_index.map_or(ChunkIndex::NotGiven, parse_chunk_index);
    let cached_request = cache_key.filter(|key| !key.is_empty() && index.is_given());
    if let Some(key) = cached_request {
        let cached = cache.get(key);
        if let Some(chunks) = &cached {
            if let Some(i) = index.select(chunks.len()) {
                log::debug!("Using cached chunk {i} of {}", chunks.len());
                return render_cached_chunk(chunks, i, key);
            }
        }
        if js_trim(raw).is_empty() {
            let shown = shown_index(chunk_index, &index);
            return match cached {
                Some(chunks) => invalid_chunk_index_text(&shown, chunks.len()),
                None => ask_cache_miss_text(key),
            };
        }
        log::debug!("Cache miss or invalid chunk index, processing new result");
    }

    let edits = parse_change_mode_output(raw);
    if edits.is_empty() {
        return format!(
            "No edits found in Gemini's response. Please ensure Gemini uses the OLD/NEW format. \n\n{raw}"
        );
    }
    let errors = validate_change_mode_edits(&edits);
    if !errors.is_empty() {
        return validation_failure_text(&errors);
    }

    let n_edits = edits.len();
    let chunks = Arc::new(chunk_change_mode_edits(edits, MAX_CHUNK_CHARS));
    let n_chunks = chunks.len();
    let key = match prompt {
        Some(prompt) if n_chunks > 1 && !prompt.is_empty() => {
            let key = cache.store(prompt, Arc::clone(&chunks));
            log::debug!("Cached {n_chunks} chunks with key: {key}");
            Some(key)
        }
        _ => None,
    };
    let i = index.select(n_chunks).unwrap_or(1);
    let chunk_info = (n_chunks > 1).then_some(ChunkInfo {
        current: i,
        total: n_chunks,
        cache_key: key.as_deref(),
    });
    let mut out = format_change_mode_response(&chunks[i - 1].edits, chunk_info);
    if i == 1 && n_edits > 5 {
        out = prefix_summary(all_edits(&chunks), n_chunks > 1, out);
    }
    log::debug!("ChangeMode: Parsed {n_edits} edits, {n_chunks} chunks, returning chunk {i}");
    out
}

/// `gemini-ask` step 2 (the cached-chunk shortcut), for a call with `changeMode` set: the reply
/// when `chunk_cache_key` is non-empty and `chunk_index` is given, else `None` (run the model).
pub fn cached_chunk_reply(
    cache: &ChunkCache,
    chunk_cache_key: &str,
    chunk_index: &Value,
    prompt: &str,
) -> Option<String> {
    if chunk_cache_key.is_empty() || !parse_chunk_index(chunk_index).is_given() {
        return None;
    }
    if !is_valid_cache_key(chunk_cache_key) {
        return Some(format!(
            "❌ Invalid chunkCacheKey format. Expected 8 lowercase hex characters (got {}).",
            json_string(chunk_cache_key)
        ));
    }
    Some(process_change_mode_output(
        cache,
        "",
        Some(chunk_index),
        Some(chunk_cache_key),
        Some(prompt),
    ))
}

/// `gemini-fetch-chunk` after argument validation: one chunk of a cached reply, or the text that
/// explains why there is none.
pub fn fetch_chunk(cache: &ChunkCache, cache_key: &str, chunk_index: &Value) -> String {
    let index = parse_chunk_index(chunk_index);
    let shown = shown_index(Some(chunk_index), &index);
    // Part I D9: a string argument is logged by length only, unless it is a well-formed key.
    let logged_key = if is_valid_cache_key(cache_key) {
        cache_key.to_owned()
    } else {
        format!("<{} chars>", cache_key.encode_utf16().count())
    };
    log::debug!("Fetching chunk {shown} with cache key: {logged_key}");

    if !is_valid_cache_key(cache_key) {
        return format!(
            "❌ Invalid cacheKey format. Expected 8 lowercase hex characters (got {}).",
            json_string(cache_key)
        );
    }
    let Some(chunks) = cache.get(cache_key) else {
        return fetch_cache_miss_text(cache_key);
    };
    let count = chunks.len();
    let Some(i) = index.select(count) else {
        return invalid_chunk_index_text(&shown, count);
    };
    let chunk = &chunks[i - 1];
    let chunk_info = ChunkInfo { current: i, total: count, cache_key: Some(cache_key) };
    let mut out = format_change_mode_response(&chunk.edits, Some(chunk_info));
    if i == 1 && count > 1 {
        out = prefix_summary(all_edits(&chunks), true, out);
    }
    log::debug!("Returning chunk {i} of {count} with {} edits", chunk.edits.len());
    out
}

/// A cached chunk for the `gemini-ask` shortcut; `i` is in range.
fn render_cached_chunk(chunks: &[Chunk], i: usize, key: &str) -> String {
    let chunk_info = ChunkInfo { current: i, total: chunks.len(), cache_key: Some(key) };
    let chunk = &chunks[i - 1];
    let out = format_change_mode_response(&chunk.edits, Some(chunk_info));
    if i == 1 && chunk.edits.len() > 5 {
        return prefix_summary(all_edits(chunks), false, out);
    }
    out
}

fn all_edits(chunks: &[Chunk]) -> impl Iterator<Item = &parse::Edit> {
    chunks.iter().flat_map(|chunk| chunk.edits.iter())
}

fn prefix_summary<'a>(
    edits: impl Iterator<Item = &'a parse::Edit>,
    partial_view: bool,
    response: String,
) -> String {
    format!("{}\n\n{response}", summarize_change_mode_edits(edits, partial_view))
}

fn invalid_chunk_index_text(shown: &str, count: usize) -> String {
    format!(
        "❌ Invalid chunk index: {shown}\n\nAvailable chunks: 1 to {count}\nYou requested: {shown}\n\nPlease use a valid chunk index."
    )
}

/// The cache-miss text of the `gemini-ask` shortcut (no trailing space, no indentation).
fn ask_cache_miss_text(key: &str) -> String {
    format!(
        "❌ Cache miss: No chunks found for cache key \"{key}\".\n\n\
         Possible reasons:\n\
         1. The cache key is incorrect, or the original changeMode request did not create chunks\n\
         2. The cache has expired (10 minute TTL)\n\
         3. The MCP server was restarted and the file-based cache was cleared\n\n\
         Please re-run the original changeMode request to regenerate the chunks."
    )
}

/// The cache-miss text of `gemini-fetch-chunk` (a space after the first sentence, two-space
/// indents), kept verbatim (Q27).
fn fetch_cache_miss_text(key: &str) -> String {
    // Line continuations would eat the indents, so each line break is written out.
    format!(
        "❌ Cache miss: No chunks found for cache key \"{key}\". \n\n{}{}{}{}\n{}",
        "  Possible reasons:\n",
        "  1. The cache key is incorrect, Have you ran gemini-ask with changeMode enabled?\n",
        "  2. The cache has expired (10 minute TTL)\n",
        "  3. The MCP server was restarted and the file-based cache was cleared\n",
        "Please re-run the original changeMode request to regenerate the chunks."
    )
}

/// An integral, finite `f64` in `i64` range as an integer.
fn integral(x: f64) -> Option<i64> {
    let in_range = x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e18;
    in_range.then_some(x as i64)
}

/// How an index is shown in texts: the integer it was coerced to, else the value as given.
fn shown_index(raw: Option<&Value>, index: &ChunkIndex) -> String {
    match (index, raw) {
        (ChunkIndex::Index(i), _) => i.to_string(),
        (ChunkIndex::Invalid(text), _) => text.clone(),
        (ChunkIndex::NotGiven, Some(raw)) => value_text(raw),
        (ChunkIndex::NotGiven, None) => String::new(),
    }
}

/// A string as itself, anything else as compact JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `JSON.stringify` of a string.
fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}
