//! gemini-brainstorm texts: the session prompt, the six methodology frameworks and status lines.

use serde_json::{Map, Value};

use crate::backend::RunRequest;
use crate::backend::options::RunOptions;
use crate::call::Ctx;
use crate::js;
use crate::tools::{str_arg, strings};

/// The inputs of one brainstorm prompt; only `prompt` is trimmed, the rest is used verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrainstormRequest<'a> {
    /// The challenge; trimmed when the prompt is built.
    pub prompt: &'a str,
    /// One of `divergent`, `convergent`, `scamper`, `design-thinking`, `lateral`, `auto`;
    /// anything else is treated as `auto`.
    pub methodology: &'a str,
    pub domain: Option<&'a str>,
    pub constraints: Option<&'a str>,
    pub existing_context: Option<&'a str>,
    pub idea_count: u64,
    pub include_analysis: bool,
}

/// The default methodology when the caller names none.
pub const DEFAULT_METHODOLOGY: &str = "auto";

/// The default number of ideas.
pub const DEFAULT_IDEA_COUNT: u64 = 12;

/// The failure text for a prompt that is blank after trimming.
pub const BLANK_PROMPT_ERROR: &str =
    "You must provide a valid brainstorming challenge or question to explore";

/// Builds the brainstorm prompt.
///
/// Empty `domain`, `constraints` and `existing_context` strings count as absent, as in the
/// original, and leave an empty line where their line would be.
pub fn brainstorm_prompt(req: &BrainstormRequest) -> String {
    let domain = non_empty(req.domain);
    let domain_line = domain.map_or(String::new(), |domain| {
        format!(
            "**Domain Focus:** {domain} - Draw on this field's knowledge, vocabulary, practices and known pitfalls."
        )
    });
    let constraints_line = non_empty(req.constraints).map_or(String::new(), |constraints| {
        format!("**Constraints & Boundaries:** {constraints}")
    });
    let context_line = non_empty(req.existing_context)
        .map_or(String::new(), |context| format!("**Background Context:** {context}"));
    let analysis_block = if req.include_analysis { ANALYSIS_BLOCK } else { "" };
    let assessment_lines = if req.include_analysis {
        "**Feasibility:** [1-5] | **Impact:** [1-5] | **Innovation:** [1-5]\n**Assessment:** [Brief evaluation]"
    } else {
        ""
    };
    let lines = [
        "# BRAINSTORMING SESSION".to_owned(),
        String::new(),
        "## Core Challenge".to_owned(),
        js::trim(req.prompt).to_owned(),
        String::new(),
        "## Methodology Framework".to_owned(),
        framework(req.methodology, domain),
        String::new(),
        "## Context Engineering".to_owned(),
        "*Use the following context to inform your reasoning:*".to_owned(),
        domain_line,
        constraints_line,
        context_line,
        String::new(),
        "## Output Requirements".to_owned(),
        format!("- Generate {} distinct, creative ideas", req.idea_count),
        "- Make each idea unique and non-obvious rather than a variation of another".to_owned(),
        "- Keep every idea actionable and realistic to implement".to_owned(),
        "- Give each idea a clear, descriptive name".to_owned(),
        "- Explain each idea briefly".to_owned(),
        String::new(),
        analysis_block.to_owned(),
        String::new(),
        "## Format".to_owned(),
        "Present the ideas in this structured format:".to_owned(),
        String::new(),
        "### Idea [N]: [Creative Name]".to_owned(),
        "**Description:** [2-3 sentence explanation]".to_owned(),
        assessment_lines.to_owned(),
        String::new(),
        "---".to_owned(),
        String::new(),
        "**Before answering, review the whole list: remove near-duplicates and check every idea against the constraints.**".to_owned(),
        String::new(),
        "Begin the brainstorming session:".to_owned(),
    ];
    lines.join("\n")
}

/// The framework text for a methodology; an unknown one (or `auto`) gets the AI-optimized text,
/// which names `domain` when one is given.
pub fn framework(methodology: &str, domain: Option<&str>) -> String {
    let text = match methodology {
        "divergent" => DIVERGENT,
        "convergent" => CONVERGENT,
        "scamper" => SCAMPER,
        "design-thinking" => DESIGN_THINKING,
        "lateral" => LATERAL,
        _ => return auto_framework(non_empty(domain)),
    };
    text.to_owned()
}

