//! changeMode through the real binary: the wrapped prompt the CLI receives, rendering, chunking, the
//! in-memory cache and `gemini-fetch-chunk`.

use serde_json::{Value, json};

use crate::util::{Fakes, Setup, TempDir};

fn agy(fakes: &Fakes) -> Setup {
    fakes.setup().env("GEMINI_MCP_BACKEND", "agy")
}

fn edit(file: &str, old: &str, new: &str) -> String {
    format!("**FILE: {file}:1**\n```\nOLD:\n{old}\nNEW:\n{new}\n```\n")
}

const SINGLE: &str = "[CHANGEMODE OUTPUT - Gemini has analyzed the files and provided these edits]

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

#[test]
fn a_single_edit_renders_exactly_and_the_cli_gets_the_wrapped_prompt() {
    let fakes = Fakes::new();
    let project = TempDir::new("cm");
    project.write("src/a.ts", "const x = 1;\n");
    let reply = edit("src/a.ts", "const x = 1;", "const x = 2;");
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", &reply).cwd(&project.path).spawn();
    let (text, is_error) =
        relay.call_text("gemini-ask", json!({"prompt": "bump file:src/a.ts", "changeMode": true}));
    assert_eq!((text.as_str(), is_error), (SINGLE, false));
    let stdin = String::from_utf8(fakes.prompt_runs()[0].stdin().unwrap()).unwrap();
    let content = serde_json::from_str::<Value>(stdin.trim_end()).unwrap()["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(content.starts_with("\n[CHANGEMODE INSTRUCTIONS]\n"), "{content}");
    assert!(
        content.contains("USER REQUEST:\nbump \n----- BEGIN FILE: src/a.ts -----\nconst x = 1;\n"),
        "{content}"
    );
}

#[test]
fn prose_reply_has_no_edits() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", "I would rather not.").spawn();
    let (text, _) = relay.call_text("gemini-ask", json!({"prompt": "x", "changeMode": true}));
    assert_eq!(
        text,
        "No edits found in Gemini's response. Please ensure Gemini uses the OLD/NEW format. \n\nI would rather not."
    );
}

#[test]
fn long_replies_are_chunked_cached_and_fetched() {
    let fakes = Fakes::new();
    let big = |n: usize| format!("line {n}\n").repeat(350);
    let reply: String = (1..=4).map(|i| edit(&format!("f{i}.ts"), &big(i), &big(i + 10))).collect();
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE", &reply).spawn();
    let (first, is_error) =
        relay.call_text("gemini-ask", json!({"prompt": "split me", "changeMode": true}));
    assert!(!is_error);
    assert!(first.starts_with("[CHANGEMODE OUTPUT - Chunk 1 of "), "{}", &first[..200]);
    let marker = "gemini-fetch-chunk cacheKey=\"";
    let at = first.find(marker).expect("a continuation") + marker.len();
    let key = &first[at..at + 8];
    assert!(key.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{key}");
    assert!(first.contains(&format!("gemini-fetch-chunk cacheKey=\"{key}\" chunkIndex=2")));

    let (second, _) =
        relay.call_text("gemini-fetch-chunk", json!({"cacheKey": key, "chunkIndex": 2}));
    assert!(second.starts_with("[CHANGEMODE OUTPUT - Chunk 2 of 2]"), "{}", &second[..100]);
    let (again, _) =
        relay.call_text("gemini-fetch-chunk", json!({"cacheKey": key, "chunkIndex": 1}));
    assert!(again.starts_with("ChangeMode Summary (Complete analysis across all chunks):\nTotal edits: 4 (across all chunks)"), "{}", &again[..200]);
    assert!(again.contains("[CHANGEMODE OUTPUT - Chunk 1 of 2]"));

    let (bad, _) =
        relay.call_text("gemini-fetch-chunk", json!({"cacheKey": key, "chunkIndex": 99}));
    assert_eq!(
        bad,
        "❌ Invalid chunk index: 99\n\nAvailable chunks: 1 to 2\nYou requested: 99\n\nPlease use a valid chunk index."
    );

    // The cached shortcut of gemini-ask answers without running the model.
    let runs = fakes.prompt_runs().len();
    let (cached, _) = relay.call_text(
        "gemini-ask",
        json!({"prompt": "split me", "changeMode": true, "chunkIndex": "2", "chunkCacheKey": key}),
    );
    assert!(cached.starts_with("[CHANGEMODE OUTPUT - Chunk 2 of 2]"), "{}", &cached[..100]);
    assert_eq!(fakes.prompt_runs().len(), runs, "no model run for a cached chunk");
    assert!(relay.logged("Tool gemini-fetch-chunk(cacheKey=<8 chars> chunkIndex=2)"));
}

#[test]
fn fetch_chunk_misses_and_bad_keys() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    let (miss, is_error) =
        relay.call_text("gemini-fetch-chunk", json!({"cacheKey": "00000000", "chunkIndex": 1}));
    assert!(!is_error);
    assert_eq!(
        miss,
        "❌ Cache miss: No chunks found for cache key \"00000000\". \n\n  Possible reasons:\n  1. The cache key is incorrect, Have you ran gemini-ask with changeMode enabled?\n  2. The cache has expired (10 minute TTL)\n  3. The MCP server was restarted and the file-based cache was cleared\n\nPlease re-run the original changeMode request to regenerate the chunks."
    );
    let (bad, _) = relay
        .call_text("gemini-fetch-chunk", json!({"cacheKey": "../../etc/passwd", "chunkIndex": 1}));
    assert_eq!(
        bad,
        "❌ Invalid cacheKey format. Expected 8 lowercase hex characters (got \"../../etc/passwd\")."
    );
    let (missing, is_error) = relay.call_text("gemini-fetch-chunk", json!({}));
    assert!(is_error);
    assert_eq!(
        missing,
        "Error executing gemini-fetch-chunk: Invalid arguments for gemini-fetch-chunk: cacheKey: Required, chunkIndex: Required"
    );
}

