//! gemini-relay as a library: the MCP server and its parts. The binary (`src/main.rs`) is a thin
//! wrapper around `cli::main`; the library exists so that the fuzz targets in `tests/fuzz/` can reach
//! the parsers of untrusted input.

// `unsafe` only where the OS leaves no safe door, allowed per site with a `// SAFETY:` comment.
#![deny(unsafe_code)]

mod backend;
mod batch;
mod call;
mod catalog;
mod changemode;
pub mod cli;
mod config;
mod exec;
mod files;
#[doc(hidden)]
pub mod fuzz;
mod hosts;
mod js;
mod jsonrpc;
mod logging;
mod mcp;
mod pool;
mod preview;
mod progress;
mod prompts;
mod redact;
mod server;
mod shutdown;
mod stdio;
mod tasks;
#[cfg(test)]
mod testutil;
mod tools;
mod validate;
mod winhosts;
