//! `gemini-relay config <host> --write` and `--remove`: the relay's entry merged into, or taken out
//! of, the host's own file. JSON goes through serde_json (other members keep their order); Codex's
//! TOML gets a line-based edit of the relay's tables only. A file that cannot be edited safely is
//! left byte-identical; a changed file is first copied to `<file>.bak`, and every write is atomic
//! and keeps the file's permissions.

use std::fs;
use std::io::{self, Read};
use std::ops::Range;
use std::path::Path;

use serde_json::{Map, Value};

use crate::cli::hosts::{Document, NAME};
use crate::files::fd::open_regular;
use crate::state::write_atomically;

/// What `config <host>` does to the host's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    Write,
    Remove,
}

/// Why a file was not edited, with the exit code: 2 for a file left alone on purpose, 1 for a
/// failure of the system.
pub struct Refusal(pub u8, pub String);

/// Applies `edit` with `document` (the relay's part) to the file at `path`; the sentence that says
/// what was done.
pub fn apply(path: &Path, document: &Document, edit: Edit) -> Result<String, Refusal> {
    let shown = path.display();
    let refused = |why: &str| Refusal(2, format!("{shown} was not changed: {why}"));
    let original = match fs::symlink_metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(Refusal(1, format!("cannot read {shown}: {err}"))),
        Ok(meta) if meta.is_symlink() => {
            return Err(refused("it is a symbolic link; edit the file it points to by hand"));
        }
        Ok(meta) if meta.is_dir() => return Err(refused("it is a directory")),
        Ok(meta) if !meta.is_file() => return Err(refused("it is not a regular file")),
        Ok(meta) if meta.permissions().readonly() => return Err(refused("it is read-only")),
        Ok(meta) => match read(path) {
            Ok(bytes) => Some((bytes, meta.permissions())),
            Err(err) => return Err(Refusal(1, format!("cannot read {shown}: {err}"))),
        },
    };
    let text = match &original {
        Some((bytes, _)) => std::str::from_utf8(bytes).map_err(|_| refused("it is not UTF-8"))?,
        None => "",
    };
    let edited = match document {
        Document::Json(document) => edit_json(text, document, edit),
        Document::Toml(table) => edit_toml(text, table, edit),
    }
    .map_err(|why| refused(&why))?;
    let Some(edited) = edited else {
        return Ok(match edit {
            Edit::Write => format!("{shown} already has this {NAME} entry; nothing was written"),
            Edit::Remove => format!("{shown} has no {NAME} entry; nothing was removed"),
        });
    };
    let failed = |err: io::Error| Refusal(1, format!("cannot write {shown}: {err}"));
    match &original {
        Some((bytes, permissions)) => {
            let mut backup = path.as_os_str().to_os_string();
            backup.push(".bak");
            let backup = Path::new(&backup);
            // The host may have rewritten the file since it was read: its version wins.
            if read(path).map_err(failed)? != *bytes {
                return Err(refused("it changed while it was being edited; run again"));
            }
            replace(backup, bytes, permissions).map_err(failed)?;
            replace(path, edited.as_bytes(), permissions).map_err(failed)?;
            let done = if edit == Edit::Write { "wrote the" } else { "removed the" };
            Ok(format!(
                "{done} {NAME} entry in {shown} (the previous file is {})",
                backup.display()
            ))
        }
        None => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(failed)?;
            }
            write_atomically(path, edited.as_bytes()).map_err(failed)?;
            Ok(format!("created {shown} with the {NAME} entry"))
        }
    }
}

/// The bytes of the regular file at `path` (a FIFO is never waited on).
fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `bytes` over `path` atomically, with `permissions`.
fn replace(path: &Path, bytes: &[u8], permissions: &fs::Permissions) -> io::Result<()> {
    write_atomically(path, bytes)?;
    fs::set_permissions(path, permissions.clone())
}

/// The JSON file `text` with the relay's entry of `document` written or removed; `None` when
/// nothing changes. Comments before the top-level object are kept; comments inside it, which
/// serde_json cannot keep, are refused.
fn edit_json(text: &str, document: &Value, edit: Edit) -> Result<Option<String>, String> {
    let (key, entry) = document
        .as_object()
        .and_then(|document| document.iter().next())
        .and_then(|(key, servers)| Some((key, servers.get(NAME)?)))
        .expect("a host's document holds one server");
    let (head, body) = text.split_at(leading_comments_end(text));
    let mut root: Value = match body.trim() {
        "" => Value::Object(Map::new()),
        body => serde_json::from_str(body).map_err(|err| match has_comment(body) {
            true => "it has comments inside its JSON, which an edit would lose; add the entry by \
                     hand"
                .to_string(),
            false => format!("it does not parse as JSON ({err})"),
        })?,
    };
    let Some(object) = root.as_object_mut() else {
        return Err("its top level is not a JSON object".to_string());
    };
    if edit == Edit::Remove && !object.contains_key(key) {
        return Ok(None);
    }
    let servers = object.entry(key.as_str()).or_insert_with(|| Value::Object(Map::new()));
    let servers =
        servers.as_object_mut().ok_or_else(|| format!("its \"{key}\" is not a JSON object"))?;
    let unchanged = match edit {
        Edit::Write => servers.get(NAME) == Some(entry),
        Edit::Remove => servers.shift_remove(NAME).is_none(),
    };
    if unchanged {
        return Ok(None);
    }
    if edit == Edit::Write {
        servers.insert(NAME.to_string(), entry.clone());
    }
    // serde_json indents by two spaces, and a JSON string holds no raw line break, so every
    // line's leading spaces are its indentation.
    let pretty = serde_json::to_string_pretty(&root).map_err(|err| err.to_string())?;
    let indent = indentation(body);
    let mut out = head.to_string();
    for line in pretty.lines() {
        let text = line.trim_start_matches(' ');
        out.push_str(&indent.repeat((line.len() - text.len()) / 2));
        out.push_str(text);
        out.push('\n');
    }
    Ok(Some(out))
}

