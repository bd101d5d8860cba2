//! Finding and launching the CLIs on Windows without `where` and without `cmd.exe`: the search of
//! `PATH` × `PATHEXT` (never the current directory, which is the project), agy's and gemini's
//! orders, and the reading of an npm cmd-shim into the `node.exe <script>` it runs. File checks and
//! reads are passed in, so every decision is tested on any OS.

use std::fmt;

/// What a search reads from the environment and the file system.
pub(crate) struct Search<'a> {
    /// `PATH`'s entries as `std::env::split_paths` gives them (split at `;`, quotes removed).
    pub(crate) path: &'a [String],
    /// `PATHEXT`, when set.
    pub(crate) pathext: Option<&'a str>,
    /// `LOCALAPPDATA`, when set.
    pub(crate) local_app_data: Option<&'a str>,
    /// `USERPROFILE`, when set.
    pub(crate) user_profile: Option<&'a str>,
    /// Whether a regular file exists at a full path.
    pub(crate) exists: &'a dyn Fn(&str) -> bool,
}

/// What to spawn for a CLI: `program` with `leading_args` before the CLI's own arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    pub(crate) program: String,
    pub(crate) leading_args: Vec<String>,
}

/// What to run for the CLI `cli` (`agy`, `gemini`) that a backend names as `program`: its own name
/// when nothing is configured, which starts that CLI's search, else the configured path
/// (`AGY_CLI_PATH`, `GEMINI_CLI_PATH`), which the search returns as given. Any other command is
/// run as named. `None` when the search finds nothing.
pub(crate) fn find(cli: &str, program: &str, search: &Search<'_>) -> Option<String> {
    let configured = (program != cli).then_some(program);
    match cli {
        "agy" => find_agy(configured, search),
        "gemini" => find_gemini(configured, search),
        _ => Some(program.to_string()),
    }
}

/// The agy binary: `AGY_CLI_PATH` as given (not checked), else `agy.exe` in a `PATH` directory,
/// else the first of the install locations under `%LOCALAPPDATA%` and `%USERPROFILE%` that exists.
/// `None` when none is found.
pub(crate) fn find_agy(configured: Option<&str>, search: &Search<'_>) -> Option<String> {
    if let Some(path) = configured.map(str::trim).filter(|it| !it.is_empty()) {
        return Some(path.to_string());
    }
    if let Some(found) = on_path("agy", &[".exe"], search) {
        return Some(found);
    }
    let local = search.local_app_data.filter(|it| is_fully_qualified(it));
    let profile = search.user_profile.filter(|it| is_fully_qualified(it));
    let probes = [
        local.map(|base| join(base, r"agy\bin\agy.exe")),
        local.map(|base| join(base, r"Antigravity\agy.exe")),
        local.map(|base| join(base, r"Programs\agy\agy.exe")),
        profile.map(|base| join(base, r".local\bin\agy.exe")),
    ];
    probes.into_iter().flatten().find(|probe| (search.exists)(probe))
}

/// The gemini binary: `GEMINI_CLI_PATH` as given (not checked), else `gemini.exe` or the npm shim
/// `gemini.cmd` in a `PATH` directory. `None` when none is found.
pub(crate) fn find_gemini(configured: Option<&str>, search: &Search<'_>) -> Option<String> {
    if let Some(path) = configured.map(str::trim).filter(|it| !it.is_empty()) {
        return Some(path.to_string());
    }
    on_path("gemini", &[".exe", ".cmd"], search)
}

