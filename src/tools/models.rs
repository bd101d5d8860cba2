//! gemini-models rendering: the backend capability summary, the model list and backend notices.

use crate::backend::{Backend, ModelChoice, gemini};
use crate::call::Ctx;

/// What the report needs to know about the active backend: its name and capability flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendInfo<'a> {
    /// The backend's name, e.g. `agy` or `gemini`; shown upper-cased.
    pub name: &'a str,
    pub model_selection: bool,
    pub reasoning_effort: bool,
    pub structured_output: bool,
    pub modes: bool,
    pub sandbox_isolates: bool,
}

/// Renders the gemini-models text.
///
/// `models` holds `(id, label)` pairs; an empty slice falls back to the fixed six-line list.
/// `notices` are shown in a **Backend Notices** section when there are any.
pub fn render_models(
    info: &BackendInfo,
    choice: &ModelChoice,
    models: &[(String, String)],
    notices: &[String],
) -> String {
    let model_lines = if models.is_empty() {
        FALLBACK_MODEL_LINES.to_owned()
    } else {
        let lines: Vec<String> =
            models.iter().map(|(id, label)| format!("  \u{2022} **{id}**: {label}")).collect();
        lines.join("\n")
    };
    let notices_section = if notices.is_empty() {
        String::new()
    } else {
        let lines: Vec<String> =
            notices.iter().map(|notice| format!("> \u{26A0}\u{FE0F} {notice}")).collect();
        format!("\n\n**Backend Notices:**\n{}", lines.join("\n"))
    };
    let mut out = format!("### Active Backend: **{}**\n", info.name.to_ascii_uppercase());
    match &choice.default {
        None => out.push_str(DEFAULT_MODEL_LINE),
        Some(model) => out.push_str(&format!("- **Default Model:** `{model}` (`GEMINI_MCP_MODEL`). `gemini-ask` and `gemini-brainstorm` use it when a call names no model. `gemini-plan` pins `gemini-3.8-flash-high`; `gemini-image` hardcodes it.")),
    }
    out.push('\n');
    match &choice.fallback {
        None => out.push_str("- **Quota Fallback Model:** off (`GEMINI_MCP_FALLBACK_MODEL=off`): a call whose model's quota is exhausted fails."),
        Some(model) => out.push_str(&format!("- **Quota Fallback Model:** `{model}` (`GEMINI_MCP_FALLBACK_MODEL`): a call whose model's quota is exhausted is retried once with it.")),
    }
    out.push('\n');
    out.push_str(&format!(
        "- **Model Selection:** {}\n",
        if info.model_selection { SUPPORTED } else { "\u{274C} Fixed" }
    ));
    out.push_str(&format!(
        "- **Reasoning Effort Control:** {}\n",
        if info.reasoning_effort {
            "\u{2705} Supported ('low', 'medium', 'high')"
        } else {
            NOT_SUPPORTED
        }
    ));
    out.push_str(&format!(
        "- **Structured Output (--json-schema):** {}\n",
        if info.structured_output { SUPPORTED } else { NOT_SUPPORTED }
    ));
    out.push_str(&format!(
        "- **Agent Modes (--mode plan/accept-edits):** {}\n",
        if info.modes { SUPPORTED } else { NOT_SUPPORTED }
    ));
    out.push_str(&format!(
        "- **Tool Sandbox:** {}\n",
        if info.sandbox_isolates {
            "\u{2705} Isolated"
        } else {
            "\u{26A0}\u{FE0F} Host-executed in headless"
        }
    ));
    out.push_str("\n### Available Models:\n");
    out.push_str(&model_lines);
    out.push_str(&notices_section);
    out.push_str("\n\n");
    out.push_str(TIP_LINE);
    out
}

const SUPPORTED: &str = "\u{2705} Supported";
const NOT_SUPPORTED: &str = "\u{274C} Not supported";

const DEFAULT_MODEL_LINE: &str = "- **Default Model:** none. `gemini-ask` and `gemini-brainstorm` send no `--model` unless you name one, so agy answers on its own configured model. `gemini-plan` pins `gemini-3.8-flash-high`; `gemini-image` hardcodes it.";

const TIP_LINE: &str = "\u{1F4A1} *Tip: You can pass `model: 'gemini-3.8-flash-high'` or aliases like `model: 'pro'` or `model: 'flash'` to `gemini-ask`.*";

