//! Connections on a mio event loop: messages queued during one loop turn
//! leave as one batch of frames per connection (one syscall where the
//! socket takes it all), and bytes read are cut back into messages.
//!
//! Every connection has a bounded write buffer (`SendBufferMemory`): a peer
//! that does not read fast enough is disconnected, which its protocols
//! treat as a node failure, rather than letting memory grow without limit.
//!
//! What a process receives is bounded too, against strangers as much as
//! against peers that misbehave. A connection's first message must be its
//! `Hello`, in a frame of at most `UNIDENTIFIED_FRAME_PAYLOAD_BYTES_MAX`
//! bytes; the bytes of partly received frames, over all connections,
//! come out of one `ReceiveMemory` budget per process; and `SlotLimits`
//! closes connections that do not identify themselves in time, keeps few
//! unidentified ones (the oldest make room for the newest, so a crowd of
//! idle strangers cannot keep a real node out), and bounds identified ones
//! by the configured nodes.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use protocol::frame::{FRAME_HEADER_BYTES, FRAME_MESSAGES_MAX, FRAME_PAYLOAD_BYTES_MAX};
use protocol::{FrameDecoder, Message, NodeId, NodeRole, encode_frame};

/// Who is at the other end, once its `Hello` arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub node: NodeId,
    pub incarnation: u64,
    pub role: NodeRole,
}

/// The socket under a connection: TCP, or a Unix-domain socket between
/// two data nodes on one host (see `datad`'s local listener), which carries
/// the same bytes in the same order for a fraction of the kernel's work.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl From<TcpStream> for Stream {
    fn from(stream: TcpStream) -> Stream {
        Stream::Tcp(stream)
    }
}

impl From<UnixStream> for Stream {
    fn from(stream: UnixStream) -> Stream {
        Stream::Unix(stream)
    }
}

impl Read for Stream {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.read(buffer),
            Stream::Unix(stream) => stream.read(buffer),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.write(bytes),
            Stream::Unix(stream) => stream.write(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.flush(),
            Stream::Unix(stream) => stream.flush(),
        }
    }
}

impl Source for Stream {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.register(registry, token, interest),
            Stream::Unix(stream) => stream.register(registry, token, interest),
        }
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interest: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.reregister(registry, token, interest),
            Stream::Unix(stream) => stream.reregister(registry, token, interest),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.deregister(registry),
            Stream::Unix(stream) => stream.deregister(registry),
        }
    }
}

pub struct Connection {
    pub stream: Stream,
    pub token: Token,
    pub peer: Option<Peer>,
    pub peer_address: String,
    /// The data node this side dialed, until its `Hello` sets `peer`.
    pub dialed_node: Option<NodeId>,
    decoder: FrameDecoder,
    /// The process's budget for received bytes, and how much of it this
    /// connection's decoder holds (beyond `CONNECTION_ROOM_BYTES`).
    receive_memory: ReceiveMemory,
    receive_charged_bytes: usize,
    /// The first frame carried a `Hello`: larger frames may follow, even
    /// before the event loop sets `peer` from it.
    hello_received: bool,
    /// Whether a `Hello` alone counts as identified for the slot limits.
    /// On the management node it does (it hands the secret out, so a
    /// client has nothing more to show); on a data node only a proof that
    /// holds does (the event loop then sets `peer`), so a stranger that
    /// only says Hello is still timed out and holds no identified slot.
    hello_identifies: bool,
    opened_at: Instant,
    queued: Vec<Message>,
    write_buffer: Vec<u8>,
    write_position: usize,
    write_buffer_bytes_max: usize,
    writable_interest: bool,
}

/// Messages are grouped into frames of at most this many payload bytes
/// (estimated before encoding), well under the frame limit.
const FRAME_BATCH_BYTES: usize = 1 << 20;

/// Room offered to each read: enough for a loop turn's frames from one
/// peer in one system call.
const READ_BYTES_MIN: usize = 64 * 1024;

