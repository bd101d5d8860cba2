//! gemini-image texts and files: the generation prompt, finding the generated image, the
//! outputPath jail and copy, and the result rendering.
//!
//! Two choices differ from the original on purpose. Markdown targets starting with `file://` lose
//! exactly that prefix (case-insensitive), so `file:///home/u/a.png` becomes the absolute path
//! `/home/u/a.png`; the original stripped `file:///` and broke such targets. The embed is a
//! correct file URL: `file://` + the percent-encoded absolute path, with `/` separators on
//! Windows (`file:///C:/Users/u/a.png`).
//!
//! On Windows a target's `/` before a drive letter goes too (`file:///C:/x.png` names `C:/x.png`),
//! a reply with no such image is searched for an absolute Windows path to one (`C:\out\fox.png`),
//! and the notice shows the copy's path with `/`. A path that starts with two separators (a network
//! share, `\\?\`, `\\.\`) is never looked at: touching a share can send the user's credentials
//! to its server.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::backend::options::RunOptions;
use crate::backend::{self, RunRequest, agy};
use crate::call::Ctx;
use crate::exec::{self, System};
use crate::files::{self, Landing};
use crate::js;
use crate::tools::str_arg;

/// The aspect ratio used when the caller gives none.
pub const DEFAULT_RATIO: &str = "1:1";

/// The failure text for a prompt that is blank after trimming.
pub const BLANK_PROMPT_ERROR: &str =
    "Please provide a prompt describing the image you want to generate.";

/// What the result text reports; see [`render_image_result`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageReport<'a> {
    /// The user's prompt; trimmed when rendered.
    pub prompt: &'a str,
    pub aspect_ratio: &'a str,
    pub size: Option<&'a str>,
    /// The backend's name, shown upper-cased.
    pub backend_name: &'a str,
    /// The cwd-relative path the image was copied to, from [`copy_to_output`].
    pub saved_to: Option<&'a Path>,
    /// The final absolute image path (the copy when there is one); embedded when it exists.
    pub image: Option<&'a Path>,
    /// The model's reply text.
    pub reply: &'a str,
}

/// Builds the generation prompt; the prompt is trimmed.
pub fn image_prompt(prompt: &str, aspect_ratio: &str, size: Option<&str>) -> String {
    let mut out = String::from("Generate an image from the following specifications:\n");
    out.push_str(&format!("- Prompt: {}\n", js::trim(prompt)));
    out.push_str(&format!("- Aspect Ratio: {aspect_ratio}\n"));
    if let Some(size) = non_empty(size) {
        out.push_str(&format!("- Image Size: {size}\n"));
    }
    out.push_str(
        "\nUse your image generation tool to create it, then say where the image file was saved.",
    );
    out
}

/// The progress text sent before the backend runs.
pub fn progress_message(aspect_ratio: &str) -> String {
    format!("\u{1F3A8} Generating image with aspect ratio {aspect_ratio}...")
}

/// Steps (a) and (b): the image the reply names, if that file exists. (a) The first markdown
/// image whose target ends in `.jpg`, `.jpeg`, `.png` or `.webp` (any case), read by
/// [`target_path`], relative targets resolved against `cwd`; only the first such image is
/// considered, as in the original. (b) On Windows, else the first absolute Windows path to an
/// image in the text ([`windows_absolute_image`]).
pub fn find_image_in_reply(reply: &str, cwd: &Path) -> Option<PathBuf> {
    let windows = exec::SYSTEM == System::Windows;
    let target = first_markdown_image(reply).and_then(|target| target_path(target, windows));
    if let Some(target) = target {
        let path: PathBuf = cwd.join(target).components().collect();
        if path.is_file() {
            return Some(path);
        }
    }
    if !windows {
        return None;
    }
    let path = PathBuf::from(windows_absolute_image(reply)?);
    path.is_file().then_some(path)
}

/// A markdown image target as the path it names: without a leading `file://` (any case) and, on
/// `windows`, without the `/` a `file:///C:/…` URL puts before its drive letter. `None` on
/// `windows` for a path that starts with two separators (a share, `\\?\` or `\\.\`): it is
/// never looked at.
fn target_path(target: &str, windows: bool) -> Option<&str> {
    let path = match target.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("file://") => &target[7..],
        _ => target,
    };
    if !windows {
        return Some(path);
    }
    let path = match path.as_bytes() {
        [b'/', letter, b':', ..] if letter.is_ascii_alphabetic() => &path[1..],
        _ => path,
    };
    match path.as_bytes() {
        [first, second, ..] if is_separator(*first) && is_separator(*second) => None,
        _ => Some(path),
    }
}

/// Step (b), on Windows: the first absolute Windows path to an image in `text`: a drive letter,
/// `:` and a separator, then characters other than whitespace, `"` and `)`, up to the last image
/// extension (any case) among them that follows at least one of them. An apostrophe is kept, as
/// Windows user names have them (`C:\Users\O'Brien\fox.png`); a quote or backtick after the path
/// is left out anyway, since the path ends at its extension.
///
/// Linear in the text: a start inside a run already searched shares that run's end, so it cannot
/// match where the run's own start did not, and the search goes on after the run.
fn windows_absolute_image(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start + 3 <= bytes.len() {
        let [letter, colon, separator] = [bytes[start], bytes[start + 1], bytes[start + 2]];
        if !(letter.is_ascii_alphabetic() && colon == b':' && is_separator(separator)) {
            start += 1;
            continue;
        }
        // Three ASCII bytes: the rest starts on a character boundary.
        let body = &text[start + 3..];
        let run_len = body.find(|c: char| js::is_space(c) || matches!(c, '"' | ')'));
        let run = &body[..run_len.unwrap_or(body.len())];
        if let Some(end) = last_image_end(run) {
            return Some(&text[start..start + 3 + end]);
        }
        start += 3 + run.len().max(1);
    }
    None
}

