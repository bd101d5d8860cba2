//! gemini-plan texts: the planning prompt, its progress message, pinned model and blank-task error.

use serde_json::{Map, Value};

use crate::backend::{self, RunRequest};
use crate::call::Ctx;
use crate::js;
use crate::tools::{run_options, str_arg};

/// The progress text sent before the backend runs.
pub const PLAN_PROGRESS: &str =
    "🧠 Gemini is formulating deep architectural plan with high reasoning effort...";

/// The failure text for a task that is blank after trimming.
pub const BLANK_TASK_ERROR: &str = "Please provide a task or goal to plan.";

/// The five numbered instruction lines; their wording may change, their number may not.
const INSTRUCTIONS: [&str; 5] = [
    "1. Start with a thorough analysis of the architecture and the requirements the task implies.",
    "2. Split the solution into ordered, discrete implementation phases.",
    "3. For every phase, list its dependencies, edge cases, risks and the steps that verify it.",
    "4. Keep every step actionable for an engineer or a coding agent picking it up.",
    "5. Where precision matters, give code signatures, schema sketches or pseudocode.",
];

/// The closing line; it must end with a colon.
const CLOSING: &str = "Write the comprehensive implementation plan now:";

/// Builds the planning prompt from the task and optional context, trimming both.
///
/// The layout follows the original concatenation exactly, so without context three blank lines
/// separate the task from `## Instructions:`, and with context two blank lines follow it.
pub fn planning_prompt(task: &str, context: Option<&str>) -> String {
    let mut prompt = String::from("# ARCHITECTURAL & IMPLEMENTATION PLANNING REQUEST\n\n");
    prompt.push_str("## Goal / Task:\n");
    prompt.push_str(js::trim(task));
    prompt.push_str("\n\n");
    let context = context.map(js::trim).unwrap_or("");
    if !context.is_empty() {
        prompt.push_str("## Context & Constraints:\n");
        prompt.push_str(context);
        prompt.push('\n');
    }
    prompt.push_str("\n\n## Instructions:\n");
    prompt.push_str(&INSTRUCTIONS.join("\n"));
    prompt.push_str("\n\n");
    prompt.push_str(CLOSING);
    prompt
}

/// Returns the model to plan with: the caller's choice when non-empty, else the pinned model.
pub fn plan_model(model: Option<&str>) -> &str {
    match model {
        Some(model) if !model.is_empty() => model,
        _ => backend::PINNED_MODEL,
    }
}

/// Runs gemini-plan: the planning prompt at high effort in plan mode, read-only, no thread line.
pub fn run(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    let task = str_arg(args, "task").unwrap_or_default();
    if js::trim(task).is_empty() {
        return Err(BLANK_TASK_ERROR.to_string());
    }
    let prompt = planning_prompt(task, str_arg(args, "context"));
    ctx.report(PLAN_PROGRESS);
    let mut options = run_options(args);
    options.model = Some(plan_model(str_arg(args, "model")).to_string());
    options.mode = Some("plan".to_string());
    let request = RunRequest { prompt, options, change_mode: false };
    let reply = ctx.run_model(request)?;
    Ok(ctx.services.backends.with_notices(&reply.notices, &reply.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instructions_and_closing() -> String {
        format!("{}\n\n{}", INSTRUCTIONS.join("\n"), CLOSING)
    }

    fn check(task: &str, context: Option<&str>, expected_head: &str) {
        let expected = format!("{expected_head}{}", instructions_and_closing());
        assert_eq!(planning_prompt(task, context), expected);
    }

    #[test]
    fn without_context() {
        check(
            "  Build a cache  ",
            None,
            "# ARCHITECTURAL & IMPLEMENTATION PLANNING REQUEST\n\n## Goal / Task:\nBuild a cache\n\n\n\n## Instructions:\n",
        );
    }

    #[test]
    fn blank_context_counts_as_none() {
        check(
            "Build a cache",
            Some(" \n\t "),
            "# ARCHITECTURAL & IMPLEMENTATION PLANNING REQUEST\n\n## Goal / Task:\nBuild a cache\n\n\n\n## Instructions:\n",
        );
    }

    #[test]
    fn with_context_trimmed() {
        check(
            "Build a cache",
            Some("\n  Must be thread-safe; see @src/lib.rs\n"),
            "# ARCHITECTURAL & IMPLEMENTATION PLANNING REQUEST\n\n## Goal / Task:\nBuild a cache\n\n## Context & Constraints:\nMust be thread-safe; see @src/lib.rs\n\n\n## Instructions:\n",
        );
    }

    #[test]
    fn instruction_lines_are_numbered_and_closing_ends_with_colon() {
        for (idx, line) in INSTRUCTIONS.iter().enumerate() {
            assert!(line.starts_with(&format!("{}. ", idx + 1)), "{line}");
        }
        assert!(CLOSING.ends_with(':'));
        assert!(planning_prompt("x", None).ends_with(CLOSING));
    }

    #[test]
    fn progress_and_model_texts() {
        assert_eq!(
            PLAN_PROGRESS,
            "\u{1F9E0} Gemini is formulating deep architectural plan with high reasoning effort..."
        );
        assert_eq!(plan_model(None), "gemini-3.8-flash-high");
        assert_eq!(plan_model(Some("")), "gemini-3.8-flash-high");
        assert_eq!(plan_model(Some("pro")), "pro");
    }
}
