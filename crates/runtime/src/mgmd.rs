//! `shoal mgmd`: the management node process. One event loop (mio) owns
//! the listening socket and every connection, drives
//! `node::ManagementComposite` (the `cluster::ManagementNode` block and the
//! decisions around it: Hello claims, identification, ticks, what the
//! block's events ask for), writes the arbitrator's votes durably before a
//! turn's sends go out, and appends the cluster log to
//! `ndb_<id>_cluster.log` in the management node's DataDir.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cluster::ManagementSettings;
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use node::{ManagementComposite, ManagementOutput};
use protocol::identity::ClusterSecret;
use protocol::persisted::ArbitratorVotes;
use protocol::{ErrorReply, Message};

use crate::transport::{
    Connection, Eviction, IDENTIFICATION_TIMEOUT, Peer, ReceiveMemory, SlotLimits,
    TOO_MANY_CONNECTIONS_MYSQL_CODE, TOO_MANY_CONNECTIONS_NDB_CODE, UNIDENTIFIED_CONNECTIONS_MAX,
};

#[derive(Debug, Clone)]
pub struct MgmdOptions {
    pub config_file: PathBuf,
    /// The port from the command line; `None`: the management node's
    /// PortNumber in config.ini.
    pub port: Option<u16>,
}

/// Where the management node listens: the command line's port when it
/// names one, else PortNumber of its `[ndb_mgmd]` section, as in NDB.
pub fn listen_port(command_line: Option<u16>, port_number: u16) -> u16 {
    command_line.unwrap_or(port_number)
}

const LISTENER: Token = Token(0);
/// The arbitrator's votes, in the management node's DataDir.
const VOTES_FILE: &str = "arbitrator.votes";
/// The cluster secret (`protocol::identity`), in the management node's
/// DataDir: generated at the first start and kept, so nodes that got it
/// from an earlier run still prove themselves to each other.
const SECRET_FILE: &str = "cluster.secret";
const POLL_INTERVAL_MS: u64 = 50;
/// Most connections the management node holds, whatever the slot limits
/// say: a backstop, never reached while they hold.
const CONNECTIONS_MAX: usize = 1024;
/// Identified connections beyond the configured nodes: management clients
/// (`shoal mgm`, `shoal up`'s status checks) and nodes still asking for
/// their node id, which say Hello as node 0.
const MANAGEMENT_CLIENTS_MAX: usize = 64;
/// Write buffer per connection (the configuration text is the largest message).
const WRITE_BUFFER_BYTES_MAX: usize = 64 << 20;

fn timestamp() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

struct ClusterLog {
    file: File,
    node: u8,
}

impl ClusterLog {
    fn line(&mut self, text: &str) {
        let line = format!("{} [MgmtSrvr] INFO     -- {text}\n", timestamp());
        let _ = self.file.write_all(line.as_bytes());
        eprint!("mgmd {}: {line}", self.node);
    }
}

