//! The changeMode chunk cache: chunked replies kept in process memory for a while, under short
//! keys derived from the original prompt.
//!
//! A key is the 32-bit FNV-1a hash of the prompt as 8 lowercase hex characters. Each entry keeps
//! its prompt, so a second prompt that hashes to a taken key probes the next key instead of
//! replacing (or being served) the first prompt's chunks; the same prompt always reuses its own
//! live key.
//!
//! The cache is bounded three ways: entries live 10 minutes, at most 50 are kept, and
//! together they hold at most 256 MiB (each entry counted by `entry_bytes`); the oldest entries
//! are evicted first. A reply too large to fit under the byte cap on its own is not cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::changemode::chunk::Chunk;
use crate::changemode::parse::Edit;

/// How long a cached reply lives.
pub const CACHE_TTL: Duration = Duration::from_secs(10 * 60);

/// How many cached replies are kept at most; the oldest is evicted first.
pub const MAX_CACHE_ENTRIES: usize = 50;

/// How many bytes all cached replies hold together at most; the oldest is evicted first.
pub const MAX_CACHE_BYTES: usize = 256 * 1024 * 1024;

/// A monotonic clock: time elapsed since an arbitrary origin.
pub type Clock = Box<dyn Fn() -> Duration + Send + Sync>;

/// Thread-safe in-memory store of chunked changeMode replies.
pub struct ChunkCache {
    entries: Mutex<Entries>,
    ttl: Duration,
    max_entries: usize,
    max_bytes: usize,
    clock: Clock,
    hash: fn(&str) -> u32,
}

impl ChunkCache {
    /// A cache with the production limits (10 minutes, 50 entries, 256 MiB) and the real clock.
    pub fn new() -> ChunkCache {
        let origin = Instant::now();
        let clock = Box::new(move || origin.elapsed());
        ChunkCache::with_clock(CACHE_TTL, MAX_CACHE_ENTRIES, MAX_CACHE_BYTES, clock)
    }

    /// A cache with the given limits and clock (tests drive time through `clock`).
    pub fn with_clock(
        ttl: Duration,
        max_entries: usize,
        max_bytes: usize,
        clock: Clock,
    ) -> ChunkCache {
        ChunkCache {
            entries: Mutex::new(Entries::default()),
            ttl,
            max_entries,
            max_bytes,
            clock,
            hash: fnv1a_32,
        }
    }

    /// Stores `chunks` for `prompt` and returns the key they can be fetched with, or `None` when
    /// the reply alone is larger than the byte cap: it is then not cached, and neither is any
    /// earlier reply to the same prompt (a fetch can never return chunks older than the latest
    /// reply).
    pub fn store(&self, prompt: &str, chunks: Arc<Vec<Chunk>>) -> Option<String> {
        let n_chunks = chunks.len();
        // Counted before taking the lock: it walks every edit.
        let bytes = entry_bytes(prompt, &chunks);
        let now = (self.clock)();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);

        let expired: Vec<u32> = entries
            .by_key
            .iter()
            .filter(|(_, entry)| self.is_expired(entry, now))
            .map(|(&key, _)| key)
            .collect();
        for &key in &expired {
            entries.remove(key);
        }
        if !expired.is_empty() {
            log::debug!("Cleaned {} expired cache entries", expired.len());
        }

        let own_key =
            entries.by_key.iter().find(|(_, entry)| entry.prompt == prompt).map(|(&k, _)| k);
        // The new reply replaces the prompt's earlier one, which frees its bytes first.
        if let Some(key) = own_key {
            entries.remove(key);
        }
        if bytes > self.max_bytes {
            log::warn!(
                "changeMode reply of {n_chunks} chunks not cached: it needs {bytes} bytes, more \
                 than the cache's {} in all",
                self.max_bytes
            );
            return None;
        }
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

        // Evicts the oldest entries until the new one fits under both limits. The key chosen
        // above stays free: eviction only removes entries.
        let mut evicted = 0;
        while entries.by_key.len() >= self.max_entries || entries.bytes + bytes > self.max_bytes {
            let Some(oldest) = entries.oldest_key() else { break };
            entries.remove(oldest);
            evicted += 1;
        }
        if evicted > 0 {
            log::debug!("Removed {evicted} old cache entries to enforce limit");
        }

        let seq = entries.next_seq;
        entries.next_seq += 1;
        let entry = Entry { prompt: prompt.to_owned(), chunks, stored_at: now, seq, bytes };
        entries.insert(key, entry);

