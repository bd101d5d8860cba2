//! The changeMode chunk cache: chunked replies kept in process memory for a while, under short
//! keys derived from the original prompt.
//!
//! A key is the 32-bit FNV-1a hash of the prompt as 8 lowercase hex characters. Each entry keeps
//! its prompt, so a second prompt that hashes to a taken key probes the next key instead of
//! replacing (or being served) the first prompt's chunks; the same prompt always reuses its own
//! live key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::changemode::chunk::Chunk;

/// How long a cached reply lives.
pub const CACHE_TTL: Duration = Duration::from_secs(10 * 60);

/// How many cached replies are kept at most; the oldest is evicted first.
pub const MAX_CACHE_ENTRIES: usize = 50;

/// A monotonic clock: time elapsed since an arbitrary origin.
pub type Clock = Box<dyn Fn() -> Duration + Send + Sync>;

/// Thread-safe in-memory store of chunked changeMode replies.
pub struct ChunkCache {
    entries: Mutex<Entries>,
    ttl: Duration,
    max_entries: usize,
    clock: Clock,
    hash: fn(&str) -> u32,
}

impl ChunkCache {
    /// A cache with the production limits (10 minutes, 50 entries) and the real clock.
    pub fn new() -> ChunkCache {
        let origin = Instant::now();
        ChunkCache::with_clock(CACHE_TTL, MAX_CACHE_ENTRIES, Box::new(move || origin.elapsed()))
    }

    /// A cache with the given limits and clock (tests drive time through `clock`).
    pub fn with_clock(ttl: Duration, max_entries: usize, clock: Clock) -> ChunkCache {
        ChunkCache {
            entries: Mutex::new(Entries::default()),
            ttl,
            max_entries,
            clock,
            hash: fnv1a_32,
        }
    }

    /// Stores `chunks` for `prompt` and returns the key they can be fetched with.
    pub fn store(&self, prompt: &str, chunks: Arc<Vec<Chunk>>) -> String {
        let n_chunks = chunks.len();
        let now = (self.clock)();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);

        let expired: Vec<u32> = entries
            .by_key
            .iter()
            .filter(|(_, entry)| self.is_expired(entry, now))
            .map(|(&key, _)| key)
            .collect();
        for key in &expired {
            entries.by_key.remove(key);
        }
        if !expired.is_empty() {
            log::debug!("Cleaned {} expired cache entries", expired.len());
        }

        let own_key =
            entries.by_key.iter().find(|(_, entry)| entry.prompt == prompt).map(|(&k, _)| k);
        let key = match own_key {
            Some(key) => key,
            None => {
                let mut key = (self.hash)(prompt);
                // Entries never outnumber keys, so probing always ends.
                while entries.by_key.contains_key(&key) {
                    let next = key.wrapping_add(1);
                    log::debug!(
                        "Cache key {} belongs to another prompt, trying {}",
                        format_key(key),
                        format_key(next)
                    );
                    key = next;
                }
                key
            }
        };
        let seq = entries.next_seq;
        entries.next_seq += 1;
        let entry = Entry { prompt: prompt.to_owned(), chunks, stored_at: now, seq };
        entries.by_key.insert(key, entry);

        let excess = entries.by_key.len().saturating_sub(self.max_entries);
        if excess > 0 {
            // Evicts the oldest entries one by one (`excess` is almost always 1).
            for _ in 0..excess {
                let oldest = entries.by_key.iter().min_by_key(|(_, entry)| entry.seq);
                let Some(key) = oldest.map(|(&key, _)| key) else { break };
                entries.by_key.remove(&key);
            }
            log::debug!("Removed {excess} old cache entries to enforce limit");
        }

        let key = format_key(key);
        log::debug!("Cached {n_chunks} chunks in memory: {key}");
        key
    }

    /// The chunks stored under `key`, unless the key is malformed, unknown or expired.
    pub fn get(&self, key: &str) -> Option<Arc<Vec<Chunk>>> {
        if !is_valid_cache_key(key) {
            // Part I D9: a string argument is logged by length only.
            log::debug!(
                "Rejected invalid cacheKey format: <{} chars>",
                crate::redact::utf16_len(key)
            );
            return None;
        }
        let parsed = u32::from_str_radix(key, 16).ok()?;
        let now = (self.clock)();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = entries.by_key.get(&parsed)?;
        if self.is_expired(entry, now) {
            entries.by_key.remove(&parsed);
            log::debug!("Cache expired for {key}, deleted entry");
            return None;
        }
        log::debug!("Cache hit for {key}, returning {} chunks", entry.chunks.len());
        Some(Arc::clone(&entry.chunks))
    }

    fn is_expired(&self, entry: &Entry, now: Duration) -> bool {
        now.saturating_sub(entry.stored_at) > self.ttl
    }
}

