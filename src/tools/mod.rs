//! The MCP tools: one module per tool, each owning its argument handling and output texts.

pub mod brainstorm;
pub mod doctor;
pub mod image;
pub mod models;
pub mod plan;
pub mod timeout_test;
