//! gemini-image texts and files: the generation prompt, finding the generated image, the
//! outputPath jail and copy, and the result rendering.
//!
//! Two choices differ from the original on purpose. Markdown targets starting with `file://` lose
//! exactly that prefix (case-insensitive), so `file:///home/u/a.png` becomes the absolute path
//! `/home/u/a.png`; the original stripped `file:///` and broke such targets. The embed
//! is a correct file URL, `file://` + the percent-encoded absolute path. The original's
//! Windows-only search for `C:\...` paths in the reply text is not ported.

#[cfg(unix)]
use std::ffi::{OsStr, OsString};
use std::fs;
#[cfg(unix)]
use std::io;
#[cfg(unix)]
use std::path::Component;
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::backend::options::RunOptions;
use crate::backend::{self, Request};
use crate::call::Ctx;
#[cfg(unix)]
use crate::files::fd::{self, Dir, Kind};
#[cfg(unix)]
use crate::files::resolve_lexically;
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

/// Step (a): the first markdown image in the reply whose target ends in `.jpg`, `.jpeg`, `.png`
/// or `.webp` (any case), if that file exists.
///
/// A leading `file://` is stripped (see the module docs); relative targets resolve against `cwd`.
/// Only the first such image is considered, as in the original.
pub fn find_image_in_reply(reply: &str, cwd: &Path) -> Option<PathBuf> {
    let target = first_markdown_image(reply)?;
    let target = match target.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("file://") => &target[7..],
        _ => target,
    };
    let path: PathBuf = cwd.join(target).components().collect();
    if path.is_file() { Some(path) } else { None }
}

/// agy's conversation directory root: `<home>/.gemini/antigravity-cli/brain`.
pub fn brain_dir(home: &Path) -> PathBuf {
    home.join(".gemini").join("antigravity-cli").join("brain")
}

/// Step (c): the newest image file directly inside any conversation directory of `brain_dir`
/// whose own mtime is at least `start - 30 s`, counting only files modified strictly after
/// `start`.
pub fn newest_brain_image(brain_dir: &Path, start: SystemTime) -> Option<PathBuf> {
    let dir_cutoff = start.checked_sub(DIR_SLACK).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for dir in sorted_entries(brain_dir) {
        let Ok(meta) = fs::metadata(&dir) else { continue };
        if !meta.is_dir() || !meta.modified().is_ok_and(|mtime| mtime >= dir_cutoff) {
            continue;
        }
        for file in sorted_entries(&dir) {
            let name = file.file_name().unwrap_or_default();
            if !has_image_extension(&name.to_string_lossy()) {
                continue;
            }
            let Ok(meta) = fs::metadata(&file) else { continue };
            let Ok(mtime) = meta.modified() else { continue };
            if !meta.is_file() || mtime <= start {
                continue;
            }
            if best.as_ref().is_none_or(|(newest, _)| mtime > *newest) {
                best = Some((mtime, file));
            }
        }
    }
    best.map(|(_, path)| path)
}

/// Copies the image to `output_path` (trimmed, resolved against `cwd`) and returns the
/// cwd-relative destination; the new image path is `cwd.join(<returned path>)`.
///
/// The check is lexical, like Node's `path.relative`: a relative path starting with `..` (including
/// a name like `..foo`, as in the original) escapes and is refused. An absolute `output_path`
/// inside `cwd` is accepted. `cwd` must be absolute.
///
/// The write never follows a symlink: the directories on the way are opened one by one
/// beneath `cwd` with `O_NOFOLLOW` (and created when missing), an existing destination that is
/// not a regular file (a symlink, a FIFO, a directory) is refused without being opened, and the
/// image goes to a new temporary file in the target directory that is then renamed over the
/// destination. The source is read only if it is a regular file, opened without blocking.
#[cfg(unix)]
pub fn copy_to_output(output_path: &str, image: &Path, cwd: &Path) -> Result<PathBuf, String> {
    let trimmed = js::trim(output_path);
    let cwd = resolve_lexically(cwd, b"");
    let destination = resolve_lexically(&cwd, trimmed.as_bytes());
    let relative = relative_path(&cwd, &destination);
    if relative.as_os_str().as_encoded_bytes().starts_with(b"..") || relative.is_absolute() {
        return Err(format!(
            "Invalid outputPath: \"{trimmed}\" escapes the project workspace directory."
        ));
    }
    write_image(image, &cwd, &relative)
        .map_err(|err| format!("Could not save the image to \"{trimmed}\": {err}"))?;
    Ok(relative)
}

