//! The Windows side of the jail's path rules, and the Windows jail's other decisions that need no
//! file system, as pure functions so that every system tests them: what an `@` reference names
//! under Windows path rules (the lexical layer), whether a component opened without following
//! reparse points may be used (the reparse layer, which `fd/windows.rs` applies), and whether an
//! opened handle's final path lies under the root's (the final-path layer).
//!
//! The Windows jail runs the three in turn and each must refuse an escape on its own: the lexical
//! layer before any file-system call, the reparse layer on every component it opens relative to
//! its parent's handle, and the final-path layer on the handle it then reads through.

use std::borrow::Cow;
use std::path::Path;
#[cfg(windows)]
use std::path::PathBuf;

use super::Landing;

/// The project root in the form `lexical` takes: Windows' `std::path::absolute` already removes
/// `.` and `..`.
#[cfg(windows)]
pub(crate) fn lexical_root(absolute: &Path) -> PathBuf {
    absolute.to_path_buf()
}

/// Whether the jail takes anything below `root` to be inside it: always, a drive's or a share's
/// top included.
#[cfg(windows)]
pub(crate) fn holds_below(_root: &Path) -> bool {
    true
}

/// Whether `canonical` (from `fs::canonicalize`) is `real_root`'s final path or lies below it
/// (`final_path_within`).
#[cfg(windows)]
pub(crate) fn final_within(canonical: &Path, real_root: &Path) -> bool {
    use std::os::windows::ffi::OsStrExt;
    let wide = |path: &Path| path.as_os_str().encode_wide().collect::<Vec<u16>>();
    final_path_within(&wide(canonical), &wide(real_root))
}

/// `reference` as a label names it: Windows takes `\` as well as `/` between components, and
/// labels use `/` everywhere.
pub(crate) fn with_slashes(reference: &str) -> Cow<'_, str> {
    if reference.contains('\\') {
        Cow::Owned(reference.replace('\\', "/"))
    } else {
        Cow::Borrowed(reference)
    }
}

/// `path` as the Gemini CLI's `@` grammar reads it back on Windows, where a backslash separates
/// paths: in double quotes when it holds a character that would end the reference, or ends in `.`.
pub(crate) fn cli_path(path: &str) -> String {
    let ends = |c: char| " \t\n\r,;!?()[]{}".contains(c);
    if path.contains(ends) || path.ends_with('.') {
        format!("\"{path}\"")
    } else {
        path.to_string()
    }
}

/// The lexical layer: where `reference` (an `@` reference as written, with `/` or `\` as
/// separators) lands relative to `root`, the project root as a Windows path (`C:\proj`,
/// `\\?\C:\proj`, `\\server\share\proj` or `\\?\UNC\server\share\proj`). A home
/// directory (`~`) is outside; a component Windows would read as something else is `NotAFile`.
///
/// A relative reference starts at the root; an absolute one (`C:\proj\a.txt`, or `\proj\a.txt` on
/// the root's own drive) must start with the root's components, compared case-insensitively. In
/// both, `..` never climbs above the root, not even to come back into it. Where a reference leaves
/// the project this wins over a component that names no file, so `\??\C:\x` is outside.
pub(crate) fn lexical(root: &Path, reference: &str) -> Landing {
    let root = root.to_string_lossy();
    if reference.starts_with('~') {
        return Landing::Outside;
    }
    // `from_top`: `None` for a relative reference, else the drive it names (`None` inside: the
    // root's own).
    let (rest, from_top) = match anchor(reference) {
        Anchor::Relative => (reference, None),
        Anchor::Rooted(rest) => (rest, Some(None)),
        Anchor::Drive(letter, rest) => (rest, Some(Some(letter))),
        Anchor::Elsewhere => return Landing::Outside,
    };
    let mut components = Vec::new();
    for component in rest.split(is_separator) {
        match component {
            "" | "." => (),
            ".." => components.push(component),
            // Win32 trims trailing dots and spaces, so a name of only dots and spaces may come out
            // as `.`, `..` or nothing at all.
            _ if component.chars().all(|c| c == '.' || c == ' ') => return Landing::Outside,
            _ => components.push(component),
        }
    }
    let mut remaining = &components[..];
    if let Some(drive) = from_top {
        let Some(root) = Root::parse(&root) else { return Landing::Outside };
        if drive.is_some_and(|letter| root.drive != Some(letter)) {
            return Landing::Outside;
        }
        let n = root.components.len();
        let within = components.len() >= n
            && components.iter().zip(&root.components).all(|(a, b)| same_name(a, b));
        if !within {
            return Landing::Outside;
        }
        remaining = &components[n..];
    }
    let mut resolved: Vec<&str> = Vec::with_capacity(remaining.len());
    for &component in remaining {
        if component == ".." {
            if resolved.pop().is_none() {
                return Landing::Outside;
            }
        } else {
            resolved.push(component);
        }
    }
    if resolved.iter().any(|component| !is_plain_name(component)) {
        return Landing::NotAFile;
    }
    Landing::Inside(resolved.join("/"))
}

