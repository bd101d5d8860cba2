//! Entry point: parses the command line (`--version`, `--help`, `doctor`), sets up logging and
//! signal handling, and runs the MCP server on stdio.

// The binary defines C's `main` itself (see `main` below); test builds keep the test harness's.
#![cfg_attr(not(test), no_main)]

mod backend;
mod call;
mod catalog;
mod chan;
mod changemode;
mod config;
mod decimal;
mod exec;
mod files;
mod js;
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
#[cfg(test)]
mod testutil;
mod threads;
mod tools;
mod validate;
mod vecmap;

use std::io::Write;
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::call::{Call, Ctx, Services};
use crate::config::Config;

/// The process entry point, called by the C runtime. Rust's own entry (`lang_start`) is left out
/// because its main-thread stack-guard set-up alone links glibc's scanf and strtod machinery (over
/// 100 KB of a static binary). What it does that matters here is done here too: closed standard
/// descriptors are reopened on /dev/null, SIGPIPE is ignored (writes to a closed pipe fail with
/// EPIPE), a panic ends the process with exit code 101, and `process::exit` flushes stdout. Without
/// its stack-overflow handler a stack overflow is a plain SIGSEGV instead of an abort with a message.
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    open_closed_standard_fds();
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let code = std::panic::catch_unwind(run).unwrap_or(101);
    std::process::exit(code.into())
}

/// Points each of stdin, stdout and stderr that is closed at /dev/null, so they never alias a file
/// opened later; aborts if that is impossible.
#[cfg(not(test))]
fn open_closed_standard_fds() {
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) and open(2) on a NUL-terminated path have no memory-safety
        // preconditions; open returns the lowest free descriptor, which is `fd`.
        unsafe {
            let closed = libc::fcntl(fd, libc::F_GETFD) == -1
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
            if closed && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0) == -1 {
                libc::abort();
            }
        }
    }
}

/// Runs the command line; returns the exit code.
#[cfg_attr(test, allow(dead_code))]
fn run() -> u8 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
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
    let config = Config::from_env(|name| std::env::var(name).ok());
    // SIGTERM, SIGINT and SIGHUP end the server loop. SIGCHLD is never registered here:
    // wait-timeout owns it.
    let signals = match Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(signals) => signals,
        Err(err) => {
            log::error!("Fatal error: could not watch signals: {err}");
            return 1;
        }
    };
    match server::run(config, signals) {
        Ok(()) => 0,
        Err(err) => {
            log::error!("Fatal error: {err}");
            1
        }
    }
}

/// `gemini-relay doctor`: the gemini-doctor report on stdout; exit 0 when the verdict is
/// "System Ready", 1 otherwise.
fn doctor() -> u8 {
    logging::init();
    let config = Config::from_env(|name| std::env::var(name).ok());
    let services = Services::new(config);
    let call = Arc::new(Call::new("gemini-doctor", None, None));
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