/// Runs the management node until SHUTDOWN or a signal.
pub fn run(options: &MgmdOptions) -> Result<(), String> {
    let terminate = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&terminate))
            .map_err(|e| format!("cannot install the signal handler: {e}"))?;
    }
    let file_name = options.config_file.display().to_string();
    let bytes =
        std::fs::read(&options.config_file).map_err(|e| format!("cannot read {file_name}: {e}"))?;
    let config = config::parse_bytes(&bytes, &file_name).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|e| format!("{file_name}: {e}"))?;
    let own = config
        .management_nodes
        .first()
        .expect("config validation requires a management node");
    let data_dir = resolve_dir(&options.config_file, &own.data_dir);
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("cannot create DataDir {}: {e}", data_dir.display()))?;
    let secret = cluster_secret(&data_dir.join(SECRET_FILE))?;
    let settings = ManagementSettings::new(&file_name, &text, config.clone(), secret);
    let log_path = data_dir.join(format!("ndb_{}_cluster.log", own.node_id));
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("cannot open the cluster log {}: {e}", log_path.display()))?;
    let mut cluster_log = ClusterLog {
        file,
        node: own.node_id,
    };
    for notice in &config.notices {
        cluster_log.line(notice);
    }
    let port = listen_port(options.port, own.port);
    let bind_host = if own.host_name == "localhost" {
        "127.0.0.1".to_string()
    } else {
        own.host_name.clone()
    };
    let bind: SocketAddr = format!("{bind_host}:{port}")
        .parse()
        .or_else(|_| format!("0.0.0.0:{port}").parse())
        .map_err(|e| format!("bad HostName {}: {e}", own.host_name))?;
    let mut listener = TcpListener::bind(bind).map_err(|e| {
        format!(
            "cannot listen on {bind}: {e} (another management node running? see --port, or \
             PortNumber in {file_name})"
        )
    })?;
    let mut poll = Poll::new().map_err(|e| e.to_string())?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .map_err(|e| e.to_string())?;
    let votes_path = data_dir.join(VOTES_FILE);
    let votes = match std::fs::read(&votes_path) {
        Ok(bytes) => match ArbitratorVotes::decode(&bytes) {
            Ok(votes) => Some(votes),
            Err(e) => {
                // Without its votes the arbitrator listens first and then
                // votes only above anything it heard of: safe, just slower.
                cluster_log.line(&format!(
                    "Ignoring {}: {e}; arbitration resumes after ArbitrationTimeout",
                    votes_path.display()
                ));
                None
            }
        },
        Err(_) => None,
    };
    let started = Instant::now();
    let mut composite = ManagementComposite::new(settings, crate::incarnation_now(), 0, votes);
    let configured_nodes =
        config.data_nodes.len() + config.management_nodes.len() + config.api_nodes.len();
    let receive_memory =
        ReceiveMemory::for_nodes(config.tcp.receive_buffer_memory_bytes, configured_nodes);
    let slot_limits = SlotLimits {
        unidentified_max: UNIDENTIFIED_CONNECTIONS_MAX,
        identified_max: configured_nodes + MANAGEMENT_CLIENTS_MAX,
        identification_timeout: IDENTIFICATION_TIMEOUT,
    };
    let mut strangers_closed = 0u64;
    cluster_log.line(&format!(
        "Management node {} started on {bind}: {} data node(s) in {} node group(s), \
         NoOfReplicas={}, cluster log {}",
        own.node_id,
        config.data_nodes.len(),
        config.node_groups.len(),
        config.no_of_replicas,
        log_path.display()
    ));
    let mut connections: BTreeMap<Token, Connection> = BTreeMap::new();
    let mut next_token = 1usize;
    let mut events = Events::with_capacity(1024);
    // What the composite asks for in one turn; reused from turn to turn.
    let mut output = ManagementOutput::default();
    let mut stopping: Option<Instant> = None;
    // Connections to close; a failed flush puts one here for the next turn,
    // whose effects then go out through the one path below.
    let mut closed: Vec<Token> = Vec::new();
    // Connections the slot limits closed this turn, for the block to hear of.
    let mut evicted: Vec<Token> = Vec::new();
    loop {
        let now = started.elapsed().as_millis() as u64;
        if terminate.load(Ordering::Relaxed) {
            cluster_log.line("Management node stopping on a signal");
            return Ok(());
        }
        if let Some(since) = stopping
            && since.elapsed() > Duration::from_millis(200)
        {
            cluster_log.line("Management node shut down");
            return Ok(());
        }
        let wait = if closed.is_empty() {
            composite
                .next_deadline_ms()
                .saturating_sub(now)
                .min(POLL_INTERVAL_MS)
        } else {
            0
        };
        match poll.poll(&mut events, Some(Duration::from_millis(wait))) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("event loop: {e}")),
        }
        output.clear();
        for event in events.iter() {
            let now = started.elapsed().as_millis() as u64;
            if event.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((stream, address)) => {
                            if connections.len() >= CONNECTIONS_MAX {
                                cluster_log.line(&format!(
                                    "Refusing {address}: {CONNECTIONS_MAX} connections open"
                                ));
                                continue;
                            }
                            let _ = stream.set_nodelay(true);
                            let token = Token(next_token);
                            next_token += 1;
                            let mut connection = Connection::new(
                                stream,
                                token,
                                address.to_string(),
                                WRITE_BUFFER_BYTES_MAX,
                            )
                            .with_receive_memory(receive_memory.clone());
                            if connection.register(poll.registry()).is_ok() {
                                composite.on_connected(token.0 as u64, &address.ip().to_string());
                                connections.insert(token, connection);
                            }
                            // Room for the newcomer is made at once, so a
                            // crowd of strangers never holds more slots.
                            let evictions =
                                slot_limits.evictions(&connections, None, Instant::now());
                            strangers_closed += close_evicted(
                                evictions,
                                &mut connections,
                                &poll,
                                &mut cluster_log,
                                &mut evicted,
                            );
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(_) => break,
                    }
                }
                continue;
            }
            let token = event.token();
            let Some(connection) = connections.get_mut(&token) else {
                continue;
            };
            let mut messages = Vec::new();
            let result = connection.read(&mut messages);
            for message in messages {
                composite.on_message(now, token.0 as u64, message, &mut output);
            }
            if !matches!(result, Ok(true)) {
                closed.push(token);
            }
        }
        let evictions = slot_limits.evictions(&connections, None, Instant::now());
        strangers_closed += close_evicted(
            evictions,
            &mut connections,
            &poll,
            &mut cluster_log,
            &mut evicted,
        );
        let now = started.elapsed().as_millis() as u64;
        for token in closed.drain(..) {
            if let Some(mut connection) = connections.remove(&token) {
                let _ = poll.registry().deregister(&mut connection.stream);
                composite.on_link_closed(now, token.0 as u64, &mut output);
            }
        }
        for token in evicted.drain(..) {
            composite.on_link_closed(now, token.0 as u64, &mut output);
        }
        if now >= composite.next_deadline_ms() {
            if strangers_closed > 0 {
                cluster_log.line(&format!(
                    "Closed {strangers_closed} connection(s) that did not say Hello within {} ms \
                     or made room for newer ones (at most {} wait at once)",
                    slot_limits.identification_timeout.as_millis(),
                    slot_limits.unidentified_max
                ));
                strangers_closed = 0;
            }
            composite.tick(now, &mut output);
        }
        for line in &output.logs {
            cluster_log.line(line);
        }
        // Silent nodes' connections: the composite has forgotten them.
        for (link, _) in output.close.drain(..) {
            if let Some(mut connection) = connections.remove(&Token(link as usize)) {
                let _ = poll.registry().deregister(&mut connection.stream);
            }
        }
        if output.stop.is_some() {
            stopping = Some(Instant::now());
        }
        if let Some(bytes) = &output.votes {
            // Durable before the votes leave in this turn's sends.
            write_durably(&votes_path, bytes).map_err(|e| {
                format!(
                    "cannot save the arbitrator's votes to {}: {e}",
                    votes_path.display()
                )
            })?;
        }
        // The slot limits count these connections as identified from now.
        for (link, peer) in &output.identified {
            if let Some(connection) = connections.get_mut(&Token(*link as usize)) {
                connection.peer = Some(Peer {
                    node: peer.node,
                    incarnation: peer.incarnation,
                    role: peer.role,
                });
            }
        }
        for (link, message) in output.sends.drain(..) {
            // A connection closed this turn has gone; so has its message.
            if let Some(target) = connections.get_mut(&Token(link as usize)) {
                target.queue(message);
            }
        }
        for (token, connection) in &mut connections {
            if connection.flush(poll.registry()).is_err() {
                closed.push(*token);
            }
        }
    }
}

