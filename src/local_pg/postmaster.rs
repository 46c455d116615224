//! The postmaster process: started so that it dies with seqvend and ignores a terminal's
//! Ctrl-C, and signalled only while its pid cannot belong to anyone else.
//!
//! A pid is ours to signal until it is reaped; after that the kernel may hand it to an
//! unrelated process. The guardian thread is the only one that reaps the postmaster, and it
//! does so only under the lock `signal` holds, after marking the postmaster exited.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub(super) struct Postmaster {
    pid: libc::pid_t,
    exit: Arc<ExitState>,
}

#[derive(Default)]
struct ExitState {
    /// Set, under this lock, once the postmaster has exited and just before it is reaped.
    exited: Mutex<bool>,
    changed: Condvar,
}

impl ExitState {
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.exited.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Postmaster {
    /// Runs `command` (the `postgres` server) from a guardian thread that lives exactly as
    /// long as the postmaster. The postmaster is asked for SIGQUIT (immediate shutdown) when
    /// that thread dies, which happens when seqvend's process ends in any way, so no cluster
    /// outlives its owner. (The parent-death signal follows the spawning *thread*, not the
    /// process: spawned from a short-lived thread, the postmaster would get it too early.)
    pub(super) fn spawn(mut command: Command) -> io::Result<Self> {
        // A process group of its own: Ctrl-C at a terminal sends SIGINT to the foreground
        // group, which must reach seqvend alone. seqvend finishes the requests in flight and
        // only then stops PostgreSQL; PostgreSQL taking the SIGINT itself would end their
        // sessions first.
        command.process_group(0);
        let seqvend = std::process::id();
        // SAFETY: prctl and getppid are async-signal-safe, as required between fork and exec,
        // and the closure neither allocates nor takes locks.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // seqvend died before prctl: the signal will never come, so do not start.
                if libc::getppid() as u32 != seqvend {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let exit = Arc::new(ExitState::default());
        let guarded = exit.clone();
        let (pid_sender, pid_receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name("postgres-guardian".into())
            .spawn(move || {
                let mut child = match command.spawn() {
                    Ok(child) => child,
                    Err(err) => {
                        let _ = pid_sender.send(Err(err));
                        return;
                    }
                };
                let pid = child.id() as libc::pid_t;
                let _ = pid_sender.send(Ok(pid));
                wait_for_exit_without_reaping(pid);
                let mut exited = guarded.lock();
                *exited = true;
                let _ = child.wait();
                drop(exited);
                guarded.changed.notify_all();
            })?;
        let pid = pid_receiver
            .recv()
            .map_err(|_| io::Error::other("the postgres guardian thread ended early"))??;
        Ok(Self { pid, exit })
    }

    /// Sends `signal` to the postmaster unless it has exited already.
    pub(super) fn signal(&self, signal: libc::c_int) {
        let exited = self.exit.lock();
        if !*exited {
            // SAFETY: kill has no memory-safety preconditions. While the lock is held the
            // postmaster is not reaped, so `pid` is still its own (at worst a zombie, which
            // ignores signals).
            unsafe { libc::kill(self.pid, signal) };
        }
    }

    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    pub(super) fn has_exited(&self) -> bool {
        *self.exit.lock()
    }

    /// Waits up to `patience` for the postmaster to exit; whether it did.
    pub(super) fn wait_for_exit(&self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        let mut exited = self.exit.lock();
        while !*exited {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            exited = self
                .exit
                .changed
                .wait_timeout(exited, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

/// Blocks until `pid`, a child of this process, has exited, leaving it unreaped (a zombie)
/// so that its pid cannot be reused yet.
fn wait_for_exit_without_reaping(pid: libc::pid_t) {
    loop {
        // SAFETY: waitid writes only into `info`, a plain C struct for which zeroes are valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT;
        // SAFETY: as above; `info` outlives the call.
        let waited = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        // Anything but an interruption means it has exited (or is no child to wait for).
        if waited == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATIENCE: Duration = Duration::from_secs(10);

    /// Field 5 of /proc/<pid>/stat: the process group. (The command name, field 2, is in
    /// parentheses and may hold spaces, so count from the closing one.)
    fn process_group(pid: libc::pid_t) -> libc::pid_t {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(2).unwrap().parse().unwrap()
    }

    #[test]
    fn it_leads_a_process_group_of_its_own_and_stops_when_signalled() {
        let mut command = Command::new("sleep");
        command.arg("60");
        let postmaster = Postmaster::spawn(command).unwrap();
        assert_eq!(process_group(postmaster.pid), postmaster.pid);
        assert!(!postmaster.has_exited());
        postmaster.signal(libc::SIGTERM);
        assert!(postmaster.wait_for_exit(PATIENCE));
    }

    #[test]
    fn once_exited_it_is_reaped_and_never_signalled_again() {
        let postmaster = Postmaster::spawn(Command::new("true")).unwrap();
        assert!(postmaster.wait_for_exit(PATIENCE));
        assert!(postmaster.has_exited());
        let reaped = !std::path::Path::new(&format!("/proc/{}", postmaster.pid)).exists();
        assert!(reaped, "no zombie left behind");
        // Its pid may belong to another process by now: this must send nothing.
        postmaster.signal(libc::SIGKILL);
    }

    #[test]
    fn waiting_for_a_running_one_gives_up_at_the_deadline() {
        let mut command = Command::new("sleep");
        command.arg("60");
        let postmaster = Postmaster::spawn(command).unwrap();
        assert!(!postmaster.wait_for_exit(Duration::from_millis(50)));
        postmaster.signal(libc::SIGKILL);
        assert!(postmaster.wait_for_exit(PATIENCE));
    }
}
