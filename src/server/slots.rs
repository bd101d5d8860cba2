//! What an agy run must hold before it starts, and the locks that hold it: one of the user's
//! `GEMINI_MCP_AGY_PARALLEL` run slots, its conversation alone (when it continues one), and its
//! project, shared by read-only runs or alone for a run that may edit files.
//!
//! In a state directory these are lock files under `agy/` (`slot-<i>.lock`,
//! `conversation-<hash>.lock`, `project-<hash>.lock`) held with the system's file locks (`flock`
//! on POSIX, `LockFileEx` on Windows), so every relay and job supervisor of the user counts
//! against the same slots, and a holder that dies frees what it held at once (the kernel drops its
//! locks). The relay never deletes a lock file; one deleted or replaced while it is held is a new
//! lock from then on (the run that holds the old one keeps it until it ends; files are opened
//! afresh for every attempt, never kept). A lock file that cannot be opened or locked at all is
//! left out with a warning rather than waited for forever. Without a state directory the same
//! rules hold within the process only.
//!
//! `try_acquire` never waits; `acquire` waits (polling) until the claim is granted or its abort
//! flag is set, for a process that has no queue of its own.

use std::collections::{HashMap, HashSet};
use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use crate::state::{self, StateDir};

/// How often a waiter looks at locks that another process holds.
pub const POLL: Duration = Duration::from_millis(200);

/// What one agy run needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The conversation it continues (`None`: a fresh conversation, which nobody else can be in).
    pub conversation: Option<String>,
    /// The project it runs in: the relay's canonical working directory.
    pub project: PathBuf,
    /// Whether the run may edit files there (`mode: "accept-edits"` or `skipPermissions`).
    pub edits: bool,
}

/// Why a claim cannot be granted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// Another run continues its conversation.
    Conversation,
    /// A run that may edit the project holds it (or, for an editor, any run there does).
    Editor,
    /// Every slot is taken: `busy` of `cap`.
    Slots { busy: usize, cap: usize },
}

/// Where the slots live.
#[derive(Clone)]
pub struct Slots {
    cap: usize,
    kind: Kind,
}

/// A granted claim; dropping it releases everything it holds.
pub struct Permit {
    held: Held,
}

/// What one look at the locks found busy, kept while the same look goes on to later claims: a
/// queue of many waiting calls then tries each busy lock once, not once per call. (Locks found
/// busy stay busy for the look's short length, or free up and are seen at the next.)
#[derive(Default)]
pub struct Look {
    slots_full: Option<usize>,
    conversations: HashSet<String>,
    /// Projects where a run holds the project alone (read-only runs cannot start).
    edited: HashSet<PathBuf>,
    /// Projects where any run holds the project (an editor cannot start).
    occupied: HashSet<PathBuf>,
}

/// Where the slots live, and how they are counted.
#[derive(Clone)]
enum Kind {
    /// Lock files in this directory, shared by the user's processes.
    Files(PathBuf),
    /// This process only.
    Memory(Arc<Mutex<Memory>>),
}

/// The slots of a process without a usable state directory.
#[derive(Default)]
struct Memory {
    slots: usize,
    conversations: HashSet<String>,
    projects: HashMap<PathBuf, Share>,
}

/// Who holds a project.
#[derive(Default)]
struct Share {
    readers: usize,
    editor: bool,
}

/// What a permit holds.
enum Held {
    /// Locked files; closing them unlocks them.
    Files(Vec<File>),
    Memory(Arc<Mutex<Memory>>, Claim),
}

impl Slots {
    /// Slots counted within this process only.
    pub fn in_memory(cap: usize) -> Slots {
        Slots { cap: cap.max(1), kind: Kind::Memory(Arc::default()) }
    }

    /// Slots counted across the user's processes, in `state`'s `agy/` directory. The error (a
    /// sentence for the log) says why the directory cannot hold them: it cannot be created, or
    /// file locks do not work there (some network file systems).
    pub fn in_dir(state: &StateDir, cap: usize) -> Result<Slots, String> {
        let dir = state.subdir("agy").map_err(|err| {
            format!("agy's run slots cannot live in {}: {err}", state.root().display())
        })?;
        let probe = dir.join("slot-0.lock");
        let unusable =
            |err: io::Error| format!("file locks do not work in {} ({err})", dir.display());
        let file = state::open_private(&probe).map_err(unusable)?;
        match file.try_lock() {
            Ok(()) | Err(TryLockError::WouldBlock) => (),
            Err(TryLockError::Error(err)) => return Err(unusable(err)),
        }
        Ok(Slots { cap: cap.max(1), kind: Kind::Files(dir) })
    }