impl Default for ChunkCache {
    fn default() -> ChunkCache {
        ChunkCache::new()
    }
}

/// Whether `key` has the cache-key shape `^[a-f0-9]{8}$`.
pub fn is_valid_cache_key(key: &str) -> bool {
    key.len() == 8 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<u32, Entry>,
    /// Insertion counter; the smallest `seq` is the oldest entry.
    next_seq: u64,
}

struct Entry {
    prompt: String,
    chunks: Arc<Vec<Chunk>>,
    stored_at: Duration,
    seq: u64,
}

/// 32-bit FNV-1a over the UTF-8 bytes of `text`.
fn fnv1a_32(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, b| (hash ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

fn format_key(key: u32) -> String {
    format!("{key:08x}")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::changemode::parse::Edit;

    /// A cache whose clock reads `millis`.
    fn cache_at(millis: &Arc<AtomicU64>, max_entries: usize) -> ChunkCache {
        let millis = Arc::clone(millis);
        let clock: Clock = Box::new(move || Duration::from_millis(millis.load(Ordering::SeqCst)));
        ChunkCache::with_clock(CACHE_TTL, max_entries, clock)
    }

    /// Chunks whose single edit names `tag`, so tests can tell stored replies apart.
    fn chunks(tag: &str) -> Arc<Vec<Chunk>> {
        let edit = Edit {
            filename: tag.to_owned(),
            old_start_line: 1,
            old_end_line: 1,
            old_code: "old".to_owned(),
            new_start_line: 1,
            new_end_line: 1,
            new_code: "new".to_owned(),
        };
        let chunk = |i| Chunk {
            edits: vec![edit.clone()],
            chunk_index: i,
            total_chunks: 2,
            has_more: i == 1,
            estimated_chars: 0,
        };
        Arc::new(vec![chunk(1), chunk(2)])
    }

    fn tag_of(cache: &ChunkCache, key: &str) -> Option<String> {
        cache.get(key).map(|c| c[0].edits[0].filename.clone())
    }

    fn check_key(key: &str, valid: bool) {
        assert_eq!(is_valid_cache_key(key), valid, "{key:?}");
    }

    #[test]
    fn key_shape() {
        check_key("abcd1234", true);
        check_key("00000000", true);
        check_key("deadbeef", true);
        check_key("ABCD1234", false);
        check_key("abcd123", false);
        check_key("abcd12345", false);
        check_key("bad!key!", false);
        check_key("../../etc/passwd", false);
        check_key("abcdefgh", false);
        check_key("", false);
        check_key("abcd123é", false);
    }

    #[test]
    fn fnv1a_reference_values() {
        assert_eq!(fnv1a_32(""), 0x811c_9dc5);
        assert_eq!(fnv1a_32("a"), 0xe40c_292c);
        assert_eq!(fnv1a_32("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn same_prompt_same_key_and_overwrite() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let first = cache.store("refactor it", chunks("one"));
        assert_eq!(first, format_key(fnv1a_32("refactor it")));
        assert!(is_valid_cache_key(&first));
        let second = cache.store("refactor it", chunks("two"));
        assert_eq!(first, second);
        assert_eq!(tag_of(&cache, &first).as_deref(), Some("two"));
        assert_eq!(cache.entries.lock().unwrap().by_key.len(), 1);
    }

    #[test]
    fn unknown_and_malformed_keys_miss() {
        let cache = ChunkCache::new();
        cache.store("p", chunks("x"));
        assert!(cache.get("00000000").is_none());
        assert!(cache.get("NOTAKEY!").is_none());
        assert!(cache.get("").is_none());
    }

    #[test]
    fn entries_live_exactly_ten_minutes() {
        let clock = Arc::new(AtomicU64::new(1_000));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let key = cache.store("p", chunks("x"));
        clock.store(1_000 + 600_000, Ordering::SeqCst);
        assert_eq!(tag_of(&cache, &key).as_deref(), Some("x"));
        clock.store(1_000 + 600_001, Ordering::SeqCst);
        assert_eq!(tag_of(&cache, &key), None);
        // The expired entry was deleted: going back in time does not revive it.
        clock.store(1_000, Ordering::SeqCst);
        assert_eq!(tag_of(&cache, &key), None);
    }

    #[test]
    fn overwrite_restarts_the_ttl() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let key = cache.store("p", chunks("x"));
        clock.store(500_000, Ordering::SeqCst);
        cache.store("p", chunks("y"));
        clock.store(1_000_000, Ordering::SeqCst);
        assert_eq!(tag_of(&cache, &key).as_deref(), Some("y"));
    }

    #[test]
    fn store_cleans_expired_entries() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        cache.store("a", chunks("a"));
        cache.store("b", chunks("b"));
        clock.store(600_001, Ordering::SeqCst);
        let key = cache.store("c", chunks("c"));
        let entries = cache.entries.lock().unwrap();
        assert_eq!(entries.by_key.keys().map(|&k| format_key(k)).collect::<Vec<_>>(), [key]);
    }

    #[test]
    fn at_most_fifty_entries_oldest_evicted() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let keys: Vec<String> = (0..52)
            .map(|i| cache.store(&format!("prompt {i}"), chunks(&format!("t{i}"))))
            .collect();
        assert_eq!(cache.entries.lock().unwrap().by_key.len(), 50);
        assert_eq!(tag_of(&cache, &keys[0]), None);
        assert_eq!(tag_of(&cache, &keys[1]), None);
        assert_eq!(tag_of(&cache, &keys[2]).as_deref(), Some("t2"));
        assert_eq!(tag_of(&cache, &keys[51]).as_deref(), Some("t51"));
    }

    #[test]
    fn overwriting_makes_an_entry_young_again() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, 2);
        let a = cache.store("a", chunks("a"));
        let b = cache.store("b", chunks("b"));
        cache.store("a", chunks("a2"));
        cache.store("c", chunks("c"));
        assert_eq!(tag_of(&cache, &a).as_deref(), Some("a2"));
        assert_eq!(tag_of(&cache, &b), None);
    }

    #[test]
    fn real_collision_never_serves_the_other_prompt() {
        // Both prompts hash to 3cda53a0 under FNV-1a 32.
        let (first, second) = ("prompt 382189", "prompt 1032434");
        assert_eq!(fnv1a_32(first), fnv1a_32(second));
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let key_a = cache.store(first, chunks("A"));
        let key_b = cache.store(second, chunks("B"));
        assert_eq!((key_a.as_str(), key_b.as_str()), ("3cda53a0", "3cda53a1"));
        assert_eq!(tag_of(&cache, &key_a).as_deref(), Some("A"));
        assert_eq!(tag_of(&cache, &key_b).as_deref(), Some("B"));
        // Each prompt keeps its own key when stored again, in either order.
        assert_eq!(cache.store(second, chunks("B2")), key_b);
        assert_eq!(cache.store(first, chunks("A2")), key_a);
        assert_eq!(tag_of(&cache, &key_a).as_deref(), Some("A2"));
        assert_eq!(tag_of(&cache, &key_b).as_deref(), Some("B2"));
    }

    #[test]
    fn forced_collisions_probe_onwards_and_wrap() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        cache.hash = |_| u32::MAX;
        let keys: Vec<String> = ["a", "b", "c"].iter().map(|p| cache.store(p, chunks(p))).collect();
        assert_eq!(keys, ["ffffffff", "00000000", "00000001"]);
        for (key, tag) in keys.iter().zip(["a", "b", "c"]) {
            assert_eq!(tag_of(&cache, key).as_deref(), Some(tag));
        }
        // Once "a" has expired, its key goes to the next prompt that needs it.
        clock.store(600_001, Ordering::SeqCst);
        assert_eq!(cache.store("d", chunks("d")), "ffffffff");
        assert_eq!(tag_of(&cache, "ffffffff").as_deref(), Some("d"));
    }
}
