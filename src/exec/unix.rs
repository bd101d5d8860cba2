//! The POSIX side of `exec`: a child leads a process group of its own, and one signal to the group
//! kills it together with everything it spawned (and whatever it left behind when it exited).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};

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
