//! Backends: argv construction and output parsing for the CLIs the relay wraps (never spawning).

pub mod agy;