/// The list shown when the backend returns no models (never happens with the two real backends).
const FALLBACK_MODEL_LINES: &str = "  \u{2022} **gemini-3.8-flash-high**: Gemini 3.8 Flash (High Reasoning) - Fast with deep thinking
  \u{2022} **gemini-3.8-flash-medium**: Gemini 3.8 Flash (Medium Reasoning)
  \u{2022} **gemini-3.8-flash-low**: Gemini 3.8 Flash (Low Reasoning) - Ultra fast
  \u{2022} **gemini-3.1-pro-high**: Gemini 3.1 Pro (High Reasoning) - Flagship reasoning
  \u{2022} **gemini-3.1-pro-low**: Gemini 3.1 Pro (Low Reasoning)
  \u{2022} **gemini-3.7-flash-high**: Gemini 3.7 Flash (High Reasoning)";

/// Runs gemini-models: the active backend's capabilities and models. The migration notice is
/// shown but not spent.
pub fn run(ctx: &Ctx<'_>) -> String {
    let backends = &ctx.services.backends;
    let backend = ctx.call.backend;
    let notices = backends.notices(backend);
    let models = match backend {
        Backend::Agy => backends.agy.list_models(&ctx.runner()),
        Backend::Gemini => gemini::list_models(),
    };
    let text = render_models(&info(backend), &backends.model_choice(backend), &models, &notices);
    // agy names its models: shown without control sequences.
    crate::controls::strip(&text).into_owned()
}