/// The progress text sent before the backend runs.
pub fn progress_message(idea_count: u64, methodology: &str) -> String {
    format!("Generating {idea_count} ideas via {methodology} methodology...")
}

/// The debug line of a brainstorm. The domain is the caller's text, so only its length shows.
pub fn debug_line(methodology: &str, domain: Option<&str>) -> String {
    let domain = match non_empty(domain) {
        Some(domain) => format!("<{} chars>", crate::redact::utf16_len(domain)),
        None => "'general'".to_string(),
    };
    format!("Brainstorm: Using methodology '{methodology}' for domain {domain}")
}

const ANALYSIS_BLOCK: &str = "## Analysis Framework
For every idea, also give:
- **Feasibility** (1-5): how hard it is to build with realistic resources
- **Impact** (1-5): how much value it creates if it works
- **Innovation** (1-5): how original it is compared with what exists
- **Quick Assessment**: one sentence weighing the three";

const DIVERGENT: &str = "**Divergent Thinking Approach:**
- Aim for as many ideas as possible and do not censor any of them
- Build on the wildest ideas instead of discarding them
- Combine concepts from unrelated areas
- Expand each idea with \"Yes, and...\" thinking
- Postpone all evaluation until the list is complete";

const CONVERGENT: &str = "**Convergent Thinking Approach:**
- Refine and strengthen the existing concepts
- Merge related ideas into stronger combined solutions
- Apply critical criteria to every candidate
- Rank the ideas by feasibility and impact
- Lay out concrete next steps for the strongest ideas";

const SCAMPER: &str = "**SCAMPER Creative Triggers:**
- **Substitute:** What part, material or process could be swapped for another?
- **Combine:** Which ideas, features or functions could be merged?
- **Adapt:** What could be borrowed from a different context?
- **Modify:** What could be enlarged, shrunk or otherwise changed?
- **Put to other use:** Where else, or for whom else, could this work?
- **Eliminate:** What could be removed or simplified away?
- **Reverse:** What happens if the order, roles or direction are flipped?";

const DESIGN_THINKING: &str = "**Human-Centered Design Thinking:**
- **Empathize:** Understand the needs, pains and motivations of the people affected
- **Define:** State the core problem from their point of view
- **Ideate:** Generate solutions centred on those people
- **Consider Journey:** Walk through the whole experience from start to finish
- **Prototype Mindset:** Favour ideas that can be tried and tested quickly";

const LATERAL: &str = "**Lateral Thinking Approach:**
- Look for unexpected connections with other fields
- Challenge the assumptions everyone takes for granted
- Use random word association to trigger new directions
- Reason through metaphors and analogies
- Reverse the conventional way of doing things";

fn auto_framework(domain: Option<&str>) -> String {
    let lead = match domain {
        Some(domain) => format!(
            "Given the {domain} domain, combine whichever creative techniques suit it best:"
        ),
        None => {
            "Several methodologies will be combined to cover the widest useful range:".to_owned()
        }
    };
    format!(
        "**AI-Optimized Approach:**
{lead}
- Divergent exploration grounded in domain knowledge
- SCAMPER and lateral-thinking triggers to break habitual patterns
- A human-centred perspective on who benefits and how"
    )
}

/// JavaScript truthiness for an optional string: empty counts as absent.
fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|value| !value.is_empty())
}