/// How a reference starts.
enum Anchor<'a> {
    /// No prefix: relative to the root.
    Relative,
    /// One separator: from the top of the current drive (the root's); the rest follows it.
    Rooted(&'a str),
    /// `X:` and a separator: from the top of drive `X` (upper case); the rest follows it.
    Drive(u8, &'a str),
    /// Two separators (`\\server\share`, `\\?\`, `\\.\`, in either slash) or a drive without a
    /// separator (`C:foo`, that drive's current directory): never inside the project.
    Elsewhere,
}

fn anchor(reference: &str) -> Anchor<'_> {
    let bytes = reference.as_bytes();
    match bytes {
        [a, b, ..] if is_separator_byte(*a) && is_separator_byte(*b) => Anchor::Elsewhere,
        [a, ..] if is_separator_byte(*a) => Anchor::Rooted(&reference[1..]),
        [letter, b':', rest @ ..] if letter.is_ascii_alphabetic() => match rest.first() {
            Some(&separator) if is_separator_byte(separator) => {
                Anchor::Drive(letter.to_ascii_uppercase(), &reference[3..])
            }
            _ => Anchor::Elsewhere,
        },
        _ => Anchor::Relative,
    }
}

/// The project root, split: its drive letter (upper case; `None` for a share) and the components
/// below the drive or share.
struct Root<'a> {
    drive: Option<u8>,
    components: Vec<&'a str>,
}

impl Root<'_> {
    fn parse(root: &str) -> Option<Root<'_>> {
        let (drive, rest) = if let Some(rest) = strip_prefix_ignore_case(root, r"\\?\UNC\") {
            (None, share_rest(rest)?)
        } else if let Some(rest) = root.strip_prefix(r"\\?\") {
            drive_rest(rest)?
        } else if let Some(rest) = root.strip_prefix(r"\\") {
            (None, share_rest(rest)?)
        } else {
            drive_rest(root)?
        };
        Some(Root {
            drive,
            components: rest.split(is_separator).filter(|it| !it.is_empty()).collect(),
        })
    }
}

/// `X:\rest` → the upper-case letter and `rest`.
fn drive_rest(path: &str) -> Option<(Option<u8>, &str)> {
    match path.as_bytes() {
        [letter, b':', separator, ..]
            if letter.is_ascii_alphabetic() && is_separator_byte(*separator) =>
        {
            Some((Some(letter.to_ascii_uppercase()), &path[3..]))
        }
        [letter, b':'] if letter.is_ascii_alphabetic() => {
            Some((Some(letter.to_ascii_uppercase()), ""))
        }
        _ => None,
    }
}