/// The end of the last image extension in `run` that has at least one character before it.
fn last_image_end(run: &str) -> Option<usize> {
    let lower = run.to_ascii_lowercase();
    lower.rmatch_indices('.').map(|(at, _)| at).filter(|&at| at > 0).find_map(|at| {
        let ext = IMAGE_EXTENSIONS.iter().find(|ext| lower[at..].starts_with(*ext))?;
        Some(at + ext.len())
    })
}

fn is_separator(byte: u8) -> bool {
    matches!(byte, b'/' | b'\\')
}

/// Step (c), in two halves around the model run: [`BrainImages::before`] notes the images agy's
/// recent conversations hold when the run starts, and [`BrainImages::newest_new`] takes the newest
/// image that was not there then.
///
/// Comparing mtimes with the call's start would not do: a file's mtime comes from the kernel's
/// coarse clock (on Linux updated once per tick, up to 10 ms behind `SystemTime::now()`), so an
/// image written just after the start can carry an mtime before it. What was there needs no
/// clock, and tells this run's image from an earlier call's even when both carry one mtime.
///
/// Both halves read only the conversation directories whose own mtime is at least `start - 30 s`,
/// and count only the images in them whose mtime is at least that too: an image written during
/// the run carries an mtime at most a tick before the start, so older files are neither
/// candidates nor worth noting. The note holds the images of the last 30 s, not a conversation's
/// whole history.
pub struct BrainImages {
    brain_dir: PathBuf,
    cutoff: SystemTime,
    /// The images there before the run, with their mtimes.
    before: HashMap<PathBuf, SystemTime>,
}

impl BrainImages {
    /// Notes the recent images in `brain_dir`, for a run that starts at `start`.
    pub fn before(brain_dir: &Path, start: SystemTime) -> BrainImages {
        let cutoff = start.checked_sub(DIR_SLACK).unwrap_or(SystemTime::UNIX_EPOCH);
        let before = recent_images(brain_dir, cutoff).into_iter().collect();
        BrainImages { brain_dir: brain_dir.to_path_buf(), cutoff, before }
    }

    /// The newest recent image that was not there before the run, or whose mtime has changed
    /// since; of images with one mtime, the first by path. When the run named its conversation
    /// and that conversation has a directory, only images there count: agy runs side by side,
    /// and another run's new image must not be taken for this one's.
    pub fn newest_new(&self, conversation: Option<&str>) -> Option<PathBuf> {
        let own = conversation
            .filter(|id| !id.is_empty() && Path::new(id).file_name() == Some(OsStr::new(id)))
            .map(|id| self.brain_dir.join(id))
            .filter(|dir| dir.is_dir());
        let mut best: Option<(SystemTime, PathBuf)> = None;
        for (path, mtime) in recent_images(&self.brain_dir, self.cutoff) {
            if self.before.get(&path) == Some(&mtime) {
                continue;
            }
            if own.as_ref().is_some_and(|own| path.parent() != Some(own.as_path())) {
                continue;
            }
            if best.as_ref().is_none_or(|(newest, _)| mtime > *newest) {
                best = Some((mtime, path));
            }
        }
        best.map(|(_, path)| path)
    }
}

/// The image files directly inside the conversation directories of `brain_dir` whose own mtime
/// is at least `cutoff`, with their mtimes, leaving out images older than `cutoff`; sorted by path.
fn recent_images(brain_dir: &Path, cutoff: SystemTime) -> Vec<(PathBuf, SystemTime)> {
    let mut images = Vec::new();
    for dir in sorted_entries(brain_dir) {
        let Ok(meta) = fs::metadata(&dir) else { continue };
        if !meta.is_dir() || !meta.modified().is_ok_and(|mtime| mtime >= cutoff) {
            continue;
        }
        for file in sorted_entries(&dir) {
            let name = file.file_name().unwrap_or_default();
            if !has_image_extension(&name.to_string_lossy()) {
                continue;
            }
            let Ok(meta) = fs::metadata(&file) else { continue };
            let Ok(mtime) = meta.modified() else { continue };
            if meta.is_file() && mtime >= cutoff {
                images.push((file, mtime));
            }
        }
    }
    images
}

/// Copies the image to `output_path` (trimmed, resolved against `cwd`) and returns the
/// cwd-relative destination; the new image path is `cwd.join(<returned path>)`.
///
/// The check is lexical and follows the system's path rules (`files::landing`): a path that
/// lands outside `cwd` escapes and is refused, and so does one whose relative path starts with
/// `..` (a name like `..foo`, as in the original, whose check was Node's `path.relative`). An
/// absolute `output_path` inside `cwd` is accepted. On Windows a drive-relative path (`C:x.png`),
/// a share or device path, another drive, and a name Windows reads as a device or a stream
/// (`CON.png`, `x.png:s`) are refused too. `cwd` must be absolute.
///
/// The write never follows a link: the directories on the way are opened one by one beneath
/// `cwd` through handles (`O_NOFOLLOW`; on Windows without following reparse points, each
/// handle's final path checked under `cwd`'s) and created when missing, an existing destination
/// that is not a regular file (a link, a FIFO, a directory) is refused without being opened, and
/// the image goes to a new temporary file in the target directory that is then renamed over the
/// destination. The source is read only if it is a regular file, opened without blocking.
pub fn copy_to_output(output_path: &str, image: &Path, cwd: &Path) -> Result<PathBuf, String> {
    let trimmed = js::trim(output_path);
    let relative = match files::landing(cwd, trimmed) {
        Landing::Inside(relative) if !relative.starts_with("..") => relative,
        Landing::Inside(_) | Landing::Outside => {
            return Err(format!(
                "Invalid outputPath: \"{trimmed}\" escapes the project workspace directory."
            ));
        }
        Landing::NotAFile => {
            return Err(format!(
                "Invalid outputPath: \"{trimmed}\" names a device, a stream or a name Windows \
                 trims, not a file in the project."
            ));
        }
    };
    let components: Vec<&str> = relative.split('/').filter(|it| !it.is_empty()).collect();
    files::copy_beneath(cwd, &components, image)
        .map_err(|err| format!("Could not save the image to \"{trimmed}\": {err}"))?;
    Ok(components.iter().collect())
}

