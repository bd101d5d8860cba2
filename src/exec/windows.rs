//! The Windows side of `exec`: every child runs in a Job Object of its own. The child is created
//! suspended, assigned to its job before it runs a single instruction, then resumed, so everything
//! it spawns is in the job too; terminating the job kills the whole tree (also what the child left
//! behind when it exited), and closing the job's last handle does the same (kill-on-close), so a
//! relay that is killed hard takes its children with it.

use std::ffi::OsString;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectExtendedLimitInformation, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NO_WINDOW, CREATE_SUSPENDED, OpenThread, ResumeThread, THREAD_SUSPEND_RESUME,
};

use wait_timeout::ChildExt;

use super::program::{self, Launch, Located, Missing, SearchEnv};
use super::{Failure, System};
use crate::exec::cmdline;
use crate::exec::winresolve::{self, NotLaunched, Search};

/// The system family this build runs on.
pub(super) const SYSTEM: System = System::Windows;

/// The variable that names the user's home directory.
pub(super) const HOME_VAR: &str = "USERPROFILE";

/// Whether `script` takes BSD's arguments (no `script` runs on Windows).
pub(super) const BSD_SCRIPT: bool = false;

/// A child's process tree: the Job Object that holds it.
#[derive(Debug)]
pub(super) struct Tree {
    job: OwnedHandle,
}

/// Makes the child start suspended (so that it can be put in its job before it runs) and without a
/// console window.
pub(super) fn own_tree(cmd: &mut Command) {
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
}

/// The status reported for a child whose wait failed after it was killed (the exit code the job
/// is terminated with).
pub(super) fn killed_status() -> ExitStatus {
    ExitStatus::from_raw(KILLED_EXIT_CODE)
}

/// The exit code of every process of a terminated job.
const KILLED_EXIT_CODE: u32 = 1;

/// Whether the child ended as a terminated job ends it. Windows records no cause, only the code,
/// so a child that itself exits with that code once its run was stopped counts as killed too.
pub(super) fn was_killed(status: ExitStatus) -> bool {
    status.code() == Some(KILLED_EXIT_CODE as i32)
}

impl Tree {
    /// Puts the suspended `child` (spawned from a command prepared by `own_tree`) in a new job,
    /// then resumes it. On an error the child is still suspended and outside any job: the caller
    /// kills it.
    pub(super) fn of(child: &Child) -> io::Result<Tree> {
        let tree = Tree { job: new_job()? };
        // SAFETY: both handles are open for the whole call: the job is owned by `tree`, the
        // process handle by `child`.
        #[allow(unsafe_code)]
        let assigned = unsafe { AssignProcessToJobObject(tree.raw(), child.as_raw_handle()) };
        if assigned == 0 {
            return Err(io::Error::last_os_error());
        }
        resume(child.id())?;
        Ok(tree)
    }

    /// Terminates every process in the job. A job that is already empty is fine.
    pub(super) fn kill(&self) {
        // SAFETY: the job handle is open for as long as `self` lives.
        #[allow(unsafe_code)]
        unsafe {
            TerminateJobObject(self.raw(), KILLED_EXIT_CODE);
        }
    }

    fn raw(&self) -> windows_sys::Win32::Foundation::HANDLE {
        self.job.as_raw_handle()
    }
}

/// A new anonymous job whose processes die when its last handle closes, and that lets a crashing
/// child die at once instead of waiting on an error dialog.
fn new_job() -> io::Result<OwnedHandle> {
    // SAFETY: both arguments may be null (default security, no name); the returned handle is
    // checked before it is owned.
    #[allow(unsafe_code)]
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CreateJobObjectW just returned this handle, so nothing else owns it.
    #[allow(unsafe_code)]
    let job = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    limits.BasicLimitInformation.LimitFlags =
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    // SAFETY: `limits` is a JOBOBJECT_EXTENDED_LIMIT_INFORMATION of exactly the size passed, alive
    // for the call; the job handle is open.
    #[allow(unsafe_code)]
    let set = unsafe {
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if set == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// Resumes every thread of the process `pid` (a process created suspended has one). std offers no
/// handle to a child's main thread, so the threads are found in a system snapshot.
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: CreateToolhelp32Snapshot takes flags and a pid; the handle is checked, then owned.
    #[allow(unsafe_code)]
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the snapshot handle was just returned and is owned by nobody else.
    #[allow(unsafe_code)]
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut entry =
        THREADENTRY32 { dwSize: size_of::<THREADENTRY32>() as u32, ..Default::default() };
    let mut resumed = 0;
    // SAFETY: the snapshot is open and `entry` is a THREADENTRY32 whose dwSize is set, as both
    // calls require; they only write into it.
    #[allow(unsafe_code)]
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            resume_thread(entry.th32ThreadID)?;
            resumed += 1;
        }
        // SAFETY: as for Thread32First above.
        #[allow(unsafe_code)]
        let next = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) };
        more = next != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!("no thread of process {pid} to resume")));
    }
    Ok(())
}

