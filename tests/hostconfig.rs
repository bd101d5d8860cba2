//! `gemini-relay config <host>` for the hosts added with VS Code, and `--write`/`--remove`
//! [`--project`] against real files: the binary runs with `HOME`, `USERPROFILE`,
//! `XDG_CONFIG_HOME` and `APPDATA` pointed into a temporary directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// A temporary home: `home/` is `HOME` and `USERPROFILE`, `home/.config` is `XDG_CONFIG_HOME`
/// and `APPDATA`; `project/` is where `config` runs.
struct Home {
    dir: TempDir,
}

impl Home {
    fn new(name: &str) -> Home {
        let dir = TempDir::new(name);
        fs::create_dir_all(dir.join("home/.config")).unwrap();
        fs::create_dir_all(dir.join("project")).unwrap();
        Home { dir }
    }

    fn home(&self, rel: &str) -> PathBuf {
        self.dir.join("home").join(rel)
    }

    /// `gemini-relay config <args>` in this home, with `env` added.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let home = self.dir.join("home");
        util::relay_command()
            .arg("config")
            .args(args)
            .current_dir(self.dir.join("project"))
            .env_clear()
            .env("HOME", &home)
            .env("USERPROFILE", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("APPDATA", home.join(".config"))
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    /// Runs `config <args>` and expects exit `code`; returns its stderr.
    fn expect(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args, &[]);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(code), "config {args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {:?}", out.stdout);
        stderr
    }
}

fn parse(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

fn keys(value: &Value) -> Vec<&str> {
    value.as_object().unwrap().keys().map(String::as_str).collect()
}

fn backup(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".bak");
    PathBuf::from(name)
}

/// Zed's user settings under `home` (`%APPDATA%\Zed` on Windows).
fn zed_settings(home: &Home) -> PathBuf {
    home.home(if cfg!(windows) { ".config/Zed/settings.json" } else { ".config/zed/settings.json" })
}