/// Runs gemini-brainstorm: the brainstorm prompt with only model and effort passed on.
pub fn run(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    let prompt = str_arg(args, "prompt").unwrap_or_default();
    if js::trim(prompt).is_empty() {
        return Err(BLANK_PROMPT_ERROR.to_string());
    }
    let methodology = str_arg(args, "methodology").unwrap_or(DEFAULT_METHODOLOGY);
    let domain = str_arg(args, "domain");
    let idea_count = args.get("ideaCount").and_then(Value::as_u64).unwrap_or(DEFAULT_IDEA_COUNT);
    let request = BrainstormRequest {
        prompt,
        methodology,
        domain,
        constraints: str_arg(args, "constraints"),
        existing_context: str_arg(args, "existingContext"),
        idea_count,
        include_analysis: args.get("includeAnalysis").and_then(Value::as_bool).unwrap_or(true),
    };
    log::debug!("{}", debug_line(methodology, domain));
    ctx.report(&progress_message(idea_count, methodology));
    let options = RunOptions {
        model: str_arg(args, "model").map(str::to_string),
        effort: str_arg(args, "effort").map(str::to_string),
        attachments: strings(args, "attachments"),
        ..RunOptions::default()
    };
    let prompt = brainstorm_prompt(&request);
    let request = RunRequest { prompt, options, change_mode: false };
    let reply = ctx.run_model(request)?;
    Ok(ctx.services.backends.with_notices(&reply.notices, &reply.text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(prompt: &str) -> BrainstormRequest<'_> {
        BrainstormRequest {
            prompt,
            methodology: "auto",
            domain: None,
            constraints: None,
            existing_context: None,
            idea_count: 12,
            include_analysis: true,
        }
    }

    fn check_framework(methodology: &str, domain: Option<&str>, needles: &[&str]) {
        let text = framework(methodology, domain);
        for needle in needles {
            assert!(text.contains(needle), "{methodology}: {needle:?} missing in {text}");
        }
    }

    #[test]
    fn framework_headings() {
        check_framework(
            "divergent",
            None,
            &["**Divergent Thinking Approach:**\n", "Divergent Thinking"],
        );
        check_framework("convergent", None, &["**Convergent Thinking Approach:**\n"]);
        check_framework(
            "scamper",
            None,
            &["**SCAMPER Creative Triggers:**\n", "SCAMPER", "Substitute"],
        );
        check_framework(
            "design-thinking",
            None,
            &["**Human-Centered Design Thinking:**\n", "Empathize"],
        );
        check_framework("lateral", None, &["**Lateral Thinking Approach:**\n"]);
        check_framework("auto", None, &["**AI-Optimized Approach:**\n"]);
        check_framework("unknown", None, &["AI-Optimized Approach"]);
        check_framework("auto", Some("fintech"), &["Given the fintech domain, ", "fintech"]);
    }

    #[test]
    fn framework_bullets() {
        let bullets = |text: &str| text.lines().filter(|line| line.starts_with("- ")).count();
        for (methodology, count) in [
            ("divergent", 5),
            ("convergent", 5),
            ("scamper", 7),
            ("design-thinking", 5),
            ("lateral", 5),
            ("auto", 3),
        ] {
            assert_eq!(bullets(&framework(methodology, None)), count, "{methodology}");
        }
        let scamper = framework("scamper", None);
        for word in
            ["Substitute", "Combine", "Adapt", "Modify", "Put to other use", "Eliminate", "Reverse"]
        {
            assert!(scamper.contains(&format!("- **{word}:** ")), "{word}");
            assert!(scamper.lines().any(|l| l.contains(word) && l.ends_with('?')), "{word}");
        }
        let design = framework("design-thinking", None);
        for word in ["Empathize", "Define", "Ideate", "Consider Journey", "Prototype Mindset"] {
            assert!(design.contains(&format!("- **{word}:** ")), "{word}");
        }
    }

    #[test]
    fn auto_framework_without_domain() {
        assert_eq!(
            framework("auto", Some("")),
            "**AI-Optimized Approach:**\n\
             Several methodologies will be combined to cover the widest useful range:\n\
             - Divergent exploration grounded in domain knowledge\n\
             - SCAMPER and lateral-thinking triggers to break habitual patterns\n\
             - A human-centred perspective on who benefits and how"
        );
    }

    #[test]
    fn prompt_markers_from_the_unit_suite() {
        let req = BrainstormRequest {
            methodology: "scamper",
            idea_count: 7,
            ..request("  How can we reduce food waste?  ")
        };
        let prompt = brainstorm_prompt(&req);
        for needle in [
            "# BRAINSTORMING SESSION",
            "## Core Challenge\nHow can we reduce food waste?\n\n",
            "Generate 7 distinct",
            "SCAMPER",
            "## Analysis Framework",
        ] {
            assert!(prompt.contains(needle), "{needle:?} missing");
        }
        let without = brainstorm_prompt(&BrainstormRequest { include_analysis: false, ..req });
        assert!(!without.contains("## Analysis Framework"));
        assert!(!without.contains("**Feasibility:**"));
    }

    #[test]
    fn context_values_verbatim() {
        let req = BrainstormRequest {
            domain: Some("  healthcare "),
            constraints: Some("budget < $10k, no PII"),
            existing_context: Some("We tried *apps* already.\nThey failed."),
            ..request("x")
        };
        let prompt = brainstorm_prompt(&req);
        for needle in [
            "**Domain Focus:**   healthcare  - ",
            "**Constraints & Boundaries:** budget < $10k, no PII\n",
            "**Background Context:** We tried *apps* already.\nThey failed.\n",
            "Given the   healthcare  domain",
        ] {
            assert!(prompt.contains(needle), "{needle:?} missing");
        }
    }

    #[test]
    fn full_prompt_with_analysis() {
        let req = BrainstormRequest {
            methodology: "lateral",
            domain: Some("logistics"),
            constraints: Some("two weeks"),
            existing_context: Some("none yet"),
            idea_count: 3,
            ..request("Cut delivery times")
        };
        let expected = format!(
            "# BRAINSTORMING SESSION

## Core Challenge
Cut delivery times

## Methodology Framework
{LATERAL}

## Context Engineering
*Use the following context to inform your reasoning:*
**Domain Focus:** logistics - Draw on this field's knowledge, vocabulary, practices and known pitfalls.
**Constraints & Boundaries:** two weeks
**Background Context:** none yet

## Output Requirements
- Generate 3 distinct, creative ideas
- Make each idea unique and non-obvious rather than a variation of another
- Keep every idea actionable and realistic to implement
- Give each idea a clear, descriptive name
- Explain each idea briefly

{ANALYSIS_BLOCK}

## Format
Present the ideas in this structured format:

### Idea [N]: [Creative Name]
**Description:** [2-3 sentence explanation]
**Feasibility:** [1-5] | **Impact:** [1-5] | **Innovation:** [1-5]
**Assessment:** [Brief evaluation]

---

**Before answering, review the whole list: remove near-duplicates and check every idea against the constraints.**

Begin the brainstorming session:"
        );
        assert_eq!(brainstorm_prompt(&req), expected);
    }

    #[test]
    fn full_prompt_minimal() {
        let req = BrainstormRequest { include_analysis: false, ..request("Name a cat") };
        let expected = format!(
            "# BRAINSTORMING SESSION

## Core Challenge
Name a cat

## Methodology Framework
{}

## Context Engineering
*Use the following context to inform your reasoning:*




## Output Requirements
- Generate 12 distinct, creative ideas
- Make each idea unique and non-obvious rather than a variation of another
- Keep every idea actionable and realistic to implement
- Give each idea a clear, descriptive name
- Explain each idea briefly



## Format
Present the ideas in this structured format:

### Idea [N]: [Creative Name]
**Description:** [2-3 sentence explanation]


---

**Before answering, review the whole list: remove near-duplicates and check every idea against the constraints.**

Begin the brainstorming session:",
            framework("auto", None)
        );
        assert_eq!(brainstorm_prompt(&req), expected);
    }

    #[test]
    fn analysis_block_asks_for_every_rating() {
        assert!(ANALYSIS_BLOCK.starts_with("## Analysis Framework\n"));
        for needle in [
            "**Feasibility** (1-5)",
            "**Impact** (1-5)",
            "**Innovation** (1-5)",
            "**Quick Assessment**",
        ] {
            assert!(ANALYSIS_BLOCK.contains(needle), "{needle}");
        }
    }

    #[test]
    fn status_lines() {
        assert_eq!(progress_message(12, "auto"), "Generating 12 ideas via auto methodology...");
        assert_eq!(
            debug_line("scamper", None),
            "Brainstorm: Using methodology 'scamper' for domain 'general'"
        );
        assert_eq!(
            debug_line("lateral", Some("fintech")),
            "Brainstorm: Using methodology 'lateral' for domain <7 chars>"
        );
    }
}
