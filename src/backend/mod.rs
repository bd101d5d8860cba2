//! Backend selection and the model-run entry point: which CLI answers, the one-shot
//! migration notice and its delivery, capability notices, and `run_with_backend`, which prepares the
//! prompt in one place and hands it to the backend with the call's runner.

pub mod agy;
pub mod gemini;
pub mod notfound;
pub mod options;
pub mod prepare;
pub mod quota;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::backend::agy::Agy;
use crate::backend::agy::args::normalize_model;
use crate::backend::gemini::Gemini;
use crate::backend::options::RunOptions;
use crate::backend::quota::Quota;
use crate::config::{BackendChoice, Config};
use crate::controls;
use crate::exec::Runner;
use crate::files::attach;

/// 2026-06-18T00:00:00Z, when the Gemini CLI stopped serving most users.
pub const RETIREMENT_SECS: u64 = 1_781_740_800;
/// The model `gemini-plan` and `gemini-image` pin.
pub const PINNED_MODEL: &str = "gemini-3.8-flash-high";

/// The model the quota failure advises (an alias both CLIs know).
const ADVISED_MODEL: &str = "flash";

/// What the quota texts call a call's model when it named none.
const DEFAULT_MODEL_NAME: &str = "the default model";

/// The mark of a notice that states a fact rather than a warning; it is shown as it is.
const INFO_MARK: &str = "ℹ️ ";
/// The mark of the attachment notice, which carries no `⚠️` either.
const ATTACHED_MARK: &str = "📎 ";

const RETIRED_NOTICE: &str = "Gemini CLI was retired on 2026-06-18; defaulting to the Antigravity CLI (agy) backend. Set GEMINI_MCP_BACKEND=gemini to override.";

/// The two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Agy,
    Gemini,
}

/// What a backend can honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub model_selection: bool,
    pub reasoning_effort: bool,
    pub structured_output: bool,
    pub modes: bool,
    pub sandbox_isolates: bool,
}

/// Process-wide backend state: the configured choice, the migration notice and each CLI's own
/// state.
pub struct Backends {
    /// `GEMINI_MCP_BACKEND`.
    choice: BackendChoice,
    notice: Mutex<NoticeState>,
    pub agy: Agy,
    pub gemini: Gemini,
    /// `GEMINI_MCP_MODEL`: the model of a call that names none.
    model: Option<String>,
    /// `GEMINI_MCP_FALLBACK_MODEL`: the model a quota failure is retried with (`None`: off).
    fallback_model: Option<String>,
    /// `GEMINI_MCP_MAX_ATTACHMENT_BYTES`: the largest file a call may attach.
    max_attachment_bytes: u64,
}

#[derive(Default)]
struct NoticeState {
    pending: Option<String>,
    delivered: bool,
}

/// One model run: the prompt and the options the tool passes.
pub struct RunRequest {
    pub prompt: String,
    pub options: RunOptions,
    pub change_mode: bool,
}

/// Why a backend run failed.
#[derive(Debug)]
pub enum RunError {
    /// The model's quota is exhausted: the fallback model may answer instead.
    Quota(Quota),
    /// Anything else, as the client reads it.
    Failed(String),
}

impl From<String> for RunError {
    fn from(text: String) -> RunError {
        RunError::Failed(text)
    }
}

/// The models a backend's calls use by default, as that backend's CLI is given them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// `GEMINI_MCP_MODEL`, when set.
    pub default: Option<String>,
    /// `GEMINI_MCP_FALLBACK_MODEL`, unless it is off.
    pub fallback: Option<String>,
}

/// What `run_with_backend` returns.
pub struct Reply {
    pub text: String,
    pub notices: Vec<String>,
    pub backend: Backend,
    pub conversation_id: Option<String>,
}

impl Backend {
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Agy => "agy",
            Backend::Gemini => "gemini",
        }
    }

    pub const fn capabilities(self) -> Capabilities {
        match self {
            Backend::Agy => Capabilities {
                model_selection: true,
                reasoning_effort: true,
                structured_output: true,
                modes: true,
                sandbox_isolates: false,
            },
            Backend::Gemini => Capabilities {
                model_selection: true,
                reasoning_effort: false,
                structured_output: false,
                modes: false,
                sandbox_isolates: true,
            },
        }
    }
}

impl Backends {
    pub fn new(config: &Config) -> Backends {
        Backends {
            choice: config.backend.clone(),
            notice: Mutex::default(),
            agy: Agy::new(config),
            gemini: Gemini::new(config),
            model: config.model.clone(),
            fallback_model: config.fallback_model.clone(),
            max_attachment_bytes: config.max_attachment_bytes,
        }
    }

