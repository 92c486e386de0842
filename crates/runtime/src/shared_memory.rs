//! Shared-memory rings between two processes on one host, for links whose
//! both ends run here (NDB's SHM transporter, `UseShm`).
//!
//! A link's socket costs a system call to send and another to receive,
//! each with the kernel's buffer accounting and a wake-up; on the 2-core
//! virtual machines Shoal is measured on they were about a fifth of a data
//! node's CPU. Over shared memory, a send is a copy into a ring and a
//! receive a copy out, with no system call while the reader is awake; the
//! socket stays, as the doorbell that wakes a reader that went to sleep
//! and as the link's liveness (a peer that dies closes it).
//!
//! ## One ring per direction
//! The side that dialed creates one `memfd` holding two rings (its own
//! outbound first) and passes it over the socket (`SCM_RIGHTS`), after
//! both sides proved who they are. Each ring has one writer and one
//! reader; the positions only grow (a u64 wraps in centuries), and a
//! byte's place is its position modulo the ring's size (a power of two).
//!
//! ## Sleeping and waking
//! A reader about to sleep sets `reader_sleeping`, then looks at the ring
//! once more; a writer publishes its bytes, then looks at
//! `reader_sleeping`, and rings the doorbell (one byte on the socket) if
//! it is set. Both use sequentially consistent fences between their store
//! and their load, so at least one of them sees the other: a reader never
//! sleeps on bytes it was not woken for. A writer that finds the ring full
//! sets `writer_waiting` the same way, and the reader, after taking bytes,
//! rings the doorbell the other way.
//!
//! ## A peer is not trusted
//! The other process can write anything into the shared pages. Each side
//! keeps its own position and only reads the other's, checking that it is
//! within one ring's size of its own; a position out of range is an error
//! that closes the link. Bytes are copied out before anything decodes
//! them, and the frames they carry are checksummed and bounded as on a
//! socket.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

/// Bytes of a ring's header: four fields, each on its own cache line so
/// the writer's and the reader's stores do not share a line.
const HEADER_BYTES: usize = 4 * CACHE_LINE_BYTES;
const CACHE_LINE_BYTES: usize = 64;
const TAIL_OFFSET: usize = 0;
const HEAD_OFFSET: usize = CACHE_LINE_BYTES;
const READER_SLEEPING_OFFSET: usize = 2 * CACHE_LINE_BYTES;
const WRITER_WAITING_OFFSET: usize = 3 * CACHE_LINE_BYTES;

/// The smallest and largest ring a link may have (`ShmSize` is checked
/// against these by the configuration, and an offer from a peer too).
pub const RING_BYTES_MIN: usize = 64 * 1024;
pub const RING_BYTES_MAX: usize = 64 * 1024 * 1024;

/// The byte a doorbell is; any byte does, this one is easy to spot.
pub const DOORBELL: u8 = 0xdb;

/// Why a ring cannot be used: the peer's position is out of range (it
/// wrote over the header, or is not a Shoal process), or the memory could
/// not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingError(pub String);

impl std::fmt::Display for RingError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// The bytes of a link's memory for two rings of `ring_bytes` each.
pub fn link_memory_bytes(ring_bytes: usize) -> usize {
    2 * (HEADER_BYTES + ring_bytes)
}

/// Whether `ring_bytes` is a size a ring may have.
pub fn valid_ring_bytes(ring_bytes: usize) -> bool {
    ring_bytes.is_power_of_two() && (RING_BYTES_MIN..=RING_BYTES_MAX).contains(&ring_bytes)
}

/// One link's shared memory, mapped into this process. Unmapped on drop;
/// the rings made from it hold it alive.
pub struct LinkMemory {
    base: *mut u8,
    bytes: usize,
    ring_bytes: usize,
}

// The mapping is plain memory: the rings that point into it are used by
// one thread at a time (`RingWriter`/`RingReader` are not `Sync`), and
// every field another process writes is an atomic.
unsafe impl Send for LinkMemory {}
unsafe impl Sync for LinkMemory {}