/// Largest frame payload a peer may send before its `Hello` (which is a
/// few dozen bytes): a stranger cannot announce a large frame and make the
/// process hold its bytes.
pub const UNIDENTIFIED_FRAME_PAYLOAD_BYTES_MAX: usize = 4096;

/// Decoder memory each connection holds without drawing on the process's
/// `ReceiveMemory`: room for the reads of ordinary traffic. The slot limits
/// bound the number of connections, so they bound the sum of these too.
pub const CONNECTION_ROOM_BYTES: usize = 2 * READ_BYTES_MIN;

/// The bytes of partly received frames that all connections of one process
/// may hold beyond their own `CONNECTION_ROOM_BYTES`. NDB gives every
/// transporter a receive buffer of `ReceiveBufferMemory`; Shoal's frames can
/// be larger than one such buffer (a dictionary snapshot), so the budget is
/// shared: `ReceiveBufferMemory` for each configured node, and at least one
/// frame of the largest size. A connection whose frame would take more than
/// is left is closed, with an error saying so, instead of the process
/// growing without bound.
#[derive(Clone, Debug)]
pub struct ReceiveMemory {
    shared: Arc<ReceiveMemoryShared>,
}

#[derive(Debug)]
struct ReceiveMemoryShared {
    bytes_max: usize,
    bytes_used: AtomicUsize,
}

/// The smallest `ReceiveMemory`: one frame of the largest size fits.
pub const RECEIVE_MEMORY_BYTES_MIN: usize =
    FRAME_HEADER_BYTES + FRAME_PAYLOAD_BYTES_MAX + READ_BYTES_MIN;

impl ReceiveMemory {
    pub fn new(bytes_max: usize) -> ReceiveMemory {
        ReceiveMemory {
            shared: Arc::new(ReceiveMemoryShared {
                bytes_max,
                bytes_used: AtomicUsize::new(0),
            }),
        }
    }

    /// The budget of a process serving `nodes` configured nodes, each with
    /// `ReceiveBufferMemory` of `receive_buffer_memory_bytes`.
    pub fn for_nodes(receive_buffer_memory_bytes: u64, nodes: usize) -> ReceiveMemory {
        let per_node = usize::try_from(receive_buffer_memory_bytes).unwrap_or(usize::MAX);
        ReceiveMemory::new(per_node.saturating_mul(nodes).max(RECEIVE_MEMORY_BYTES_MIN))
    }

    pub fn bytes_max(&self) -> usize {
        self.shared.bytes_max
    }

    pub fn bytes_used(&self) -> usize {
        self.shared.bytes_used.load(Ordering::Relaxed)
    }

    /// Takes `bytes` if that stays within the budget.
    fn take(&self, bytes: usize) -> bool {
        self.shared
            .bytes_used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes)
                    .filter(|total| *total <= self.shared.bytes_max)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        let before = self.shared.bytes_used.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "gave back more receive memory than taken");
    }
}

impl Connection {
    pub fn new(
        stream: impl Into<Stream>,
        token: Token,
        peer_address: String,
        write_buffer_bytes_max: usize,
    ) -> Connection {
        Connection {
            stream: stream.into(),
            token,
            peer: None,
            peer_address,
            dialed_node: None,
            decoder: unidentified_decoder(),
            receive_memory: ReceiveMemory::new(RECEIVE_MEMORY_BYTES_MIN),
            receive_charged_bytes: 0,
            hello_received: false,
            hello_identifies: true,
            opened_at: Instant::now(),
            queued: Vec::new(),
            write_buffer: Vec::new(),
            write_position: 0,
            write_buffer_bytes_max,
            writable_interest: false,
        }
    }

    pub fn register(&mut self, registry: &Registry) -> io::Result<()> {
        registry.register(&mut self.stream, self.token, Interest::READABLE)
    }

    /// Queues a message for the next `flush`.
    pub fn queue(&mut self, message: Message) {
        self.queued.push(message);
    }

