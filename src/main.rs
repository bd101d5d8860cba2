//! Entry point: parses the command line (`--version`, `--help`, `doctor`), sets up logging and
//! signal handling, and runs the MCP server on stdio.

mod backend;
mod call;
mod catalog;
mod changemode;
mod config;
mod decimal;
mod exec;
mod files;
mod jsonrpc;
mod logging;
mod mcp;
mod progress;
mod prompts;
mod queue;
mod redact;
mod server;
mod sort;
mod stdio;
mod threads;
mod tools;
mod validate;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use crossbeam_channel::{Receiver, unbounded};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::call::{Call, Ctx, Services};
use crate::config::Config;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => serve(),
        [cmd] if cmd == "doctor" => doctor(),
        [flag] if flag == "--version" || flag == "-V" => {
            write_stdout(&format!("gemini-relay {}\n", env!("CARGO_PKG_VERSION")));
            ExitCode::SUCCESS
        }
        [flag] if flag == "--help" || flag == "-h" => {
            write_stdout(&usage());
            ExitCode::SUCCESS
        }
        [other, ..] => {
            let _ = writeln!(
                std::io::stderr(),
                "gemini-relay: unknown argument '{other}' (try --help)"
            );
            ExitCode::from(2)
        }
    }
}

fn serve() -> ExitCode {
    logging::init();
    log::debug!("init gemini-relay");
    let config = Config::from_env(|name| std::env::var(name).ok());
    let signals = match watch_signals() {
        Ok(signals) => signals,
        Err(err) => {
            log::error!("Fatal error: could not watch signals: {err}");
            return ExitCode::from(1);
        }
    };
    match server::run(config, signals) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            log::error!("Fatal error: {err}");
            ExitCode::from(1)
        }
    }
}

/// `gemini-relay doctor`: the gemini-doctor report on stdout; exit 0 when the verdict is
/// "System Ready", 1 otherwise.
fn doctor() -> ExitCode {
    logging::init();
    let config = Config::from_env(|name| std::env::var(name).ok());
    let services = Services::new(config);
    let call = Arc::new(Call::new("gemini-doctor", None, None));
    let (ready, report) = tools::doctor::run(&Ctx { services: &services, call: &call });
    write_stdout(&format!("{report}\n"));
    if ready { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// SIGTERM, SIGINT and SIGHUP become events for the server loop. SIGCHLD is never registered here:
/// wait-timeout owns it.
fn watch_signals() -> std::io::Result<Receiver<i32>> {
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    let (tx, rx) = unbounded();
    threads::spawn(
        "signals".into(),
        Box::new(move || {
            for signal in signals.forever() {
                if tx.send(signal).is_err() {
                    return;
                }
            }
        }),
    )?;
    Ok(rx)
}

fn usage() -> String {
    let mut text = format!(
        "gemini-relay {}\n\
         MCP server (stdio) that puts the Antigravity CLI (agy) and the legacy Gemini CLI behind the\n\
         Model Context Protocol.\n\n\
         USAGE:\n    gemini-relay            serve MCP on stdin/stdout\n    \
         gemini-relay doctor     print the gemini-doctor report; exit 0 when ready, 1 otherwise\n    \
         gemini-relay --version  print the version\n    \
         gemini-relay --help     print this help\n\n\
         ENVIRONMENT (name, default, meaning):\n",
        env!("CARGO_PKG_VERSION")
    );
    for var in config::ENV_VARS {
        text.push_str(&format!("    {:<32} {}\n        {}\n", var.name, var.default, var.meaning));
    }
    text
}

/// The command-line modes print to stdout directly; the server never does (only its writer thread).
#[allow(clippy::print_stdout)]
fn write_stdout(text: &str) {
    print!("{text}");
}
