//! Splits parsed edits into chunks of a bounded estimated size, keeping each file's edits together
//! where they fit.

use std::collections::HashMap;

use crate::changemode::parse::Edit;
use crate::redact::utf16_len;

/// The default chunk budget in estimated characters.
pub const MAX_CHUNK_CHARS: usize = 20_000;

/// One chunk of a chunked changeMode reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub edits: Vec<Edit>,
    /// 1-based position of this chunk.
    pub chunk_index: usize,
    pub total_chunks: usize,
    pub has_more: bool,
    /// Sum of the estimated sizes of the edits.
    pub estimated_chars: usize,
}

/// Groups edits by filename (first-appearance order) and packs the groups into chunks of at most
/// `max` estimated characters; a file larger than `max` is split edit by edit. Linear in the
/// number of edits, however many distinct files they name.
pub fn chunk_change_mode_edits(edits: Vec<Edit>, max: usize) -> Vec<Chunk> {
    if edits.is_empty() {
        return vec![Chunk {
            edits: Vec::new(),
            chunk_index: 1,
            total_chunks: 1,
            has_more: false,
            estimated_chars: 0,
        }];
    }

    let mut packed: Vec<(Vec<Edit>, usize)> = Vec::new();
    let mut current: Vec<Edit> = Vec::new();
    let mut current_size = 0;
    let mut flush = |current: &mut Vec<Edit>, current_size: &mut usize| {
        packed.push((std::mem::take(current), *current_size));
        *current_size = 0;
    };
    for group in group_by_file(edits) {
        let file_size: usize = group.iter().map(edit_size).sum();
        if file_size > max {
            if !current.is_empty() {
                flush(&mut current, &mut current_size);
            }
            for edit in group {
                let size = edit_size(&edit);
                if current_size + size > max && !current.is_empty() {
                    flush(&mut current, &mut current_size);
                }
                current.push(edit);
                current_size += size;
            }
        } else {
            if current_size + file_size > max && !current.is_empty() {
                flush(&mut current, &mut current_size);
            }
            current.extend(group);
            current_size += file_size;
        }
    }
    if !current.is_empty() {
        flush(&mut current, &mut current_size);
    }

    let total_chunks = packed.len();
    packed
        .into_iter()
        .enumerate()
        .map(|(i, (edits, estimated_chars))| Chunk {
            edits,
            chunk_index: i + 1,
            total_chunks,
            has_more: i + 1 < total_chunks,
            estimated_chars,
        })
        .collect()
}

/// The estimated size of an edit: a fixed overhead plus its texts, in UTF-16 units.
pub fn edit_size(edit: &Edit) -> usize {
    250 + 2 * utf16_len(&edit.filename) + utf16_len(&edit.old_code) + utf16_len(&edit.new_code)
}

