//! The test harness: a relay process with a transcript, temporary project directories, and the
//! fake CLIs' invocation logs.

#![allow(dead_code)]

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel as unbounded};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The deadline for one expected message (stretched by `slack`).
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// `limit` multiplied by `GEMINI_RELAY_TEST_SLACK` (a whole factor, default 1). Under emulation
/// (`make test-aarch64`) starting a thread or a process is many times slower than natively, so the
/// limits on how fast the relay itself answers take this factor; the deadlines the relay is told
/// to keep do not.
pub fn slack(limit: Duration) -> Duration {
    let factor = match std::env::var("GEMINI_RELAY_TEST_SLACK") {
        Ok(text) => text.trim().parse::<u32>().expect("GEMINI_RELAY_TEST_SLACK is a whole number"),
        Err(_) => 1,
    };
    limit * factor.max(1)
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A directory under the system temp dir, removed on drop.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), name)
    }

    /// A directory under `root` (for example a tmpfs, where files are cheap to create).
    pub fn new_in(root: &Path, name: &str) -> TempDir {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let path =
            root.join("gemini-relay-tests").join(format!("{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempDir { path }
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    /// Writes a file, creating its parent directories.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// The repository's `fixtures/` directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The fake CLI (`fixtures/fake_cli.rs`, the example `fake-cli`) that cargo built beside this test
/// executable (`target/[<triple>/]<profile>/examples`; `cargo test` builds the examples). It plays
/// the CLI it is named after, so tests place it as `agy` or `gemini`.
pub fn fake_program() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap();
    let fake = profile.join("examples").join(format!("fake-cli{}", std::env::consts::EXE_SUFFIX));
    assert!(fake.is_file(), "{} is missing: cargo build --example fake-cli", fake.display());
    fake
}

/// The relay binary under test: `GEMINI_RELAY_BIN` when set (another build of it, such as the
/// aarch64 release binary), else the one cargo built for this test run.
pub fn relay_bin() -> PathBuf {
    match std::env::var_os("GEMINI_RELAY_BIN") {
        Some(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_gemini-relay")),
    }
}

/// A command that starts the relay under test. When `GEMINI_RELAY_RUNNER` is set (for example
/// `qemu-aarch64-static`, words split on whitespace), the relay runs under it; the fake CLIs the
/// relay spawns still run natively.
pub fn relay_command() -> Command {
    command(&relay_argv(&relay_bin()))
}

/// A command that starts `binary` (a copy of or link to the relay under test) as `relay_command`
/// starts the relay.
pub fn relay_command_for(binary: &Path) -> Command {
    command(&relay_argv(binary))
}

/// The runner's words, if any, then `binary`. The runner is found on this process's `PATH`,
/// because tests give the relay a `PATH` of their own.
fn relay_argv(binary: &Path) -> Vec<PathBuf> {
    let runner = std::env::var("GEMINI_RELAY_RUNNER").unwrap_or_default();
    let mut argv: Vec<PathBuf> = runner.split_whitespace().map(PathBuf::from).collect();
    if let Some(program) = argv.first_mut() {
        *program = find_on_path(program);
    }
    argv.push(binary.to_path_buf());
    argv
}

fn command(argv: &[PathBuf]) -> Command {
    let (program, args) = argv.split_first().expect("a program to run");
    let mut cmd = Command::new(program);
    cmd.args(args);
    cmd
}

/// `program` resolved against this process's `PATH` (unchanged when it names a path or is not found).
fn find_on_path(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_path_buf();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// How to start a relay.
pub struct Setup {
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// A command the relay runs under (`prlimit ... --`), if any.
    pub wrapper: Vec<String>,
}

impl Setup {
    pub fn new() -> Setup {
        Setup { env: Vec::new(), cwd: None, wrapper: Vec::new() }
    }

    /// Runs the relay as the last argument of `wrapper` (which must exec it, as `prlimit` does).
    pub fn wrapped(mut self, wrapper: &[&str]) -> Setup {
        self.wrapper = wrapper.iter().map(|arg| arg.to_string()).collect();
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<str>) -> Setup {
        self.env.push((key.to_string(), value.as_ref().to_string()));
        self
    }

    pub fn cwd(mut self, dir: &Path) -> Setup {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    pub fn spawn(self) -> Relay {
        Relay::spawn(self)
    }
}

/// One line the relay wrote, or the end of its stdout.
enum Line {
    Json(Value),
    NotJson(String),
}

/// A running relay and everything it said.
pub struct Relay {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    /// Messages received but not yet consumed by an expectation.
    backlog: VecDeque<Value>,
    transcript: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    next_id: i64,
    pub home: TempDir,
    /// The emulator the relay runs under, when it runs under qemu-user.
    emulator: Option<PathBuf>,
}

impl Relay {
    fn spawn(setup: Setup) -> Relay {
        let home = TempDir::new("home");
        let runner = relay_argv(&relay_bin());
        // Under qemu-user an address-space limit must bind the emulated relay, not the emulator
        // (whose translation buffer alone takes 128 MiB): qemu gives the guest the address space
        // that QEMU_RESERVED_VA names.
        let under_qemu = runner.len() > 1
            && runner[0]
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("qemu-"));
        let guest_limit = match (&setup.wrapper[..], under_qemu) {
            ([prlimit, limit, dashes], true) if prlimit == "prlimit" && dashes == "--" => {
                limit.strip_prefix("--as=").map(str::to_string)
            }
            _ => None,
        };
        let emulator =
            under_qemu.then(|| fs::canonicalize(&runner[0]).unwrap_or(runner[0].clone()));
        let mut argv: Vec<PathBuf> = match guest_limit {
            Some(_) => Vec::new(),
            None => setup.wrapper.iter().map(PathBuf::from).collect(),
        };
        argv.extend(runner);
        let mut cmd = command(&argv);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home.path)
            .env("RUST_LOG", "debug")
            .envs(system_environment(&home.path))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &setup.env {
            cmd.env(key, value);
        }
        if let Some(limit) = &guest_limit {
            cmd.env("QEMU_RESERVED_VA", limit);
        }
        if let Some(cwd) = &setup.cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn().expect("spawn gemini-relay");
        let transcript = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));

        let (tx, rx) = unbounded();
        let stdout = child.stdout.take().unwrap();
        let log = transcript.clone();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                log.lock().unwrap().push(format!("<- {}", truncate(&line)));
                let parsed = match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v.is_object() || v.is_array() => Line::Json(v),
                    _ => Line::NotJson(line),
                };
                if tx.send(parsed).is_err() {
                    break;
                }
            }
        });
        let mut err_pipe = child.stderr.take().unwrap();
        let err_acc = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                err_acc.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdin = child.stdin.take();
        Relay {
            child,
            stdin,
            lines: rx,
            backlog: VecDeque::new(),
            transcript,
            stderr,
            next_id: 1,
            home,
            emulator,
        }
    }

    /// Starts a relay with default settings.
    pub fn start() -> Relay {
        Setup::new().spawn()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether the relay's stderr shows `line`, waiting a little: the harness reads it on a
    /// thread of its own, so a line logged before a response may arrive after it (under Wine
    /// often).
    pub fn logged(&self, line: &str) -> bool {
        let deadline = Instant::now() + slack(Duration::from_secs(5));
        loop {
            if self.stderr().contains(line) {
                return true;
            }
            if Instant::now() >= deadline {
                eprintln!("not logged: {line}\n~~~ relay stderr ~~~\n{}", self.stderr());
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends raw bytes (a newline is not added).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        self.transcript.lock().unwrap().push(format!("-> {}", shown.trim_end()));
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    pub fn close_stdin(&mut self) {
        self.transcript.lock().unwrap().push("-> <EOF>".into());
        self.stdin = None;
    }

    /// The next message, waiting at most `timeout`.
    pub fn recv_within(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        match self.lines.recv_timeout(timeout) {
            Ok(Line::Json(v)) => Some(v),
            Ok(Line::NotJson(line)) => {
                self.fail(&format!("stdout carried a non-protocol line: {line}"))
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    pub fn recv(&mut self) -> Value {
        match self.recv_within(slack(TIMEOUT)) {
            Some(v) => v,
            None => self.fail("no message within the deadline"),
        }
    }

    /// Waits for the message matching `pred`, keeping the others in the backlog.
    pub fn recv_matching(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i).unwrap();
        }
        let deadline = Instant::now() + slack(TIMEOUT);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Line::Json(v)) if pred(&v) => return v,
                Ok(Line::Json(v)) => self.backlog.push_back(v),
                Ok(Line::NotJson(line)) => {
                    self.fail(&format!("stdout carried a non-protocol line: {line}"))
                }
                Err(_) => self.fail(&format!("no {what} within the deadline")),
            }
        }
    }

    /// The response to request `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.recv_matching(&format!("response to {id}"), move |v| {
            v.get("id") == Some(&id) && (v.get("result").is_some() || v.get("error").is_some())
        })
    }

    /// Sends a request with the next integer id and waits for its response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(&id)
    }

    /// Sends a request and returns its id without waiting.
    pub fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        self.notify("notifications/initialized", json!({}));
        r
    }

    /// Calls a tool and returns the `result` (panics with the transcript on a JSON-RPC error).
    pub fn call(&mut self, name: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        match r.get("result") {
            Some(result) => result.clone(),
            None => self.fail(&format!("tools/call {name} failed: {r}")),
        }
    }

    /// Calls a tool and returns its text and isError.
    pub fn call_text(&mut self, name: &str, args: Value) -> (String, bool) {
        let result = self.call(name, args);
        let text = result["content"][0]["text"].as_str().unwrap_or_default().to_string();
        (text, result["isError"].as_bool().unwrap_or(false))
    }

    /// Progress notifications for `token` seen so far (consumed from the backlog), in order.
    pub fn take_progress(&mut self, token: &Value) -> Vec<Value> {
        while let Ok(Line::Json(v)) = self.lines.try_recv() {
            self.backlog.push_back(v);
        }
        let mut taken = Vec::new();
        self.backlog.retain(|v| {
            let mine =
                v["method"] == "notifications/progress" && v["params"]["progressToken"] == *token;
            if mine {
                taken.push(v["params"].clone());
            }
            !mine
        });
        taken
    }

    /// Everything the relay sent that no expectation consumed yet.
    pub fn drain(&mut self, wait: Duration) -> Vec<Value> {
        let deadline = Instant::now() + wait;
        let mut all: Vec<Value> = self.backlog.drain(..).collect();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Line::Json(v)) => all.push(v),
                Ok(Line::NotJson(line)) => self.fail(&format!("non-protocol line: {line}")),
                Err(_) => return all,
            }
        }
    }

    /// Waits for the process to exit, up to `timeout`. Under qemu-user, a child of the relay that
    /// is still the emulator when the time is up was forked but never reached `exec`: qemu-user 7.2
    /// now and then deadlocks in the forked child of a many-threaded guest, and the relay's spawn
    /// then never returns. Such a child is an emulator artefact, not a CLI: it is killed (the spawn
    /// returns), and the wait starts once more.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        if let Some(status) = self.wait_exit_once(timeout) {
            return Some(status);
        }
        let stuck = self.stuck_emulator_children();
        if stuck.is_empty() {
            return None;
        }
        for pid in &stuck {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        let note =
            format!("harness: killed forked emulator children that never reached exec: {stuck:?}");
        eprintln!("{note}");
        self.transcript.lock().unwrap().push(note);
        self.wait_exit_once(timeout)
    }

    /// Children of the relay that still run the emulator's own image (qemu only).
    fn stuck_emulator_children(&self) -> Vec<u32> {
        let Some(emulator) = &self.emulator else { return Vec::new() };
        let relay = self.pid();
        let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
        let mut stuck = Vec::new();
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
            // The fields after the command name, which ends at the last ')': state, then ppid.
            let Some((_, rest)) = stat.rsplit_once(')') else { continue };
            let ppid = rest.split_whitespace().nth(1).and_then(|field| field.parse::<u32>().ok());
            let exe = fs::read_link(entry.path().join("exe")).ok();
            if ppid == Some(relay) && exe.as_ref() == Some(emulator) {
                stuck.push(pid);
            }
        }
        stuck
    }

    fn wait_exit_once(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Panics with the whole transcript and the relay's stderr.
    pub fn fail(&self, what: &str) -> ! {
        let transcript = self.transcript.lock().unwrap().join("\n");
        panic!(
            "{what}\n~~~ transcript ~~~\n{transcript}\n~~~ relay stderr ~~~\n{}\n~~~",
            self.stderr()
        );
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stdin = None;
        if self.wait_exit(Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn truncate(line: &str) -> String {
    if line.len() <= 600 {
        return line.to_string();
    }
    let mut end = 600;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &line[..end], line.len())
}

/// `path` as the relay shows it to a person: on Windows without the `\\?\` prefix that canonical
/// paths carry there.
pub fn shown_path(path: &Path) -> String {
    let text = path.display().to_string();
    match text.strip_prefix(r"\\?\") {
        Some(rest) if cfg!(windows) && !rest.starts_with("UNC") => rest.to_string(),
        _ => text,
    }
}

/// Sets a directory's modification time (Windows opens a directory only with backup semantics,
/// and changes its times only through a handle opened for writing).
pub fn set_dir_modified(dir: &Path, when: std::time::SystemTime) {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
        options.write(true).custom_flags(FILE_FLAG_BACKUP_SEMANTICS);
    }
    options.open(dir).unwrap().set_modified(when).unwrap();
}

/// What a Windows program needs from its environment besides `PATH`: the system's directories and
/// temporary directory, and `USERPROFILE`, the home there (the test's own home). None on POSIX.
pub fn system_environment(home: &Path) -> Vec<(String, std::ffi::OsString)> {
    if !cfg!(windows) {
        return Vec::new();
    }
    let mut vars: Vec<(String, std::ffi::OsString)> =
        ["SystemRoot", "windir", "TEMP", "TMP", "PATHEXT"]
            .into_iter()
            .filter_map(|key| Some((key.to_string(), std::env::var_os(key)?)))
            .collect();
    vars.push(("USERPROFILE".to_string(), home.as_os_str().to_owned()));
    vars
}

/// `PATH` for a relay or a fake: `dirs` first, then the system's directories for programs (on
/// POSIX the usual bin directories, on Windows the system32 and Windows directories), joined with
/// the system's separator.
pub fn path_with(dirs: &[&Path]) -> std::ffi::OsString {
    let mut all: Vec<PathBuf> = dirs.iter().map(|dir| dir.to_path_buf()).collect();
    if cfg!(windows) {
        let root = PathBuf::from(std::env::var_os("SystemRoot").unwrap_or(r"C:\windows".into()));
        all.extend([root.join("system32"), root]);
    } else {
        all.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    }
    std::env::join_paths(all).expect("PATH entries without the separator")
}

/// Processes whose environment carries `marker` (every child of a test run gets one), found
/// through `/proc`; a Linux whose `/proc` cannot be read fails the test. Without `/proc` (macOS,
/// Windows) this finds nothing, and `Fakes::leftovers` relies on what the fakes logged.
pub fn marked_processes(marker: &str) -> Vec<u32> {
    let needle = marker.as_bytes();
    let mut pids = Vec::new();
    if cfg!(windows) {
        return pids;
    }
    let entries = match fs::read_dir("/proc") {
        Ok(entries) => entries,
        Err(err) if cfg!(target_os = "linux") => panic!("cannot read /proc: {err}"),
        Err(_) => return pids,
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(environ) = fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|var| var == needle) {
            // Zombies keep no environment readable, so a hit is a live (or not yet reaped) process.
            pids.push(pid);
        }
    }
    pids
}

