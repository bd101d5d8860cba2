//! Entry point: parses the command line, sets up logging and runs the MCP server on stdio.

fn main() {}
