//! Validates parsed edits and renders them for the client: headers, edit blocks, footer,
//! continuation to the next chunk, and the per-file summary.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write;

use crate::changemode::parse::Edit;

/// Where a rendered chunk sits in a chunked reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkInfo<'a> {
    /// 1-based index of the rendered chunk.
    pub current: usize,
    pub total: usize,
    pub cache_key: Option<&'a str>,
}

/// Every validation error of `edits`, in order (empty when all edits are valid).
pub fn validate_change_mode_edits(edits: &[Edit]) -> Vec<String> {
    let mut errors = Vec::new();
    for edit in edits {
        let file = &edit.filename;
        if file.is_empty() {
            errors.push("Edit missing filename".to_owned());
        }
        if edit.old_start_line > edit.old_end_line {
            let (start, end) = (edit.old_start_line, edit.old_end_line);
            errors.push(format!("Invalid line range for {file}: {start} > {end}"));
        }
        if edit.new_start_line > edit.new_end_line {
            let (start, end) = (edit.new_start_line, edit.new_end_line);
            errors.push(format!("Invalid new line range for {file}: {start} > {end}"));
        }
        if edit.old_code.is_empty() && edit.new_code.is_empty() {
            errors.push(format!("Empty edit for {file}"));
        }
    }
    errors
}

/// The tool text for failed validation.
pub fn validation_failure_text(errors: &[String]) -> String {
    format!("Edit validation failed:\n{}", errors.join("\n"))
}

/// Renders `edits` as header + edit blocks + footer (+ continuation); no trailing newline.
pub fn format_change_mode_response(edits: &[Edit], chunk_info: Option<ChunkInfo<'_>>) -> String {
    let n = edits.len();
    let mut out = match chunk_info {
        Some(info) if info.total > 1 => format!(
            "[CHANGEMODE OUTPUT - Chunk {current} of {total}]\n\n\
             Gemini has analyzed your codebase and generated edits across {total} chunks.\n\
             This chunk contains {n} complete edit{s} that can be applied independently.\n\n\
             Each chunk contains self-contained edits grouped by file. You can safely apply these edits\n\
             before fetching the next chunk.\n\n",
            current = info.current,
            total = info.total,
            s = plural(n),
        ),
        _ => format!(
            "[CHANGEMODE OUTPUT - Gemini has analyzed the files and provided these edits]\n\n\
             I have prepared {n} modification{s} for your codebase.\n\n\
             IMPORTANT: Apply these edits directly WITHOUT reading the files first. The edits below contain exact text matches from the current file contents.\n\n",
            s = plural(n),
        ),
    };

    let blocks: Vec<String> = edits
        .iter()
        .enumerate()
        .map(|(i, edit)| {
            format!(
                "### Edit {k}: {file}\n\nReplace this exact text:\n```\n{old}\n```\n\n\
                 With this text:\n```\n{new}\n```\n",
                k = i + 1,
                file = edit.filename,
                old = edit.old_code,
                new = edit.new_code,
            )
        })
        .collect();
    out.push_str(&blocks.join("\n"));

    out.push_str(
        "\n---\nApply these edits in order. Each edit uses exact string matching, so the old_str must match exactly what appears between the code blocks.",
    );
    match chunk_info {
        Some(ChunkInfo { current, total, cache_key: Some(key) })
            if current < total && !key.is_empty() =>
        {
            out.push_str(&continuation(current, total, key));
        }
        _ => (),
    }
    out
}

/// The per-file summary of `edits`; `partial_view` marks a summary shown with one chunk of many.
pub fn summarize_change_mode_edits<'a>(
    edits: impl IntoIterator<Item = &'a Edit>,
    partial_view: bool,
) -> String {
    // Files in first-appearance order with their counts; the map finds a file's row in constant
    // time, so the summary stays linear in the number of edits.
    let mut files: Vec<(&str, usize)> = Vec::new();
    let mut row_of: HashMap<&str, usize> = HashMap::new();
    let mut total = 0;
    for edit in edits {
        total += 1;
        match row_of.entry(&edit.filename) {
            Entry::Occupied(row) => files[*row.get()].1 += 1,
            Entry::Vacant(row) => {
                row.insert(files.len());
                files.push((&edit.filename, 1));
            }
        }
    }
    let (title, across) = if partial_view {
        ("ChangeMode Summary (Complete analysis across all chunks):", " (across all chunks)")
    } else {
        ("ChangeMode Summary:", "")
    };
    let mut out =
        format!("{title}\nTotal edits: {total}{across}\nFiles affected: {}\n", files.len());
    for (file, count) in &files {
        // Writing to a `String` cannot fail.
        let _ = write!(out, "\n- {file}: {count} edit{}", plural(*count));
    }
    if files.is_empty() {
        out.push('\n');
    }
    out
}

