//! The agy argument vector, the `--print-timeout` value and the stdin payload, and the
//! PTY-recovery helpers.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use crate::backend::agy::caps::AgyCaps;
use crate::backend::options::RunOptions;
use crate::exec::{ARGV_ELEMENT_LIMIT, ARGV_TEXT_LIMIT, Input, argument_too_long_text};
use crate::js;

/// What to spawn after the agy binary: its arguments and, on the stream-json path, its stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgyInvocation {
    pub args: Vec<String>,
    /// The prompt as one stream-json line when `via_stdin`; stdin stays closed otherwise.
    pub stdin: Option<UserLine>,
    /// The prompt goes on stdin as stream-json and stdout is stream-json.
    pub via_stdin: bool,
}

/// Maps the `flash` and `pro` aliases to agy model ids; anything else is returned trimmed.
pub fn normalize_model(model: &str) -> String {
    let trimmed = js::trim(model);
    match trimmed.to_lowercase().as_str() {
        "flash" | "gemini-flash" | "gemini-3.8-flash" | "gemini-2.5-flash" | "gemini-3.5-flash" => {
            "gemini-3.8-flash-high".to_string()
        }
        "pro" | "gemini-pro" | "gemini-3.1-pro" | "gemini-2.5-pro" => {
            "gemini-3.1-pro-high".to_string()
        }
        _ => trimmed.to_string(),
    }
}

/// A prompt that agy should expand as a slash command: opted in and starting with `/`.
pub fn is_slash_command(final_prompt: &str, allow_slash_commands: bool) -> bool {
    allow_slash_commands && js::trim_start(final_prompt).starts_with('/')
}

/// The option flags, each only when set and advertised, in this fixed order: `--model`,
/// `--effort`, `--json-schema`, `--mode`, `--add-dir`s, `--agent`, `--disable-slash-commands`,
/// `--conversation`, `--sandbox`, `--dangerously-skip-permissions`.
pub fn build_agy_args(opts: &RunOptions, caps: &AgyCaps) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |flag: &str, value: Option<String>| {
        args.push(flag.to_string());
        args.extend(value);
    };
    if let Some(model) = wanted(opts.model.as_deref(), caps.model_flag) {
        push("--model", Some(normalize_model(model)));
    }
    if let Some(effort) = wanted(opts.effort.as_deref(), caps.effort_flag) {
        push("--effort", Some(effort.to_string()));
    }
    if let Some(schema) = opts.json_schema_arg().filter(|_| caps.json_schema_flag) {
        push("--json-schema", Some(schema));
    }
    if let Some(mode) = wanted(opts.mode.as_deref(), caps.mode_flag) {
        push("--mode", Some(mode.to_string()));
    }
    if caps.add_dir_flag {
        for dir in opts.add_dirs.iter().filter(|dir| !dir.is_empty()) {
            push("--add-dir", Some(dir.clone()));
        }
    }
    if let Some(agent) = wanted(opts.agent.as_deref(), caps.agent_flag) {
        push("--agent", Some(agent.to_string()));
    }
    if !opts.allow_slash_commands && caps.disable_slash_commands {
        push("--disable-slash-commands", None);
    }
    if let Some(id) = wanted(opts.conversation_id.as_deref(), caps.conversation_id) {
        push("--conversation", Some(id.to_string()));
    }
    if opts.sandbox && caps.sandbox_flag {
        push("--sandbox", None);
    }
    if opts.skip_permissions && caps.dangerously_skip_permissions {
        push("--dangerously-skip-permissions", None);
    }
    args
}

