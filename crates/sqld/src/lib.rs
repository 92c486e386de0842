//! The SQL node's runtime (`shoal sqld`, mysqld): cluster connections,
//! the listener, and the client connections, each driving the sans-IO
//! `mysql-protocol` state machine and a `sql::session::Session`.
//!
//! By default worker threads, one per core, serve the client connections
//! as tasks (`worker`) and read the data nodes' sockets themselves, with a
//! cluster connection each (`--ndb-cluster-connection-pool`, as many as
//! the cluster has free API slots for); `--worker-threads 0` serves each
//! client connection on a thread of its own instead, whose session waits
//! on the cluster as a blocked thread. ARCHITECTURE.md says why.

pub mod connection;
pub mod keys;
mod worker;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shoal_client::ClusterPool;
use sql::SqlValue;
use sql::server::Server;

/// How long one attempt to connect waits for the data nodes.
const CLUSTER_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the listener looks at the stop flag while no client connects
/// (a client that connects is accepted at once).
const ACCEPT_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Most cluster connections one SQL node opens (`--ndb-cluster-connection-pool`).
pub const CONNECTION_POOL_MAX: usize = 63;
/// Most cluster connections opened by default (one per worker thread):
/// each takes an API slot, and tools need some too.
pub const DEFAULT_POOL_MAX: usize = 4;
/// Most `--worker-threads`: past a few per core they only take turns.
pub const WORKER_THREADS_MAX: usize = 256;
/// `--worker-spin` by default and at most, in µs (see `worker`'s spin).
pub const WORKER_SPIN_DEFAULT_US: u64 = 50;
pub const WORKER_SPIN_MAX_US: u64 = 500;

/// How the SQL node runs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub connectstring: String,
    pub bind_address: String,
    pub port: u16,
    /// Cluster connections; `None`: one per worker thread, as many as the
    /// cluster has free API slots for (at least one).
    pub pool_size: Option<usize>,
    /// Where keys and certificates live.
    pub data_dir: PathBuf,
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    pub max_connections: usize,
    pub max_allowed_packet: usize,
    /// Seconds an idle connection is kept (`wait_timeout`).
    pub wait_timeout_seconds: u64,
    /// Seconds to keep trying to reach the cluster at start
    /// (`ndb-wait-connected`, 120 as in mysqld).
    pub cluster_wait_seconds: u64,
    /// Worker threads serving the connections as tasks (`worker.rs`); 0
    /// serves each connection on a thread of its own.
    pub worker_threads: usize,
    /// µs a worker polls before it sleeps (`--worker-spin`).
    pub worker_spin_us: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            connectstring: "localhost:1186".into(),
            bind_address: "0.0.0.0".into(),
            port: 3306,
            pool_size: None,
            data_dir: PathBuf::from("./shoal-sqld"),
            ssl_cert: None,
            ssl_key: None,
            max_connections: sql::variables::MAX_CONNECTIONS_DEFAULT as usize,
            max_allowed_packet: sql::variables::MAX_ALLOWED_PACKET_DEFAULT as usize,
            wait_timeout_seconds: sql::variables::WAIT_TIMEOUT_DEFAULT as u64,
            cluster_wait_seconds: 120,
            worker_threads: default_worker_threads(),
            worker_spin_us: WORKER_SPIN_DEFAULT_US,
        }
    }
}