impl LinkMemory {
    /// New memory for two rings of `ring_bytes`, and the file that maps it,
    /// for the peer.
    pub fn create(ring_bytes: usize) -> Result<(LinkMemory, OwnedFd), RingError> {
        if !valid_ring_bytes(ring_bytes) {
            return Err(RingError(format!(
                "a ring of {ring_bytes} bytes: it must be a power of two from {RING_BYTES_MIN} \
                 to {RING_BYTES_MAX}"
            )));
        }
        let file = rustix::fs::memfd_create(
            "shoal-link",
            rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
        )
        .map_err(|e| RingError(format!("memfd_create: {e}")))?;
        let bytes = link_memory_bytes(ring_bytes);
        rustix::fs::ftruncate(&file, bytes as u64)
            .map_err(|e| RingError(format!("sizing the link memory to {bytes} bytes: {e}")))?;
        // The size is fixed from here on: a peer cannot shrink the file
        // under our mapping (a read past its end would be SIGBUS).
        rustix::fs::fcntl_add_seals(
            &file,
            rustix::fs::SealFlags::SHRINK
                | rustix::fs::SealFlags::GROW
                | rustix::fs::SealFlags::SEAL,
        )
        .map_err(|e| RingError(format!("sealing the link memory: {e}")))?;
        let memory = LinkMemory::map(&file, ring_bytes)?;
        Ok((memory, file))
    }

    /// Maps the memory a peer created, after checking that the file is the
    /// size two rings of `ring_bytes` need and can no longer shrink.
    pub fn open(file: &OwnedFd, ring_bytes: usize) -> Result<LinkMemory, RingError> {
        if !valid_ring_bytes(ring_bytes) {
            return Err(RingError(format!(
                "the peer offered rings of {ring_bytes} bytes: a ring must be a power of two \
                 from {RING_BYTES_MIN} to {RING_BYTES_MAX}"
            )));
        }
        // The seal first: once the file cannot shrink, the size read next
        // stays (a peer that shrank it between the two looks would make a
        // read past its end a SIGBUS).
        let seals = rustix::fs::fcntl_get_seals(file)
            .map_err(|e| RingError(format!("the offer's seals: {e}")))?;
        if !seals.contains(rustix::fs::SealFlags::SHRINK) {
            return Err(RingError(
                "the peer's link memory can still shrink (it is not sealed)".to_string(),
            ));
        }
        let bytes = link_memory_bytes(ring_bytes);
        let stat =
            rustix::fs::fstat(file).map_err(|e| RingError(format!("fstat of the offer: {e}")))?;
        if stat.st_size as u64 != bytes as u64 {
            return Err(RingError(format!(
                "the peer's link memory is {} bytes, not the {bytes} its rings need",
                stat.st_size
            )));
        }
        LinkMemory::map(file, ring_bytes)
    }

    fn map(file: &impl AsFd, ring_bytes: usize) -> Result<LinkMemory, RingError> {
        let bytes = link_memory_bytes(ring_bytes);
        // SAFETY: a new shared mapping of the whole file, at an address the
        // kernel picks; nothing else refers to it until this returns.
        let base = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                file,
                0,
            )
        }
        .map_err(|e| RingError(format!("mapping {bytes} bytes of link memory: {e}")))?;
        Ok(LinkMemory {
            base: base.cast(),
            bytes,
            ring_bytes,
        })
    }

    pub fn ring_bytes(&self) -> usize {
        self.ring_bytes
    }

    fn ring_base(&self, ring: usize) -> *mut u8 {
        assert!(ring < 2, "a link has two rings");
        // SAFETY: within the mapping (`link_memory_bytes`).
        unsafe { self.base.add(ring * (HEADER_BYTES + self.ring_bytes)) }
    }
}

impl Drop for LinkMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, which no ring uses any more
        // (each holds an `Arc` of this).
        let result = unsafe { rustix::mm::munmap(self.base.cast(), self.bytes) };
        debug_assert!(result.is_ok(), "munmap of link memory: {result:?}");
    }
}

/// The ring a side writes: ring 0 for the side that created the memory.
pub fn outbound_ring(created: bool) -> usize {
    if created { 0 } else { 1 }
}

struct Ring {
    memory: std::sync::Arc<LinkMemory>,
    header: *mut u8,
    data: *mut u8,
    capacity: u64,
}