/// Closes the evicted connections at once (so they stop holding slots and
/// memory) and lists them on `evicted`, for the block to hear of; an identified peer is first told why it is refused. Returns
/// how many strangers were closed, for the tick's log line.
fn close_evicted(
    evictions: Vec<Eviction>,
    connections: &mut BTreeMap<Token, Connection>,
    poll: &Poll,
    cluster_log: &mut ClusterLog,
    evicted: &mut Vec<Token>,
) -> u64 {
    let mut strangers = 0;
    for eviction in evictions {
        let Some(connection) = connections.get_mut(&eviction.token) else {
            continue;
        };
        if eviction.refuse {
            cluster_log.line(&format!(
                "Refusing {}: {}",
                connection.peer_address, eviction.reason
            ));
            connection.queue(Message::Refused {
                error: ErrorReply {
                    ndb_code: TOO_MANY_CONNECTIONS_NDB_CODE,
                    mysql_code: TOO_MANY_CONNECTIONS_MYSQL_CODE,
                    message: format!("the management node {}", eviction.reason),
                },
            });
            // Best effort: the refusal goes out if the socket takes it.
            let _ = connection.flush(poll.registry());
        } else {
            strangers += 1;
        }
        if let Some(mut connection) = connections.remove(&eviction.token) {
            let _ = poll.registry().deregister(&mut connection.stream);
        }
        evicted.push(eviction.token);
    }
    strangers
}

/// Reads the cluster secret at `path`, or generates one and writes it there
/// (readable by the owner only) when there is none.
fn cluster_secret(path: &Path) -> Result<ClusterSecret, String> {
    match std::fs::read(path) {
        Ok(bytes) => ClusterSecret::try_from(bytes.as_slice()).map_err(|_| {
            format!(
                "{} holds {} bytes, not a 32-byte cluster secret; remove it to make a new one \
                 (then restart every node)",
                path.display(),
                bytes.len()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret: ClusterSecret = crate::random_bytes()?;
            write_durably(path, &secret).map_err(|e| {
                format!("cannot save the cluster secret to {}: {e}", path.display())
            })?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
            Ok(secret)
        }
        Err(e) => Err(format!(
            "cannot read the cluster secret {}: {e}",
            path.display()
        )),
    }
}

/// Replaces `path` with `bytes` so that a crash leaves the old or the new
/// file, never a mix: write a temporary file, sync it, rename, sync the
/// directory.
fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    let mut file = File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// A DataDir relative to the config file's directory, as NDB resolves it.
fn resolve_dir(config_file: &Path, data_dir: &str) -> PathBuf {
    let path = Path::new(data_dir);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    config_file
        .parent()
        .map_or_else(|| path.to_path_buf(), |parent| parent.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_port_wins_over_port_number() {
        assert_eq!(listen_port(None, 11860), 11860);
        assert_eq!(listen_port(Some(1186), 11860), 1186);
        // Port 0 on the command line asks for any free port.
        assert_eq!(listen_port(Some(0), 11860), 0);
    }
}
