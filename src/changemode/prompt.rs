//! Builds the changeMode prompt: rewrites `file:` references into `@` tokens and wraps the
//! request in the instructions that ask the model for `**FILE:**`/`OLD:`/`NEW:` blocks.

use crate::js;

/// Rewrites every `file:<path>` into `@<path>` and wraps the result in the changeMode
/// instructions.
pub fn prepare_change_mode_prompt(prompt: &str) -> String {
    build_change_mode_prompt(&rewrite_file_references(prompt))
}

/// JS `prompt.replace(/file:(\S+)/g, "@$1")`.
fn rewrite_file_references(prompt: &str) -> String {
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(found) = rest.find("file:") {
        let after = &rest[found + "file:".len()..];
        let path_len: usize =
            after.chars().take_while(|&c| !js::is_space(c)).map(char::len_utf8).sum();
        if path_len == 0 {
            // No match here; the search goes on one character further.
            out.push_str(&rest[..found + 1]);
            rest = &rest[found + 1..];
            continue;
        }
        out.push_str(&rest[..found]);
        out.push('@');
        out.push_str(&after[..path_len]);
        rest = &after[path_len..];
    }
    out.push_str(rest);
    out
}

/// The instruction wrapper around `request`; it starts and ends with `\n` and contains no `@`,
/// so only the user's own tokens are jail-checked and inlined.
fn build_change_mode_prompt(request: &str) -> String {
    format!(
        "
[CHANGEMODE INSTRUCTIONS]
Your answer will be read by a program that applies the edits automatically, not by a person. \
It only understands the exact format described below, so any deviation makes the edit fail.

INSTRUCTIONS:
1. Study every file included in the request.
2. Find exactly which places have to change to satisfy the request.
3. Write each change in the OUTPUT FORMAT below, one block per change.
4. OLD must be a verbatim copy of text that is in the file right now.
5. NEW must be the complete replacement for that text, ready to use.
6. Check that every line number points to where the OLD text begins.

CRITICAL REQUIREMENTS:
1. Use exactly the format below: bare ``` fences with no language name after them, and no \
other markup around the blocks.
2. Every OLD text must be found by a plain Ctrl+F search in the current file.
3. Every OLD text must occur only once in its file.
4. If a line is not unique (a lone closing tag such as </div>, a bare brace), include the lines \
around it until the whole OLD text is unique.
5. Reproduce whitespace, indentation and line breaks exactly as they are in the file.
6. Always copy whole lines; never start or end OLD or NEW in the middle of a line.

OUTPUT FORMAT (follow exactly):
**FILE: [filename]:[line_number]**
```
OLD:
[exact code to be replaced - must match file content precisely]
NEW:
[new code to insert - complete and functional]
```

EXAMPLE 1 - Simple unique match:
**FILE: src/utils/helper.js:100**
```
OLD:
function getMessage() {{
  return \"Hello World\";
}}
NEW:
function getMessage() {{
  return \"Hello Universe!\";
}}
```

EXAMPLE 2 - Common tag needing context:
**FILE: index.html:245**
```
OLD:
        </div>
      </div>
    </section>
NEW:
        </div>
      </footer>
    </section>
```

IMPORTANT: an edit is applied only when its OLD text is an exact copy of the file content, \
character for character, that a Ctrl+F search would find.

USER REQUEST:
{request}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changemode::parse::parse_change_mode_output;

    fn check_rewrite(input: &str, expect: &str) {
        assert_eq!(rewrite_file_references(input), expect, "{input:?}");
    }

    #[test]
    fn rewrites_file_references() {
        check_rewrite("bump file:src/index.ts please", "bump @src/index.ts please");
        check_rewrite("file:a.ts and file:b/c.md", "@a.ts and @b/c.md");
        check_rewrite("file:src/index.ts", "@src/index.ts");
    }

    #[test]
    fn rewrite_is_faithful_to_the_regex() {
        check_rewrite("profile:x", "pro@x");
        check_rewrite("file:file:x", "@file:x");
        check_rewrite("file: x", "file: x");
        check_rewrite("file:", "file:");
        check_rewrite("file:\u{a0}x", "file:\u{a0}x");
        check_rewrite("ffile:éx\ty", "f@éx\ty");
        check_rewrite("no references", "no references");
    }

    #[test]
    fn wrapper_shape() {
        let out = prepare_change_mode_prompt("do the thing");
        assert!(out.starts_with("\n[CHANGEMODE INSTRUCTIONS]\n"), "{out}");
        assert!(out.ends_with("\nUSER REQUEST:\ndo the thing\n"), "{out}");
        for marker in [
            "\nINSTRUCTIONS:\n",
            "\nCRITICAL REQUIREMENTS:\n",
            "\nOUTPUT FORMAT (follow exactly):\n**FILE: [filename]:[line_number]**\n```\nOLD:\n",
            "\nEXAMPLE 1 - Simple unique match:\n**FILE: src/utils/helper.js:100**\n```\n",
            "\nEXAMPLE 2 - Common tag needing context:\n**FILE: index.html:245**\n```\n",
            "\nIMPORTANT:",
        ] {
            assert!(out.contains(marker), "missing {marker:?}");
        }
    }

    #[test]
    fn wrapper_has_no_at_sign_of_its_own() {
        assert!(!build_change_mode_prompt("x").contains('@'));
        assert_eq!(prepare_change_mode_prompt("see file:a.ts").matches('@').count(), 1);
    }

    #[test]
    fn wrapper_rewrites_the_request() {
        let out = prepare_change_mode_prompt("bump file:package.json");
        assert!(out.ends_with("USER REQUEST:\nbump @package.json\n"));
    }

    #[test]
    fn wrapper_examples_use_the_parsed_format() {
        // The examples must themselves be valid edits, or the model learns a broken format.
        let edits = parse_change_mode_output(&build_change_mode_prompt("x"));
        let got: Vec<(&str, u64)> =
            edits.iter().map(|e| (e.filename.as_str(), e.old_start_line)).collect();
        assert_eq!(got, [("src/utils/helper.js", 100), ("index.html", 245)]);
        assert!(edits[0].new_code.contains("Hello Universe!"));
        assert!(edits[1].old_code.starts_with("        </div>\n      </div>"));
        assert!(edits[1].new_code.contains("</footer>"));
    }
}
