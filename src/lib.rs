//! gemini-relay as a library: the MCP server and its parts. The binary (`src/main.rs`) is a thin
//! wrapper around `cli::main`; the library exists so that the fuzz targets in `tests/fuzz/` can reach
//! the parsers of untrusted input.

mod backend;
mod call;
mod catalog;
mod chan;
mod changemode;
pub mod cli;
mod config;
mod exec;
mod files;
mod js;
mod jsonrpc;
mod logging;
mod mcp;
mod progress;
mod prompts;
mod queue;
mod redact;
mod server;
mod stdio;
#[cfg(test)]
mod testutil;
mod threads;
mod tools;
mod validate;
