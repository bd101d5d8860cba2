//! The agy (Antigravity CLI) backend: its process-wide state (`Agy`), capabilities, argv, output and
//! transcript parsing (pure), and the run ladder in `run`, the only part that spawns (through the
//! call's runner).

pub mod args;
pub mod caps;
pub mod endings;
pub mod failure;
pub mod json;
pub mod output;
pub mod run;
pub mod stream;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::backend::agy::caps::AgyCaps;
use crate::backend::agy::transcript::Store;
use crate::backend::notfound::not_found_text;
use crate::config::Config;
use crate::exec::{Identity, Program};

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
    /// `AGY_CLI_PATH` if set, else (POSIX) `~/.local/bin/agy` if it exists, else `agy` found on
    /// `PATH` at spawn; on Windows `agy.exe` on `PATH`, then agy's install locations. Located once.
    program: Program,
    home: Option<PathBuf>,
    /// The capabilities probed by the last agy run, and the executable they were probed on: a run
    /// probes again when that file is no longer the same (`agy update`).
    caps: Mutex<Option<(Option<Identity>, AgyCaps)>>,
    /// The `--print-timeout` value: `AGY_PRINT_TIMEOUT`, else derived to stay under the deadline.
    print_timeout: String,
    /// `AGY_MCP_PTY`.
    pty: bool,
}

impl Agy {
    pub fn new(config: &Config) -> Agy {
        let configured = config.agy_cli_path.clone();
        Agy {
            program: Program::locate("agy", configured, &config.search, not_found_text),
            home: config.search.home.clone(),
            caps: Mutex::new(None),
            print_timeout: args::print_timeout_value(
                config.agy_print_timeout.as_deref(),
                config.timeout.as_millis() as u64,
            ),
            pty: config.agy_pty,
        }
    }

    /// The agy binary as named: the configured path, the file found, or the bare name.
    pub fn program(&self) -> &Path {
        self.program.path()
    }

    /// agy's conversation store under the user's home directory; none without a home (a relative
    /// path would name a directory of the project).
    pub fn store(&self) -> Option<Store> {
        self.home.as_deref().map(Store::new)
    }

    /// The file the agy program is now; `None` when it cannot be found.
    fn executable(&self) -> Option<Identity> {
        self.program.identity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::exec::{self, SearchEnv, System};
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
        let home_var = SearchEnv::HOME_VAR;
        let home_path = home.path().to_str().unwrap();
        let expected = match exec::SYSTEM {
            System::Posix => local.as_path(),
            System::Windows => Path::new("agy"),
        };
        assert_eq!(agy(&[(home_var, home_path)]).program(), expected);
        let configured = agy(&[(home_var, home_path), ("AGY_CLI_PATH", " /opt/agy ")]);
        assert_eq!(configured.program(), Path::new("/opt/agy"));
        assert_eq!(agy(&[]).program(), Path::new("agy"));
    }

    #[test]
    fn a_bare_agy_on_path_is_identified_and_its_update_noticed() {
        let bin = TempDir::new();
        let name = match exec::SYSTEM {
            System::Posix => "agy",
            System::Windows => "agy.exe",
        };
        let exe = bin.file(name, "build 1");
        let agy = agy(&[("PATH", bin.path().to_str().unwrap())]);
        assert_eq!(agy.program(), Path::new("agy"));
        let before = agy.executable().expect("the bare agy is found on PATH");
        assert_eq!(before.path, std::fs::canonicalize(&exe).unwrap());
        std::fs::write(&exe, "build 2, a longer one").unwrap();
        let after = agy.executable().expect("still found");
        assert_ne!(after, before, "the update is noticed");
    }

    #[test]
    fn without_a_home_there_is_no_conversation_store() {
        assert_eq!(agy(&[]).store(), None);
        let home = TempDir::new();
        let home_var = SearchEnv::HOME_VAR;
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