impl Ring {
    fn new(memory: std::sync::Arc<LinkMemory>, ring: usize) -> Ring {
        let header = memory.ring_base(ring);
        // SAFETY: the data follows the header within the ring's part.
        let data = unsafe { header.add(HEADER_BYTES) };
        let capacity = memory.ring_bytes as u64;
        Ring {
            memory,
            header,
            data,
            capacity,
        }
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: the header is aligned to 64 bytes (the mapping is to a
        // page, and each ring's part is a multiple of 64 bytes long) and
        // within the mapping, which lives as long as `self.memory`.
        unsafe { &*self.header.add(offset).cast::<AtomicU64>() }
    }

    fn flag(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: as `word`.
        unsafe { &*self.header.add(offset).cast::<AtomicU32>() }
    }

    /// Copies `bytes` in at position `at`, wrapping at the end.
    fn copy_in(&self, at: u64, bytes: &[u8]) {
        let start = (at % self.capacity) as usize;
        let first = bytes.len().min(self.capacity as usize - start);
        // SAFETY: both parts lie within the ring's data; the reader does
        // not read them until the tail moves past them.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.data.add(start), first);
            std::ptr::copy_nonoverlapping(bytes[first..].as_ptr(), self.data, bytes.len() - first);
        }
    }

    /// Copies out into `into` from position `at`, wrapping at the end.
    fn copy_out(&self, at: u64, into: &mut [u8]) {
        let start = (at % self.capacity) as usize;
        let first = into.len().min(self.capacity as usize - start);
        // SAFETY: both parts lie within the ring's data; the writer does
        // not write them again until the head moves past them. A peer that
        // does anyway only garbles bytes the frame checksums then refuse.
        unsafe {
            std::ptr::copy_nonoverlapping(self.data.add(start), into.as_mut_ptr(), first);
            let rest = into.len() - first;
            std::ptr::copy_nonoverlapping(self.data, into[first..].as_mut_ptr(), rest);
        }
    }
}

/// The writing end of one ring: this process's own position, and the
/// reader's as read from the shared header.
pub struct RingWriter {
    ring: Ring,
    tail: u64,
}

/// The reading end of one ring.
pub struct RingReader {
    ring: Ring,
    head: u64,
}

/// The reading side's sleep marks and a look at whether bytes wait, for
/// a thread other than the one reading the ring (it watches the link and
/// sleeps on its doorbell): every field it touches is an atomic of the
/// shared header.
pub struct RingWatch {
    ring: Ring,
}

// As the ends: a mapping kept alive by its `Arc`, and only atomics used.
unsafe impl Send for RingWatch {}
unsafe impl Sync for RingWatch {}

impl RingWatch {
    /// Whether the writer wrote bytes the reader has not taken.
    pub fn waiting(&self) -> bool {
        let tail = self.ring.word(TAIL_OFFSET).load(Ordering::Acquire);
        let head = self.ring.word(HEAD_OFFSET).load(Ordering::Acquire);
        tail != head
    }

    /// As `RingReader::prepare_to_sleep`: marks the reader asleep unless
    /// bytes wait (then returns false and takes the mark back).
    pub fn prepare_to_sleep(&self) -> bool {
        self.ring
            .flag(READER_SLEEPING_OFFSET)
            .store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.waiting() {
            self.woke();
            return false;
        }
        true
    }

    /// The reader is awake: the writer need not ring.
    pub fn woke(&self) {
        self.ring
            .flag(READER_SLEEPING_OFFSET)
            .store(0, Ordering::Relaxed);
    }
}

// An end points into a mapping its `Arc` keeps alive, and is used by one
// thread at a time (`&mut self` for everything that moves a position).
unsafe impl Send for RingWriter {}
unsafe impl Send for RingReader {}