fn resume_thread(tid: u32) -> io::Result<()> {
    // SAFETY: OpenThread takes an access mask, a flag and a thread id; the handle is checked, then
    // owned (and closed when dropped).
    #[allow(unsafe_code)]
    let thread = unsafe {
        let raw = OpenThread(THREAD_SUSPEND_RESUME, 0, tid);
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        OwnedHandle::from_raw_handle(raw)
    };
    // SAFETY: the thread handle is open, with the access ResumeThread needs.
    #[allow(unsafe_code)]
    let count = unsafe { ResumeThread(thread.as_raw_handle()) };
    if count == u32::MAX {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CLI `name` (`agy`, `gemini`): the configured path (`AGY_CLI_PATH`, `GEMINI_CLI_PATH`) as
/// given, else its own search of `PATH` × `PATHEXT` (and agy's install locations), never in the
/// current directory and never with `where`. An npm cmd-shim is run as the `node.exe <script>` it
/// names (never through `cmd.exe`); any other batch file is refused.
pub(super) fn locate(name: &str, configured: Option<&Path>, env: &SearchEnv) -> Located {
    let not_found = || Missing::NotFound { name: name.to_string() };
    let path: Vec<String> = env
        .path
        .as_ref()
        .map(|path| {
            std::env::split_paths(path).map(|it| it.to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    let pathext = env.pathext.as_ref().map(|it| it.to_string_lossy().into_owned());
    let local_app_data = env.local_app_data.as_ref().map(|it| it.to_string_lossy().into_owned());
    let user_profile = env.home.as_ref().map(|it| it.to_string_lossy().into_owned());
    let exists = |candidate: &str| Path::new(candidate).is_file();
    let search = Search {
        path: &path,
        pathext: pathext.as_deref(),
        local_app_data: local_app_data.as_deref(),
        user_profile: user_profile.as_deref(),
        exists: &exists,
    };
    // The CLI as named: the configured path, else the bare name (the file found is what runs).
    let named = configured.map_or_else(|| PathBuf::from(name), Path::to_path_buf);
    let wanted = configured.map(|path| path.to_string_lossy().into_owned());
    let Some(found) = winresolve::find(name, wanted.as_deref().unwrap_or(name), &search) else {
        return Located { named, launch: Err(not_found()) };
    };
    let given = configured.filter(|path| path.to_str().is_none() && !winresolve::is_batch(&found));
    if let Some(located) = program::as_given(given) {
        // A path that is not Unicode is spawned exactly as configured.
        return located;
    }
    let read = |file: &str| std::fs::read(file).ok();
    let launch = winresolve::launch(name, &found, &read, &search).map(|launch| Launch {
        program: OsString::from(launch.program),
        leading: launch.leading_args,
    });
    let launch = launch.map_err(|missing| match missing {
        NotLaunched::NotFound { name } => Missing::NotFound { name },
        refused @ NotLaunched::NotAShim { .. } => Missing::Refused { text: refused.to_string() },
    });
    Located { named, launch }
}

/// The whole command line checked against Windows' limit before spawning.
pub(super) fn check_launch(name: &str, launch: &Launch, args: &[String]) -> Result<(), Failure> {
    let mut all = launch.leading.clone();
    all.extend_from_slice(args);
    cmdline::check_command_line(name, &launch.program.to_string_lossy(), &all)
        .map_err(|text| Failure::Refused { text })
}

/// Whether `child` exited within `within`. Windows reuses no process id while a handle to the
/// process is open, and a job is ours alone, so its tree can be killed after the exit too.
pub(super) fn exited(child: &mut Child, within: Duration) -> io::Result<bool> {
    Ok(child.wait_timeout(within)?.is_some())
}