/// Renders the result text, with a correct `file://` URL in the embed; notices come on top later.
pub fn render_image_result(report: &ImageReport) -> String {
    let mut out = String::from("### \u{1F3A8} Gemini Image Generation Completed\n\n");
    out.push_str(&format!("- **Prompt:** \"{}\"\n", js::trim(report.prompt)));
    out.push_str(&format!("- **Aspect Ratio:** `{}`", report.aspect_ratio));
    if let Some(size) = non_empty(report.size) {
        out.push_str(&format!("\n- **Size:** `{size}`"));
    }
    out.push_str(&format!("\n- **Backend:** `{}`", report.backend_name.to_ascii_uppercase()));
    if let Some(saved_to) = report.saved_to {
        let shown = shown_relative(&saved_to.to_string_lossy(), exec::SYSTEM == System::Windows);
        out.push_str(&format!("\n\n\u{1F4BE} **Saved to Project:** `{shown}`"));
    }
    if let Some(image) = report.image.filter(|image| image.exists()) {
        out.push_str(&format!(
            "\n\n![Generated Image]({})\n*File: `{}`*",
            file_url(image),
            image.to_string_lossy()
        ));
    }
    out.push_str("\n\n");
    out.push_str(report.reply);
    out
}

/// How much older than the run's start a conversation directory or an image may be.
const DIR_SLACK: Duration = Duration::from_secs(30);

const IMAGE_EXTENSIONS: [&str; 4] = [".jpg", ".jpeg", ".png", ".webp"];

/// Whether `name` is at least one character followed by an image extension (any case).
fn has_image_extension(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    IMAGE_EXTENSIONS.iter().any(|ext| lower.len() > ext.len() && lower.ends_with(ext))
}

/// The target of the first `![alt](target)` whose target ends in an image extension, matching
/// the original's `!\[[^\]]*\]\(([^)]+\.(jpg|jpeg|png|webp))\)` (case-insensitive).
fn first_markdown_image(text: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(offset) = text[from..].find("![") {
        let start = from + offset;
        from = start + 2;
        let after_bang = &text[start + 2..];
        // Without a `]` here there is none after any later `![` either.
        let alt_end = after_bang.find(']')?;
        let Some(rest) = after_bang[alt_end + 1..].strip_prefix('(') else { continue };
        let Some(target_end) = rest.find(')') else { continue };
        let target = &rest[..target_end];
        if has_image_extension(target) {
            return Some(target);
        }
    }
    None
}

/// The entries of a directory, sorted; an unreadable directory has none.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(|entry| Some(entry.ok()?.path())).collect();
    paths.sort();
    paths
}

/// A relative path as the notice shows it: with `/` separators on `windows`. Elsewhere a
/// backslash is part of a name and stays.
fn shown_relative(path: &str, windows: bool) -> String {
    if windows { path.replace('\\', "/") } else { path.to_string() }
}

/// The file URL of an absolute image path (see [`posix_file_url`] and [`windows_file_url`]).
fn file_url(path: &Path) -> String {
    match exec::SYSTEM {
        System::Windows => windows_file_url(&path.to_string_lossy()),
        System::Posix => posix_file_url(path.as_os_str().as_encoded_bytes()),
    }
}

/// `file://` + the path, percent-encoding every byte outside the URL-safe set (parentheses too,
/// so the markdown link stays intact).
fn posix_file_url(path: &[u8]) -> String {
    percent_encoded("file://", path)
}

/// A Windows path as a file URL, with `/` separators: `C:\a b\x.png` is
/// `file:///C:/a%20b/x.png`, a share's `\\srv\share\x.png` is `file://srv/share/x.png`, and
/// the `\\?\` forms are read as the paths they stand for.
fn windows_file_url(path: &str) -> String {
    let path = path.replace('\\', "/");
    let path = match path.strip_prefix("//?/") {
        Some(rest) if rest.get(..4).is_some_and(|unc| unc.eq_ignore_ascii_case("UNC/")) => {
            format!("//{}", &rest[4..])
        }
        Some(rest) => rest.to_string(),
        None => path,
    };
    match path.strip_prefix("//") {
        Some(share) => percent_encoded("file://", share.as_bytes()),
        None => percent_encoded("file:///", path.as_bytes()),
    }
}