#[test]
fn ask_shortcut_texts_never_spawn() {
    let fakes = Fakes::new();
    let mut relay = agy(&fakes).spawn();
    let (bad, _) = relay.call_text(
        "gemini-ask",
        json!({"prompt": "p", "changeMode": true, "chunkIndex": 1, "chunkCacheKey": "bad!key!"}),
    );
    assert_eq!(
        bad,
        "❌ Invalid chunkCacheKey format. Expected 8 lowercase hex characters (got \"bad!key!\")."
    );
    let (miss, _) = relay.call_text(
        "gemini-ask",
        json!({"prompt": "p", "changeMode": true, "chunkIndex": 1, "chunkCacheKey": "deadbeef"}),
    );
    assert_eq!(
        miss,
        "❌ Cache miss: No chunks found for cache key \"deadbeef\".\n\nPossible reasons:\n1. The cache key is incorrect, or the original changeMode request did not create chunks\n2. The cache has expired (10 minute TTL)\n3. The MCP server was restarted and the file-based cache was cleared\n\nPlease re-run the original changeMode request to regenerate the chunks."
    );
    assert!(fakes.prompt_runs().is_empty());
}

#[test]
fn change_mode_on_the_gemini_backend() {
    let fakes = Fakes::new();
    let reply = edit("src/a.ts", "const x = 1;", "const x = 2;");
    let mut relay = fakes
        .setup()
        .env("GEMINI_MCP_BACKEND", "gemini")
        .env("FAKE_GEMINI_RESPONSE", &reply)
        .spawn();
    let (text, _) =
        relay.call_text("gemini-ask", json!({"prompt": "edit file:src/a.ts", "changeMode": true}));
    assert_eq!(text, SINGLE);
    let stdin = String::from_utf8(fakes.prompt_runs()[0].stdin().unwrap()).unwrap();
    assert!(stdin.starts_with("\n[CHANGEMODE INSTRUCTIONS]\n"));
    assert!(
        stdin.ends_with("USER REQUEST:\nedit @src/a.ts\n"),
        "the gemini CLI inlines @ itself: {stdin}"
    );
}

/// Grouping by file and the summary go through a map now; through the binary, a reply that
/// interleaves files and names many distinct ones keeps the original's order: each file's
/// edits together, files in first-appearance order, in the blocks and in the summary.
#[test]
fn interleaved_and_distinct_files_keep_first_appearance_order() {
    let fakes = Fakes::new();
    let mut reply: String = ["b.ts", "a.ts", "b.ts", "c.ts", "a.ts", "b.ts"]
        .iter()
        .enumerate()
        .map(|(i, file)| edit(file, &format!("old {i}"), &format!("new {i}")))
        .collect();
    reply.extend((0..1000).map(|i| edit(&format!("many/f{i}.ts"), "x", "y")));
    let reply = fakes.file("reply", &reply);
    let mut relay = agy(&fakes).env("FAKE_AGY_RESPONSE_FILE", reply).spawn();
    let (text, is_error) =
        relay.call_text("gemini-ask", json!({"prompt": "many files", "changeMode": true}));
    assert!(!is_error);
    let many: String = (0..1000).map(|i| format!("\n- many/f{i}.ts: 1 edit")).collect();
    let summary = format!(
        "ChangeMode Summary (Complete analysis across all chunks):\nTotal edits: 1006 (across all chunks)\n\
         Files affected: 1003\n\n- b.ts: 3 edits\n- a.ts: 2 edits\n- c.ts: 1 edit{many}\n\n"
    );
    assert!(text.starts_with(&summary), "{}", &text[..300]);
    let blocks: Vec<&str> =
        text.lines().filter_map(|line| line.strip_prefix("### Edit ")).take(7).collect();
    assert_eq!(
        blocks,
        ["1: b.ts", "2: b.ts", "3: b.ts", "4: a.ts", "5: a.ts", "6: c.ts", "7: many/f0.ts"]
    );
    let olds: Vec<&str> = text.lines().filter(|line| line.starts_with("old ")).collect();
    assert_eq!(olds, ["old 0", "old 2", "old 5", "old 1", "old 4", "old 3"]);
}