/// Live processes (not zombies) that are one of `pids` or belong to one of the process groups
/// `pgids`, from one `ps` listing; works on every POSIX system, `/proc` or not. A `ps` that cannot
/// run or list fails the test.
#[cfg(unix)]
pub fn live_processes_of(pids: &HashSet<u32>, pgids: &HashSet<u32>) -> Vec<u32> {
    let out = Command::new("ps").args(["-A", "-o", "pid=,pgid=,stat="]).output().expect("ps runs");
    assert!(out.status.success(), "ps -A failed: {}", String::from_utf8_lossy(&out.stderr));
    let listing = String::from_utf8_lossy(&out.stdout);
    let mut live = Vec::new();
    let mut rows = 0;
    for line in listing.lines() {
        let mut fields = line.split_whitespace();
        let (Some(pid), Some(pgid), Some(stat)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Ok(pid), Ok(pgid)) = (pid.parse::<u32>(), pgid.parse::<u32>()) else { continue };
        rows += 1;
        if !stat.starts_with('Z') && (pids.contains(&pid) || pgids.contains(&pgid)) {
            live.push(pid);
        }
    }
    // At least this test process and `ps` itself are listed.
    assert!(rows >= 2, "ps -A listed no processes:\n{listing}");
    live
}

/// Live processes among `pids`, each asked through a handle to it: Windows has no process
/// groups (a run's tree is its Job Object), so `pgids` is empty there.
#[cfg(windows)]
pub fn live_processes_of(pids: &HashSet<u32>, pgids: &HashSet<u32>) -> Vec<u32> {
    assert!(pgids.is_empty(), "Windows has no process groups: {pgids:?}");
    pids.iter().copied().filter(|pid| winproc::is_running(*pid)).collect()
}

