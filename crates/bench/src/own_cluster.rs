//! The benchmarks' own clusters: a management node and two data nodes
//! (one node group) started as processes of the `shoal` executable,
//! directly and without an angel, so that a signal reaches the data node
//! itself. Every process is killed on drop, and the directory removed
//! unless a failure keeps it for its logs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shoal_client::{Cluster, ClusterState};

/// Every wait of a benchmark is bounded by this.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The cluster's processes; every one is killed when dropped, and the
/// directory removed unless a failure keeps it for its logs.
pub struct OwnCluster {
    executable: PathBuf,
    directory: PathBuf,
    keep: bool,
    pub connectstring: String,
    config_file: String,
    port: u16,
    management: Option<Child>,
    data_nodes: Vec<(u8, Child)>,
    /// Data nodes stopped with SIGSTOP, resumed on drop.
    pub stopped: Vec<u8>,
    starts: u32,
}

impl OwnCluster {
    /// Starts a management node and two data nodes (one node group) in a
    /// new temporary directory named after `purpose`, with `settings`
    /// lines added to `[ndbd default]`.
    pub fn start(
        executable: &Path,
        purpose: &str,
        data_memory_bytes: u64,
        settings: &str,
    ) -> Result<OwnCluster, String> {
        let directory =
            std::env::temp_dir().join(format!("shoal-bench-{purpose}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).map_err(|e| e.to_string())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let text = config::sandbox_config_text(
            directory
                .to_str()
                .ok_or("the temporary directory is not UTF-8")?,
            2,
            2,
            port,
            data_memory_bytes,
        );
        let text = text.replacen(
            "[ndbd default]\n",
            &format!("[ndbd default]\n{settings}"),
            1,
        );
        let config_file = directory.join("config.ini");
        std::fs::write(&config_file, text).map_err(|e| e.to_string())?;
        let mut cluster = OwnCluster {
            executable: executable.to_path_buf(),
            directory,
            keep: false,
            connectstring: format!("127.0.0.1:{port}"),
            config_file: config_file.display().to_string(),
            port,
            management: None,
            data_nodes: Vec::new(),
            stopped: Vec::new(),
            starts: 0,
        };
        cluster.start_management()?;
        std::thread::sleep(Duration::from_millis(300));
        for node in [2, 3] {
            cluster.start_data_node(node)?;
        }
        Ok(cluster)
    }

    /// Starts the management node (again).
    pub fn start_management(&mut self) -> Result<(), String> {
        self.starts += 1;
        let port = self.port.to_string();
        let args = ["mgmd", "--config-file", &self.config_file, "--port", &port];
        let child = self.spawn(&args, &format!("mgmd.{}.log", self.starts))?;
        self.management = Some(child);
        Ok(())
    }

    /// Kills the management node with SIGKILL.
    pub fn kill_management(&mut self) -> Result<(), String> {
        let mut child = self
            .management
            .take()
            .ok_or("the management node is not running")?;
        child
            .kill()
            .map_err(|e| format!("SIGKILL to the management node: {e}"))?;
        let _ = child.wait();
        Ok(())
    }

    /// The pids of the running data nodes.
    pub fn data_node_pids(&self) -> Vec<u32> {
        self.data_nodes
            .iter()
            .map(|(_, child)| child.id())
            .collect()
    }

    fn spawn(&self, args: &[&str], log: &str) -> Result<Child, String> {
        let file = std::fs::File::create(self.directory.join(log)).map_err(|e| e.to_string())?;
        Command::new(&self.executable)
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start `{} {}`: {e}",
                    self.executable.display(),
                    args[0]
                )
            })
    }

    /// Starts data node `node` (again), as `shoal up` does: without an
    /// angel, so SIGKILL and SIGSTOP reach the node itself.
    pub fn start_data_node(&mut self, node: u8) -> Result<(), String> {
        self.starts += 1;
        let node_text = node.to_string();
        let args = [
            "datad",
            "-c",
            &self.connectstring,
            "--ndb-nodeid",
            &node_text,
            "--no-angel",
        ];
        let child = self.spawn(&args, &format!("datad-{node}.{}.log", self.starts))?;
        self.data_nodes.push((node, child));
        Ok(())
    }

    pub fn data_node_pid(&self, node: u8) -> Result<u32, String> {
        self.data_nodes
            .iter()
            .find(|(n, _)| *n == node)
            .map(|(_, child)| child.id())
            .ok_or_else(|| format!("data node {node} is not running"))
    }

    pub fn kill(&mut self, node: u8) -> Result<(), String> {
        let index = self
            .data_nodes
            .iter()
            .position(|(n, _)| *n == node)
            .ok_or_else(|| format!("data node {node} is not running"))?;
        let (_, mut child) = self.data_nodes.remove(index);
        child
            .kill()
            .map_err(|e| format!("SIGKILL to node {node}: {e}"))?;
        let _ = child.wait();
        Ok(())
    }

    pub fn signal(&mut self, node: u8, signal: rustix::process::Signal) -> Result<(), String> {
        send_signal(self.data_node_pid(node)?, signal)?;
        if signal == rustix::process::Signal::STOP {
            self.stopped.push(node);
        } else if signal == rustix::process::Signal::CONT {
            self.stopped.retain(|n| *n != node);
        }
        Ok(())
    }

    /// The members of the cluster state, as a running, unstopped data node
    /// sees them.
    pub fn members(&self, client: &Cluster) -> Vec<u8> {
        self.state(client)
            .map(|state| state.members.iter().map(|m| m.node).collect())
            .unwrap_or_default()
    }

    /// The cluster state as a running, unstopped data node sees it.
    pub fn state(&self, client: &Cluster) -> Option<ClusterState> {
        self.data_nodes
            .iter()
            .filter(|(node, _)| !self.stopped.contains(node))
            .find_map(|(node, _)| client.cluster_state(*node).ok())
    }

    pub fn wait_removed(&self, client: &Cluster, node: u8) -> Result<Duration, String> {
        let started = Instant::now();
        wait(&format!("node {node} to be removed"), || {
            let members = self.members(client);
            !members.is_empty() && !members.contains(&node)
        })?;
        Ok(started.elapsed())
    }

    /// Waits until `node` is started and a member. (Whether `client` is
    /// connected to it says nothing: the client dials a data node again
    /// only when it next sends it something.)
    pub fn wait_started(&self, client: &Cluster, node: u8) -> Result<(), String> {
        // Asked of a data node through the client's connection, not with
        // `shoal mgm -e STATUS`: a process started every poll took enough
        // of this machine's CPU to show as write latency during the
        // restart, every 20 ms.
        wait(&format!("node {node} to be started"), || {
            self.state(client).is_some_and(|state| {
                state.members.iter().any(|m| m.node == node)
                    && !state.starting.iter().any(|m| m.node == node)
            })
        })
    }

    /// Keeps the cluster's directory and says where it is, after `error`.
    pub fn keep_logs(&mut self, error: String) -> String {
        self.keep = true;
        format!(
            "{error} (the cluster's logs are kept in {})",
            self.directory.display()
        )
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        for node in self.stopped.clone() {
            let _ = self.signal(node, rustix::process::Signal::CONT);
        }
        let management = self.management.iter_mut();
        for child in self.data_nodes.iter_mut().map(|(_, c)| c).chain(management) {
            let _ = child.kill();
            let _ = child.wait();
        }
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.directory);
        }
    }
}

pub fn send_signal(pid: u32, signal: rustix::process::Signal) -> Result<(), String> {
    let process = rustix::process::Pid::from_raw(pid as i32).ok_or("a pid of 0")?;
    rustix::process::kill_process(process, signal).map_err(|e| format!("{signal:?} to {pid}: {e}"))
}

/// Polls `ready` every 20 ms for at most `WAIT_TIMEOUT`.
pub fn wait(what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + WAIT_TIMEOUT;
    while Instant::now() < deadline {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("gave up waiting for {what} after {WAIT_TIMEOUT:?}"))
}
