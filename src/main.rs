//! Entry point: parses the command line, sets up logging and runs the MCP server on stdio.

#[allow(dead_code)] // wired in by the integrator
mod catalog;
#[allow(dead_code)] // wired in by the integrator
mod prompts;
#[allow(dead_code)] // wired in by the integrator
mod redact;
#[allow(dead_code)] // wired in by the integrator
mod validate;

fn main() {}