    /// Whether other processes count against these slots (some holder may be out of sight).
    pub fn shared(&self) -> bool {
        matches!(self.kind, Kind::Files(_))
    }

    /// Grants `claim` now, or says why not; never waits.
    #[allow(dead_code, reason = "for a process without a queue, such as a job's supervisor")]
    pub fn try_acquire(&self, claim: &Claim) -> Result<Permit, Blocked> {
        self.try_acquire_in(claim, &mut Look::default())
    }

    /// `try_acquire` as part of `look`, which remembers what it found busy.
    pub fn try_acquire_in(&self, claim: &Claim, look: &mut Look) -> Result<Permit, Blocked> {
        match &self.kind {
            Kind::Memory(memory) => memory_acquire(memory, self.cap, claim),
            Kind::Files(dir) => self.files_acquire(dir, claim, look),
        }
    }

    /// Waits until `claim` is granted (looking at the locks every `POLL`), telling `waiting` why it
    /// waits whenever that changes; `None` once `abort` is set (nothing was granted then).
    #[allow(dead_code, reason = "for a process without a queue, such as a job's supervisor")]
    pub fn acquire(
        &self,
        claim: &Claim,
        abort: &AtomicBool,
        mut waiting: impl FnMut(Blocked),
    ) -> Option<Permit> {
        let mut last = None;
        loop {
            if abort.load(Ordering::SeqCst) {
                return None;
            }
            match self.try_acquire(claim) {
                Ok(permit) if abort.load(Ordering::SeqCst) => {
                    drop(permit);
                    return None;
                }
                Ok(permit) => return Some(permit),
                Err(blocked) => {
                    if last != Some(blocked) {
                        waiting(blocked);
                        last = Some(blocked);
                    }
                }
            }
            thread::sleep(POLL);
        }
    }

    fn files_acquire(&self, dir: &Path, claim: &Claim, look: &mut Look) -> Result<Permit, Blocked> {
        let mut held = Vec::with_capacity(3);
        if let Some(conversation) = &claim.conversation {
            if look.conversations.contains(conversation) {
                return Err(Blocked::Conversation);
            }
            let name = format!("conversation-{}.lock", fnv(conversation.as_bytes()));
            match lock(&dir.join(name), true) {
                Taken::Yes(file) => held.push(file),
                Taken::Busy => {
                    look.conversations.insert(conversation.clone());
                    return Err(Blocked::Conversation);
                }
                Taken::Unusable => (),
            }
        }
        let busy = if claim.edits { &look.occupied } else { &look.edited };
        if busy.contains(&claim.project) {
            return Err(Blocked::Editor);
        }
        let name = format!("project-{}.lock", fnv(claim.project.as_os_str().as_encoded_bytes()));
        match lock(&dir.join(name), claim.edits) {
            Taken::Yes(file) => held.push(file),
            Taken::Busy => {
                look.occupied.insert(claim.project.clone());
                if !claim.edits {
                    look.edited.insert(claim.project.clone());
                }
                return Err(Blocked::Editor);
            }
            Taken::Unusable => (),
        }
        if let Some(busy) = look.slots_full {
            return Err(Blocked::Slots { busy, cap: self.cap });
        }
        let mut busy = 0;
        for slot in 0..self.cap {
            match lock(&dir.join(format!("slot-{slot}.lock")), true) {
                Taken::Yes(file) => {
                    held.push(file);
                    return Ok(Permit { held: Held::Files(held) });
                }
                Taken::Busy => busy += 1,
                Taken::Unusable => (),
            }
        }
        if busy == 0 {
            // No slot file can be opened or locked at all: run rather than wait forever.
            return Ok(Permit { held: Held::Files(held) });
        }
        look.slots_full = Some(busy);
        Err(Blocked::Slots { busy, cap: self.cap })
    }
}

/// The outcome of one lock attempt.
enum Taken {
    Yes(File),
    Busy,
    /// The file cannot be opened or locked (it was made unreadable, the disk is full): the lock is
    /// left out rather than waited for forever.
    Unusable,
}

fn lock(path: &Path, exclusive: bool) -> Taken {
    let file = match state::open_private(path) {
        Ok(file) => file,
        Err(err) => {
            log::warn!("Cannot open the lock file {}: {err}", path.display());
            return Taken::Unusable;
        }
    };
    let locked = if exclusive { file.try_lock() } else { file.try_lock_shared() };
    match locked {
        Ok(()) => Taken::Yes(file),
        Err(TryLockError::WouldBlock) => Taken::Busy,
        Err(TryLockError::Error(err)) => {
            log::warn!("Cannot lock {}: {err}", path.display());
            Taken::Unusable
        }
    }
}