/// `prefix` + `bytes`, every byte outside the URL-safe set percent-encoded.
fn percent_encoded(prefix: &str, bytes: &[u8]) -> String {
    let mut url = String::from(prefix);
    for &byte in bytes {
        let safe = byte.is_ascii_alphanumeric() || b"-._~!$&'*+,;=:@/".contains(&byte);
        if safe {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// JavaScript truthiness for an optional string: empty counts as absent.
fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|value| !value.is_empty())
}

/// Runs gemini-image: the generation prompt on the pinned model, then finding (and optionally
/// copying) the image the CLI wrote.
pub fn run(ctx: &Ctx<'_>, args: &Map<String, Value>) -> Result<String, String> {
    let prompt = js::trim(str_arg(args, "prompt").unwrap_or_default());
    if prompt.is_empty() {
        return Err(BLANK_PROMPT_ERROR.to_string());
    }
    let aspect_ratio = str_arg(args, "aspectRatio").unwrap_or(DEFAULT_RATIO);
    let size = str_arg(args, "size");
    ctx.report(&progress_message(aspect_ratio));
    let options =
        RunOptions { model: Some(backend::PINNED_MODEL.to_string()), ..RunOptions::default() };
    let prompt_text = image_prompt(prompt, aspect_ratio, size);
    let request = RunRequest { prompt: prompt_text, options, change_mode: false };
    // Noted before every run: the reply may name no image.
    let brain = ctx.services.config.search.home.as_deref().map(agy::brain_dir);
    let before = brain.map(|brain| BrainImages::before(&brain, SystemTime::now()));
    let reply = ctx.run_model(request)?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let conversation = reply.conversation_id.as_deref();
    let found = find_image_in_reply(&reply.text, &cwd)
        .or_else(|| before.as_ref()?.newest_new(conversation));
    let mut image = found;
    let mut saved_to = None;
    if let (Some(output), Some(source)) = (str_arg(args, "outputPath"), &image)
        && !js::trim(output).is_empty()
    {
        let rel = copy_to_output(output, source, &cwd)?;
        image = Some(cwd.join(&rel));
        saved_to = Some(rel);
    }
    let report = ImageReport {
        prompt,
        aspect_ratio,
        size,
        backend_name: reply.backend.name(),
        saved_to: saved_to.as_deref(),
        image: image.as_deref(),
        reply: &reply.text,
    };
    Ok(ctx.services.backends.with_notices(&reply.notices, &render_image_result(&report)))
}

// The texts and both systems' path rules, on every system.
#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::TempDir;

    #[test]
    fn prompt_with_and_without_size() {
        assert_eq!(
            image_prompt("  a red fox  ", "16:9", Some("2K")),
            "Generate an image from the following specifications:\n\
             - Prompt: a red fox\n\
             - Aspect Ratio: 16:9\n\
             - Image Size: 2K\n\
             \n\
             Use your image generation tool to create it, then say where the image file was saved."
        );
        assert_eq!(
            image_prompt("a red fox", "1:1", None),
            "Generate an image from the following specifications:\n\
             - Prompt: a red fox\n\
             - Aspect Ratio: 1:1\n\
             \n\
             Use your image generation tool to create it, then say where the image file was saved."
        );
        assert_eq!(progress_message("4:3"), "🎨 Generating image with aspect ratio 4:3...");
    }

    fn check_target(text: &str, expected: Option<&str>) {
        assert_eq!(first_markdown_image(text), expected, "{text:?}");
    }

    #[test]
    fn markdown_image_targets() {
        check_target("Here: ![fox](out/fox.png) done", Some("out/fox.png"));
        check_target("![a](x.txt) then ![b](y.JPEG)", Some("y.JPEG"));
        check_target("![a](file:///tmp/a b.webp)", Some("file:///tmp/a b.webp"));
        check_target("![a![b](x.jpg)", Some("x.jpg"));
        check_target("![a] (x.png)", None);
        check_target("![a](x.png", None);
        check_target("![a](x.png \"title\")", None);
        check_target("[a](x.png)", None);
        check_target("![a](.png)", None);
        check_target("![a](.jpeg)", None);
        check_target("![a](..png)", Some("..png"));
        check_target("no image", None);
    }

    #[test]
    fn reply_image_missing_or_not_first() {
        let tmp = TempDir::new();
        tmp.file("b.png", "png");
        assert_eq!(find_image_in_reply("![a](missing.png) ![b](b.png)", tmp.path()), None);
        assert_eq!(find_image_in_reply("nothing here", tmp.path()), None);
        tmp.dir("dir.png");
        assert_eq!(find_image_in_reply("![d](dir.png)", tmp.path()), None);
    }

    pub(super) fn report<'a>(
        image: Option<&'a Path>,
        saved_to: Option<&'a Path>,
    ) -> ImageReport<'a> {
        ImageReport {
            prompt: " a red fox ",
            aspect_ratio: "16:9",
            size: None,
            backend_name: "agy",
            saved_to,
            image,
            reply: "Here is your fox.",
        }
    }

    #[test]
    fn render_without_copy_or_embed() {
        assert_eq!(
            render_image_result(&report(None, None)),
            "### 🎨 Gemini Image Generation Completed\n\n\
             - **Prompt:** \"a red fox\"\n\
             - **Aspect Ratio:** `16:9`\n\
             - **Backend:** `AGY`\n\n\
             Here is your fox."
        );
        let missing = Path::new("/nonexistent/gemini-relay/fox.png");
        let with_size = ImageReport { size: Some("4K"), ..report(Some(missing), None) };
        assert_eq!(
            render_image_result(&with_size),
            "### 🎨 Gemini Image Generation Completed\n\n\
             - **Prompt:** \"a red fox\"\n\
             - **Aspect Ratio:** `16:9`\n\
             - **Size:** `4K`\n\
             - **Backend:** `AGY`\n\n\
             Here is your fox."
        );
    }

    #[test]
    fn targets_as_paths_on_each_system() {
        let posix = |target| target_path(target, false);
        assert_eq!(posix("file:///home/u/a.png"), Some("/home/u/a.png"));
        assert_eq!(posix("FILE://rel/a.png"), Some("rel/a.png"));
        assert_eq!(posix("gen/a.png"), Some("gen/a.png"));
        assert_eq!(posix("/C:/a.png"), Some("/C:/a.png"), "a drive means nothing here");
        assert_eq!(posix("//srv/share/a.png"), Some("//srv/share/a.png"));
        let windows = |target| target_path(target, true);
        assert_eq!(windows("file:///C:/Users/u/a.png"), Some("C:/Users/u/a.png"));
        assert_eq!(windows("File:///d:/a b/a.png"), Some("d:/a b/a.png"));
        assert_eq!(windows("/C:/a.png"), Some("C:/a.png"));
        assert_eq!(windows(r"C:\out\a.png"), Some(r"C:\out\a.png"));
        assert_eq!(windows(r"gen\a.png"), Some(r"gen\a.png"));
        assert_eq!(windows("/gen/a.png"), Some("/gen/a.png"));
        // Shares and device paths are never looked at.
        for never in [
            r"\\srv\share\a.png",
            "//srv/share/a.png",
            "file:////srv/share/a.png",
            r"file://\\srv\share\a.png",
            r"\\?\C:\a.png",
            r"\\.\C:\a.png",
            r"/\srv\a.png",
        ] {
            assert_eq!(windows(never), None, "{never}");
        }
    }

    fn check_windows_image(text: &str, expected: Option<&str>) {
        assert_eq!(windows_absolute_image(text), expected, "{text:?}");
    }

    #[test]
    fn windows_absolute_paths_in_a_reply() {
        check_windows_image(r"Saved to C:\Users\me\out\fox.png.", Some(r"C:\Users\me\out\fox.png"));
        check_windows_image("at `c:/tmp/a.PNG` now", Some("c:/tmp/a.PNG"));
        check_windows_image(r"(D:\pics\b.webp)", Some(r"D:\pics\b.webp"));
        check_windows_image(r#""E:\x\b.jpeg" done"#, Some(r"E:\x\b.jpeg"));
        check_windows_image(r"C:\Users\O'Brien\fox.jpg", Some(r"C:\Users\O'Brien\fox.jpg"));
        check_windows_image(r"'C:\a\fox.png'", Some(r"C:\a\fox.png"));
        check_windows_image(r"C:\Bilder\Füchse.png", Some(r"C:\Bilder\Füchse.png"));
        // The last image extension of the run, which may not end it.
        check_windows_image(r"C:\a.png.txt", Some(r"C:\a.png"));
        check_windows_image(r"C:\dir.png\sub\readme", Some(r"C:\dir.png"));
        check_windows_image(r"C:\a.png\b.jpg", Some(r"C:\a.png\b.jpg"));
        check_windows_image(r"C:\a.pngx", Some(r"C:\a.png"));
        // The first path that has one; a start may sit inside a word.
        check_windows_image(r"C:\a.txt then D:\b.png", Some(r"D:\b.png"));
        check_windows_image(r"xC:\a.png", Some(r"C:\a.png"));
        // Nothing before the extension, no separator, a space, a drive of two letters.
        for none in [r"C:\.png", "C:a.png", r"C: \a.png", r"C:\a b.txt", "CC:", "C:\\", ""] {
            check_windows_image(none, None);
        }
        check_windows_image(r"CD:\a.png", Some(r"D:\a.png"));
        check_windows_image("C:\\a\u{a0}b.png", None);
    }

    #[test]
    fn the_windows_scan_is_linear() {
        let hostile = r"C:\".repeat(200_000) + "x";
        let started = std::time::Instant::now();
        assert_eq!(windows_absolute_image(&hostile), None);
        let mut nested = r"C:\a".repeat(200_000);
        nested.push_str(".png");
        assert_eq!(windows_absolute_image(&nested), Some(nested.as_str()));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn windows_file_urls_have_slashes() {
        assert_eq!(windows_file_url(r"C:\Users\u\a.png"), "file:///C:/Users/u/a.png");
        assert_eq!(windows_file_url(r"C:\my fox (1)\a.png"), "file:///C:/my%20fox%20%281%29/a.png");
        assert_eq!(windows_file_url(r"\\?\C:\Users\u\a.png"), "file:///C:/Users/u/a.png");
        assert_eq!(windows_file_url(r"\\srv\share\a.png"), "file://srv/share/a.png");
        assert_eq!(windows_file_url(r"\\?\UNC\srv\share\a.png"), "file://srv/share/a.png");
        assert_eq!(windows_file_url("C:\\h\\jos\u{e9}.png"), "file:///C:/h/jos%C3%A9.png");
    }

    #[test]
    fn the_notice_shows_slashes_on_windows() {
        assert_eq!(shown_relative(r"assets\gen\fox.png", true), "assets/gen/fox.png");
        assert_eq!(shown_relative(r"assets\gen\fox.png", false), r"assets\gen\fox.png");
        assert_eq!(shown_relative("assets/fox.png", true), "assets/fox.png");
    }

    #[test]
    fn file_urls() {
        assert_eq!(posix_file_url(b"/home/u/a.png"), "file:///home/u/a.png");
        assert_eq!(posix_file_url(b"/tmp/a b/x%#?.png"), "file:///tmp/a%20b/x%25%23%3F.png");
        assert_eq!(posix_file_url("/h/jos\u{e9}.png".as_bytes()), "file:///h/jos%C3%A9.png");
    }
}

// Against a POSIX file system: symlinks, FIFOs.
#[cfg(all(test, unix))]
mod posix {
    use super::*;

    use std::os::unix::fs::symlink;

    use crate::testutil::{TempDir, mkfifo, set_mtime};
    use tests::report;

    #[test]
    fn reply_image_relative_and_file_url() {
        let tmp = TempDir::new();
        let image = tmp.file("gen/fox.png", "png");
        let reply = "Saved ![fox](gen/fox.png).";
        assert_eq!(find_image_in_reply(reply, tmp.path()), Some(image.clone()));
        let reply = format!("![fox](FILE://{})", image.display());
        assert_eq!(find_image_in_reply(&reply, tmp.path()), Some(image.clone()));
        let reply = format!("![fox]({})", image.display());
        assert_eq!(find_image_in_reply(&reply, Path::new("/")), Some(image.clone()));
        assert_eq!(find_image_in_reply("![fox](./gen/fox.png)", tmp.path()), Some(image));
    }

    #[test]
    fn brain_image_fresh_and_stale() {
        let tmp = TempDir::new();
        let brain = tmp.path().join("brain");
        let start = SystemTime::now();
        let old = start - Duration::from_secs(3600);
        let earlier = tmp.file("brain/c2/earlier.png", "0");
        set_mtime(&earlier, start);
        let before = BrainImages::before(&brain, start);
        let fresh = tmp.file("brain/c1/image_1.png", "1");
        let newer = tmp.file("brain/c2/image_2.WEBP", "2");
        let not_image = tmp.file("brain/c2/notes.txt", "4");
        let stale_dir_file = tmp.file("brain/c3/image_3.png", "5");
        let nested = tmp.file("brain/c4/sub/image_4.png", "6");
        set_mtime(&fresh, start + Duration::from_secs(1));
        set_mtime(&newer, start + Duration::from_secs(2));
        set_mtime(&not_image, start + Duration::from_secs(9));
        set_mtime(&stale_dir_file, start + Duration::from_secs(9));
        set_mtime(&nested, start + Duration::from_secs(9));
        set_mtime(&tmp.path().join("brain/c1"), start - Duration::from_secs(30));
        set_mtime(&tmp.path().join("brain/c2"), start);
        set_mtime(&tmp.path().join("brain/c3"), start - Duration::from_secs(31));
        set_mtime(&tmp.path().join("brain/c4"), start);
        assert_eq!(before.newest_new(None), Some(newer.clone()));

        set_mtime(&newer, old);
        assert_eq!(before.newest_new(None), Some(fresh.clone()));

        set_mtime(&fresh, start - Duration::from_secs(31));
        assert_eq!(before.newest_new(None), None, "an image older than the cutoff is not new");
        set_mtime(&earlier, start + Duration::from_secs(1));
        assert_eq!(before.newest_new(None), Some(earlier), "rewritten during the run");
        let missing = BrainImages::before(&tmp.path().join("missing"), start);
        assert_eq!(missing.newest_new(None), None);
    }

    #[test]
    fn brain_image_from_the_runs_first_tick_is_found() {
        // File mtimes come from a coarse clock: an image written just after the start can carry
        // an mtime before it, and one of the call before may carry the very same mtime.
        let tmp = TempDir::new();
        let brain = tmp.path().join("brain");
        let start = SystemTime::now();
        let tick_before = start - Duration::from_millis(5);
        let previous = tmp.file("brain/c1/image_1.png", "1");
        set_mtime(&previous, tick_before);
        let before = BrainImages::before(&brain, start);
        assert_eq!(before.newest_new(None), None, "the previous call's image is not this run's");
        let image = tmp.file("brain/c1/image_2.png", "2");
        set_mtime(&image, tick_before);
        assert_eq!(before.newest_new(None), Some(image.clone()));
        let image_in_a_new_conversation = tmp.file("brain/c0/image_1.png", "3");
        set_mtime(&image_in_a_new_conversation, start - Duration::from_millis(4));
        assert_eq!(before.newest_new(None), Some(image_in_a_new_conversation));
    }

    #[test]
    fn a_runs_own_conversation_is_searched_when_it_names_one() {
        let tmp = TempDir::new();
        let brain = tmp.path().join("brain");
        let start = SystemTime::now();
        fs::create_dir_all(&brain).unwrap();
        let before = BrainImages::before(&brain, start);
        let own = tmp.file("brain/mine/image_1.png", "1");
        let other = tmp.file("brain/theirs/image_1.png", "2");
        set_mtime(&own, start + Duration::from_secs(1));
        set_mtime(&other, start + Duration::from_secs(2));
        assert_eq!(before.newest_new(None), Some(other.clone()));
        assert_eq!(before.newest_new(Some("mine")), Some(own));
        assert_eq!(before.newest_new(Some("theirs")), Some(other.clone()));
        // A conversation without a directory, or an id that is no plain name, narrows nothing.
        assert_eq!(before.newest_new(Some("gone")), Some(other.clone()));
        assert_eq!(before.newest_new(Some("../brain/mine")), Some(other));
    }

    fn check_escape(output_path: &str) {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "png");
        let cwd = tmp.dir("project");
        let expected = format!(
            "Invalid outputPath: \"{}\" escapes the project workspace directory.",
            output_path.trim()
        );
        assert_eq!(copy_to_output(output_path, &image, &cwd), Err(expected));
        assert_eq!(fs::read_dir(&cwd).unwrap().count(), 0, "nothing written for {output_path}");
    }

    #[test]
    fn output_path_parent_escapes() {
        check_escape("../x.png");
        check_escape("  ../x.png \n");
        check_escape("a/../../x.png");
    }

    #[test]
    fn output_path_absolute_outside_escapes() {
        check_escape("/tmp/x.png");
        check_escape("/");
    }

    #[test]
    fn output_path_dot_dot_prefix_escapes() {
        check_escape("..foo");
        check_escape("..foo/bar.png");
    }

    #[test]
    fn output_path_good_relative_copy() {
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "PNGDATA");
        let cwd = tmp.dir("project");
        let rel = copy_to_output(" assets/./gen/fox.png ", &image, &cwd).unwrap();
        assert_eq!(rel, PathBuf::from("assets/gen/fox.png"));
        assert_eq!(fs::read_to_string(cwd.join(&rel)).unwrap(), "PNGDATA");
        let rel = copy_to_output("a/../b.png", &image, &cwd).unwrap();
        assert_eq!(rel, PathBuf::from("b.png"));
        assert_eq!(fs::read_to_string(cwd.join("b.png")).unwrap(), "PNGDATA");
    }

    #[test]
    fn output_path_absolute_inside_is_accepted() {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "PNG");
        let target = tmp.path().join("out/copy.png");
        let rel = copy_to_output(&target.to_string_lossy(), &image, tmp.path()).unwrap();
        assert_eq!(rel, PathBuf::from("out/copy.png"));
        assert_eq!(fs::read_to_string(target).unwrap(), "PNG");
    }

    #[test]
    fn output_path_onto_itself_keeps_the_file() {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "PNG");
        assert_eq!(copy_to_output("img.png", &image, tmp.path()), Ok(PathBuf::from("img.png")));
        assert_eq!(fs::read_to_string(&image).unwrap(), "PNG");
    }

    #[test]
    fn output_path_copy_failure() {
        let tmp = TempDir::new();
        let missing = tmp.path().join("missing.png");
        let err = copy_to_output("x.png", &missing, tmp.path()).unwrap_err();
        assert!(err.starts_with("Could not save the image to \"x.png\": "), "{err}");
    }

    /// The names in `dir`, sorted (to see that no temporary file is left behind).
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn output_path_symlink_is_never_followed() {
        let outside = TempDir::new();
        let victim = outside.file("victim.png", "VICTIM");
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "PNGDATA");
        let cwd = tmp.dir("project");
        symlink(&victim, cwd.join("logo.png")).unwrap();
        let err = copy_to_output("logo.png", &image, &cwd).unwrap_err();
        assert_eq!(
            err,
            "Could not save the image to \"logo.png\": \"logo.png\" is a symbolic link, which is never followed"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "VICTIM");
        assert_eq!(names(&cwd), ["logo.png"]);
    }

    #[test]
    fn output_path_through_a_directory_symlink_is_refused() {
        let outside = TempDir::new();
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "PNGDATA");
        let cwd = tmp.dir("project");
        symlink(outside.path(), cwd.join("assets")).unwrap();
        for output in ["assets/new.png", "assets/deeper/new.png"] {
            let err = copy_to_output(output, &image, &cwd).unwrap_err();
            assert_eq!(
                err,
                format!(
                    "Could not save the image to \"{output}\": \"assets\" is a symbolic link, which is never followed"
                )
            );
        }
        assert!(names(outside.path()).is_empty(), "nothing written outside");
    }

    #[test]
    fn output_path_fifo_and_directory_are_refused_without_blocking() {
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "PNGDATA");
        let cwd = tmp.dir("project");
        mkfifo(&cwd.join("pipe.png"));
        tmp.dir("project/dir.png");
        let started = std::time::Instant::now();
        assert_eq!(
            copy_to_output("pipe.png", &image, &cwd).unwrap_err(),
            "Could not save the image to \"pipe.png\": \"pipe.png\" is not a regular file"
        );
        assert_eq!(
            copy_to_output("dir.png", &image, &cwd).unwrap_err(),
            "Could not save the image to \"dir.png\": \"dir.png\" is not a regular file"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(names(&cwd), ["dir.png", "pipe.png"]);
    }

    #[test]
    fn image_source_fifo_is_refused_without_blocking() {
        let tmp = TempDir::new();
        let cwd = tmp.dir("project");
        mkfifo(&tmp.path().join("img.png"));
        let started = std::time::Instant::now();
        assert_eq!(
            copy_to_output("out.png", &tmp.path().join("img.png"), &cwd).unwrap_err(),
            "Could not save the image to \"out.png\": not a regular file"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(names(&cwd).is_empty());
    }

    #[test]
    fn output_path_replaces_a_regular_file_atomically() {
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "NEW");
        let cwd = tmp.dir("project");
        let old = tmp.file("project/out/fox.png", "OLD");
        let link = cwd.join("hardlink.png");
        fs::hard_link(&old, &link).unwrap();
        assert_eq!(copy_to_output("out/fox.png", &image, &cwd), Ok(PathBuf::from("out/fox.png")));
        assert_eq!(fs::read_to_string(&old).unwrap(), "NEW");
        assert_eq!(
            fs::read_to_string(&link).unwrap(),
            "OLD",
            "renamed into place, not written through"
        );
        assert_eq!(names(&cwd.join("out")), ["fox.png"]);
        assert_eq!(
            copy_to_output(".", &image, &cwd).unwrap_err(),
            "Could not save the image to \".\": Is a directory (os error 21)"
        );
        tmp.file("project/file", "x");
        let err = copy_to_output("file/x.png", &image, &cwd).unwrap_err();
        assert!(err.ends_with("Not a directory (os error 20)"), "{err}");
    }

    #[test]
    fn render_with_embed() {
        let tmp = TempDir::new();
        let image = tmp.file("gen/fox.png", "png");
        let path = image.to_string_lossy().into_owned();
        assert!(path.starts_with('/'));
        assert_eq!(
            render_image_result(&report(Some(&image), None)),
            format!(
                "### 🎨 Gemini Image Generation Completed\n\n\
                 - **Prompt:** \"a red fox\"\n\
                 - **Aspect Ratio:** `16:9`\n\
                 - **Backend:** `AGY`\n\n\
                 ![Generated Image](file://{path})\n\
                 *File: `{path}`*\n\n\
                 Here is your fox."
            )
        );
    }

    #[test]
    fn render_with_copy_and_embed() {
        let tmp = TempDir::new();
        let image = tmp.file("assets/my fox (1).png", "png");
        let path = image.to_string_lossy().into_owned();
        let url_path = path.replace(' ', "%20").replace('(', "%28").replace(')', "%29");
        let rel = Path::new("assets/my fox (1).png");
        assert_eq!(
            render_image_result(&report(Some(&image), Some(rel))),
            format!(
                "### 🎨 Gemini Image Generation Completed\n\n\
                 - **Prompt:** \"a red fox\"\n\
                 - **Aspect Ratio:** `16:9`\n\
                 - **Backend:** `AGY`\n\n\
                 💾 **Saved to Project:** `assets/my fox (1).png`\n\n\
                 ![Generated Image](file://{url_path})\n\
                 *File: `{path}`*\n\n\
                 Here is your fox."
            )
        );
    }
}