    /// The default and fallback models as `backend`'s CLI is given them (agy resolves the aliases).
    pub fn model_choice(&self, backend: Backend) -> ModelChoice {
        let shown = |model: &Option<String>| model.as_deref().map(|m| shown_model(backend, m));
        ModelChoice { default: shown(&self.model), fallback: shown(&self.fallback_model) }
    }

    /// The backend a call accepted now gets (decided once per call, on the event loop).
    pub fn active(&self) -> Backend {
        self.active_at(SystemTime::now())
    }

    /// The notices a call on `backend` starts with: the migration notice while it has not been
    /// delivered. Called inside the call's run, so that the warning about an unknown
    /// `GEMINI_MCP_BACKEND` reaches the log level that call asked for.
    pub fn notices(&self, backend: Backend) -> Vec<String> {
        self.notices_at(backend, SystemTime::now())
    }

    /// `notices` at `now` (injectable for tests).
    pub fn notices_at(&self, backend: Backend, now: SystemTime) -> Vec<String> {
        self.warn_if_unknown();
        if self.choice != BackendChoice::Auto {
            return Vec::new();
        }
        let mut state = self.notice.lock().unwrap_or_else(|e| e.into_inner());
        if state.delivered {
            return Vec::new();
        }
        let notice = match backend {
            Backend::Agy => Some(RETIRED_NOTICE.to_string()),
            Backend::Gemini => days_left(now).filter(|days| *days <= 14).map(|days| {
                format!("Gemini CLI retires on 2026-06-18 (~{days} day(s) left); test the successor now with GEMINI_MCP_BACKEND=agy.")
            }),
        };
        state.pending = notice.clone();
        notice.into_iter().collect()
    }

    /// Logs a warning when `GEMINI_MCP_BACKEND` names no backend (the call then runs on gemini).
    pub fn warn_if_unknown(&self) {
        if let BackendChoice::Unknown(name) = &self.choice {
            log::warn!(
                "Unknown GEMINI_MCP_BACKEND=\"{}\", falling back to gemini.",
                crate::redact::escape_controls(name)
            );
        }
    }

    /// The backend for a call accepted at `now`: `GEMINI_MCP_BACKEND`, else agy from 2026-06-18 on.
    pub fn active_at(&self, now: SystemTime) -> Backend {
        match self.choice {
            BackendChoice::Auto if is_retired(now) => Backend::Agy,
            BackendChoice::Agy => Backend::Agy,
            BackendChoice::Auto | BackendChoice::Gemini | BackendChoice::Unknown(_) => {
                Backend::Gemini
            }
        }
    }

    /// Prefixes `⚠️ <notice>` lines (a notice that carries its own `ℹ️` mark keeps it); emitting
    /// the pending migration notice spends it.
    pub fn with_notices(&self, notices: &[String], body: &str) -> String {
        if notices.is_empty() {
            return body.to_string();
        }
        let mut state = self.notice.lock().unwrap_or_else(|e| e.into_inner());
        if state.pending.as_ref().is_some_and(|pending| notices.contains(pending)) {
            state.delivered = true;
            state.pending = None;
        }
        drop(state);
        // A notice may quote agy (a status, an action's name, a model): shown without control
        // sequences.
        let lines: Vec<String> = notices
            .iter()
            .map(|n| controls::strip(n))
            .map(|n| match n.starts_with(INFO_MARK) || n.starts_with(ATTACHED_MARK) {
                true => n.into_owned(),
                false => format!("⚠️ {n}"),
            })
            .collect();
        format!("{}\n\n{body}", lines.join("\n"))
    }
}

