//! The facade the fuzz targets in `tests/fuzz/` call: thin wrappers around the parsers of untrusted
//! input, in plain public types. It exists only for those targets; the relay never uses it, and the
//! rest of the crate stays private. When a parser's signature changes, only this file adapts.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use crate::backend::agy::output;
use crate::backend::options::RunOptions;
use crate::changemode::{self, cache::ChunkCache, chunk, parse, render};
use crate::files::{self, glob, scan};
use crate::protocol::jsonrpc::{self, Message, RequestId, Response};
use crate::protocol::stdio::{self, Inbound};

/// What `jsonrpc::classify` made of one element of the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Classified {
    /// A request, with its id as the JSON value it is echoed back as.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response from the client, which the relay ignores.
    Response,
    /// Refused: the error response the relay writes, serialized as on the wire.
    Refused(String),
}

/// Classifies one parsed value as the event loop does (a whole line, or one element of a batch).
pub fn classify(value: Value) -> Classified {
    match jsonrpc::classify(value) {
        Ok(Message::Request(request)) => Classified::Request {
            id: request.id.to_value(),
            method: request.method,
            params: request.params,
        },
        Ok(Message::Notification(note)) => {
            Classified::Notification { method: note.method, params: note.params }
        }
        Ok(Message::Response) => Classified::Response,
        Err(response) => Classified::Refused(wire(response)),
    }
}

/// The line that answers the request with id `id` with `result`, as written to stdout (without the
/// newline); `None` when `id` is not a valid request id.
pub fn respond(id: &Value, result: Value) -> Option<String> {
    let id = RequestId::from_json(id)?;
    Some(wire(Response::ok(id, result)))
}

fn wire(response: Response) -> String {
    serde_json::to_string(&jsonrpc::Outgoing::from(response)).unwrap_or_default()
}

/// One line as the stdio reader hands it to the event loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Message(Value),
    Malformed,
    TooLarge,
}

/// Everything the stdio reader makes of `input` with the line limit `max`, in order.
pub fn read_lines(input: &[u8], max: usize) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut input = input;
    let read = stdio::read_loop(&mut input, max, |inbound| {
        lines.push(match inbound {
            Inbound::Message(value) => Line::Message(value),
            Inbound::Malformed => Line::Malformed,
            Inbound::TooLarge => Line::TooLarge,
        });
        true
    });
    // Reading from a byte slice cannot fail.
    read.expect("reading a byte slice");
    lines
}

/// One `@` token: the byte range from its `@` to its end, and the reference it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub span: Range<usize>,
    pub reference: String,
}

/// The tokens the jail checks (`@` anywhere, also inside words).
pub fn jail_tokens(prompt: &str) -> Vec<Token> {
    tokens(scan::jail_tokens(prompt))
}

/// The tokens inlining replaces (`@` at the start or after whitespace).
pub fn inline_tokens(prompt: &str) -> Vec<Token> {
    tokens(scan::inline_tokens(prompt))
}

fn tokens(found: Vec<scan::Token<'_>>) -> Vec<Token> {
    found
        .into_iter()
        .map(|it| Token { span: it.at..it.end, reference: it.reference.to_string() })
        .collect()
}

/// A compiled `@` glob.
pub struct Glob(glob::Glob);

impl Glob {
    /// Compiles glob text (after `glob_text`); any text compiles.
    pub fn compile(text: &str) -> Glob {
        Glob(glob::Glob::compile(text))
    }

    /// Whether the whole root-relative `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        self.0.matches(path)
    }
}

/// Whether a reference is a glob (contains `*` or `?`).
pub fn is_glob(reference: &str) -> bool {
    glob::is_glob(reference)
}

/// Whether glob text is too long or has too many stars to be compiled by the relay.
pub fn is_oversized_glob(text: &str) -> bool {
    glob::is_oversized(text)
}

