//! One client connection: a thread that reads the socket (or its TLS
//! stream), drives `mysql_protocol::ServerConnection`, runs commands on
//! its `sql::session::Session`, and writes each response with one write.
//!
//! A panic while running a command is caught here: the client gets an
//! error and the connection closes, the process and the other connections
//! go on.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mysql_protocol::constants::capabilities::{CLIENT_FOUND_ROWS, CLIENT_MULTI_STATEMENTS};
use mysql_protocol::constants::status::{
    SERVER_MORE_RESULTS_EXISTS, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS,
};
use mysql_protocol::result_set::RowFormat;
use mysql_protocol::{
    Account, AuthPlugin, ColumnDefinition, Command, Event, OkPacket, ServerConfig, ServerConnection,
};
use sql::outcome::Outcome;
use sql::server::{Activity, Process, Server};
use sql::session::{Session, StatementResult};
use sql::value::{SqlValue, to_protocol, write_text};
use sql::{SqlError, SqlType};

use crate::Settings;
use crate::keys::Keys;
use crate::worker::WaitFor;

/// How long a client has to finish the handshake and log in.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes read from the socket at once.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// A response is written out once its buffer holds this much, so a big
/// result set does not sit in memory whole.
const FLUSH_BYTES: usize = 256 * 1024;
/// How long a response may wait for the client to take it (MySQL's
/// `net_write_timeout` default).
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Long data one prepared statement may accumulate (`max_allowed_packet`
/// bounds each piece; this bounds their sum).
const LONG_DATA_BYTES_MAX: usize = 64 << 20;
/// How much of a statement's text the process list shows (MySQL keeps the
/// whole text for `SHOW FULL PROCESSLIST`; a bulk INSERT's megabytes are
/// not worth a copy per statement).
const PROCESS_INFO_BYTES_MAX: usize = 4096;

/// What every connection shares.
pub struct Shared {
    pub server: Arc<Server>,
    pub keys: Keys,
    pub protocol: Arc<ServerConfig>,
    pub max_connections: usize,
    pub wait_timeout: Duration,
}

impl Shared {
    pub fn new(server: Arc<Server>, keys: Keys, settings: &Settings) -> Shared {
        let protocol = ServerConfig {
            server_version: sql::variables::SERVER_VERSION.to_string(),
            default_auth_plugin: AuthPlugin::CachingSha2Password,
            tls_available: true,
            max_allowed_packet: settings.max_allowed_packet,
            rsa_public_key_pem: Some(keys.rsa_public_pem.clone()),
            ..ServerConfig::default()
        };
        Shared {
            server,
            keys,
            protocol: Arc::new(protocol),
            max_connections: settings.max_connections,
            wait_timeout: Duration::from_secs(settings.wait_timeout_seconds.max(1)),
        }
    }
}

/// The socket, plain or under TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buffer),
            Stream::Tls(s) => s.read(buffer),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(bytes),
            Stream::Tls(s) => s.write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// Per prepared statement: its parameters' types and long data.
#[derive(Default)]
struct StatementState {
    types: Vec<(mysql_protocol::FieldType, bool)>,
    long_data: Vec<Option<Vec<u8>>>,
}

/// Counts a connection in `Threads_connected` while it lives.
struct Counted(Arc<Server>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.threads_connected.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one client until it leaves, errs, idles past `wait_timeout` or
/// is killed.
pub fn serve(shared: Arc<Shared>, stream: TcpStream, peer: SocketAddr) {
    let server = Arc::clone(&shared.server);
    server.connections.fetch_add(1, Ordering::Relaxed);
    let connected = server.threads_connected.fetch_add(1, Ordering::Relaxed) + 1;
    let _counted = Counted(Arc::clone(&server));
    let connection_id = server.next_connection_id();
    if let Err(e) = stream.set_nodelay(true) {
        eprintln!("sqld: connection {connection_id}: TCP_NODELAY: {e}");
    }
    // A thread blocks on its socket; a worker's task waits for it instead
    // (`worker.rs` makes the socket non-blocking).
    if !shoal_client::task::in_task() && stream.set_nonblocking(false).is_err() {
        return;
    }
    let mut stream = Stream::Plain(stream);
    let peer_host = match peer.ip() {
        ip if ip.is_loopback() => "localhost".to_string(),
        ip => ip.to_string(),
    };
    let scramble = scramble();
    let mut protocol = ServerConnection::new(
        Arc::clone(&shared.protocol),
        u32::try_from(connection_id).unwrap_or(u32::MAX),
        scramble,
        &peer_host,
    );
    let mut out = Vec::with_capacity(16 * 1024);
    // MySQL allows max_connections, plus one for an administrator.
    if connected as usize > shared.max_connections + 1 {
        protocol.write_error(1040, "08004", "Too many connections", &mut out);
        let _ = write_all(&mut stream, &out);
        server.aborted_connects.fetch_add(1, Ordering::Relaxed);
        return;
    }
    protocol.write_handshake(&mut out);
    let mut connection = Connection {
        shared: Arc::clone(&shared),
        protocol,
        stream,
        out,
        session: None,
        peer_host,
        connection_id,
        statements: HashMap::new(),
        killed: Arc::new(AtomicBool::new(false)),
        query_killed: Arc::new(AtomicBool::new(false)),
        multi_statements: false,
        activity: Arc::new(std::sync::Mutex::new(Activity {
            database: None,
            command: "Connect",
            since: Instant::now(),
            info: String::new(),
            info_shown: false,
        })),
    };
    let result = connection.run();
    if let Err(reason) = result
        && !connection.protocol.is_authenticated()
    {
        server.aborted_connects.fetch_add(1, Ordering::Relaxed);
        let _ = reason;
    }
    if let Some(session) = &mut connection.session {
        session.reset();
    }
    server
        .processes
        .lock()
        .expect("processes")
        .remove(&connection_id);
    let _ = connection.stream.tcp().shutdown(std::net::Shutdown::Both);
}

/// After a socket said "would block": a task (a worker's connection, whose
/// socket is non-blocking) waits for it until `deadline`; on a thread the
/// socket blocks, so "would block" was its timeout and stays an error.
fn wait_io(error: std::io::Error, wait_for: WaitFor, deadline: Instant) -> std::io::Result<()> {
    if error.kind() != ErrorKind::WouldBlock {
        return Err(error);
    }
    if Instant::now() >= deadline {
        return Err(ErrorKind::TimedOut.into());
    }
    if crate::worker::wait_for_socket(wait_for, deadline) {
        Ok(())
    } else {
        Err(error)
    }
}

/// `write_all` and `flush`, waiting as `wait_io` does.
fn write_all(stream: &mut Stream, mut bytes: &[u8]) -> std::io::Result<()> {
    let deadline = Instant::now() + WRITE_TIMEOUT;
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(written) => bytes = &bytes[written..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => wait_io(e, WaitFor::Writable, deadline)?,
        }
    }
    loop {
        match stream.flush() {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => wait_io(e, WaitFor::Writable, deadline)?,
        }
    }
}

/// 20 random bytes without NUL (the handshake's scramble is NUL-terminated).
fn scramble() -> [u8; 20] {
    let mut bytes = [0u8; 20];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: the time is a poor but non-constant seed,
        // and the digests still differ per connection.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (nanos >> (i % 16 * 8)) as u8;
        }
    }
    for b in &mut bytes {
        // Printable ASCII, as MySQL's scrambles are.
        *b = 0x21 + (*b % 94);
    }
    bytes
}

