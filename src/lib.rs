//! gemini-relay as a library: the MCP server and its parts. The binary (`src/main.rs`) is a thin
//! wrapper around `cli::main`; the library exists so that the fuzz targets in `tests/fuzz/` can reach
//! the parsers of untrusted input.

// `unsafe` only where the OS leaves no safe door, allowed per site with a `// SAFETY:` comment.
#![deny(unsafe_code)]

mod backend;
mod call;
mod changemode;
pub mod cli;
mod config;
mod controls;
mod exec;
mod files;
#[doc(hidden)]
pub mod fuzz;
mod js;
mod logging;
mod protocol;
mod redact;
mod server;
mod shutdown;
mod state;
#[cfg(test)]
mod testutil;
mod tools;
