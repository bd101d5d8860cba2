//! The wire: stdin and stdout (`stdio`), JSON-RPC messages and errors (`jsonrpc`), MCP's versions,
//! eras, capabilities and the tasks extension's checks (`mcp`), and batch bookkeeping (`batch`).

pub mod batch;
pub mod jsonrpc;
pub mod mcp;
pub mod stdio;
