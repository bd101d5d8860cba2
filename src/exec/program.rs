//! Which program runs: a `Program` is located once from the configuration (a configured path used
//! as given, else the CLI's own search) and is what the executor spawns: a path, the arguments
//! that lead the CLI's own (an npm shim's `node.exe <script>`), or why nothing can run. This is the
//! only code that reads `PATH`, `PATHEXT`, `LOCALAPPDATA` and the home directory; the search itself
//! differs per system (`unix.rs`, `windows.rs` with `winresolve.rs`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

use super::{Failure, sys};

/// What the search for a program reads from the environment, read once at startup, each value
/// as the system gives it (never required to be UTF-8).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// `PATH`.
    pub path: Option<OsString>,
    /// `PATHEXT` (read by the Windows search).
    pub pathext: Option<OsString>,
    /// `LOCALAPPDATA` (read by the Windows search).
    pub local_app_data: Option<OsString>,
    /// The user's home directory (`HOME`; `USERPROFILE` on Windows), when set and non-empty.
    pub home: Option<PathBuf>,
}

impl SearchEnv {
    /// The variable that names the user's home directory. On Windows it is `USERPROFILE`, with no
    /// fallback to `HOME`: that is where the CLIs keep their files there (Go's and Node's home
    /// lookups read `USERPROFILE` and never `HOME` on Windows), while `HOME`, when set at all, is
    /// Git Bash's or MSYS's own idea of a home.
    pub const HOME_VAR: &'static str = sys::HOME_VAR;

    /// Reads the variables through `get` (the process environment in production).
    pub fn read(get: &dyn Fn(&str) -> Option<OsString>) -> SearchEnv {
        SearchEnv {
            path: get("PATH"),
            pathext: get("PATHEXT"),
            local_app_data: get("LOCALAPPDATA"),
            home: get(Self::HOME_VAR).filter(|home| !home.is_empty()).map(PathBuf::from),
        }
    }
}

/// The text a user reads for a program that cannot be found, by its name; written by the backend
/// that knows the CLI.
pub type NotFoundText = fn(&str) -> String;

/// One program the relay runs, located on first use and then kept for the process.
pub struct Program {
    name: &'static str,
    configured: Option<PathBuf>,
    env: SearchEnv,
    not_found: NotFoundText,
    located: OnceLock<Located>,
}

/// What a search found: the file the CLI is as named (the configured path, the file found, or the
/// bare name the system searches at spawn), and what to spawn for it.
pub(super) struct Located {
    pub(super) named: PathBuf,
    pub(super) launch: Result<Launch, Missing>,
}

/// What to spawn: `program`, with `leading` before the CLI's own arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Launch {
    pub(super) program: OsString,
    pub(super) leading: Vec<String>,
}

/// Why a search gives nothing to spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(dead_code, reason = "only the Windows search, which reads npm shims, finds nothing")]
pub(super) enum Missing {
    /// Nothing found for `name` (the CLI, or the program its shim runs, such as `node`).
    NotFound { name: String },
    /// A file the relay refuses to run, for the reason the text says whole.
    Refused { text: String },
}

/// What identifies one build of a program on disk: its real path (links followed), size and
/// modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub path: PathBuf,
    pub len: u64,
    pub modified: Option<SystemTime>,
}

impl Program {
    /// The CLI `name` (`agy`, `gemini`): `configured` (`AGY_CLI_PATH`, `GEMINI_CLI_PATH`) used as
    /// given, else the CLI's search over `env`. `not_found` writes the text of a missing program.
    pub fn locate(
        name: &'static str,
        configured: Option<PathBuf>,
        env: &SearchEnv,
        not_found: NotFoundText,
    ) -> Program {
        Program { name, configured, env: env.clone(), not_found, located: OnceLock::new() }
    }

    /// Another program (`script`), run by its bare name: the system finds it on `PATH` at spawn.
    pub fn named(name: &'static str, not_found: NotFoundText) -> Program {
        let located = OnceLock::from(bare(name));
        Program { name, configured: None, env: SearchEnv::default(), not_found, located }
    }

    /// The logical name, used in messages and logs.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The CLI as named: the configured path, the file the search found, or the bare name.
    pub fn path(&self) -> &Path {
        &self.located().named
    }

    /// What to spawn, or the failure of a run that cannot start.
    pub(super) fn launch(&self) -> Result<&Launch, Failure> {
        self.located().launch.as_ref().map_err(|missing| match missing {
            Missing::NotFound { name } => self.not_found(name),
            Missing::Refused { text } => Failure::Refused { text: text.clone() },
        })
    }

    /// The failure of a spawn that found no program named `name`.
    pub(super) fn not_found(&self, name: &str) -> Failure {
        Failure::NotFound { name: name.to_string(), text: (self.not_found)(name) }
    }

    /// The file the program is now, to notice an update on disk (`agy update`); `None` when it
    /// cannot be found. A bare name is looked up in the `PATH` directories, as the system does.
    pub fn identity(&self) -> Option<Identity> {
        let program = Path::new(&self.located().launch.as_ref().ok()?.program);
        let found = if program.components().count() > 1 {
            program.to_path_buf()
        } else {
            let dirs = self.env.path.as_deref().unwrap_or_default();
            std::env::split_paths(dirs).map(|dir| dir.join(program)).find(|it| it.is_file())?
        };
        let path = std::fs::canonicalize(&found).unwrap_or(found);
        let meta = std::fs::metadata(&path).ok()?;
        Some(Identity { path, len: meta.len(), modified: meta.modified().ok() })
    }

    fn located(&self) -> &Located {
        self.located.get_or_init(|| {
            let configured = self.configured.as_deref().filter(|path| !path.as_os_str().is_empty());
            sys::locate(self.name, configured, &self.env)
        })
    }
}

/// A configured path as given, else nothing: the first step of every search.
pub(super) fn as_given(configured: Option<&Path>) -> Option<Located> {
    let path = configured?;
    let launch = Launch { program: path.as_os_str().to_os_string(), leading: Vec::new() };
    Some(Located { named: path.to_path_buf(), launch: Ok(launch) })
}

/// The bare `name`, which the system searches on `PATH` at spawn.
pub(super) fn bare(name: &str) -> Located {
    let launch = Launch { program: OsStr::new(name).to_os_string(), leading: Vec::new() };
    Located { named: PathBuf::from(name), launch: Ok(launch) }
}
