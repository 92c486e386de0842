//! Frames: how messages travel on a TCP connection.
//!
//! One frame carries one or more messages, so a sender that has several
//! messages for the same peer pays for one header, one checksum and one
//! syscall. Byte layout (little-endian):
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 4 | magic `SHOL` |
//! | 4 | 2 | protocol version (`PROTOCOL_VERSION`) |
//! | 6 | 2 | number of messages |
//! | 8 | 4 | payload length in bytes (≤ `FRAME_PAYLOAD_BYTES_MAX`) |
//! | 12 | 4 | CRC-32C of the payload |
//! | 16 | n | payload: per message a u32 length, then the message bytes |
//!
//! A frame with a wrong magic, an unknown version, an oversized payload or a
//! bad checksum is a protocol error: the receiver closes the connection,
//! which its peer sees as a node failure, rather than guess.

use crate::codec::{DecodeError, Reader};
use crate::message::Message;

pub const FRAME_MAGIC: [u8; 4] = *b"SHOL";
/// Bumped whenever any message layout changes; peers must match exactly.
pub const PROTOCOL_VERSION: u16 = 11;
pub const FRAME_HEADER_BYTES: usize = 16;
/// Largest payload a frame may carry. The dictionary snapshot is the largest
/// message; the president keeps it under
/// `cluster::dictionary::DICTIONARY_BYTES_MAX` (8 MiB), well inside.
pub const FRAME_PAYLOAD_BYTES_MAX: usize = 32 << 20;
/// Most messages in one frame (the count field is 16 bits).
pub const FRAME_MESSAGES_MAX: usize = u16::MAX as usize;

