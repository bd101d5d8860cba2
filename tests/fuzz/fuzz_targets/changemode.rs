//! Fuzz target: the changeMode reply parser, the chunker and the renderer. The first two bytes pick
//! the chunk budget; the rest is the model's reply.
//!
//! Properties: every edit's filename and texts come from the reply; the chunks hold every edit
//! exactly once, grouped by file in first-appearance order and otherwise in reply order; the chunk
//! numbering, sizes and budget hold, and a file that fits the budget is never split; every chunk
//! renders with each of its edits; the whole tool flow never panics.

#![no_main]

use gemini_relay::fuzz::{self, Edit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (max, reply) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])) % 8_000, utf8_prefix(rest)),
        _ => return,
    };
    let edits = fuzz::parse_edits(reply);
    for edit in &edits {
        for text in [&edit.filename, &edit.old_code, &edit.new_code] {
            assert!(reply.contains(text.as_str()), "{text:?} is not in the reply {reply:?}");
        }
    }

    let chunks = fuzz::chunk_edits(&edits, max);
    let chunked: Vec<&Edit> = chunks.iter().flat_map(|it| &it.edits).collect();
    assert_eq!(chunked, grouped_by_file(&edits), "chunks of {reply:?} at {max}");
    assert!(!chunks.is_empty());
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(chunk.chunk_index, i + 1);
        assert_eq!(chunk.total_chunks, chunks.len());
        assert_eq!(chunk.has_more, i + 1 < chunks.len());
        assert_eq!(chunk.estimated_chars, chunk.edits.iter().map(fuzz::edit_size).sum::<usize>());
        assert!(!chunk.edits.is_empty() || edits.is_empty());
        if chunk.edits.len() > 1 {
            assert!(chunk.estimated_chars <= max, "chunk {i} over the budget {max}");
        }
    }
    for edit in &edits {
        let file_size: usize =
            edits.iter().filter(|it| it.filename == edit.filename).map(fuzz::edit_size).sum();
        let holding =
            chunks.iter().filter(|it| it.edits.iter().any(|e| e.filename == edit.filename));
        if file_size <= max {
            assert_eq!(holding.count(), 1, "{:?} fits but was split", edit.filename);
        }
    }

    for chunk in &chunks {
        for key in [None, Some("0123abcd")] {
            let text = fuzz::render_chunk(chunk, key);
            for (k, edit) in chunk.edits.iter().enumerate() {
                let header = format!("### Edit {}: {}\n", k + 1, edit.filename);
                assert!(text.contains(&header), "{header:?} missing from {text:?}");
                assert!(text.contains(&edit.new_code), "{:?} missing", edit.new_code);
            }
        }
    }
    fuzz::validate_edits(&edits);
    let summary = fuzz::summarize_edits(&edits, chunks.len() > 1);
    assert!(summary.contains(&format!("Total edits: {}", edits.len())), "{summary}");

    let text = fuzz::process_reply(reply, Some("the prompt"));
    if edits.is_empty() {
        assert!(text.starts_with("No edits found in Gemini's response."), "{text}");
    }
});

/// The edits grouped by filename, groups in the order their file first appears, edits in reply
/// order within a group.
fn grouped_by_file(edits: &[Edit]) -> Vec<&Edit> {
    let mut files: Vec<&str> = Vec::new();
    for edit in edits {
        if !files.contains(&edit.filename.as_str()) {
            files.push(&edit.filename);
        }
    }
    files.iter().flat_map(|file| edits.iter().filter(move |it| it.filename == *file)).collect()
}

/// The longest valid UTF-8 prefix of the input.
fn utf8_prefix(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(err) => std::str::from_utf8(&data[..err.valid_up_to()]).unwrap_or_default(),
    }
}