/// Where the JSON starts: after a byte order mark and the comments and blank lines before it
/// (Zed's settings file starts with a comment).
fn leading_comments_end(text: &str) -> usize {
    let mut rest = text.strip_prefix('\u{feff}').unwrap_or(text);
    loop {
        let trimmed = rest.trim_start();
        rest = match (trimmed.strip_prefix("//"), trimmed.strip_prefix("/*")) {
            (Some(line), _) => line.split_once('\n').map_or("", |(_, rest)| rest),
            (_, Some(block)) => match block.split_once("*/") {
                Some((_, rest)) => rest,
                None => return text.len() - trimmed.len(),
            },
            _ => return text.len() - trimmed.len(),
        };
    }
}

/// Whether `json` holds a `//` or `/*` outside its strings.
fn has_comment(json: &str) -> bool {
    let (mut in_string, mut escaped, mut slash) = (false, false, false);
    for c in json.chars() {
        if in_string {
            (escaped, in_string) = (!escaped && c == '\\', escaped || c != '"');
            continue;
        }
        if slash && (c == '/' || c == '*') {
            return true;
        }
        slash = c == '/';
        in_string = c == '"';
    }
    false
}

/// The indentation of the file's first indented line (two spaces when it has none), so that a
/// rewritten file keeps its look.
fn indentation(body: &str) -> &str {
    body.lines()
        .skip(1)
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .find(|indent| !indent.is_empty())
        .unwrap_or("  ")
}

/// Codex's `config.toml` with the relay's tables (`[mcp_servers.gemini-relay]` and its
/// sub-tables) replaced by `table`, or removed; `None` when nothing changes. Lines outside those
/// tables, comments included, are kept as they are; a file that defines the relay in another
/// form, or whose multi-line strings could hide a table header, is refused.
fn edit_toml(text: &str, table: &str, edit: Edit) -> Result<Option<String>, String> {
    if text.contains("\"\"\"") || text.contains("'''") {
        return Err("it has multi-line strings, which the line-based edit of Codex's file does \
                    not read"
            .to_string());
    }
    let own = |name: &str| {
        name == format!("mcp_servers.{NAME}") || name.starts_with(&format!("mcp_servers.{NAME}."))
    };
    let elsewhere = || format!("it defines {NAME} in a form other than its own table");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let (mut table_name, mut inside) = (String::new(), false);
    for (index, line) in lines.iter().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let array = header.starts_with('[');
            table_name = key_path(header.trim_start_matches('[').split(']').next().unwrap_or(""));
            inside = own(&table_name);
            if array && (inside || table_name == "mcp_servers") {
                return Err(elsewhere());
            }
            if inside {
                ranges.push(index..index + 1);
            }
        } else if inside {
            // Comments and blank lines after the table's last key belong to what follows.
            if let Some(range) = ranges.last_mut() {
                range.end = index + 1;
            }
        } else {
            let key = key_path(line.split('=').next().unwrap_or(""));
            let key = if table_name.is_empty() { key } else { format!("{table_name}.{key}") };
            if own(&key) || (key == "mcp_servers" && line.contains(NAME)) {
                return Err(elsewhere());
            }
        }
    }
    if edit == Edit::Remove && ranges.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len() + table.len() + 1);
    for (index, line) in lines.iter().enumerate() {
        if edit == Edit::Write && ranges.first().is_some_and(|range| range.start == index) {
            out.push_str(table);
        }
        if !ranges.iter().any(|range| range.contains(&index)) {
            out.push_str(line);
        }
    }
    match edit {
        Edit::Write if ranges.is_empty() => {
            if !out.is_empty() {
                out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
            }
            out.push_str(table);
        }
        Edit::Write => (),
        Edit::Remove => {
            // The blank line that separated the appended table goes with it.
            let kept = out.trim_end_matches(['\n', '\r']).len();
            out.truncate(kept);
            if !out.is_empty() {
                out.push('\n');
            }
        }
    }
    Ok((out != text).then_some(out))
}

