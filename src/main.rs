//! The `gemini-relay` binary: hands the command line to `cli::main`.

use std::process::ExitCode;

fn main() -> ExitCode {
    gemini_relay::cli::main(std::env::args_os().skip(1).collect())
}
