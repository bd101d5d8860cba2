//! Inlining one file into the prompt under the shared byte budget, and the drop footers (SPEC §5.5-5.6).

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// At most this many bytes of one file are inlined.
pub(crate) const FILE_CAP: u64 = 262_144;

/// At most this many file bytes are inlined into one prompt.
pub(crate) const BUDGET: u64 = 2_097_152;

/// A file whose first this-many bytes contain a NUL byte is binary.
pub(crate) const SNIFF_WINDOW: usize = 8_192;

/// How many dropped names a footer lists before summarising the rest.
pub(crate) const LISTED_NAMES: usize = 10;

/// The per-prompt inlining state: bytes spent and the files dropped for the footers.
#[derive(Debug, Default)]
pub(crate) struct Inliner {
    spent: u64,
    omitted: Dropped,
    unreadable: Dropped,
}

impl Inliner {
    pub(crate) fn new() -> Inliner {
        Inliner::default()
    }

    /// Whether the budget is used up, so that every further file is omitted without being read.
    fn is_exhausted(&self) -> bool {
        self.spent >= BUDGET
    }

    /// Records `label` as omitted for the budget without touching the file.
    fn omit(&mut self, label: &str) {
        self.omitted.record(label);
    }

    /// Appends the block of the file at canonical `path` to `out` and returns true, or drops the
    /// file (binary, over budget or unreadable) and returns false.
    pub(crate) fn inline_file(&mut self, label: &str, path: &Path, out: &mut String) -> bool {
        if self.is_exhausted() {
            self.omit(label);
            return false;
        }
        let (size, bytes) = match read_head(path) {
            Ok(it) => it,
            Err(err) => {
                log::warn!("inlineFileReferences: could not read {label}: {err}");
                self.unreadable.record(label);
                return false;
            }
        };
        let got = bytes.len() as u64;
        if bytes[..bytes.len().min(SNIFF_WINDOW)].contains(&0) {
            log::warn!("inlineFileReferences: skipping binary file {label}");
            return false;
        }
        if self.spent + got > BUDGET {
            self.omit(label);
            return false;
        }
        self.spent += got;
        out.push_str("\n----- BEGIN FILE: ");
        out.push_str(label);
        out.push_str(" -----\n");
        out.push_str(&String::from_utf8_lossy(&bytes));
        if size > got {
            out.push_str(&format!(
                "\n----- TRUNCATED: {label} is {size} bytes, only the first {got} are shown -----"
            ));
        }
        out.push_str("\n----- END FILE: ");
        out.push_str(label);
        out.push_str(" -----\n");
        true
    }

    /// The OMITTED and UNREADABLE footers, each present only when it names at least one file.
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
        footers
    }
}

/// Dropped files: the first few labels and the total count (a prompt full of `@.` tokens must not
/// make this grow with every file of every token).
#[derive(Debug, Default)]
struct Dropped {
    names: Vec<String>,
    count: usize,
}

impl Dropped {
    fn record(&mut self, label: &str) {
        if self.names.len() < LISTED_NAMES {
            self.names.push(label.to_string());
        }
        self.count += 1;
    }

    /// `<count> file(s) not included: <names><rest>`.
    fn summary(&self) -> String {
        let mut summary = format!("{} file(s) not included: {}", self.count, self.names.join(", "));
        if self.count > LISTED_NAMES {
            summary.push_str(&format!(", and {} more", self.count - LISTED_NAMES));
        }
        summary
    }
}

/// Opens a canonical path and reads up to `FILE_CAP` bytes; returns the file size and the bytes.
///
/// `O_NOFOLLOW` refuses a final component swapped for a symlink since the path was canonicalized,
/// and `O_NONBLOCK` keeps a FIFO swapped in from blocking the open.
fn read_head(path: &Path) -> io::Result<(u64, Vec<u8>)> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let size = metadata.len();
    let wanted = size.min(FILE_CAP);
    let mut bytes = Vec::with_capacity(wanted as usize);
    file.take(wanted).read_to_end(&mut bytes)?;
    Ok((size, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;

    use crate::testutil::TempDir;

    /// A file holding `contents` in a fresh directory; the file goes when the directory is dropped.
    fn temp_file(contents: &[u8]) -> (TempDir, PathBuf) {
        let dir = TempDir::new();
        let file = dir.file("file.txt", contents);
        (dir, file)
    }

    fn check(contents: &[u8], expected_block: &str) {
        let (_dir, file) = temp_file(contents);
        let mut inliner = Inliner::new();
        let mut out = String::new();
        let inlined = inliner.inline_file("x.txt", &file, &mut out);
        assert_eq!(out, expected_block);
        assert_eq!(inlined, !expected_block.is_empty());
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
        assert!(Inliner::new().inline_file("x.txt", &file, &mut out));
        assert!(out.contains("a\0\n----- END FILE: x.txt -----\n"));
    }

    #[test]
    fn multibyte_character_cut_at_the_cap() {
        let mut contents = vec![b'a'; FILE_CAP as usize - 1];
        contents.extend_from_slice("é".as_bytes());
        let (_dir, file) = temp_file(&contents);
        let mut out = String::new();
        assert!(Inliner::new().inline_file("cut.txt", &file, &mut out));
        let tail = "a\u{fffd}\n----- TRUNCATED: cut.txt is 262145 bytes, only the first 262144 are shown -----\n----- END FILE: cut.txt -----\n";
        assert!(out.ends_with(tail), "{}", &out[out.len() - 200..]);
    }

    #[test]
    fn missing_file_is_unreadable() {
        let mut inliner = Inliner::new();
        let mut out = String::new();
        assert!(!inliner.inline_file("gone.txt", Path::new("/nonexistent/gone.txt"), &mut out));
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
        assert!(!inliner.inline_file("tmp", dir.path(), &mut String::new()));
        assert!(inliner.footers().contains("1 file(s) not included: tmp -----"));
    }

    #[test]
    fn footers_list_ten_names_then_the_rest() {
        let mut inliner = Inliner::new();
        inliner.spent = BUDGET;
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
    fn file_over_the_remaining_budget_is_omitted_after_reading() {
        let (_dir, file) = temp_file(b"0123456789");
        let mut inliner = Inliner::new();
        inliner.spent = BUDGET - 9;
        assert!(!inliner.inline_file("ten.txt", &file, &mut String::new()));
        assert!(!inliner.is_exhausted());
        inliner.spent = BUDGET - 10;
        assert!(inliner.inline_file("ten.txt", &file, &mut String::new()));
        assert!(inliner.is_exhausted());
        assert_eq!(
            inliner.footers(),
            "\n----- OMITTED: the 2097152 byte inline budget was reached; 1 file(s) not included: ten.txt -----\n"
        );
    }
}