    /// Continues from a decoder that already holds received bytes (a
    /// connection that started out blocking, and said Hello then).
    pub fn with_decoder(mut self, decoder: FrameDecoder) -> Connection {
        self.decoder = decoder;
        self.recharge();
        self
    }

    /// Charges this connection's received bytes to the process's budget
    /// (without it, the connection has a budget of its own of one frame).
    pub fn with_receive_memory(mut self, memory: ReceiveMemory) -> Connection {
        self.receive_memory.give_back(self.receive_charged_bytes);
        self.receive_charged_bytes = 0;
        self.receive_memory = memory;
        self.recharge();
        self
    }

    /// When the connection was opened: the identification deadline counts
    /// from here.
    pub fn opened_at(&self) -> Instant {
        self.opened_at
    }

    /// A `Hello` identifies nothing until the event loop has checked its
    /// proof and set `peer` (see `hello_identifies`).
    pub fn proof_required(mut self) -> Connection {
        self.hello_identifies = false;
        self
    }

    /// Identified, for the slot limits: the event loop knows the peer, or
    /// its `Hello` arrived where a `Hello` is enough.
    pub fn identified(&self) -> bool {
        self.peer.is_some() || (self.hello_received && self.hello_identifies)
    }

    /// Its first frame carried a `Hello` (or the event loop knows the
    /// peer): later frames may be large and need not start with `Hello`.
    fn said_hello(&self) -> bool {
        self.peer.is_some() || self.hello_received
    }

    /// Drops the messages queued and not yet encoded: a connection about
    /// to be refused says only why (its handshake answer would tell the
    /// peer it was accepted).
    pub fn discard_queued(&mut self) {
        self.queued.clear();
    }

    /// Bytes of the process's receive memory this connection holds.
    pub fn receive_charged_bytes(&self) -> usize {
        self.receive_charged_bytes
    }

    /// Brings the charge to the decoder's allocation. Growth is checked
    /// against the budget before it happens (`reserve_room`); this only
    /// gives back, except for a decoder handed over with bytes in it,
    /// which is charged whatever the budget says (it is already there).
    fn recharge(&mut self) {
        let wanted = self
            .decoder
            .allocated_bytes()
            .saturating_sub(CONNECTION_ROOM_BYTES);
        if wanted < self.receive_charged_bytes {
            self.receive_memory
                .give_back(self.receive_charged_bytes - wanted);
        } else if wanted > self.receive_charged_bytes {
            self.receive_memory
                .shared
                .bytes_used
                .fetch_add(wanted - self.receive_charged_bytes, Ordering::Relaxed);
        }
        self.receive_charged_bytes = wanted;
    }

    /// Takes from the budget what the next read's room adds to the decoder,
    /// or says why the connection must close.
    fn reserve_room(&mut self) -> Result<(), String> {
        let growth = self.decoder.growth_for(READ_BYTES_MIN);
        let wanted =
            (self.decoder.allocated_bytes() + growth).saturating_sub(CONNECTION_ROOM_BYTES);
        if wanted <= self.receive_charged_bytes {
            return Ok(());
        }
        if !self
            .receive_memory
            .take(wanted - self.receive_charged_bytes)
        {
            return Err(format!(
                "{} sent {} bytes of a frame and the receive memory has no room for more: {} of \
                 {} bytes are held by partly received frames (ReceiveBufferMemory for each \
                 configured node)",
                self.peer_address,
                self.decoder.buffered_bytes(),
                self.receive_memory.bytes_used(),
                self.receive_memory.bytes_max()
            ));
        }
        self.receive_charged_bytes = wanted;
        Ok(())
    }