/// Runs one prompt through `backend`, the one decided for its call: the pending notices and the
/// capability notices, the default model, the prompt prepared for that backend, then its run with
/// the call's runner. A run that fails because its model's quota is exhausted is retried once with
/// the fallback model, inside the same call (on agy, in the slot of its call).
pub fn run_with_backend(
    backends: &Backends,
    backend: Backend,
    tool: &str,
    runner: &Runner<'_>,
    request: RunRequest,
) -> Result<Reply, String> {
    let RunRequest { prompt, mut options, change_mode } = request;
    let mut notices = backends.notices(backend);
    notices.extend(capability_notices(backend, &mut options));
    if options.model.as_deref().is_none_or(str::is_empty) {
        options.model = backends.model.clone();
    }
    let asked = prepare::Asked {
        tool,
        change_mode,
        options: &options,
        limit: backends.max_attachment_bytes,
    };
    let prepared = prepare::prepare(prompt, &asked, backend, runner)?;
    let attached = prepared.attached;
    options.outside_refusal = attached.iter().find(|it| it.outside).map(|it| {
        format!(
            "Invalid arguments for {tool}: attachments: {} is outside the project and this agy build cannot add directories",
            it.written
        )
    });
    // The attachment notice comes first in the reply, before every other.
    let attached_first = |mut reply: Reply| {
        if !attached.is_empty() {
            reply.notices.insert(0, attach::notice(&attached));
        }
        Ok(reply)
    };
    let root = prepared.root;
    let prompt = Arc::new(prepared.prompt);
    let run = |runner: &Runner<'_>, options: &RunOptions| match backend {
        Backend::Agy => backends.agy.run(runner, &prompt, &root, options),
        Backend::Gemini => backends.gemini.run(runner, &prompt, options).map(|text| Reply {
            text,
            notices: Vec::new(),
            backend,
            conversation_id: None,
        }),
    };
    let started = Instant::now();
    let quota = match run(runner, &options) {
        Ok(reply) => {
            notices.extend(reply.notices);
            return attached_first(Reply { notices, ..reply });
        }
        Err(RunError::Failed(text)) => return Err(text),
        Err(RunError::Quota(quota)) => quota,
    };
    let now = SystemTime::now();
    let model = match options.model.as_deref().filter(|m| !m.is_empty()) {
        Some(model) => shown_model(backend, model),
        None => DEFAULT_MODEL_NAME.to_string(),
    };
    // Flash is advised only when it is not a model that was just refused.
    let flash = shown_model(backend, ADVISED_MODEL);
    let is_flash = |shown: &str| shown.eq_ignore_ascii_case(&flash);
    let exhausted = |try_flash: bool| quota::exhausted_text(&model, &quota, now, try_flash);
    let name = backend.name();
    log::warn!("{name}: the model's quota is exhausted{}.", reset_log(&quota));
    let Some(fallback) = backends.fallback_for(options.model.as_deref()) else {
        return Err(exhausted(!is_flash(&model)));
    };
    // The retry gets what is left of the call's deadline, so the call as a whole still ends by
    // it (a host waits for the deadline plus its margin, not for twice the deadline).
    let left = runner.timeout().saturating_sub(started.elapsed());
    if runner.is_aborted() || left.is_zero() {
        return Err(exhausted(!is_flash(&model)));
    }
    let fallback_shown = shown_model(backend, &fallback);
    log::warn!("{name}: retrying once with the fallback model {fallback_shown}.");
    let retry = RunOptions { model: Some(fallback), ..options };
    match run(&runner.within(left), &retry) {
        Ok(reply) => {
            let clause = quota::exhausted_clause(&model, &quota, now);
            notices.insert(0, format!("{clause}; this answer is from {fallback_shown}."));
            notices.extend(reply.notices);
            attached_first(Reply { notices, ..reply })
        }
        Err(failure) => {
            let why = match failure {
                RunError::Quota(second) => {
                    log::warn!("{name}: the fallback model's quota is exhausted too.");
                    format!("{}.", quota::exhausted_clause(&fallback_shown, &second, now))
                }
                RunError::Failed(text) => text,
            };
            let exhausted = exhausted(!is_flash(&model) && !is_flash(&fallback_shown));
            Err(format!("{exhausted} The retry with {fallback_shown} failed too: {why}"))
        }
    }
}

impl Backends {
    /// The model a quota failure on `model` is retried with: none when the fallback is off or
    /// `model` already is it (aliases compared resolved).
    fn fallback_for(&self, model: Option<&str>) -> Option<String> {
        let fallback = self.fallback_model.as_ref()?;
        let same = model.is_some_and(|model| {
            normalize_model(model).eq_ignore_ascii_case(&normalize_model(fallback))
        });
        if same {
            log::info!("The model already is the fallback model; no retry.");
            return None;
        }
        Some(fallback.clone())
    }
}

/// A model as `backend`'s CLI is given it: agy resolves the aliases, the Gemini CLI takes it as
/// it is.
fn shown_model(backend: Backend, model: &str) -> String {
    match backend {
        Backend::Agy => normalize_model(model),
        Backend::Gemini => crate::js::trim(model).to_string(),
    }
}

