//! The angel of a data node, as NDB's ndbd has one: `shoal datad` starts
//! this process, which runs the data node itself as a child (the
//! *worker*: this same binary, `shoal datad --worker --report-fd N`),
//! forwards SIGINT and SIGTERM to it, and when it ends decides from its
//! exit code (`crate::exit`) and the restart policy whether to start it
//! again.
//!
//! What the angel knows of the worker comes through a pipe (the report
//! fd): lines `key=value` such as `node=2`, `stop_on_error=0`,
//! `phase=started`, `signal=SIGTERM`, `error=...`, which the angel logs and
//! uses. The worker fetches the configuration, so the angel learns
//! `StopOnError`, `MaxStartFailRetries` and `StartFailRetryDelay` from the
//! first worker's report; until a worker has reported them (it failed
//! before the management node answered) NDB's defaults apply, so a worker
//! that cannot even start is not restarted. The node id the first worker
//! was given is asked for again by the next ones, as NDB's angel keeps its
//! node id.
//!
//! The worker asks the kernel to kill it when the angel dies
//! (`PR_SET_PDEATHSIG`), so a SIGKILL of the angel never leaves a data node
//! behind.
//!
//! [`RestartPolicy::decide`] is the whole decision, a pure function tested
//! without processes.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use protocol::NodeId;

use crate::exit::{EXIT_FAILED, EXIT_STOPPED, WorkerExit};

/// The most restarts of a worker, for any reason, within
/// [`ANGEL_RESTART_WINDOW`]: a node that keeps dying is left down rather
/// than restarted in a loop.
pub const ANGEL_RESTARTS_PER_MINUTE_MAX: usize = 5;

/// The sliding window of [`ANGEL_RESTARTS_PER_MINUTE_MAX`].
pub const ANGEL_RESTART_WINDOW: Duration = Duration::from_secs(60);

/// How often the angel looks at its worker and at the signal flag.
const ANGEL_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// What the angel does after its worker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AngelAction {
    /// Start a new worker after this pause.
    Restart { after: Duration },
    /// Start a new worker once the management node says `START`.
    WaitForStart,
    /// Exit with this code; `reason` goes to the log.
    Exit { code: i32, reason: String },
}

/// The angel's rules for restarting its worker (NDB's `StopOnError`,
/// `MaxStartFailRetries`, `StartFailRetryDelay`, plus a bound on restarts
/// per minute).
#[derive(Debug, Clone)]
pub struct RestartPolicy {
    /// Leave a crashed worker down (NDB's default).
    pub stop_on_error: bool,
    /// Failed starts in a row allowed before giving up; 0 never gives up
    /// (the restarts per minute still bound it).
    pub start_fail_retries_max: u32,
    /// The pause before starting again after a failed start.
    pub start_fail_retry_delay: Duration,
    /// Whether the current worker reported `phase=started`.
    worker_started: bool,
    /// Workers in a row that crashed before they started.
    start_failures_in_a_row: u32,
    /// Restarts within the last [`ANGEL_RESTART_WINDOW`].
    restarts: RestartWindow,
}

/// Restarts within a sliding window, bounded: what keeps a node that dies
/// at once from being restarted in a loop (the angel's, and `shoal up`'s
/// own for the nodes it supervises).
#[derive(Debug, Clone)]
pub struct RestartWindow {
    restarts_max: usize,
    window: Duration,
    /// When each restart within the window happened, oldest first.
    recent: VecDeque<Instant>,
}

impl RestartWindow {
    pub fn new(restarts_max: usize, window: Duration) -> RestartWindow {
        assert!(restarts_max > 0, "a window that allows no restart");
        RestartWindow {
            restarts_max,
            window,
            recent: VecDeque::with_capacity(restarts_max),
        }
    }