fn memory_acquire(
    memory: &Arc<Mutex<Memory>>,
    cap: usize,
    claim: &Claim,
) -> Result<Permit, Blocked> {
    let mut state = lock_memory(memory);
    if let Some(conversation) = &claim.conversation
        && state.conversations.contains(conversation)
    {
        return Err(Blocked::Conversation);
    }
    if let Some(share) = state.projects.get(&claim.project)
        && (share.editor || (claim.edits && share.readers > 0))
    {
        return Err(Blocked::Editor);
    }
    if state.slots >= cap {
        return Err(Blocked::Slots { busy: state.slots, cap });
    }
    state.slots += 1;
    if let Some(conversation) = &claim.conversation {
        state.conversations.insert(conversation.clone());
    }
    let share = state.projects.entry(claim.project.clone()).or_default();
    match claim.edits {
        true => share.editor = true,
        false => share.readers += 1,
    }
    Ok(Permit { held: Held::Memory(memory.clone(), claim.clone()) })
}

fn lock_memory(memory: &Mutex<Memory>) -> MutexGuard<'_, Memory> {
    memory.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for Permit {
    fn drop(&mut self) {
        match &mut self.held {
            Held::Files(files) => {
                for file in files.drain(..) {
                    let _ = file.unlock();
                }
            }
            Held::Memory(memory, claim) => {
                let mut state = lock_memory(memory);
                state.slots = state.slots.saturating_sub(1);
                if let Some(conversation) = &claim.conversation {
                    state.conversations.remove(conversation);
                }
                if let Some(share) = state.projects.get_mut(&claim.project) {
                    match claim.edits {
                        true => share.editor = false,
                        false => share.readers = share.readers.saturating_sub(1),
                    }
                    if !share.editor && share.readers == 0 {
                        state.projects.remove(&claim.project);
                    }
                }
            }
        }
    }
}

