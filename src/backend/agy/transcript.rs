//! agy's local conversation store, read-only: last-conversation lookup, freshness by mtime, transcript
//! replies and the conversation listing with its table (`gemini-conversations`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::files::fd;
use crate::js;

/// One resumable conversation as `gemini-conversations` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationRow {
    pub id: String,
    /// The mtime of the conversation's logs directory.
    pub last_active: SystemTime,
    /// The working directory `last_conversations.json` maps to this id, if any.
    pub cwd: Option<String>,
    /// The first user prompt, whitespace collapsed and cut to 120 characters.
    pub first_prompt: Option<String>,
}

/// agy's store (`super::store_dir`); every method only reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    base: PathBuf,
}

impl Store {
    /// The store of the user whose home directory is `home`.
    pub fn new(home: &Path) -> Store {
        Store { base: super::store_dir(home) }
    }

    /// The conversation id `last_conversations.json` records for `cwd` (exact string first, then the
    /// lexically normalized path); a read failure is logged and yields none.
    pub fn last_conversation_for(&self, cwd: &Path) -> Option<String> {
        let map = match self.read_last_conversations() {
            Ok(map) => map?,
            Err(message) => {
                log::warn!("agy: could not read last_conversations.json: {message}");
                return None;
            }
        };
        let exact = cwd.to_string_lossy();
        let normalized = normalize_path(cwd);
        let normalized = normalized.to_string_lossy();
        [exact.as_ref(), normalized.as_ref()].into_iter().find_map(|key| match map.get(key) {
            Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
            _ => None,
        })
    }

    /// Whether conversation `id`'s logs directory was modified at or after `t` (with 1 ms slack).
    pub fn written_since(&self, id: &str, t: SystemTime) -> bool {
        self.last_active(id).is_some_and(|mtime| fresh(mtime, t))
    }

    /// The conversation written since `t` whose logs directory is newest.
    pub fn newest_since(&self, t: SystemTime) -> Option<String> {
        let mut newest: Option<(SystemTime, String)> = None;
        for id in self.brain_ids().ok()? {
            let Some(mtime) = self.last_active(&id) else { continue };
            if !fresh(mtime, t) {
                continue;
            }
            let better = match &newest {
                None => true,
                Some((best, best_id)) => mtime > *best || (mtime == *best && id < *best_id),
            };
            if better {
                newest = Some((mtime, id));
            }
        }
        newest.map(|(_, id)| id)
    }

    /// The conversation the ladder recovers from when print mode gave no reply: the explicit id,
    /// else the cwd's last conversation, else the newest one, each only if written since `start`.
    pub fn recovery_id(
        &self,
        explicit: Option<&str>,
        cwd: &Path,
        start: SystemTime,
    ) -> Option<String> {
        if let Some(id) = explicit.filter(|id| self.written_since(id, start)) {
            return Some(id.to_string());
        }
        if let Some(id) = self.last_conversation_for(cwd).filter(|id| self.written_since(id, start))
        {
            return Some(id);
        }
        self.newest_since(start)
    }