    /// Records a restart at `now` if fewer than the maximum happened in
    /// the window before it; false when the budget is spent.
    pub fn take(&mut self, now: Instant) -> bool {
        while let Some(&oldest) = self.recent.front() {
            if now.saturating_duration_since(oldest) >= self.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= self.restarts_max {
            return false;
        }
        self.recent.push_back(now);
        assert!(self.recent.len() <= self.restarts_max);
        true
    }
}

impl Default for RestartPolicy {
    /// NDB's defaults: StopOnError=1, MaxStartFailRetries=3,
    /// StartFailRetryDelay=0.
    fn default() -> RestartPolicy {
        RestartPolicy {
            stop_on_error: true,
            start_fail_retries_max: 3,
            start_fail_retry_delay: Duration::ZERO,
            worker_started: false,
            start_failures_in_a_row: 0,
            restarts: RestartWindow::new(ANGEL_RESTARTS_PER_MINUTE_MAX, ANGEL_RESTART_WINDOW),
        }
    }
}

impl RestartPolicy {
    /// A new worker was started: it has not reached "started" yet.
    pub fn worker_launched(&mut self) {
        self.worker_started = false;
    }

    /// The worker reported that it joined the cluster: its later crash is
    /// not a failed start.
    pub fn worker_started(&mut self) {
        self.worker_started = true;
        self.start_failures_in_a_row = 0;
    }

    /// What to do now that the worker ended with `exit` at `now`.
    pub fn decide(&mut self, exit: WorkerExit, now: Instant) -> AngelAction {
        let (code, signal) = match exit {
            WorkerExit::Stopped => {
                return AngelAction::Exit {
                    code: i32::from(EXIT_STOPPED),
                    reason: "the data node stopped on purpose".into(),
                };
            }
            WorkerExit::Restart | WorkerExit::RestartWaitForStart => {
                if let Some(give_up) = self.take_restart(now) {
                    return give_up;
                }
                return if exit == WorkerExit::Restart {
                    AngelAction::Restart {
                        after: Duration::ZERO,
                    }
                } else {
                    AngelAction::WaitForStart
                };
            }
            WorkerExit::Crashed { code, signal } => (code, signal),
        };
        let what = match (code, signal) {
            (_, Some(signal)) => format!("was killed by signal {signal}"),
            (Some(code), None) => format!("exited with code {code}"),
            (None, None) => "ended".to_string(),
        };
        if self.stop_on_error {
            return AngelAction::Exit {
                code: i32::from(EXIT_FAILED),
                reason: format!("the data node {what}; StopOnError is set, so it stays down"),
            };
        }
        let failed_start = !self.worker_started;
        if failed_start {
            self.start_failures_in_a_row += 1;
            if self.start_fail_retries_max != 0
                && self.start_failures_in_a_row > self.start_fail_retries_max
            {
                return AngelAction::Exit {
                    code: i32::from(EXIT_FAILED),
                    reason: format!(
                        "the data node {what} before it started, {} times in a row \
                         (MaxStartFailRetries={}); giving up",
                        self.start_failures_in_a_row, self.start_fail_retries_max
                    ),
                };
            }
        }
        if let Some(give_up) = self.take_restart(now) {
            return give_up;
        }
        AngelAction::Restart {
            after: if failed_start {
                self.start_fail_retry_delay
            } else {
                Duration::ZERO
            },
        }
    }

    /// Counts a restart at `now`, or says why none is allowed.
    fn take_restart(&mut self, now: Instant) -> Option<AngelAction> {
        if !self.restarts.take(now) {
            return Some(AngelAction::Exit {
                code: i32::from(EXIT_FAILED),
                reason: format!(
                    "the data node was restarted {ANGEL_RESTARTS_PER_MINUTE_MAX} times within \
                     {} s; giving up",
                    ANGEL_RESTART_WINDOW.as_secs()
                ),
            });
        }
        None
    }

    /// Applies one line of the worker's report that concerns the policy;
    /// false when the line is not about it.
    fn apply_report(&mut self, key: &str, value: &str) -> bool {
        match key {
            "stop_on_error" => self.stop_on_error = value != "0",
            "max_start_fail_retries" => {
                if let Ok(retries) = value.parse() {
                    self.start_fail_retries_max = retries;
                }
            }
            "start_fail_retry_delay_s" => {
                if let Ok(seconds) = value.parse() {
                    self.start_fail_retry_delay = Duration::from_secs(seconds);
                }
            }
            "phase" if value == "started" => self.worker_started(),
            _ => return false,
        }
        true
    }
}

/// The worker's end of the report pipe. Writing is best effort: a worker
/// without an angel (`--no-angel`) or whose angel is gone reports nothing.
#[derive(Debug, Default)]
pub struct Reporter {
    pipe: Option<std::fs::File>,
}

impl Reporter {
    /// The report fd the angel passed with `--report-fd`, opened through
    /// `/proc/self/fd` (no unsafe code); `None` reports nothing.
    pub fn open(report_fd: Option<i32>) -> Result<Reporter, String> {
        let Some(fd) = report_fd else {
            return Ok(Reporter::default());
        };
        let pipe = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/fd/{fd}"))
            .map_err(|e| format!("cannot open the report fd {fd}: {e}"))?;
        Ok(Reporter { pipe: Some(pipe) })
    }