/// The jail check of every `@` token of `prompt` against the project root `root` (the agy path).
pub fn check_references(prompt: &str, root: &Path) -> Result<(), String> {
    files::check_file_references(prompt, root)
}

/// The jail check, then inlining of the `@` tokens of `prompt` (never cancelled).
pub fn inline_references(prompt: &str, root: &Path) -> Result<String, String> {
    let stop = AtomicBool::new(false);
    files::inline_file_references(prompt, root, &stop).map(|it| it.into_owned())
}

// The changeMode types are the relay's own, handed out as they are (their fields are public), so the
// targets check the real values and no copy of them can drift.
pub use crate::changemode::chunk::Chunk;
pub use crate::changemode::parse::Edit;

/// The chunk budget the relay uses.
pub const MAX_CHUNK_CHARS: usize = chunk::MAX_CHUNK_CHARS;

/// The edits of a changeMode model reply.
pub fn parse_edits(reply: &str) -> Vec<Edit> {
    parse::parse_change_mode_output(reply)
}

/// The edits split into chunks of at most `max` estimated characters.
pub fn chunk_edits(edits: &[Edit], max: usize) -> Vec<Chunk> {
    chunk::chunk_change_mode_edits(edits.to_vec(), max)
}

/// The estimated size of one edit, as the chunker counts it.
pub fn edit_size(edit: &Edit) -> usize {
    chunk::edit_size(edit)
}

/// The validation errors of `edits` (empty when all are valid).
pub fn validate_edits(edits: &[Edit]) -> Vec<String> {
    render::validate_change_mode_edits(edits)
}

/// One chunk rendered for the client, with the continuation when `cache_key` is given.
pub fn render_chunk(chunk: &Chunk, cache_key: Option<&str>) -> String {
    let info =
        render::ChunkInfo { current: chunk.chunk_index, total: chunk.total_chunks, cache_key };
    render::format_change_mode_response(&chunk.edits, Some(info))
}

/// The per-file summary of `edits`.
pub fn summarize_edits(edits: &[Edit], partial_view: bool) -> String {
    render::summarize_change_mode_edits(edits, partial_view)
}

/// The whole changeMode flow for a fresh reply, against a fresh cache: the text the tool returns.
pub fn process_reply(reply: &str, prompt: Option<&str>) -> String {
    changemode::process_change_mode_output(&ChunkCache::new(), reply, None, None, prompt)
}

/// The result object of an agy run's stdout (`stream`: stream-json lines, else one JSON document).
pub fn agy_result(stdout: &str, stream: bool) -> Option<Value> {
    output::agy_result(stdout, stream)
}

/// The error text, conversation id and notices a result object carries.
pub fn agy_result_fields(result: &Value) -> (Option<String>, Option<String>, Vec<String>) {
    (
        output::agy_error_text(result),
        output::agy_conversation_id(result),
        output::agy_result_notices(result),
    )
}

/// The reply text of agy's JSON output (one document, or JSON lines).
pub fn agy_json_reply(text: &str, prefer_structured: bool, include_usage: bool) -> Option<String> {
    output::parse_agy_json_response(text, prefer_structured, include_usage)
}

/// The direct reply of a successful run, for a call with or without a JSON schema and usage line.
pub fn agy_direct_reply(
    stdout: &str,
    result: Option<Value>,
    via_stdin: bool,
    json_output: bool,
    json_schema: Option<Value>,
    include_usage: bool,
) -> Option<String> {
    let opts = RunOptions { json_schema, include_usage, ..RunOptions::default() };
    output::direct_reply(stdout, result, via_stdin, json_output, &opts)
}

/// The `(id, label)` pairs of `agy models` output.
pub fn agy_models(stdout: &str) -> Result<Vec<(String, String)>, String> {
    output::parse_models(stdout)
}

/// `script` output made readable.
pub fn strip_script_noise(text: &str) -> String {
    output::strip_script_noise(text)
}