/// The full argv (the option flags, then the delivery and output flags, `--print-timeout`, and
/// `-p <prompt>` on the argv path) and stdin for one run.
///
/// Every argv element that carries caller text is checked against the kernel's limit before
/// anything is spawned: `Err` is the prompt-too-long text for a prompt on the argv path, or
/// `argument_too_long_text` for an option value (`--json-schema` goes on argv on both paths).
pub fn invocation(
    final_prompt: impl Into<Arc<String>>,
    opts: &RunOptions,
    caps: &AgyCaps,
    print_timeout: &str,
    log_file: Option<&Path>,
) -> Result<AgyInvocation, String> {
    let final_prompt: Arc<String> = final_prompt.into();
    let via_stdin =
        caps.stream_json_input && !is_slash_command(&final_prompt, opts.allow_slash_commands);
    if !via_stdin {
        check_prompt_length(&final_prompt)?;
    }
    let mut args = build_agy_args(opts, caps);
    check_option_lengths(&args)?;
    if via_stdin {
        args.extend(
            ["--input-format", "stream-json", "--output-format", "stream-json"].map(String::from),
        );
    } else if caps.output_format_json {
        args.extend(["--output-format", "json"].map(String::from));
    }
    if caps.print_timeout {
        args.extend(["--print-timeout".to_string(), print_timeout.to_string()]);
    }
    if let Some(file) = log_file {
        args.extend(["--log-file".to_string(), file.to_string_lossy().into_owned()]);
    }
    if via_stdin {
        let stdin = Some(UserLine(final_prompt));
        return Ok(AgyInvocation { args, stdin, via_stdin });
    }
    // A leading space keeps agy from reading a prompt such as `--version` as a flag. An argv
    // prompt is at most one argument long, so copying it out of a shared prompt is cheap.
    let prompt_arg = match dash_prefix(&final_prompt) {
        "" => Arc::unwrap_or_clone(final_prompt),
        prefix => format!("{prefix}{final_prompt}"),
    };
    args.extend(["-p".to_string(), prompt_arg]);
    Ok(AgyInvocation { args, stdin: None, via_stdin })
}

/// The length check for a prompt on the argv path (agy builds without stream-json input). `<n>`
/// counts what the kernel counts against `ARGV_ELEMENT_LIMIT`, the limit the text names: the
/// element (the prompt after its space prefix, if any) and its terminating NUL. So the text appears
/// exactly when `<n>` exceeds the limit it states: a 131,072-byte prompt is reported as 131,073
/// bytes, and a 131,071-byte prompt that starts with `-` as 131,073 bytes too.
fn check_prompt_length(final_prompt: &str) -> Result<(), String> {
    let n = dash_prefix(final_prompt).len() + final_prompt.len() + 1;
    if n <= ARGV_ELEMENT_LIMIT {
        return Ok(());
    }
    Err(format!(
        "The prompt is {n} bytes, but this agy build only accepts prompts on the command line \
         (at most {ARGV_ELEMENT_LIMIT} bytes). Upgrade agy to a build with --input-format stream-json."
    ))
}

/// The prefix that keeps a prompt on argv from being read as a flag: one space when it starts
/// with `-`.
fn dash_prefix(prompt: &str) -> &'static str {
    if prompt.starts_with('-') { " " } else { "" }
}

/// Checks every option value of `build_agy_args`' output against the per-element limit.
fn check_option_lengths(args: &[String]) -> Result<(), String> {
    // Values always follow their flag, so the element before a value names it.
    for pair in args.windows(2) {
        let (flag, value) = (pair[0].as_str(), &pair[1]);
        if value.len() > ARGV_TEXT_LIMIT {
            return Err(argument_too_long_text("agy", argument_name(flag), value.len()));
        }
    }
    Ok(())
}

/// The tool argument an agy flag's value comes from.
fn argument_name(flag: &str) -> &'static str {
    match flag {
        "--model" => "model",
        "--effort" => "effort",
        "--json-schema" => "jsonSchema",
        "--mode" => "mode",
        "--add-dir" => "addDirs entry",
        "--agent" => "agent",
        "--conversation" => "conversationId",
        _ => "argument",
    }
}

/// The `--print-timeout` value: the trimmed override if non-empty, else derived to end before the
/// wrapper's own deadline (`total − 60` above two minutes, else half, at least one second).
pub fn print_timeout_value(env_override: Option<&str>, wrapper_timeout_ms: u64) -> String {
    if let Some(value) = env_override.map(js::trim).filter(|v| !v.is_empty()) {
        return value.to_string();
    }
    let total = wrapper_timeout_ms / 1000;
    let seconds = if total > 120 { total - 60 } else { (total / 2).max(1) };
    format!("{seconds}s")
}