    /// Reports a panic of any thread as `error=panic ...` before the
    /// default hook prints it, so the angel's log says why the worker died.
    pub fn report_panics(&self) {
        let Some(pipe) = self.pipe.as_ref().and_then(|pipe| pipe.try_clone().ok()) else {
            return;
        };
        let mut reporter = Reporter { pipe: Some(pipe) };
        let previous = std::panic::take_hook();
        // The hook runs on the panicking thread; a Mutex keeps the
        // reporter usable from any of them (panics are not the data path).
        let reporter = std::sync::Mutex::new(std::mem::take(&mut reporter));
        std::panic::set_hook(Box::new(move |info| {
            if let Ok(mut reporter) = reporter.lock() {
                reporter.report("error", &format!("panic {info}"));
            }
            previous(info);
        }));
    }

    /// Writes `key=value` as one line. Newlines in the value become spaces
    /// so one report stays one line.
    pub fn report(&mut self, key: &str, value: &str) {
        if let Some(pipe) = &mut self.pipe {
            let value = value.replace(['\n', '\r'], " ");
            // One write per line, so lines of a panicking thread and the
            // main thread never interleave within a line.
            if pipe
                .write_all(format!("{key}={value}\n").as_bytes())
                .is_err()
            {
                self.pipe = None;
            }
        }
    }
}

/// Makes this process a worker: the kernel kills it with SIGKILL when the
/// angel `angel_pid` dies, and if the angel died already it exits now.
pub fn become_worker(angel_pid: u32) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
            .map_err(|e| format!("cannot ask to die with the angel: {e}"))?;
    }
    // The angel may have died between starting us and the call above.
    let parent = rustix::process::getppid().map_or(0, |pid| pid.as_raw_nonzero().get() as u32);
    if parent != angel_pid {
        return Err(format!(
            "the angel (process {angel_pid}) is gone; the worker does not run without it"
        ));
    }
    Ok(())
}

/// How the angel starts its worker.
#[derive(Debug, Clone)]
pub struct AngelOptions {
    /// This binary.
    pub executable: PathBuf,
    /// The worker's command line before the angel's own flags
    /// (`datad -c HOST:PORT ...`, without `--ndb-nodeid`).
    pub arguments: Vec<OsString>,
    /// `--ndb-nodeid` of the command line; the angel keeps the id the first
    /// worker got when there is none.
    pub node_id: Option<NodeId>,
    /// The management node, which the angel reaches itself only while it
    /// holds the node for `N START`.
    pub connectstring: String,
}

fn log(node: Option<NodeId>, line: &str) {
    match node {
        Some(node) => eprintln!("angel {node}: {line}"),
        None => eprintln!("angel: {line}"),
    }
}

/// A running worker and the lines of its report.
struct Worker {
    child: Child,
    reports: mpsc::Receiver<String>,
}