/// ` (resets in <d>)` for a log line, or nothing.
fn reset_log(quota: &Quota) -> String {
    match quota.reset {
        Some(reset) => format!(" (resets in {}s)", reset.as_secs()),
        None => String::new(),
    }
}

/// Notices for options the backend cannot honour, dropping those it ignores.
fn capability_notices(backend: Backend, options: &mut RunOptions) -> Vec<String> {
    let caps = backend.capabilities();
    let name = backend.name();
    let mut notices = Vec::new();
    if !caps.model_selection
        && let Some(model) = options.model.take().filter(|m| !m.is_empty())
    {
        notices.push(format!("Backend \"{name}\" ignores model selection (print-mode is gemini-3.8-flash-high-only); \"{model}\" was not applied."));
    }
    if !caps.reasoning_effort
        && let Some(effort) = options.effort.take().filter(|e| !e.is_empty())
    {
        notices.push(format!("Backend \"{name}\" does not support reasoning effort configuration; \"{effort}\" was ignored."));
    }
    if !caps.modes
        && let Some(mode) = options.mode.take().filter(|m| !m.is_empty())
    {
        notices.push(format!("Backend \"{name}\" does not support execution mode \"{mode}\"."));
    }
    if !caps.structured_output && options.json_schema_arg().is_some() {
        notices.push(format!("Backend \"{name}\" does not support JSON schema enforcement."));
    }
    if options.sandbox && !caps.sandbox_isolates {
        notices.push(format!("Backend \"{name}\" does not isolate tool execution in headless mode; the sandbox request cannot be guaranteed."));
    }
    notices
}

fn is_retired(now: SystemTime) -> bool {
    now >= UNIX_EPOCH + Duration::from_secs(RETIREMENT_SECS)
}