/// A TOML key or table name with its spaces and quotes taken out (`mcp_servers . "gemini-relay"`
/// → `mcp_servers.gemini-relay`), enough to recognise the relay's names.
fn key_path(raw: &str) -> String {
    raw.chars().filter(|c| !matches!(c, ' ' | '\t' | '"' | '\'')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TABLE: &str = "[mcp_servers.gemini-relay]\ncommand = \"/bin/relay\"\n";

    fn toml(text: &str, edit: Edit) -> Result<Option<String>, String> {
        edit_toml(text, TABLE, edit)
    }

    #[test]
    fn comments_are_found_outside_strings_only() {
        assert!(has_comment("{\"a\": 1 // x\n}"));
        assert!(has_comment("{/* x */}"));
        assert!(!has_comment(r#"{"url": "http://x/*", "b": "a\"//"}"#));
        assert!(has_comment(r#"{"b": "a\\"// x"#));
    }

    #[test]
    fn leading_comments_are_skipped() {
        let text = "\u{feff}// Zed settings\n/* more */\n{\"a\": 1}\n";
        assert_eq!(&text[leading_comments_end(text)..], "{\"a\": 1}\n");
        assert_eq!(leading_comments_end("{}"), 0);
        assert_eq!(leading_comments_end("/* open"), 0);
    }

    #[test]
    fn json_members_keep_their_order_and_indentation() {
        let document = json!({"mcpServers": {NAME: {"command": "/bin/relay"}}});
        let text = "{\n    \"z\": 1,\n    \"mcpServers\": {\"b\": {}, \"gemini-relay\": 1, \"a\": {}},\n    \"c\": 2\n}";
        let written = edit_json(text, &document, Edit::Write).unwrap().unwrap();
        let value: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(value.as_object().unwrap().keys().collect::<Vec<_>>(), ["z", "mcpServers", "c"]);
        let servers: Vec<_> = value["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(servers, ["b", NAME, "a"]);
        assert!(written.contains("\n    \"z\": 1"), "{written}");
        assert_eq!(edit_json(&written, &document, Edit::Write).unwrap(), None);
        let removed = edit_json(&written, &document, Edit::Remove).unwrap().unwrap();
        let servers: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(
            servers["mcpServers"].as_object().unwrap().keys().collect::<Vec<_>>(),
            ["b", "a"]
        );
    }

    #[test]
    fn toml_tables_are_replaced_in_place_and_removed() {
        let text = "# top\nmodel = \"o3\"\n\n[mcp_servers.gemini-relay]\ncommand = \"old\"\n\n[mcp_servers.gemini-relay.env]\nA = \"1\"\n\n# the other one\n[mcp_servers.other]\ncommand = \"x\"\n";
        let written = toml(text, Edit::Write).unwrap().unwrap();
        assert_eq!(
            written,
            "# top\nmodel = \"o3\"\n\n[mcp_servers.gemini-relay]\ncommand = \"/bin/relay\"\n\n\n# the other one\n[mcp_servers.other]\ncommand = \"x\"\n"
        );
        assert_eq!(toml(&written, Edit::Write).unwrap(), None);
        let removed = toml(&written, Edit::Remove).unwrap().unwrap();
        assert_eq!(
            removed,
            "# top\nmodel = \"o3\"\n\n\n\n# the other one\n[mcp_servers.other]\ncommand = \"x\"\n"
        );
        assert_eq!(toml(&removed, Edit::Remove).unwrap(), None);
        // Appended to a file without the table, and taken out again to the byte.
        let plain = "model = \"o3\"\n";
        let appended = toml(plain, Edit::Write).unwrap().unwrap();
        assert_eq!(appended, format!("model = \"o3\"\n\n{TABLE}"));
        assert_eq!(toml(&appended, Edit::Remove).unwrap().unwrap(), plain);
        assert_eq!(toml("", Edit::Write).unwrap().unwrap(), TABLE);
    }

    #[test]
    fn toml_the_edit_cannot_read_is_refused() {
        for text in [
            "[mcp_servers]\ngemini-relay = { command = \"x\" }\n",
            "[mcp_servers]\n\"gemini-relay\".command = \"x\"\n",
            "mcp_servers.gemini-relay.command = \"x\"\n",
            "mcp_servers = { gemini-relay = { command = \"x\" } }\n",
            "[[mcp_servers]]\nname = \"x\"\n",
            "instructions = \"\"\"\n[mcp_servers.gemini-relay]\n\"\"\"\n",
        ] {
            assert!(toml(text, Edit::Write).is_err(), "{text}");
            assert!(toml(text, Edit::Remove).is_err(), "{text}");
        }
        // Another server that merely mentions the relay is not the relay.
        let other = "[mcp_servers.other]\nargs = [\"-y\", \"gemini-relay\"]\n[mcp_servers.gemini-relay-dev]\ncommand = \"x\"\n";
        assert!(toml(other, Edit::Write).unwrap().is_some());
        assert_eq!(toml(other, Edit::Remove).unwrap(), None);
        let quoted = "[ mcp_servers . \"gemini-relay\" ]\ncommand = \"old\"\n";
        assert_eq!(toml(quoted, Edit::Write).unwrap().unwrap(), TABLE);
    }
}
