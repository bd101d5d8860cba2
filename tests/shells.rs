//! What a user pastes into a shell other than sh, run in that shell: these tests need the shell
//! installed, so they build only with the feature `shell-tests` (`make test-shells`).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::protocol::relay_config;
use crate::util;

#[test]
fn config_claude_pastes_into_an_interactive_zsh_and_its_export_runs() {
    let binary = util::relay_bin();
    let path = std::fs::canonicalize(&binary).unwrap().to_str().unwrap().to_string();
    for (timeout, expected) in [("2000", "120120000"), ("60", "")] {
        let out = relay_config(
            &binary,
            "claude",
            &[("GEMINI_MCP_TIMEOUT", timeout), ("AGY_CLI_PATH", "/opt/it's here/agy")],
        );
        let snippet = String::from_utf8(out.stdout).unwrap();
        // What a person pastes: a stand-in for claude, the snippet, then a look at the result.
        let input = format!(
            "claude() {{ for arg in \"$@\"; do print -rn -- \"$arg\"; print -rn -- '|'; done; print; }}\n\
             {snippet}print -r -- \"T=$MCP_TOOL_TIMEOUT\"\n"
        );
        let mut zsh = Command::new("zsh")
            .args(["-f", "-i"])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("zsh is needed for this test (apt-get install zsh)");
        zsh.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = zsh.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("zsh:"), "zsh complained:\n{snippet}\n{stderr}");
        assert_eq!(
            stdout,
            format!(
                "mcp|add|--scope|user|gemini-relay|-e|AGY_CLI_PATH=/opt/it's here/agy|-e|\
                 GEMINI_MCP_TIMEOUT={timeout}|--|{path}|\nT={expected}\n"
            ),
            "{snippet}"
        );
    }
}
