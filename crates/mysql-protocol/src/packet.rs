//! Packet framing and the protocol's primitive encodings.
//!
//! Every message travels as one or more frames: a 3-byte little-endian
//! payload length, a 1-byte sequence id, then the payload. A payload of
//! 0xFFFFFF bytes or more is split into frames of exactly 0xFFFFFF bytes
//! followed by a shorter one; when the length is an exact multiple of
//! 0xFFFFFF the last frame is empty, so a reader always knows where the
//! message ends. Sequence ids count up by one per frame, wrapping at 256.
//!
//! Inside a payload the protocol uses fixed-width little-endian integers,
//! length-encoded integers (one byte below 0xFB; 0xFC + 2 bytes; 0xFD + 3
//! bytes; 0xFE + 8 bytes; 0xFB is NULL in a text row and 0xFF never starts
//! one), length-encoded strings (a length-encoded integer, then that many
//! bytes), NUL-terminated strings and "rest of the packet" strings.
//!
//! Every reader here is bounds-checked and reports truncated or invalid
//! input as a [`DecodeError`]; none of them panics on any input.

use std::borrow::Cow;

use crate::error::DecodeError;

/// Bytes of a frame header: 3 bytes of length and 1 byte of sequence id.
pub const PACKET_HEADER_LENGTH: usize = 4;

/// The largest payload one frame carries; a payload this long or longer
/// continues in the next frame.
pub const MAX_FRAME_PAYLOAD_LENGTH: usize = 0xFF_FFFF;

/// MySQL 8.0's default `max_allowed_packet`: 64 MiB.
pub const DEFAULT_MAX_ALLOWED_PACKET: usize = 64 * 1024 * 1024;

/// The first byte of a length-encoded integer that announces a 2-byte value.
pub const LENENC_TWO_BYTES: u8 = 0xFC;
/// The first byte of a length-encoded integer that announces a 3-byte value.
pub const LENENC_THREE_BYTES: u8 = 0xFD;
/// The first byte of a length-encoded integer that announces an 8-byte value.
pub const LENENC_EIGHT_BYTES: u8 = 0xFE;
/// The byte that stands for NULL in a text result row.
pub const LENENC_NULL: u8 = 0xFB;

/// How a frame-level read failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingError {
    /// The reassembled payload would be longer than the allowed maximum.
    TooLarge {
        /// The configured limit (`max_allowed_packet`).
        limit: usize,
    },
    /// A frame carried another sequence id than the one expected.
    OutOfOrder {
        /// The sequence id the reader expected.
        expected: u8,
        /// The sequence id the frame carried.
        received: u8,
    },
}

/// One complete message read from the input: its payload (borrowed when it
/// fit in a single frame, reassembled otherwise), how many input bytes it
/// used, and the sequence id the next frame in either direction carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    /// The payload with all frame headers removed.
    pub payload: Cow<'a, [u8]>,
    /// Input bytes the message occupied, headers included.
    pub consumed: usize,
    /// The sequence id following the message's last frame.
    pub next_sequence: u8,
}

