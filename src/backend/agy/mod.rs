//! The agy (Antigravity CLI) backend: its process-wide state (`Agy`), capabilities, argv, output and
//! transcript parsing (pure), and the run ladder in `run`, the only part that spawns (through the
//! call's runner).

pub mod args;
pub mod caps;
pub mod failure;
pub mod json;
pub mod output;
pub mod run;
pub mod stream;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use crate::backend::agy::caps::AgyCaps;
use crate::backend::agy::transcript::Store;
use crate::config::Config;
#[cfg(any(windows, test))]
use crate::exec::winresolve::{self, Search};

/// Where agy keeps its state for the user whose home directory is `home`:
/// `<home>/.gemini/antigravity-cli`.
pub fn store_dir(home: &Path) -> PathBuf {
    home.join(".gemini").join("antigravity-cli")
}

/// agy's conversation directories: `<home>/.gemini/antigravity-cli/brain`.
pub fn brain_dir(home: &Path) -> PathBuf {
    store_dir(home).join("brain")
}

/// agy's process-wide state: where the binary is, its probed capabilities, and the settings of its
/// runs.
pub struct Agy {
    /// `AGY_CLI_PATH`, when set.
    configured: Option<PathBuf>,
    home: Option<PathBuf>,
    /// `PATH`, where a bare `agy` is looked up to see whether it changed.
    search_path: Option<String>,
    /// `PATHEXT` and `LOCALAPPDATA`, which the Windows search reads too.
    #[cfg_attr(not(windows), allow(dead_code))]
    pathext: Option<String>,
    #[cfg_attr(not(windows), allow(dead_code))]
    local_app_data: Option<String>,
    /// Resolved on first use.
    program: OnceLock<PathBuf>,
    /// The capabilities probed by the last agy run, and the executable they were probed on: a run
    /// probes again when that file is no longer the same (`agy update`).
    caps: Mutex<Option<(Option<Executable>, AgyCaps)>>,
    /// The `--print-timeout` value: `AGY_PRINT_TIMEOUT`, else derived to stay under the deadline.
    print_timeout: String,
    /// `AGY_MCP_PTY`.
    pty: bool,
}

impl Agy {
    pub fn new(config: &Config) -> Agy {
        Agy {
            configured: config.agy_cli_path.clone(),
            home: config.home.clone(),
            search_path: config.path.clone(),
            pathext: config.pathext.clone(),
            local_app_data: config.local_app_data.clone(),
            program: OnceLock::new(),
            caps: Mutex::new(None),
            print_timeout: args::print_timeout_value(
                config.agy_print_timeout.as_deref(),
                config.timeout.as_millis() as u64,
            ),
            pty: config.agy_pty,
        }
    }

    /// The agy binary: `AGY_CLI_PATH` if set, else (POSIX) `~/.local/bin/agy` if it exists, else
    /// `agy`, found on PATH at spawn. On Windows the executor's own search takes the bare name and
    /// probes the install locations itself (`%USERPROFILE%\.local\bin\agy.exe` among them, after
    /// `PATH`). Resolved once per process.
    pub fn program(&self) -> &Path {
        self.program.get_or_init(|| {
            if let Some(path) = &self.configured {
                return path.clone();
            }
            let local =
                self.home.as_ref().filter(|_| cfg!(unix)).map(|home| home.join(".local/bin/agy"));
            if let Some(local) = local.filter(|local| local.exists()) {
                return local;
            }
            PathBuf::from("agy")
        })
    }

    /// agy's conversation store under the user's home directory; none without a home (a relative
    /// path would name a directory of the project).
    pub fn store(&self) -> Option<Store> {
        self.home.as_deref().map(Store::new)
    }

    /// The file the agy program is now: its real path (links followed), size and modification
    /// time; `None` when it cannot be found.
    fn executable(&self) -> Option<Executable> {
        let program = self.program();
        let found = if program.components().count() > 1 {
            program.to_path_buf()
        } else {
            self.find_bare(program)?
        };
        let path = std::fs::canonicalize(&found).unwrap_or(found);
        let meta = std::fs::metadata(&path).ok()?;
        Some(Executable { path, len: meta.len(), modified: meta.modified().ok() })
    }

    /// The file a bare program name runs, as the executor finds it: in the first `PATH`
    /// directory that has it.
    #[cfg(not(windows))]
    fn find_bare(&self, program: &Path) -> Option<PathBuf> {
        let dirs = self.search_path.as_deref().unwrap_or_default();
        std::env::split_paths(dirs).map(|dir| dir.join(program)).find(|path| path.is_file())
    }