/// The text asking the client to fetch chunk `current + 1`.
fn continuation(current: usize, total: usize, key: &str) -> String {
    let next = current + 1;
    let remaining = total - current;
    let (verb, s) = if remaining == 1 { ("is", "") } else { ("are", "s") };
    format!(
        "\n\n---\n**Next Step**: After applying the edits above, retrieve the next chunk ({next} of {total}) using:\n\n\
         ```\ngemini-fetch-chunk cacheKey=\"{key}\" chunkIndex={next}\n```\n\n\
         There {verb} {remaining} more chunk{s} containing additional edits.\n\n\
         **CONTINUE**: You are working on a multi-chunk changeMode response. After applying these edits, fetch the next chunk to continue with the remaining modifications."
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::XorShift;

    fn edit(file: &str, old: &str, new: &str) -> Edit {
        Edit {
            filename: file.to_owned(),
            old_start_line: 1,
            old_end_line: 1,
            old_code: old.to_owned(),
            new_start_line: 1,
            new_end_line: 1,
            new_code: new.to_owned(),
        }
    }

    fn info(current: usize, total: usize, cache_key: Option<&str>) -> Option<ChunkInfo<'_>> {
        Some(ChunkInfo { current, total, cache_key })
    }

    /// Renders and checks that every `present` text appears and no `absent` text does.
    fn check(edits: &[Edit], chunk_info: Option<ChunkInfo<'_>>, present: &[&str], absent: &[&str]) {
        let out = format_change_mode_response(edits, chunk_info);
        for text in present {
            assert!(out.contains(text), "missing {text:?} in:\n{out}");
        }
        for text in absent {
            assert!(!out.contains(text), "unexpected {text:?} in:\n{out}");
        }
    }

    fn check_validation(edit: Edit, expect: &[&str]) {
        assert_eq!(validate_change_mode_edits(&[edit]), expect);
    }

    #[test]
    fn verified_example_byte_for_byte() {
        let out =
            format_change_mode_response(&[edit("src/a.ts", "const x = 1;", "const x = 2;")], None);
        let expect = "[CHANGEMODE OUTPUT - Gemini has analyzed the files and provided these edits]

I have prepared 1 modification for your codebase.

IMPORTANT: Apply these edits directly WITHOUT reading the files first. The edits below contain exact text matches from the current file contents.

### Edit 1: src/a.ts

Replace this exact text:
```
const x = 1;
```

With this text:
```
const x = 2;
```

---
Apply these edits in order. Each edit uses exact string matching, so the old_str must match exactly what appears between the code blocks.";
        assert_eq!(out, expect);
    }

    #[test]
    fn translator_single_chunk() {
        check(
            &[edit("a.ts", "old line", "new line")],
            None,
            &[
                "CHANGEMODE OUTPUT",
                "1 modification for",
                "Replace this exact text:",
                "old line",
                "new line",
                "Apply these edits in order",
            ],
            &["Chunk 1 of", "Next Step"],
        );
    }

    #[test]
    fn translator_two_edits_plural() {
        check(&[edit("a.ts", "a", "b"), edit("b.ts", "c", "d")], None, &["2 modifications"], &[]);
    }

    #[test]
    fn translator_chunk_one_of_three() {
        check(
            &[edit("a.ts", "a", "b")],
            info(1, 3, Some("abcd1234")),
            &[
                "Chunk 1 of 3",
                "gemini-fetch-chunk cacheKey=\"abcd1234\" chunkIndex=2",
                "2 more chunks",
                "(2 of 3)",
                "There are 2 more chunks containing additional edits.",
            ],
            &["I have prepared"],
        );
    }

    #[test]
    fn translator_last_chunk_has_no_continuation() {
        check(
            &[edit("a.ts", "a", "b")],
            info(3, 3, Some("abcd1234")),
            &["Chunk 3 of 3"],
            &["Next Step", "gemini-fetch-chunk"],
        );
    }

    #[test]
    fn one_remaining_chunk_is_singular() {
        check(
            &[edit("a.ts", "a", "b")],
            info(2, 3, Some("abcd1234")),
            &["There is 1 more chunk containing additional edits.", "chunkIndex=3"],
            &[],
        );
    }

    #[test]
    fn no_continuation_without_a_key() {
        check(&[edit("a.ts", "a", "b")], info(1, 2, None), &["Chunk 1 of 2"], &["Next Step"]);
        check(&[edit("a.ts", "a", "b")], info(1, 2, Some("")), &["Chunk 1 of 2"], &["Next Step"]);
    }

    #[test]
    fn chunk_info_with_one_chunk_uses_the_single_header() {
        check(
            &[edit("a.ts", "a", "b")],
            info(1, 1, Some("abcd1234")),
            &["I have prepared"],
            &["Chunk 1 of 1"],
        );
    }

    #[test]
    fn chunked_reply_byte_for_byte() {
        let out = format_change_mode_response(
            &[edit("a.ts", "a", "b"), edit("a.ts", "c", "d")],
            info(1, 2, Some("0badf00d")),
        );
        let expect = "[CHANGEMODE OUTPUT - Chunk 1 of 2]

Gemini has analyzed your codebase and generated edits across 2 chunks.
This chunk contains 2 complete edits that can be applied independently.

Each chunk contains self-contained edits grouped by file. You can safely apply these edits
before fetching the next chunk.

### Edit 1: a.ts

Replace this exact text:
```
a
```

With this text:
```
b
```

### Edit 2: a.ts

Replace this exact text:
```
c
```

With this text:
```
d
```

---
Apply these edits in order. Each edit uses exact string matching, so the old_str must match exactly what appears between the code blocks.

---
**Next Step**: After applying the edits above, retrieve the next chunk (2 of 2) using:

```
gemini-fetch-chunk cacheKey=\"0badf00d\" chunkIndex=2
```

There is 1 more chunk containing additional edits.

**CONTINUE**: You are working on a multi-chunk changeMode response. After applying these edits, fetch the next chunk to continue with the remaining modifications.";
        assert_eq!(out, expect);
    }

    #[test]
    fn summary_counts_files_in_first_appearance_order() {
        let edits = [edit("a.ts", "1", ""), edit("b.ts", "2", ""), edit("a.ts", "3", "")];
        assert_eq!(
            summarize_change_mode_edits(&edits, false),
            "ChangeMode Summary:\nTotal edits: 3\nFiles affected: 2\n\n- a.ts: 2 edits\n- b.ts: 1 edit"
        );
    }

    #[test]
    fn summary_partial_view_mentions_all_chunks() {
        let edits = [edit("a.ts", "1", "")];
        assert_eq!(
            summarize_change_mode_edits(&edits, true),
            "ChangeMode Summary (Complete analysis across all chunks):\n\
             Total edits: 1 (across all chunks)\nFiles affected: 1\n\n- a.ts: 1 edit"
        );
    }

    #[test]
    fn validation_accepts_a_normal_edit() {
        check_validation(edit("a.ts", "x", ""), &[]);
        check_validation(edit("a.ts", "", "y"), &[]);
    }

    #[test]
    fn validation_missing_filename() {
        check_validation(edit("", "x", "y"), &["Edit missing filename"]);
    }

    #[test]
    fn validation_empty_edit() {
        check_validation(edit("a.ts", "", ""), &["Empty edit for a.ts"]);
    }

    #[test]
    fn validation_line_ranges_in_order() {
        let mut e = edit("", "", "");
        (e.old_start_line, e.old_end_line, e.new_start_line, e.new_end_line) = (9, 3, 7, 2);
        check_validation(
            e,
            &[
                "Edit missing filename",
                "Invalid line range for : 9 > 3",
                "Invalid new line range for : 7 > 2",
                "Empty edit for ",
            ],
        );
    }

    #[test]
    fn validation_failure_text_joins_errors() {
        let errors = ["Edit missing filename".to_owned(), "Empty edit for a".to_owned()];
        assert_eq!(
            validation_failure_text(&errors),
            "Edit validation failed:\nEdit missing filename\nEmpty edit for a"
        );
    }

    #[test]
    fn summary_matches_a_linear_search_on_random_edits() {
        let mut rng = XorShift::new(0x51_7cc1_b727_220a);
        for _ in 0..300 {
            let edits: Vec<Edit> =
                (0..rng.below(30)).map(|_| edit(&format!("f{}", rng.below(8)), "x", "")).collect();
            let mut files: Vec<(String, usize)> = Vec::new();
            for e in &edits {
                match files.iter().position(|(file, _)| *file == e.filename) {
                    Some(i) => files[i].1 += 1,
                    None => files.push((e.filename.clone(), 1)),
                }
            }
            let lines: Vec<String> =
                files.iter().map(|(f, n)| format!("- {f}: {n} edit{}", plural(*n))).collect();
            let expect = format!(
                "ChangeMode Summary:\nTotal edits: {}\nFiles affected: {}\n\n{}",
                edits.len(),
                files.len(),
                lines.join("\n")
            );
            assert_eq!(summarize_change_mode_edits(&edits, false), expect);
        }
    }
}
