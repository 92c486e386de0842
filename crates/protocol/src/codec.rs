//! Little-endian byte writer and bounds-checked reader shared by every wire
//! format in this crate. The reader never panics on malformed input: every
//! read checks the remaining length and fails with `DecodeError`.

use std::fmt;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub message: String,
}

impl DecodeError {
    pub fn new(message: impl Into<String>) -> DecodeError {
        DecodeError {
            message: message.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message: {}", self.message)
    }
}

impl std::error::Error for DecodeError {}

/// Appends little-endian values to a byte vector.
pub struct Writer<'a> {
    pub out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Writer<'a> {
        Writer { out }
    }

    pub fn u8(&mut self, value: u8) {
        self.out.push(value);
    }

    pub fn u16(&mut self, value: u16) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub fn u32(&mut self, value: u32) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub fn u64(&mut self, value: u64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub fn bool(&mut self, value: bool) {
        self.u8(u8::from(value));
    }

    /// A u32 length followed by the bytes.
    pub fn bytes(&mut self, value: &[u8]) {
        let length = u32::try_from(value.len()).expect("byte string longer than 4 GiB");
        self.u32(length);
        self.out.extend_from_slice(value);
    }

    pub fn string(&mut self, value: &str) {
        self.bytes(value.as_bytes());
    }

    /// A u32 count; the caller then writes the items.
    pub fn count(&mut self, count: usize) {
        self.u32(u32::try_from(count).expect("more than 4 billion items"));
    }
}

/// Reads little-endian values from a byte slice, checking every bound.
pub struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, position: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn take(&mut self, length: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < length {
            return Err(DecodeError::new(format!(
                "{what}: needs {length} bytes, {} left",
                self.remaining()
            )));
        }
        let slice = &self.bytes[self.position..self.position + length];
        self.position += length;
        Ok(slice)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        let bytes = self.take(2, what)?;
        Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        let bytes = self.take(8, what)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("eight bytes")))
    }

    pub fn bool(&mut self, what: &str) -> Result<bool, DecodeError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DecodeError::new(format!(
                "{what}: {other} is not a boolean"
            ))),
        }
    }

    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let length = self.u32(what)? as usize;
        self.take(length, what)
    }

    pub fn string(&mut self, what: &str) -> Result<String, DecodeError> {
        let bytes = self.bytes(what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| DecodeError::new(format!("{what}: not UTF-8")))
    }

    /// A u32 count of items that each take at least `item_bytes_min` bytes;
    /// a count the remaining bytes cannot hold is rejected before any
    /// allocation, so a corrupt count cannot make the reader reserve gigabytes.
    pub fn count(&mut self, item_bytes_min: usize, what: &str) -> Result<usize, DecodeError> {
        let count = self.u32(what)? as usize;
        if count.saturating_mul(item_bytes_min.max(1)) > self.remaining() {
            return Err(DecodeError::new(format!(
                "{what}: {count} items cannot fit in {} bytes",
                self.remaining()
            )));
        }
        Ok(count)
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self, what: &str) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(DecodeError::new(format!(
                "{what}: {} trailing bytes",
                self.remaining()
            )));
        }
        Ok(())
    }
}