struct Connection {
    shared: Arc<Shared>,
    protocol: ServerConnection,
    stream: Stream,
    out: Vec<u8>,
    session: Option<Session>,
    peer_host: String,
    connection_id: u64,
    statements: HashMap<u32, StatementState>,
    killed: Arc<AtomicBool>,
    query_killed: Arc<AtomicBool>,
    multi_statements: bool,
    activity: Arc<std::sync::Mutex<Activity>>,
}

impl Connection {
    fn flush(&mut self) -> Result<(), String> {
        if self.out.is_empty() {
            return Ok(());
        }
        let result = write_all(&mut self.stream, &self.out);
        self.out.clear();
        result.map_err(|e| format!("write: {e}"))
    }

    fn run(&mut self) -> Result<(), String> {
        self.flush()?;
        let mut buffer = vec![0u8; READ_BUFFER_BYTES];
        let started = Instant::now();
        // The socket's read timeout as last set: once logged in it stays
        // wait_timeout, and is not set again before every read.
        let mut timeout_set = None;
        let in_task = shoal_client::task::in_task();
        // The last read of the socket came short: it was empty then.
        let mut drained = false;
        loop {
            let timeout = if self.protocol.is_authenticated() {
                // The session's own wait_timeout, as MySQL's (it starts as
                // the global one, which --wait-timeout sets).
                match &self.session {
                    Some(session) => {
                        Duration::from_secs(session.session_int("wait_timeout").max(1) as u64)
                    }
                    None => self.shared.wait_timeout,
                }
            } else {
                CONNECT_TIMEOUT
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1))
            };
            if timeout_set != Some(timeout) && !in_task {
                self.stream
                    .tcp()
                    .set_read_timeout(Some(timeout))
                    .map_err(|e| format!("set timeout: {e}"))?;
                timeout_set = Some(timeout);
            }
            let deadline = Instant::now() + timeout;
            // On a thread, "would block" is the read timeout: `wait_io`
            // returns it as the error it is.
            let read = loop {
                // A plain socket read short last time was empty then; a
                // read now finds input only if some came since, which the
                // worker tells (`take_readable`). Under TLS a short read
                // of plaintext says nothing of the socket.
                let seen = crate::worker::take_readable();
                if drained && !seen && matches!(self.stream, Stream::Plain(_)) {
                    if let Err(e) =
                        wait_io(ErrorKind::WouldBlock.into(), WaitFor::Readable, deadline)
                    {
                        break Err(e);
                    }
                    continue;
                }
                match self.stream.read(&mut buffer) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        // Read again once an edge came; at the deadline
                        // `wait_io` says so.
                        drained = true;
                        if let Err(e) = wait_io(e, WaitFor::Readable, deadline) {
                            break Err(e);
                        }
                    }
                    other => {
                        if let Ok(n) = other {
                            drained = n < buffer.len();
                        }
                        break other;
                    }
                }
            };
            let read = match read {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if self.protocol.is_authenticated() {
                        // MySQL 8.0.24+ tells the client why before closing.
                        self.protocol.write_error(
                            4031,
                            "HY000",
                            "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior.",
                            &mut self.out,
                        );
                        let _ = self.flush();
                    }
                    return Err("timed out".into());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read: {e}")),
            };
            let mut offered = &buffer[..read];
            while !offered.is_empty() {
                let taken = self.protocol.receive(offered);
                offered = &offered[taken..];
                if !self.handle_events()? {
                    return Ok(());
                }
                if taken == 0 && !offered.is_empty() {
                    return Err("the protocol took no input".into());
                }
            }
        }
    }

    /// Handles every event the input so far gives; false when the
    /// connection is to close.
    fn handle_events(&mut self) -> Result<bool, String> {
        loop {
            let event = match self.protocol.next_event(&mut self.out) {
                Ok(Some(event)) => event,
                Ok(None) => {
                    self.flush()?;
                    return Ok(true);
                }
                Err(_) => {
                    let _ = self.flush();
                    return Ok(false);
                }
            };
            match event {
                Event::StartTls => self.start_tls()?,
                Event::Authenticate(request) => {
                    let account = self.account(&request.user);
                    self.protocol
                        .supply_account(account.as_ref(), &mut self.out);
                }
                Event::DecryptPassword { ciphertext } => {
                    let plaintext =
                        crate::keys::decrypt_password(&self.shared.keys.rsa_private, &ciphertext);
                    self.protocol
                        .supply_decrypted_password(plaintext.as_deref(), &mut self.out);
                }
                Event::Authenticated(authenticated) => {
                    if !self.logged_in(authenticated)? {
                        self.flush()?;
                        return Ok(false);
                    }
                }
                Event::AccessDenied { .. } => {
                    self.flush()?;
                    return Ok(false);
                }
                Event::Command(command) => {
                    if matches!(command, Command::Quit) {
                        return Ok(false);
                    }
                    let keep = match std::panic::catch_unwind(AssertUnwindSafe(|| {
                        self.command(command)
                    })) {
                        Ok(keep) => keep,
                        Err(panic) => {
                            let what = panic
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            eprintln!(
                                "sqld: connection {}: a statement panicked: {what}",
                                self.connection_id
                            );
                            self.out.clear();
                            self.protocol.write_error(
                                1105,
                                "HY000",
                                &format!("Internal error running the statement ({what}); the connection is closed"),
                                &mut self.out,
                            );
                            let _ = self.flush();
                            return Ok(false);
                        }
                    };
                    self.flush()?;
                    if !keep || self.killed.load(Ordering::Relaxed) {
                        return Ok(false);
                    }
                }
            }
            self.flush()?;
        }
    }

    fn start_tls(&mut self) -> Result<(), String> {
        self.flush()?;
        let pending = self.protocol.take_pending_input();
        let Stream::Plain(tcp) = &self.stream else {
            return Err("TLS requested twice".into());
        };
        let tcp = tcp.try_clone().map_err(|e| format!("socket: {e}"))?;
        let mut tls = rustls::ServerConnection::new(Arc::clone(&self.shared.keys.tls))
            .map_err(|e| format!("TLS: {e}"))?;
        if !pending.is_empty() {
            let mut reader = &pending[..];
            while !reader.is_empty() {
                tls.read_tls(&mut reader).map_err(|e| format!("TLS: {e}"))?;
            }
            tls.process_new_packets().map_err(|e| format!("TLS: {e}"))?;
        }
        let mut stream = rustls::StreamOwned::new(tls, tcp);
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        while stream.conn.is_handshaking() {
            match stream.conn.complete_io(&mut stream.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // The handshake both reads and writes: whichever it needs.
                Err(e) => {
                    let wait_for = if stream.conn.wants_write() {
                        WaitFor::Writable
                    } else {
                        WaitFor::Readable
                    };
                    wait_io(e, wait_for, deadline).map_err(|e| format!("TLS handshake: {e}"))?
                }
            }
        }
        self.stream = Stream::Tls(Box::new(stream));
        self.protocol.tls_established();
        Ok(())
    }

    /// The stored account for `user` from this client's host.
    fn account(&mut self, user: &str) -> Option<Account> {
        let mut native = crate::worker::native_session(&self.shared.server.pool).ok()?;
        let (_, credentials) = sql::users::lookup(&mut native, user, &self.peer_host).ok()??;
        Some(Account {
            plugin: AuthPlugin::CachingSha2Password,
            native_digest: credentials.native_digest,
            sha2_digest: credentials.sha2_digest,
            force_full_authentication: false,
        })
    }

    fn status(&self) -> u16 {
        let mut status = 0;
        if let Some(session) = &self.session {
            if session.autocommit() {
                status |= SERVER_STATUS_AUTOCOMMIT;
            }
            if session.in_transaction() {
                status |= SERVER_STATUS_IN_TRANS;
            }
        } else {
            status |= SERVER_STATUS_AUTOCOMMIT;
        }
        status
    }

    fn warnings(&self) -> u16 {
        self.session.as_ref().map_or(0, |s| s.warning_count())
    }

    /// After a successful login (or COM_CHANGE_USER): the session; false
    /// when the named database does not exist (the client got 1049).
    fn logged_in(
        &mut self,
        authenticated: mysql_protocol::AuthenticatedSession,
    ) -> Result<bool, String> {
        let server = Arc::clone(&self.shared.server);
        if authenticated.change_user
            && let Some(session) = &mut self.session
        {
            session.reset();
        }
        if self.session.is_none() || authenticated.change_user {
            let native = match crate::worker::native_session(&server.pool) {
                Ok(native) => native,
                Err(e) => {
                    let error = sql::session::cluster_error(e);
                    self.write_sql_error(&error);
                    return Ok(false);
                }
            };
            let mut session = Session::new(
                Arc::clone(&server),
                native,
                self.connection_id,
                authenticated.user.clone(),
                self.peer_host.clone(),
            );
            session.query_killed = Arc::clone(&self.query_killed);
            session.client_found_rows = self.protocol.capabilities() & CLIENT_FOUND_ROWS != 0;
            self.session = Some(session);
        }
        self.multi_statements = self.protocol.capabilities() & CLIENT_MULTI_STATEMENTS != 0;
        let session = self.session.as_mut().expect("just created");
        if let Some(database) = &authenticated.database
            && !database.is_empty()
            && let Err(error) = session.use_database(database)
        {
            let error = SqlError::new(error.code, error.message);
            self.write_sql_error(&error);
            return Ok(false);
        }
        let interrupter = session.native.interrupter();
        *self.activity.lock().expect("activity") = Activity {
            database: session.database.clone(),
            command: "Sleep",
            since: Instant::now(),
            info: String::new(),
            info_shown: false,
        };
        let closer: Option<Arc<dyn Fn() + Send + Sync>> =
            self.stream.tcp().try_clone().ok().map(|socket| {
                Arc::new(move || {
                    // Reads then end; what is being written still goes out.
                    let _ = socket.shutdown(std::net::Shutdown::Read);
                }) as Arc<dyn Fn() + Send + Sync>
            });
        server.processes.lock().expect("processes").insert(
            self.connection_id,
            Process {
                user: authenticated.user.clone(),
                host: self.peer_host.clone(),
                activity: Arc::clone(&self.activity),
                interrupter,
                query_killed: Arc::clone(&self.query_killed),
                connection_killed: Arc::clone(&self.killed),
                closer,
            },
        );
        let status = self.status();
        self.protocol.write_ok(
            &OkPacket {
                status,
                ..OkPacket::default()
            },
            &mut self.out,
        );
        Ok(true)
    }

    fn write_sql_error(&mut self, error: &SqlError) {
        let state = String::from_utf8_lossy(&error.sqlstate).into_owned();
        self.protocol
            .write_error(error.code, &state, &error.message, &mut self.out);
    }

    /// What the process list shows of this connection; `info`'s first
    /// `PROCESS_INFO_BYTES_MAX` bytes are copied into the buffer the last
    /// one left (a statement's text, once per statement).
    fn set_process(&self, command: &'static str, info: Option<&str>) {
        let mut activity = self.activity.lock().expect("activity");
        activity.command = command;
        activity.since = Instant::now();
        match info {
            Some(text) => {
                let mut end = text.len().min(PROCESS_INFO_BYTES_MAX);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                activity.info.clear();
                activity.info.push_str(&text[..end]);
                activity.info_shown = true;
            }
            // The buffer stays for the next statement.
            None => activity.info_shown = false,
        }
        if let Some(session) = &self.session
            && activity.database != session.database
        {
            activity.database = session.database.clone();
        }
    }

    /// Runs one command and writes its answer; false closes the connection.
    fn command(&mut self, command: Command) -> bool {
        if self.session.is_none() {
            self.protocol.write_unknown_command(&mut self.out);
            return true;
        }
        match command {
            Command::Query(text) => {
                let text = String::from_utf8(text)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                self.set_process("Query", Some(&text));
                let multi = self.multi_statements;
                let results = self
                    .session
                    .as_mut()
                    .expect("session")
                    .run_query(&text, multi);
                self.write_results(results, RowFormat::Text);
                self.set_process("Sleep", None);
            }
            Command::InitDb(database) => {
                let result = self
                    .session
                    .as_mut()
                    .expect("session")
                    .use_database(&database);
                match result {
                    Ok(()) => self.write_ok(0, 0, ""),
                    Err(error) => self.write_sql_error(&error),
                }
            }
            Command::Ping => self.write_ok(0, 0, ""),
            Command::Quit => return false,
            Command::Statistics => {
                let server = &self.shared.server;
                let uptime = server.started.elapsed().as_secs().max(1);
                let questions = server.questions.load(Ordering::Relaxed);
                let text = format!(
                    "Uptime: {uptime}  Threads: {}  Questions: {questions}  Slow queries: 0  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: {:.3}",
                    server.threads_connected.load(Ordering::Relaxed),
                    questions as f64 / uptime as f64
                );
                self.protocol
                    .write_text_packet(text.as_bytes(), &mut self.out);
            }
            Command::FieldList { table, wildcard } => {
                let session = self.session.as_mut().expect("session");
                let result = session
                    .current_database()
                    .map(str::to_string)
                    .and_then(|database| session.table(&database, &table));
                match result {
                    Ok(table) => {
                        let columns: Vec<ColumnDefinition> = table
                            .visible()
                            .filter(|(_, c)| {
                                wildcard.is_empty() || sql::show::like(&c.name, &wildcard)
                            })
                            .map(|(i, c)| {
                                let sql_type = &table.column_types[i];
                                ColumnDefinition {
                                    schema: table.database.clone(),
                                    table: table.name.clone(),
                                    org_table: table.name.clone(),
                                    name: c.name.clone(),
                                    org_name: c.name.clone(),
                                    collation_id: sql::outcome::collation_id(sql_type),
                                    length: sql_type.length,
                                    field_type: sql_type.field_type,
                                    flags: sql_type.flags,
                                    decimals: sql_type.decimals,
                                }
                            })
                            .collect();
                        let status = self.status();
                        self.protocol
                            .write_field_list(&columns, status, &mut self.out);
                    }
                    Err(error) => self.write_sql_error(&error),
                }
            }
            Command::ProcessKill(id) => {
                let text = format!("KILL {id}");
                let results = self
                    .session
                    .as_mut()
                    .expect("session")
                    .run_query(&text, false);
                self.write_results(results, RowFormat::Text);
            }
            Command::ChangeUser(_) => {
                // The protocol turns COM_CHANGE_USER into Event::Authenticate.
                self.protocol.write_unknown_command(&mut self.out);
            }
            Command::ResetConnection => {
                let session = self.session.as_mut().expect("session");
                session.reset();
                self.statements.clear();
                self.write_ok(0, 0, "");
            }
            Command::SetOption(option) => match option {
                0 => {
                    self.multi_statements = true;
                    let status = self.status();
                    self.protocol.write_eof(status, 0, &mut self.out);
                }
                1 => {
                    self.multi_statements = false;
                    let status = self.status();
                    self.protocol.write_eof(status, 0, &mut self.out);
                }
                _ => self
                    .protocol
                    .write_error(1047, "08S01", "Unknown command", &mut self.out),
            },
            Command::StmtPrepare(text) => {
                let text = String::from_utf8_lossy(&text).into_owned();
                let session = self.session.as_mut().expect("session");
                match session.prepare(&text) {
                    Ok((id, statement)) => {
                        let parameter = ColumnDefinition {
                            schema: String::new(),
                            table: String::new(),
                            org_table: String::new(),
                            name: "?".into(),
                            org_name: String::new(),
                            collation_id: 63,
                            length: 0,
                            field_type: mysql_protocol::FieldType::VarString,
                            flags: 128,
                            decimals: 0,
                        };
                        let parameters = vec![parameter; statement.placeholders];
                        let columns = statement.columns.clone();
                        let warnings = session.warning_count();
                        self.statements.insert(
                            id,
                            StatementState {
                                types: Vec::new(),
                                long_data: vec![None; parameters.len()],
                            },
                        );
                        let status = self.status();
                        self.protocol.write_prepare_ok(
                            id,
                            &parameters,
                            &columns,
                            warnings,
                            status,
                            &mut self.out,
                        );
                    }
                    Err(error) => self.write_sql_error(&error),
                }
            }
            Command::StmtExecute(execute) => {
                if execute.requests_cursor() {
                    // Connector/J with useCursorFetch asks for one; without
                    // cursors the statement runs and returns every row.
                    self.write_sql_error(&SqlError::new(
                        1235,
                        "This version of Shoal doesn't yet support 'cursors'",
                    ));
                    return true;
                }
                let session = self.session.as_mut().expect("session");
                let Some(prepared) = session.prepared.get(&execute.statement_id) else {
                    self.write_sql_error(&SqlError::new(
                        1243,
                        format!(
                            "Unknown prepared statement handler ({}) given to mysqld_stmt_execute",
                            execute.statement_id
                        ),
                    ));
                    return true;
                };
                let count = prepared.placeholders;
                let text = prepared.text.clone();
                let state = self.statements.entry(execute.statement_id).or_default();
                if state.long_data.len() != count {
                    state.long_data = vec![None; count];
                }
                let decoded = mysql_protocol::decode_execute_parameters(
                    &execute.parameters,
                    count,
                    &mut state.types,
                    &state.long_data,
                );
                for data in &mut state.long_data {
                    *data = None;
                }
                let parameters = match decoded {
                    Ok(values) => values
                        .iter()
                        .zip(&state.types)
                        .map(|(v, (field_type, _))| {
                            sql::value::from_protocol(&v.as_protocol_value(), *field_type)
                        })
                        .collect(),
                    Err(e) => {
                        self.protocol.write_error(
                            1210,
                            "HY000",
                            &format!("Incorrect arguments to mysqld_stmt_execute: {e}"),
                            &mut self.out,
                        );
                        return true;
                    }
                };
                self.set_process("Execute", Some(&text));
                let result = self
                    .session
                    .as_mut()
                    .expect("session")
                    .execute_prepared(execute.statement_id, parameters);
                self.write_results(vec![result], RowFormat::Binary);
                self.set_process("Sleep", None);
            }
            Command::StmtSendLongData {
                statement_id,
                parameter,
                data,
            } => {
                // No answer, ever; an error shows at execute.
                if let Some(state) = self.statements.get_mut(&statement_id) {
                    let index = usize::from(parameter);
                    if index < state.long_data.len() {
                        let slot = state.long_data[index].get_or_insert_with(Vec::new);
                        if slot.len() + data.len() <= LONG_DATA_BYTES_MAX {
                            slot.extend_from_slice(&data);
                        }
                    }
                }
            }
            Command::StmtClose(id) => {
                self.statements.remove(&id);
                self.session.as_mut().expect("session").prepared.remove(&id);
            }
            Command::StmtReset(id) => {
                if let Some(state) = self.statements.get_mut(&id) {
                    for data in &mut state.long_data {
                        *data = None;
                    }
                }
                if self
                    .session
                    .as_ref()
                    .expect("session")
                    .prepared
                    .contains_key(&id)
                {
                    self.write_ok(0, 0, "");
                } else {
                    self.write_sql_error(&SqlError::new(
                        1243,
                        format!(
                            "Unknown prepared statement handler ({id}) given to mysqld_stmt_reset"
                        ),
                    ));
                }
            }
            Command::StmtFetch { statement_id, .. } => {
                self.write_sql_error(&SqlError::new(
                    1421,
                    format!("The statement ({statement_id}) has no open cursor."),
                ));
            }
            Command::Debug => {
                let status = self.status();
                self.protocol.write_eof(status, 0, &mut self.out);
            }
            Command::Unknown(_) => self.protocol.write_unknown_command(&mut self.out),
        }
        true
    }

    fn write_ok(&mut self, affected_rows: u64, last_insert_id: u64, info: &str) {
        let status = self.status();
        let warnings = self.warnings();
        self.protocol.write_ok(
            &OkPacket {
                affected_rows,
                last_insert_id,
                status,
                warnings,
                info,
            },
            &mut self.out,
        );
    }

    /// Writes the results of one command's statements; results after the
    /// first error were not run.
    fn write_results(&mut self, results: Vec<StatementResult>, format: RowFormat) {
        let count = results.len();
        for (i, result) in results.into_iter().enumerate() {
            let more = if i + 1 < count {
                SERVER_MORE_RESULTS_EXISTS
            } else {
                0
            };
            match result {
                Ok(Outcome::Done {
                    affected_rows,
                    last_insert_id,
                    info,
                }) => {
                    let status = self.status() | more;
                    let warnings = self.warnings();
                    self.protocol.write_ok(
                        &OkPacket {
                            affected_rows,
                            last_insert_id,
                            status,
                            warnings,
                            info: &info,
                        },
                        &mut self.out,
                    );
                }
                Ok(Outcome::Rows(result)) => {
                    let status = self.status();
                    let warnings = self.warnings();
                    if result.columns.is_empty() {
                        self.protocol.write_ok(
                            &OkPacket {
                                status: status | more,
                                warnings,
                                ..OkPacket::default()
                            },
                            &mut self.out,
                        );
                        continue;
                    }
                    let flushed = self.write_rows(
                        &result.columns,
                        &result.types,
                        &result.rows,
                        format,
                        status,
                        warnings,
                        more,
                    );
                    if flushed.is_err() {
                        return;
                    }
                }
                Err(error) => {
                    self.write_sql_error(&error);
                    return;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_rows(
        &mut self,
        columns: &[ColumnDefinition],
        types: &[SqlType],
        rows: &[Vec<SqlValue>],
        format: RowFormat,
        status: u16,
        warnings: u16,
        more: u16,
    ) -> Result<(), String> {
        let mut out = std::mem::take(&mut self.out);
        let mut scratch = Vec::new();
        let mut offsets: Vec<Option<(usize, usize)>> = Vec::with_capacity(columns.len());
        let mut writer = self
            .protocol
            .begin_result_set(format, columns, status, &mut out);
        let mut write_failed = None;
        for row in rows {
            match format {
                RowFormat::Text => {
                    scratch.clear();
                    offsets.clear();
                    for (value, sql_type) in row.iter().zip(types) {
                        if matches!(value, SqlValue::Null) {
                            offsets.push(None);
                            continue;
                        }
                        let start = scratch.len();
                        write_text(value, sql_type, &mut scratch);
                        offsets.push(Some((start, scratch.len())));
                    }
                    let values: Vec<Option<&[u8]>> = offsets
                        .iter()
                        .map(|o| o.map(|(s, e)| &scratch[s..e]))
                        .collect();
                    writer.write_text_row(&values, &mut out);
                }
                RowFormat::Binary => {
                    let mut binary = writer.binary_row(&mut out);
                    for (value, sql_type) in row.iter().zip(types) {
                        let protocol = to_protocol(value, sql_type, &mut scratch);
                        binary.push(&protocol);
                    }
                    binary.finish();
                }
            }
            if out.len() >= FLUSH_BYTES {
                // A big result set goes out as it is built rather than
                // sitting in memory whole.
                if let Err(e) = write_all(&mut self.stream, &out) {
                    write_failed = Some(format!("write: {e}"));
                    break;
                }
                out.clear();
            }
        }
        writer.finish(status | more, warnings, &mut out);
        if let Some(error) = write_failed {
            return Err(error);
        }
        self.out = out;
        Ok(())
    }
}
