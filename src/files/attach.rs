//! Attachments: images, PDFs, audio and video a call names (its `attachments`, and on agy its `@`
//! tokens of such files), each checked before anything runs: inside the project or one of the
//! call's `addDirs` after links are resolved, opened through handles beneath that directory (`fd`),
//! a regular file whose first bytes are a supported type, at most the size limit. Only the first
//! bytes and the size are read. Then how each backend is told: agy's block at the end of the
//! prompt, the Gemini CLI's `@` tokens, and the reply's notice.

use std::fs::{self, File};
use std::io::{self, Read, Seek};
use std::path::{Component, Path};

use crate::files::fd::Dir;
use crate::files::jail::Project;
use crate::files::path;

/// At most this many files per call.
pub const MAX_FILES: usize = 16;

/// The types a call may attach, as the refusal lists them.
const SUPPORTED: &str =
    "PNG, JPEG, GIF, WebP, BMP, TIFF, PDF, MP3, WAV, FLAC, MP4, QuickTime, WebM";

/// The bytes the type is read from.
const HEAD: usize = 32;

/// ISO base media brands of HEIF images: the container is MP4's, the content is not.
const HEIC_BRANDS: [&[u8; 4]; 6] = [b"heic", b"heix", b"hevc", b"hevx", b"mif1", b"msf1"];

/// BMP's DIB header sizes (core, info, v2 to v5).
const BMP_HEADERS: [u32; 7] = [12, 40, 52, 56, 64, 108, 124];

/// One checked attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The path as the call wrote it.
    pub written: String,
    /// Relative to the project, with `/` (`../assets/logo.png` in an `addDirs` entry).
    pub rel: String,
    /// The type's name from the supported list.
    pub kind: &'static str,
    pub size: u64,
    /// Whether it lies outside the project (in an `addDirs` entry).
    pub outside: bool,
}

/// The type `head` (a file's first bytes) starts with: its name, or why it is refused (`HEIC`, or
/// `unknown type`).
pub fn sniff(head: &[u8]) -> Result<&'static str, &'static str> {
    let at = |from: usize, bytes: &[u8]| head.get(from..from + bytes.len()) == Some(bytes);
    let kind = match head {
        [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => "PNG",
        [0xFF, 0xD8, 0xFF, ..] => "JPEG",
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => "GIF",
        [b'R', b'I', b'F', b'F', ..] if at(8, b"WEBP") => "WebP",
        [b'R', b'I', b'F', b'F', ..] if at(8, b"WAVE") => "WAV",
        [b'B', b'M', ..] if head.len() >= 18 && BMP_HEADERS.contains(&le32(&head[14..18])) => "BMP",
        [b'I', b'I', b'*', 0, ..] | [b'M', b'M', 0, b'*', ..] => "TIFF",
        [b'%', b'P', b'D', b'F', b'-', ..] => "PDF",
        [b'I', b'D', b'3', ..] => "MP3",
        // An MPEG audio frame sync: eleven set bits, a version other than reserved, a layer.
        [0xFF, b, ..] if b & 0xE0 == 0xE0 && b & 0x18 != 0x08 && b & 0x06 != 0 => "MP3",
        [b'f', b'L', b'a', b'C', ..] => "FLAC",
        [0x1A, 0x45, 0xDF, 0xA3, ..] => "WebM",
        _ if at(4, b"ftyp") && at(8, b"qt  ") => "QuickTime",
        _ if at(4, b"ftyp") && HEIC_BRANDS.iter().any(|brand| at(8, *brand)) => return Err("HEIC"),
        _ if at(4, b"ftyp") && head.len() >= 12 => "MP4",
        _ => return Err("unknown type"),
    };
    Ok(kind)
}

fn le32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Reads the first bytes of `file` and goes back to its start.
fn head(file: &mut File) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD);
    file.by_ref().take(HEAD as u64).read_to_end(&mut head)?;
    file.rewind()?;
    Ok(head)
}

/// Whether the open file `file` is a supported attachment (read from its start, then rewound).
pub(crate) fn is_media(file: &mut File) -> bool {
    head(file).is_ok_and(|head| sniff(&head).is_ok())
}