    /// The model's reply in conversation `id`'s JSONL transcript, or the exact failure text.
    pub fn read_transcript_response(&self, id: &str) -> Result<String, String> {
        let jsonl = self.logs_dir(id).join("transcript.jsonl");
        if valid_id(id) {
            match read_file(&jsonl) {
                Ok(bytes) => {
                    let replies = extract_replies(&parse_jsonl(&String::from_utf8_lossy(&bytes)));
                    if !replies.is_empty() {
                        return Ok(replies);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => (),
                Err(err) => log::warn!("agy: JSONL read failed for {id}, trying SQLite: {err}"),
            }
            if let Some(db) = self.sqlite_transcript(id) {
                return Err(format!(
                    "agy: transcript is SQLite-only ({}); this build reads JSONL transcripts only.",
                    db.display()
                ));
            }
        }
        Err(format!(
            "agy: no model response found for conversation {id} (looked for {} and a .db fallback).",
            jsonl.display()
        ))
    }

    /// Conversations with a logs directory, most recently active first, at most `limit` of them.
    /// Only what the table shows is read: the cwd of the rows kept, and each one's transcript up
    /// to its first prompt.
    pub fn list_conversations(&self, limit: usize) -> Vec<ConversationRow> {
        let Ok(ids) = self.brain_ids() else { return Vec::new() };
        let mut rows: Vec<ConversationRow> = ids
            .into_iter()
            .filter_map(|id| {
                let last_active = self.last_active(&id)?;
                Some(ConversationRow { id, last_active, cwd: None, first_prompt: None })
            })
            .collect();
        rows.sort_by(|a, b| b.last_active.cmp(&a.last_active).then_with(|| a.id.cmp(&b.id)));
        rows.truncate(limit);
        let mut cwd_of = self.cwds_of(rows.iter().map(|row| row.id.as_str()).collect());
        for row in &mut rows {
            row.cwd = cwd_of.remove(&row.id);
            row.first_prompt = self.first_prompt(&row.id);
        }
        rows
    }

    /// The working directory `last_conversations.json` maps to each of `ids`, read without
    /// keeping the rest of it; a later entry wins when two directories name the same id. An
    /// unreadable file gives none.
    fn cwds_of(&self, ids: HashSet<&str>) -> HashMap<String, String> {
        let path = self.base.join("cache").join("last_conversations.json");
        let Ok(bytes) = read_file(&path) else { return HashMap::new() };
        super::json::cwds_of(&bytes, &ids)
    }

    fn logs_dir(&self, id: &str) -> PathBuf {
        self.base.join("brain").join(id).join(".system_generated").join("logs")
    }

    fn last_active(&self, id: &str) -> Option<SystemTime> {
        if !valid_id(id) {
            return None;
        }
        let meta = fs::metadata(self.logs_dir(id)).ok()?;
        if !meta.is_dir() {
            return None;
        }
        meta.modified().ok()
    }

    /// Every entry name of `B/brain` that is valid UTF-8.
    fn brain_ids(&self) -> io::Result<Vec<String>> {
        let entries = fs::read_dir(self.base.join("brain"))?;
        Ok(entries.filter_map(|entry| entry.ok()?.file_name().into_string().ok()).collect())
    }

    /// The `cwd → id` object; `Ok(None)` when the file is missing or not an object.
    fn read_last_conversations(&self) -> Result<Option<Map<String, Value>>, String> {
        let path = self.base.join("cache").join("last_conversations.json");
        let bytes = match read_file(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err.to_string()),
        };
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(_) => Ok(None),
            Err(err) => Err(err.to_string()),
        }
    }

    /// A `.db` file inside the logs directory (first by name), else `B/conversations/<id>.db`.
    fn sqlite_transcript(&self, id: &str) -> Option<PathBuf> {
        if let Ok(entries) = fs::read_dir(self.logs_dir(id)) {
            let first = entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "db") && path.is_file())
                .min();
            if let Some(db) = first {
                return Some(db);
            }
        }
        let fallback = self.base.join("conversations").join(format!("{id}.db"));
        fallback.is_file().then_some(fallback)
    }

    /// The first `USER_INPUT` entry's content, read line by line up to it.
    fn first_prompt(&self, id: &str) -> Option<String> {
        let file = fd::open_regular(&self.logs_dir(id).join("transcript.jsonl")).ok()?;
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).ok()? == 0 {
                return None;
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            let Some(entry) = super::json::parse::<Value>(text.as_bytes()) else { continue };
            if let (Value::String(kind), Value::String(content)) =
                (&entry["type"], &entry["content"])
                && kind == "USER_INPUT"
            {
                return Some(preview(&crate::controls::strip(content)));
            }
        }
    }
}

