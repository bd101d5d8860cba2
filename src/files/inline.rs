//! Inlining one file into the prompt under the shared byte budget, and the drop footers.
//!
//! The budget counts every byte inlining adds to the prompt: each block whole (header, text,
//! truncation line, trailer) and the footers, so that however many files or tokens match, the
//! prompt grows by at most [`BUDGET`] bytes. Blocks may use all but [`FOOTER_RESERVE`] bytes of it;
//! the reserve holds the footers, whose dropped-file names are listed only while they fit in it.
//! The budget closes at the first file that does not fit: that file and every later one are
//! omitted unread, which keeps a prompt of many tokens linear (each later token is a count).

use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;

/// At most this many bytes of one file are inlined.
pub(crate) const FILE_CAP: u64 = 262_144;

/// Inlining adds at most this many bytes to one prompt, footers included.
pub(crate) const BUDGET: usize = 2_097_152;

/// The part of the budget kept for the footers.
pub(crate) const FOOTER_RESERVE: usize = 8_192;

/// A file whose first this-many bytes contain a NUL byte is binary.
pub(crate) const SNIFF_WINDOW: usize = 8_192;

/// How many dropped names a footer lists before summarising the rest.
pub(crate) const LISTED_NAMES: usize = 10;

/// Bytes of the footer reserve that the footers' fixed text can take: both footers with 20-digit
/// counts and the `, and <n> more` tail, with room to spare. The rest is for listed names.
const FOOTER_TEXT: usize = 512;

/// What became of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Inlined,
    /// Dropped silently: a NUL byte in the sniff window.
    Binary,
    /// Dropped and footnoted: the budget is closed.
    Omitted,
    /// Dropped and footnoted: opening or reading failed.
    Unreadable,
}

/// The per-prompt inlining state: bytes added and the files dropped for the footers.
#[derive(Debug)]
pub(crate) struct Inliner {
    spent: usize,
    closed: bool,
    omitted: Dropped,
    unreadable: Dropped,
    /// Bytes left for listed names in both footers.
    name_room: usize,
}

impl Inliner {
    pub(crate) fn new() -> Inliner {
        Inliner {
            spent: 0,
            closed: false,
            omitted: Dropped::default(),
            unreadable: Dropped::default(),
            name_room: FOOTER_RESERVE - FOOTER_TEXT,
        }
    }

    /// Whether the budget is closed, so that every further file is omitted without being read.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Appends the block of the file `open` yields to `out`, or drops the file (budget closed,
    /// binary, or unreadable). `open` runs only when the budget could still hold the block.
    pub(crate) fn inline(
        &mut self,
        label: &str,
        open: impl FnOnce() -> io::Result<File>,
        out: &mut String,
    ) -> Outcome {
        if self.closed || self.spent + block_len(label, 0) > BLOCK_LIMIT {
            self.omit(label);
            return Outcome::Omitted;
        }
        let (size, bytes) = match open().and_then(read_head) {
            Ok(it) => it,
            Err(err) => {
                log::warn!("inlineFileReferences: could not read {label}: {err}");
                self.unreadable.record(label, &mut self.name_room);
                return Outcome::Unreadable;
            }
        };
        if bytes[..bytes.len().min(SNIFF_WINDOW)].contains(&0) {
            log::warn!("inlineFileReferences: skipping binary file {label}");
            return Outcome::Binary;
        }
        let got = bytes.len() as u64;
        let text = String::from_utf8_lossy(&bytes);
        let truncation = match size > got {
            true => format!(
                "\n----- TRUNCATED: {label} is {size} bytes, only the first {got} are shown -----"
            ),
            false => String::new(),
        };
        let len = block_len(label, text.len() + truncation.len());
        if self.spent + len > BLOCK_LIMIT {
            self.omit(label);
            return Outcome::Omitted;
        }
        let before = out.len();
        out.push_str("\n----- BEGIN FILE: ");
        out.push_str(label);
        out.push_str(" -----\n");
        out.push_str(&text);
        out.push_str(&truncation);
        out.push_str("\n----- END FILE: ");
        out.push_str(label);
        out.push_str(" -----\n");
        debug_assert_eq!(out.len() - before, len);
        self.spent += len;
        Outcome::Inlined
    }