    /// Decodes every complete frame. Until the peer has identified itself
    /// its first message must be its `Hello`, and frames stay small.
    fn decode(&mut self, messages: &mut Vec<Message>) -> Result<(), String> {
        loop {
            let first = messages.len();
            let decoded = self
                .decoder
                .next_frame(messages)
                .map_err(|e| format!("{} sent a bad frame: {e}", self.peer_address))?;
            if !decoded {
                return Ok(());
            }
            if self.said_hello() {
                continue;
            }
            if !matches!(messages.get(first), Some(Message::Hello { .. })) {
                return Err(format!("{} spoke before saying Hello", self.peer_address));
            }
            self.hello_received = true;
            self.decoder.set_payload_bytes_max(FRAME_PAYLOAD_BYTES_MAX);
        }
    }

    /// Reads what the socket holds into the decoder, until it would block,
    /// and decodes every complete frame. Returns `Ok(false)` once the peer
    /// closed.
    ///
    /// Why the read goes on to `WouldBlock` rather than stopping at a read
    /// shorter than the room offered (which saves one `recvfrom` per event):
    /// no way was found for stopping early to lose a message, but its gain
    /// could not be measured on a busy shared machine. A short read means
    /// the receive queue was empty at that instant (TCP also returns early
    /// while bytes wait in the socket's backlog, and processing that
    /// backlog as the call ends raises a new edge; a Unix stream socket
    /// reads on across its queue); every later arrival, bytes or the peer's
    /// close, raises a new edge; re-registering (`flush`) re-checks
    /// readiness; only a close that came with the bytes is flagged on the
    /// event being handled (`is_read_closed`), so that case must read on to
    /// the end. The lost answers (error 4012) once blamed on stopping early
    /// were measured on binaries built before commit 231492e, which fixed a
    /// data node dropping messages for a peer it was not connected to yet,
    /// itself a 4012 in about one `shoal bench pk` run of five: the likely
    /// cause. With stopping early put back, 52 runs of `shoal bench pk` on
    /// the code since (30 with `--threads 2 --rows 200 --async-seconds 1`,
    /// 22 with the defaults) had no error; the old failure was not seen.
    ///
    /// Frames are decoded after every read, so a header over the limit is
    /// refused before its payload is read, and a frame's bytes are
    /// released as soon as it is complete. On an error, `messages` still
    /// holds what arrived before it (a `Hello`, say), for the caller to
    /// handle before closing.
    pub fn read(&mut self, messages: &mut Vec<Message>) -> Result<bool, String> {
        if self.said_hello() {
            self.decoder.set_payload_bytes_max(FRAME_PAYLOAD_BYTES_MAX);
        }
        let result = self.read_and_decode(messages);
        self.recharge();
        result
    }

    fn read_and_decode(&mut self, messages: &mut Vec<Message>) -> Result<bool, String> {
        loop {
            self.reserve_room()?;
            let room = self.decoder.spare(READ_BYTES_MIN);
            let room_bytes = room.len();
            match self.stream.read(room) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.decoder.filled(n);
                    self.decode(messages)?;
                    if n < room_bytes {
                        // A stream socket that fills less than the room
                        // asked for is drained: epoll(7) reports the next
                        // bytes as a new edge, so the read that would only
                        // say WouldBlock is saved (one system call in two
                        // on a busy link).
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read from {}: {e}", self.peer_address)),
            }
        }
    }