/// Runs the angel until it exits; returns the process's exit code.
pub fn run(options: &AngelOptions) -> i32 {
    let terminate = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&terminate)) {
            log(None, &format!("cannot install the signal handler: {e}"));
            return i32::from(EXIT_FAILED);
        }
    }
    let mut policy = RestartPolicy::default();
    let mut node = options.node_id;
    loop {
        let mut worker = match spawn_worker(options, node) {
            Ok(worker) => worker,
            Err(message) => {
                log(node, &message);
                return i32::from(EXIT_FAILED);
            }
        };
        policy.worker_launched();
        log(
            node,
            &format!("started the data node as process {}", worker.child.id()),
        );
        let (status, forwarded) = watch(&mut worker, &mut policy, &mut node, &terminate);
        let exit = WorkerExit::from_status(status);
        if forwarded {
            // The signal was for the whole data node: whatever the worker
            // said, nobody wants it back.
            log(
                node,
                &format!("the data node ended ({status}) after a signal"),
            );
            return i32::from(EXIT_STOPPED);
        }
        match policy.decide(exit, Instant::now()) {
            AngelAction::Exit { code, reason } => {
                log(node, &format!("{reason} ({status})"));
                return code;
            }
            AngelAction::Restart { after } => {
                log(
                    node,
                    &format!(
                        "the data node ended ({status}); starting it again in {} ms",
                        after.as_millis()
                    ),
                );
                if !sleep_unless_signalled(after, &terminate) {
                    log(node, "stopping on a signal");
                    return i32::from(EXIT_STOPPED);
                }
            }
            AngelAction::WaitForStart => {
                log(
                    node,
                    "the data node restarts when the management node says START",
                );
                match wait_for_start(options, node, &terminate) {
                    Ok(true) => log(node, "START received"),
                    Ok(false) => {
                        log(node, "stopped while waiting for START");
                        return i32::from(EXIT_STOPPED);
                    }
                    Err(message) => {
                        log(node, &message);
                        return i32::from(EXIT_FAILED);
                    }
                }
            }
        }
    }
}

/// Sleeps `pause`, waking early on a signal; false when one came.
fn sleep_unless_signalled(pause: Duration, terminate: &AtomicBool) -> bool {
    let deadline = Instant::now() + pause;
    while Instant::now() < deadline {
        if terminate.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(ANGEL_POLL_INTERVAL.min(deadline - Instant::now()));
    }
    !terminate.load(Ordering::Relaxed)
}

/// Starts a worker with a fresh report pipe.
fn spawn_worker(options: &AngelOptions, node: Option<NodeId>) -> Result<Worker, String> {
    let (reader, writer) =
        std::io::pipe().map_err(|e| format!("cannot create the report pipe: {e}"))?;
    // The write end must survive exec in the worker. The angel is one
    // thread (the report readers never start processes), so no other child
    // can inherit it before it is closed below.
    rustix::io::fcntl_setfd(&writer, rustix::io::FdFlags::empty())
        .map_err(|e| format!("cannot pass the report pipe on: {e}"))?;
    let mut command = Command::new(&options.executable);
    command
        .args(&options.arguments)
        .arg("--worker")
        .arg("--angel-pid")
        .arg(std::process::id().to_string())
        .arg("--report-fd")
        .arg(writer.as_raw_fd().to_string());
    if let Some(node) = node {
        command.arg("--ndb-nodeid").arg(node.to_string());
    }
    let child = command.spawn().map_err(|e| {
        format!(
            "cannot start the data node ({}): {e}",
            options.executable.display()
        )
    })?;
    // Only the worker writes now: at its exit the reader sees the end.
    drop(writer);
    let (sender, reports) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    Ok(Worker { child, reports })
}