/// A lock file's name for a conversation id or a project path: 64-bit FNV-1a in hex, so no text
/// of the caller's ever becomes part of a path.
fn fnv(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::TempDir;

    fn claim(conversation: Option<&str>, project: &str, edits: bool) -> Claim {
        Claim {
            conversation: conversation.map(str::to_string),
            project: PathBuf::from(project),
            edits,
        }
    }

    /// Both kinds of slots, with `cap` slots; the file kind twice over one directory, as two
    /// processes would see it.
    fn each_kind(cap: usize, check: impl Fn(&Slots, &Slots)) {
        let memory = Slots::in_memory(cap);
        check(&memory, &memory);
        let temp = TempDir::new();
        let state = StateDir::open(&temp.path().join("state")).unwrap();
        let one = Slots::in_dir(&state, cap).unwrap();
        let other = Slots::in_dir(&state, cap).unwrap();
        assert!(one.shared());
        check(&one, &other);
    }

    #[test]
    fn at_most_cap_runs_hold_a_slot_and_a_release_frees_one() {
        each_kind(2, |one, other| {
            let fresh = claim(None, "/p", false);
            let first = one.try_acquire(&fresh).unwrap();
            let _second = other.try_acquire(&fresh).unwrap();
            assert_eq!(other.try_acquire(&fresh).err(), Some(Blocked::Slots { busy: 2, cap: 2 }));
            drop(first);
            let _third = other.try_acquire(&fresh).unwrap();
        });
    }

    #[test]
    fn one_turn_per_conversation_and_fresh_calls_never_wait_for_one() {
        each_kind(4, |one, other| {
            let turn = one.try_acquire(&claim(Some("c1"), "/p", false)).unwrap();
            let again = claim(Some("c1"), "/p", false);
            assert_eq!(other.try_acquire(&again).err(), Some(Blocked::Conversation));
            let _other_conversation = other.try_acquire(&claim(Some("c2"), "/p", false)).unwrap();
            let _fresh = other.try_acquire(&claim(None, "/p", false)).unwrap();
            drop(turn);
            let _next_turn = other.try_acquire(&again).unwrap();
        });
    }

    #[test]
    fn an_editor_holds_its_project_alone_and_readers_share_it() {
        each_kind(4, |one, other| {
            let reader = one.try_acquire(&claim(None, "/p", false)).unwrap();
            let _another_reader = other.try_acquire(&claim(None, "/p", false)).unwrap();
            let editor = claim(None, "/p", true);
            assert_eq!(other.try_acquire(&editor).err(), Some(Blocked::Editor));
            let _elsewhere = other.try_acquire(&claim(None, "/q", true)).unwrap();
            drop(reader);
            drop(_another_reader);
            let editing = other.try_acquire(&editor).unwrap();
            assert_eq!(one.try_acquire(&claim(None, "/p", false)).err(), Some(Blocked::Editor));
            assert_eq!(one.try_acquire(&editor).err(), Some(Blocked::Editor));
            drop(editing);
            let _reader = one.try_acquire(&claim(None, "/p", false)).unwrap();
        });
    }

    #[test]
    fn a_refused_claim_holds_nothing() {
        each_kind(1, |one, other| {
            let running = one.try_acquire(&claim(None, "/p", false)).unwrap();
            // Blocked on the slot after taking its conversation and project: both are let go.
            let waiting = claim(Some("c"), "/p", true);
            assert_eq!(other.try_acquire(&waiting).err(), Some(Blocked::Editor));
            let conversation_only = claim(Some("c"), "/q", false);
            assert!(matches!(other.try_acquire(&conversation_only), Err(Blocked::Slots { .. })));
            drop(running);
            let _ = other.try_acquire(&claim(Some("c"), "/p", true)).unwrap();
        });
    }

    #[test]
    fn a_blocking_acquire_returns_when_a_slot_frees_or_when_aborted() {
        each_kind(1, |one, other| {
            let held = one.try_acquire(&claim(None, "/p", false)).unwrap();
            let abort = AtomicBool::new(false);
            let mut told = Vec::new();
            thread::scope(|scope| {
                scope.spawn(|| {
                    thread::sleep(Duration::from_millis(300));
                    drop(held);
                });
                let permit = other.acquire(&claim(None, "/p", false), &abort, |b| told.push(b));
                assert!(permit.is_some());
            });
            assert_eq!(told, [Blocked::Slots { busy: 1, cap: 1 }]);
            let _held = one.try_acquire(&claim(None, "/p", false));
            abort.store(true, Ordering::SeqCst);
            assert!(other.acquire(&claim(None, "/q", false), &abort, |_| ()).is_none());
        });
    }

    // (On Windows a file deleted while open keeps its name until closed, so it cannot be made
    // again meanwhile: the lock is then left out, as for any lock file that cannot be opened.)
    #[cfg(unix)]
    #[test]
    fn lock_files_deleted_while_held_are_new_locks_and_the_old_holder_ends_cleanly() {
        let temp = TempDir::new();
        let state = StateDir::open(&temp.path().join("state")).unwrap();
        let slots = Slots::in_dir(&state, 1).unwrap();
        let old = slots.try_acquire(&claim(Some("c"), "/p", true)).unwrap();
        let dir = state.root().join("agy");
        for entry in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        // The files are made again and locked afresh: the holder of the deleted ones is out of
        // sight until it ends.
        let new = slots.try_acquire(&claim(Some("c"), "/p", true)).unwrap();
        assert!(dir.join("slot-0.lock").is_file());
        drop(old);
        assert!(matches!(
            slots.try_acquire(&claim(None, "/q", false)),
            Err(Blocked::Slots { busy: 1, cap: 1 })
        ));
        drop(new);
        let _ = slots.try_acquire(&claim(Some("c"), "/p", true)).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // One conversation, two projects, one slot: nothing else, and nothing named after them.
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names[0].starts_with("conversation-"), "{names:?}");
        assert!(names[1].starts_with("project-") && names[2].starts_with("project-"));
        assert_eq!(names[3], "slot-0.lock");
    }

    #[test]
    fn a_look_tries_each_busy_lock_once_and_answers_the_same() {
        let temp = TempDir::new();
        let state = StateDir::open(&temp.path().join("state")).unwrap();
        let slots = Slots::in_dir(&state, 1).unwrap();
        let _held = slots.try_acquire(&claim(Some("c"), "/p", false)).unwrap();
        let mut look = Look::default();
        let fresh = claim(None, "/p", false);
        assert_eq!(
            slots.try_acquire_in(&fresh, &mut look).err(),
            Some(Blocked::Slots { busy: 1, cap: 1 })
        );
        assert_eq!(look.slots_full, Some(1));
        assert_eq!(
            slots.try_acquire_in(&fresh, &mut look).err(),
            Some(Blocked::Slots { busy: 1, cap: 1 })
        );
        let turn = claim(Some("c"), "/p", false);
        assert_eq!(slots.try_acquire_in(&turn, &mut look).err(), Some(Blocked::Conversation));
        assert!(look.conversations.contains("c"));
        let editor = claim(None, "/p", true);
        assert_eq!(slots.try_acquire_in(&editor, &mut look).err(), Some(Blocked::Editor));
    }

    #[test]
    fn names_are_hashes_of_what_they_lock() {
        assert_eq!(fnv(b""), "cbf29ce484222325");
        assert_eq!(fnv(b"a"), "af63dc4c8601ec8c");
        assert_ne!(fnv(b"../../etc"), fnv(b"../../etd"));
    }
}