/// `server\share\rest` → `rest`. A reference that starts with one separator is relative to the
/// share's top, so server and share are not compared (references naming a share are refused).
fn share_rest(path: &str) -> Option<&str> {
    let mut parts = path.splitn(3, is_separator);
    let (server, share) = (parts.next()?, parts.next()?);
    if server.is_empty() || share.is_empty() {
        return None;
    }
    Some(parts.next().unwrap_or(""))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

fn is_separator(c: char) -> bool {
    c == '/' || c == '\\'
}

fn is_separator_byte(b: u8) -> bool {
    b == b'/' || b == b'\\'
}

/// Whether Windows reads `name` (a component other than `.` and `..`) as the file of that name in
/// its directory: no stream separator, no control character, no trailing dot or space, no device.
fn is_plain_name(name: &str) -> bool {
    !(name.contains(':')
        || name.chars().any(char::is_control)
        || name.ends_with(['.', ' '])
        || is_device_name(name))
}

/// The names Windows maps to a device in every directory, with or without an extension, after
/// trailing spaces: `CON`, `PRN`, `AUX`, `NUL`, `COM1`–`COM9`, `LPT1`–`LPT9`, the superscript
/// digits `¹`, `²` and `³` as the ports' number too, and the console's `CONIN$` and `CONOUT$`.
fn is_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        _ => {
            let Some(number) = upper.strip_prefix("COM").or_else(|| upper.strip_prefix("LPT"))
            else {
                return false;
            };
            let mut digits = number.chars();
            matches!((digits.next(), digits.next()), (Some('1'..='9' | '¹' | '²' | '³'), None))
        }
    }
}

/// The attribute bits the reparse layer reads (the values of the Win32 constants of the same
/// names, spelled here so that the decision is tested on every OS).
pub(crate) const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
pub(crate) const FILE_ATTRIBUTE_DEVICE: u32 = 0x40;
pub(crate) const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;

/// What the reparse layer makes of one component opened with `FILE_OPEN_REPARSE_POINT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// A directory: the walk may go on beneath it.
    Directory,
    /// Anything else that is neither a reparse point nor a device: a file, still to be checked as
    /// a disk file by its handle's file type before it is read.
    File,
    /// A reparse point of any tag (symbolic link, junction, mount point, cloud placeholder, ...)
    /// or a device: never followed, never read.
    NotFollowed,
}

/// The reparse layer: what to do with a component whose `FILE_ATTRIBUTE_TAG_INFO` gave
/// `attributes` and `reparse_tag`. A reparse tag without the attribute bit counts as a reparse
/// point too.
pub(crate) fn opened(attributes: u32, reparse_tag: u32) -> Opened {
    if attributes & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DEVICE) != 0 || reparse_tag != 0
    {
        Opened::NotFollowed
    } else if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        Opened::Directory
    } else {
        Opened::File
    }
}

/// The final-path layer: whether `path`, an opened handle's final path
/// (`GetFinalPathNameByHandleW`: `\\?\C:\…` or `\\?\UNC\server\share\…`), is `root`'s final path
/// or lies below it. Both must be in that canonical form; they are compared component by component
/// (so `C:\proj2` is not under `C:\proj`) and case-insensitively: two characters match when both
/// their simple lower and upper case forms agree, which never equates names NTFS keeps apart for
/// the common cases (`K` and the Kelvin sign differ). A `.` or `..` component means the text is not
/// a final path, and it is refused.
pub(crate) fn final_path_within(path: &[u16], root: &[u16]) -> bool {
    const VERBATIM: [u16; 4] = [b'\\' as u16, b'\\' as u16, b'?' as u16, b'\\' as u16];
    let (Some(path), Some(root)) = (path.strip_prefix(&VERBATIM), root.strip_prefix(&VERBATIM))
    else {
        return false;
    };
    let split = |text: &[u16]| -> Vec<Vec<u16>> {
        text.split(|&unit| unit == b'\\' as u16)
            .filter(|component| !component.is_empty())
            .map(<[u16]>::to_vec)
            .collect()
    };
    let (path, root) = (split(path), split(root));
    let dots = |component: &Vec<u16>| component == &[b'.' as u16] || component == &[b'.' as u16; 2];
    if path.iter().chain(&root).any(dots) || root.is_empty() || path.len() < root.len() {
        return false;
    }
    path.iter().zip(&root).all(|(a, b)| same_units(a, b))
}

/// Case-insensitive equality of two names (see `final_path_within`).
fn same_name(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.chars(), b.chars());
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if same_char(x, y) => (),
            _ => return false,
        }
    }
}

/// `same_name` over UTF-16; an unpaired surrogate matches only the same unit.
fn same_units(a: &[u16], b: &[u16]) -> bool {
    let (mut a, mut b) =
        (char::decode_utf16(a.iter().copied()), char::decode_utf16(b.iter().copied()));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(Ok(x)), Some(Ok(y))) if same_char(x, y) => (),
            (Some(Err(x)), Some(Err(y))) if x.unpaired_surrogate() == y.unpaired_surrogate() => (),
            _ => return false,
        }
    }
}