/// Reads one complete message from the front of `input`.
///
/// Returns `Ok(None)` while the input holds only part of it. The frames
/// must carry consecutive sequence ids starting at `expected_sequence`;
/// a payload whose frames add up to more than `max_payload_length` is
/// refused as soon as the headers show it, before its bytes arrive.
pub fn read_message(
    input: &[u8],
    expected_sequence: u8,
    max_payload_length: usize,
) -> Result<Option<Message<'_>>, FramingError> {
    let mut position = 0;
    let mut total_length = 0usize;
    let mut sequence = expected_sequence;
    let mut frame_count = 0usize;
    loop {
        let Some(header) = input.get(position..position + PACKET_HEADER_LENGTH) else {
            return Ok(None);
        };
        let frame_length =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        if header[3] != sequence {
            return Err(FramingError::OutOfOrder {
                expected: sequence,
                received: header[3],
            });
        }
        total_length += frame_length;
        if total_length > max_payload_length {
            return Err(FramingError::TooLarge {
                limit: max_payload_length,
            });
        }
        let frame_end = position + PACKET_HEADER_LENGTH + frame_length;
        if input.len() < frame_end {
            return Ok(None);
        }
        position = frame_end;
        sequence = sequence.wrapping_add(1);
        frame_count += 1;
        if frame_length < MAX_FRAME_PAYLOAD_LENGTH {
            break;
        }
    }
    let payload = if frame_count == 1 {
        Cow::Borrowed(&input[PACKET_HEADER_LENGTH..position])
    } else {
        let mut payload = Vec::with_capacity(total_length);
        let mut frame_start = 0;
        while frame_start < position {
            let frame_length = usize::from(input[frame_start])
                | usize::from(input[frame_start + 1]) << 8
                | usize::from(input[frame_start + 2]) << 16;
            let body_start = frame_start + PACKET_HEADER_LENGTH;
            payload.extend_from_slice(&input[body_start..body_start + frame_length]);
            frame_start = body_start + frame_length;
        }
        Cow::Owned(payload)
    };
    Ok(Some(Message {
        payload,
        consumed: position,
        next_sequence: sequence,
    }))
}

/// The input bytes a message of `max_payload_length` bytes needs at most,
/// frame headers included: the bound on a connection's input buffer.
pub fn max_message_wire_length(max_payload_length: usize) -> usize {
    let frames = max_payload_length / MAX_FRAME_PAYLOAD_LENGTH + 1;
    max_payload_length + frames * PACKET_HEADER_LENGTH
}

/// Reserves a frame header at the end of `out` for a payload the caller
/// appends next; [`finish_packet`] fills it in. Returns the header's offset.
pub fn begin_packet(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; PACKET_HEADER_LENGTH]);
    start
}

/// Completes the packet begun at `start`: writes its header with the next
/// sequence id and, when the payload reaches 0xFFFFFF bytes, splits it into
/// several frames in place (with an empty last frame when the length is an
/// exact multiple). Advances `sequence` past every frame written.
pub fn finish_packet(out: &mut Vec<u8>, start: usize, sequence: &mut u8) {
    assert!(
        start + PACKET_HEADER_LENGTH <= out.len(),
        "finish_packet needs the header that begin_packet reserved"
    );
    let payload_length = out.len() - start - PACKET_HEADER_LENGTH;
    if payload_length < MAX_FRAME_PAYLOAD_LENGTH {
        write_frame_header(out, start, payload_length, *sequence);
        *sequence = sequence.wrapping_add(1);
        return;
    }
    // Long payloads are rare (rows or queries of 16 MiB and more), so moving
    // the bytes to make room for the extra headers costs nothing that matters.
    let frame_count = payload_length / MAX_FRAME_PAYLOAD_LENGTH + 1;
    let payload_start = start + PACKET_HEADER_LENGTH;
    out.resize(out.len() + (frame_count - 1) * PACKET_HEADER_LENGTH, 0);
    for frame in (0..frame_count).rev() {
        let source = payload_start + frame * MAX_FRAME_PAYLOAD_LENGTH;
        let length =
            (payload_length - frame * MAX_FRAME_PAYLOAD_LENGTH).min(MAX_FRAME_PAYLOAD_LENGTH);
        let header = start + frame * (MAX_FRAME_PAYLOAD_LENGTH + PACKET_HEADER_LENGTH);
        let destination = header + PACKET_HEADER_LENGTH;
        out.copy_within(source..source + length, destination);
        write_frame_header(out, header, length, sequence.wrapping_add(frame as u8));
    }
    *sequence = sequence.wrapping_add(frame_count as u8);
}

/// Appends `payload` to `out` as one packet (split into frames when needed).
pub fn write_packet(out: &mut Vec<u8>, sequence: &mut u8, payload: &[u8]) {
    let start = begin_packet(out);
    out.extend_from_slice(payload);
    finish_packet(out, start, sequence);
}

