//! The command line: `--version`, `--help`, `doctor`, and serving MCP on stdio (logging and signal
//! set-up, exit codes).

use std::io::{self, Write};
use std::process::ExitCode;
use std::thread;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::call::{Call, Ctx, Services};
use crate::config::{self, Config};
use crate::{logging, server, stdio, tools};

/// Runs the command line (without the program name); returns the exit code.
pub fn main(args: Vec<String>) -> ExitCode {
    ExitCode::from(run(&args))
}

fn run(args: &[String]) -> u8 {
    match args {
        [] => serve(),
        [cmd] if cmd == "doctor" => doctor(),
        [flag] if flag == "--version" || flag == "-V" => {
            write_stdout(&format!("gemini-relay {}\n", env!("CARGO_PKG_VERSION")));
            0
        }
        [flag] if flag == "--help" || flag == "-h" => {
            write_stdout(&usage());
            0
        }
        [other, ..] => {
            let _ = writeln!(
                std::io::stderr(),
                "gemini-relay: unknown argument '{other}' (try --help)"
            );
            2
        }
    }
}

fn serve() -> u8 {
    logging::init();
    log::debug!("init gemini-relay");
    let config = Config::from_process_env();
    match start(config) {
        Ok(()) => 0,
        Err(err) => {
            log::error!("Fatal error: {err}");
            1
        }
    }
}

/// Starts the signal watcher and the stdio transport, then serves until the end.
fn start(config: Config) -> io::Result<()> {
    // SIGTERM, SIGINT and SIGHUP end the server loop. SIGCHLD is never registered here:
    // wait-timeout owns it.
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|err| io::Error::new(err.kind(), format!("could not watch signals: {err}")))?;
    let (signal_tx, signal_rx) = crossbeam_channel::bounded(1);
    thread::Builder::new().name("signals".into()).spawn(move || {
        for _ in signals.forever() {
            let _ = signal_tx.try_send(());
        }
    })?;
    let transport = stdio::start(config.max_message_bytes)?;
    server::run(config, transport, signal_rx)
}

/// `gemini-relay doctor`: the gemini-doctor report on stdout; exit 0 when the verdict is
/// "System Ready", 1 otherwise.
fn doctor() -> u8 {
    logging::init();
    let services = Services::new(Config::from_process_env());
    let call = Call::new("gemini-doctor", None);
    let (ready, report) = tools::doctor::run(&Ctx { services: &services, call: &call });
    write_stdout(&format!("{report}\n"));
    if ready { 0 } else { 1 }
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