/// The two ends this side of a link uses: it writes one ring and reads
/// the other.
pub fn link_ends(memory: LinkMemory, created: bool) -> (RingWriter, RingReader) {
    let memory = std::sync::Arc::new(memory);
    let outbound = outbound_ring(created);
    let writer = Ring::new(memory.clone(), outbound);
    let reader = Ring::new(memory, 1 - outbound);
    // A ring starts at position 0 on both sides (the memory is new, and
    // nothing is written before both have mapped it); what the header
    // says is not read, since the peer could have put anything there.
    (
        RingWriter {
            tail: 0,
            ring: writer,
        },
        RingReader {
            head: 0,
            ring: reader,
        },
    )
}

impl RingWriter {
    /// Copies as much of `bytes` as there is room for; returns how much.
    pub fn write(&mut self, bytes: &[u8]) -> Result<usize, RingError> {
        let head = self.ring.word(HEAD_OFFSET).load(Ordering::Acquire);
        let used = self
            .tail
            .checked_sub(head)
            .filter(|u| *u <= self.ring.capacity);
        let Some(used) = used else {
            return Err(RingError(format!(
                "the peer's read position {head} is not within a ring of the write position {}",
                self.tail
            )));
        };
        let room = (self.ring.capacity - used) as usize;
        let count = room.min(bytes.len());
        if count == 0 {
            return Ok(0);
        }
        self.ring.copy_in(self.tail, &bytes[..count]);
        self.tail += count as u64;
        self.ring
            .word(TAIL_OFFSET)
            .store(self.tail, Ordering::Release);
        Ok(count)
    }

    /// Whether the reader said it sleeps: then the bytes just written need
    /// the doorbell. Call after `write`.
    pub fn reader_sleeping(&self) -> bool {
        fence(Ordering::SeqCst);
        self.ring
            .flag(READER_SLEEPING_OFFSET)
            .load(Ordering::Relaxed)
            != 0
    }

    /// Says this side waits for room (the reader then rings), then looks
    /// once more: returns whether there is room now after all.
    pub fn wait_for_room(&mut self) -> bool {
        self.ring
            .flag(WRITER_WAITING_OFFSET)
            .store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let head = self.ring.word(HEAD_OFFSET).load(Ordering::Acquire);
        let room = self
            .tail
            .checked_sub(head)
            .is_some_and(|used| used < self.ring.capacity);
        if room {
            self.ring
                .flag(WRITER_WAITING_OFFSET)
                .store(0, Ordering::Relaxed);
        }
        room
    }

    /// Bytes written and not yet taken by the reader (as far as the header
    /// says).
    pub fn unread(&self) -> u64 {
        let head = self.ring.word(HEAD_OFFSET).load(Ordering::Acquire);
        self.tail.saturating_sub(head)
    }
}

impl RingReader {
    /// Bytes waiting to be read, or an error if the writer's position is
    /// out of range.
    pub fn available(&self) -> Result<usize, RingError> {
        let tail = self.ring.word(TAIL_OFFSET).load(Ordering::Acquire);
        match tail.checked_sub(self.head) {
            Some(waiting) if waiting <= self.ring.capacity => Ok(waiting as usize),
            _ => Err(RingError(format!(
                "the peer's write position {tail} is not within a ring of the read position {}",
                self.head
            ))),
        }
    }

    /// Copies out up to `into.len()` waiting bytes; returns how many.
    pub fn read(&mut self, into: &mut [u8]) -> Result<usize, RingError> {
        let count = self.available()?.min(into.len());
        if count == 0 {
            return Ok(0);
        }
        self.ring.copy_out(self.head, &mut into[..count]);
        self.head += count as u64;
        self.ring
            .word(HEAD_OFFSET)
            .store(self.head, Ordering::Release);
        Ok(count)
    }

    /// Whether the writer waits for room: then it needs the doorbell now
    /// that bytes were taken. Clears the mark. Call after `read`.
    pub fn take_writer_waiting(&self) -> bool {
        fence(Ordering::SeqCst);
        let flag = self.ring.flag(WRITER_WAITING_OFFSET);
        if flag.load(Ordering::Relaxed) == 0 {
            return false;
        }
        flag.store(0, Ordering::Relaxed);
        true
    }

    /// Says this side is about to sleep, then looks once more. Returns
    /// `Ok(true)` if it may sleep (the writer will ring for the next
    /// bytes), `Ok(false)` if bytes came meanwhile (the mark is taken
    /// back).
    pub fn prepare_to_sleep(&self) -> Result<bool, RingError> {
        self.ring
            .flag(READER_SLEEPING_OFFSET)
            .store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.available()? > 0 {
            self.woke();
            return Ok(false);
        }
        Ok(true)
    }