fn write_frame_header(out: &mut [u8], at: usize, length: usize, sequence: u8) {
    debug_assert!(length <= MAX_FRAME_PAYLOAD_LENGTH);
    out[at] = length as u8;
    out[at + 1] = (length >> 8) as u8;
    out[at + 2] = (length >> 16) as u8;
    out[at + 3] = sequence;
}

/// Appends a length-encoded integer.
pub fn write_lenenc_int(out: &mut Vec<u8>, value: u64) {
    if value < u64::from(LENENC_NULL) {
        out.push(value as u8);
    } else if value <= 0xFFFF {
        out.push(LENENC_TWO_BYTES);
        out.extend_from_slice(&(value as u16).to_le_bytes());
    } else if value <= 0xFF_FFFF {
        out.push(LENENC_THREE_BYTES);
        out.extend_from_slice(&(value as u32).to_le_bytes()[..3]);
    } else {
        out.push(LENENC_EIGHT_BYTES);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// Appends a length-encoded string.
pub fn write_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a NUL-terminated string. The bytes must not contain a NUL,
/// which would end the string early for the reader.
pub fn write_nul_terminated(out: &mut Vec<u8>, bytes: &[u8]) {
    debug_assert!(!bytes.contains(&0), "a NUL-terminated string holds no NUL");
    out.extend_from_slice(bytes);
    out.push(0);
}

/// A bounds-checked cursor over one payload.
#[derive(Debug, Clone)]
pub struct PayloadReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> PayloadReader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        PayloadReader { bytes, position: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next byte without consuming it.
    pub fn peek_u8(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    /// The next `length` bytes.
    pub fn read_bytes(
        &mut self,
        length: usize,
        field: &'static str,
    ) -> Result<&'a [u8], DecodeError> {
        let available = self.remaining();
        if length > available {
            return Err(DecodeError::Truncated {
                field,
                needed: length,
                available,
            });
        }
        let bytes = &self.bytes[self.position..self.position + length];
        self.position += length;
        Ok(bytes)
    }

    /// Exactly `N` bytes as an array.
    pub fn read_array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], DecodeError> {
        let bytes = self.read_bytes(N, field)?;
        let mut array = [0u8; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// A 1-byte integer.
    pub fn read_u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.read_array::<1>(field)?[0])
    }

    /// A 2-byte little-endian integer.
    pub fn read_u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.read_array(field)?))
    }

    /// A 3-byte little-endian integer.
    pub fn read_u24(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        let [low, middle, high] = self.read_array(field)?;
        Ok(u32::from_le_bytes([low, middle, high, 0]))
    }

    /// A 4-byte little-endian integer.
    pub fn read_u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.read_array(field)?))
    }

    /// An 8-byte little-endian integer.
    pub fn read_u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.read_array(field)?))
    }

    /// A length-encoded integer; the NULL marker and 0xFF are invalid here.
    pub fn read_lenenc_int(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        match self.read_u8(field)? {
            LENENC_TWO_BYTES => Ok(u64::from(self.read_u16(field)?)),
            LENENC_THREE_BYTES => Ok(u64::from(self.read_u24(field)?)),
            LENENC_EIGHT_BYTES => self.read_u64(field),
            LENENC_NULL | 0xFF => Err(DecodeError::Invalid {
                field,
                reason: "not a length-encoded integer",
            }),
            small => Ok(u64::from(small)),
        }
    }

    /// A length-encoded string.
    pub fn read_lenenc_bytes(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let length = self.read_lenenc_int(field)?;
        let length = usize::try_from(length).map_err(|_| DecodeError::Truncated {
            field,
            needed: usize::MAX,
            available: self.remaining(),
        })?;
        self.read_bytes(length, field)
    }

    /// A NUL-terminated string, without its NUL.
    pub fn read_nul_terminated(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let rest = &self.bytes[self.position..];
        match rest.iter().position(|&byte| byte == 0) {
            Some(length) => {
                self.position += length + 1;
                Ok(&rest[..length])
            }
            None => Err(DecodeError::Invalid {
                field,
                reason: "missing NUL terminator",
            }),
        }
    }

    /// Every byte not yet read.
    pub fn read_rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.position..];
        self.position = self.bytes.len();
        rest
    }
}