/// The one stream-json stdin line that carries a prompt:
/// `{"event":"user","message":{"role":"user","content":…}}` and `\n`.
///
/// It is escaped as it is written, a piece at a time, so a prompt of many megabytes costs no
/// escaped copy and agy parses each piece while the next one is escaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLine(pub Arc<String>);

impl UserLine {
    const HEAD: &'static [u8] = br#"{"event":"user","message":{"role":"user","content":""#;
    const TAIL: &'static [u8] = b"\"}}\n";
    /// The prompt bytes escaped per write: one pipe buffer's worth.
    const PIECE: usize = 64 * 1024;
}

impl Input for UserLine {
    fn max_len(&self) -> usize {
        // `\u001f` is the longest escape: six bytes for one.
        Self::HEAD.len() + 6 * self.0.len() + Self::TAIL.len()
    }

    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(Self::HEAD)?;
        let mut escaped = Vec::with_capacity(Self::PIECE + 2);
        let mut rest = self.0.as_str();
        while !rest.is_empty() {
            let mut end = rest.len().min(Self::PIECE);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let (piece, tail) = rest.split_at(end);
            // JSON escapes character by character, so the pieces' escapes, each without its
            // quotes, join into the escape of the whole prompt. The piece is escaped by `Value`'s
            // `Display`, which is compiled inside serde_json (at opt-level 3, Cargo.toml), not by
            // the generic `to_writer`, which would be compiled here at opt-level "z": a 10 MB
            // prompt costs the relay 147 M instructions this way and 316 M the other.
            escaped.clear();
            write!(escaped, "{}", serde_json::Value::String(piece.to_string()))?;
            out.write_all(&escaped[1..escaped.len() - 1])?;
            rest = tail;
        }
        out.write_all(Self::TAIL)
    }
}

/// POSIX single quoting: `'` becomes `'\''` and the whole is wrapped in `'…'`.
pub fn sh_single_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The shell command line `script` runs: the agy path and every argument, each single-quoted.
pub fn pty_inner_command(agy_path: &str, args: &[String]) -> String {
    let mut words = vec![sh_single_quote(agy_path)];
    words.extend(args.iter().map(|arg| sh_single_quote(arg)));
    words.join(" ")
}

/// The arguments of `script` around `inner`: `-qec <inner> /dev/null` on Linux,
/// `-q /dev/null /bin/sh -c <inner>` on macOS.
pub fn pty_script_args(inner: &str, macos: bool) -> Vec<String> {
    let args: Vec<&str> = if macos {
        vec!["-q", "/dev/null", "/bin/sh", "-c", inner]
    } else {
        vec!["-qec", inner, "/dev/null"]
    };
    args.into_iter().map(String::from).collect()
}

