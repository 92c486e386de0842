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
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use protocol::frame::{FRAME_HEADER_BYTES, FRAME_MESSAGES_MAX, FRAME_PAYLOAD_BYTES_MAX};
use protocol::{FrameDecoder, Message, NodeId, NodeRole, encode_frame};

use crate::shared_memory::{self, DOORBELL, LinkMemory, RingReader, RingWriter};

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

/// Where a connection's frames travel (see `shared_memory`).
enum Sharing {
    /// Over the socket.
    Off,
    /// This side offers shared memory: `frame` (the offer) goes out with
    /// the memory's file once everything queued before it has, and what is
    /// queued after it waits in `held` for the answer.
    Offered {
        memory: Option<LinkMemory>,
        file: OwnedFd,
        frame: Vec<u8>,
        sent: bool,
        held: Vec<u8>,
    },
    /// Over the rings; the socket carries doorbells (after `socket_tail`,
    /// the frames the side that accepted queued up to its answer).
    On {
        writer: RingWriter,
        reader: RingReader,
    },
}

/// The most files a connection keeps of those that came with its bytes,
/// for an offer of shared memory still to be decoded; others are closed.
const RECEIVED_FILES_MAX: usize = 1;

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
    sharing: Sharing,
    /// Frames for the socket after the link went over to the rings: the
    /// side that accepted an offer writes what it queued up to its answer
    /// here, and rings no doorbell until they are out.
    socket_tail: Vec<u8>,
    /// Files that came with received bytes (a Unix socket this side
    /// accepted reads them, for an offer of shared memory).
    received_files: Vec<OwnedFd>,
    /// An offer was made or answered on this connection: there is no
    /// second.
    sharing_decided: bool,
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
            sharing: Sharing::Off,
            socket_tail: Vec::new(),
            received_files: Vec::new(),
            sharing_decided: false,
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
        if matches!(self.sharing, Sharing::On { .. }) {
            // The ring after the doorbells, even when the socket closed:
            // what the peer wrote before it went (its goodbye) is there.
            let doorbells = self.read_doorbells();
            self.read_ring(messages)?;
            return doorbells;
        }
        loop {
            self.reserve_room()?;
            let takes_files = self.takes_files();
            let room = self.decoder.spare(READ_BYTES_MIN);
            let room_bytes = room.len();
            let read = if takes_files {
                read_with_files(&self.stream, room, &mut self.received_files)
            } else {
                self.stream.read(room)
            };
            match read {
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
            let backlog = self.write_buffer.len() - self.write_position
                + self.socket_tail.len()
                + match &self.sharing {
                    Sharing::Offered { held, .. } => held.len(),
                    _ => 0,
                };
            if backlog > self.write_buffer_bytes_max {
                return Err(format!(
                    "{backlog} bytes wait to be sent to {}, more than SendBufferMemory ({} bytes): \
                     the peer is not reading",
                    self.peer_address, self.write_buffer_bytes_max
                ));
            }
            self.encode_queued();
        }
        if let Sharing::Offered { .. } = self.sharing {
            self.write_socket()?;
            self.send_offer()?;
            return self.update_interest(registry);
        }
        if let Sharing::On { .. } = self.sharing {
            self.write_socket_tail()?;
            self.write_ring()?;
            return self.update_interest(registry);
        }
        self.write_socket()?;
        self.update_interest(registry)
    }

    /// Encodes the queued messages into frames, after the bytes waiting to
    /// be written (into `held` while an offer waits for its answer).
    fn encode_queued(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        if self.write_position > 0 {
            self.write_buffer.drain(..self.write_position);
            self.write_position = 0;
        }
        let out = match &mut self.sharing {
            Sharing::Offered { held, .. } => held,
            _ => &mut self.write_buffer,
        };
        let mut start = 0;
        let mut estimate = 0;
        // Encoded in place and cleared after, so the queue keeps its
        // allocation from turn to turn.
        let queued = &self.queued;
        for (index, message) in queued.iter().enumerate() {
            estimate += approximate_bytes(message);
            let count = index + 1 - start;
            if estimate >= FRAME_BATCH_BYTES || count == FRAME_MESSAGES_MAX {
                encode_frame(&queued[start..=index], out);
                start = index + 1;
                estimate = 0;
            }
        }
        if start < queued.len() {
            encode_frame(&queued[start..], out);
        }
        self.queued.clear();
    }

    /// Writes the write buffer to the socket, as much as it takes.
    fn write_socket(&mut self) -> Result<(), String> {
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
        Ok(())
    }

    /// Asks for writable events while bytes wait for the socket.
    fn update_interest(&mut self, registry: &Registry) -> Result<(), String> {
        let socket_waiting = match &self.sharing {
            Sharing::On { .. } => !self.socket_tail.is_empty(),
            Sharing::Offered { sent, .. } => !self.write_buffer.is_empty() || !sent,
            Sharing::Off => !self.write_buffer.is_empty(),
        };
        let want_writable = socket_waiting;
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

/// Shared memory (`shared_memory`): the offer, the answer, the rings.
impl Connection {
    /// Whether this connection runs over a Unix socket (its peer is on this
    /// host).
    pub fn is_local(&self) -> bool {
        matches!(self.stream, Stream::Unix(_))
    }

    /// Whether an offer was made or answered here already.
    pub fn sharing_decided(&self) -> bool {
        self.sharing_decided
    }

    /// Whether the link runs over shared memory now.
    pub fn shared(&self) -> bool {
        matches!(self.sharing, Sharing::On { .. })
    }

    /// A Unix socket this side accepted reads the files that come with
    /// its bytes, until the link's sharing is decided: the peer may pass
    /// shared memory.
    fn takes_files(&self) -> bool {
        self.is_local() && self.dialed_node.is_none() && !self.sharing_decided
    }

    /// Offers the peer shared memory with rings of `ring_bytes` (this side
    /// dialed a Unix socket and knows who the peer is): the offer leaves
    /// after everything queued so far, and what is queued later waits for
    /// the answer.
    pub fn offer_shared_memory(&mut self, ring_bytes: usize) -> Result<(), String> {
        assert!(self.is_local(), "shared memory offered over TCP");
        assert!(!self.sharing_decided, "a second offer of shared memory");
        self.sharing_decided = true;
        let (memory, file) = LinkMemory::create(ring_bytes).map_err(|e| e.0)?;
        self.encode_queued();
        let mut frame = Vec::new();
        let ring_bytes = u32::try_from(ring_bytes).expect("RING_BYTES_MAX fits u32");
        encode_frame(&[Message::SharedMemoryOffer { ring_bytes }], &mut frame);
        self.sharing = Sharing::Offered {
            memory: Some(memory),
            file,
            frame,
            sent: false,
            held: Vec::new(),
        };
        Ok(())
    }

    /// The peer's offer, with the most rings this side takes (`None`: it
    /// keeps to the socket). Accepting maps the file that came with the
    /// offer, answers as the socket's last frame and sends everything after
    /// through the rings; a refusal answers why and stays on the socket.
    pub fn on_shared_memory_offer(&mut self, ring_bytes: u32, ring_bytes_max: Option<usize>) {
        let file = self.received_files.pop();
        self.received_files.clear();
        let refusal = if self.sharing_decided || !self.takes_files() {
            Some("an offer where none is expected".to_string())
        } else {
            match ring_bytes_max {
                None => Some("this node does not use shared memory (UseShm=0)".to_string()),
                Some(max) if ring_bytes as usize > max => Some(format!(
                    "rings of {ring_bytes} bytes are more than this node's ShmSize ({max})"
                )),
                Some(_) => None,
            }
        };
        self.sharing_decided = true;
        let opened = match (refusal, file) {
            (Some(reason), _) => Err(reason),
            (None, None) => Err("the offer came without its memory".to_string()),
            (None, Some(file)) => LinkMemory::open(&file, ring_bytes as usize).map_err(|e| e.0),
        };
        let memory = match opened {
            Ok(memory) => memory,
            Err(reason) => {
                self.queue(Message::SharedMemoryAnswer {
                    accepted: false,
                    reason,
                });
                return;
            }
        };
        // What was queued before the answer, and the answer, go on the
        // socket; the peer reads the rings once it has read the answer.
        self.queue(Message::SharedMemoryAnswer {
            accepted: true,
            reason: String::new(),
        });
        self.encode_queued();
        self.socket_tail
            .extend_from_slice(&self.write_buffer[self.write_position..]);
        self.write_buffer.clear();
        self.write_position = 0;
        let (writer, reader) = shared_memory::link_ends(memory, false);
        self.sharing = Sharing::On { writer, reader };
        self.switch_decoder();
    }

    /// The peer's answer to this side's offer. Returns the reason of a
    /// refusal (the link stays on the socket), or an error if no offer
    /// was sent.
    pub fn on_shared_memory_answer(
        &mut self,
        accepted: bool,
        reason: String,
    ) -> Result<Option<String>, String> {
        let Sharing::Offered {
            memory,
            held,
            sent: true,
            ..
        } = &mut self.sharing
        else {
            return Err(format!(
                "{} answered an offer of shared memory that was not made",
                self.peer_address
            ));
        };
        // The offer left only once the write buffer was empty, and what
        // came after waited in `held`: bytes still in the buffer are the
        // offer's own, which the peer cannot have read yet.
        if self.write_position < self.write_buffer.len() {
            return Err(format!(
                "{} answered an offer of shared memory before it arrived",
                self.peer_address
            ));
        }
        let held = std::mem::take(held);
        let memory = memory.take().expect("the offer's memory");
        self.write_buffer = held;
        self.write_position = 0;
        if !accepted {
            self.sharing = Sharing::Off;
            return Ok(Some(reason));
        }
        let (writer, reader) = shared_memory::link_ends(memory, true);
        self.sharing = Sharing::On { writer, reader };
        self.switch_decoder();
        Ok(None)
    }

    /// From here on the frames come from the ring: the socket decoder is
    /// done (the peer writes no frame to the socket after its offer or its
    /// answer).
    fn switch_decoder(&mut self) {
        let mut decoder = FrameDecoder::new();
        decoder.set_payload_bytes_max(FRAME_PAYLOAD_BYTES_MAX);
        self.decoder = decoder;
        self.recharge();
    }

    /// Whether bytes wait in the inbound ring (or its header is broken,
    /// which the next read reports).
    pub fn shared_input_waiting(&self) -> bool {
        match &self.sharing {
            Sharing::On { reader, .. } => reader.available() != Ok(0),
            _ => false,
        }
    }

    /// Reads what waits in the inbound ring (for a link over shared memory;
    /// nothing otherwise).
    pub fn read_shared(&mut self, messages: &mut Vec<Message>) -> Result<(), String> {
        if !self.shared() {
            return Ok(());
        }
        let result = self.read_ring(messages);
        self.recharge();
        result
    }

    /// Tells the peer that this side sleeps (it then rings for its next
    /// bytes), unless bytes came meanwhile: returns whether it may sleep.
    pub fn prepare_to_sleep(&self) -> bool {
        match &self.sharing {
            Sharing::On { reader, .. } => reader.prepare_to_sleep().unwrap_or(false),
            _ => true,
        }
    }

    /// Awake again (after `prepare_to_sleep`).
    pub fn woke(&self) {
        if let Sharing::On { reader, .. } = &self.sharing {
            reader.woke();
        }
    }

    /// Reads the socket of a link over shared memory: doorbells only.
    /// Returns `Ok(false)` once the peer closed.
    fn read_doorbells(&mut self) -> Result<bool, String> {
        let mut bytes = [0u8; 64];
        loop {
            // On to WouldBlock or the close: a close that came with the
            // last doorbell raises no edge of its own.
            match self.stream.read(&mut bytes) {
                Ok(0) => return Ok(false),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read from {}: {e}", self.peer_address)),
            }
        }
    }

    /// Reads the inbound ring into the decoder and decodes, until it is
    /// empty; rings the peer if it waits for room.
    fn read_ring(&mut self, messages: &mut Vec<Message>) -> Result<(), String> {
        let mut took = false;
        loop {
            self.reserve_room()?;
            let room = self.decoder.spare(READ_BYTES_MIN);
            let room_bytes = room.len();
            let Sharing::On { reader, .. } = &mut self.sharing else {
                unreachable!("read_ring without rings");
            };
            let n = reader
                .read(room)
                .map_err(|e| format!("shared memory with {}: {e}", self.peer_address))?;
            if n == 0 {
                break;
            }
            took = true;
            self.decoder.filled(n);
            self.decode(messages)?;
            if n < room_bytes {
                break;
            }
        }
        let Sharing::On { reader, .. } = &self.sharing else {
            unreachable!("read_ring without rings");
        };
        if took && reader.take_writer_waiting() {
            self.ring_doorbell()?;
        }
        Ok(())
    }

    /// Sends the offer with the memory's file, once everything before it
    /// is out.
    fn send_offer(&mut self) -> Result<(), String> {
        let Sharing::Offered {
            file, frame, sent, ..
        } = &mut self.sharing
        else {
            return Ok(());
        };
        if *sent || self.write_position < self.write_buffer.len() {
            return Ok(());
        }
        let Stream::Unix(stream) = &self.stream else {
            unreachable!("an offer over TCP");
        };
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
        let files = [file.as_fd()];
        assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&files)));
        loop {
            match rustix::net::sendmsg(
                stream,
                &[io::IoSlice::new(frame)],
                &mut control,
                rustix::net::SendFlags::NOSIGNAL,
            ) {
                Ok(n) => {
                    // The file went with the first byte; the rest of the
                    // frame follows as plain bytes.
                    self.write_buffer.extend_from_slice(&frame[n..]);
                    *sent = true;
                    return self.write_socket();
                }
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    return Err(format!(
                        "offer of shared memory to {}: {e}",
                        self.peer_address
                    ));
                }
            }
        }
    }

    /// Writes what the side that accepted queued up to its answer.
    fn write_socket_tail(&mut self) -> Result<(), String> {
        while !self.socket_tail.is_empty() {
            match self.stream.write(&self.socket_tail) {
                Ok(0) => return Err(format!("{} stopped accepting bytes", self.peer_address)),
                Ok(n) => {
                    self.socket_tail.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("write to {}: {e}", self.peer_address)),
            }
        }
        Ok(())
    }

    /// Copies the write buffer into the outbound ring, as much as it takes,
    /// and rings the peer if it sleeps. A full ring asks the peer to ring
    /// back once it took bytes.
    fn write_ring(&mut self) -> Result<(), String> {
        loop {
            let Sharing::On { writer, .. } = &mut self.sharing else {
                unreachable!("write_ring without rings");
            };
            let pending = &self.write_buffer[self.write_position..];
            if pending.is_empty() {
                break;
            }
            let n = writer
                .write(pending)
                .map_err(|e| format!("shared memory with {}: {e}", self.peer_address))?;
            self.write_position += n;
            // After every write that moved bytes: the reader may have woken
            // for an earlier doorbell, drained, and slept again meanwhile.
            if n > 0 && writer.reader_sleeping() {
                self.ring_doorbell()?;
            }
            if self.write_position < self.write_buffer.len() {
                let Sharing::On { writer, .. } = &mut self.sharing else {
                    unreachable!("write_ring without rings");
                };
                if !writer.wait_for_room() {
                    break;
                }
            }
        }
        if self.write_position == self.write_buffer.len() {
            self.write_buffer.clear();
            self.write_position = 0;
        }
        Ok(())
    }

    /// One byte on the socket wakes the peer. A full socket means doorbells
    /// wait unread there already, so the peer wakes anyway.
    fn ring_doorbell(&mut self) -> Result<(), String> {
        if !self.socket_tail.is_empty() {
            // The peer reads the rings only after the tail's answer.
            return Ok(());
        }
        loop {
            match self.stream.write(&[DOORBELL]) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("doorbell to {}: {e}", self.peer_address)),
            }
        }
    }
}