    /// The file a bare program name runs, as the executor finds it on Windows, where
    /// `<dir>\agy` names no file: by the executor's own search.
    #[cfg(windows)]
    fn find_bare(&self, program: &Path) -> Option<PathBuf> {
        let dirs = std::env::split_paths(self.search_path.as_deref().unwrap_or_default());
        let path: Vec<String> = dirs.map(|dir| dir.to_string_lossy().into_owned()).collect();
        self.windows_search(program, &path, &|candidate| Path::new(candidate).is_file())
    }

    /// What the executor's Windows search finds for `program` (`agy.exe` on `PATH` × `PATHEXT`,
    /// then agy's install locations), given `PATH`'s entries and the check of whether a file
    /// exists.
    #[cfg(any(windows, test))]
    fn windows_search(
        &self,
        program: &Path,
        path: &[String],
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<PathBuf> {
        let search = Search {
            path,
            pathext: self.pathext.as_deref(),
            local_app_data: self.local_app_data.as_deref(),
            user_profile: self.home.as_deref().and_then(Path::to_str),
            exists,
        };
        winresolve::find("agy", program.to_str()?, &search).map(PathBuf::from)
    }
}

/// What identifies one build of agy on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Executable {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::TempDir;

    fn agy(pairs: &[(&str, &str)]) -> Agy {
        Agy::new(&Config::from_env(|name| {
            pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        }))
    }

    #[test]
    fn the_local_bin_probe_is_posix_only_and_the_setting_wins() {
        let home = TempDir::new();
        let local = home.file(".local/bin/agy", "");
        let home_var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        let home_path = home.path().to_str().unwrap();
        let expected = if cfg!(unix) { local.as_path() } else { Path::new("agy") };
        assert_eq!(agy(&[(home_var, home_path)]).program(), expected);
        let configured = agy(&[(home_var, home_path), ("AGY_CLI_PATH", " /opt/agy ")]);
        assert_eq!(configured.program(), Path::new("/opt/agy"));
        assert_eq!(agy(&[]).program(), Path::new("agy"));
    }

    #[test]
    fn a_bare_agy_on_path_is_identified_and_its_update_noticed() {
        let bin = TempDir::new();
        let exe = bin.file(if cfg!(windows) { "agy.exe" } else { "agy" }, "build 1");
        let agy = agy(&[("PATH", bin.path().to_str().unwrap())]);
        assert_eq!(agy.program(), Path::new("agy"));
        let before = agy.executable().expect("the bare agy is found on PATH");
        assert_eq!(before.path, std::fs::canonicalize(&exe).unwrap());
        std::fs::write(&exe, "build 2, a longer one").unwrap();
        let after = agy.executable().expect("still found");
        assert_ne!(after, before, "the update is noticed");
    }

    #[test]
    fn on_windows_a_bare_agy_is_found_by_the_executors_search() {
        let home_var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        let agy = agy(&[
            ("PATHEXT", ".COM;.EXE;.CMD"),
            ("LOCALAPPDATA", r"C:\Users\me\AppData\Local"),
            (home_var, r"C:\Users\me"),
        ]);
        let path = [r"C:\empty".to_string(), r"C:\bin".to_string()];
        let found = |files: &[&str]| {
            let exists = |candidate: &str| files.contains(&candidate);
            agy.windows_search(Path::new("agy"), &path, &exists)
        };
        assert_eq!(
            found(&[r"C:\bin\agy", r"C:\bin\agy.exe"]),
            Some(PathBuf::from(r"C:\bin\agy.exe"))
        );
        assert_eq!(found(&[r"C:\bin\agy", r"C:\bin\agy.cmd"]), None);
        let installed = r"C:\Users\me\AppData\Local\agy\bin\agy.exe";
        assert_eq!(found(&[installed]), Some(PathBuf::from(installed)));
        let local_bin = r"C:\Users\me\.local\bin\agy.exe";
        assert_eq!(found(&[local_bin]), Some(PathBuf::from(local_bin)));
    }

    #[test]
    fn without_a_home_there_is_no_conversation_store() {
        assert_eq!(agy(&[]).store(), None);
        let home = TempDir::new();
        let home_var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        let store = agy(&[(home_var, home.path().to_str().unwrap())]).store();
        assert_eq!(store, Some(Store::new(home.path())));
    }

    #[test]
    fn brain_dir_layout() {
        assert_eq!(
            brain_dir(Path::new("/home/u")),
            PathBuf::from("/home/u/.gemini/antigravity-cli/brain")
        );
    }
}