fn same_char(a: char, b: char) -> bool {
    a == b
        || (simple(a.to_lowercase(), a) == simple(b.to_lowercase(), b)
            && simple(a.to_uppercase(), a) == simple(b.to_uppercase(), b))
}

/// The one-character case mapping of `c`, or `c` itself where the full mapping is longer.
fn simple(mut mapped: impl ExactSizeIterator<Item = char>, c: char) -> char {
    match mapped.len() {
        1 => mapped.next().unwrap_or(c),
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = r"C:\Users\me\proj";

    fn check(reference: &str, expected: Landing) {
        assert_eq!(lexical(Path::new(ROOT), reference), expected, "@{reference}");
    }

    fn inside(rel: &str) -> Landing {
        Landing::Inside(rel.to_string())
    }

    #[test]
    fn relative_references_stay_inside() {
        check("a.txt", inside("a.txt"));
        check("src/main.rs", inside("src/main.rs"));
        check(r"src\main.rs", inside("src/main.rs"));
        check(r"src\/deep//x.md", inside("src/deep/x.md"));
        check("./src/./a.ts/", inside("src/a.ts"));
        check(".", inside(""));
        check("src/..", inside(""));
        check(r"src\sub\..\b.txt", inside("src/b.txt"));
        check("types/node", inside("types/node"));
        check("example.com", inside("example.com"));
        check("Injectable()", inside("Injectable()"));
        check("src/*.ts", inside("src/*.ts"));
    }

    #[test]
    fn dot_dot_never_leaves_the_root() {
        check("..", Landing::Outside);
        check("../x", Landing::Outside);
        check(r"src\..\..\x", Landing::Outside);
        check("a/b/../../../x", Landing::Outside);
        check("../proj/a.txt", Landing::Outside);
        check("src/../../proj/a.txt", Landing::Outside);
    }

    #[test]
    fn dot_and_space_names_are_outside() {
        check("...", Landing::Outside);
        check("src/.../x", Landing::Outside);
        check(".. ", Landing::Outside);
        check("src/. /x", Landing::Outside);
    }

    #[test]
    fn home_paths_are_outside() {
        check("~", Landing::Outside);
        check("~/.ssh/id_rsa", Landing::Outside);
        check(r"~\x", Landing::Outside);
    }

    #[test]
    fn network_device_and_verbatim_paths_are_outside() {
        check(r"\\server\share\x", Landing::Outside);
        check("//server/share/x", Landing::Outside);
        check(r"\/server\share", Landing::Outside);
        check(r"\\?\C:\Users\me\proj\a.txt", Landing::Outside);
        check(r"\\.\C:\Users\me\proj\a.txt", Landing::Outside);
        check(r"\\.\PhysicalDrive0", Landing::Outside);
        check(r"\\?\UNC\server\share", Landing::Outside);
        check(r"\??\C:\secret", Landing::Outside);
    }

    #[test]
    fn drive_relative_paths_are_outside() {
        check("C:secret", Landing::Outside);
        check("c:secret", Landing::Outside);
        check("C:", Landing::Outside);
        check("D:..", Landing::Outside);
    }

    #[test]
    fn absolute_paths_inside_the_root_are_allowed() {
        check(r"C:\Users\me\proj\a.txt", inside("a.txt"));
        check("C:/Users/me/proj/src/a.ts", inside("src/a.ts"));
        check(r"c:\users\ME\Proj", inside(""));
        check(r"\Users\me\proj\a.txt", inside("a.txt"));
        check("/Users/me/proj/a/../b", inside("b"));
    }

    #[test]
    fn absolute_paths_elsewhere_are_outside() {
        check(r"C:\Windows\win.ini", Landing::Outside);
        check(r"D:\Users\me\proj\a.txt", Landing::Outside);
        check(r"C:\Users\me\proj2\a.txt", Landing::Outside);
        check(r"C:\Users\me", Landing::Outside);
        check(r"C:\Users\me\proj\..\x", Landing::Outside);
        check(r"C:\Users\me\..\me\proj\a.txt", Landing::Outside);
        check(r"C:\Users\me\proj\..\proj\a.txt", Landing::Outside);
        check("/etc/passwd", Landing::Outside);
        check("/components/x", Landing::Outside);
        check(r"\", Landing::Outside);
    }

    #[test]
    fn device_names_are_not_files() {
        for name in ["CON", "con", "PRN", "AUX", "NUL", "nul", "COM1", "com9", "LPT1", "LPT9"] {
            check(name, Landing::NotAFile);
        }
        check("NUL.txt", Landing::NotAFile);
        check("nul.tar.gz", Landing::NotAFile);
        check("CON .txt", Landing::NotAFile);
        check("src/aux.c", Landing::NotAFile);
        check("COM¹", Landing::NotAFile);
        check("lpt³.log", Landing::NotAFile);
        check("CONIN$", Landing::NotAFile);
        check("conout$", Landing::NotAFile);
        check(r"C:\Users\me\proj\NUL", Landing::NotAFile);
    }

    #[test]
    fn names_that_only_resemble_devices_are_files() {
        for name in [
            "CONFIG",
            "console.log",
            "nul_dev",
            "COM",
            "COM0",
            "COM10",
            "LPT",
            "com1x",
            "AUXI.txt",
            "x.nul",
        ] {
            check(name, inside(name));
        }
    }

    #[test]
    fn streams_are_not_files() {
        check("a.txt:stream", Landing::NotAFile);
        check("a.txt::$DATA", Landing::NotAFile);
        check("src/main.rs:42", Landing::NotAFile);
        check("github.com:org/repo.git", Landing::NotAFile);
        check("src/x:y/../a.txt", inside("src/a.txt"));
    }

    #[test]
    fn control_characters_are_not_files() {
        check("a\u{1}b", Landing::NotAFile);
        check("src/\u{7f}", Landing::NotAFile);
        check("a\u{85}b", Landing::NotAFile);
    }

    #[test]
    fn trailing_dots_and_spaces_are_not_files() {
        check("README.md.", Landing::NotAFile);
        check("src./a.ts", Landing::NotAFile);
        check("a.txt ", Landing::NotAFile);
        check("a. .", Landing::NotAFile);
    }

    #[test]
    fn leaving_the_project_wins_over_a_bad_name() {
        check("NUL/../../x", Landing::Outside);
        check(r"C:\Windows\NUL", Landing::Outside);
        check("a.txt:s/../../x", Landing::Outside);
    }

    #[test]
    fn names_popped_by_dot_dot_are_not_opened() {
        check("CON/../a.txt", inside("a.txt"));
        check("a.txt./../b", inside("b"));
    }

    #[test]
    fn root_forms() {
        let check_root = |root: &str, reference: &str, expected: Landing| {
            assert_eq!(lexical(Path::new(root), reference), expected, "{root} + @{reference}");
        };
        check_root(r"\\?\C:\proj", r"C:\proj\a", inside("a"));
        check_root(r"\\?\C:\proj", r"\proj\a", inside("a"));
        check_root(r"\\?\UNC\srv\share\proj", r"\proj\a", inside("a"));
        check_root(r"\\?\unc\srv\share\proj", r"\proj\a", inside("a"));
        check_root(r"\\srv\share\proj", r"\proj\a", inside("a"));
        check_root(r"\\srv\share\proj", r"C:\proj\a", Landing::Outside);
        check_root(r"\\srv\share\proj", "a", inside("a"));
        check_root(r"C:\", r"C:\Windows\win.ini", inside("Windows/win.ini"));
        check_root("C:", r"\x", inside("x"));
        check_root(r"C:\", "..", Landing::Outside);
        check_root("proj", r"C:\proj", Landing::Outside);
        check_root(r"\\srv", r"\x", Landing::Outside);
        check_root(r"C:\proj", "a", inside("a"));
    }

    #[test]
    fn labels_use_forward_slashes() {
        assert_eq!(with_slashes(r"src\deep/a.ts"), "src/deep/a.ts");
        assert_eq!(with_slashes("src/a.ts"), "src/a.ts");
    }

    fn check_opened(attributes: u32, tag: u32, expected: Opened) {
        assert_eq!(opened(attributes, tag), expected, "{attributes:#x} {tag:#x}");
    }

    #[test]
    fn reparse_points_are_never_followed() {
        // Symbolic link, junction (mount point), a cloud placeholder, a WSL symlink.
        for tag in [0xA000_000C, 0xA000_0003, 0x9000_001A, 0xA000_001D] {
            check_opened(FILE_ATTRIBUTE_REPARSE_POINT, tag, Opened::NotFollowed);
            check_opened(
                FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY,
                tag,
                Opened::NotFollowed,
            );
            check_opened(0, tag, Opened::NotFollowed);
        }
        check_opened(FILE_ATTRIBUTE_REPARSE_POINT, 0, Opened::NotFollowed);
        check_opened(FILE_ATTRIBUTE_DEVICE, 0, Opened::NotFollowed);
    }

    #[test]
    fn plain_components_are_followed() {
        check_opened(FILE_ATTRIBUTE_DIRECTORY, 0, Opened::Directory);
        // Read-only, hidden, system, archive.
        check_opened(0x1 | 0x2 | 0x4 | 0x20, 0, Opened::File);
        check_opened(0x10 | 0x2, 0, Opened::Directory);
        check_opened(0x80, 0, Opened::File);
    }

    fn check_within(path: &str, root: &str, expected: bool) {
        let wide = |text: &str| text.encode_utf16().collect::<Vec<u16>>();
        assert_eq!(final_path_within(&wide(path), &wide(root)), expected, "{path} under {root}");
    }

    #[test]
    fn final_paths_under_the_root() {
        check_within(r"\\?\C:\proj", r"\\?\C:\proj", true);
        check_within(r"\\?\C:\proj\a.txt", r"\\?\C:\proj", true);
        check_within(r"\\?\C:\proj\src\deep\a.txt", r"\\?\C:\proj\", true);
        check_within(r"\\?\c:\PROJ\a.txt", r"\\?\C:\proj", true);
        check_within(r"\\?\C:\Ärger\a", r"\\?\C:\ärger", true);
        check_within(r"\\?\C:\ΣΟΦΊΑ\a", r"\\?\C:\σοφία", true);
        check_within(r"\\?\C:\a.txt", r"\\?\C:\", true);
        check_within(r"\\?\UNC\srv\share\proj\a", r"\\?\UNC\SRV\share\proj", true);
    }

    #[test]
    fn final_paths_elsewhere() {
        check_within(r"\\?\C:\proj2\a.txt", r"\\?\C:\proj", false);
        check_within(r"\\?\C:\pro", r"\\?\C:\proj", false);
        check_within(r"\\?\C:\", r"\\?\C:\proj", false);
        check_within(r"\\?\D:\proj\a.txt", r"\\?\C:\proj", false);
        check_within(r"\\?\UNC\srv\share\proj", r"\\?\C:\proj", false);
        check_within(r"\\?\C:\other\secret", r"\\?\C:\proj", false);
        // The Kelvin sign lower-cases to `k` but NTFS keeps the two apart.
        check_within("\\\\?\\C:\\\u{212a}ey\\a", r"\\?\C:\key", false);
        check_within(r"\\?\C:\straße\a", r"\\?\C:\STRASSE", false);
    }

    #[test]
    fn final_paths_must_be_canonical() {
        check_within(r"C:\proj\a.txt", r"C:\proj", false);
        check_within(r"\\?\C:\proj\a.txt", r"C:\proj", false);
        check_within(r"\\?\C:\proj\..\other", r"\\?\C:\proj", false);
        check_within(r"\\?\C:\proj\.\a", r"\\?\C:\proj", false);
        check_within(r"\\?\", r"\\?\", false);
        check_within(r"\\.\C:\proj\a", r"\\.\C:\proj", false);
    }

    #[test]
    fn unpaired_surrogates_match_only_themselves() {
        let root: Vec<u16> = r"\\?\C:\".encode_utf16().chain([0xD800]).collect();
        let same: Vec<u16> = root.iter().copied().chain(r"\a".encode_utf16()).collect();
        let other: Vec<u16> =
            r"\\?\C:\".encode_utf16().chain([0xD801]).chain(r"\a".encode_utf16()).collect();
        assert!(final_path_within(&same, &root));
        assert!(!final_path_within(&other, &root));
    }
}