/// The relay's path as `config` writes it (on Windows without the `\\?\` of a canonical path).
fn own_binary() -> String {
    let path = fs::canonicalize(util::relay_bin()).unwrap().to_str().unwrap().to_string();
    path.strip_prefix(r"\\?\").map_or(path.clone(), str::to_string)
}

#[test]
fn new_hosts_print_a_document_that_parses_with_their_entry() {
    let home = Home::new("hostconfig-print");
    let binary = own_binary();
    let cases = [
        ("vscode", "servers", Some("stdio"), "mcp.json"),
        ("copilot", "mcpServers", Some("local"), "mcp-config.json"),
        ("zed", "context_servers", None, "settings.json"),
        ("windsurf", "mcpServers", None, "mcp_config.json"),
        ("claude-desktop", "mcpServers", None, "claude_desktop_config.json"),
    ];
    for (host, key, kind, file) in cases {
        let out = home.run(&[host], &[("GEMINI_MCP_MODEL", "pro")]);
        assert!(out.status.success(), "{host}: {out:?}");
        let document: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(keys(&document), [key], "{host}");
        let entry = &document[key]["gemini-relay"];
        assert_eq!(entry["command"], binary, "{host}");
        assert!(entry.get("args").is_none(), "{host}: {entry}");
        assert_eq!(entry["env"], json!({"GEMINI_MCP_MODEL": "pro"}), "{host}");
        assert_eq!(entry.get("type").and_then(Value::as_str), kind, "{host}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(file), "{host}: {stderr}");
    }
}

#[test]
fn started_by_npx_every_host_prints_and_writes_npx() {
    let home = Home::new("hostconfig-npx");
    let npx = [("GEMINI_RELAY_LAUNCHER", "npx")];
    for host in ["gemini", "qwen", "cursor", "agy", "vscode", "copilot", "zed", "windsurf"] {
        let out = home.run(&[host], &npx);
        let document: Value = serde_json::from_slice(&out.stdout).unwrap();
        let entry = &document.as_object().unwrap().values().next().unwrap()["gemini-relay"];
        assert_eq!(entry["command"], "npx", "{host}");
        assert_eq!(entry["args"], json!(["-y", "gemini-relay"]), "{host}");
    }
    let out = home.run(&["claude-desktop"], &npx);
    let document: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(document["mcpServers"]["gemini-relay"]["command"], "npx");
    let out = home.run(&["opencode"], &npx);
    let document: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(document["mcp"]["gemini-relay"]["command"], json!(["npx", "-y", "gemini-relay"]));
    // Written through npx too, Codex's TOML included.
    let out = home.run(&["cursor", "--write"], &npx);
    assert!(out.status.success(), "{out:?}");
    let written = parse(&home.home(".cursor/mcp.json"));
    assert_eq!(written["mcpServers"]["gemini-relay"]["command"], "npx");
    let out = home.run(&["codex", "--write"], &npx);
    assert!(out.status.success(), "{out:?}");
    let toml = fs::read_to_string(home.home(".codex/config.toml")).unwrap();
    assert!(toml.contains("command = \"npx\"\nargs = [\"-y\", \"gemini-relay\"]\n"), "{toml}");
}

#[test]
fn write_creates_a_missing_file_and_a_second_write_changes_nothing() {
    let home = Home::new("hostconfig-missing");
    let file = home.home(".copilot/mcp-config.json");
    let stderr = home.expect(&["copilot", "--write"], 0);
    assert!(stderr.contains("created"), "{stderr}");
    let written = parse(&file);
    assert_eq!(written["mcpServers"]["gemini-relay"]["command"], own_binary());
    assert_eq!(written["mcpServers"]["gemini-relay"]["tools"], json!(["*"]));
    assert!(!backup(&file).exists(), "nothing to back up");
    let before = (fs::read(&file).unwrap(), fs::metadata(&file).unwrap().modified().unwrap());
    let stderr = home.expect(&["copilot", "--write"], 0);
    assert!(
        stderr.contains("already has this gemini-relay entry; nothing was written"),
        "{stderr}"
    );
    let after = (fs::read(&file).unwrap(), fs::metadata(&file).unwrap().modified().unwrap());
    assert_eq!(before, after);
    assert!(!backup(&file).exists());
    let names: Vec<_> =
        fs::read_dir(file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["mcp-config.json"], "no temporary file is left");
}

#[test]
fn write_keeps_other_servers_and_settings_in_their_order_and_remove_takes_only_the_relay() {
    let home = Home::new("hostconfig-merge");
    let original = "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"zeta\": {\"command\": \"z\"},\n        \"alpha\": {\"command\": \"a\", \"env\": {\"K\": \"v\"}}\n    },\n    \"after\": [1, 2]\n}\n";
    let file = home.home(".cursor/mcp.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, original).unwrap();
    let stderr = home.expect(&["cursor", "--write"], 0);
    assert!(stderr.contains(".bak"), "{stderr}");
    assert_eq!(fs::read_to_string(backup(&file)).unwrap(), original);
    let written = parse(&file);
    assert_eq!(keys(&written), ["theme", "mcpServers", "after"]);
    assert_eq!(keys(&written["mcpServers"]), ["zeta", "alpha", "gemini-relay"]);
    assert_eq!(written["mcpServers"]["alpha"], json!({"command": "a", "env": {"K": "v"}}));
    assert_eq!(written["after"], json!([1, 2]));
    assert!(fs::read_to_string(&file).unwrap().contains("\n    \"theme\""), "indentation kept");
    // A changed setting rewrites the entry in place.
    let out = home.run(&["cursor", "--write"], &[("GEMINI_MCP_MODEL", "pro")]);
    assert!(out.status.success(), "{out:?}");
    let rewritten = parse(&file);
    assert_eq!(keys(&rewritten["mcpServers"]), ["zeta", "alpha", "gemini-relay"]);
    assert_eq!(rewritten["mcpServers"]["gemini-relay"]["env"]["GEMINI_MCP_MODEL"], "pro");
    let stderr = home.expect(&["cursor", "--remove"], 0);
    assert!(stderr.contains("removed the gemini-relay entry"), "{stderr}");
    assert_eq!(parse(&file), serde_json::from_str::<Value>(original).unwrap());
    assert_eq!(keys(&parse(&file)["mcpServers"]), ["zeta", "alpha"]);
    let bytes = fs::read(&file).unwrap();
    let stderr = home.expect(&["cursor", "--remove"], 0);
    assert!(stderr.contains("has no gemini-relay entry; nothing was removed"), "{stderr}");
    assert_eq!(fs::read(&file).unwrap(), bytes);
}

#[test]
fn a_file_it_cannot_edit_safely_is_left_byte_identical_with_exit_2() {
    let home = Home::new("hostconfig-refused");
    let file = home.home(".codeium/windsurf/mcp_config.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let cases = [
        ("{\"mcpServers\": {", "does not parse as JSON"),
        ("{\n  \"mcpServers\": {}, // mine\n}\n", "has comments inside its JSON"),
        ("{\"a\": 1,}", "does not parse as JSON"),
        ("[1, 2]", "top level is not a JSON object"),
        ("{\"mcpServers\": []}", "\"mcpServers\" is not a JSON object"),
    ];
    for (text, reason) in cases {
        fs::write(&file, text).unwrap();
        for edit in ["--write", "--remove"] {
            let stderr = home.expect(&["windsurf", edit], 2);
            assert!(
                stderr.contains("was not changed") && stderr.contains(reason),
                "{text}: {stderr}"
            );
            assert_eq!(fs::read_to_string(&file).unwrap(), text);
            assert!(!backup(&file).exists());
        }
    }
    // A directory in the file's place.
    fs::remove_file(&file).unwrap();
    fs::create_dir(&file).unwrap();
    let stderr = home.expect(&["windsurf", "--write"], 2);
    assert!(stderr.contains("it is a directory"), "{stderr}");
    assert!(file.is_dir());
    // No project file for Windsurf.
    let stderr = home.expect(&["windsurf", "--write", "--project"], 2);
    assert!(stderr.contains("Windsurf has no project file"), "{stderr}");
}

#[test]
fn comments_before_the_json_are_kept_and_the_project_file_is_written_with_project() {
    let home = Home::new("hostconfig-jsonc");
    let file = zed_settings(&home);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let header = "// Zed settings\n//\n// See https://zed.dev/docs/configuring-zed\n";
    fs::write(&file, format!("{header}{{\n  \"vim_mode\": true\n}}\n")).unwrap();
    home.expect(&["zed", "--write"], 0);
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(&format!("{header}{{\n  \"vim_mode\": true,\n")), "{text}");
    let entry = &serde_json::from_str::<Value>(&text[header.len()..]).unwrap()["context_servers"]["gemini-relay"];
    assert_eq!(entry["timeout"], 600);
    home.expect(&["zed", "--remove"], 0);
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(header), "{text}");
    // --project: VS Code's .vscode/mcp.json in the directory config runs in.
    home.expect(&["vscode", "--write", "--project"], 0);
    let project = parse(&home.dir.join("project/.vscode/mcp.json"));
    assert_eq!(project["servers"]["gemini-relay"]["type"], "stdio");
    assert!(!home.home(".config/Code").exists(), "the user's file is left alone");
}

#[test]
fn codex_tables_are_written_rewritten_and_removed_keeping_the_rest() {
    let home = Home::new("hostconfig-codex");
    let file = home.home(".codex/config.toml");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other\" # keep\n\n# profiles below\n[profiles.fast]\nmodel = \"mini\"\n";
    fs::write(&file, original).unwrap();
    home.expect(&["codex", "--write"], 0);
    assert_eq!(fs::read_to_string(backup(&file)).unwrap(), original);
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(original), "{text}");
    let table = &text[original.len()..];
    assert!(table.starts_with("\n[mcp_servers.gemini-relay]\ncommand = "), "{text}");
    assert!(table.contains("tool_timeout_sec = 2820\n"), "{text}");
    home.expect(&["codex", "--write"], 0);
    assert_eq!(fs::read_to_string(&file).unwrap(), text, "nothing to change");
    // A new deadline rewrites the table where it is.
    let out = home.run(&["codex", "--write"], &[("GEMINI_MCP_TIMEOUT", "60")]);
    assert!(out.status.success(), "{out:?}");
    let rewritten = fs::read_to_string(&file).unwrap();
    assert!(rewritten.starts_with(original), "{rewritten}");
    assert!(rewritten.contains("tool_timeout_sec = 3720\n"), "{rewritten}");
    assert_eq!(rewritten.matches("[mcp_servers.gemini-relay]").count(), 1, "{rewritten}");
    home.expect(&["codex", "--remove"], 0);
    assert_eq!(fs::read_to_string(&file).unwrap(), original);
    // A file that defines the relay another way is refused.
    let inline = "[mcp_servers]\ngemini-relay = { command = \"x\" }\n";
    fs::write(&file, inline).unwrap();
    let stderr = home.expect(&["codex", "--write"], 2);
    assert!(stderr.contains("defines gemini-relay in a form other than its own table"), "{stderr}");
    assert_eq!(fs::read_to_string(&file).unwrap(), inline);
}

#[cfg(unix)]
#[test]
fn permissions_are_kept_and_links_and_read_only_files_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new("hostconfig-unix");
    let file = home.home(".gemini/settings.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "{\"theme\": \"x\"}\n").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    home.expect(&["gemini", "--write"], 0);
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&backup(&file)), 0o600);
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    home.expect(&["gemini", "--remove"], 0);
    assert_eq!(mode(&file), 0o644);
    // Read-only.
    fs::set_permissions(&file, fs::Permissions::from_mode(0o444)).unwrap();
    let bytes = fs::read(&file).unwrap();
    let stderr = home.expect(&["gemini", "--write"], 2);
    assert!(stderr.contains("it is read-only"), "{stderr}");
    assert_eq!(fs::read(&file).unwrap(), bytes);
    // A symbolic link to a file elsewhere: neither the link nor its target changes.
    let target = home.dir.write("elsewhere/settings.json", "{}\n");
    let link = home.home(".qwen/settings.json");
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let stderr = home.expect(&["qwen", "--write"], 2);
    assert!(stderr.contains("it is a symbolic link"), "{stderr}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "{}\n");
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
}