/// The first `<dir>\<name><ext>` that exists, for each `PATH` directory in order and, within one,
/// each extension of `PATHEXT` in its order that is also in `runnable` (the extensions the relay
/// can run for this CLI; all of `runnable`, in its order, when `PATHEXT` names none of them).
///
/// Only fully qualified directories are searched (`C:\…`, `\\server\share\…`): an empty entry,
/// `.`, or any other relative or drive-relative entry would name a place in the current
/// directory, which is the project, and is skipped.
fn on_path(name: &str, runnable: &[&str], search: &Search<'_>) -> Option<String> {
    let listed: Vec<String> = search
        .pathext
        .unwrap_or("")
        .split(';')
        .map(|ext| ext.trim().to_ascii_lowercase())
        .filter(|ext| runnable.contains(&ext.as_str()))
        .collect();
    let extensions: Vec<&str> = match listed.is_empty() {
        true => runnable.to_vec(),
        false => listed.iter().map(String::as_str).collect(),
    };
    for dir in search.path.iter().map(|dir| dir.trim()).filter(|dir| is_fully_qualified(dir)) {
        for ext in &extensions {
            let candidate = join(dir, &format!("{name}{ext}"));
            if (search.exists)(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// Whether `found` names a batch file (`.cmd`, `.bat`), which only `cmd.exe` runs.
pub(crate) fn is_batch(found: &str) -> bool {
    let lower = found.to_ascii_lowercase();
    lower.ends_with(".cmd") || lower.ends_with(".bat")
}

/// How to run what `find_agy` or `find_gemini` gave for `cli` (`agy` or `gemini`). A `.cmd` or
/// `.bat` file is read (`read` gives its bytes, `None` when it cannot be read) and, when it is an
/// npm cmd-shim that runs `node` with a script (or an exe target itself), run as that program and
/// script, never through `cmd.exe`; any other batch file is refused, one that is not UTF-8 too.
/// Everything else is spawned directly.
///
/// `Err` says why nothing can be launched; its `Display` is the text the call fails with.
pub(crate) fn launch(
    cli: &str,
    found: &str,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
    search: &Search<'_>,
) -> Result<Launch, NotLaunched> {
    if !is_batch(found) {
        return Ok(Launch { program: found.to_string(), leading_args: Vec::new() });
    }
    let refused = || NotLaunched::NotAShim { cli: cli.to_string(), path: found.to_string() };
    let Some(dir) = parent(found).filter(|dir| is_fully_qualified(dir)) else {
        return Err(refused());
    };
    let Some(bytes) = read(found) else {
        return Err(NotLaunched::NotFound { name: cli.to_string() });
    };
    let text = String::from_utf8(bytes).map_err(|_| refused())?;
    let shim = parse_shim(&text).ok_or_else(refused)?;
    let target = join_normalized(dir, &shim.target);
    let Some(program) = shim.program else {
        // A shim without a program runs its target itself, which the relay does only for an exe.
        if !target.to_ascii_lowercase().ends_with(".exe") {
            return Err(refused());
        }
        return Ok(Launch { program: target, leading_args: Vec::new() });
    };
    // Only node runs a script here: a shell (cmd, PowerShell) would read the arguments as code.
    if !program.eq_ignore_ascii_case("node") || !is_script(&target) {
        return Err(refused());
    }
    let exe = format!("{program}.exe");
    let beside = join(dir, &exe);
    let program_path = match (search.exists)(&beside) {
        true => beside,
        false => on_path(&program, &[".exe"], search)
            .ok_or_else(|| NotLaunched::NotFound { name: program.clone() })?,
    };
    let mut leading_args = shim.args;
    leading_args.push(target);
    Ok(Launch { program: program_path, leading_args })
}

/// A target node runs as a script: not a program or a batch or PowerShell file of its own.
fn is_script(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    ![".cmd", ".bat", ".ps1", ".exe", ".com"].iter().any(|ext| lower.ends_with(ext))
}

/// Why `launch` has nothing to spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotLaunched {
    /// The shim could not be read, or the program it runs (`name`, such as `node`) is nowhere.
    NotFound { name: String },
    /// A batch file the relay does not run: not an npm cmd-shim, or not named by its full path.
    NotAShim { cli: String, path: String },
}

impl fmt::Display for NotLaunched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotLaunched::NotFound { name } => {
                write!(f, "Could not find the \"{name}\" executable.")
            }
            NotLaunched::NotAShim { cli, path } => f.write_str(&not_a_shim_text(cli, path)),
        }
    }
}

/// What an npm cmd-shim runs: `program` (a bare name such as `node`; `None` when the shim runs its
/// target itself), the arguments its script's `#!` line gave, and the target relative to the
/// shim's directory, with `\` separators.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shim {
    program: Option<String>,
    args: Vec<String>,
    target: String,
}