/// Reads a Unix socket with the files that come with its bytes, keeping at
/// most `RECEIVED_FILES_MAX` of them (the newest); others are closed.
fn read_with_files(
    stream: &Stream,
    room: &mut [u8],
    files: &mut Vec<OwnedFd>,
) -> io::Result<usize> {
    let Stream::Unix(stream) = stream else {
        unreachable!("files over TCP");
    };
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let received = rustix::net::recvmsg(
        stream,
        &mut [io::IoSliceMut::new(room)],
        &mut control,
        rustix::net::RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(io::Error::from)?;
    for message in control.drain() {
        if let rustix::net::RecvAncillaryMessage::ScmRights(received_files) = message {
            for file in received_files {
                files.push(file);
                if files.len() > RECEIVED_FILES_MAX {
                    files.remove(0);
                }
            }
        }
    }
    Ok(received.bytes)
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

    /// Two connected data-node ends over a Unix socket pair, both
    /// identified, the first as the side that dialed.
    fn local_pair() -> (Connection, Connection, mio::Poll) {
        let (a, b) = UnixStream::pair().expect("socket pair");
        let poll = mio::Poll::new().expect("poll");
        let mut dialer = Connection::new(a, Token(1), "dialed".to_string(), 64 << 20);
        let mut acceptor = Connection::new(b, Token(2), "accepted".to_string(), 64 << 20);
        dialer.register(poll.registry()).unwrap();
        acceptor.register(poll.registry()).unwrap();
        let peer = |node| Peer {
            node,
            incarnation: 1,
            role: NodeRole::Data,
        };
        dialer.dialed_node = Some(3);
        dialer.peer = Some(peer(3));
        acceptor.peer = Some(peer(2));
        (dialer, acceptor, poll)
    }

    /// Flushes and reads both ends until neither moves a byte, the way the
    /// event loop does; returns what each side received.
    fn exchange(
        a: &mut Connection,
        b: &mut Connection,
        poll: &mio::Poll,
    ) -> (Vec<Message>, Vec<Message>) {
        let (mut to_a, mut to_b) = (Vec::new(), Vec::new());
        for _ in 0..10_000 {
            let before = (to_a.len(), to_b.len());
            a.flush(poll.registry()).unwrap();
            b.flush(poll.registry()).unwrap();
            let mut got = Vec::new();
            assert!(b.read(&mut got).unwrap());
            b.read_shared(&mut got).unwrap();
            to_b.append(&mut got);
            assert!(a.read(&mut got).unwrap());
            a.read_shared(&mut got).unwrap();
            to_a.append(&mut got);
            let idle = (to_a.len(), to_b.len()) == before
                && a.queued.is_empty()
                && b.queued.is_empty()
                && a.write_position == a.write_buffer.len()
                && b.write_position == b.write_buffer.len()
                && b.socket_tail.is_empty();
            if idle {
                return (to_a, to_b);
            }
        }
        panic!("the exchange never settled");
    }

    fn echo(i: u64) -> Message {
        Message::HeartbeatEcho { sent_at_ms: i }
    }

    #[test]
    fn an_accepted_offer_moves_the_link_to_shared_memory_without_losing_a_message() {
        let (mut dialer, mut acceptor, poll) = local_pair();
        // Queued before the offer: goes on the socket, ahead of it.
        dialer.queue(echo(1));
        dialer
            .offer_shared_memory(shared_memory::RING_BYTES_MIN)
            .unwrap();
        // Queued after the offer: waits for the answer, then takes the ring.
        dialer.queue(echo(2));
        acceptor.queue(echo(100));
        let (to_dialer, to_acceptor) = exchange(&mut dialer, &mut acceptor, &poll);
        let offer = to_acceptor
            .iter()
            .find_map(|m| match m {
                Message::SharedMemoryOffer { ring_bytes } => Some(*ring_bytes),
                _ => None,
            })
            .expect("the offer arrived");
        assert_eq!(to_acceptor[0], echo(1));
        assert!(!to_acceptor.contains(&echo(2)), "held until the answer");
        assert_eq!(to_dialer, vec![echo(100)]);
        acceptor.on_shared_memory_offer(offer, Some(shared_memory::RING_BYTES_MAX));
        acceptor.queue(echo(101));
        let (to_dialer, to_acceptor) = exchange(&mut dialer, &mut acceptor, &poll);
        assert!(acceptor.shared());
        let Message::SharedMemoryAnswer { accepted, reason } = &to_dialer[0] else {
            panic!("the answer comes first: {to_dialer:?}");
        };
        assert!(accepted, "{reason}");
        assert!(to_acceptor.is_empty());
        assert_eq!(
            dialer.on_shared_memory_answer(true, String::new()).unwrap(),
            None
        );
        assert!(dialer.shared());
        let (to_dialer, to_acceptor) = exchange(&mut dialer, &mut acceptor, &poll);
        // What was written to the ring before the dialer switched, and what
        // it held, arrive now, in order.
        assert_eq!(to_dialer, vec![echo(101)]);
        assert_eq!(to_acceptor, vec![echo(2)]);
        // Many times a ring's worth both ways: the full ring waits for
        // room, and the order holds.
        let count = 60_000u64;
        for i in 0..count {
            dialer.queue(echo(i));
            acceptor.queue(echo(count + i));
        }
        let (to_dialer, to_acceptor) = exchange(&mut dialer, &mut acceptor, &poll);
        assert_eq!(to_acceptor, (0..count).map(echo).collect::<Vec<_>>());
        assert_eq!(to_dialer, (count..2 * count).map(echo).collect::<Vec<_>>());
        assert!(
            count * 10 > 2 * shared_memory::RING_BYTES_MIN as u64,
            "more than the ring holds"
        );
    }

    #[test]
    fn a_refused_offer_keeps_the_link_on_the_socket() {
        let (mut dialer, mut acceptor, poll) = local_pair();
        dialer
            .offer_shared_memory(shared_memory::RING_BYTES_MIN)
            .unwrap();
        dialer.queue(echo(1));
        let (_, to_acceptor) = exchange(&mut dialer, &mut acceptor, &poll);
        let Some(Message::SharedMemoryOffer { ring_bytes }) = to_acceptor.first() else {
            panic!("no offer: {to_acceptor:?}");
        };
        // A node with UseShm=0.
        acceptor.on_shared_memory_offer(*ring_bytes, None);
        let (to_dialer, _) = exchange(&mut dialer, &mut acceptor, &poll);
        let Message::SharedMemoryAnswer { accepted, reason } = &to_dialer[0] else {
            panic!("no answer: {to_dialer:?}");
        };
        assert!(!accepted);
        assert!(reason.contains("UseShm"), "{reason}");
        let reason = dialer
            .on_shared_memory_answer(false, reason.clone())
            .unwrap();
        assert!(reason.is_some());
        assert!(!dialer.shared() && !acceptor.shared());
        acceptor.queue(echo(7));
        let (to_dialer, to_acceptor) = exchange(&mut dialer, &mut acceptor, &poll);
        assert_eq!(
            to_acceptor,
            vec![echo(1)],
            "the held message went on the socket"
        );
        assert_eq!(to_dialer, vec![echo(7)]);
    }

    #[test]
    fn an_answer_without_an_offer_or_an_offer_without_memory_is_refused() {
        let (mut dialer, mut acceptor, poll) = local_pair();
        assert!(
            acceptor
                .on_shared_memory_answer(true, String::new())
                .is_err()
        );
        // An offer frame with no file attached.
        acceptor.on_shared_memory_offer(shared_memory::RING_BYTES_MIN as u32, Some(1 << 26));
        let (to_dialer, _) = exchange(&mut dialer, &mut acceptor, &poll);
        assert!(matches!(
            &to_dialer[0],
            Message::SharedMemoryAnswer { accepted: false, reason } if reason.contains("without")
        ));
        assert!(!acceptor.shared());
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
