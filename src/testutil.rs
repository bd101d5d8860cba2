//! Test-only helpers shared by the unit tests: a temporary directory removed on drop, setting a
//! file's mtime, making a FIFO, whether a process still runs, the calling thread's CPU time, and a
//! tiny xorshift generator for property-style tests.

// Some helpers serve only the POSIX file-system tests, which Windows leaves out.
#![cfg_attr(not(unix), allow(dead_code))]

#[cfg(unix)]
use std::ffi::CString;
use std::fs::{self, File};
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
#[cfg(unix)]
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// A fresh, canonicalized directory under `std::env::temp_dir()`, removed on drop.
pub struct TempDir(PathBuf);

/// A xorshift64 generator: deterministic, fast, and good enough to vary test inputs.
pub struct XorShift(u64);

/// Sets the modification time of the file or directory at `path`.
pub fn set_mtime(path: &Path, mtime: SystemTime) {
    File::open(path).unwrap().set_modified(mtime).unwrap();
}

#[cfg(unix)]
/// Makes a FIFO (named pipe) at `path`: opening one for reading or writing blocks until the
/// other end is opened, which is what the relay must never do.
pub fn mkfifo(path: &Path) {
    let path = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) reads a NUL-terminated path that outlives the call.
    #[allow(unsafe_code)]
    let made = unsafe { libc::mkfifo(path.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

#[cfg(unix)]
/// Whether `pid` exists and is not a zombie (an orphan may wait a while to be reaped). Works
/// without `/proc`: `kill(pid, 0)` says whether the process exists, and its state comes from
/// `/proc` on Linux and from `ps` elsewhere; a `ps` that cannot run fails the test.
pub fn is_running(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process exists; it touches no memory.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, 0) };
    if rc != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    !matches!(process_state(pid), None | Some('Z' | 'X'))
}

/// The one-letter state of `pid` (`R`, `S`, `Z`…), `None` when it is gone.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn process_state(pid: i32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next())
}

/// The one-letter state of `pid` (`R`, `S`, `Z`…), `None` when it is gone.
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
fn process_state(pid: i32) -> Option<char> {
    #[allow(clippy::disallowed_methods)]
    let out = std::process::Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .expect("ps runs");
    String::from_utf8_lossy(&out.stdout).trim().chars().next()
}

/// The CPU time the calling thread has used (unlike wall time, not inflated when other processes
/// keep the machine busy).
#[cfg(unix)]
pub fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The CPU time the calling thread has used: its kernel and user times from `GetThreadTimes`.
#[cfg(windows)]
pub fn thread_cpu_time() -> Duration {
    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Threading::{GetCurrentThread, GetThreadTimes};

    let mut times = [FILETIME { dwLowDateTime: 0, dwHighDateTime: 0 }; 4];
    let [creation, exit, kernel, user] = &mut times;
    // SAFETY: GetThreadTimes writes one FILETIME to each of the four valid pointers; the pseudo
    // handle of the current thread needs no closing.
    #[allow(unsafe_code)]
    let ok = unsafe { GetThreadTimes(GetCurrentThread(), creation, exit, kernel, user) };
    assert_ne!(ok, 0, "GetThreadTimes: {}", std::io::Error::last_os_error());
    let hundreds =
        |time: &FILETIME| (u64::from(time.dwHighDateTime) << 32) | u64::from(time.dwLowDateTime);
    Duration::from_nanos((hundreds(&times[2]) + hundreds(&times[3])) * 100)
}

impl TempDir {
    /// Creates an empty directory named after the process id and a per-process counter.
    pub fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("gemini-relay-test-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(fs::canonicalize(&dir).unwrap())
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `contents` to `rel` (creating parent directories) and returns its path.
    pub fn file(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        path
    }

    /// Creates the directory `rel` (and its parents) and returns its path.
    pub fn dir(&self, rel: &str) -> PathBuf {
        let path = self.0.join(rel);
        fs::create_dir_all(&path).unwrap();
        path
    }

    /// Creates a symbolic link at `rel` pointing to `target` and returns the link's path.
    #[cfg(unix)]
    pub fn link(&self, rel: &str, target: &Path) -> PathBuf {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, &path).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

impl XorShift {
    /// A generator started from `seed`, which must not be zero (zero is a fixed point).
    pub fn new(seed: u64) -> XorShift {
        assert_ne!(seed, 0, "a xorshift seed must not be zero");
        XorShift(seed)
    }

    /// The next 64-bit value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (`n` must not be zero).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

// FIFOs and symlinks: POSIX only.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn temp_dir_creates_and_removes() {
        let dir = TempDir::new();
        let root = dir.path().to_path_buf();
        assert_eq!(fs::canonicalize(&root).unwrap(), root);
        let file = dir.file("a/b.txt", b"hello");
        assert_eq!(file, root.join("a/b.txt"));
        assert_eq!(fs::read(&file).unwrap(), b"hello");
        assert!(dir.dir("c/d").is_dir());
        mkfifo(&root.join("fifo"));
        assert!(fs::symlink_metadata(root.join("fifo")).unwrap().file_type().is_fifo());
        let link = dir.link("e/link", &file);
        assert_eq!(fs::read_link(&link).unwrap(), file);
        assert_ne!(TempDir::new().path(), root);
        let then = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400);
        set_mtime(&file, then);
        assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), then);
        drop(dir);
        assert!(!root.exists());
    }

    #[test]
    fn a_process_runs_until_it_is_reaped_or_a_zombie() {
        #[allow(clippy::disallowed_methods)]
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        assert!(is_running(pid));
        child.kill().unwrap();
        // Killed but not yet reaped: a zombie, which does not count as running.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while is_running(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!is_running(pid), "a killed child is a zombie until reaped");
        child.wait().unwrap();
        assert!(!is_running(pid));
        assert!(is_running(std::process::id() as i32));
    }

    #[test]
    fn thread_cpu_time_counts_work_not_sleep() {
        let before = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(50));
        let slept = thread_cpu_time() - before;
        let mut x = 1u64;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(1));
        }
        let worked = thread_cpu_time() - before - slept;
        assert!(slept < Duration::from_millis(40), "sleeping used {slept:?} of CPU");
        assert!(worked > Duration::from_millis(1), "50 ms of work used {worked:?} of CPU");
    }

    #[test]
    fn xorshift_sequence_is_the_classic_one() {
        let mut rng = XorShift::new(1);
        assert_eq!(rng.next(), 1_082_269_761);
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let first = rng.next();
        let mut again = XorShift::new(0x9e37_79b9_7f4a_7c15);
        assert_eq!(again.next(), first);
        assert!((0..1_000).all(|_| rng.below(7) < 7));
    }
}
