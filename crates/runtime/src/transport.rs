//! Connections on a mio event loop: messages queued during one loop turn
//! leave as one batch of frames per connection (one syscall where the
//! socket takes it all), and bytes read are cut back into messages.
//!
//! Every connection has a bounded write buffer (`SendBufferMemory`): a peer
//! that does not read fast enough is disconnected, which its protocols
//! treat as a node failure, rather than letting memory grow without limit.

use std::io::{self, Read, Write};

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use protocol::frame::{FRAME_MESSAGES_MAX, FRAME_PAYLOAD_BYTES_MAX};
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
            decoder: FrameDecoder::new(),
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
    /// connection that started out blocking).
    pub fn with_decoder(mut self, decoder: FrameDecoder) -> Connection {
        self.decoder = decoder;
        self
    }

    /// Reads what the socket holds into the decoder, until it would block,
    /// and decodes every complete frame. Returns `Ok(false)` once the peer
    /// closed.
    ///
    /// Stopping at a read shorter than the room offered (the registration is
    /// edge-triggered) saved one `recvfrom` per event, but `shoal bench pk`
    /// then lost an answer in about one run of three (error 4012) and the
    /// cause is not found yet, so the read goes on to `WouldBlock`.
    pub fn read(&mut self, messages: &mut Vec<Message>) -> Result<bool, String> {
        let mut open = true;
        loop {
            let room = self.decoder.spare(READ_BYTES_MIN);
            match self.stream.read(room) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => self.decoder.filled(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("read from {}: {e}", self.peer_address)),
            }
        }
        while self
            .decoder
            .next_frame(messages)
            .map_err(|e| format!("{} sent a bad frame: {e}", self.peer_address))?
        {}
        Ok(open)
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