// Against a Windows file system (Wine runs these). Wine makes no reparse points, so the refusal of
// links rests on the handle-relative walk's own tests and on the Windows path rules'
// (`files/path/windows.rs`).
#[cfg(all(test, windows))]
mod windows {
    use super::*;

    use crate::testutil::TempDir;
    use tests::report;

    /// `path` without the `\\?\` that a canonical path carries, as a person writes it.
    fn plain(path: &Path) -> String {
        let text = path.to_string_lossy();
        text.strip_prefix(r"\\?\").unwrap_or(&text).to_string()
    }

    /// The names in `dir`, sorted (to see that no temporary file is left behind).
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn output_path_good_relative_copy() {
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "PNGDATA");
        let cwd = tmp.dir("project");
        let rel = copy_to_output(r" assets\.\gen/fox.png ", &image, &cwd).unwrap();
        assert_eq!(rel, PathBuf::from(r"assets\gen\fox.png"));
        assert_eq!(fs::read_to_string(cwd.join(&rel)).unwrap(), "PNGDATA");
        let rel = copy_to_output(r"a\..\b.png", &image, &cwd).unwrap();
        assert_eq!(rel, PathBuf::from("b.png"));
        assert_eq!(fs::read_to_string(cwd.join("b.png")).unwrap(), "PNGDATA");
        assert_eq!(names(&cwd), ["assets", "b.png"]);
        assert_eq!(names(&cwd.join(r"assets\gen")), ["fox.png"]);
    }