    /// Appends `out[block]` again: the block [`Inliner::inline`] wrote there for the same file under
    /// the same label, so the file is not read again; or omits the file as `inline` would when the
    /// budget cannot hold the block.
    pub(crate) fn inline_again(
        &mut self,
        label: &str,
        block: Range<usize>,
        out: &mut String,
    ) -> Outcome {
        if self.closed || self.spent + block.len() > BLOCK_LIMIT {
            self.omit(label);
            return Outcome::Omitted;
        }
        self.spent += block.len();
        out.extend_from_within(block);
        Outcome::Inlined
    }

    /// Records `label` as omitted and closes the budget.
    pub(crate) fn omit(&mut self, label: &str) {
        self.closed = true;
        self.omitted.record(label, &mut self.name_room);
    }

    /// Records `count` omitted files at once (budget closed), listing names from `labels` while
    /// the footer has places and room for them.
    pub(crate) fn omit_many<'a>(&mut self, count: usize, labels: impl Iterator<Item = &'a str>) {
        self.closed |= count > 0;
        let naming = count.min(LISTED_NAMES.saturating_sub(self.omitted.names.len()));
        let mut recorded = 0;
        for label in labels.take(naming) {
            self.omitted.record(label, &mut self.name_room);
            recorded += 1;
        }
        self.omitted.count += count - recorded;
    }

    /// The OMITTED and UNREADABLE footers, each present only when it counts at least one file.
    pub(crate) fn footers(&self) -> String {
        let mut footers = String::new();
        if self.omitted.count > 0 {
            footers.push_str(&format!(
                "\n----- OMITTED: the {BUDGET} byte inline budget was reached; {} -----\n",
                self.omitted.summary()
            ));
        }
        if self.unreadable.count > 0 {
            footers.push_str(&format!(
                "\n----- UNREADABLE: files exist but could not be read; {} -----\n",
                self.unreadable.summary()
            ));
        }
        debug_assert!(self.spent + footers.len() <= BUDGET);
        footers
    }
}

/// Blocks may add at most this many bytes in all.
const BLOCK_LIMIT: usize = BUDGET - FOOTER_RESERVE;

/// The length of a block for `label` whose text and truncation line take `body` bytes.
fn block_len(label: &str, body: usize) -> usize {
    const FIXED: usize = "\n----- BEGIN FILE: ".len()
        + " -----\n".len()
        + "\n----- END FILE: ".len()
        + " -----\n".len();
    FIXED + 2 * label.len() + body
}

/// Dropped files: the first few labels (as many as fit) and the total count, so that a prompt full
/// of `@.` tokens does not make this grow with every file of every token.
#[derive(Debug, Default)]
struct Dropped {
    names: Vec<String>,
    count: usize,
}

impl Dropped {
    fn record(&mut self, label: &str, name_room: &mut usize) {
        let cost = label.len() + ", ".len();
        if self.names.len() < LISTED_NAMES && cost <= *name_room {
            *name_room -= cost;
            self.names.push(label.to_string());
        }
        self.count += 1;
    }

    /// `<count> file(s) not included: <names><rest>`, where `<rest>` counts the files not named;
    /// with no name listed (none fitted the reserve) only `<count> file(s) not included`.
    fn summary(&self) -> String {
        if self.names.is_empty() {
            return format!("{} file(s) not included", self.count);
        }
        let mut summary = format!("{} file(s) not included: {}", self.count, self.names.join(", "));
        if self.count > self.names.len() {
            summary.push_str(&format!(", and {} more", self.count - self.names.len()));
        }
        summary
    }
}

