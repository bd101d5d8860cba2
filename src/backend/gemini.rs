//! The legacy Gemini CLI backend: where its binary is (`Gemini`), argv (`-m`, `-s`), the prompt
//! always on stdin, the plain-text reply, and its quota failures (the retry on the fallback model is
//! the caller's, as on agy).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::notfound::not_found_text;
use crate::backend::options::RunOptions;
use crate::backend::{RunError, quota};
use crate::config::Config;
use crate::exec::{
    self, ARGV_TEXT_LIMIT, ChildSpec, Failure, Input, Program, Runner, System,
    argument_too_long_text,
};

/// The command's name, which the executor finds (on `PATH`, or by its own search on Windows).
const NAME: &str = "gemini";

/// The Gemini CLI's process-wide state: the program its runs spawn.
pub struct Gemini {
    /// `GEMINI_CLI_PATH` on Windows when set, else the bare name, located once.
    program: Program,
}

impl Gemini {
    /// `GEMINI_CLI_PATH` is read on Windows only: elsewhere `gemini` is always found on `PATH`,
    /// whatever the variable says.
    pub fn new(config: &Config) -> Gemini {
        let on_windows = exec::SYSTEM == System::Windows;
        let configured = config.gemini_cli_path.clone().filter(|_| on_windows);
        Gemini { program: Program::locate(NAME, configured, &config.search, not_found_text) }
    }

    /// The CLI as named: the configured path, used as given, or the bare name.
    pub fn program(&self) -> &Path {
        self.program.path()
    }

    /// Runs one prepared prompt (its `@` references are only checked: the Gemini CLI reads them).
    pub fn run(
        &self,
        runner: &Runner<'_>,
        prompt: &Arc<String>,
        options: &RunOptions,
    ) -> Result<String, RunError> {
        let model = options.model.as_deref();
        // The model is the one piece of caller text on this backend's argv, so it is checked
        // against the kernel's per-argument limit before spawning.
        if let Some(model) = model.filter(|model| model.len() > ARGV_TEXT_LIMIT) {
            return Err(argument_too_long_text(NAME, "model", model.len()).into());
        }
        let args = args(model, options.sandbox);
        let failure = match runner.execute(self.command(&args, Some(prompt.clone()))) {
            Ok(text) => return Ok(text),
            Err(failure) => failure,
        };
        let message = failure.to_string();
        log_quota_error(&message, model);
        // Only stderr tells a quota failure: the answer on stdout may quote the markers.
        let stderr = match &failure {
            Failure::Exit { stderr, .. } | Failure::StderrOnly { stderr } => stderr.as_str(),
            _ => "",
        };
        match quota::find(stderr, "") {
            Some(quota) if !failure.is_terminal() && !runner.is_aborted() => {
                Err(RunError::Quota(quota))
            }
            _ => Err(message.into()),
        }
    }

    /// `gemini --help`, for `gemini-help`.
    pub fn help(&self, runner: &Runner<'_>) -> Result<String, Failure> {
        runner.execute(self.command(&["--help".to_string()], None))
    }

    /// `gemini --version`, for the doctor.
    pub fn version(&self, runner: &Runner<'_>, timeout: Duration) -> Result<String, Failure> {
        runner.execute_within(self.command(&["--version".to_string()], None), timeout)
    }

    fn command<'a>(&'a self, args: &'a [String], stdin: Option<Arc<dyn Input>>) -> ChildSpec<'a> {
        ChildSpec { program: &self.program, args, stdin, watch: None }
    }
}

/// The models this backend lists.
pub fn list_models() -> Vec<(String, String)> {
    vec![
        ("gemini-2.5-pro".to_string(), "Gemini 2.5 Pro".to_string()),
        ("gemini-2.5-flash".to_string(), "Gemini 2.5 Flash".to_string()),
    ]
}

/// The argv for one run: `-m <model>` (verbatim, not normalized) and `-s`. The prompt never goes
/// on argv: a prompt may start with `-` or exceed the kernel's per-argument limit.
pub fn args(model: Option<&str>, sandbox: bool) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(model) = model.filter(|m| !m.is_empty()) {
        args.extend(["-m".to_string(), model.to_string()]);
    }
    if sandbox {
        args.push("-s".to_string());
    }
    args
}

/// A diagnostic line when the CLI reports `RESOURCE_EXHAUSTED`.
fn log_quota_error(message: &str, model: Option<&str>) {
    if !message.contains("RESOURCE_EXHAUSTED") {
        return;
    }
    let model = model.unwrap_or("the default model");
    let report = serde_json::json!({"error": {
        "code": 429,
        "message": format!("GMCPT: --> Quota exceeded for {model}"),
        "details": {
            "model": model,
            "reason": "RESOURCE_EXHAUSTED",
            "statusText": "Too Many Requests -- > try using gemini-2.5-flash by asking",
        },
    }});
    log::error!(
        "Gemini Quota Error: {}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_never_carries_the_prompt() {
        assert_eq!(args(Some("gemini-2.5-pro"), true), ["-m", "gemini-2.5-pro", "-s"]);
        assert_eq!(args(None, false), Vec::<String>::new());
        assert_eq!(args(Some(""), false), Vec::<String>::new());
        assert_eq!(args(Some("pro"), false), ["-m", "pro"], "passed verbatim, not normalized");
    }

    #[test]
    fn gemini_cli_path_is_read_on_windows_only() {
        let config = |value: Option<&str>| {
            Config::from_env(|name| value.filter(|_| name == "GEMINI_CLI_PATH").map(String::from))
        };
        let configured = Gemini::new(&config(Some(r" C:\Tools\gemini.cmd ")));
        let expected = match exec::SYSTEM {
            System::Windows => r"C:\Tools\gemini.cmd",
            System::Posix => "gemini",
        };
        assert_eq!(configured.program(), Path::new(expected));
        assert_eq!(configured.command(&[], None).program.path(), Path::new(expected));
        assert_eq!(Gemini::new(&config(None)).program(), Path::new("gemini"));
        assert_eq!(Gemini::new(&config(Some("  "))).program(), Path::new("gemini"));
    }
}