/// Appends one frame holding `messages` to `out`.
///
/// Panics if the messages exceed the frame limits: senders batch at most
/// `FRAME_MESSAGES_MAX` messages and no message comes near the byte limit.
pub fn encode_frame(messages: &[Message], out: &mut Vec<u8>) {
    assert!(!messages.is_empty(), "a frame carries at least one message");
    assert!(messages.len() <= FRAME_MESSAGES_MAX);
    let header_at = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
    for message in messages {
        let length_at = out.len();
        out.extend_from_slice(&[0; 4]);
        message.encode(out);
        let length = u32::try_from(out.len() - length_at - 4).expect("message under 4 GiB");
        out[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
    }
    let payload = &out[header_at + FRAME_HEADER_BYTES..];
    assert!(
        payload.len() <= FRAME_PAYLOAD_BYTES_MAX,
        "frame payload too large"
    );
    let checksum = crc32c::crc32c(payload);
    let payload_length = payload.len() as u32;
    let header = &mut out[header_at..header_at + FRAME_HEADER_BYTES];
    header[0..4].copy_from_slice(&FRAME_MAGIC);
    header[4..6].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    header[6..8].copy_from_slice(&(messages.len() as u16).to_le_bytes());
    header[8..12].copy_from_slice(&payload_length.to_le_bytes());
    header[12..16].copy_from_slice(&checksum.to_le_bytes());
}

/// Reassembles frames from a byte stream that arrives in arbitrary pieces.
///
/// The buffer is filled in place (`spare`, then `filled`) so a connection
/// reads straight into it: no intermediate buffer to zero or copy out of per
/// read. Bytes `start..end` are received and not yet decoded; the buffer's
/// length is how much of it has ever been initialised, so it is zeroed only
/// when it grows, never per read.
///
/// Memory follows the bytes that arrived, never the size a header
/// announces: a peer that announces 32 MiB and sends 100 bytes costs about
/// the room of one read. The buffer grows by half its size at a time (not
/// doubling, so what it holds is at least two thirds used), never past the
/// frame being received, and a buffer emptied after a large frame is given
/// back (`RETAINED_ROOM_FACTOR`).
pub struct FrameDecoder {
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// Largest payload this decoder accepts: `FRAME_PAYLOAD_BYTES_MAX`
    /// unless the connection lowered it (a peer that has not identified
    /// itself may send only small frames).
    payload_bytes_max: usize,
    /// The largest room asked of `spare`: what a buffer emptied after a
    /// large frame is measured against.
    room_bytes_max: usize,
}

/// A buffer with nothing undecoded and more than this many times the
/// largest room asked of `spare` is freed, so the memory of one large frame
/// does not stay with the connection.
pub const RETAINED_ROOM_FACTOR: usize = 4;

impl Default for FrameDecoder {
    fn default() -> FrameDecoder {
        FrameDecoder {
            buffer: Vec::new(),
            start: 0,
            end: 0,
            payload_bytes_max: FRAME_PAYLOAD_BYTES_MAX,
            room_bytes_max: 0,
        }
    }
}

impl FrameDecoder {
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Refuses frames whose payload is larger than `bytes` (at most
    /// `FRAME_PAYLOAD_BYTES_MAX`): their header is an error as soon as it
    /// arrives.
    pub fn set_payload_bytes_max(&mut self, bytes: usize) {
        assert!(
            bytes <= FRAME_PAYLOAD_BYTES_MAX,
            "over the frame format's limit"
        );
        self.payload_bytes_max = bytes;
    }

    pub fn payload_bytes_max(&self) -> usize {
        self.payload_bytes_max
    }

    /// Bytes the buffer holds allocated, used or not: what a connection's
    /// receive memory is charged.
    pub fn allocated_bytes(&self) -> usize {
        self.buffer.capacity()
    }

    /// Appends bytes read from the connection.
    pub fn push(&mut self, bytes: &[u8]) {
        self.spare(bytes.len())[..bytes.len()].copy_from_slice(bytes);
        self.filled(bytes.len());
    }

    /// How many bytes `spare(bytes_min)` would add to `allocated_bytes`:
    /// a connection checks its memory budget before asking for the room.
    pub fn growth_for(&self, bytes_min: usize) -> usize {
        let end = if self.buffer.len() - self.end < bytes_min {
            self.end - self.start
        } else {
            self.end
        };
        let needed = end + bytes_min;
        let capacity = self.buffer.capacity();
        if needed <= capacity {
            return 0;
        }
        self.grown_capacity(needed) - capacity
    }

    /// The capacity the buffer takes when it must hold `needed` bytes:
    /// half as much again as now, but not past the frame being received.
    fn grown_capacity(&self, needed: usize) -> usize {
        let capacity = self.buffer.capacity();
        let mut target = capacity + capacity / 2;
        if let Some(frame_bytes) = self.announced_frame_bytes() {
            target = target.min(frame_bytes);
        }
        target.max(needed)
    }

    /// The whole size of the frame at `start`, once its header arrived.
    fn announced_frame_bytes(&self) -> Option<usize> {
        let available = &self.buffer[self.start..self.end];
        if available.len() < FRAME_HEADER_BYTES {
            return None;
        }
        let payload_length = u32::from_le_bytes(available[8..12].try_into().expect("4")) as usize;
        Some(FRAME_HEADER_BYTES + payload_length.min(self.payload_bytes_max))
    }

    /// Room for at least `bytes_min` more bytes after those received: read
    /// into it, then call `filled` with how many bytes arrived. Undecoded
    /// bytes move to the front first when that makes the room, so the
    /// buffer grows only when one frame needs it.
    pub fn spare(&mut self, bytes_min: usize) -> &mut [u8] {
        self.room_bytes_max = self.room_bytes_max.max(bytes_min);
        if self.buffer.len() - self.end < bytes_min && self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buffer.len() - self.end < bytes_min {
            let needed = self.end + bytes_min;
            if needed > self.buffer.capacity() {
                let target = self.grown_capacity(needed);
                self.buffer.reserve_exact(target - self.buffer.len());
            }
            self.buffer.resize(needed, 0);
        }
        &mut self.buffer[self.end..]
    }

    /// Makes `bytes` more of the room `spare` gave part of the stream.
    pub fn filled(&mut self, bytes: usize) {
        assert!(
            bytes <= self.buffer.len() - self.end,
            "filled more than the spare room"
        );
        self.end += bytes;
    }

    /// Bytes received but not yet returned as frames.
    pub fn buffered_bytes(&self) -> usize {
        self.end - self.start
    }

    /// Decodes the next complete frame into `messages`. Returns `Ok(false)`
    /// when more bytes are needed, and an error when the stream is corrupt
    /// (the connection must then be closed).
    pub fn next_frame(&mut self, messages: &mut Vec<Message>) -> Result<bool, DecodeError> {
        let available = &self.buffer[self.start..self.end];
        if available.len() < FRAME_HEADER_BYTES {
            return Ok(false);
        }
        let header = &available[..FRAME_HEADER_BYTES];
        if header[0..4] != FRAME_MAGIC {
            return Err(DecodeError::new("frame: bad magic"));
        }
        let version = u16::from_le_bytes([header[4], header[5]]);
        if version != PROTOCOL_VERSION {
            return Err(DecodeError::new(format!(
                "frame: protocol version {version}, this node speaks {PROTOCOL_VERSION}"
            )));
        }
        let count = u16::from_le_bytes([header[6], header[7]]) as usize;
        let payload_length = u32::from_le_bytes(header[8..12].try_into().expect("4")) as usize;
        let checksum = u32::from_le_bytes(header[12..16].try_into().expect("4"));
        if payload_length > self.payload_bytes_max {
            return Err(DecodeError::new(format!(
                "frame: payload of {payload_length} bytes exceeds {}",
                self.payload_bytes_max
            )));
        }
        if available.len() < FRAME_HEADER_BYTES + payload_length {
            return Ok(false);
        }
        let payload = &available[FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + payload_length];
        if crc32c::crc32c(payload) != checksum {
            return Err(DecodeError::new("frame: checksum mismatch"));
        }
        let mut reader = Reader::new(payload);
        for _ in 0..count {
            let bytes = reader.bytes("frame message")?;
            messages.push(Message::decode(bytes)?);
        }
        reader.finish("frame")?;
        self.start += FRAME_HEADER_BYTES + payload_length;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buffer.capacity() > RETAINED_ROOM_FACTOR * self.room_bytes_max {
                self.buffer = Vec::new();
            }
        }
        Ok(true)
    }
}