/// Processes asked through handles, for the leftover checks on Windows.
#[cfg(windows)]
pub mod winproc {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE,
        TerminateProcess,
    };

    /// Whether process `pid` still runs: it can be opened and has no exit code yet. A process
    /// that ended and whose last handle closed cannot be opened.
    pub fn is_running(pid: u32) -> bool {
        // SAFETY: OpenProcess takes an access mask, a flag and a pid; the handle is checked, used
        // for one query and closed here.
        #[allow(unsafe_code)]
        unsafe {
            let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
            if handle.is_null() {
                return false;
            }
            let mut code = 0u32;
            let asked = GetExitCodeProcess(handle, &mut code);
            CloseHandle(handle);
            asked != 0 && code == STILL_ACTIVE as u32
        }
    }

    /// Ends process `pid`, if it can be opened.
    pub fn kill(pid: u32) {
        // SAFETY: as in `is_running`: the handle is checked, used once and closed here.
        #[allow(unsafe_code)]
        unsafe {
            let handle = OpenProcess(PROCESS_TERMINATE, 0, pid);
            if !handle.is_null() {
                TerminateProcess(handle, 1);
                CloseHandle(handle);
            }
        }
    }
}

/// Waits until no process carries `marker`, up to `timeout`; returns the survivors.
pub fn wait_no_marked(marker: &str, timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = marked_processes(marker);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A unique marker value for `marked_processes`.
pub fn marker() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("GEMINI_RELAY_TEST_MARK={}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// The fake CLIs wired into a relay: a bin dir with `gemini` and `agy` on PATH, the invocation log
/// and a marker that every spawned child inherits.
pub struct Fakes {
    pub bin: TempDir,
    pub log: PathBuf,
    pub marker: String,
}

/// One invocation of a fake, as its log recorded it.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub record: Value,
}

impl Fakes {
    /// The fake CLI program, which plays the CLI it is named after: as `agy`, and on POSIX as
    /// `gemini`. On Windows gemini is laid out as npm installs it: `gemini.cmd` (the cmd-shim in
    /// `fixtures/npm/`) beside `node.exe` (the fake) and the script the shim names, so every gemini
    /// run goes through the relay's reading of the shim.
    pub fn new() -> Fakes {
        let bin = TempDir::new("bin");
        // The fake must carry the CLI's name. On POSIX a hard link where the file system allows
        // one, else a copy, so that no test holds a file open for writing that another test's
        // relay is about to run (exec fails then); on Windows a copy, since Wine refuses a link to
        // a program that is running.
        let place = |name: &str| {
            let path = bin.join(&format!("{name}{}", std::env::consts::EXE_SUFFIX));
            let program = fake_program();
            let linked = !cfg!(windows) && fs::hard_link(&program, &path).is_ok();
            if !linked {
                fs::copy(&program, &path).unwrap();
            }
        };
        place("agy");
        if cfg!(windows) {
            place("node");
            fs::copy(fixtures().join("npm/gemini.cmd"), bin.join("gemini.cmd")).unwrap();
            bin.write(NPM_GEMINI_SCRIPT, "// stands for the Gemini CLI; node.exe is the fake\n");
        } else {
            place("gemini");
        }
        let log = bin.join("fake.log");
        Fakes { bin, log, marker: marker() }
    }

    /// The agy the relay is pointed at.
    pub fn agy(&self) -> PathBuf {
        self.bin.join(&format!("agy{}", std::env::consts::EXE_SUFFIX))
    }

    /// Writes `text` to a file for a `FAKE_*_FILE` knob and returns its path: Windows caps one
    /// environment variable at 32,767 characters (Linux at 128 KiB).
    pub fn file(&self, name: &str, text: &str) -> String {
        self.bin.write(name, text).display().to_string()
    }

    /// A relay setup using these fakes (agy through `AGY_CLI_PATH`, gemini through PATH).
    pub fn setup(&self) -> Setup {
        let (key, value) = self.marker.split_once('=').unwrap();
        let path = path_with(&[&self.bin.path]);
        Setup::new()
            .env("PATH", path.to_str().expect("a UTF-8 PATH"))
            .env("AGY_CLI_PATH", self.agy().display().to_string())
            .env("FAKE_LOG", self.log.display().to_string())
            .env(key, value)
    }

    /// Every start record so far, in order.
    pub fn runs(&self) -> Vec<Invocation> {
        self.records()
            .into_iter()
            .filter(|r| r["event"] == "start")
            .map(|record| Invocation { record })
            .collect()
    }

    /// Prompt runs only (not `--help`, `--version`, `models`, `/usage`).
    pub fn prompt_runs(&self) -> Vec<Invocation> {
        self.runs().into_iter().filter(|r| r.record["kind"] == "run").collect()
    }

    pub fn records(&self) -> Vec<Value> {
        let Ok(text) = fs::read_to_string(&self.log) else { return Vec::new() };
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }

    /// Processes of this test's fakes still alive (the relay itself excluded): those that carry
    /// the marker (through `/proc`), and, on every system, each fake that logged its start, its
    /// process group and its logged grandchild (through `ps`).
    pub fn leftovers(&self, relay_pid: u32, within: Duration) -> Vec<u32> {
        let deadline = Instant::now() + within;
        loop {
            let (mut pids, mut pgids) = (HashSet::new(), HashSet::new());
            for run in self.runs() {
                let id = |key: &str| run.record[key].as_u64().map(|id| id as u32);
                pids.extend([id("pid"), id("grandchild")].into_iter().flatten());
                pgids.extend(id("pgid").filter(|pgid| *pgid > 1));
            }
            let mut left = marked_processes(&self.marker);
            left.extend(live_processes_of(&pids, &pgids));
            left.retain(|pid| *pid != relay_pid);
            left.sort_unstable();
            left.dedup();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Where npm's gemini shim finds its script, relative to the shim.
const NPM_GEMINI_SCRIPT: &str = "node_modules/@google/gemini-cli/dist/index.js";

/// The prompt the fake agy received on its last run (the stream-json line's content).
pub fn last_agy_prompt(fakes: &Fakes) -> String {
    let stdin = fakes.prompt_runs().last().expect("a prompt run").stdin().unwrap();
    let line: Value = serde_json::from_slice(&stdin).unwrap();
    line["message"]["content"].as_str().unwrap().to_string()
}

/// Waits until the fakes logged `n` prompt runs (the child is up).
pub fn wait_for_runs(fakes: &Fakes, n: usize) {
    let deadline = Instant::now() + slack(TIMEOUT);
    while fakes.prompt_runs().len() < n {
        assert!(Instant::now() < deadline, "the fake never started");
        thread::sleep(Duration::from_millis(10));
    }
}

impl Invocation {
    pub fn argv(&self) -> Vec<String> {
        self.record["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    }

    /// The exact bytes the fake read from stdin (`None` when it read nothing).
    pub fn stdin(&self) -> Option<Vec<u8>> {
        let path = self.record["stdin"].as_str()?;
        fs::read(path).ok()
    }

    /// What the fake read from stdin, as text (empty when it read nothing).
    pub fn stdin_text(&self) -> String {
        String::from_utf8_lossy(&self.stdin().unwrap_or_default()).into_owned()
    }

    pub fn pid(&self) -> i64 {
        self.record["pid"].as_i64().unwrap()
    }

    pub fn pgid(&self) -> i64 {
        self.record["pgid"].as_i64().unwrap()
    }
}

/// A `FAKE_AGY_STREAM_SCRIPT` whose answer comes in several events, pausing after each stage: a
/// tool step, an event line split across writes with a character split between two of them, a
/// UTF-16 surrogate pair split across two events, and a line that is not JSON.
pub const STAGED_STREAM: &str = concat!(
    "{\"event\":\"init\",\"init\":{\"model\":\"gemini-3.8-flash-low\"}}\n",
    "{\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"Hello, \"}}\n",
    "sleep 1.2\n",
    "{\"event\":\"step_update\",\"step_update\":{\"tool_call\":{\"name\":\"read_file\"}}}\n",
    "part:{\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"world d\n",
    "bytes:\\303\n",
    "sleep 0.3\n",
    "bytes:\\255\n",
    "a \\ud83d\"}}\n",
    "{\"event\":\"step_update\",\"step_update\":{\"text_delta\":\"\\ude00!\\n\"}}\n",
    "Loading tools...\n",
    "sleep 1.2",
);

/// The preview of `STAGED_STREAM` after its first event, and at its end.
pub const STAGED_FIRST: &str = "Hello,";
pub const STAGED_ALL: &str = "Hello, \n🔧 read_file\nworld día 😀!\nLoading tools...";

/// The peak resident set size of process `pid` so far, in KiB (`VmHWM` in `/proc` on Linux).
/// Without `/proc` (macOS) it is the current resident set from `ps`, so a caller that polls it sees
/// the largest of its samples rather than the true peak; a `ps` that cannot run fails the test.
pub fn peak_rss_kb(pid: u32) -> u64 {
    if cfg!(target_os = "linux") {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        return line.split_whitespace().nth(1).unwrap().parse().unwrap();
    }
    let out = Command::new("ps").args(["-o", "rss=", "-p", &pid.to_string()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or_else(|_| panic!("ps -o rss= -p {pid} printed {text:?}"))
}
