//! The POSIX side of `exec`: a child leads a process group of its own, and one signal to the group
//! kills it together with everything it spawned (and whatever it left behind when it exited, seen
//! before the child is reaped); a CLI is the configured path, `~/.local/bin/agy`, or the bare name
//! the system finds on `PATH` at spawn.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::program::{self, Launch, Located, SearchEnv};
use super::{Failure, System};

/// The system family this build runs on.
pub(super) const SYSTEM: System = System::Posix;

/// The variable that names the user's home directory.
pub(super) const HOME_VAR: &str = "HOME";

/// Whether `script` takes BSD's arguments (`script -q /dev/null <command>`) rather than
/// util-linux's (`script -q -c <command> /dev/null`).
pub(super) const BSD_SCRIPT: bool = cfg!(target_os = "macos");

/// The CLI `name`: the configured path as given; for agy, else `~/.local/bin/agy` when it exists
/// (where its installer puts it); else the bare name, found on `PATH` by the system at spawn.
pub(super) fn locate(name: &str, configured: Option<&Path>, env: &SearchEnv) -> Located {
    if let Some(located) = program::as_given(configured) {
        return located;
    }
    let local = env.home.as_ref().filter(|_| name == "agy").map(|home| home.join(".local/bin/agy"));
    if let Some(local) = local.filter(|local| local.exists()) {
        return program::as_given(Some(&local)).unwrap_or_else(|| program::bare(name));
    }
    program::bare(name)
}

/// Nothing to check before spawning: each argument's own limit is checked by the backends.
pub(super) fn check_launch(_name: &str, _launch: &Launch, _args: &[String]) -> Result<(), Failure> {
    Ok(())
}

/// Whether `child` exited within `within`, without reaping it: while it is a zombie its pid and
/// its process group stay reserved, so its tree can still be killed safely.
pub(super) fn exited(child: &mut Child, within: Duration) -> io::Result<bool> {
    let start = Instant::now();
    let deadline = start + within;
    loop {
        if has_exited(child.id())? {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep(nap(now - start).min(deadline - now));
    }
}

/// How long to sleep between two looks at a child that has run for `ran`: a CLI that answers at
/// once is seen within 0.1 ms of its exit (measured: a first nap of 1 ms cost a quick call about
/// 0.4 ms of median overhead), and a long run costs a look every 16 ms.
fn nap(ran: Duration) -> Duration {
    match ran.as_millis() {
        0..10 => Duration::from_micros(100),
        10..100 => Duration::from_millis(2),
        _ => Duration::from_millis(16),
    }
}

/// `waitid` with `WNOWAIT`: whether the child `pid` has exited, leaving it to be reaped.
fn has_exited(pid: u32) -> io::Result<bool> {
    // SAFETY: siginfo_t is plain data, valid when zeroed.
    #[allow(unsafe_code)]
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let options = libc::WEXITED | libc::WNOWAIT | libc::WNOHANG;
    // SAFETY: `info` is a writable siginfo_t for the whole call; the pid is our own child's.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, options) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::Interrupted => Ok(false),
            _ => Err(err),
        };
    }
    // SAFETY: waitid filled `info` (or left it zeroed when the child has not changed state).
    #[allow(unsafe_code)]
    let reported = unsafe { info.si_pid() };
    Ok(reported != 0)
}

/// A child's process tree: the process group it leads.
#[derive(Debug)]
pub(super) struct Tree {
    pgid: i32,
}

/// Makes the child lead a process group of its own.
pub(super) fn own_tree(cmd: &mut Command) {
    cmd.process_group(0);
}

/// The status reported for a child whose wait failed after it was killed.
pub(super) fn killed_status() -> ExitStatus {
    ExitStatus::from_raw(libc::SIGKILL)
}

/// Whether the child died of a signal, as a kill of its tree ends it.
pub(super) fn was_killed(status: ExitStatus) -> bool {
    status.signal().is_some()
}

impl Tree {
    /// The tree of `child`, spawned from a command prepared by `own_tree`.
    pub(super) fn of(child: &Child) -> std::io::Result<Tree> {
        Ok(Tree { pgid: child.id() as i32 })
    }

    /// SIGKILL to the whole group. `ESRCH` (already gone) is fine. Once the leader is reaped, the
    /// group number stays reserved while any member lives, so this reaches exactly what the child
    /// left behind.
    pub(super) fn kill(&self) {
        if self.pgid > 0 {
            // SAFETY: kill(2) takes two integers and touches no memory of ours; a negative pid
            // names the process group, which std has no API for.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
    }
}