/// Checks every entry (`attachments`, then agy's `@` tokens of media files) against the project
/// `root` and this call's `add_dirs`, each file once: the attachments in order, or the refusal of
/// the first entry that fails, `Invalid arguments for <tool>: attachments: …`, naming its path as
/// written.
pub fn check(
    tool: &str,
    entries: &[String],
    add_dirs: &[String],
    root: &Path,
    limit: u64,
) -> Result<Vec<Attachment>, String> {
    let refuse = |what: String| format!("Invalid arguments for {tool}: attachments: {what}");
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let project = Project::new(root);
    let mut bases = vec![project.real_root.clone()];
    bases.extend(add_dirs.iter().filter_map(|dir| fs::canonicalize(project.root.join(dir)).ok()));
    let mut seen = Vec::new();
    let mut attached = Vec::new();
    for written in entries {
        let canonical = match fs::canonicalize(project.root.join(written)) {
            Ok(canonical) => canonical,
            Err(_) => return Err(refuse(format!("{written} does not exist"))),
        };
        let Some(base) = bases.iter().find(|base| path::final_within(&canonical, base)) else {
            return Err(refuse(format!("{written} is outside the project and its addDirs")));
        };
        if seen.contains(&canonical) {
            continue;
        }
        seen.push(canonical.clone());
        let (kind, size) = match open_beneath(base, &canonical) {
            Ok(mut file) => {
                let head = head(&mut file).map_err(|_| refuse(not_regular(written)))?;
                let size = file.metadata().map_err(|_| refuse(not_regular(written)))?.len();
                (sniff(&head), size)
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(refuse(format!("{written} does not exist")));
            }
            Err(_) => return Err(refuse(not_regular(written))),
        };
        let kind = kind.map_err(|found| {
            refuse(format!(
                "{written} is not a supported attachment ({found}); supported: {SUPPORTED}"
            ))
        })?;
        if size > limit {
            return Err(refuse(format!(
                "{written} is {size} bytes, over the {limit} byte limit (GEMINI_MCP_MAX_ATTACHMENT_BYTES)"
            )));
        }
        if attached.len() == MAX_FILES {
            return Err(refuse(format!("Array must contain at most {MAX_FILES} element(s)")));
        }
        let outside = !path::final_within(&canonical, &project.real_root);
        let rel = relative(&project.real_root, &canonical);
        attached.push(Attachment { written: written.clone(), rel, kind, size, outside });
    }
    Ok(attached)
}

fn not_regular(written: &str) -> String {
    format!("{written} is not a regular file")
}

/// Opens `canonical` through handles beneath `base`, never through a symlink: a path swapped for
/// one since it was resolved is refused.
pub(super) fn open_beneath(base: &Path, canonical: &Path) -> io::Result<File> {
    let rel = canonical.strip_prefix(base).map_err(io::Error::other)?;
    let parts: Vec<&[u8]> = rel.iter().map(|part| part.as_encoded_bytes()).collect();
    Dir::open(base)?.file_beneath(&parts.join(&b'/'))
}

/// `path` relative to `from` (both canonical), with `/`: `..` for each component of `from` that
/// `path` does not share.
fn relative(from: &Path, path: &Path) -> String {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = path.components().collect();
    let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if shared == 0 {
        // Another drive: only the whole path names it.
        return path::with_slashes(&path.to_string_lossy()).into_owned();
    }
    let ups = std::iter::repeat_n("..".into(), from.len() - shared);
    let downs = to[shared..].iter().map(|part| part.as_os_str().to_string_lossy());
    ups.chain(downs).collect::<Vec<_>>().join("/")
}

/// `<n> B` below 1024, else 1024-based with one decimal rounded half up (`2.3 KiB`).
pub fn size_text(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut scale: u64 = 1024;
    for unit in UNITS {
        let tenths = (n.saturating_mul(10) + scale / 2) / scale;
        if tenths < 10_240 || unit == "TiB" {
            return format!("{}.{} {unit}", tenths / 10, tenths % 10);
        }
        scale *= 1024;
    }
    unreachable!("the last unit returns")
}