    /// Encodes the queued messages and writes as much as the socket takes.
    pub fn flush(&mut self, registry: &Registry) -> Result<(), String> {
        if !self.queued.is_empty() {
            // The limit is on the backlog a peer has not read: one batch may
            // be large (a whole dictionary), a peer that stops reading may not
            // make the buffer grow batch after batch.
            let backlog = self.write_buffer.len() - self.write_position;
            if backlog > self.write_buffer_bytes_max {
                return Err(format!(
                    "{backlog} bytes wait to be sent to {}, more than SendBufferMemory ({} bytes): \
                     the peer is not reading",
                    self.peer_address, self.write_buffer_bytes_max
                ));
            }
            if self.write_position > 0 {
                self.write_buffer.drain(..self.write_position);
                self.write_position = 0;
            }
            let mut start = 0;
            let mut estimate = 0;
            // Encoded in place and cleared after, so the queue keeps its
            // allocation from turn to turn.
            let queued = &self.queued;
            for (index, message) in queued.iter().enumerate() {
                estimate += approximate_bytes(message);
                let count = index + 1 - start;
                if estimate >= FRAME_BATCH_BYTES || count == FRAME_MESSAGES_MAX {
                    encode_frame(&queued[start..=index], &mut self.write_buffer);
                    start = index + 1;
                    estimate = 0;
                }
            }
            if start < queued.len() {
                encode_frame(&queued[start..], &mut self.write_buffer);
            }
            self.queued.clear();
        }
        while self.write_position < self.write_buffer.len() {
            match self.stream.write(&self.write_buffer[self.write_position..]) {
                Ok(0) => return Err(format!("{} stopped accepting bytes", self.peer_address)),
                Ok(n) => self.write_position += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => break,
                Err(e) => return Err(format!("write to {}: {e}", self.peer_address)),
            }
        }
        if self.write_position == self.write_buffer.len() {
            self.write_buffer.clear();
            self.write_position = 0;
        }
        let want_writable = !self.write_buffer.is_empty();
        if want_writable != self.writable_interest {
            let interest = if want_writable {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            registry
                .reregister(&mut self.stream, self.token, interest)
                .map_err(|e| format!("poll registration: {e}"))?;
            self.writable_interest = want_writable;
        }
        Ok(())
    }
}

/// How long a new connection may take to say `Hello`. A node or client
/// sends it first thing, so this is only reached by a peer that is not one.
pub const IDENTIFICATION_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections accepted that have not said `Hello` yet, kept at once. Real
/// nodes say it within a round trip, so a few slots serve them all; past
/// this the oldest is closed to make room for the newest.
pub const UNIDENTIFIED_CONNECTIONS_MAX: usize = 32;

/// The error a peer refused for lack of slots is sent: NDB's code for a
/// node that finds no free node id (the management node's answer when its
/// slots are taken), and MySQL's "Too many connections" (1040).
pub const TOO_MANY_CONNECTIONS_NDB_CODE: u16 = 5019;
pub const TOO_MANY_CONNECTIONS_MYSQL_CODE: u16 = 1040;

/// The slots of one process's connections.
#[derive(Debug, Clone, Copy)]
pub struct SlotLimits {
    /// Accepted connections that have not identified themselves.
    pub unidentified_max: usize,
    /// Identified connections: the configured nodes (and, on the
    /// management node, its clients).
    pub identified_max: usize,
    pub identification_timeout: Duration,
}

/// A connection `SlotLimits` closes, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    pub token: Token,
    pub reason: String,
    /// The peer identified itself: tell it it was refused, so it sees why
    /// rather than a closed connection.
    pub refuse: bool,
}