/// Whole days left until retirement, rounded up; `None` once it has passed.
fn days_left(now: SystemTime) -> Option<u64> {
    let left = (UNIX_EPOCH + Duration::from_secs(RETIREMENT_SECS)).duration_since(now).ok()?;
    Some(left.as_millis().div_ceil(86_400_000) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Backends configured with `GEMINI_MCP_BACKEND` set to `choice` (`None`: unset).
    fn backends(choice: Option<&str>) -> Backends {
        let config = Config::from_env(|name| match name {
            "GEMINI_MCP_BACKEND" => choice.map(str::to_string),
            _ => None,
        });
        Backends::new(&config)
    }

    /// What a call accepted at `now` gets: its backend and its notices.
    fn select_at(backends: &Backends, now: SystemTime) -> (Backend, Vec<String>) {
        let backend = backends.active_at(now);
        (backend, backends.notices_at(backend, now))
    }

    const AFTER: u64 = RETIREMENT_SECS + 86_400;
    const BEFORE_FAR: u64 = RETIREMENT_SECS - 60 * 86_400;
    const COUNTDOWN: u64 = RETIREMENT_SECS - 8 * 86_400; // 2026-06-10

    #[test]
    fn date_aware_default() {
        assert_eq!(select_at(&backends(None), at(BEFORE_FAR)).0, Backend::Gemini);
        assert_eq!(select_at(&backends(Some("")), at(BEFORE_FAR)).0, Backend::Gemini);
        assert_eq!(select_at(&backends(None), at(AFTER)).0, Backend::Agy);
        assert_eq!(select_at(&backends(None), at(RETIREMENT_SECS)).0, Backend::Agy);
    }

    #[test]
    fn explicit_values() {
        let select = |choice: &str, now| select_at(&backends(Some(choice)), now);
        assert_eq!(select("gemini", at(AFTER)), (Backend::Gemini, vec![]));
        assert_eq!(select(" Antigravity ", at(BEFORE_FAR)), (Backend::Agy, vec![]));
        assert_eq!(select("AGY", at(BEFORE_FAR)), (Backend::Agy, vec![]));
        assert_eq!(select("bogus", at(AFTER)), (Backend::Gemini, vec![]));
    }

    #[test]
    fn retired_notice_is_shown_once_when_delivered() {
        let b = backends(None);
        let (_, notices) = select_at(&b, at(AFTER));
        assert_eq!(notices, [RETIRED_NOTICE]);
        // Producing it again without delivering does not spend it.
        assert_eq!(select_at(&b, at(AFTER)).1, [RETIRED_NOTICE]);
        assert_eq!(select_at(&b, at(AFTER)).1, [RETIRED_NOTICE]);
        let body = b.with_notices(&notices, "hello");
        assert_eq!(body, format!("⚠️ {RETIRED_NOTICE}\n\nhello"));
        assert!(select_at(&b, at(AFTER)).1.is_empty());
    }

    #[test]
    fn countdown_notice_before_retirement() {
        let b = backends(None);
        let (backend, notices) = select_at(&b, at(COUNTDOWN));
        assert_eq!(backend, Backend::Gemini);
        assert_eq!(
            notices,
            [
                "Gemini CLI retires on 2026-06-18 (~8 day(s) left); test the successor now with GEMINI_MCP_BACKEND=agy."
            ]
        );
        b.with_notices(&notices, "x");
        assert!(select_at(&b, at(COUNTDOWN)).1.is_empty());
        assert!(select_at(&backends(None), at(BEFORE_FAR)).1.is_empty());
    }

    #[test]
    fn with_notices_formats() {
        let b = backends(None);
        assert_eq!(b.with_notices(&[], "hello"), "hello");
        assert_eq!(b.with_notices(&["a".into(), "b".into()], "body"), "⚠️ a\n⚠️ b\n\nbody");
        let info = "ℹ️ agy answered with x (asked for y).".to_string();
        assert_eq!(
            b.with_notices(&["a".into(), info], "body"),
            "⚠️ a\nℹ️ agy answered with x (asked for y).\n\nbody"
        );
    }

    /// Backends configured with the two model variables.
    fn with_models(model: Option<&str>, fallback: Option<&str>) -> Backends {
        let config = Config::from_env(|name| match name {
            "GEMINI_MCP_MODEL" => model.map(str::to_string),
            "GEMINI_MCP_FALLBACK_MODEL" => fallback.map(str::to_string),
            _ => None,
        });
        Backends::new(&config)
    }

    #[test]
    fn the_fallback_model_and_when_it_is_skipped() {
        let b = with_models(None, None);
        assert_eq!(b.fallback_for(Some("pro")).as_deref(), Some("flash"));
        assert_eq!(b.fallback_for(None).as_deref(), Some("flash"), "the default model too");
        for same in ["flash", " FLASH ", "gemini-3.8-flash-high", "gemini-2.5-flash"] {
            assert_eq!(b.fallback_for(Some(same)), None, "{same}");
        }
        assert_eq!(with_models(None, Some("off")).fallback_for(Some("pro")), None);
        let low = with_models(None, Some("gemini-3.8-flash-low"));
        assert_eq!(low.fallback_for(Some("flash")).as_deref(), Some("gemini-3.8-flash-low"));
    }

    #[test]
    fn model_choice_per_backend() {
        let b = with_models(Some("pro"), None);
        let agy = ModelChoice {
            default: Some("gemini-3.1-pro-high".into()),
            fallback: Some("gemini-3.8-flash-high".into()),
        };
        assert_eq!(b.model_choice(Backend::Agy), agy);
        let gemini = ModelChoice { default: Some("pro".into()), fallback: Some("flash".into()) };
        assert_eq!(b.model_choice(Backend::Gemini), gemini);
        let off = with_models(None, Some("off")).model_choice(Backend::Agy);
        assert_eq!(off, ModelChoice { default: None, fallback: None });
    }

    #[test]
    fn capability_flags() {
        let agy = Backend::Agy.capabilities();
        assert!(agy.model_selection && agy.reasoning_effort && agy.structured_output && agy.modes);
        assert!(!agy.sandbox_isolates);
        let gemini = Backend::Gemini.capabilities();
        assert!(gemini.model_selection && gemini.sandbox_isolates);
        assert!(!gemini.reasoning_effort && !gemini.structured_output && !gemini.modes);
    }

    #[test]
    fn capability_notices_per_backend() {
        let mut options = RunOptions {
            effort: Some("high".into()),
            mode: Some("plan".into()),
            json_schema: Some(serde_json::json!({"type": "object"})),
            sandbox: true,
            ..RunOptions::default()
        };
        let gemini = capability_notices(Backend::Gemini, &mut options.clone());
        assert_eq!(
            gemini,
            [
                "Backend \"gemini\" does not support reasoning effort configuration; \"high\" was ignored.",
                "Backend \"gemini\" does not support execution mode \"plan\".",
                "Backend \"gemini\" does not support JSON schema enforcement.",
            ]
        );
        let agy = capability_notices(Backend::Agy, &mut options);
        assert_eq!(
            agy,
            [
                "Backend \"agy\" does not isolate tool execution in headless mode; the sandbox request cannot be guaranteed."
            ]
        );
        assert_eq!(options.effort.as_deref(), Some("high"), "agy keeps what it supports");
    }
}
