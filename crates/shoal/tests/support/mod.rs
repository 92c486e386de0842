//! What the real-process tests share: free loopback ports, scratch
//! directories, bounded polling, a `shoal up` sandbox and processes started
//! by hand, each stopped (and, failing that, killed) on drop so no test
//! leaves a process behind.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long `Sandbox::stop` waits for `shoal up` to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `signal` to `pid` without relying on a `kill` binary being installed.
pub fn signal(pid: u32, signal: rustix::process::Signal) -> bool {
    rustix::process::Pid::from_raw(pid as i32)
        .is_some_and(|pid| rustix::process::kill_process(pid, signal).is_ok())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A new, empty directory for one test, named after it and this process.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shoal-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Polls `check` until it returns `Some`, for at most `timeout`.
pub fn eventually<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `shoal mgm -c connectstring -e command`: success and everything it
/// printed.
pub fn mgm(connectstring: &str, command: &str) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["mgm", "-c", connectstring, "-e", command])
        .output()
        .expect("shoal mgm runs");
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// A `shoal up` child, stopped (and, failing that, killed with everything
/// it started) on drop.
pub struct Sandbox {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    pub mgm_port: u16,
    pub dir: PathBuf,
}

impl Sandbox {
    pub fn start(name: &str, nodes: u8, replicas: u8) -> Sandbox {
        let dir = scratch_dir(name);
        let mgm_port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["up", "--data-dir"])
            .arg(&dir)
            .args([
                "--nodes",
                &nodes.to_string(),
                "--replicas",
                &replicas.to_string(),
            ])
            .args(["--mgm-port", &mgm_port.to_string()])
            .args(["--sql-port", &free_port().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("shoal up starts");
        let (sender, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("piped")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("piped")),
        ] {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    eprintln!("[shoal up] {line}");
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Sandbox {
            child,
            lines,
            mgm_port,
            dir,
        }
    }

    /// Waits for a line of `shoal up` (stdout or stderr) containing `text`.
    pub fn wait_for_line(&self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => continue,
                Err(_) => panic!("no line containing {text:?} within {timeout:?}"),
            }
        }
    }

    pub fn connectstring(&self) -> String {
        format!("127.0.0.1:{}", self.mgm_port)
    }

    pub fn mgm(&self, command: &str) -> (bool, String) {
        mgm(&self.connectstring(), command)
    }

    /// Pids of this sandbox's processes whose command line contains
    /// `extra`, in order: data nodes name the management node's address,
    /// the management node names its port.
    pub fn processes(&self, extra: &str) -> Vec<u32> {
        let needles = [
            format!("127.0.0.1:{}", self.mgm_port),
            format!("--port {}", self.mgm_port),
        ];
        let mut pids = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
            if needles.iter().any(|n| cmdline.contains(n.as_str())) && cmdline.contains(extra) {
                pids.push(pid);
            }
        }
        pids.sort_unstable();
        pids
    }

    /// Waits for `shoal up` to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        eventually(timeout, || self.child.try_wait().ok().flatten())
    }

    /// Stops `shoal up` with SIGTERM, as Ctrl-C would.
    pub fn stop(&mut self) {
        signal(self.child.id(), rustix::process::Signal::TERM);
        if self.wait_exit(STOP_TIMEOUT).is_some() {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("shoal up did not stop within {STOP_TIMEOUT:?} of SIGTERM");
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for pid in self.processes("") {
            signal(pid, rustix::process::Signal::KILL);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Processes started directly (no `shoal up`), each with its stderr in a
/// log file, killed on drop.
#[derive(Default)]
pub struct Processes {
    children: Vec<(String, Child)>,
}

impl Processes {
    pub fn spawn(&mut self, name: &str, args: &[&str], log: &Path) {
        let file = std::fs::File::create(log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("shoal starts");
        self.children.push((name.to_string(), child));
    }

    /// Takes over a child started elsewhere (with its own command line),
    /// under `name`.
    pub fn adopt(&mut self, name: &str, child: Child) {
        self.children.push((name.to_string(), child));
    }

    /// The process id of the process started as `name`.
    pub fn pid(&self, name: &str) -> u32 {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, child)| child.id())
            .expect("a started process")
    }

    /// The process id of the process started as `name`, if there is one.
    pub fn try_pid(&self, name: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, child)| child.id())
    }

    /// The exit status of the process started as `name`, if it has exited.
    pub fn try_wait(&mut self, name: &str) -> Option<std::process::ExitStatus> {
        self.children
            .iter_mut()
            .find(|(n, _)| n == name)
            .and_then(|(_, child)| child.try_wait().ok().flatten())
    }

    /// Kills the process started as `name` with SIGKILL and reaps it.
    pub fn kill(&mut self, name: &str) {
        let index = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .expect("a started process");
        let (_, mut child) = self.children.remove(index);
        // One that exited and was reaped (`try_wait`) has no pid to signal.
        if child.try_wait().ok().flatten().is_none() {
            assert!(signal(child.id(), rustix::process::Signal::KILL));
        }
        let _ = child.wait();
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The processes whose parent is `parent` (from `/proc/PID/stat`).
pub fn children_of(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after
        // its closing parenthesis.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}