/// Reads the text of a `.cmd` written by npm's cmd-shim. Its marks: the line that sets `dp0` to
/// the shim's directory, and a last line that runs `"%_prog%"` (the program, either `<prog>.exe`
/// beside the shim or `<prog>` found by the shell) or, for a target without a `#!` line, the
/// target itself, with `"%dp0%\<target>" %*`. A shim that sets environment variables for its
/// program, or any text without those marks, is not read as a shim (`None`).
fn parse_shim(text: &str) -> Option<Shim> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    if !lines.iter().any(|line| line.eq_ignore_ascii_case("SET dp0=%~dp0")) {
        return None;
    }
    if lines.iter().any(|line| starts_with_ignore_case(line, "@SET ")) {
        return None;
    }
    let run = lines.last()?.strip_suffix("%*")?.trim_end();
    let (program, after) = match run.find("\"%_prog%\"") {
        Some(at) => {
            let program = lines.iter().find_map(|line| fallback_program(line))?;
            (Some(program), &run[at + "\"%_prog%\"".len()..])
        }
        None if run.starts_with("\"%dp0%\\") => (None, run),
        None => return None,
    };
    let quoted = after.rfind("\"%dp0%\\")?;
    let target = after[quoted + "\"%dp0%\\".len()..].strip_suffix('"')?;
    let args: Vec<String> = after[..quoted].split_whitespace().map(String::from).collect();
    if !is_plain_target(target) || !args.iter().all(|arg| is_plain_arg(arg)) {
        return None;
    }
    if program.is_none() && !args.is_empty() {
        return None;
    }
    Some(Shim { program, args, target: target.to_string() })
}

/// The `<prog>` of a `SET "_prog=<prog>"` line, when it is a bare program name (the other
/// `_prog` line names `<prog>.exe` beside the shim).
fn fallback_program(line: &str) -> Option<String> {
    let value = line.strip_prefix("SET \"_prog=")?.strip_suffix('"')?;
    let bare = !value.is_empty()
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    bare.then(|| value.to_string())
}

/// A target the shell would pass on unchanged: no quote, no variable, relative, not empty.
fn is_plain_target(target: &str) -> bool {
    !target.is_empty()
        && !target.contains(['"', '%', '\r', '\n'])
        && !is_fully_qualified(target)
        && !target.starts_with(['\\', '/'])
}