/// The model's final replies after the last `USER_INPUT` entry, joined by a blank line and trimmed.
pub fn extract_replies(entries: &[Value]) -> String {
    let after = match entries.iter().rposition(|entry| entry["type"] == "USER_INPUT") {
        Some(idx) => idx + 1,
        None => 0,
    };
    let replies: Vec<&str> = entries[after..]
        .iter()
        .filter(|entry| {
            entry["source"] == "MODEL"
                && entry["type"] == "PLANNER_RESPONSE"
                && entry["status"] == "DONE"
        })
        .filter_map(|entry| entry["content"].as_str())
        .collect();
    js::trim(&replies.join("\n\n")).to_string()
}

/// The `gemini-conversations` text: the markdown table, or the no-conversations line.
pub fn render_conversations(rows: &[ConversationRow]) -> String {
    if rows.is_empty() {
        return "No conversations found. Run gemini-ask once and it will report the id it created."
            .to_string();
    }
    let mut out =
        String::from("| id | last active | cwd | first prompt |\n| --- | --- | --- | --- |\n");
    for row in rows {
        let cwd = cell(row.cwd.as_deref().unwrap_or(""));
        let prompt = cell(row.first_prompt.as_deref().unwrap_or(""));
        out.push_str(&format!(
            "| `{}` | {} | {cwd} | {prompt} |\n",
            cell(&row.id),
            js::iso_string(row.last_active)
        ));
    }
    out.push_str("\nContinue one with gemini-ask and `conversationId: \"<id>\"`.");
    out
}

/// `text` as one table cell: control sequences removed, `|` escaped, and a newline or tab
/// written as `\n` or `\t`, so that no name can end its cell or its row.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::controls::strip(text).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out
}

/// The whole file at `path`, read only if it is a regular file (opened without blocking, so a
/// FIFO in agy's store cannot hang the relay).
fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    fd::open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `mtime + 1 ms ≥ t`.
fn fresh(mtime: SystemTime, t: SystemTime) -> bool {
    mtime + Duration::from_millis(1) >= t
}

/// An id that names one directory entry (no separators, not `.` or `..`).
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\0'])
}

/// Every non-blank line that parses as JSON (a lone surrogate read as U+FFFD).
fn parse_jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| super::json::parse(line.as_bytes()))
        .collect()
}

/// Whitespace runs collapsed to one space, trimmed, and cut to 117 UTF-16 units plus `...` when
/// longer than 120 (lengths in UTF-16 units, as JavaScript counts them).
fn preview(content: &str) -> String {
    let mut collapsed = String::with_capacity(content.len());
    let mut in_space = false;
    for c in content.chars() {
        if js::is_space(c) {
            in_space = true;
            continue;
        }
        if in_space && !collapsed.is_empty() {
            collapsed.push(' ');
        }
        in_space = false;
        collapsed.push(c);
    }
    if crate::redact::utf16_len(&collapsed) <= 120 {
        return collapsed;
    }
    format!("{}...", js::utf16_prefix(&collapsed, 117))
}

/// The path with `.` removed and `..` applied lexically, like Node's `path.resolve` on an absolute
/// path (a relative path stays relative).
fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => (),
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

