//! The expansion engine: after the jail check, each inline `@` token (a file, a directory or a
//! glob) is replaced by the blocks of the files it names, read only through handles beneath the
//! canonical root (`fd`), sharing one byte budget (`inline`); directories are walked at most once
//! (`walk`), every distinct glob is matched against the project's walk in one pass, and a file met
//! again under the same label is copied from its first block rather than read again.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::files::fd::{self, Dir, EntryKind};
use crate::files::glob::{self, Glob};
use crate::files::inline::{Inliner, Outcome};
use crate::files::jail::Project;
use crate::files::{CANCELLED, attach, path, scan, walk};

/// Runs the jail check, then replaces each `@` token that starts the prompt or follows whitespace
/// with the blocks of the file(s) it names, sharing one byte budget, and appends the drop footers.
///
/// Tokens that name nothing inlinable stay verbatim. `Err` carries the jail's refusal text, or
/// [`CANCELLED`] when `stop` was set before inlining finished.
pub fn inline_file_references<'a>(
    prompt: &'a str,
    root: &Path,
    stop: &AtomicBool,
) -> Result<Cow<'a, str>, String> {
    inline_and_find_media(prompt, root, stop).map(|(prompt, _)| prompt)
}

/// [`inline_file_references`], also giving the tokens (as written) that name an image, a PDF, audio
/// or video (`attach::is_media`): those stay verbatim, and the call attaches their files.
pub fn inline_and_find_media<'a>(
    prompt: &'a str,
    root: &Path,
    stop: &AtomicBool,
) -> Result<(Cow<'a, str>, Vec<String>), String> {
    let project = Project::new(root);
    project.assert_safe(prompt, stop)?;
    let tokens = scan::inline_tokens(prompt);
    // With `/` as the root nothing is inside it (the original's `root + "/"` prefix test).
    if tokens.is_empty() || project.real_root == Path::new("/") {
        return Ok((Cow::Borrowed(prompt), Vec::new()));
    }
    let Ok(root_dir) = Dir::open(&project.real_root) else {
        return Ok((Cow::Borrowed(prompt), Vec::new()));
    };
    let mut expansion = Expansion::new(project, root_dir, stop);
    for token in &tokens {
        if glob::is_glob(token.reference) {
            expansion.note_glob(token.reference);
        }
    }
    let mut out = String::with_capacity(prompt.len());
    let mut copied = 0;
    for token in tokens {
        if stop.load(Ordering::Relaxed) {
            return Err(CANCELLED.to_string());
        }
        out.push_str(&prompt[copied..token.at]);
        if !expansion.expand(token.reference, &mut out)? {
            out.push_str(&prompt[token.at..token.end]);
        }
        copied = token.end;
    }
    out.push_str(&prompt[copied..]);
    out.push_str(&expansion.inliner.footers());
    Ok((Cow::Owned(out), expansion.media))
}

/// The state of one prompt's inlining: the project and its descriptor, the budget, every file met
/// so far and what reading it gave, and the file lists of walked directories and globs.
struct Expansion<'s> {
    project: Project,
    root: Dir,
    stop: &'s AtomicBool,
    inliner: Inliner,
    /// Every file met, by id; `file_ids` maps a root-relative path to its id.
    files: Vec<FileSlot>,
    file_ids: HashMap<Vec<u8>, usize>,
    /// File lists of walked directories (`dir_lists`, by root-relative path; the root is the
    /// empty path) and of globs (`glob_lists`, by glob text, filled in one pass over the root's).
    lists: Vec<List>,
    dir_lists: HashMap<Vec<u8>, usize>,
    glob_lists: HashMap<String, usize>,
    globs_matched: bool,
    /// The tokens naming media files, as written, each file once.
    media: Vec<String>,
}

/// A file met while inlining.
struct FileSlot {
    /// The path relative to the root (opened beneath it).
    rel: Vec<u8>,
    /// Its label in walks (lossy UTF-8 of `rel`).
    label: String,
    verdict: Verdict,
    /// Where its block labelled `label` was first written in the prompt being built (the one `out`
    /// every expansion appends to): a later token copies it instead of reading the file again.
    block: Option<Range<usize>>,
}

/// What reading a file gave, so that no file is read twice for nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Unread,
    Text,
    /// Skipped silently from now on.
    Binary,
    /// Footnoted once, skipped silently from now on.
    Unreadable,
    /// An image, PDF, audio or video named by a token: attached, never inlined.
    Media,
}

/// The files of one directory walk or glob, in walk order (ids into `Expansion::files`).
#[derive(Debug, Default)]
struct List {
    files: Vec<usize>,
    /// After the first expansion: the positions in `files` still worth reading (text files).
    live: Option<Vec<usize>>,
}