/// Reads up to `FILE_CAP` bytes from the start of `file`; returns the file size and the bytes.
fn read_head(file: File) -> io::Result<(u64, Vec<u8>)> {
    let size = file.metadata()?.len();
    let wanted = size.min(FILE_CAP);
    let mut bytes = Vec::with_capacity(wanted as usize);
    file.take(wanted).read_to_end(&mut bytes)?;
    Ok((size, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::{Path, PathBuf};

    use crate::files::fd::open_regular;
    use crate::testutil::TempDir;

    /// A file holding `contents` in a fresh directory; the file goes when the directory is dropped.
    fn temp_file(contents: &[u8]) -> (TempDir, PathBuf) {
        let dir = TempDir::new();
        let file = dir.file("file.txt", contents);
        (dir, file)
    }

    fn inline(inliner: &mut Inliner, label: &str, path: &Path, out: &mut String) -> Outcome {
        inliner.inline(label, || open_regular(path), out)
    }

    fn check(contents: &[u8], expected_block: &str) {
        let (_dir, file) = temp_file(contents);
        let mut inliner = Inliner::new();
        let mut out = String::new();
        let outcome = inline(&mut inliner, "x.txt", &file, &mut out);
        assert_eq!(out, expected_block);
        assert_eq!(outcome == Outcome::Inlined, !expected_block.is_empty());
        assert_eq!(inliner.spent, out.len(), "every byte of the block counts");
        assert_eq!(inliner.footers(), "");
    }

    #[test]
    fn small_text_file() {
        check(
            b"hello\n",
            "\n----- BEGIN FILE: x.txt -----\nhello\n\n----- END FILE: x.txt -----\n",
        );
    }

    #[test]
    fn empty_file() {
        check(b"", "\n----- BEGIN FILE: x.txt -----\n\n----- END FILE: x.txt -----\n");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        check(
            b"a\xffb\xc3",
            "\n----- BEGIN FILE: x.txt -----\na\u{fffd}b\u{fffd}\n----- END FILE: x.txt -----\n",
        );
    }

    #[test]
    fn nul_in_the_sniff_window_is_binary() {
        check(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "");
    }

    #[test]
    fn nul_after_the_sniff_window_is_text() {
        let mut contents = vec![b'a'; SNIFF_WINDOW];
        contents.push(0);
        let (_dir, file) = temp_file(&contents);
        let mut out = String::new();
        assert_eq!(inline(&mut Inliner::new(), "x.txt", &file, &mut out), Outcome::Inlined);
        assert!(out.contains("a\0\n----- END FILE: x.txt -----\n"));
    }

    #[test]
    fn multibyte_character_cut_at_the_cap() {
        let mut contents = vec![b'a'; FILE_CAP as usize - 1];
        contents.extend_from_slice("é".as_bytes());
        let (_dir, file) = temp_file(&contents);
        let mut out = String::new();
        let mut inliner = Inliner::new();
        assert_eq!(inline(&mut inliner, "cut.txt", &file, &mut out), Outcome::Inlined);
        let tail = "a\u{fffd}\n----- TRUNCATED: cut.txt is 262145 bytes, only the first 262144 are shown -----\n----- END FILE: cut.txt -----\n";
        assert!(out.ends_with(tail), "{}", &out[out.len() - 200..]);
        assert_eq!(inliner.spent, out.len(), "the truncation line and the U+FFFD count too");
    }

    #[test]
    fn missing_file_is_unreadable() {
        let mut inliner = Inliner::new();
        let mut out = String::new();
        let missing = Path::new("/nonexistent/gone.txt");
        assert_eq!(inline(&mut inliner, "gone.txt", missing, &mut out), Outcome::Unreadable);
        assert_eq!(out, "");
        assert_eq!(
            inliner.footers(),
            "\n----- UNREADABLE: files exist but could not be read; 1 file(s) not included: gone.txt -----\n"
        );
    }

    #[test]
    fn directory_is_unreadable() {
        let dir = TempDir::new();
        let mut inliner = Inliner::new();
        assert_eq!(
            inline(&mut inliner, "tmp", dir.path(), &mut String::new()),
            Outcome::Unreadable
        );
        assert!(inliner.footers().contains("1 file(s) not included: tmp -----"));
    }

    #[test]
    fn footers_list_ten_names_then_the_rest() {
        let mut inliner = Inliner::new();
        for n in 0..13 {
            inliner.omit(&format!("f{n}.txt"));
        }
        assert_eq!(
            inliner.footers(),
            "\n----- OMITTED: the 2097152 byte inline budget was reached; 13 file(s) not included: \
             f0.txt, f1.txt, f2.txt, f3.txt, f4.txt, f5.txt, f6.txt, f7.txt, f8.txt, f9.txt, and 3 more -----\n"
        );
    }

    #[test]
    fn omitting_many_at_once_lists_the_first_names() {
        let mut inliner = Inliner::new();
        inliner.omit("first.txt");
        let labels = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"];
        inliner.omit_many(1_000_000, labels.iter().copied());
        assert_eq!(
            inliner.footers(),
            "\n----- OMITTED: the 2097152 byte inline budget was reached; 1000001 file(s) not included: \
             first.txt, a, b, c, d, e, f, g, h, i, and 999991 more -----\n"
        );
        let mut inliner = Inliner::new();
        inliner.omit_many(2, labels.iter().copied());
        assert!(inliner.footers().contains("; 2 file(s) not included: a, b -----"));
    }

    #[test]
    fn names_longer_than_the_reserve_are_counted_not_listed() {
        let mut inliner = Inliner::new();
        let long = "x".repeat(FOOTER_RESERVE);
        inliner.omit(&long);
        inliner.omit("short.txt");
        let footers = inliner.footers();
        assert_eq!(
            footers,
            "\n----- OMITTED: the 2097152 byte inline budget was reached; 2 file(s) not included: short.txt, and 1 more -----\n"
        );
        let mut inliner = Inliner::new();
        inliner.omit(&long);
        assert!(inliner.footers().ends_with("; 1 file(s) not included -----\n"));
    }

    #[test]
    fn a_file_over_the_remaining_budget_closes_it() {
        let (_dir, file) = temp_file(b"0123456789");
        let (_dir2, small) = temp_file(b"");
        let ten_block = block_len("ten.txt", 10);
        let mut inliner = Inliner::new();
        inliner.spent = BLOCK_LIMIT - ten_block + 1;
        assert_eq!(inline(&mut inliner, "ten.txt", &file, &mut String::new()), Outcome::Omitted);
        assert!(inliner.is_closed());
        assert_eq!(
            inline(&mut inliner, "s", &small, &mut String::new()),
            Outcome::Omitted,
            "a closed budget omits even a file that would fit"
        );
        let mut inliner = Inliner::new();
        inliner.spent = BLOCK_LIMIT - ten_block;
        assert_eq!(inline(&mut inliner, "ten.txt", &file, &mut String::new()), Outcome::Inlined);
        assert_eq!(inliner.spent, BLOCK_LIMIT);
        assert!(!inliner.is_closed());
        assert_eq!(inliner.footers(), "");
    }

    #[test]
    fn a_label_too_long_for_the_budget_is_omitted_without_opening() {
        let mut inliner = Inliner::new();
        let label = "l".repeat(BUDGET / 2);
        let outcome = inliner.inline(&label, || panic!("opened"), &mut String::new());
        assert_eq!(outcome, Outcome::Omitted);
        assert!(inliner.footers().ends_with("; 1 file(s) not included -----\n"));
    }

    #[test]
    fn growth_never_passes_the_budget() {
        let (_dir, file) = temp_file(b"");
        let mut inliner = Inliner::new();
        let mut out = String::new();
        let mut n = 0;
        while !inliner.is_closed() {
            inline(&mut inliner, &format!("dir/file-{n:06}.txt"), &file, &mut out);
            n += 1;
        }
        inliner.omit_many(5_000_000, std::iter::repeat("a-long-name-for-each-file.txt"));
        for n in 0..100 {
            inliner.unreadable.record(&format!("unreadable-{n}"), &mut inliner.name_room);
        }
        out.push_str(&inliner.footers());
        assert!(out.len() <= BUDGET, "{} bytes", out.len());
        assert!(out.len() > BUDGET - FOOTER_RESERVE, "the budget is used");
    }
}
