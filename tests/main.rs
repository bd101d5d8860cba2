//! Integration tests: every test spawns the real `gemini-relay` binary against the fake CLI of
//! `fixtures/fake_cli.rs` and speaks JSON-RPC to it over stdio, with a deadline on every read.

// The harness spawns the binary under test; the one-door rule is for the product.
#![allow(clippy::disallowed_methods)]

mod util;

// Transport, JSON-RPC strictness, lifecycle of both protocol eras.
mod protocol;

// The design card: worker pool, backpressure, duplicate ids, nothing outliving its call.
mod core;

// The execution engine: children, failures, timeouts, cancellation, shutdown, concurrency.
mod engine;

// The MCP tasks extension.
mod tasks;

// The tasks of the 2025-11-25 revision, and the JSON schema their answers are checked against.
mod mcp_schema;
mod tasks2025;

// The agy backend and the model tools.
mod agy;

// agy runs side by side: the cap across relays, one turn per conversation, one editor per project.
mod parallel;

// The real CLIs' failure modes: error lines, quotas and the fallback model, cut-off answers, denied
// approvals, another answering model, agy updated on disk, the default model.
mod failures;

// agy's print-mode endings: no exit after the answer, background tasks, a quota only its log tells.
mod endings;

// changeMode, the chunk cache and gemini-fetch-chunk.
mod changemode;

// `config <host>` for every host, and `--write`/`--remove` against real files.
mod hostconfig;

// Attachments: what each CLI is shown, the notice, every refusal.
mod attachments;

// `@` references and files against a hostile project: the gemini grammar, FIFOs, symlinks, budget.
mod files;

// What a user pastes into a shell other than sh (zsh), run in it: needs that shell, so it builds
// only with the feature `shell-tests` (`make test-shells`), never in `make test`.
#[cfg(all(unix, feature = "shell-tests"))]
mod shells;

// What only Windows has: the CLI search, caller text with no cmd.exe between, the command-line
// limit, Windows path forms, links out of the project, Job Objects.
#[cfg(windows)]
mod windows;