/// A `#!` argument the shell would pass on unchanged.
fn is_plain_arg(arg: &str) -> bool {
    !arg.contains(['"', '%', '^', '&', '|', '<', '>', '(', ')'])
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Whether `path` is a full path on its own: `X:\…` or `X:/…`, or a UNC path `\\server\share…`.
fn is_fully_qualified(path: &str) -> bool {
    match path.as_bytes() {
        [letter, b':', separator, ..] => {
            letter.is_ascii_alphabetic() && matches!(separator, b'\\' | b'/')
        }
        [b'\\', b'\\', rest @ ..] => rest.first().is_some_and(|c| !matches!(c, b'\\' | b'/')),
        _ => false,
    }
}

/// `dir\name`, with one separator between.
fn join(dir: &str, name: &str) -> String {
    format!("{}\\{name}", dir.trim_end_matches(['\\', '/']))
}

/// The directory of a file path (the text before its last separator), if it has one.
fn parent(path: &str) -> Option<&str> {
    let at = path.rfind(['\\', '/'])?;
    Some(&path[..at]).filter(|dir| !dir.is_empty())
}

/// `dir\rel` with `.` and empty components dropped and each `..` removing the one before it,
/// never the drive or the server and share.
fn join_normalized(dir: &str, rel: &str) -> String {
    let (prefix, rest) = match dir.strip_prefix(r"\\") {
        Some(unc) => {
            let mut parts = unc.splitn(3, ['\\', '/']);
            let server = parts.next().unwrap_or("");
            let share = parts.next().unwrap_or("");
            (format!(r"\\{server}\{share}"), parts.next().unwrap_or(""))
        }
        None => (dir[..2].to_string(), &dir[2..]),
    };
    let mut components: Vec<&str> = Vec::new();
    for component in rest.split(['\\', '/']).chain(rel.split(['\\', '/'])) {
        match component {
            "" | "." => (),
            ".." => {
                components.pop();
            }
            _ => components.push(component),
        }
    }
    let mut path = prefix;
    for component in components {
        path.push('\\');
        path.push_str(component);
    }
    path
}

/// The refusal of a batch file that is not an npm cmd-shim or not named by its full path.
fn not_a_shim_text(cli: &str, path: &str) -> String {
    let variable = match cli {
        "gemini" => "GEMINI_CLI_PATH",
        _ => "AGY_CLI_PATH",
    };
    format!(
        "Refusing to run {path}: the relay runs a batch file only when it is an npm cmd-shim named \
         by its full path, and never through cmd.exe. Set {variable} to the full path of {cli}.exe, \
         or of the {cli}.cmd that npm installs."
    )
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;

    /// A Windows machine in miniature: files that exist (compared case-insensitively, as NTFS
    /// does), their texts, and the environment.
    struct Machine {
        files: HashSet<String>,
        texts: HashMap<String, Vec<u8>>,
        path: Vec<String>,
        pathext: Option<String>,
        local_app_data: Option<String>,
        user_profile: Option<String>,
    }

    impl Machine {
        fn new(path: &[&str], files: &[&str]) -> Machine {
            Machine {
                files: files.iter().map(|it| it.to_ascii_lowercase()).collect(),
                texts: HashMap::new(),
                path: path.iter().map(|it| it.to_string()).collect(),
                pathext: Some(".COM;.EXE;.BAT;.CMD;.VBS;.JS;.PS1".to_string()),
                local_app_data: Some(r"C:\Users\me\AppData\Local".to_string()),
                user_profile: Some(r"C:\Users\me".to_string()),
            }
        }

        fn with_text(self, file: &str, text: &str) -> Machine {
            self.with_bytes(file, text.as_bytes())
        }

        fn with_bytes(mut self, file: &str, bytes: &[u8]) -> Machine {
            self.files.insert(file.to_ascii_lowercase());
            self.texts.insert(file.to_ascii_lowercase(), bytes.to_vec());
            self
        }

        fn run<T>(
            &self,
            body: impl FnOnce(&Search<'_>, &dyn Fn(&str) -> Option<Vec<u8>>) -> T,
        ) -> T {
            let exists = |path: &str| self.files.contains(&path.to_ascii_lowercase());
            let read = |path: &str| self.texts.get(&path.to_ascii_lowercase()).cloned();
            let search = Search {
                path: &self.path,
                pathext: self.pathext.as_deref(),
                local_app_data: self.local_app_data.as_deref(),
                user_profile: self.user_profile.as_deref(),
                exists: &exists,
            };
            body(&search, &read)
        }
    }

    fn check_find(cli: &str, configured: Option<&str>, machine: &Machine, expected: Option<&str>) {
        let found = machine.run(|search, _| match cli {
            "agy" => find_agy(configured, search),
            _ => find_gemini(configured, search),
        });
        assert_eq!(found.as_deref(), expected, "{cli} with {configured:?}");
    }

    fn check_launch(
        cli: &str,
        found: &str,
        machine: &Machine,
        expected: Result<(&str, &[&str]), NotLaunched>,
    ) {
        let launch = machine.run(|search, read| launch(cli, found, read, search));
        let expected = expected.map(|(program, args)| Launch {
            program: program.to_string(),
            leading_args: args.iter().map(|it| it.to_string()).collect(),
        });
        assert_eq!(launch, expected, "{cli}: {found}");
    }

    fn not_found(name: &str) -> NotLaunched {
        NotLaunched::NotFound { name: name.to_string() }
    }

    fn not_a_shim(cli: &str, path: &str) -> NotLaunched {
        NotLaunched::NotAShim { cli: cli.to_string(), path: path.to_string() }
    }

    const NPM: &str = r"C:\Users\me\AppData\Roaming\npm";
    const GEMINI_JS: &str =
        r"C:\Users\me\AppData\Roaming\npm\node_modules\@google\gemini-cli\dist\index.js";

    /// The lines of an npm cmd-shim that the reader looks at, for a script whose `#!` line runs
    /// `program` with `args`, and whose target is `target` relative to the shim; the shell plumbing
    /// between them is left out.
    fn npm_shim(program: &str, args: &str, target: &str) -> String {
        [
            "@ECHO off".to_string(),
            "SET dp0=%~dp0".to_string(),
            format!("SET \"_prog=%dp0%\\{program}.exe\""),
            format!("SET \"_prog={program}\""),
            format!("endLocal & \"%_prog%\" {args} \"%dp0%\\{target}\" %*"),
        ]
        .join("\r\n")
            + "\r\n"
    }

    fn gemini_shim() -> String {
        npm_shim("node", "", r"node_modules\@google\gemini-cli\dist\index.js")
    }

    #[test]
    fn agy_path_setting_wins_and_is_not_checked() {
        let machine = Machine::new(&[r"C:\bin"], &[r"C:\bin\agy.exe"]);
        check_find("agy", Some(r"D:\tools\agy.exe"), &machine, Some(r"D:\tools\agy.exe"));
        check_find("agy", Some(r"  D:\tools\agy.exe "), &machine, Some(r"D:\tools\agy.exe"));
        check_find("agy", Some("  "), &machine, Some(r"C:\bin\agy.exe"));
        check_find("agy", None, &machine, Some(r"C:\bin\agy.exe"));
    }

    #[test]
    fn a_configured_path_reaches_the_search_and_the_bare_name_starts_it() {
        let machine = Machine::new(&[r"C:\bin"], &[r"C:\bin\agy.exe", r"C:\bin\gemini.cmd"]);
        let on = |cli: &str, program: &str| machine.run(|search, _| find(cli, program, search));
        assert_eq!(on("gemini", "gemini").as_deref(), Some(r"C:\bin\gemini.cmd"));
        assert_eq!(on("gemini", r"D:\g\gemini.exe").as_deref(), Some(r"D:\g\gemini.exe"));
        assert_eq!(on("gemini", "gemini-beta").as_deref(), Some("gemini-beta"));
        assert_eq!(on("agy", "agy").as_deref(), Some(r"C:\bin\agy.exe"));
        assert_eq!(on("agy", r"E:\agy\agy.exe").as_deref(), Some(r"E:\agy\agy.exe"));
        assert_eq!(on("sh", "/bin/sh").as_deref(), Some("/bin/sh"));
        let empty = Machine::new(&[r"C:\bin"], &[]);
        assert_eq!(empty.run(|search, _| find("gemini", "gemini", search)), None);
        assert_eq!(
            empty.run(|search, _| find("gemini", r"C:\g\gemini.cmd", search)).as_deref(),
            Some(r"C:\g\gemini.cmd"),
            "a configured path is not checked"
        );
    }

    #[test]
    fn a_bare_agy_is_found_by_the_search() {
        let found = |files: &[&str]| {
            let mut machine = Machine::new(&[r"C:\empty", r"C:\bin"], files);
            machine.pathext = Some(".COM;.EXE;.CMD".to_string());
            machine.run(|search, _| find("agy", "agy", search))
        };
        assert_eq!(found(&[r"C:\bin\agy", r"C:\bin\agy.exe"]).as_deref(), Some(r"C:\bin\agy.exe"));
        assert_eq!(found(&[r"C:\bin\agy", r"C:\bin\agy.cmd"]), None);
        let installed = r"C:\Users\me\AppData\Local\agy\bin\agy.exe";
        assert_eq!(found(&[installed]).as_deref(), Some(installed));
        let local_bin = r"C:\Users\me\.local\bin\agy.exe";
        assert_eq!(found(&[local_bin]).as_deref(), Some(local_bin));
    }

    #[test]
    fn agy_is_found_in_path_order() {
        let machine =
            Machine::new(&[r"C:\a", r"C:\b\", "D:/c"], &[r"C:\b\agy.exe", r"D:\c\agy.exe"]);
        check_find("agy", None, &machine, Some(r"C:\b\agy.exe"));
        let machine = Machine::new(&[r"C:\a", r"C:\b\", "D:/c"], &[r"D:/c\agy.exe"]);
        check_find("agy", None, &machine, Some(r"D:/c\agy.exe"));
    }

    #[test]
    fn agy_is_only_an_exe_on_path() {
        let machine = Machine::new(&[r"C:\a"], &[r"C:\a\agy.cmd", r"C:\a\agy.bat", r"C:\a\agy"]);
        check_find("agy", None, &machine, None);
    }

    #[test]
    fn the_current_directory_is_never_searched() {
        let files = [r"agy.exe", r".\agy.exe", r"bin\agy.exe", r"C:bin\agy.exe", r"\bin\agy.exe"];
        let machine = Machine::new(&["", ".", "bin", r"C:bin", r"\bin", " "], &files);
        check_find("agy", None, &machine, None);
        let machine = Machine::new(&["", ".", r"..\x"], &["gemini.cmd", r".\gemini.exe"]);
        check_find("gemini", None, &machine, None);
    }

    #[test]
    fn padded_and_network_path_entries_are_searched() {
        let machine = Machine::new(&[r" C:\tools "], &[r"C:\tools\agy.exe"]);
        check_find("agy", None, &machine, Some(r"C:\tools\agy.exe"));
        let machine = Machine::new(&[r"\\srv\share\bin"], &[r"\\srv\share\bin\agy.exe"]);
        check_find("agy", None, &machine, Some(r"\\srv\share\bin\agy.exe"));
    }

    #[test]
    fn agy_falls_back_to_the_install_locations_in_order() {
        let all = [
            r"C:\Users\me\AppData\Local\agy\bin\agy.exe",
            r"C:\Users\me\AppData\Local\Antigravity\agy.exe",
            r"C:\Users\me\AppData\Local\Programs\agy\agy.exe",
            r"C:\Users\me\.local\bin\agy.exe",
        ];
        for first in 0..all.len() {
            let machine = Machine::new(&[r"C:\bin"], &all[first..]);
            check_find("agy", None, &machine, Some(all[first]));
        }
        let machine = Machine::new(&[r"C:\bin"], &[r"C:\bin\agy.exe", all[0]]);
        check_find("agy", None, &machine, Some(r"C:\bin\agy.exe"));
    }

    #[test]
    fn agy_install_locations_need_full_base_paths() {
        let mut machine =
            Machine::new(&[], &[r"AppData\agy\bin\agy.exe", r"me\.local\bin\agy.exe"]);
        machine.local_app_data = Some("AppData".to_string());
        machine.user_profile = Some("me".to_string());
        check_find("agy", None, &machine, None);
        machine.local_app_data = None;
        machine.user_profile = None;
        check_find("agy", None, &machine, None);
    }

    #[test]
    fn gemini_path_setting_wins() {
        let machine = Machine::new(&[NPM], &[&format!(r"{NPM}\gemini.cmd")]);
        check_find("gemini", Some(r"D:\g\gemini.exe"), &machine, Some(r"D:\g\gemini.exe"));
        check_find("gemini", None, &machine, Some(&format!(r"{NPM}\gemini.cmd")));
    }

    #[test]
    fn gemini_follows_pathext_order_within_a_directory() {
        let files = [r"C:\a\gemini.cmd", r"C:\a\gemini.exe"];
        let mut machine = Machine::new(&[r"C:\a"], &files);
        check_find("gemini", None, &machine, Some(r"C:\a\gemini.exe"));
        machine.pathext = Some(".CMD;.EXE".to_string());
        check_find("gemini", None, &machine, Some(r"C:\a\gemini.cmd"));
        machine.pathext = Some(" .cmd ; ;.exe".to_string());
        check_find("gemini", None, &machine, Some(r"C:\a\gemini.cmd"));
    }

    #[test]
    fn gemini_follows_path_order_before_pathext() {
        let machine = Machine::new(&[r"C:\a", r"C:\b"], &[r"C:\a\gemini.cmd", r"C:\b\gemini.exe"]);
        check_find("gemini", None, &machine, Some(r"C:\a\gemini.cmd"));
    }

    #[test]
    fn without_a_usable_pathext_the_runnable_extensions_are_tried() {
        let mut machine = Machine::new(&[r"C:\a"], &[r"C:\a\gemini.cmd"]);
        machine.pathext = None;
        check_find("gemini", None, &machine, Some(r"C:\a\gemini.cmd"));
        machine.pathext = Some(".COM;.BAT".to_string());
        check_find("gemini", None, &machine, Some(r"C:\a\gemini.cmd"));
        machine.pathext = Some(".EXE".to_string());
        check_find("gemini", None, &machine, None);
    }

    #[test]
    fn gemini_never_picks_other_kinds_of_shim() {
        let files = [r"C:\a\gemini", r"C:\a\gemini.ps1", r"C:\a\gemini.bat", r"C:\a\gemini.js"];
        check_find("gemini", None, &Machine::new(&[r"C:\a"], &files), None);
    }

    #[test]
    fn an_exe_is_spawned_directly() {
        let machine = Machine::new(&[], &[]);
        check_launch("agy", r"C:\bin\agy.exe", &machine, Ok((r"C:\bin\agy.exe", &[])));
        check_launch("agy", "agy", &machine, Ok(("agy", &[])));
        check_launch("gemini", r"D:\g\gemini.EXE", &machine, Ok((r"D:\g\gemini.EXE", &[])));
    }

    #[test]
    fn the_npm_shim_runs_node_beside_it() {
        let shim = format!(r"{NPM}\gemini.cmd");
        let machine =
            Machine::new(&[r"C:\node"], &[&format!(r"{NPM}\node.exe"), r"C:\node\node.exe"])
                .with_text(&shim, &gemini_shim());
        check_launch("gemini", &shim, &machine, Ok((&format!(r"{NPM}\node.exe"), &[GEMINI_JS])));
    }

    #[test]
    fn the_npm_shim_runs_node_from_path_otherwise() {
        let shim = format!(r"{NPM}\gemini.cmd");
        let machine = Machine::new(
            &[".", r"C:\Program Files\nodejs"],
            &["node.exe", r".\node.exe", r"C:\Program Files\nodejs\node.exe"],
        )
        .with_text(&shim, &gemini_shim());
        check_launch(
            "gemini",
            &shim,
            &machine,
            Ok((r"C:\Program Files\nodejs\node.exe", &[GEMINI_JS])),
        );
    }

    #[test]
    fn the_npm_shim_without_node_is_not_found() {
        let shim = format!(r"{NPM}\gemini.cmd");
        let machine =
            Machine::new(&[r"C:\a"], &[r"C:\a\node.cmd"]).with_text(&shim, &gemini_shim());
        check_launch("gemini", &shim, &machine, Err(not_found("node")));
    }

    #[test]
    fn shim_targets_resolve_against_the_shim_directory() {
        let shim = r"C:\proj\node_modules\.bin\gemini.cmd";
        let text = npm_shim("node", "", r"..\@google\gemini-cli\dist\index.js");
        let machine =
            Machine::new(&[], &[r"C:\proj\node_modules\.bin\node.exe"]).with_text(shim, &text);
        check_launch(
            "gemini",
            shim,
            &machine,
            Ok((
                r"C:\proj\node_modules\.bin\node.exe",
                &[r"C:\proj\node_modules\@google\gemini-cli\dist\index.js"],
            )),
        );
        let shim = r"\\srv\share\npm\gemini.cmd";
        let text = npm_shim("node", "", r"..\..\..\lib\gemini.js");
        let machine = Machine::new(&[], &[r"\\srv\share\npm\node.exe"]).with_text(shim, &text);
        check_launch(
            "gemini",
            shim,
            &machine,
            Ok((r"\\srv\share\npm\node.exe", &[r"\\srv\share\lib\gemini.js"])),
        );
    }

    #[test]
    fn shim_arguments_of_the_script_come_first() {
        let shim = r"C:\npm\gemini.cmd";
        let text = npm_shim("node", "--no-warnings --max-old-space-size=4096", r"m\cli.js");
        let machine = Machine::new(&[], &[r"C:\npm\node.exe"]).with_text(shim, &text);
        check_launch(
            "gemini",
            shim,
            &machine,
            Ok((
                r"C:\npm\node.exe",
                &["--no-warnings", "--max-old-space-size=4096", r"C:\npm\m\cli.js"],
            )),
        );
    }

    #[test]
    fn shims_of_other_programs_are_refused() {
        let shim = r"C:\npm\gemini.cmd";
        let text = npm_shim("bun", "", r"m\cli.js");
        let machine = Machine::new(&[r"C:\bun"], &[r"C:\bun\bun.exe"]).with_text(shim, &text);
        check_launch("gemini", shim, &machine, Err(not_a_shim("gemini", shim)));
    }

    #[test]
    fn shims_that_run_a_shell_or_a_batch_file_are_refused() {
        let shim = r"C:\npm\gemini.cmd";
        let shells = ["cmd", "cmd.exe", "CMD", "powershell", "pwsh", "powershell.exe"];
        let texts = shells.map(|program| npm_shim(program, "/c", r"m\cli.js"));
        let targets = [r"m\run.cmd", r"m\run.BAT", r"m\run.ps1", r"m\run.exe"];
        let texts = texts.into_iter().chain(targets.map(|target| npm_shim("node", "", target)));
        let files = [r"C:\npm\cmd.exe", r"C:\npm\powershell.exe", r"C:\npm\pwsh.exe"];
        for text in texts {
            let machine = Machine::new(&[], &files).with_text(shim, &text);
            check_launch("gemini", shim, &machine, Err(not_a_shim("gemini", shim)));
        }
    }

    #[test]
    fn a_shim_that_is_not_utf8_is_refused() {
        let shim = r"C:\npm\gemini.cmd";
        let utf16: Vec<u8> = gemini_shim().encode_utf16().flat_map(u16::to_le_bytes).collect();
        // One CP1252 byte (an `é`) in a remark line that a UTF-8 shim may carry.
        let mut cp1252 = b"@REM caf\xE9\r\n".to_vec();
        cp1252.extend_from_slice(gemini_shim().as_bytes());
        let mut utf8 = "@REM caf\u{e9}\r\n".as_bytes().to_vec();
        utf8.extend_from_slice(gemini_shim().as_bytes());
        let node = format!(r"{}\node.exe", r"C:\npm");
        let machine = Machine::new(&[], &[&node]).with_bytes(shim, &utf8);
        check_launch(
            "gemini",
            shim,
            &machine,
            Ok((&node, &[r"C:\npm\node_modules\@google\gemini-cli\dist\index.js"])),
        );
        for bytes in [utf16, cp1252] {
            let machine = Machine::new(&[], &[r"C:\npm\node.exe"]).with_bytes(shim, &bytes);
            check_launch("gemini", shim, &machine, Err(not_a_shim("gemini", shim)));
        }
    }

    #[test]
    fn a_shim_without_a_program_runs_its_exe_target() {
        let shim = r"C:\npm\agy.cmd";
        let head = "@ECHO off\r\nSET dp0=%~dp0";
        let machine = Machine::new(&[], &[])
            .with_text(shim, &format!("{head}\r\n\"%dp0%\\..\\agy\\agy.exe\"   %*\r\n"));
        check_launch("agy", shim, &machine, Ok((r"C:\agy\agy.exe", &[])));
        let machine = Machine::new(&[], &[])
            .with_text(shim, &format!("{head}\r\n\"%dp0%\\agy\\cli.js\"   %*\r\n"));
        check_launch("agy", shim, &machine, Err(not_a_shim("agy", shim)));
    }

    #[test]
    fn batch_files_that_are_not_npm_shims_are_refused() {
        let shim = r"C:\tools\gemini.bat";
        let texts = [
            "@echo off\r\nnode \"%~dp0\\gemini.js\" %*\r\n".to_string(),
            "@ECHO off\r\nSET dp0=%~dp0\r\ncalc.exe\r\n".to_string(),
            gemini_shim().replace(" %*\r\n", "\r\n"),
            gemini_shim().replace("SET dp0=%~dp0", "SET dp0=C:\\"),
            gemini_shim().replace("SET \"_prog=node\"", "SET \"_prog=C:\\evil\\node\""),
            gemini_shim().replace(r"\dist\index.js", r"\%USERNAME%.js"),
            gemini_shim().replace("\"%_prog%\" ", "\"%_prog%\" & calc "),
            gemini_shim().replace("@ECHO off", "@ECHO off\r\n@SET NODE_OPTIONS=--x"),
            npm_shim("node", "", r"C:\elsewhere\cli.js"),
            String::new(),
        ];
        for text in texts {
            let machine = Machine::new(&[], &[r"C:\tools\node.exe"]).with_text(shim, &text);
            check_launch("gemini", shim, &machine, Err(not_a_shim("gemini", shim)));
        }
    }

    #[test]
    fn batch_files_by_relative_path_are_refused() {
        let machine = Machine::new(&[], &["gemini.cmd"]).with_text("gemini.cmd", &gemini_shim());
        check_launch("gemini", "gemini.cmd", &machine, Err(not_a_shim("gemini", "gemini.cmd")));
        check_launch("agy", r"bin\agy.CMD", &machine, Err(not_a_shim("agy", r"bin\agy.CMD")));
    }

    #[test]
    fn an_unreadable_shim_is_not_found() {
        let machine = Machine::new(&[], &[]);
        check_launch("gemini", r"C:\npm\gemini.cmd", &machine, Err(not_found("gemini")));
    }

    #[test]
    fn failures_display_their_texts() {
        assert_eq!(
            not_a_shim("gemini", r"C:\x\gemini.bat").to_string(),
            r"Refusing to run C:\x\gemini.bat: the relay runs a batch file only when it is an npm cmd-shim named by its full path, and never through cmd.exe. Set GEMINI_CLI_PATH to the full path of gemini.exe, or of the gemini.cmd that npm installs."
        );
        assert!(not_a_shim("agy", r"C:\x\agy.cmd").to_string().contains(". Set AGY_CLI_PATH to"));
    }
}