impl<'s> Expansion<'s> {
    fn new(project: Project, root: Dir, stop: &'s AtomicBool) -> Expansion<'s> {
        Expansion {
            project,
            root,
            stop,
            inliner: Inliner::new(),
            files: Vec::new(),
            file_ids: HashMap::new(),
            lists: Vec::new(),
            dir_lists: HashMap::new(),
            glob_lists: HashMap::new(),
            globs_matched: false,
            media: Vec::new(),
        }
    }

    /// Collects a glob token before expansion starts, so that all distinct globs are matched
    /// against the project walk in one pass.
    fn note_glob(&mut self, reference: &str) {
        let text = glob::glob_text(reference);
        if glob::is_oversized(&text) || self.glob_lists.contains_key(&text) {
            return;
        }
        self.lists.push(List::default());
        self.glob_lists.insert(text, self.lists.len() - 1);
    }

    /// One inline token (a file, a directory or a glob): appends its replacement to `out` and
    /// returns true, or returns false when the token stays verbatim.
    fn expand(&mut self, reference: &str, out: &mut String) -> Result<bool, String> {
        if glob::is_glob(reference) {
            return self.expand_glob(reference, out);
        }
        // The jail check has refused every reference outside the root already.
        let Some(rel) = self.project.relative(reference) else { return Ok(false) };
        if rel.is_empty() {
            let list = self.dir_list(&rel, None)?;
            return self.inline_list(list, out);
        }
        let (parent_rel, name) = match rel.iter().rposition(|&it| it == b'/') {
            Some(slash) => (&rel[..slash], &rel[slash + 1..]),
            None => (&rel[..0], &rel[..]),
        };
        // A name the system cannot take (not Unicode, on Windows) names nothing to inline.
        let Some(name) = fd::os_str(name) else { return Ok(false) };
        // A directory on the way that is missing, or is a symlink, makes the token unresolvable.
        let Ok(parent) = self.root.dir_beneath(parent_rel) else { return Ok(false) };
        match parent.kind(name) {
            Ok(EntryKind::Dir) => {
                let list = self.dir_list(&rel, Some((&parent, name)))?;
                self.inline_list(list, out)
            }
            Ok(EntryKind::File) => Ok(self.inline_named_file(reference, &rel, &parent, name, out)),
            // Missing, a symlink (never followed), or not a regular file.
            Ok(EntryKind::Symlink | EntryKind::Other) | Err(_) => Ok(false),
        }
    }

    fn expand_glob(&mut self, reference: &str, out: &mut String) -> Result<bool, String> {
        let text = glob::glob_text(reference);
        if glob::is_oversized(&text) {
            log::warn!("inlineFileReferences: ignoring oversized glob token \"@{text}\"");
            return Ok(false);
        }
        // Every glob was noted before expansion began, so one pass matches them all.
        if !self.globs_matched {
            self.match_globs()?;
        }
        let list = self.glob_lists[&text];
        self.inline_list(list, out)
    }

    /// Walks the project (at most once) and matches every file against every distinct glob, in one
    /// pass over the walk.
    fn match_globs(&mut self) -> Result<(), String> {
        let whole = self.dir_list(&[], None)?;
        let pending: Vec<(usize, Glob)> =
            self.glob_lists.iter().map(|(text, &list)| (list, Glob::compile(text))).collect();
        let files = std::mem::take(&mut self.lists[whole].files);
        for &id in &files {
            if self.stop.load(Ordering::Relaxed) {
                self.lists[whole].files = files;
                return Err(CANCELLED.to_string());
            }
            let label = &self.files[id].label;
            for (list, glob) in &pending {
                if glob.matches(label) {
                    self.lists[*list].files.push(id);
                }
            }
        }
        self.lists[whole].files = files;
        self.globs_matched = true;
        Ok(())
    }

    /// The list of the directory `rel` (the root when empty), walked on first use. `child` is the
    /// open parent and the directory's name, for any directory but the root.
    fn dir_list(&mut self, rel: &[u8], child: Option<(&Dir, &OsStr)>) -> Result<usize, String> {
        if let Some(&list) = self.dir_lists.get(rel) {
            return Ok(list);
        }
        let (opened, name) = match child {
            Some((parent, name)) => (parent.child_dir(name), name.as_encoded_bytes()),
            None => {
                let name = self.project.real_root.file_name().unwrap_or_default();
                (self.root.dir_beneath(b""), name.as_encoded_bytes())
            }
        };
        let walked = match opened {
            // Swapped for a symlink (or removed) since the type check: nothing to inline.
            Err(_) => Vec::new(),
            Ok(dir) => walk::walk(dir, rel, name, &self.project.real_root, self.stop)
                .map_err(|_| CANCELLED.to_string())?,
        };
        let files = walked.into_iter().map(|file| self.file_id(file.rel, file.label)).collect();
        self.lists.push(List { files, live: None });
        self.dir_lists.insert(rel.to_vec(), self.lists.len() - 1);
        Ok(self.lists.len() - 1)
    }

    fn file_id(&mut self, rel: Vec<u8>, label: String) -> usize {
        if let Some(&id) = self.file_ids.get(&rel) {
            return id;
        }
        self.files.push(FileSlot {
            rel: rel.clone(),
            label,
            verdict: Verdict::Unread,
            block: None,
        });
        self.file_ids.insert(rel, self.files.len() - 1);
        self.files.len() - 1
    }

    /// Inlines a file named by a token, labelled with the reference as written (on Windows, which
    /// takes `\` as well as `/` between components, with `/`: labels use one separator everywhere).
    fn inline_named_file(
        &mut self,
        reference: &str,
        rel: &[u8],
        parent: &Dir,
        name: &OsStr,
        out: &mut String,
    ) -> bool {
        let id = self.file_id(rel.to_vec(), String::from_utf8_lossy(rel).into_owned());
        let mut opened = None;
        if self.files[id].verdict == Verdict::Unread {
            let mut file = parent.open_file(name);
            if file.as_mut().is_ok_and(attach::is_media) {
                self.files[id].verdict = Verdict::Media;
                self.media.push(reference.to_string());
            }
            opened = Some(file);
        }
        let reference = path::with_slashes(reference);
        if self.inliner.is_closed() {
            self.inliner.omit(&reference);
            return false;
        }
        if matches!(self.files[id].verdict, Verdict::Binary | Verdict::Unreadable | Verdict::Media)
        {
            return false;
        }
        let open = |_: &Dir, _: &[u8]| opened.unwrap_or_else(|| parent.open_file(name));
        self.inline_file(id, Some(&reference), open, out) == Outcome::Inlined
    }

    /// Inlines the file `id` under `written` (its own label when `None`): the block it got under
    /// that label earlier in this prompt is copied, so a file named by many tokens is read once;
    /// otherwise `open` (given the root and the file's path beneath it) opens it to be read.
    fn inline_file(
        &mut self,
        id: usize,
        written: Option<&str>,
        open: impl FnOnce(&Dir, &[u8]) -> io::Result<File>,
        out: &mut String,
    ) -> Outcome {
        let Expansion { root, files, inliner, .. } = self;
        let slot = &mut files[id];
        let label = written.unwrap_or(&slot.label);
        let own = label == slot.label;
        let start = out.len();
        let outcome = match slot.block.clone().filter(|_| own) {
            Some(block) => inliner.inline_again(label, block, out),
            None => inliner.inline(label, || open(root, &slot.rel), out),
        };
        if own && outcome == Outcome::Inlined {
            slot.block = Some(start..out.len());
        }
        slot.verdict = verdict_after(slot.verdict, outcome);
        outcome
    }

    /// Inlines the files of a list in walk order; true when any was inlined.
    ///
    /// The first expansion of a list reads every file; later ones only those that gave text. Once
    /// the budget is closed the whole list is omitted in one step.
    fn inline_list(&mut self, list: usize, out: &mut String) -> Result<bool, String> {
        let files = std::mem::take(&mut self.lists[list].files);
        let live = self.lists[list].live.take();
        let result = self.inline_files(&files, live, out);
        self.lists[list].files = files;
        let (any, live) = result?;
        self.lists[list].live = Some(live);
        Ok(any)
    }

    /// [`Expansion::inline_list`] over `files`, reading the positions `live` (all when `None`);
    /// returns whether any file was inlined and the positions worth reading next time.
    fn inline_files(
        &mut self,
        files: &[usize],
        live: Option<Vec<usize>>,
        out: &mut String,
    ) -> Result<(bool, Vec<usize>), String> {
        if self.inliner.is_closed() {
            let labels = files.iter().map(|&id| self.files[id].label.as_str());
            self.inliner.omit_many(files.len(), labels);
            return Ok((false, live.unwrap_or_default()));
        }
        let positions = live.unwrap_or_else(|| (0..files.len()).collect());
        let mut any = false;
        let mut still_live = Vec::new();
        for (n, &position) in positions.iter().enumerate() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(CANCELLED.to_string());
            }
            let verdict = self.files[files[position]].verdict;
            if matches!(verdict, Verdict::Binary | Verdict::Unreadable | Verdict::Media) {
                continue;
            }
            let open = |root: &Dir, rel: &[u8]| root.file_beneath(rel);
            match self.inline_file(files[position], None, open, out) {
                Outcome::Inlined => {
                    any = true;
                    still_live.push(position);
                }
                Outcome::Omitted => {
                    // The budget closed at this file: every later file of the list is omitted too.
                    let rest = &files[position + 1..];
                    let labels = rest.iter().map(|&id| self.files[id].label.as_str());
                    self.inliner.omit_many(rest.len(), labels);
                    still_live.extend_from_slice(&positions[n..]);
                    break;
                }
                Outcome::Binary | Outcome::Unreadable => (),
            }
        }
        Ok((any, still_live))
    }
}

fn verdict_after(before: Verdict, outcome: Outcome) -> Verdict {
    match outcome {
        Outcome::Inlined => Verdict::Text,
        Outcome::Binary => Verdict::Binary,
        Outcome::Unreadable => Verdict::Unreadable,
        Outcome::Omitted => before,
    }
}