    #[test]
    fn output_path_absolute_inside_is_accepted_in_its_plain_form() {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "PNG");
        let cwd = tmp.dir("project");
        let target = format!(r"{}\out\copy.png", plain(&cwd));
        assert_eq!(copy_to_output(&target, &image, &cwd), Ok(PathBuf::from(r"out\copy.png")));
        let upper = target.to_uppercase();
        assert_eq!(copy_to_output(&upper, &image, &cwd), Ok(PathBuf::from(r"OUT\COPY.PNG")));
        assert_eq!(fs::read_to_string(cwd.join(r"out\copy.png")).unwrap(), "PNG");
        // The project's own drive from its top.
        let rooted = &target[2..];
        assert_eq!(copy_to_output(rooted, &image, &cwd), Ok(PathBuf::from(r"out\copy.png")));
    }

    #[test]
    fn output_path_outside_under_windows_rules_escapes() {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "png");
        let cwd = tmp.dir("project");
        let drive = &plain(&cwd)[..1];
        let other = if drive.eq_ignore_ascii_case("Z") { "Y" } else { "Z" };
        for output in [
            r"..\x.png",
            "../x.png",
            r"a\..\..\x.png",
            "..foo.png",
            &format!("{drive}:x.png"),
            &format!(r"{other}:\x.png"),
            &format!(r"{drive}:\x.png"),
            r"\\srv\share\x.png",
            "//srv/share/x.png",
            &format!(r"\\?\{}\x.png", plain(&cwd)),
            r"\\.\C:\x.png",
            r"~\x.png",
            r"\x.png",
        ] {
            assert_eq!(
                copy_to_output(output, &image, &cwd),
                Err(format!(
                    "Invalid outputPath: \"{output}\" escapes the project workspace directory."
                )),
                "{output}"
            );
        }
        assert!(names(&cwd).is_empty(), "nothing written");
    }

    #[test]
    fn output_path_naming_a_device_or_a_stream_is_refused() {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "png");
        let cwd = tmp.dir("project");
        for output in ["CON.png", r"out\nul", "LPT1", "x.png:stream", "x.png.", r"a \x.png"] {
            assert_eq!(
                copy_to_output(output, &image, &cwd),
                Err(format!(
                    "Invalid outputPath: \"{output}\" names a device, a stream or a name Windows \
                     trims, not a file in the project."
                )),
                "{output}"
            );
        }
        assert!(names(&cwd).is_empty(), "nothing written");
    }

    #[test]
    fn output_path_replaces_a_regular_file_and_refuses_the_rest() {
        let tmp = TempDir::new();
        let image = tmp.file("brain/img.png", "NEW");
        let cwd = tmp.dir("project");
        let old = tmp.file(r"project\out\fox.png", "OLD");
        assert_eq!(copy_to_output("out/fox.png", &image, &cwd), Ok(PathBuf::from(r"out\fox.png")));
        assert_eq!(fs::read_to_string(&old).unwrap(), "NEW");
        assert_eq!(names(&cwd.join("out")), ["fox.png"]);
        tmp.dir(r"project\dir.png");
        assert_eq!(
            copy_to_output("dir.png", &image, &cwd).unwrap_err(),
            "Could not save the image to \"dir.png\": \"dir.png\" is not a regular file"
        );
        assert_eq!(
            copy_to_output(".", &image, &cwd).unwrap_err(),
            "Could not save the image to \".\": is a directory"
        );
        tmp.file(r"project\file", "x");
        assert_eq!(
            copy_to_output(r"file\x.png", &image, &cwd).unwrap_err(),
            "Could not save the image to \"file\\x.png\": not a directory"
        );
        let missing = tmp.path().join("missing.png");
        let err = copy_to_output("y.png", &missing, &cwd).unwrap_err();
        assert!(err.starts_with("Could not save the image to \"y.png\": "), "{err}");
        assert_eq!(names(&cwd), ["dir.png", "file", "out"], "no temporary file left");
    }

    #[test]
    fn output_path_onto_itself_keeps_the_file() {
        let tmp = TempDir::new();
        let image = tmp.file("img.png", "PNG");
        assert_eq!(copy_to_output("IMG.png", &image, tmp.path()), Ok(PathBuf::from("IMG.png")));
        assert_eq!(fs::read_to_string(&image).unwrap(), "PNG");
    }

    #[test]
    fn reply_images_on_windows() {
        let tmp = TempDir::new();
        let image = tmp.file(r"gen\fox.png", "png");
        let shown = plain(&image);
        let url = format!("file:///{}", shown.replace('\\', "/"));
        let expected = Some(PathBuf::from(&shown));
        assert_eq!(find_image_in_reply(&format!("![fox]({url})"), tmp.path()), expected);
        let slashed = format!("![fox](/{})", shown.replace('\\', "/"));
        assert_eq!(find_image_in_reply(&slashed, tmp.path()), expected);
        assert_eq!(
            find_image_in_reply(r"![fox](gen\fox.png)", tmp.path()),
            Some(tmp.path().join(r"gen\fox.png"))
        );
        // Step (b): a Windows path in the text, when no markdown image names a file.
        let text = format!("![gone](missing.png) The image is at {shown}.");
        assert_eq!(find_image_in_reply(&text, tmp.path()), expected);
        assert_eq!(find_image_in_reply(r"Saved to C:\no\such\fox.png", tmp.path()), None);
        assert_eq!(find_image_in_reply(r"![x](\\srv\share\x.png)", tmp.path()), None);
    }

    #[test]
    fn render_shows_slashes_and_a_drive_url() {
        let tmp = TempDir::new();
        let image = tmp.file(r"assets\my fox.png", "png");
        let rendered =
            render_image_result(&report(Some(&image), Some(Path::new(r"assets\my fox.png"))));
        assert!(rendered.contains("💾 **Saved to Project:** `assets/my fox.png`"), "{rendered}");
        let url = format!("file:///{}", plain(&image).replace('\\', "/").replace(' ', "%20"));
        assert!(rendered.contains(&format!("![Generated Image]({url})")), "{rendered}");
        assert!(rendered.contains(&format!("*File: `{}`*", image.display())), "{rendered}");
    }
}
