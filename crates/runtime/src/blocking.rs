//! Blocking request/reply over one connection, for short-lived clients:
//! `shoal mgm`, `shoal up`'s readiness check, and tests; and the opening of
//! the native API's links to data nodes. Every read has a timeout, so a
//! silent peer gives an error instead of a hang.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use protocol::identity::{ClusterSecret, Nonce, hello_proof, proof_holds};
use protocol::{FrameDecoder, Message, NodeId, NodeRole, encode_frame};

/// A blocking socket: TCP, or the local socket of a data node on this host
/// (see `datad`'s module notes). Reads and writes go through `&self` as on
/// the standard sockets, so one thread can read while others write.
#[derive(Debug)]
pub enum BlockingStream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl BlockingStream {
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        match self {
            BlockingStream::Tcp(stream) => stream.set_read_timeout(timeout),
            BlockingStream::Unix(stream) => stream.set_read_timeout(timeout),
        }
    }

    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        match self {
            BlockingStream::Tcp(stream) => stream.set_write_timeout(timeout),
            BlockingStream::Unix(stream) => stream.set_write_timeout(timeout),
        }
    }

    pub fn shutdown(&self, how: Shutdown) -> std::io::Result<()> {
        match self {
            BlockingStream::Tcp(stream) => stream.shutdown(how),
            BlockingStream::Unix(stream) => stream.shutdown(how),
        }
    }

    pub fn try_clone(&self) -> std::io::Result<BlockingStream> {
        Ok(match self {
            BlockingStream::Tcp(stream) => BlockingStream::Tcp(stream.try_clone()?),
            BlockingStream::Unix(stream) => BlockingStream::Unix(stream.try_clone()?),
        })
    }

    /// Reads what has arrived without waiting (`MSG_DONTWAIT`, which
    /// leaves the socket blocking for its other users): `WouldBlock` when
    /// nothing has.
    pub fn read_now(&self, buffer: &mut [u8]) -> std::io::Result<usize> {
        use std::os::fd::AsFd;
        let fd = match self {
            BlockingStream::Tcp(stream) => stream.as_fd(),
            BlockingStream::Unix(stream) => stream.as_fd(),
        };
        loop {
            match rustix::net::recv(fd, &mut *buffer, rustix::net::RecvFlags::DONTWAIT) {
                Ok((read, _)) => return Ok(read),
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Writes what the socket takes now without waiting (`MSG_DONTWAIT`):
    /// `WouldBlock` when it is full.
    pub fn send_now(&self, bytes: &[u8]) -> std::io::Result<usize> {
        use std::os::fd::AsFd;
        let fd = match self {
            BlockingStream::Tcp(stream) => stream.as_fd(),
            BlockingStream::Unix(stream) => stream.as_fd(),
        };
        let flags = rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL;
        loop {
            match rustix::net::send(fd, bytes, flags) {
                Ok(sent) => return Ok(sent),
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// The socket's descriptor, to watch it for input (`epoll`).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            BlockingStream::Tcp(stream) => stream.as_raw_fd(),
            BlockingStream::Unix(stream) => stream.as_raw_fd(),
        }
    }

    /// Whether this is a data node's local socket rather than TCP.
    pub fn is_local(&self) -> bool {
        matches!(self, BlockingStream::Unix(_))
    }
}

impl From<TcpStream> for BlockingStream {
    fn from(stream: TcpStream) -> BlockingStream {
        BlockingStream::Tcp(stream)
    }
}

impl Read for &BlockingStream {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            BlockingStream::Tcp(stream) => (&*stream).read(buffer),
            BlockingStream::Unix(stream) => (&*stream).read(buffer),
        }
    }
}

impl Write for &BlockingStream {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            BlockingStream::Tcp(stream) => (&*stream).write(bytes),
            BlockingStream::Unix(stream) => (&*stream).write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Read for BlockingStream {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        (&*self).read(buffer)
    }
}

impl Write for BlockingStream {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        (&*self).write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The abstract Unix-socket name of the data node listening on TCP
/// `address`: abstract names belong to the host's network namespace, as the
/// loopback addresses do, and vanish with the process that bound them.
#[cfg(target_os = "linux")]
pub fn local_socket_address(address: SocketAddr) -> Option<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(format!("shoal-datad-{address}")).ok()
}

/// Other platforms have no abstract names: data nodes use TCP only.
#[cfg(not(target_os = "linux"))]
pub fn local_socket_address(_address: SocketAddr) -> Option<std::os::unix::net::SocketAddr> {
    None
}

/// A connection that sends messages and waits for replies.
pub struct BlockingConnection {
    stream: BlockingStream,
    decoder: FrameDecoder,
    pending: std::collections::VecDeque<Message>,
    pub peer: String,
    /// Who this side said it is in its `Hello`, and its challenge.
    node: NodeId,
    incarnation: u64,
    role: NodeRole,
    nonce: Nonce,
}

/// Why a blocking exchange failed; the message names the peer.
#[derive(Debug)]
pub struct ConnectionError(pub String);

impl std::fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectionError {}

impl BlockingConnection {
    /// Connects to `address` ("host:port") and introduces itself.
    pub fn connect(
        address: &str,
        node: NodeId,
        role: NodeRole,
        timeout: Duration,
    ) -> Result<BlockingConnection, ConnectionError> {
        let unreachable =
            |e: std::io::Error| ConnectionError(format!("cannot connect to {address}: {e}"));
        let target = address
            .to_socket_addrs()
            .map_err(unreachable)?
            .next()
            .ok_or_else(|| ConnectionError(format!("cannot resolve {address}")))?;
        let stream = TcpStream::connect_timeout(&target, timeout).map_err(unreachable)?;
        stream.set_nodelay(true).map_err(unreachable)?;
        BlockingConnection::introduce(stream.into(), address, node, role)
    }

    /// Connects to the data node listening on `address` through its local
    /// socket when it runs on this host (only it can have bound the name),
    /// else over TCP, and introduces itself. The bytes are the same; the
    /// loopback TCP/IP stack is skipped.
    pub fn connect_local_first(
        address: &str,
        node: NodeId,
        role: NodeRole,
        timeout: Duration,
    ) -> Result<BlockingConnection, ConnectionError> {
        let local = address
            .to_socket_addrs()
            .ok()
            .and_then(|mut addresses| addresses.next())
            .and_then(local_socket_address)
            .and_then(|name| UnixStream::connect_addr(&name).ok());
        match local {
            Some(stream) => BlockingConnection::introduce(
                BlockingStream::Unix(stream),
                &format!("{address} (local socket)"),
                node,
                role,
            ),
            None => BlockingConnection::connect(address, node, role, timeout),
        }
    }

    fn introduce(
        stream: BlockingStream,
        address: &str,
        node: NodeId,
        role: NodeRole,
    ) -> Result<BlockingConnection, ConnectionError> {
        let nonce = crate::random_bytes().map_err(ConnectionError)?;
        let incarnation = crate::incarnation_now();
        let mut connection = BlockingConnection {
            stream,
            decoder: FrameDecoder::new(),
            pending: Default::default(),
            peer: address.to_string(),
            node,
            incarnation,
            role,
            nonce,
        };
        connection.send(&[Message::Hello {
            node,
            incarnation,
            role,
            nonce,
        }])?;
        Ok(connection)
    }

    /// The handshake with a data node (`protocol::identity`): waits for its
    /// `Hello`, proves this side's claim, and checks the data node's proof.
    /// Returns the data node's id and incarnation.
    pub fn prove(
        &mut self,
        secret: &ClusterSecret,
        timeout: Duration,
    ) -> Result<(NodeId, u64), ConnectionError> {
        let deadline = Instant::now() + timeout;
        let late = || ConnectionError("no handshake in time".to_string());
        let (node, incarnation, role, nonce) =
            match self.receive(deadline.saturating_duration_since(Instant::now()))? {
                Some(Message::Hello {
                    node,
                    incarnation,
                    role,
                    nonce,
                }) => (node, incarnation, role, nonce),
                other => {
                    // Kept for the caller to read: it may say why (a
                    // `Refused`).
                    self.pending.extend(other);
                    return Err(ConnectionError(format!("{} did not say Hello", self.peer)));
                }
            };
        // This side dialed; the data node accepted.
        let proof = hello_proof(secret, true, &nonce, self.node, self.incarnation, self.role);
        self.send(&[Message::HelloProof { proof }])?;
        match self.receive(deadline.saturating_duration_since(Instant::now()))? {
            Some(Message::HelloProof { proof })
                if proof_holds(&proof, secret, false, &self.nonce, node, incarnation, role) =>
            {
                Ok((node, incarnation))
            }
            Some(other) => {
                let refused = matches!(other, Message::Refused { .. });
                self.pending.push_back(other);
                if refused {
                    return Err(ConnectionError(format!(
                        "{} refused the connection",
                        self.peer
                    )));
                }
                Err(ConnectionError(format!(
                    "{} claimed to be node {node} but could not prove it",
                    self.peer
                )))
            }
            None => Err(late()),
        }
    }

    /// The socket, the bytes read but not yet decoded, and messages decoded
    /// but not yet returned: for handing the connection to an event loop.
    pub fn into_parts(self) -> (BlockingStream, FrameDecoder, Vec<Message>) {
        (
            self.stream,
            self.decoder,
            self.pending.into_iter().collect(),
        )
    }

    /// Whether the connection runs over a data node's local socket.
    pub fn is_local(&self) -> bool {
        self.stream.is_local()
    }

    /// Sends `messages` in one frame with `file` attached to its first byte
    /// (`SCM_RIGHTS`; a local socket only).
    pub fn send_with_file(
        &mut self,
        messages: &[Message],
        file: std::os::fd::BorrowedFd<'_>,
    ) -> Result<(), ConnectionError> {
        use std::os::fd::AsFd;
        let BlockingStream::Unix(stream) = &self.stream else {
            return Err(ConnectionError(format!(
                "a file cannot go to {} over TCP",
                self.peer
            )));
        };
        let mut bytes = Vec::new();
        encode_frame(messages, &mut bytes);
        let lost = |e: std::io::Error| {
            ConnectionError(format!("lost the connection to {}: {e}", self.peer))
        };
        let sent =
            crate::shared_memory::send_with_file(stream.as_fd(), &bytes, file).map_err(lost)?;
        self.stream.write_all(&bytes[sent..]).map_err(lost)
    }

    pub fn send(&mut self, messages: &[Message]) -> Result<(), ConnectionError> {
        let mut bytes = Vec::new();
        encode_frame(messages, &mut bytes);
        self.stream
            .write_all(&bytes)
            .map_err(|e| ConnectionError(format!("lost the connection to {}: {e}", self.peer)))
    }

    /// Waits up to `timeout` for the next message; `None` on timeout.
    pub fn receive(&mut self, timeout: Duration) -> Result<Option<Message>, ConnectionError> {
        let deadline = Instant::now() + timeout;
        let mut buffer = [0u8; 64 * 1024];
        let mut polled_once = false;
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Ok(Some(message));
            }
            let mut decoded = Vec::new();
            while self
                .decoder
                .next_frame(&mut decoded)
                .map_err(|e| ConnectionError(format!("{} sent a bad frame: {e}", self.peer)))?
            {
            }
            if !decoded.is_empty() {
                self.pending.extend(decoded);
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() && polled_once {
                return Ok(None);
            }
            // A zero timeout still reads what has already arrived.
            polled_once = true;
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|e| ConnectionError(e.to_string()))?;
            match self.stream.read(&mut buffer) {
                Ok(0) => {
                    return Err(ConnectionError(format!(
                        "{} closed the connection",
                        self.peer
                    )));
                }
                Ok(n) => self.decoder.push(&buffer[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Ok(None);
                }
                Err(e) => {
                    return Err(ConnectionError(format!(
                        "lost the connection to {}: {e}",
                        self.peer
                    )));
                }
            }
        }
    }

    /// Sends `request` and returns the first reply `accept` takes, skipping
    /// unrelated messages (such as address updates).
    pub fn request(
        &mut self,
        request: Message,
        timeout: Duration,
        mut accept: impl FnMut(&Message) -> bool,
    ) -> Result<Message, ConnectionError> {
        self.send(&[request])?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receive(left)? {
                Some(message) if accept(&message) => return Ok(message),
                Some(_) => continue,
                None => {
                    return Err(ConnectionError(format!(
                        "{} did not answer within {} ms",
                        self.peer,
                        timeout.as_millis()
                    )));
                }
            }
        }
    }
}