/// Waits for the worker to end, logging and applying its reports and
/// forwarding SIGINT/SIGTERM to it. Returns its status and whether a
/// signal was forwarded.
fn watch(
    worker: &mut Worker,
    policy: &mut RestartPolicy,
    node: &mut Option<NodeId>,
    terminate: &AtomicBool,
) -> (std::process::ExitStatus, bool) {
    let mut forwarded = false;
    loop {
        let status = match worker.child.try_wait() {
            Ok(status) => status,
            Err(e) => {
                log(*node, &format!("cannot check the data node: {e}"));
                None
            }
        };
        // Read what it reported before deciding: its last words say why.
        let settle = status.is_some();
        loop {
            let line = if settle {
                // At its exit the pipe ends soon; wait briefly for the rest.
                worker.reports.recv_timeout(ANGEL_POLL_INTERVAL).ok()
            } else {
                worker.reports.try_recv().ok()
            };
            let Some(line) = line else { break };
            apply_report_line(&line, policy, node);
        }
        if let Some(status) = status {
            return (status, forwarded);
        }
        if terminate.load(Ordering::Relaxed) && !forwarded {
            forwarded = true;
            log(*node, "passing the signal on to the data node");
            if let Some(pid) = rustix::process::Pid::from_raw(worker.child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
        std::thread::sleep(ANGEL_POLL_INTERVAL);
    }
}

fn apply_report_line(line: &str, policy: &mut RestartPolicy, node: &mut Option<NodeId>) {
    let Some((key, value)) = line.split_once('=') else {
        log(*node, &format!("the data node reported {line:?}"));
        return;
    };
    if key == "node" {
        if let Ok(reported) = value.parse() {
            *node = Some(reported);
        }
    } else {
        policy.apply_report(key, value);
    }
    log(*node, &format!("the data node reported {key}={value}"));
}

/// How long the angel waits for the management node to accept its
/// connection while it holds the node for START.
const MANAGEMENT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The pause between attempts to reach the management node while the node
/// waits for START.
const MANAGEMENT_RETRY_DELAY: Duration = Duration::from_secs(1);

/// Holds the node "not started" until the management node says START: the
/// angel connects to it, says which node waits (so `SHOW` lists it as
/// `not started` and `N START` reaches it) and waits, connecting again if
/// the management node restarts. True on START, false on a signal or
/// `N STOP`.
fn wait_for_start(
    options: &AngelOptions,
    node: Option<NodeId>,
    terminate: &AtomicBool,
) -> Result<bool, String> {
    let Some(node) = node else {
        return Err("no node id is known, so nothing can START this node; it stays down".into());
    };
    let mut said_unreachable = false;
    loop {
        if terminate.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match wait_for_start_once(options, node, terminate) {
            Ok(started) => return Ok(started),
            Err(WaitError::Refused(message)) => {
                return Err(format!(
                    "the management node refused to hold the node: {message}"
                ));
            }
            Err(WaitError::Lost(message)) => {
                // Said once, not every second while the management node is
                // down.
                if !said_unreachable {
                    log(Some(node), &format!("{message}; trying again every second"));
                    said_unreachable = true;
                }
                if !sleep_unless_signalled(MANAGEMENT_RETRY_DELAY, terminate) {
                    return Ok(false);
                }
            }
        }
    }
}

enum WaitError {
    /// The management node is unreachable or went away: try again.
    Lost(String),
    /// The management node said no: give up.
    Refused(String),
}

fn wait_for_start_once(
    options: &AngelOptions,
    node: NodeId,
    terminate: &AtomicBool,
) -> Result<bool, WaitError> {
    let lost = |e: crate::blocking::ConnectionError| WaitError::Lost(e.to_string());
    let mut connection = crate::blocking::BlockingConnection::connect(
        &options.connectstring,
        0,
        protocol::NodeRole::Api,
        MANAGEMENT_CONNECT_TIMEOUT,
    )
    .map_err(lost)?;
    connection
        .send(&[protocol::Message::WaitingForStart { node }])
        .map_err(lost)?;
    loop {
        if terminate.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match connection.receive(ANGEL_POLL_INTERVAL).map_err(lost)? {
            Some(protocol::Message::Start) => return Ok(true),
            // `N STOP` while waiting: the node stops for good.
            Some(protocol::Message::Stop) => return Ok(false),
            Some(protocol::Message::Refused { error }) => {
                return Err(WaitError::Refused(format!(
                    "{} (error {})",
                    error.message, error.ndb_code
                )));
            }
            // Hello and address updates are not for the angel.
            Some(_) | None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash() -> WorkerExit {
        WorkerExit::Crashed {
            code: None,
            signal: Some(9),
        }
    }

    fn restarting() -> RestartPolicy {
        RestartPolicy {
            stop_on_error: false,
            ..RestartPolicy::default()
        }
    }

    #[test]
    fn a_stop_is_never_restarted() {
        let now = Instant::now();
        for stop_on_error in [false, true] {
            let mut policy = RestartPolicy {
                stop_on_error,
                ..RestartPolicy::default()
            };
            assert!(matches!(
                policy.decide(WorkerExit::Stopped, now),
                AngelAction::Exit { code: 0, .. }
            ));
        }
    }

    #[test]
    fn stop_on_error_leaves_a_crashed_node_down() {
        let mut policy = RestartPolicy::default();
        assert!(policy.stop_on_error, "NDB's default");
        policy.worker_started();
        let action = policy.decide(crash(), Instant::now());
        let AngelAction::Exit { code, reason } = action else {
            panic!("{action:?}");
        };
        assert_eq!(code, 1);
        assert!(reason.contains("StopOnError"), "{reason}");
        assert!(reason.contains("signal 9"), "{reason}");
    }

    #[test]
    fn requested_restarts_happen_whatever_stop_on_error_says() {
        let now = Instant::now();
        let mut policy = RestartPolicy::default();
        assert_eq!(
            policy.decide(WorkerExit::Restart, now),
            AngelAction::Restart {
                after: Duration::ZERO
            }
        );
        assert_eq!(
            policy.decide(WorkerExit::RestartWaitForStart, now),
            AngelAction::WaitForStart
        );
    }

    #[test]
    fn a_started_node_that_crashes_is_restarted_at_once() {
        let mut policy = restarting();
        policy.start_fail_retry_delay = Duration::from_secs(7);
        policy.worker_launched();
        policy.worker_started();
        assert_eq!(
            policy.decide(crash(), Instant::now()),
            AngelAction::Restart {
                after: Duration::ZERO
            }
        );
    }

    #[test]
    fn failed_starts_wait_the_retry_delay_and_stop_after_the_retries() {
        let start = Instant::now();
        let mut policy = restarting();
        policy.start_fail_retries_max = 2;
        policy.start_fail_retry_delay = Duration::from_secs(3);
        for attempt in 0..2u64 {
            policy.worker_launched();
            assert_eq!(
                policy.decide(crash(), start + Duration::from_secs(attempt * 100)),
                AngelAction::Restart {
                    after: Duration::from_secs(3)
                },
                "retry {attempt}"
            );
        }
        policy.worker_launched();
        let action = policy.decide(crash(), start + Duration::from_secs(300));
        let AngelAction::Exit { code: 1, reason } = action else {
            panic!("{action:?}");
        };
        assert!(reason.contains("MaxStartFailRetries=2"), "{reason}");
    }

    #[test]
    fn a_start_resets_the_failed_starts() {
        let start = Instant::now();
        let mut policy = restarting();
        policy.start_fail_retries_max = 1;
        for round in 0..4u64 {
            policy.worker_launched();
            let now = start + Duration::from_secs(round * 100);
            assert!(matches!(
                policy.decide(crash(), now),
                AngelAction::Restart { .. }
            ));
            policy.worker_launched();
            policy.worker_started();
        }
    }

    #[test]
    fn zero_retries_means_no_end_but_the_restarts_per_minute() {
        let start = Instant::now();
        let mut policy = restarting();
        policy.start_fail_retries_max = 0;
        for round in 0..20u64 {
            policy.worker_launched();
            let now = start + Duration::from_secs(round * 20);
            assert!(
                matches!(policy.decide(crash(), now), AngelAction::Restart { .. }),
                "round {round}"
            );
        }
    }

    #[test]
    fn restarts_per_minute_are_bounded_and_the_window_slides() {
        let start = Instant::now();
        let mut policy = restarting();
        policy.start_fail_retries_max = 0;
        for second in 0..ANGEL_RESTARTS_PER_MINUTE_MAX as u64 {
            policy.worker_started();
            assert!(matches!(
                policy.decide(crash(), start + Duration::from_secs(second)),
                AngelAction::Restart { .. }
            ));
        }
        // Requested restarts count too: a node restarted in a loop by any
        // cause is left down.
        let action = policy.decide(WorkerExit::Restart, start + Duration::from_secs(10));
        let AngelAction::Exit { code: 1, reason } = action else {
            panic!("{action:?}");
        };
        assert!(reason.contains("5 times within 60 s"), "{reason}");
        // 60 s after the first restart, one more fits.
        assert!(matches!(
            policy.decide(crash(), start + Duration::from_secs(60)),
            AngelAction::Restart { .. }
        ));
    }

    #[test]
    fn reports_configure_the_policy() {
        let mut policy = RestartPolicy::default();
        let mut node = None;
        for line in [
            "node=3",
            "stop_on_error=0",
            "max_start_fail_retries=7",
            "start_fail_retry_delay_s=2",
            "phase=joining",
            "nonsense",
        ] {
            apply_report_line(line, &mut policy, &mut node);
        }
        assert_eq!(node, Some(3));
        assert!(!policy.stop_on_error);
        assert_eq!(policy.start_fail_retries_max, 7);
        assert_eq!(policy.start_fail_retry_delay, Duration::from_secs(2));
        assert!(!policy.worker_started);
        apply_report_line("phase=started", &mut policy, &mut node);
        assert!(policy.worker_started);
    }
}