    /// Awake again: the writer need not ring.
    pub fn woke(&self) {
        self.ring
            .flag(READER_SLEEPING_OFFSET)
            .store(0, Ordering::Relaxed);
    }

    pub fn memory(&self) -> &LinkMemory {
        &self.ring.memory
    }

    /// A watch of this ring's marks for another thread.
    pub fn watch(&self) -> RingWatch {
        let memory = self.ring.memory.clone();
        let ring = if std::ptr::eq(self.ring.header, memory.ring_base(0)) {
            0
        } else {
            1
        };
        RingWatch {
            ring: Ring::new(memory, ring),
        }
    }
}

/// Sends `bytes` on a blocking Unix socket with `file` attached to the
/// first of them (`SCM_RIGHTS`); returns how many bytes went.
pub fn send_with_file(
    socket: std::os::fd::BorrowedFd<'_>,
    bytes: &[u8],
    file: std::os::fd::BorrowedFd<'_>,
) -> std::io::Result<usize> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    let files = [file];
    assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&files)));
    loop {
        match rustix::net::sendmsg(
            socket,
            &[std::io::IoSlice::new(bytes)],
            &mut control,
            rustix::net::SendFlags::NOSIGNAL,
        ) {
            Ok(sent) => return Ok(sent),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(ring_bytes: usize) -> ((RingWriter, RingReader), (RingWriter, RingReader)) {
        let (memory, file) = LinkMemory::create(ring_bytes).unwrap();
        let peer = LinkMemory::open(&file, ring_bytes).unwrap();
        (link_ends(memory, true), link_ends(peer, false))
    }

    #[test]
    fn bytes_cross_both_ways_and_wrap() {
        let ((mut a_out, mut a_in), (mut b_out, mut b_in)) = pair(RING_BYTES_MIN);
        let mut sent = 0u64;
        let mut received = 0u64;
        let mut buffer = vec![0u8; 10_000];
        // Several times round the ring, in uneven pieces.
        for round in 0..100 {
            let piece: Vec<u8> = (0..(1000 + round * 37))
                .map(|i| ((sent + i as u64) % 251) as u8)
                .collect();
            let mut written = 0;
            while written < piece.len() {
                written += a_out.write(&piece[written..]).unwrap();
                let n = b_in.read(&mut buffer).unwrap();
                for &byte in &buffer[..n] {
                    assert_eq!(byte as u64, received % 251, "byte {received}");
                    received += 1;
                }
            }
            sent += piece.len() as u64;
        }
        loop {
            let n = b_in.read(&mut buffer).unwrap();
            if n == 0 {
                break;
            }
            for &byte in &buffer[..n] {
                assert_eq!(byte as u64, received % 251);
                received += 1;
            }
        }
        assert_eq!(sent, received);
        assert!(sent > 2 * RING_BYTES_MIN as u64, "went round the ring");
        // The other direction is its own ring.
        assert_eq!(b_out.write(b"back").unwrap(), 4);
        assert_eq!(a_in.read(&mut buffer).unwrap(), 4);
        assert_eq!(&buffer[..4], b"back");
    }

    #[test]
    fn a_full_ring_takes_nothing_and_asks_to_be_told() {
        let ((mut out, _), (_, mut peer_in)) = pair(RING_BYTES_MIN);
        let big = vec![7u8; RING_BYTES_MIN + 10];
        assert_eq!(out.write(&big).unwrap(), RING_BYTES_MIN);
        assert_eq!(out.write(b"x").unwrap(), 0);
        assert!(!out.wait_for_room(), "no room yet");
        // The mark was set, so the reader that takes bytes rings (once).
        let mut buffer = vec![0u8; 100];
        assert_eq!(peer_in.read(&mut buffer).unwrap(), 100);
        assert!(peer_in.take_writer_waiting());
        assert!(!peer_in.take_writer_waiting(), "the mark is taken once");
        assert_eq!(out.write(&big).unwrap(), 100);
    }

    #[test]
    fn a_reader_that_sleeps_is_rung_and_one_that_is_awake_is_not() {
        let ((mut out, _), (_, mut peer_in)) = pair(RING_BYTES_MIN);
        out.write(b"a").unwrap();
        assert!(!out.reader_sleeping());
        // Bytes waiting: the reader may not sleep.
        assert!(!peer_in.prepare_to_sleep().unwrap());
        let mut buffer = [0u8; 8];
        assert_eq!(peer_in.read(&mut buffer).unwrap(), 1);
        assert!(peer_in.prepare_to_sleep().unwrap());
        out.write(b"b").unwrap();
        assert!(out.reader_sleeping(), "a sleeping reader must be rung");
        peer_in.woke();
        assert!(!out.reader_sleeping());
    }

    #[test]
    fn a_position_out_of_range_is_an_error_not_a_wild_read() {
        let ((mut out, _), (_, mut peer_in)) = pair(RING_BYTES_MIN);
        out.write(b"abc").unwrap();
        // The peer scribbles over the tail.
        peer_in
            .ring
            .word(TAIL_OFFSET)
            .store(u64::MAX / 2, Ordering::Release);
        let mut buffer = [0u8; 8];
        assert!(peer_in.read(&mut buffer).is_err());
        // And over the head.
        out.ring.word(HEAD_OFFSET).store(1 << 40, Ordering::Release);
        assert!(out.write(b"d").is_err());
    }

    #[test]
    fn an_offer_of_the_wrong_size_or_unsealed_is_refused() {
        let (_memory, file) = LinkMemory::create(RING_BYTES_MIN).unwrap();
        assert!(LinkMemory::open(&file, RING_BYTES_MIN * 2).is_err());
        assert!(LinkMemory::open(&file, 1000).is_err());
        let loose = rustix::fs::memfd_create("loose", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&loose, link_memory_bytes(RING_BYTES_MIN) as u64).unwrap();
        assert!(LinkMemory::open(&loose, RING_BYTES_MIN).is_err());
        assert!(LinkMemory::create(3 * RING_BYTES_MIN).is_err());
    }

    /// Two threads, as two processes would: every byte arrives once, in
    /// order, and a reader that sleeps on the doorbell protocol is always
    /// woken (a lost wake-up would hang this test).
    #[test]
    fn concurrent_writer_and_sleeping_reader_lose_nothing() {
        let ((mut out, _), (_, mut peer_in)) = pair(RING_BYTES_MIN);
        const TOTAL: u64 = 8 << 20;
        let (bell, rung) = std::sync::mpsc::channel::<()>();
        let (room_bell, room_rung) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let mut sent = 0u64;
            let mut piece = Vec::new();
            while sent < TOTAL {
                let length = (1 + (sent * 7919) % 5000).min(TOTAL - sent) as usize;
                piece.clear();
                piece.extend((0..length as u64).map(|i| ((sent + i) % 253) as u8));
                let mut written = 0;
                while written < piece.len() {
                    let n = out.write(&piece[written..]).unwrap();
                    written += n;
                    if n > 0 && out.reader_sleeping() {
                        bell.send(()).unwrap();
                    }
                    if n == 0 && !out.wait_for_room() {
                        room_rung
                            .recv_timeout(std::time::Duration::from_secs(10))
                            .expect("the reader never said there was room");
                    }
                }
                sent += length as u64;
            }
        });
        let mut received = 0u64;
        let mut buffer = vec![0u8; 3000];
        while received < TOTAL {
            let n = peer_in.read(&mut buffer).unwrap();
            for &byte in &buffer[..n] {
                assert_eq!(byte as u64, received % 253, "byte {received}");
                received += 1;
            }
            if n > 0 && peer_in.take_writer_waiting() {
                room_bell.send(()).unwrap();
            }
            if n == 0 && peer_in.prepare_to_sleep().unwrap() {
                rung.recv_timeout(std::time::Duration::from_secs(10))
                    .expect("the writer never rang");
                peer_in.woke();
            }
        }
        writer.join().unwrap();
        assert_eq!(received, TOTAL);
    }
}