// Against a POSIX file system: symlinks, FIFOs.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    use serde_json::json;

    use crate::testutil::{TempDir, mkfifo, set_mtime};

    /// The agy store of a fake home directory.
    fn store(home: &TempDir) -> Store {
        Store::new(home.path())
    }

    /// agy's base directory inside a fake home.
    fn base(home: &TempDir) -> PathBuf {
        home.path().join(".gemini/antigravity-cli")
    }

    /// Creates conversation `id` with the given transcript lines and logs-dir mtime.
    fn conversation(
        home: &TempDir,
        id: &str,
        lines: Option<&[Value]>,
        mtime: SystemTime,
    ) -> PathBuf {
        let logs = base(home).join("brain").join(id).join(".system_generated/logs");
        fs::create_dir_all(&logs).unwrap();
        if let Some(lines) = lines {
            let text: Vec<String> = lines.iter().map(Value::to_string).collect();
            fs::write(logs.join("transcript.jsonl"), text.join("\n") + "\n").unwrap();
        }
        set_mtime(&logs, mtime);
        logs
    }

    /// Writes agy's `cache/last_conversations.json`.
    fn last_conversations(home: &TempDir, text: &str) {
        let cache = base(home).join("cache");
        fs::create_dir_all(&cache).unwrap();
        fs::write(cache.join("last_conversations.json"), text).unwrap();
    }

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn entry(source: &str, kind: &str, status: &str, content: &str) -> Value {
        json!({"source": source, "type": kind, "status": status, "content": content})
    }

    fn user(content: &str) -> Value {
        entry("USER", "USER_INPUT", "DONE", content)
    }

    fn reply(content: &str) -> Value {
        entry("MODEL", "PLANNER_RESPONSE", "DONE", content)
    }

    const T: u64 = 1_757_030_000_000;

    #[test]
    fn extract_replies_keeps_done_model_answers_after_the_last_user_input() {
        let entries = [
            user("first"),
            reply("old answer"),
            user("second"),
            entry("MODEL", "TOOL_CALL", "DONE", "tool"),
            entry("OTHER", "PLANNER_RESPONSE", "DONE", "other"),
            entry("MODEL", "PLANNER_RESPONSE", "RUNNING", "partial"),
            json!({"source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE", "content": 5}),
            reply("  answer one"),
            reply("answer two \n"),
        ];
        assert_eq!(extract_replies(&entries), "answer one\n\nanswer two");
    }

    #[test]
    fn extract_replies_without_user_input_and_empty() {
        assert_eq!(extract_replies(&[reply("a"), json!("x"), reply("b")]), "a\n\nb");
        assert_eq!(extract_replies(&[]), "");
        assert_eq!(extract_replies(&[user("q")]), "");
    }

    #[test]
    fn written_since_fresh_stale_and_slack() {
        let home = TempDir::new();
        conversation(&home, "c1", None, at(T));
        let store = store(&home);
        assert!(store.written_since("c1", at(T - 5_000)));
        assert!(store.written_since("c1", at(T)));
        assert!(store.written_since("c1", at(T + 1)));
        assert!(!store.written_since("c1", at(T + 2)));
        assert!(!store.written_since("c1", at(T + 60_000)));
        assert!(!store.written_since("unknown", at(0)));
        assert!(!store.written_since("..", at(0)));
        assert!(!store.written_since("c1/../c1", at(0)));
    }

    #[test]
    fn newest_since_picks_the_newest_fresh_conversation() {
        let home = TempDir::new();
        let store = store(&home);
        assert_eq!(store.newest_since(at(0)), None);
        conversation(&home, "old", None, at(T - 10_000));
        conversation(&home, "mid", None, at(T + 1_000));
        conversation(&home, "new", None, at(T + 2_000));
        fs::create_dir_all(base(&home).join("brain/no-logs")).unwrap();
        assert_eq!(store.newest_since(at(T)).as_deref(), Some("new"));
        assert_eq!(store.newest_since(at(T + 2_001)).as_deref(), Some("new"));
        assert_eq!(store.newest_since(at(T + 2_002)), None);
    }

    #[test]
    fn last_conversation_lookup_exact_then_normalized() {
        let home = TempDir::new();
        let store = store(&home);
        assert_eq!(store.last_conversation_for(Path::new("/w")), None);
        last_conversations(&home, r#"{"/work/a": "id-a", "/work/b": "id-b", "/work/e": ""}"#);
        assert_eq!(store.last_conversation_for(Path::new("/work/a")).as_deref(), Some("id-a"));
        assert_eq!(
            store.last_conversation_for(Path::new("/work/x/../b/./")).as_deref(),
            Some("id-b")
        );
        assert_eq!(store.last_conversation_for(Path::new("/work/c")), None);
        assert_eq!(store.last_conversation_for(Path::new("/work/e")), None);
        last_conversations(&home, "not json");
        assert_eq!(store.last_conversation_for(Path::new("/work/a")), None);
    }

    #[test]
    fn recovery_id_order() {
        let home = TempDir::new();
        let store = store(&home);
        conversation(&home, "explicit", None, at(T + 10));
        conversation(&home, "for-cwd", None, at(T + 20));
        conversation(&home, "newest", None, at(T + 30));
        last_conversations(&home, r#"{"/w": "for-cwd"}"#);
        let cwd = Path::new("/w");
        assert_eq!(store.recovery_id(Some("explicit"), cwd, at(T)).as_deref(), Some("explicit"));
        assert_eq!(store.recovery_id(Some("missing"), cwd, at(T)).as_deref(), Some("for-cwd"));
        assert_eq!(store.recovery_id(None, cwd, at(T + 15)).as_deref(), Some("for-cwd"));
        assert_eq!(store.recovery_id(None, cwd, at(T + 25)).as_deref(), Some("newest"));
        assert_eq!(store.recovery_id(None, Path::new("/other"), at(T)).as_deref(), Some("newest"));
        assert_eq!(store.recovery_id(Some("explicit"), cwd, at(T + 40)), None);
    }

    #[test]
    fn read_transcript_response_from_jsonl() {
        let home = TempDir::new();
        let logs = conversation(&home, "c1", Some(&[user("q"), reply("the answer")]), at(T));
        let mut text = fs::read_to_string(logs.join("transcript.jsonl")).unwrap();
        text.push_str("{malformed\n\n");
        fs::write(logs.join("transcript.jsonl"), text).unwrap();
        assert_eq!(store(&home).read_transcript_response("c1").unwrap(), "the answer");
    }

    #[test]
    fn read_transcript_response_sqlite_only() {
        let home = TempDir::new();
        let logs = conversation(&home, "c2", None, at(T));
        fs::write(logs.join("conversation.db"), b"SQLite format 3\0").unwrap();
        assert_eq!(
            store(&home).read_transcript_response("c2").unwrap_err(),
            format!(
                "agy: transcript is SQLite-only ({}); this build reads JSONL transcripts only.",
                logs.join("conversation.db").display()
            )
        );
    }

    #[test]
    fn read_transcript_response_sqlite_fallback_dir_and_empty_jsonl() {
        let home = TempDir::new();
        conversation(&home, "c3", Some(&[user("q")]), at(T));
        let db = base(&home).join("conversations/c3.db");
        fs::create_dir_all(db.parent().unwrap()).unwrap();
        fs::write(&db, b"").unwrap();
        assert_eq!(
            store(&home).read_transcript_response("c3").unwrap_err(),
            format!(
                "agy: transcript is SQLite-only ({}); this build reads JSONL transcripts only.",
                db.display()
            )
        );
    }

    #[test]
    fn read_transcript_response_nothing_found() {
        let home = TempDir::new();
        conversation(&home, "c4", Some(&[user("q")]), at(T));
        let jsonl = base(&home).join("brain/c4/.system_generated/logs/transcript.jsonl");
        assert_eq!(
            store(&home).read_transcript_response("c4").unwrap_err(),
            format!(
                "agy: no model response found for conversation c4 (looked for {} and a .db fallback).",
                jsonl.display()
            )
        );
        assert!(store(&home).read_transcript_response("none").is_err());
    }

    #[test]
    fn read_transcript_response_unreadable_jsonl_falls_through() {
        let home = TempDir::new();
        let logs = conversation(&home, "c5", None, at(T));
        // A directory where the file should be makes the read fail with something other than NotFound.
        fs::create_dir_all(logs.join("transcript.jsonl")).unwrap();
        let err = store(&home).read_transcript_response("c5").unwrap_err();
        assert!(err.starts_with("agy: no model response found for conversation c5"), "{err}");
    }

    #[test]
    fn fifos_in_the_store_are_refused_without_blocking() {
        let home = TempDir::new();
        let logs = conversation(&home, "c6", None, at(T));
        let cache = base(&home).join("cache");
        fs::create_dir_all(&cache).unwrap();
        mkfifo(&logs.join("transcript.jsonl"));
        mkfifo(&cache.join("last_conversations.json"));
        let started = std::time::Instant::now();
        let store = store(&home);
        let err = store.read_transcript_response("c6").unwrap_err();
        assert!(err.starts_with("agy: no model response found for conversation c6"), "{err}");
        assert_eq!(store.last_conversation_for(Path::new("/w")), None);
        assert_eq!(store.list_conversations(5)[0].first_prompt, None);
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    }

    #[test]
    fn list_conversations_order_limit_cwd_and_prompt() {
        let home = TempDir::new();
        let store = store(&home);
        assert_eq!(store.list_conversations(20), []);
        let long = format!("{} tail", "x".repeat(130));
        conversation(
            &home,
            "a",
            Some(&[json!("junk"), user("  hello\n\t world  "), user("later")]),
            at(T),
        );
        conversation(&home, "b", Some(&[user(&long)]), at(T + 2_000));
        conversation(&home, "c", None, at(T + 1_000));
        fs::create_dir_all(base(&home).join("brain/no-logs")).unwrap();
        last_conversations(&home, r#"{"/w/one": "a", "/w/two": "c", "/w/three": "a"}"#);
        let rows = store.list_conversations(20);
        let ids: Vec<&str> = rows.iter().map(|row| row.id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        assert_eq!(
            rows[0].first_prompt.as_deref(),
            Some(format!("{}...", "x".repeat(117)).as_str())
        );
        assert_eq!(rows[0].cwd, None);
        assert_eq!(rows[0].last_active, at(T + 2_000));
        assert_eq!(rows[1].first_prompt, None);
        assert_eq!(rows[1].cwd.as_deref(), Some("/w/two"));
        assert_eq!(rows[2].first_prompt.as_deref(), Some("hello world"));
        assert_eq!(rows[2].cwd.as_deref(), Some("/w/three"));
        let ids: Vec<String> = store.list_conversations(2).into_iter().map(|row| row.id).collect();
        assert_eq!(ids, ["b", "c"]);
        assert_eq!(store.list_conversations(0), []);
    }

    #[test]
    fn preview_lengths() {
        assert_eq!(preview("a  b\n\nc"), "a b c");
        assert_eq!(preview(&"y".repeat(120)), "y".repeat(120));
        assert_eq!(preview(&"y".repeat(121)), format!("{}...", "y".repeat(117)));
        // Emoji count as two UTF-16 units; the cut never splits one.
        let emoji = "😀".repeat(61);
        assert_eq!(preview(&emoji), format!("{}...", "😀".repeat(58)));
        assert_eq!(preview(&"😀".repeat(60)), "😀".repeat(60));
    }

    fn row(id: &str, ms: u64, cwd: Option<&str>, prompt: Option<&str>) -> ConversationRow {
        ConversationRow {
            id: id.to_string(),
            last_active: at(ms),
            cwd: cwd.map(String::from),
            first_prompt: prompt.map(String::from),
        }
    }

    #[test]
    fn render_empty_and_rows() {
        assert_eq!(
            render_conversations(&[]),
            "No conversations found. Run gemini-ask once and it will report the id it created."
        );
        let rows = [
            row("c|1", 1_757_030_000_123, Some("/w|x"), Some("a | b || c")),
            row("c2", 0, None, None),
        ];
        assert_eq!(
            render_conversations(&rows),
            "| id | last active | cwd | first prompt |\n\
             | --- | --- | --- | --- |\n\
             | `c\\|1` | 2025-09-04T23:53:20.123Z | /w\\|x | a \\| b \\|\\| c |\n\
             | `c2` | 1970-01-01T00:00:00.000Z |  |  |\n\
             \n\
             Continue one with gemini-ask and `conversationId: \"<id>\"`."
        );
    }

    #[test]
    fn normalize_path_cases() {
        let check =
            |p: &str, expect: &str| assert_eq!(normalize_path(Path::new(p)), Path::new(expect));
        check("/a/./b/../c/", "/a/c");
        check("/..", "/");
        check("a/../..", "..");
        check("./", ".");
    }
}