/// A string option that is set (non-empty) and whose flag is advertised.
fn wanted(value: Option<&str>, advertised: bool) -> Option<&str> {
    value.filter(|v| advertised && !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;

    use crate::testutil::XorShift;

    const S: &str = "--input-format stream-json --output-format stream-json --print-timeout 2640s";

    fn opts() -> RunOptions {
        RunOptions::default()
    }

    /// Options with slash commands allowed, so flag 7 stays out of the way.
    fn slash_opts() -> RunOptions {
        RunOptions { allow_slash_commands: true, ..RunOptions::default() }
    }

    fn check_args(opts: &RunOptions, caps: &AgyCaps, expect: &[&str]) {
        assert_eq!(build_agy_args(opts, caps), expect, "options: {opts:?}");
    }

    /// Checks the space-joined argv and the stdin payload of a full invocation.
    fn check_run(prompt: &str, opts: &RunOptions, caps: &AgyCaps, argv: &str, stdin: Option<&str>) {
        let inv = invocation(prompt.to_string(), opts, caps, "2640s", None).unwrap();
        assert_eq!(inv.args.join(" "), argv, "prompt {prompt:?}, options {opts:?}");
        assert_eq!(inv.stdin.as_ref().map(rendered).as_deref(), stdin);
        assert_eq!(inv.via_stdin, stdin.is_some());
    }

    /// The stream-json line for `prompt`, built as a `Value` and printed whole.
    fn stdin_for(prompt: &str) -> String {
        let line =
            serde_json::json!({"event": "user", "message": {"role": "user", "content": prompt}});
        format!("{line}\n")
    }

    /// What a `UserLine` writes to agy's stdin.
    fn rendered(line: &UserLine) -> String {
        let mut out = Vec::new();
        line.write_to(&mut out).unwrap();
        assert!(out.len() <= line.max_len());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn model_pass_through_and_aliases() {
        let all = AgyCaps::all();
        let model = |m: &str| RunOptions { model: Some(m.to_string()), ..slash_opts() };
        check_args(&model("gemini-3.1-pro-low"), &all, &["--model", "gemini-3.1-pro-low"]);
        check_args(&model("pro"), &all, &["--model", "gemini-3.1-pro-high"]);
        check_args(&model("flash"), &all, &["--model", "gemini-3.8-flash-high"]);
        check_args(&model(""), &all, &[]);
    }

    #[test]
    fn normalize_model_table() {
        for alias in
            ["flash", "gemini-flash", "gemini-3.8-flash", "gemini-2.5-flash", "gemini-3.5-flash"]
        {
            assert_eq!(normalize_model(alias), "gemini-3.8-flash-high");
        }
        for alias in ["pro", "gemini-pro", "gemini-3.1-pro", "gemini-2.5-pro"] {
            assert_eq!(normalize_model(alias), "gemini-3.1-pro-high");
        }
        assert_eq!(normalize_model("  PRO "), "gemini-3.1-pro-high");
        assert_eq!(normalize_model(" Flash\n"), "gemini-3.8-flash-high");
        assert_eq!(normalize_model("  Claude-Sonnet-4-6 "), "Claude-Sonnet-4-6");
        assert_eq!(normalize_model("gemini-3.8-flash-low"), "gemini-3.8-flash-low");
    }

    #[test]
    fn single_option_flags() {
        let all = AgyCaps::all();
        let set = |f: fn(&mut RunOptions)| {
            let mut o = slash_opts();
            f(&mut o);
            o
        };
        check_args(&set(|o| o.effort = Some("high".into())), &all, &["--effort", "high"]);
        check_args(&set(|o| o.mode = Some("plan".into())), &all, &["--mode", "plan"]);
        check_args(
            &set(|o| o.json_schema = Some(serde_json::json!({"type": "object"}))),
            &all,
            &["--json-schema", r#"{"type":"object"}"#],
        );
        check_args(
            &set(|o| o.add_dirs = vec!["src".into(), "".into(), "test".into()]),
            &all,
            &["--add-dir", "src", "--add-dir", "test"],
        );
        check_args(
            &set(|o| o.conversation_id = Some("abc123".into())),
            &all,
            &["--conversation", "abc123"],
        );
        check_args(&set(|o| o.agent = Some("reviewer".into())), &all, &["--agent", "reviewer"]);
        check_args(&set(|o| o.sandbox = true), &all, &["--sandbox"]);
        check_args(&set(|o| o.skip_permissions = true), &all, &["--dangerously-skip-permissions"]);
    }

    #[test]
    fn agent_only_when_advertised() {
        let o = RunOptions { agent: Some("reviewer".into()), ..slash_opts() };
        check_args(&o, &AgyCaps { agent_flag: false, ..AgyCaps::all() }, &[]);
    }

    #[test]
    fn approval_plan_sends_nothing_and_yolo_needs_the_capability() {
        // `approvalMode: "plan"` maps to `skip_permissions: false`.
        check_args(&slash_opts(), &AgyCaps::all(), &[]);
        let yolo = RunOptions { skip_permissions: true, ..slash_opts() };
        let caps = AgyCaps { dangerously_skip_permissions: false, ..AgyCaps::all() };
        check_args(&yolo, &caps, &[]);
    }

    #[test]
    fn disable_slash_commands_flag() {
        let only = AgyCaps { disable_slash_commands: true, ..AgyCaps::none() };
        check_args(&opts(), &only, &["--disable-slash-commands"]);
        check_args(&slash_opts(), &only, &[]);
        check_args(&opts(), &AgyCaps::none(), &[]);
    }

    #[test]
    fn everything_set_without_capabilities_is_empty() {
        check_args(&everything(), &AgyCaps::none(), &[]);
    }

    fn everything() -> RunOptions {
        RunOptions {
            model: Some("pro".into()),
            effort: Some("high".into()),
            json_schema: Some(
                serde_json::json!({"type":"object","properties":{"n":{"type":"integer"}}}),
            ),
            mode: Some("plan".into()),
            add_dirs: vec!["../lib".into()],
            agent: Some("reviewer".into()),
            allow_slash_commands: false,
            conversation_id: Some("c1".into()),
            sandbox: true,
            skip_permissions: true,
            include_usage: true,
            ..RunOptions::default()
        }
    }

    #[test]
    fn is_slash_command_cases() {
        assert!(is_slash_command("/usage", true));
        assert!(is_slash_command("  /skills extra", true));
        assert!(is_slash_command("\n\u{00A0}/skills", true));
        assert!(!is_slash_command("/usage", false));
        assert!(!is_slash_command("explain /usr/bin", true));
    }

    #[test]
    fn full_example_stream_json() {
        let o = RunOptions { effort: Some("low".into()), ..opts() };
        let argv = format!("--effort low --disable-slash-commands {S}");
        check_run("hi", &o, &AgyCaps::all(), &argv, Some(&stdin_for("hi")));
        let line = stdin_for("hi");
        assert_eq!(
            line,
            "{\"event\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n"
        );
    }

    #[test]
    fn slash_prompt_goes_on_argv_with_json_output() {
        let argv = "--output-format json --print-timeout 2640s -p /usage";
        check_run("/usage", &slash_opts(), &AgyCaps::all(), argv, None);
    }

    #[test]
    fn per_tool_rows_on_a_fully_capable_build() {
        let all = AgyCaps::all();
        check_run(
            "q",
            &opts(),
            &all,
            &format!("--disable-slash-commands {S}"),
            Some(&stdin_for("q")),
        );
        let every = format!(
            "--model gemini-3.1-pro-high --effort high --json-schema \
             {{\"type\":\"object\",\"properties\":{{\"n\":{{\"type\":\"integer\"}}}}}} --mode plan \
             --add-dir ../lib --agent reviewer --disable-slash-commands --conversation c1 --sandbox \
             --dangerously-skip-permissions {S}"
        );
        check_run("q", &everything(), &all, &every, Some(&stdin_for("q")));
        let skills = "--output-format json --print-timeout 2640s -p /skills";
        check_run("/skills", &slash_opts(), &all, skills, None);
        check_run("hi", &slash_opts(), &all, S, Some(&stdin_for("hi")));
        let plan = RunOptions {
            model: Some("gemini-3.8-flash-high".into()),
            effort: Some("high".into()),
            mode: Some("plan".into()),
            ..opts()
        };
        let plan_argv = format!(
            "--model gemini-3.8-flash-high --effort high --mode plan --disable-slash-commands {S}"
        );
        check_run("task", &plan, &all, &plan_argv, Some(&stdin_for("task")));
        let image = RunOptions { model: Some("gemini-3.8-flash-high".into()), ..opts() };
        let image_argv = format!("--model gemini-3.8-flash-high --disable-slash-commands {S}");
        check_run("cat", &image, &all, &image_argv, Some(&stdin_for("cat")));
    }

    #[test]
    fn build_without_stream_json_uses_argv() {
        let caps = AgyCaps { stream_json_input: false, ..AgyCaps::all() };
        let o = RunOptions { model: Some("pro".into()), ..opts() };
        let argv = "--model gemini-3.1-pro-high --disable-slash-commands --output-format json \
                    --print-timeout 2640s -p hello";
        let inv = invocation("hello".to_string(), &o, &caps, "2640s", None).unwrap();
        assert_eq!(inv.args.join(" "), argv);
        assert_eq!(inv.args.last().unwrap(), "hello");
        assert_eq!(inv.stdin, None);
        assert!(!inv.via_stdin);
    }

    #[test]
    fn json_only_caps_and_no_caps() {
        let json_only = AgyCaps { output_format_json: true, ..AgyCaps::none() };
        check_run("x", &everything(), &json_only, "--output-format json -p x", None);
        let inv =
            invocation("x".to_string(), &everything(), &AgyCaps::none(), "2640s", None).unwrap();
        assert_eq!(inv.args, ["-p", "x"]);
        assert_eq!(inv.stdin, None);
    }

    #[test]
    fn argv_prompt_starting_with_a_dash_gets_one_space() {
        let inv =
            invocation("--version".to_string(), &opts(), &AgyCaps::none(), "1s", None).unwrap();
        assert_eq!(inv.args, ["-p", " --version"]);
        let inv = invocation("-y x".to_string(), &opts(), &AgyCaps::none(), "1s", None).unwrap();
        assert_eq!(inv.args, ["-p", " -y x"]);
        let inv = invocation(" -y x".to_string(), &opts(), &AgyCaps::none(), "1s", None).unwrap();
        assert_eq!(inv.args, ["-p", " -y x"]);
        // On the stdin path the prompt is sent untouched.
        let inv =
            invocation("--version".to_string(), &opts(), &AgyCaps::all(), "1s", None).unwrap();
        let line: Value = serde_json::from_str(&rendered(&inv.stdin.unwrap())).unwrap();
        assert_eq!(line["message"]["content"], "--version");
    }

    /// The prompt-too-long text for a prompt of `n` bytes as the kernel counts it.
    fn prompt_too_long(n: usize) -> String {
        format!(
            "The prompt is {n} bytes, but this agy build only accepts prompts on the command line \
             (at most 131072 bytes). Upgrade agy to a build with --input-format stream-json."
        )
    }

    /// The last argv element of an argv-path run of `prompt`, or the error.
    fn argv_prompt(prompt: &str) -> Result<String, String> {
        let inv = invocation(prompt.to_string(), &opts(), &AgyCaps::none(), "1s", None)?;
        assert!(!inv.via_stdin);
        Ok(inv.args.last().unwrap().clone())
    }

    #[test]
    fn argv_prompt_limit_counts_the_nul() {
        assert_eq!((ARGV_ELEMENT_LIMIT, ARGV_TEXT_LIMIT), (131_072, 131_071));
        let fits = "a".repeat(131_071);
        assert_eq!(argv_prompt(&fits).unwrap().len(), 131_071);
        assert_eq!(argv_prompt(&"a".repeat(131_072)), Err(prompt_too_long(131_073)));
        assert_eq!(argv_prompt(&"a".repeat(200_000)), Err(prompt_too_long(200_001)));
        // Multi-byte text is counted in bytes: 65,536 × 2 bytes.
        assert_eq!(argv_prompt(&"é".repeat(65_536)), Err(prompt_too_long(131_073)));
        assert_eq!(argv_prompt(&"é".repeat(65_535)).unwrap().len(), 131_070);
    }

    #[test]
    fn argv_prompt_limit_counts_the_space_before_a_dash() {
        let fits = format!("-{}", "a".repeat(131_069));
        let arg = argv_prompt(&fits).unwrap();
        assert_eq!((arg.len(), arg.starts_with(" -")), (131_071, true));
        let over = format!("-{}", "a".repeat(131_070));
        assert_eq!(argv_prompt(&over), Err(prompt_too_long(131_073)));
        // A dash later in the text gets no space.
        assert_eq!(argv_prompt(&format!("a-{}", "a".repeat(131_069))).unwrap().len(), 131_071);
    }

    #[test]
    fn argv_prompt_limit_on_slash_commands_only_applies_to_argv() {
        let slash = format!("/{}", "a".repeat(131_071));
        let err =
            invocation(slash.clone(), &slash_opts(), &AgyCaps::all(), "1s", None).unwrap_err();
        assert_eq!(err, prompt_too_long(131_073));
        let slash = format!("/{}", "a".repeat(131_070));
        assert!(invocation(slash.clone(), &slash_opts(), &AgyCaps::all(), "1s", None).is_ok());
        // The stdin path has no such limit.
        let big = "a".repeat(1_000_000);
        assert!(invocation(big.clone(), &opts(), &AgyCaps::all(), "1s", None).unwrap().via_stdin);
        let dashed = format!("-{big}");
        assert!(
            invocation(dashed.clone(), &opts(), &AgyCaps::all(), "1s", None).unwrap().via_stdin
        );
    }

    #[test]
    fn json_schema_is_checked_on_both_paths() {
        let too_long = "The jsonSchema is 131072 bytes; agy accepts at most 131071 bytes in one \
                        command-line argument.";
        let schema = |text: String| RunOptions {
            json_schema: Some(Value::String(text)),
            ..RunOptions::default()
        };
        let stream = AgyCaps::all();
        let argv_only = AgyCaps { stream_json_input: false, ..AgyCaps::all() };
        for caps in [&stream, &argv_only] {
            for first in ["{", "-"] {
                let fits = schema(format!("{first}{}", "a".repeat(131_070)));
                let inv = invocation("hi".to_string(), &fits, caps, "1s", None).unwrap();
                let at = inv.args.iter().position(|a| a == "--json-schema").unwrap();
                assert_eq!(inv.args[at + 1].len(), 131_071);
                let over = schema(format!("{first}{}", "a".repeat(131_071)));
                assert_eq!(
                    invocation("hi".to_string(), &over, caps, "1s", None).unwrap_err(),
                    too_long
                );
            }
        }
        // An object schema is measured as the compact JSON that is sent.
        let object = RunOptions {
            json_schema: Some(serde_json::json!({"description": "d".repeat(300_000)})),
            ..RunOptions::default()
        };
        assert_eq!(
            invocation("hi".to_string(), &object, &stream, "1s", None).unwrap_err(),
            "The jsonSchema is 300018 bytes; agy accepts at most 131071 bytes in one command-line \
             argument."
        );
        // A schema the build does not take is not sent, so it cannot be too long.
        let no_schema_flag = AgyCaps { json_schema_flag: false, ..AgyCaps::all() };
        assert!(invocation("hi".to_string(), &object, &no_schema_flag, "1s", None).is_ok());
    }

    #[test]
    fn every_option_value_is_checked() {
        let long = "x".repeat(131_072);
        type Set = fn(&mut RunOptions, String);
        let cases: [(&str, Set); 7] = [
            ("model", |o, v| o.model = Some(v)),
            ("effort", |o, v| o.effort = Some(v)),
            ("mode", |o, v| o.mode = Some(v)),
            ("addDirs entry", |o, v| o.add_dirs = vec!["src".into(), v]),
            ("agent", |o, v| o.agent = Some(v)),
            ("conversationId", |o, v| o.conversation_id = Some(v)),
            ("jsonSchema", |o, v| o.json_schema = Some(Value::String(v))),
        ];
        for (name, set) in cases {
            let mut o = opts();
            set(&mut o, long.clone());
            assert_eq!(
                invocation("hi".to_string(), &o, &AgyCaps::all(), "1s", None).unwrap_err(),
                format!(
                    "The {name} is 131072 bytes; agy accepts at most 131071 bytes in one \
                     command-line argument."
                )
            );
            let mut o = opts();
            set(&mut o, long[1..].to_string());
            assert!(
                invocation("hi".to_string(), &o, &AgyCaps::all(), "1s", None).is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn the_prompt_is_checked_before_the_options() {
        let o = RunOptions { agent: Some("x".repeat(200_000)), ..opts() };
        assert_eq!(
            invocation("a".repeat(200_000), &o, &AgyCaps::none(), "1s", None).unwrap_err(),
            prompt_too_long(200_001),
            "no agent flag without the capability, and the prompt comes first"
        );
        let caps = AgyCaps { stream_json_input: false, ..AgyCaps::all() };
        assert_eq!(
            invocation("a".repeat(200_000), &o, &caps, "1s", None).unwrap_err(),
            prompt_too_long(200_001)
        );
    }

    #[test]
    fn stream_json_line_escapes_and_ends_with_newline() {
        let line = rendered(&UserLine(Arc::new("hi\nthere \"q\"".into())));
        assert!(line.ends_with('\n'));
        assert_eq!(line.matches('\n').count(), 1);
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({"event":"user","message":{"role":"user","content":"hi\nthere \"q\""}})
        );
        assert!(line.starts_with(r#"{"event":"user","message":{"role":"user","content":"#));
    }

    #[test]
    fn stream_json_line_of_many_pieces_is_the_whole_escape() {
        // Multi-byte characters straddle the piece boundaries; quotes, control characters and
        // newlines need escapes on both sides of them.
        let unit = "é\"\u{1}\n€ab\\𝄞";
        let prompt = unit.repeat(3 * UserLine::PIECE / unit.len() + 7);
        for shift in 0..4 {
            let prompt = format!("{}{prompt}", "x".repeat(shift));
            assert_eq!(
                rendered(&UserLine(Arc::new(prompt.clone()))),
                stdin_for(&prompt),
                "shift {shift}"
            );
        }
        assert_eq!(rendered(&UserLine(Arc::default())), stdin_for(""));
    }

    fn check_timeout(env: Option<&str>, wrapper_ms: u64, expect: &str) {
        assert_eq!(print_timeout_value(env, wrapper_ms), expect, "env {env:?}, {wrapper_ms} ms");
    }

    #[test]
    fn print_timeout_examples() {
        check_timeout(None, 45 * 60_000, "2640s");
        check_timeout(None, 120_000, "60s");
        check_timeout(None, 121_000, "61s");
        check_timeout(None, 60_000, "30s");
        check_timeout(None, 30_000, "15s");
        check_timeout(None, 6_000, "3s");
        check_timeout(None, 3_000, "1s");
        check_timeout(None, 0, "1s");
        check_timeout(Some("30m"), 45 * 60_000, "30m");
        check_timeout(Some("  90s \n"), 1_000, "90s");
        check_timeout(Some("   "), 60_000, "30s");
        check_timeout(Some(""), 60_000, "30s");
    }

    #[test]
    fn print_timeout_is_strictly_below_the_wrapper() {
        let below = |ms: u64| {
            let value = print_timeout_value(None, ms);
            let seconds: u64 = value.trim_end_matches('s').parse().unwrap();
            assert!(seconds * 1000 < ms, "{value} for {ms} ms");
        };
        for ms in [6_000, 60_000, 120_000, 121_000, 45 * 60_000] {
            below(ms);
        }
        // A small xorshift walk over wrapper timeouts from just above one second to a day.
        let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2_000 {
            below(1_001 + rng.next() % 86_400_000);
        }
    }

    #[test]
    fn sh_single_quote_cases() {
        assert_eq!(sh_single_quote("plain"), "'plain'");
        assert_eq!(sh_single_quote("a'b"), r"'a'\''b'");
        assert_eq!(sh_single_quote("$(rm -rf /); `x` \"y\" *"), "'$(rm -rf /); `x` \"y\" *'");
        assert_eq!(sh_single_quote(""), "''");
    }

    #[test]
    fn pty_command_lines() {
        let args = ["-p".to_string(), "it's".to_string()];
        let inner = pty_inner_command("/opt/agy bin/agy", &args);
        assert_eq!(inner, r"'/opt/agy bin/agy' '-p' 'it'\''s'");
        assert_eq!(pty_script_args("X", false), ["-qec", "X", "/dev/null"]);
        assert_eq!(pty_script_args("X", true), ["-q", "/dev/null", "/bin/sh", "-c", "X"]);
    }
}