        let key = format_key(key);
        log::debug!("Cached {n_chunks} chunks in memory: {key}");
        Some(key)
    }

    /// The chunks stored under `key`, unless the key is malformed, unknown or expired.
    pub fn get(&self, key: &str) -> Option<Arc<Vec<Chunk>>> {
        if !is_valid_cache_key(key) {
            // A string argument is logged by length only.
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
            entries.remove(parsed);
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

/// The bytes a cache entry holds: the prompt it is kept under, and every chunk with its edits
/// (the texts' heap buffers plus the structs themselves).
fn entry_bytes(prompt: &str, chunks: &[Chunk]) -> usize {
    let edit_bytes = |edit: &Edit| {
        size_of::<Edit>()
            + edit.filename.capacity()
            + edit.old_code.capacity()
            + edit.new_code.capacity()
    };
    let chunk_bytes = |chunk: &Chunk| {
        let spare = chunk.edits.capacity() - chunk.edits.len();
        size_of::<Chunk>()
            + spare * size_of::<Edit>()
            + chunk.edits.iter().map(edit_bytes).sum::<usize>()
    };
    prompt.len() + chunks.iter().map(chunk_bytes).sum::<usize>()
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<u32, Entry>,
    /// The sum of the entries' `bytes`.
    bytes: usize,
    /// Insertion counter; the smallest `seq` is the oldest entry.
    next_seq: u64,
}

impl Entries {
    /// Adds an entry under a free key.
    fn insert(&mut self, key: u32, entry: Entry) {
        self.bytes += entry.bytes;
        self.by_key.insert(key, entry);
    }

    fn remove(&mut self, key: u32) -> Option<Entry> {
        let entry = self.by_key.remove(&key)?;
        self.bytes -= entry.bytes;
        Some(entry)
    }

    fn oldest_key(&self) -> Option<u32> {
        self.by_key.iter().min_by_key(|(_, entry)| entry.seq).map(|(&key, _)| key)
    }
}

struct Entry {
    prompt: String,
    chunks: Arc<Vec<Chunk>>,
    stored_at: Duration,
    seq: u64,
    /// What the entry holds, as `entry_bytes` counts it.
    bytes: usize,
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

    /// A cache whose clock reads `millis`.
    fn cache_at(millis: &Arc<AtomicU64>, max_entries: usize) -> ChunkCache {
        let millis = Arc::clone(millis);
        let clock: Clock = Box::new(move || Duration::from_millis(millis.load(Ordering::SeqCst)));
        ChunkCache::with_clock(CACHE_TTL, max_entries, MAX_CACHE_BYTES, clock)
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

    /// One chunk whose single edit names `tag` and replaces `code_bytes` bytes.
    fn big_chunks(tag: &str, code_bytes: usize) -> Arc<Vec<Chunk>> {
        let edit = Edit {
            filename: tag.to_owned(),
            old_start_line: 1,
            old_end_line: 1,
            old_code: "o".repeat(code_bytes),
            new_start_line: 1,
            new_end_line: 1,
            new_code: String::new(),
        };
        let chunk = Chunk {
            edits: vec![edit],
            chunk_index: 1,
            total_chunks: 1,
            has_more: false,
            estimated_chars: 0,
        };
        Arc::new(vec![chunk])
    }

    /// A cache with the real entry limit and TTL and a byte cap of `max_bytes`.
    fn cache_with_cap(max_bytes: usize) -> ChunkCache {
        let clock: Clock = Box::new(|| Duration::ZERO);
        ChunkCache::with_clock(CACHE_TTL, MAX_CACHE_ENTRIES, max_bytes, clock)
    }

    fn held_bytes(cache: &ChunkCache) -> usize {
        let entries = cache.entries.lock().unwrap();
        let sum = entries.by_key.values().map(|e| entry_bytes(&e.prompt, &e.chunks)).sum();
        assert_eq!(entries.bytes, sum, "the running total matches the entries");
        sum
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
        let first = cache.store("refactor it", chunks("one")).unwrap();
        assert_eq!(first, format_key(fnv1a_32("refactor it")));
        assert!(is_valid_cache_key(&first));
        let second = cache.store("refactor it", chunks("two")).unwrap();
        assert_eq!(first, second);
        assert_eq!(tag_of(&cache, &first).as_deref(), Some("two"));
        assert_eq!(cache.entries.lock().unwrap().by_key.len(), 1);
    }

    #[test]
    fn unknown_and_malformed_keys_miss() {
        let cache = ChunkCache::new();
        cache.store("p", chunks("x")).unwrap();
        assert!(cache.get("00000000").is_none());
        assert!(cache.get("NOTAKEY!").is_none());
        assert!(cache.get("").is_none());
    }

    #[test]
    fn entries_live_exactly_ten_minutes() {
        let clock = Arc::new(AtomicU64::new(1_000));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let key = cache.store("p", chunks("x")).unwrap();
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
        let key = cache.store("p", chunks("x")).unwrap();
        clock.store(500_000, Ordering::SeqCst);
        cache.store("p", chunks("y")).unwrap();
        clock.store(1_000_000, Ordering::SeqCst);
        assert_eq!(tag_of(&cache, &key).as_deref(), Some("y"));
    }

    #[test]
    fn store_cleans_expired_entries() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        cache.store("a", chunks("a")).unwrap();
        cache.store("b", chunks("b")).unwrap();
        clock.store(600_001, Ordering::SeqCst);
        let key = cache.store("c", chunks("c")).unwrap();
        let entries = cache.entries.lock().unwrap();
        assert_eq!(entries.by_key.keys().map(|&k| format_key(k)).collect::<Vec<_>>(), [key]);
    }

    #[test]
    fn at_most_fifty_entries_oldest_evicted() {
        let clock = Arc::new(AtomicU64::new(0));
        let cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        let keys: Vec<String> = (0..52)
            .map(|i| cache.store(&format!("prompt {i}"), chunks(&format!("t{i}"))).unwrap())
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
        let a = cache.store("a", chunks("a")).unwrap();
        let b = cache.store("b", chunks("b")).unwrap();
        cache.store("a", chunks("a2")).unwrap();
        cache.store("c", chunks("c")).unwrap();
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
        let key_a = cache.store(first, chunks("A")).unwrap();
        let key_b = cache.store(second, chunks("B")).unwrap();
        assert_eq!((key_a.as_str(), key_b.as_str()), ("3cda53a0", "3cda53a1"));
        assert_eq!(tag_of(&cache, &key_a).as_deref(), Some("A"));
        assert_eq!(tag_of(&cache, &key_b).as_deref(), Some("B"));
        // Each prompt keeps its own key when stored again, in either order.
        assert_eq!(cache.store(second, chunks("B2")).unwrap(), key_b);
        assert_eq!(cache.store(first, chunks("A2")).unwrap(), key_a);
        assert_eq!(tag_of(&cache, &key_a).as_deref(), Some("A2"));
        assert_eq!(tag_of(&cache, &key_b).as_deref(), Some("B2"));
    }

    #[test]
    fn forced_collisions_probe_onwards_and_wrap() {
        let clock = Arc::new(AtomicU64::new(0));
        let mut cache = cache_at(&clock, MAX_CACHE_ENTRIES);
        cache.hash = |_| u32::MAX;
        let keys: Vec<String> =
            ["a", "b", "c"].iter().map(|p| cache.store(p, chunks(p)).unwrap()).collect();
        assert_eq!(keys, ["ffffffff", "00000000", "00000001"]);
        for (key, tag) in keys.iter().zip(["a", "b", "c"]) {
            assert_eq!(tag_of(&cache, key).as_deref(), Some(tag));
        }
        // Once "a" has expired, its key goes to the next prompt that needs it.
        clock.store(600_001, Ordering::SeqCst);
        assert_eq!(cache.store("d", chunks("d")).unwrap(), "ffffffff");
        assert_eq!(tag_of(&cache, "ffffffff").as_deref(), Some("d"));
    }

    #[test]
    fn default_byte_cap_is_256_mib() {
        assert_eq!(MAX_CACHE_BYTES, 268_435_456);
        assert_eq!(ChunkCache::new().max_bytes, 256 << 20);
    }

    #[test]
    fn entry_bytes_counts_the_prompt_the_texts_and_the_structs() {
        // Two chunks of one edit each: filename "ab", old "old", new "new".
        let per_chunk = size_of::<Chunk>() + size_of::<Edit>() + 2 + 3 + 3;
        assert_eq!(entry_bytes("prompt", &chunks("ab")), 6 + 2 * per_chunk);
        let big = big_chunks("f", 1_000_000);
        assert_eq!(entry_bytes("", &big), size_of::<Chunk>() + size_of::<Edit>() + 1 + 1_000_000);
    }

    #[test]
    fn byte_cap_evicts_the_oldest_first() {
        let one = entry_bytes("a", &big_chunks("a", 1000));
        let cache = cache_with_cap(3 * one + one / 2);
        let keys: Vec<String> =
            ["a", "b", "c"].iter().map(|p| cache.store(p, big_chunks(p, 1000)).unwrap()).collect();
        assert_eq!(held_bytes(&cache), 3 * one);
        let d = cache.store("d", big_chunks("d", 1000)).unwrap();
        assert_eq!(tag_of(&cache, &keys[0]), None, "the oldest entry made room");
        assert_eq!(tag_of(&cache, &keys[1]).as_deref(), Some("b"));
        assert_eq!(tag_of(&cache, &keys[2]).as_deref(), Some("c"));
        assert_eq!(tag_of(&cache, &d).as_deref(), Some("d"));
        assert_eq!(held_bytes(&cache), 3 * one);

        // An entry twice the size evicts the two oldest.
        let e = cache.store("e", big_chunks("e", 2 * one)).unwrap();
        assert_eq!(tag_of(&cache, &keys[1]), None);
        assert_eq!(tag_of(&cache, &keys[2]), None);
        assert_eq!(tag_of(&cache, &d).as_deref(), Some("d"));
        assert_eq!(tag_of(&cache, &e).as_deref(), Some("e"));
        assert!(held_bytes(&cache) <= 3 * one + one / 2);
    }

    #[test]
    fn an_entry_over_the_cap_on_its_own_is_not_cached() {
        let one = entry_bytes("a", &big_chunks("a", 1000));
        let cache = cache_with_cap(2 * one);
        let a = cache.store("a", big_chunks("a", 1000)).unwrap();
        let b = cache.store("b", big_chunks("b", 1000)).unwrap();
        assert_eq!(cache.store("huge", big_chunks("huge", 2 * one)), None);
        // Nothing was evicted for it.
        assert_eq!(tag_of(&cache, &a).as_deref(), Some("a"));
        assert_eq!(tag_of(&cache, &b).as_deref(), Some("b"));
        assert_eq!(held_bytes(&cache), 2 * one);

        // A prompt whose new reply is too large loses its earlier reply: a fetch never returns
        // chunks older than the latest reply.
        assert_eq!(cache.store("a", big_chunks("a", 2 * one)), None);
        assert_eq!(tag_of(&cache, &a), None);
        assert_eq!(tag_of(&cache, &b).as_deref(), Some("b"));
        assert_eq!(held_bytes(&cache), one);
    }

    #[test]
    fn an_entry_exactly_at_the_cap_is_cached() {
        let one = entry_bytes("a", &big_chunks("a", 1000));
        let cache = cache_with_cap(one);
        let a = cache.store("a", big_chunks("a", 1000)).unwrap();
        assert_eq!(tag_of(&cache, &a).as_deref(), Some("a"));
        let b = cache.store("b", big_chunks("b", 1000)).unwrap();
        assert_eq!((tag_of(&cache, &a), tag_of(&cache, &b).as_deref()), (None, Some("b")));
    }

    #[test]
    fn overwrites_and_expiry_free_their_bytes() {
        let clock = Arc::new(AtomicU64::new(0));
        let millis = Arc::clone(&clock);
        let one = entry_bytes("a", &big_chunks("a", 1000));
        let cache = ChunkCache::with_clock(
            CACHE_TTL,
            MAX_CACHE_ENTRIES,
            2 * one,
            Box::new(move || Duration::from_millis(millis.load(Ordering::SeqCst))),
        );
        let a = cache.store("a", big_chunks("a", 1000)).unwrap();
        let b = cache.store("b", big_chunks("b", 1000)).unwrap();
        // Storing "a" again replaces its entry instead of counting it twice: "b" stays.
        assert_eq!(cache.store("a", big_chunks("a", 1000)).unwrap(), a);
        assert_eq!(tag_of(&cache, &b).as_deref(), Some("b"));
        assert_eq!(held_bytes(&cache), 2 * one);

        clock.store(600_001, Ordering::SeqCst);
        let c = cache.store("c", big_chunks("c", 1000)).unwrap();
        assert_eq!(held_bytes(&cache), one, "expired entries were dropped with their bytes");
        assert_eq!(tag_of(&cache, &c).as_deref(), Some("c"));
    }
}
