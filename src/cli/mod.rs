//! The command line: `--version`, `--help`, `doctor`, `config <host>` (printed, or written into the
//! host's file), and serving MCP on stdio (logging and the shutdown watch, exit codes).

pub mod hostfile;
pub mod hosts;
pub mod winhosts;

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use crate::call::{Call, Ctx, Services};
use crate::config::{self, Config};
use crate::protocol::stdio;
use crate::{logging, server, shutdown, tools};
use hostfile::Edit;
use hosts::Host;

/// Runs the command line (without the program name, whose path is never looked at); returns the
/// exit code.
pub fn main(args: Vec<OsString>) -> ExitCode {
    ExitCode::from(run(&args))
}

fn run(args: &[OsString]) -> u8 {
    let words: Vec<Option<&str>> = args.iter().map(|arg| arg.to_str()).collect();
    match words[..] {
        [] => serve(),
        [Some("doctor")] => doctor(),
        [Some("config"), ..] => host_config(&args[1..]),
        [Some("--version" | "-V")] => {
            // build.rs sets GEMINI_RELAY_BUILD to "<target>" or "<target>, <commit>".
            let version = env!("CARGO_PKG_VERSION");
            write_stdout(&format!("gemini-relay {version} ({})\n", env!("GEMINI_RELAY_BUILD")));
            0
        }
        [Some("--help" | "-h")] => {
            write_stdout(&usage());
            0
        }
        _ => {
            let shown = shown(&args[0]);
            write_stderr(&format!("gemini-relay: unknown argument '{shown}' (try --help)"));
            2
        }
    }
}

/// A command-line word as one printable line: control characters and bytes that are not UTF-8
/// escaped (`\n`, `\u{1b}`, `\xFF`).
fn shown(arg: &OsStr) -> String {
    let debug = format!("{arg:?}");
    debug
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .map_or_else(|| debug.clone(), str::to_string)
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

/// Starts the shutdown watch and the stdio transport, then serves until the end.
fn start(config: Config) -> io::Result<()> {
    let signal_rx = shutdown::watch()?;
    let transport = stdio::start(config.max_message_bytes)?;
    let services = Arc::new(Services::new(config));
    let children = services.clone();
    shutdown::abort_on_panic(move || children.runs.kill_all());
    server::run(services, transport, signal_rx)
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

/// `gemini-relay config <host> [--write | --remove] [--project]`: the host's configuration on
/// stdout, with where it goes, what its timeout means and any variable left out on stderr; or, with
/// `--write` or `--remove`, the relay's entry merged into or taken out of the host's file (the
/// user's, or the project's with `--project`), saying what was done on stderr. Exit 2 for a
/// missing or unknown host, a bad option or a file left alone on purpose; 1 when the binary's own
/// path cannot be written or the file cannot be read or written.
fn host_config(args: &[OsString]) -> u8 {
    let known = hosts::known_hosts();
    let usage = || {
        write_stderr(&format!(
            "gemini-relay: usage: gemini-relay config <host> [--write | --remove] [--project] \
             ({known})"
        ));
        2
    };
    let (mut host, mut edit, mut project) = (None, None, false);
    for arg in args {
        match arg.to_str() {
            Some("--write") if edit.is_none() => edit = Some(Edit::Write),
            Some("--remove") if edit.is_none() => edit = Some(Edit::Remove),
            Some("--project") if !project => project = true,
            Some(word) if word.starts_with("--") => return usage(),
            _ if host.is_some() => return usage(),
            name => match name.and_then(Host::parse) {
                Some(found) => host = Some(found),
                None => {
                    let name = shown(arg);
                    write_stderr(&format!(
                        "gemini-relay: unknown host '{name}' (known hosts: {known})"
                    ));
                    return 2;
                }
            },
        }
    }
    let (Some(host), false) = (host, project && edit.is_none()) else {
        return usage();
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
            shown(binary.as_os_str())
        ));
        return 1;
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(err) => {
            write_stderr(&format!("gemini-relay: cannot read the current directory: {err}"));
            return 1;
        }
    };
    // Started by the npm launcher, the host is given the launcher's command, not the binary in
    // npx's cache.
    let (binary, args) = match std::env::var_os("GEMINI_RELAY_LAUNCHER") {
        Some(launcher) if launcher == "npx" => (hosts::NPX.0, &hosts::NPX.1[..]),
        _ => (binary, &[][..]),
    };
    let snippet = match hosts::render(host, binary, args, &cwd, &Config::from_process_env()) {
        Ok(snippet) => snippet,
        Err(err) => {
            write_stderr(&format!("gemini-relay: {err}"));
            return 1;
        }
    };
    for warning in &snippet.warnings {
        write_stderr(&format!("gemini-relay: warning: {warning}"));
    }
    if let Some(edit) = edit {
        let path = match hosts::target_path(host, project, &cwd) {
            Some(Ok(path)) => path,
            Some(Err(err)) => {
                write_stderr(&format!("gemini-relay: {err}"));
                return 1;
            }
            None => {
                write_stderr(&format!(
                    "gemini-relay: {} has no project file; run without --project",
                    host.title()
                ));
                return 2;
            }
        };
        return match hostfile::apply(&path, &snippet.document, edit) {
            Ok(done) => {
                write_stderr(&format!("gemini-relay: {done}"));
                0
            }
            Err(hostfile::Refusal(code, why)) => {
                write_stderr(&format!("gemini-relay: {why}"));
                code
            }
        };
    }
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
         gemini-relay config <host>  print a ready-to-paste MCP configuration for <host>: this\n    \
         \x20                           binary's path, the settings below that are set, and the\n    \
         \x20                           host's tool timeout raised to the deadline plus 2\n    \
         \x20                           minutes; <host> is one of\n\
         {}\n    \
         gemini-relay config <host> --write [--project]\n    \
         \x20                           merge that entry into the host's own file (the project's\n    \
         \x20                           with --project), after copying the file to <file>.bak; a\n    \
         \x20                           run that changes nothing writes nothing\n    \
         gemini-relay config <host> --remove [--project]\n    \
         \x20                           take the relay's entry out of that file again (also with\n    \
         \x20                           a .bak); exit 2 leaves a file it cannot edit safely (not\n    \
         \x20                           parsing, comments inside JSON, a link, a directory, read-\n    \
         \x20                           only) byte-identical, with the reason on stderr; exit 1\n    \
         \x20                           when a file cannot be read or written\n    \
         gemini-relay --version      print the version\n    \
         gemini-relay --help         print this help\n\n\
         ENVIRONMENT (name and default, what it does, the values it takes):\n",
        env!("CARGO_PKG_VERSION"),
        wrap(&hosts::known_hosts(), 60)
            .iter()
            .map(|line| format!("                                {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for var in config::VARS {
        let plain = |markdown: &str| markdown.replace('`', "");
        text.push_str(&format!("    {}  (default: {})\n", var.name, plain(&var.default_text())));
        let body = format!("{} Values: {}.", plain(var.help), plain(&var.values_text()));
        for line in wrap(&body, 92) {
            text.push_str(&format!("        {line}\n"));
        }
    }
    text
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
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