/// The rendering facts of a backend.
pub const fn info(backend: Backend) -> BackendInfo<'static> {
    let caps = backend.capabilities();
    BackendInfo {
        name: backend.name(),
        model_selection: caps.model_selection,
        reasoning_effort: caps.reasoning_effort,
        structured_output: caps.structured_output,
        modes: caps.modes,
        sandbox_isolates: caps.sandbox_isolates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGY: BackendInfo<'static> = info(Backend::Agy);
    const GEMINI: BackendInfo<'static> = info(Backend::Gemini);

    const AGY_HEAD: &str = "### Active Backend: **AGY**
- **Default Model:** none. `gemini-ask` and `gemini-brainstorm` send no `--model` unless you name one, so agy answers on its own configured model. `gemini-plan` pins `gemini-3.8-flash-high`; `gemini-image` hardcodes it.
- **Quota Fallback Model:** `gemini-3.8-flash-high` (`GEMINI_MCP_FALLBACK_MODEL`): a call whose model's quota is exhausted is retried once with it.
- **Model Selection:** ✅ Supported
- **Reasoning Effort Control:** ✅ Supported ('low', 'medium', 'high')
- **Structured Output (--json-schema):** ✅ Supported
- **Agent Modes (--mode plan/accept-edits):** ✅ Supported
- **Tool Sandbox:** ⚠️ Host-executed in headless

### Available Models:
";

    const GEMINI_HEAD: &str = "### Active Backend: **GEMINI**
- **Default Model:** none. `gemini-ask` and `gemini-brainstorm` send no `--model` unless you name one, so agy answers on its own configured model. `gemini-plan` pins `gemini-3.8-flash-high`; `gemini-image` hardcodes it.
- **Quota Fallback Model:** `flash` (`GEMINI_MCP_FALLBACK_MODEL`): a call whose model's quota is exhausted is retried once with it.
- **Model Selection:** ✅ Supported
- **Reasoning Effort Control:** ❌ Not supported
- **Structured Output (--json-schema):** ❌ Not supported
- **Agent Modes (--mode plan/accept-edits):** ❌ Not supported
- **Tool Sandbox:** ✅ Isolated

### Available Models:
";

    const TIP: &str = "\n\n💡 *Tip: You can pass `model: 'gemini-3.8-flash-high'` or aliases like `model: 'pro'` or `model: 'flash'` to `gemini-ask`.*";

    fn models(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(id, label)| (id.to_string(), label.to_string())).collect()
    }

    fn check(info: &BackendInfo, pairs: &[(&str, &str)], notices: &[&str], head: &str, body: &str) {
        let notices: Vec<String> = notices.iter().map(|n| n.to_string()).collect();
        let expected = format!("{head}{body}{TIP}");
        assert_eq!(render_models(info, &default_choice(info), &models(pairs), &notices), expected);
    }

    /// The models of an unconfigured relay: no default, the `flash` fallback.
    fn default_choice(info: &BackendInfo) -> ModelChoice {
        let fallback = if info.name == "agy" { "gemini-3.8-flash-high" } else { "flash" };
        ModelChoice { default: None, fallback: Some(fallback.to_string()) }
    }

    #[test]
    fn agy_without_notices() {
        check(
            &AGY,
            &[
                ("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"),
                ("claude-sonnet-4-6", "Claude"),
            ],
            &[],
            AGY_HEAD,
            "  • **gemini-3.8-flash-high**: Gemini 3.8 Flash (High)\n  • **claude-sonnet-4-6**: Claude",
        );
    }

    #[test]
    fn agy_with_notices() {
        check(
            &AGY,
            &[("gemini-3.8-flash-high", "Gemini 3.8 Flash (High)")],
            &["first notice", "second notice"],
            AGY_HEAD,
            "  • **gemini-3.8-flash-high**: Gemini 3.8 Flash (High)\n\n**Backend Notices:**\n> ⚠️ first notice\n> ⚠️ second notice",
        );
    }

    #[test]
    fn gemini_without_notices() {
        check(
            &GEMINI,
            &[("gemini-3.1-pro-high", "Pro"), ("gemini-3.8-flash-high", "Flash")],
            &[],
            GEMINI_HEAD,
            "  • **gemini-3.1-pro-high**: Pro\n  • **gemini-3.8-flash-high**: Flash",
        );
    }

    #[test]
    fn gemini_with_notice() {
        check(
            &GEMINI,
            &[("gemini-3.1-pro-high", "Pro")],
            &[
                "Gemini CLI retires on 2026-06-18 (~3 day(s) left); test the successor now with GEMINI_MCP_BACKEND=agy.",
            ],
            GEMINI_HEAD,
            "  • **gemini-3.1-pro-high**: Pro\n\n**Backend Notices:**\n> ⚠️ Gemini CLI retires on 2026-06-18 (~3 day(s) left); test the successor now with GEMINI_MCP_BACKEND=agy.",
        );
    }

    #[test]
    fn empty_list_falls_back_to_six_lines() {
        check(
            &AGY,
            &[],
            &[],
            AGY_HEAD,
            "  • **gemini-3.8-flash-high**: Gemini 3.8 Flash (High Reasoning) - Fast with deep thinking
  • **gemini-3.8-flash-medium**: Gemini 3.8 Flash (Medium Reasoning)
  • **gemini-3.8-flash-low**: Gemini 3.8 Flash (Low Reasoning) - Ultra fast
  • **gemini-3.1-pro-high**: Gemini 3.1 Pro (High Reasoning) - Flagship reasoning
  • **gemini-3.1-pro-low**: Gemini 3.1 Pro (Low Reasoning)
  • **gemini-3.7-flash-high**: Gemini 3.7 Flash (High Reasoning)",
        );
    }

    #[test]
    fn fixed_model_selection_and_test_markers() {
        let info = BackendInfo { name: "other", model_selection: false, ..GEMINI };
        let out = render_models(&info, &default_choice(&info), &[], &[]);
        assert!(out.contains("- **Model Selection:** ❌ Fixed\n"));
        assert!(out.starts_with("### Active Backend: **OTHER**\n"));
        for marker in ["Active Backend:", "Available Models:", "gemini-3.8-flash"] {
            assert!(out.contains(marker), "{marker}");
        }
    }

    #[test]
    fn a_configured_default_and_no_fallback() {
        let choice =
            ModelChoice { default: Some("gemini-3.1-pro-high".to_string()), fallback: None };
        let out = render_models(&AGY, &choice, &[], &[]);
        assert!(out.starts_with("### Active Backend: **AGY**\n- **Default Model:** `gemini-3.1-pro-high` (`GEMINI_MCP_MODEL`). `gemini-ask` and `gemini-brainstorm` use it when a call names no model. `gemini-plan` pins `gemini-3.8-flash-high`; `gemini-image` hardcodes it.\n- **Quota Fallback Model:** off (`GEMINI_MCP_FALLBACK_MODEL=off`): a call whose model's quota is exhausted fails.\n- **Model Selection:**"), "{out}");
    }
}
