//! The exit codes a data node's worker ends with, shared by the worker
//! (`datad`) and its angel (`angel`), which reads them to decide what to do
//! next — as NDB's ndbd tells its angel through `NRT_*` exit codes.
//!
//! | code | meaning | the angel |
//! |------|---------|-----------|
//! | 0 | stopped on purpose (`N STOP`, `ALL STOP`, a signal) | exits 0 |
//! | 3 | restart requested (`N RESTART`) | starts a new worker at once |
//! | 4 | restart requested, wait for `N START` (`N RESTART -n`) | waits, then starts one |
//! | any other, or a signal | a crash | restarts unless `StopOnError` |

use std::process::ExitStatus;

/// Stopped on purpose: the angel does not restart the worker.
pub const EXIT_STOPPED: u8 = 0;

/// The worker failed (or the angel gave up on it).
pub const EXIT_FAILED: u8 = 1;

/// The management node asked for a restart: start a new worker at once.
pub const EXIT_RESTART: u8 = 3;

/// The management node asked for a restart in the "no start" state: the
/// angel waits for `N START` before it starts a new worker.
pub const EXIT_RESTART_WAIT_FOR_START: u8 = 4;

/// How a worker ended, as the angel sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    Stopped,
    Restart,
    RestartWaitForStart,
    /// Any other exit code, or a signal (code `None`): the worker crashed.
    Crashed {
        code: Option<i32>,
        signal: Option<i32>,
    },
}

impl WorkerExit {
    pub fn from_status(status: ExitStatus) -> WorkerExit {
        use std::os::unix::process::ExitStatusExt;
        match status.code() {
            Some(code) if code == i32::from(EXIT_STOPPED) => WorkerExit::Stopped,
            Some(code) if code == i32::from(EXIT_RESTART) => WorkerExit::Restart,
            Some(code) if code == i32::from(EXIT_RESTART_WAIT_FOR_START) => {
                WorkerExit::RestartWaitForStart
            }
            code => WorkerExit::Crashed {
                code,
                signal: status.signal(),
            },
        }
    }
}

/// Why a data node's worker stopped on its own, and so the code it exits
/// with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    /// For good: `N STOP`, `ALL STOP`, `SHUTDOWN` or a signal.
    Stopped,
    /// `N RESTART`; with `wait_for_start`, `N RESTART -n`.
    Restart { wait_for_start: bool },
}

impl StopKind {
    pub fn exit_code(self) -> u8 {
        match self {
            StopKind::Stopped => EXIT_STOPPED,
            StopKind::Restart {
                wait_for_start: false,
            } => EXIT_RESTART,
            StopKind::Restart {
                wait_for_start: true,
            } => EXIT_RESTART_WAIT_FOR_START,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn exit_codes_round_trip_through_the_status() {
        for kind in [
            StopKind::Stopped,
            StopKind::Restart {
                wait_for_start: false,
            },
            StopKind::Restart {
                wait_for_start: true,
            },
        ] {
            let status = ExitStatus::from_raw(i32::from(kind.exit_code()) << 8);
            let expected = match kind {
                StopKind::Stopped => WorkerExit::Stopped,
                StopKind::Restart {
                    wait_for_start: false,
                } => WorkerExit::Restart,
                StopKind::Restart {
                    wait_for_start: true,
                } => WorkerExit::RestartWaitForStart,
            };
            assert_eq!(WorkerExit::from_status(status), expected);
        }
        assert_eq!(
            WorkerExit::from_status(ExitStatus::from_raw(1 << 8)),
            WorkerExit::Crashed {
                code: Some(1),
                signal: None
            }
        );
        // Killed by SIGKILL (9): no code, a signal.
        assert_eq!(
            WorkerExit::from_status(ExitStatus::from_raw(9)),
            WorkerExit::Crashed {
                code: None,
                signal: Some(9)
            }
        );
    }
}