/// The edits grouped by filename, groups in the order their file first appears (a map finds an
/// edit's group, so grouping stays linear).
fn group_by_file(edits: Vec<Edit>) -> Vec<Vec<Edit>> {
    let mut groups: Vec<Vec<Edit>> = Vec::new();
    let mut group_of: HashMap<String, usize> = HashMap::new();
    for edit in edits {
        match group_of.get(edit.filename.as_str()) {
            Some(&group) => groups[group].push(edit),
            None => {
                group_of.insert(edit.filename.clone(), groups.len());
                groups.push(vec![edit]);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::XorShift;

    fn edit(filename: &str, old_len: usize, new_len: usize) -> Edit {
        Edit {
            filename: filename.to_owned(),
            old_start_line: 1,
            old_end_line: 1,
            old_code: "o".repeat(old_len),
            new_start_line: 1,
            new_end_line: 1,
            new_code: "n".repeat(new_len),
        }
    }

    /// Chunks `edits` and returns each chunk as its `file:old_len` labels.
    fn check(edits: Vec<Edit>, max: usize, expect: &[&[&str]]) {
        let chunks = chunk_change_mode_edits(edits, max);
        let got: Vec<Vec<String>> = chunks
            .iter()
            .map(|c| {
                c.edits.iter().map(|e| format!("{}:{}", e.filename, e.old_code.len())).collect()
            })
            .collect();
        assert_eq!(got, expect, "chunks");
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk.chunk_index, i + 1);
            assert_eq!(chunk.total_chunks, chunks.len());
            assert_eq!(chunk.has_more, i + 1 < chunks.len());
            assert_eq!(chunk.estimated_chars, chunk.edits.iter().map(edit_size).sum::<usize>());
        }
    }

    #[test]
    fn size_counts_utf16_units() {
        let mut e = edit("é.ts", 0, 0);
        e.old_code = "😀".to_owned();
        e.new_code = "ab".to_owned();
        assert_eq!(edit_size(&e), 250 + 2 * 4 + 2 + 2);
    }

    #[test]
    fn spec_example_four_files_of_about_6270() {
        // 250 + 2 * 4 + 3006 + 3006 = 6270 per edit.
        let edits = ["f1.t", "f2.t", "f3.t", "f4.t"].map(|f| edit(f, 3006, 3006));
        assert_eq!(edit_size(&edits[0]), 6270);
        check(
            edits.to_vec(),
            MAX_CHUNK_CHARS,
            &[&["f1.t:3006", "f2.t:3006", "f3.t:3006"], &["f4.t:3006"]],
        );
    }

    #[test]
    fn empty_list_gives_one_empty_chunk() {
        let chunks = chunk_change_mode_edits(Vec::new(), MAX_CHUNK_CHARS);
        assert_eq!(chunks.len(), 1);
        assert!(chunks[0].edits.is_empty());
        assert_eq!((chunks[0].chunk_index, chunks[0].total_chunks), (1, 1));
        assert!(!chunks[0].has_more);
    }

    #[test]
    fn small_reply_is_one_chunk() {
        check(vec![edit("a", 1, 1), edit("b", 2, 2)], MAX_CHUNK_CHARS, &[&["a:1", "b:2"]]);
    }

    #[test]
    fn edits_of_one_file_become_contiguous() {
        check(
            vec![edit("a", 1, 0), edit("b", 2, 0), edit("a", 3, 0)],
            MAX_CHUNK_CHARS,
            &[&["a:1", "a:3", "b:2"]],
        );
    }

    #[test]
    fn exact_fit_does_not_flush() {
        // Each edit is 250 + 2 + 248 = 500; two fit exactly in 1000.
        check(
            vec![edit("a", 248, 0), edit("b", 248, 0), edit("c", 248, 0)],
            1000,
            &[&["a:248", "b:248"], &["c:248"]],
        );
    }

    #[test]
    fn oversized_file_is_split_edit_by_edit() {
        // File "big" is 3 × 500 = 1500 > 1000: the pending chunk is flushed first, then its
        // edits fill chunks on their own, and the next file joins the last one if it fits.
        check(
            vec![
                edit("a", 248, 0),
                edit("big", 244, 0),
                edit("big", 244, 0),
                edit("big", 244, 0),
                edit("c", 248, 0),
            ],
            1000,
            &[&["a:248"], &["big:244", "big:244"], &["big:244", "c:248"]],
        );
    }

    #[test]
    fn single_edit_larger_than_max_gets_its_own_chunk() {
        check(
            vec![edit("a", 10, 0), edit("b", 5000, 0), edit("c", 10, 0)],
            1000,
            &[&["a:10"], &["b:5000"], &["c:10"]],
        );
    }

    /// The original's chunker, with a linear search per edit: the oracle for the
    /// linear implementation.
    fn reference_chunks(edits: Vec<Edit>, max: usize) -> Vec<Vec<Edit>> {
        let mut groups: Vec<Vec<Edit>> = Vec::new();
        for edit in edits {
            match groups.iter().position(|group| group[0].filename == edit.filename) {
                Some(i) => groups[i].push(edit),
                None => groups.push(vec![edit]),
            }
        }
        let (mut chunks, mut current, mut current_size) = (Vec::new(), Vec::new(), 0);
        for group in groups {
            let file_size: usize = group.iter().map(edit_size).sum();
            if file_size > max {
                if !current.is_empty() {
                    chunks.push(std::mem::take(&mut current));
                    current_size = 0;
                }
                for edit in group {
                    let size = edit_size(&edit);
                    if current_size + size > max && !current.is_empty() {
                        chunks.push(std::mem::take(&mut current));
                        current_size = 0;
                    }
                    current.push(edit);
                    current_size += size;
                }
            } else {
                if current_size + file_size > max && !current.is_empty() {
                    chunks.push(std::mem::take(&mut current));
                    current_size = 0;
                }
                current.extend(group);
                current_size += file_size;
            }
        }
        if !current.is_empty() {
            chunks.push(current);
        }
        chunks
    }

    #[test]
    fn random_replies_match_the_reference_chunker() {
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        for round in 0..500 {
            let n_files = 1 + rng.below(12);
            let edits: Vec<Edit> = (0..rng.below(40))
                .map(|i| {
                    let mut e = edit(&format!("f{}", rng.below(n_files)), rng.below(900), i);
                    e.new_code = format!("{i}");
                    e
                })
                .collect();
            let max = 300 + rng.below(3000);
            let chunks = chunk_change_mode_edits(edits.clone(), max);
            let got: Vec<Vec<Edit>> = chunks.iter().map(|c| c.edits.clone()).collect();
            let expect = reference_chunks(edits.clone(), max);
            if edits.is_empty() {
                assert_eq!(got, [Vec::<Edit>::new()], "round {round}");
                continue;
            }
            assert_eq!(got, expect, "round {round}, max {max}");
            for (i, chunk) in chunks.iter().enumerate() {
                assert_eq!((chunk.chunk_index, chunk.total_chunks), (i + 1, chunks.len()));
                assert_eq!(chunk.has_more, i + 1 < chunks.len());
                assert_eq!(chunk.estimated_chars, chunk.edits.iter().map(edit_size).sum::<usize>());
            }
        }
    }
}