/// The refusal of `outputPath` where the copy has no safe implementation yet.
#[cfg(not(unix))]
const OUTPUT_PATH_UNSUPPORTED: &str = "gemini-image outputPath is not supported on Windows yet";

/// Windows: the handle-relative copy (`FILE_CREATE` into a temporary name, then a rename relative
/// to the directory's handle) and Windows path rules for `outputPath` are not finished, so the
/// copy is refused rather than done by path.
#[cfg(not(unix))]
pub fn copy_to_output(_output_path: &str, _image: &Path, _cwd: &Path) -> Result<PathBuf, String> {
    Err(OUTPUT_PATH_UNSUPPORTED.to_string())
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
        out.push_str(&format!(
            "\n\n\u{1F4BE} **Saved to Project:** `{}`",
            saved_to.to_string_lossy()
        ));
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

/// How much older than the call's start a conversation directory may be.
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

#[cfg(unix)]
/// Node's `path.relative(from, to)` for two normalised absolute paths.
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for component in &to[common..] {
        out.push(component);
    }
    out
}

#[cfg(unix)]
/// Writes a copy of `image` to `relative` beneath `cwd` through directory descriptors.
fn write_image(image: &Path, cwd: &Path, relative: &Path) -> io::Result<()> {
    let mut source = fd::open_regular(image)?;
    let Some(name) = relative.file_name() else {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    };
    let mut dir = Dir::open(cwd)?;
    for component in relative.parent().into_iter().flat_map(Path::components) {
        dir = open_or_create_dir(&dir, component.as_os_str())?;
    }
    match dir.kind(name) {
        Ok(Kind::File) => (),
        Ok(Kind::Symlink) => return Err(not_followed(name)),
        Ok(Kind::Dir | Kind::Other) => {
            return Err(io::Error::other(format!(
                "\"{}\" is not a regular file",
                name.to_string_lossy()
            )));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => (),
        Err(err) => return Err(err),
    }
    let (temp, mut file) = create_temp(&dir)?;
    let written = io::copy(&mut source, &mut file).and_then(|_| dir.rename(&temp, name));
    if written.is_err() {
        let _ = dir.remove_file(&temp);
    }
    written
}

#[cfg(unix)]
/// Opens the directory `name` in `parent`, creating it when missing; a symlink is refused.
fn open_or_create_dir(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
    match parent.kind(name) {
        Ok(Kind::Dir) => (),
        Ok(Kind::Symlink) => return Err(not_followed(name)),
        Ok(Kind::File | Kind::Other) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => match parent.create_dir(name) {
            Err(err) if err.kind() != io::ErrorKind::AlreadyExists => return Err(err),
            _ => (),
        },
        Err(err) => return Err(err),
    }
    // `O_NOFOLLOW`: a symlink swapped in since the check is refused here.
    parent.child_dir(name)
}

#[cfg(unix)]
fn not_followed(name: &OsStr) -> io::Error {
    io::Error::other(format!(
        "\"{}\" is a symbolic link, which is never followed",
        name.to_string_lossy()
    ))
}

#[cfg(unix)]
/// Creates a new temporary file in `dir` (`O_CREAT | O_EXCL`), returning its name and the file.
fn create_temp(dir: &Dir) -> io::Result<(OsString, fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(".gemini-relay-{}-{n}.tmp", std::process::id()));
        match dir.create_new_file(&name) {
            Ok(file) => return Ok((name, file)),
            // A leftover of an earlier process with the same id: try the next name.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
}

/// `file://` + the path, percent-encoding every byte outside the URL-safe set (parentheses too,
/// so the markdown link stays intact).
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for &byte in path.as_os_str().as_encoded_bytes() {
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
    // Refused before the model runs, so no image is generated only to be thrown away.
    #[cfg(not(unix))]
    if str_arg(args, "outputPath").is_some_and(|output| !js::trim(output).is_empty()) {
        return Err(OUTPUT_PATH_UNSUPPORTED.to_string());
    }
    let start = SystemTime::now();
    let aspect_ratio = str_arg(args, "aspectRatio").unwrap_or(DEFAULT_RATIO);
    let size = str_arg(args, "size");
    ctx.report(&progress_message(aspect_ratio));
    let options =
        RunOptions { model: Some(backend::PINNED_MODEL.to_string()), ..RunOptions::default() };
    let prompt_text = image_prompt(prompt, aspect_ratio, size);
    let request = Request { prompt: prompt_text, options, change_mode: false };
    let reply = ctx.run_model(request)?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let found = find_image_in_reply(&reply.text, &cwd).or_else(|| {
        let home = ctx.services.config.home.as_deref()?;
        newest_brain_image(&brain_dir(home), start)
    });
    let mut image = found;
    let mut saved_to = None;
    if let (Some(output), Some(source)) = (str_arg(args, "outputPath"), &image) {
        if !js::trim(output).is_empty() {
            let rel = copy_to_output(output, source, &cwd)?;
            image = Some(cwd.join(&rel));
            saved_to = Some(rel);
        }
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

// Against a POSIX file system: symlinks, FIFOs.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    use std::os::unix::fs::symlink;

    use crate::testutil::{TempDir, mkfifo, set_mtime};

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
    fn reply_image_missing_or_not_first() {
        let tmp = TempDir::new();
        tmp.file("b.png", "png");
        assert_eq!(find_image_in_reply("![a](missing.png) ![b](b.png)", tmp.path()), None);
        assert_eq!(find_image_in_reply("nothing here", tmp.path()), None);
        tmp.dir("dir.png");
        assert_eq!(find_image_in_reply("![d](dir.png)", tmp.path()), None);
    }

    #[test]
    fn brain_image_fresh_and_stale() {
        let tmp = TempDir::new();
        let start = SystemTime::now();
        let old = start - Duration::from_secs(3600);
        let fresh = tmp.file("brain/c1/image_1.png", "1");
        let newer = tmp.file("brain/c2/image_2.WEBP", "2");
        let stale_file = tmp.file("brain/c2/old.png", "3");
        let not_image = tmp.file("brain/c2/notes.txt", "4");
        let stale_dir_file = tmp.file("brain/c3/image_3.png", "5");
        let nested = tmp.file("brain/c4/sub/image_4.png", "6");
        set_mtime(&fresh, start + Duration::from_secs(1));
        set_mtime(&newer, start + Duration::from_secs(2));
        set_mtime(&stale_file, start);
        set_mtime(&not_image, start + Duration::from_secs(9));
        set_mtime(&stale_dir_file, start + Duration::from_secs(9));
        set_mtime(&nested, start + Duration::from_secs(9));
        set_mtime(&tmp.path().join("brain/c1"), start - Duration::from_secs(30));
        set_mtime(&tmp.path().join("brain/c2"), start);
        set_mtime(&tmp.path().join("brain/c3"), start - Duration::from_secs(31));
        set_mtime(&tmp.path().join("brain/c4"), start);
        let brain = tmp.path().join("brain");
        assert_eq!(newest_brain_image(&brain, start), Some(newer.clone()));

        set_mtime(&newer, old);
        assert_eq!(newest_brain_image(&brain, start), Some(fresh.clone()));

        set_mtime(&fresh, start);
        assert_eq!(newest_brain_image(&brain, start), None);
        assert_eq!(newest_brain_image(&tmp.path().join("missing"), start), None);
    }

    #[test]
    fn brain_dir_layout() {
        assert_eq!(
            brain_dir(Path::new("/home/u")),
            PathBuf::from("/home/u/.gemini/antigravity-cli/brain")
        );
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

    fn report<'a>(image: Option<&'a Path>, saved_to: Option<&'a Path>) -> ImageReport<'a> {
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

    #[test]
    fn file_urls() {
        assert_eq!(file_url(Path::new("/home/u/a.png")), "file:///home/u/a.png");
        assert_eq!(file_url(Path::new("/tmp/a b/x%#?.png")), "file:///tmp/a%20b/x%25%23%3F.png");
        assert_eq!(file_url(Path::new("/h/jos\u{e9}.png")), "file:///h/jos%C3%A9.png");
    }
}