/// The reply's first notice: `📎 Attached: <n> file(s), <total size>`.
pub fn notice(attached: &[Attachment]) -> String {
    let total = attached.iter().map(|it| it.size).sum();
    format!("📎 Attached: {} file(s), {}", attached.len(), size_text(total))
}

/// agy's block at the end of the prompt: one line per file with its path, type and size.
pub fn agy_block(attached: &[Attachment]) -> String {
    let mut block = String::from(
        "\n\nAttached files (open each one with your file viewing tool before you answer):",
    );
    for it in attached {
        block.push_str(&format!("\n- {} ({}, {})", it.rel, it.kind, size_text(it.size)));
    }
    block
}

/// The Gemini CLI's tokens: ` @<path>` per file, written so that its `@` grammar reads the path.
pub fn gemini_tokens(attached: &[Attachment]) -> String {
    attached.iter().map(|it| format!(" @{}", path::cli_path(&it.rel))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_by_their_first_bytes() {
        let ftyp = |brand: &[u8]| [&b"\0\0\0\x18ftyp"[..], brand].concat();
        let mut bmp = b"BM\0\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        bmp.extend_from_slice(&40u32.to_le_bytes());
        let cases: [(&[u8], Result<&str, &str>); 22] = [
            (b"\x89PNG\r\n\x1a\n", Ok("PNG")),
            (b"\xFF\xD8\xFF\xE0", Ok("JPEG")),
            (b"GIF87a", Ok("GIF")),
            (b"GIF89a", Ok("GIF")),
            (b"RIFF\0\0\0\0WEBPVP8 ", Ok("WebP")),
            (b"RIFF\0\0\0\0WAVEfmt ", Ok("WAV")),
            (&bmp, Ok("BMP")),
            (b"BM\0\0\0\0\0\0\0\0\0\0\0\0\x07\0\0\0", Err("unknown type")),
            (b"II*\0", Ok("TIFF")),
            (b"MM\0*", Ok("TIFF")),
            (b"%PDF-1.7", Ok("PDF")),
            (b"ID3\x04", Ok("MP3")),
            (b"\xFF\xFB\x90\x64", Ok("MP3")),
            (b"\xFF\xF1\x50\x80", Err("unknown type")),
            (b"fLaC", Ok("FLAC")),
            (b"\x1A\x45\xDF\xA3", Ok("WebM")),
            (&ftyp(b"qt  "), Ok("QuickTime")),
            (&ftyp(b"isom"), Ok("MP4")),
            (&ftyp(b"heic"), Err("HEIC")),
            (&ftyp(b"mif1"), Err("HEIC")),
            (b"just text", Err("unknown type")),
            (b"", Err("unknown type")),
        ];
        for (head, expected) in cases {
            assert_eq!(sniff(head), expected, "{head:?}");
        }
    }

    #[test]
    fn sizes_round_half_up() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1024), "1.0 KiB");
        assert_eq!(size_text(2355), "2.3 KiB");
        assert_eq!(size_text(2406), "2.3 KiB");
        assert_eq!(size_text(2407), "2.4 KiB");
        assert_eq!(size_text(1_572_864), "1.5 MiB");
        assert_eq!(size_text(1_048_575), "1.0 MiB");
        assert_eq!(size_text(20_971_520), "20.0 MiB");
        assert_eq!(size_text(1 << 30), "1.0 GiB");
    }

    #[test]
    fn relative_paths_climb_out_of_the_project() {
        let rel = |from: &str, to: &str| relative(Path::new(from), Path::new(to));
        assert_eq!(rel("/p/proj", "/p/proj/a/b.png"), "a/b.png");
        assert_eq!(rel("/p/proj", "/p/assets/logo.png"), "../assets/logo.png");
        assert_eq!(rel("/p/proj/deep", "/q/x.png"), "../../../q/x.png");
    }

    #[test]
    fn windows_quotes_what_would_end_a_reference() {
        use crate::files::path::windows::cli_path;
        assert_eq!(cli_path("a b(1).png"), "\"a b(1).png\"");
        assert_eq!(cli_path("x;y.png"), "\"x;y.png\"");
        assert_eq!(cli_path("dir/plain.png"), "dir/plain.png");
    }
}
