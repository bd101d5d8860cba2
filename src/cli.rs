//! The command line: `--version`, `--help`, `doctor`, `config <host>`, and serving MCP on stdio
//! (logging and signal set-up, exit codes).

use std::io::{self, Write};
use std::process::ExitCode;
use std::thread;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::call::{Call, Ctx, Services};
use crate::config::{self, Config};
use crate::hosts::{self, Host};
use crate::{logging, server, stdio, tools};

/// Runs the command line (without the program name); returns the exit code.
pub fn main(args: Vec<String>) -> ExitCode {
    ExitCode::from(run(&args))
}

fn run(args: &[String]) -> u8 {
    match args {
        [] => serve(),
        [cmd] if cmd == "doctor" => doctor(),
        [cmd, rest @ ..] if cmd == "config" => host_config(rest),
        [flag] if flag == "--version" || flag == "-V" => {
            // build.rs sets GEMINI_RELAY_BUILD to "<target>" or "<target>, <commit>".
            let version = env!("CARGO_PKG_VERSION");
            write_stdout(&format!("gemini-relay {version} ({})\n", env!("GEMINI_RELAY_BUILD")));
            0
        }
        [flag] if flag == "--help" || flag == "-h" => {
            write_stdout(&usage());
            0
        }
        [other, ..] => {
            write_stderr(&format!("gemini-relay: unknown argument '{other}' (try --help)"));
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
    let call = Call::new("gemini-doctor", services.backends.active(), None);
    let (ready, report) = tools::doctor::run(&Ctx { services: &services, call: &call });
    write_stdout(&format!("{report}\n"));
    if ready { 0 } else { 1 }
}

/// `gemini-relay config <host>`: the host's configuration on stdout and, for JSON, where it goes on
/// stderr; exit 2 for a missing or unknown host, 1 when the binary's own path cannot be written.
fn host_config(args: &[String]) -> u8 {
    let host = match args {
        [name] => match Host::parse(name) {
            Some(host) => host,
            None => {
                let known = hosts::known_hosts();
                write_stderr(&format!(
                    "gemini-relay: unknown host '{name}' (known hosts: {known})"
                ));
                return 2;
            }
        },
        _ => {
            let known = hosts::known_hosts();
            write_stderr(&format!("gemini-relay: usage: gemini-relay config <host> ({known})"));
            return 2;
        }
    };
    // Warnings about invalid values go to stderr, as when serving.
    logging::init();
    let binary = match std::env::current_exe().and_then(std::fs::canonicalize) {
        Ok(binary) => binary,
        Err(err) => {
            write_stderr(&format!("gemini-relay: cannot find the running binary: {err}"));
            return 1;
        }
    };
    let Some(binary) = binary.to_str() else {
        write_stderr(&format!(
            "gemini-relay: the binary's path is not UTF-8, so no host can be configured with it: {}",
            binary.display()
        ));
        return 1;
    };
    let snippet = hosts::render(host, binary, &Config::from_process_env());
    if !snippet.note.is_empty() {
        let _ = std::io::stderr().write_all(snippet.note.as_bytes());
    }
    write_stdout(&snippet.text);
    0
}

fn usage() -> String {
    let mut text = format!(
        "gemini-relay {}\n\
         MCP server (stdio) that puts the Antigravity CLI (agy) and the legacy Gemini CLI behind the\n\
         Model Context Protocol.\n\n\
         USAGE:\n    gemini-relay                serve MCP on stdin/stdout\n    \
         gemini-relay doctor         print the gemini-doctor report; exit 0 when ready, 1 otherwise\n    \
         gemini-relay config <host>  print a ready-to-paste MCP configuration for <host>, one of\n    \
         \x20                           {}: this binary's path, the settings\n    \
         \x20                           below that are set, and the host's tool timeout raised to the\n    \
         \x20                           deadline plus 2 minutes\n    \
         gemini-relay --version      print the version\n    \
         gemini-relay --help         print this help\n\n\
         ENVIRONMENT (name, default, meaning):\n",
        env!("CARGO_PKG_VERSION"),
        hosts::known_hosts()
    );
    for var in config::ENV_VARS {
        text.push_str(&format!("    {:<32} {}\n        {}\n", var.name, var.default, var.meaning));
    }
    text
}

/// One line on stderr (a command-line error).
fn write_stderr(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The command-line modes print to stdout directly; the server never does (only its writer thread).
#[allow(clippy::print_stdout)]
fn write_stdout(text: &str) {
    print!("{text}");
}