/// One worker per core: a worker runs whenever one of its connections can,
/// so more would only take turns on the same cores.
pub fn default_worker_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Connects to the cluster, retrying while it starts (a sandbox starts
/// its SQL node before the data nodes are up).
fn connect_pool(settings: &Settings, stop: &AtomicBool) -> Result<ClusterPool, String> {
    let deadline = Instant::now() + Duration::from_secs(settings.cluster_wait_seconds);
    let mut last_error = String::new();
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        let attempt =
            CLUSTER_ATTEMPT_TIMEOUT.min(Duration::from_secs(settings.cluster_wait_seconds.max(1)));
        // With workers, the cluster connections are driven: the workers
        // read the data nodes' sockets (see `worker`).
        // By default a connection per worker, so that a worker reads only
        // the replies of its own sessions (a long statement on one worker
        // then holds up no other worker's replies).
        let (size, required) = match settings.pool_size {
            Some(size) => (size, size),
            None => (settings.worker_threads.clamp(1, DEFAULT_POOL_MAX), 1),
        };
        let connected = if settings.worker_threads > 0 {
            ClusterPool::connect_driven(&settings.connectstring, size, required, attempt)
        } else {
            ClusterPool::connect(&settings.connectstring, size, attempt)
        };
        match connected {
            Ok(pool) => return Ok(pool),
            Err(e) => {
                if e.to_string() != last_error {
                    eprintln!(
                        "sqld: waiting for the cluster at {}: {e}",
                        settings.connectstring
                    );
                    last_error = e.to_string();
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    Err(format!(
        "could not connect to the cluster at {} within {}s: {last_error}",
        settings.connectstring, settings.cluster_wait_seconds
    ))
}

/// Runs the SQL node until `stop` is set.
pub fn run(settings: Settings, stop: Arc<AtomicBool>) -> Result<(), String> {
    if let Some(size) = settings.pool_size
        && (size == 0 || size > CONNECTION_POOL_MAX)
    {
        return Err(format!(
            "--ndb-cluster-connection-pool must be 1 to {CONNECTION_POOL_MAX}, not {size}"
        ));
    }
    if settings.worker_threads > WORKER_THREADS_MAX {
        return Err(format!(
            "--worker-threads must be 0 to {WORKER_THREADS_MAX}, not {}",
            settings.worker_threads
        ));
    }
    if settings.worker_spin_us > WORKER_SPIN_MAX_US {
        return Err(format!(
            "--worker-spin must be 0 to {WORKER_SPIN_MAX_US} microseconds, not {}",
            settings.worker_spin_us
        ));
    }
    let keys = keys::load_or_generate(
        &settings.data_dir,
        settings.ssl_cert.as_deref(),
        settings.ssl_key.as_deref(),
    )?;
    let address: SocketAddr = format!("{}:{}", settings.bind_address, settings.port)
        .parse()
        .map_err(|e| format!("bad --bind-address {}: {e}", settings.bind_address))?;
    // Bind first: a port in use is reported before waiting for the cluster.
    let listener =
        TcpListener::bind(address).map_err(|e| format!("cannot listen on {address}: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot set the listener non-blocking: {e}"))?;
    let pool = connect_pool(&settings, &stop)?;
    let overrides = [
        (
            "max_connections",
            SqlValue::Int(settings.max_connections as i64),
        ),
        (
            "max_allowed_packet",
            SqlValue::Int(settings.max_allowed_packet as i64),
        ),
        (
            "wait_timeout",
            SqlValue::Int(settings.wait_timeout_seconds as i64),
        ),
        ("port", SqlValue::Int(i64::from(settings.port))),
    ];
    let server = Arc::new(Server::new(pool, &overrides));
    {
        let mut native = server
            .pool
            .session()
            .map_err(|e| format!("no session: {e}"))?;
        let cluster = server.pool.connections()[0].clone();
        sql::ddl::ensure_system_tables(&cluster, &mut native)
            .map_err(|e| format!("cannot create the system tables: {e}"))?;
    }
    let shared = Arc::new(connection::Shared::new(
        Arc::clone(&server),
        keys,
        &settings,
    ));
    println!(
        "sqld: ready for connections on {address} (node id {}, {} cluster connection(s))",
        server.pool.connections()[0].node_id(),
        server.pool.connections().len()
    );
    let workers = match settings.worker_threads {
        0 => None,
        count => Some(worker::Workers::start(
            count,
            Duration::from_micros(settings.worker_spin_us),
            Arc::clone(&shared),
        )?),
    };
    // The listener is non-blocking: wait for a client in epoll, waking at
    // least every ACCEPT_POLL_INTERVAL to look at the stop flag.
    let mut poll = mio::Poll::new().map_err(|e| format!("cannot create a poller: {e}"))?;
    {
        use std::os::fd::AsRawFd;
        poll.registry()
            .register(
                &mut mio::unix::SourceFd(&listener.as_raw_fd()),
                mio::Token(0),
                mio::Interest::READABLE,
            )
            .map_err(|e| format!("cannot watch the listener: {e}"))?;
    }
    let mut events = mio::Events::with_capacity(4);
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => match &workers {
                Some(workers) => workers.assign(stream, peer),
                None => {
                    let shared = Arc::clone(&shared);
                    let spawned = std::thread::Builder::new()
                        .name("sql-connection".into())
                        .spawn(move || connection::serve(shared, stream, peer));
                    if let Err(e) = spawned {
                        eprintln!("sqld: cannot start a connection thread: {e}");
                    }
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Edge-triggered: a client that came before this wait is
                // accepted by the next `accept` (it is tried after every
                // wake, timeout or not).
                if let Err(e) = poll.poll(&mut events, Some(ACCEPT_POLL_INTERVAL))
                    && e.kind() != std::io::ErrorKind::Interrupted
                {
                    eprintln!("sqld: waiting for clients failed: {e}");
                    std::thread::sleep(ACCEPT_POLL_INTERVAL);
                }
            }
            Err(e) => {
                eprintln!("sqld: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    Ok(())
}