impl SlotLimits {
    /// The connections to close now, oldest rule first: unidentified ones
    /// past their deadline, the oldest unidentified ones beyond
    /// `unidentified_max`, and the newest identified ones beyond
    /// `identified_max`. Connections this process dialed and those in
    /// `kept` (the management node's, on a data node) are never made room
    /// from, only timed out. Tokens grow with every connection opened, so
    /// token order is age order.
    pub fn evictions(
        &self,
        connections: &BTreeMap<Token, Connection>,
        kept: Option<Token>,
        now: Instant,
    ) -> Vec<Eviction> {
        // Called every loop turn: the common case, nothing to close, is
        // found without allocating.
        if self.nothing_to_evict(connections, kept, now) {
            return Vec::new();
        }
        let mut evictions = Vec::new();
        let mut unidentified = Vec::new();
        let mut identified = Vec::new();
        for (token, connection) in connections {
            if connection.identified() {
                if Some(*token) != kept && connection.dialed_node.is_none() {
                    identified.push(*token);
                }
                continue;
            }
            if now.saturating_duration_since(connection.opened_at) > self.identification_timeout {
                evictions.push(Eviction {
                    token: *token,
                    reason: format!(
                        "did not say Hello within {} ms",
                        self.identification_timeout.as_millis()
                    ),
                    refuse: false,
                });
            } else if connection.dialed_node.is_none() && Some(*token) != kept {
                unidentified.push(*token);
            }
        }
        let excess = unidentified.len().saturating_sub(self.unidentified_max);
        for token in unidentified.into_iter().take(excess) {
            evictions.push(Eviction {
                token,
                reason: format!(
                    "closed to make room: more than {} connections had not said Hello",
                    self.unidentified_max
                ),
                refuse: false,
            });
        }
        let excess = identified.len().saturating_sub(self.identified_max);
        for token in identified.into_iter().rev().take(excess) {
            evictions.push(Eviction {
                token,
                reason: format!(
                    "already serves {} identified connections (one for each configured node, \
                     and its clients): try again once one closes",
                    self.identified_max
                ),
                refuse: true,
            });
        }
        evictions
    }
}

impl SlotLimits {
    fn nothing_to_evict(
        &self,
        connections: &BTreeMap<Token, Connection>,
        kept: Option<Token>,
        now: Instant,
    ) -> bool {
        let mut unidentified = 0;
        let mut identified = 0;
        for (token, connection) in connections {
            let counted = Some(*token) != kept && connection.dialed_node.is_none();
            if connection.identified() {
                identified += usize::from(counted);
            } else if now.saturating_duration_since(connection.opened_at)
                > self.identification_timeout
            {
                return false;
            } else {
                unidentified += usize::from(counted);
            }
        }
        unidentified <= self.unidentified_max && identified <= self.identified_max
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.receive_memory.give_back(self.receive_charged_bytes);
    }
}

/// A decoder that takes only frames the size of a `Hello` until the peer
/// identifies itself.
fn unidentified_decoder() -> FrameDecoder {
    let mut decoder = FrameDecoder::new();
    decoder.set_payload_bytes_max(UNIDENTIFIED_FRAME_PAYLOAD_BYTES_MAX);
    decoder
}

/// A cheap upper-ish estimate of a message's encoded size, to cut batches.
fn approximate_bytes(message: &Message) -> usize {
    match message {
        Message::Decided { state } | Message::DictionaryReply { state, .. } => {
            256 + state
                .tables
                .iter()
                .map(|t| t.definition.len() + t.fragments.len() * 24 + 64)
                .sum::<usize>()
        }
        Message::NodeIdAllocated { config_text, .. } => config_text.len() + 64,
        _ => 128,
    }
    .min(FRAME_PAYLOAD_BYTES_MAX / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection on one end of a socket pair, and the other end to write to.
    fn pair(token: usize) -> (Connection, UnixStream) {
        let (ours, theirs) = UnixStream::pair().expect("socket pair");
        let connection = Connection::new(ours, Token(token), format!("peer {token}"), 1 << 20);
        (connection, theirs)
    }

    fn hello_frame() -> Vec<u8> {
        let mut bytes = Vec::new();
        encode_frame(
            &[Message::Hello {
                node: 7,
                incarnation: 1,
                role: NodeRole::Api,
                nonce: [7; 16],
            }],
            &mut bytes,
        );
        bytes
    }

    fn header_announcing(payload_bytes: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        encode_frame(&[Message::Stop], &mut bytes);
        bytes.truncate(FRAME_HEADER_BYTES);
        bytes[8..12].copy_from_slice(&(payload_bytes as u32).to_le_bytes());
        bytes
    }

    /// Writes what the socket takes now; returns how many bytes it took.
    fn write_some(stream: &mut UnixStream, bytes: &[u8]) -> usize {
        match stream.write(bytes) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => panic!("write: {e}"),
        }
    }

    #[test]
    fn a_stranger_cannot_announce_a_large_frame() {
        let memory = ReceiveMemory::new(RECEIVE_MEMORY_BYTES_MIN);
        let (connection, mut stranger) = pair(1);
        let mut connection = connection.with_receive_memory(memory.clone());
        stranger.write_all(&header_announcing(32 << 20)).unwrap();
        stranger.write_all(&[0; 1000]).unwrap();
        let mut messages = Vec::new();
        let error = connection.read(&mut messages).unwrap_err();
        assert!(error.contains("exceeds 4096"), "{error}");
        assert!(messages.is_empty());
        assert_eq!(memory.bytes_used(), 0);
    }

    #[test]
    fn the_first_message_must_be_hello() {
        let (mut connection, mut stranger) = pair(1);
        let mut bytes = Vec::new();
        encode_frame(&[Message::Stop], &mut bytes);
        stranger.write_all(&bytes).unwrap();
        let error = connection.read(&mut Vec::new()).unwrap_err();
        assert!(error.contains("before saying Hello"), "{error}");
    }

    /// A Hello lifts the frame limit at once: a large frame right behind it
    /// in the same read is taken.
    #[test]
    fn hello_lifts_the_frame_limit_in_the_same_read() {
        let (mut connection, mut peer) = pair(1);
        let mut bytes = hello_frame();
        let large = Message::Addresses {
            entries: (0..2000)
                .map(|node| protocol::Address {
                    node: (node % 200) as NodeId,
                    host: "127.0.0.1".into(),
                    port: 1186,
                })
                .collect(),
        };
        encode_frame(std::slice::from_ref(&large), &mut bytes);
        assert!(bytes.len() > 2 * UNIDENTIFIED_FRAME_PAYLOAD_BYTES_MAX);
        peer.write_all(&bytes).unwrap();
        let mut messages = Vec::new();
        assert!(connection.read(&mut messages).unwrap());
        assert!(matches!(messages[0], Message::Hello { node: 7, .. }));
        assert_eq!(messages[1], large);
        assert!(connection.identified());
        assert!(connection.peer.is_none(), "the event loop sets the peer");
    }

    /// Two identified peers each sending part of a 16 MiB frame: together
    /// they may not hold more than the process's budget; the one that would
    /// overdraw it is closed, and closing gives its memory back.
    #[test]
    fn partly_received_frames_share_one_budget() {
        let memory = ReceiveMemory::new(1 << 20);
        let mut connections = Vec::new();
        for token in 1..=2 {
            let (connection, mut peer) = pair(token);
            let mut connection = connection.with_receive_memory(memory.clone());
            let mut bytes = hello_frame();
            bytes.extend_from_slice(&header_announcing(16 << 20));
            peer.write_all(&bytes).unwrap();
            let mut messages = Vec::new();
            assert!(connection.read(&mut messages).unwrap());
            assert_eq!(messages.len(), 1);
            connections.push((connection, peer));
        }
        let chunk = vec![9u8; 64 * 1024];
        let mut failed = None;
        'sending: for _ in 0..64 {
            for (index, (connection, peer)) in connections.iter_mut().enumerate() {
                let mut sent = 0;
                while sent < chunk.len() {
                    let n = write_some(peer, &chunk[sent..]);
                    if n == 0 {
                        break;
                    }
                    sent += n;
                }
                let result = connection.read(&mut Vec::new());
                assert!(memory.bytes_used() <= memory.bytes_max());
                if let Err(error) = result {
                    assert!(error.contains("receive memory"), "{error}");
                    failed = Some(index);
                    break 'sending;
                }
            }
        }
        let failed = failed.expect("the budget ran out before 16 MiB arrived");
        let held_before = memory.bytes_used();
        assert!(held_before > 0);
        let (closed, _) = connections.remove(failed);
        let charged = closed.receive_charged_bytes();
        drop(closed);
        assert_eq!(memory.bytes_used(), held_before - charged);
        connections.clear();
        assert_eq!(memory.bytes_used(), 0);
    }

    /// The budget is ReceiveBufferMemory for each configured node, but
    /// never less than one frame of the largest size.
    #[test]
    fn the_receive_budget_comes_from_receive_buffer_memory() {
        assert_eq!(
            ReceiveMemory::for_nodes(2 << 20, 9).bytes_max(),
            RECEIVE_MEMORY_BYTES_MIN
        );
        assert_eq!(ReceiveMemory::for_nodes(8 << 20, 9).bytes_max(), 72 << 20);
        assert_eq!(
            ReceiveMemory::for_nodes(u64::MAX, 9).bytes_max(),
            usize::MAX,
            "saturates"
        );
    }

    #[test]
    fn slots_time_out_strangers_and_make_room_for_newcomers() {
        let limits = SlotLimits {
            unidentified_max: 2,
            identified_max: 1,
            identification_timeout: Duration::from_secs(5),
        };
        let mut connections = BTreeMap::new();
        let (alone, _peer) = pair(9);
        connections.insert(Token(9), alone);
        assert!(
            limits
                .evictions(&connections, None, Instant::now())
                .is_empty()
        );
        connections.clear();
        let mut peers = Vec::new();
        for token in 1..=6 {
            let (connection, peer) = pair(token);
            connections.insert(Token(token), connection);
            peers.push(peer);
        }
        // 5 and 6 identify themselves; 6 is one too many.
        for token in [5, 6] {
            peers[token - 1].write_all(&hello_frame()).unwrap();
            let connection = connections.get_mut(&Token(token)).unwrap();
            connection.read(&mut Vec::new()).unwrap();
        }
        let now = Instant::now();
        let evictions = limits.evictions(&connections, None, now);
        let tokens: Vec<usize> = evictions.iter().map(|e| e.token.0).collect();
        assert_eq!(tokens, vec![1, 2, 6], "{evictions:?}");
        assert!(!evictions[0].refuse);
        assert!(evictions[2].refuse);
        assert!(evictions[2].reason.contains("serves 1 identified"));
        // Past the deadline every unidentified connection goes, dialed or not.
        connections.get_mut(&Token(3)).unwrap().dialed_node = Some(9);
        let later = now + Duration::from_secs(6);
        let tokens: Vec<usize> = limits
            .evictions(&connections, None, later)
            .iter()
            .filter(|e| e.reason.contains("within"))
            .map(|e| e.token.0)
            .collect();
        assert_eq!(tokens, vec![1, 2, 3, 4]);
    }

    /// On a data node a `Hello` without a proof that holds takes no
    /// identified slot and is timed out like silence.
    #[test]
    fn a_hello_without_a_proof_is_timed_out_where_a_proof_is_required() {
        let limits = SlotLimits {
            unidentified_max: 8,
            identified_max: 8,
            identification_timeout: Duration::from_secs(5),
        };
        let (connection, mut stranger) = pair(1);
        let mut connection = connection.proof_required();
        stranger.write_all(&hello_frame()).unwrap();
        let mut messages = Vec::new();
        assert!(connection.read(&mut messages).unwrap());
        assert!(matches!(messages[0], Message::Hello { .. }));
        assert!(!connection.identified(), "a Hello is only a claim here");
        let mut connections = BTreeMap::new();
        connections.insert(Token(1), connection);
        let later = Instant::now() + Duration::from_secs(6);
        let evictions = limits.evictions(&connections, None, later);
        assert_eq!(evictions.len(), 1, "{evictions:?}");
        assert!(evictions[0].reason.contains("within"), "{evictions:?}");
        // Once the event loop has checked the proof, the peer is known.
        let connection = connections.get_mut(&Token(1)).unwrap();
        connection.peer = Some(Peer {
            node: 7,
            incarnation: 1,
            role: protocol::NodeRole::Data,
        });
        assert!(limits.evictions(&connections, None, later).is_empty());
    }
}
