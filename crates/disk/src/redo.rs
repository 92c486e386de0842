//! The redo log of one data node (of one LDM, once there are several).
//!
//! ## The log
//! A log sequence number (`Lsn`) is a byte position in an endless log.
//! The log lives in `files` preallocated files of `file_bytes` each, used
//! round and round: byte `lsn` is at offset `lsn % file_bytes` of file
//! `(lsn / file_bytes) % files`. Bytes from `tail` (the oldest a restart
//! still needs: what the last local checkpoint does not cover) to `head`
//! (the end of what was appended) are kept; an append that would overwrite
//! the tail fails with NDB's 410 until a local checkpoint moves the tail
//! (`release`).
//!
//! Appended records wait in a buffer of at most `buffer_bytes`
//! (`RedoBuffer`) until they are written; an append that does not fit
//! fails with NDB's 1234 (the disk does not keep up). Both errors are
//! temporary: the transaction may be retried, the node stays up.
//!
//! ## Writes and syncs
//! The log never blocks: `poll` hands out `DiskRequest`s (writes of the
//! buffered bytes, in file-sized pieces, and syncs of the files written)
//! and `complete` takes their outcomes. One write (of every byte buffered
//! when it began) and one sync are in flight at a time. Bytes are written
//! once a chunk has gathered (`WRITE_CHUNK_BYTES`), or when a sync wants
//! them (`want_durable`). `durable()` is the end of what is synced: a
//! global checkpoint asks for the log's `head()` at its epoch boundary and
//! calls the epoch durable once `durable()` reaches it, one sync per
//! checkpoint, not one per commit. A failed request is retried after
//! `RETRY_MS`, its bytes still buffered; meanwhile appends fill the buffer
//! and then fail with 1234, and the failure is reported (`failure`).
//!
//! ## Record format (version 1), little-endian
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 4 | length of the record, header included |
//! | 4 | 4 | CRC-32C of bytes 0..4 then 8..length |
//! | 8 | 8 | the record's own `Lsn` |
//! | 16 | 8 | epoch (the global checkpoint's number, high 32 bits, and the micro-epoch, low 32) |
//! | 24 | 4 | generation: the log's run, raised at each start of the node |
//! | 28 | 1 | format version (1) |
//! | 29 | 1 | kind (the caller's) |
//! | 30 | 2 | zero |
//! | 32 | length − 32 | payload |
//!
//! A record may run across the end of one file into the next.
//!
//! ## Recovery
//! `scan` reads records from a start `Lsn` and stops at the first that is
//! not whole: a length out of range, a checksum that fails (a torn or
//! never-written record), an `Lsn` that is not its position (a record of
//! an earlier lap round the files), or a generation lower than the one
//! before it (a record an earlier run wrote past the end a later run
//! resumed from, never synced). So the log ends at its last good record,
//! and every record a sync covered is found, as long as each run of the
//! log has a generation no run before it had (the caller keeps the
//! generation on disk, synced before the first append).

/// A byte position in the endless log.
pub type Lsn = u64;

pub const RECORD_HEADER_BYTES: usize = 32;
/// The largest payload of one record: callers split larger changes.
pub const RECORD_PAYLOAD_BYTES_MAX: usize = 256 << 10;
/// Bytes of the files that only the marks of system restarts' restore
/// points take (`append_restore_mark`): a log that was full when the
/// cluster crashed still takes the restore's mark, which a later restart
/// needs to tell what this disk holds (a refused mark could let a node
/// group's older disks stand for it after the newer generation saved
/// commits they lack). About a hundred marks: that many restarts with no
/// local checkpoint between them.
pub const RESTORE_MARK_RESERVE_BYTES: u64 = 4 << 10;
/// The format version written in every record.
pub const FORMAT_VERSION: u8 = 1;
/// Buffered bytes that start a write without a sync asking for one.
pub const WRITE_CHUNK_BYTES: u64 = 256 << 10;
/// The largest single write request (a larger write is cut in pieces).
pub const WRITE_REQUEST_BYTES_MAX: u64 = 1 << 20;
/// How long after a failed write or sync it is tried again.
pub const RETRY_MS: u64 = 100;

/// NDB's "REDO log files overloaded (decrease TimeBetweenLocalCheckpoints
/// or increase NoOfFragmentLogFiles)".
pub const LOG_FULL_NDB_CODE: u16 = 410;
/// NDB's "REDO log files overloaded (increase disk hardware)".
pub const BUFFER_FULL_NDB_CODE: u16 = 1234;

/// The redo log's sizes, from the data node's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedoConfig {
    /// NoOfFragmentLogFiles.
    pub files: u32,
    /// FragmentLogFileSize.
    pub file_bytes: u64,
    /// RedoBuffer.
    pub buffer_bytes: u64,
}

impl RedoConfig {
    /// Bytes the log holds from tail to head.
    pub fn capacity_bytes(&self) -> u64 {
        u64::from(self.files) * self.file_bytes
    }

    /// Whether the sizes make a log: a record of the largest payload fits
    /// in the buffer and in the files.
    pub fn check(&self) -> Result<(), String> {
        let record_max = (RECORD_HEADER_BYTES + RECORD_PAYLOAD_BYTES_MAX) as u64;
        if self.files < 2 {
            return Err(format!(
                "NoOfFragmentLogFiles={} (the redo log needs at least 2 files)",
                self.files
            ));
        }
        if self.file_bytes < record_max {
            return Err(format!(
                "FragmentLogFileSize={} is less than one largest redo record ({record_max} bytes)",
                self.file_bytes
            ));
        }
        if self.buffer_bytes < record_max {
            return Err(format!(
                "RedoBuffer={} is less than one largest redo record ({record_max} bytes)",
                self.buffer_bytes
            ));
        }
        Ok(())
    }

    /// Where byte `lsn` is: file number and offset in it.
    pub fn place(&self, lsn: Lsn) -> (u32, u64) {
        let file = (lsn / self.file_bytes) % u64::from(self.files);
        (file as u32, lsn % self.file_bytes)
    }
}

/// A record as `scan` found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedoRecord {
    pub lsn: Lsn,
    pub epoch: u64,
    pub generation: u32,
    pub kind: u8,
    pub payload: Vec<u8>,
}

impl RedoRecord {
    /// The record's length on disk.
    pub fn bytes(&self) -> u64 {
        (RECORD_HEADER_BYTES + self.payload.len()) as u64
    }
}

/// A file operation the log wants done. The runtime does it off the event
/// loop and reports it with `RedoLog::complete` and the same token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskRequest {
    /// Write `bytes` at `offset` of redo file `file`.
    Write {
        file: u32,
        offset: u64,
        bytes: Vec<u8>,
        token: u64,
    },
    /// Make every byte written to redo file `file` so far durable
    /// (`fdatasync`).
    Sync { file: u32, token: u64 },
}

impl DiskRequest {
    pub fn token(&self) -> u64 {
        match self {
            DiskRequest::Write { token, .. } | DiskRequest::Sync { token, .. } => *token,
        }
    }
}

/// How a `DiskRequest` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskCompletion {
    Done { token: u64 },
    Failed { token: u64, error: String },
}

/// Why an append was refused. Every one is temporary: nothing was
/// appended, and the same append may succeed later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedoError {
    /// The files hold `needed` more bytes only once a local checkpoint
    /// releases the tail (NDB 410).
    LogFull { needed: u64, free: u64 },
    /// The buffer holds `buffered` bytes the disk has not taken yet (NDB
    /// 1234).
    BufferFull { buffered: u64, needed: u64 },
    /// A payload over `RECORD_PAYLOAD_BYTES_MAX`.
    RecordTooLarge { bytes: usize },
}

impl RedoError {
    pub fn ndb_code(&self) -> u16 {
        match self {
            RedoError::LogFull { .. } => LOG_FULL_NDB_CODE,
            RedoError::BufferFull { .. } | RedoError::RecordTooLarge { .. } => BUFFER_FULL_NDB_CODE,
        }
    }
}

impl std::fmt::Display for RedoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedoError::LogFull { needed, free } => write!(
                f,
                "REDO log files overloaded (decrease TimeBetweenLocalCheckpoints or increase \
                 NoOfFragmentLogFiles): {needed} bytes needed, {free} free until a local \
                 checkpoint completes"
            ),
            RedoError::BufferFull { buffered, needed } => write!(
                f,
                "REDO log files overloaded (increase disk hardware): RedoBuffer holds \
                 {buffered} bytes not yet written, {needed} more do not fit"
            ),
            RedoError::RecordTooLarge { bytes } => write!(
                f,
                "a redo record of {bytes} bytes is over the largest, \
                 {RECORD_PAYLOAD_BYTES_MAX}"
            ),
        }
    }
}

/// Requests of one write or one sync, in flight.
#[derive(Debug)]
struct InFlight {
    /// The log's bytes below this end are covered once all are done.
    end: Lsn,
    /// Tokens not yet completed.
    pending: Vec<u64>,
    failure: Option<String>,
    /// The files it writes or syncs.
    files: Vec<u32>,
}

/// The redo log's state: see the module's documentation.
#[derive(Debug)]
pub struct RedoLog {
    config: RedoConfig,
    generation: u32,
    tail: Lsn,
    head: Lsn,
    /// Every byte below is written (not necessarily synced).
    written: Lsn,
    /// Every byte below is synced.
    synced: Lsn,
    /// The bytes from `written` to `head`, contiguous: a record is encoded
    /// straight into it and a write copies its piece out with one memcpy
    /// (a ring of bytes took a copy through a scratch record and bytewise
    /// copies in and out).
    buffer: Vec<u8>,
    /// Bytes promised to prepared operations (`reserve`): counted as used
    /// in the files and in the buffer, so their commits always fit.
    reserved: u64,
    write: Option<InFlight>,
    sync: Option<InFlight>,
    /// The furthest a caller asked to have durable.
    durable_wanted: Lsn,
    /// Files written since their last sync.
    dirty: Vec<bool>,
    next_token: u64,
    /// A failed request is retried from this time on.
    retry_at_ms: u64,
    /// The time of the last `poll`.
    polled_at_ms: u64,
    failure: Option<String>,
}

impl RedoLog {
    /// A log that starts at `start` (0 for a new log, or the end `scan`
    /// found) with everything before it released. `generation` must be one
    /// no earlier run of this log used.
    pub fn new(config: RedoConfig, start: Lsn, generation: u32) -> RedoLog {
        Self::resume(config, start, start, generation)
    }

    /// A log whose records from `tail` to `end` are on disk (as `scan`
    /// found them), appending from `end`.
    pub fn resume(config: RedoConfig, tail: Lsn, end: Lsn, generation: u32) -> RedoLog {
        assert!(config.check().is_ok(), "{:?}", config.check());
        assert!(tail <= end);
        assert!(end - tail <= config.capacity_bytes());
        RedoLog {
            config,
            generation,
            tail,
            head: end,
            written: end,
            synced: end,
            buffer: Vec::new(),
            reserved: 0,
            write: None,
            sync: None,
            durable_wanted: end,
            dirty: vec![false; config.files as usize],
            next_token: 1,
            retry_at_ms: 0,
            polled_at_ms: 0,
            failure: None,
        }
    }

    pub fn config(&self) -> RedoConfig {
        self.config
    }
    pub fn generation(&self) -> u32 {
        self.generation
    }
    /// The oldest byte a restart still needs.
    pub fn tail(&self) -> Lsn {
        self.tail
    }
    /// The end of what was appended.
    pub fn head(&self) -> Lsn {
        self.head
    }
    /// The end of what is written (synced or not).
    pub fn written(&self) -> Lsn {
        self.written
    }
    /// The end of what is durable.
    pub fn durable(&self) -> Lsn {
        self.synced
    }
    /// Bytes appended and not yet written.
    pub fn buffered_bytes(&self) -> u64 {
        self.buffer.len() as u64
    }
    /// Bytes from tail to head, out of `capacity_bytes`.
    pub fn used_bytes(&self) -> u64 {
        self.head - self.tail
    }
    /// The last failed write or sync, while it is not yet redone.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
    /// When `poll` is due to hand out a failed write or sync again: a
    /// failure's retry time, until a poll at or after it.
    pub fn retry_at_ms(&self) -> Option<u64> {
        (self.failure.is_some() && self.polled_at_ms < self.retry_at_ms).then_some(self.retry_at_ms)
    }
    /// Whether a write or sync is out.
    pub fn busy(&self) -> bool {
        self.write.is_some() || self.sync.is_some()
    }

    /// Bytes promised to prepared operations and not yet appended.
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved
    }

    /// Whether `length` more bytes fit in the files and the buffer, beside
    /// what is reserved.
    fn room_for(&self, length: u64) -> Result<(), RedoError> {
        let free = self
            .room_for_restore_mark(length)?
            .saturating_sub(RESTORE_MARK_RESERVE_BYTES);
        if length > free {
            return Err(RedoError::LogFull {
                needed: length,
                free,
            });
        }
        Ok(())
    }

    /// `room_for` with `RESTORE_MARK_RESERVE_BYTES` too; returns the free
    /// bytes of the files, that reserve included.
    fn room_for_restore_mark(&self, length: u64) -> Result<u64, RedoError> {
        let free = self.config.capacity_bytes() - self.used_bytes() - self.reserved;
        if length > free {
            return Err(RedoError::LogFull {
                needed: length,
                free,
            });
        }
        if self.buffered_bytes() + self.reserved + length > self.config.buffer_bytes {
            return Err(RedoError::BufferFull {
                buffered: self.buffered_bytes() + self.reserved,
                needed: length,
            });
        }
        Ok(free)
    }

    /// Promises `bytes` to a prepared operation, whose commit then appends
    /// its records with `append_reserved` and cannot be refused: a write
    /// is refused (410, 1234) when it is prepared, never once it commits,
    /// as NDB refuses it. `unreserve` gives back what an abort does not
    /// use.
    pub fn reserve(&mut self, bytes: u64) -> Result<(), RedoError> {
        self.room_for(bytes)?;
        self.reserved += bytes;
        Ok(())
    }

    /// Gives back reserved bytes no record will use.
    pub fn unreserve(&mut self, bytes: u64) {
        assert!(
            bytes <= self.reserved,
            "unreserved {bytes} of {}",
            self.reserved
        );
        self.reserved -= bytes;
    }

    /// Appends one record from `reserved` bytes promised before (at most
    /// the record's length is used; the rest stays reserved for the
    /// caller to use or give back). Never refused.
    pub fn append_reserved(&mut self, epoch: u64, kind: u8, payload: &[u8], reserved: u64) -> Lsn {
        self.append_reserved_parts(epoch, kind, &[payload], reserved)
    }

    /// `append_reserved` of the payload `parts` make one after another
    /// (a header and what follows it, without a copy to join them).
    pub fn append_reserved_parts(
        &mut self,
        epoch: u64,
        kind: u8,
        parts: &[&[u8]],
        reserved: u64,
    ) -> Lsn {
        let payload_bytes: usize = parts.iter().map(|part| part.len()).sum();
        let length = (RECORD_HEADER_BYTES + payload_bytes) as u64;
        assert!(payload_bytes <= RECORD_PAYLOAD_BYTES_MAX);
        assert!(
            length <= reserved && reserved <= self.reserved,
            "a record of {length} bytes from {reserved} reserved (of {})",
            self.reserved
        );
        self.reserved -= length;
        self.push(epoch, kind, parts)
    }

    /// `append` of a system restart's mark of its restore point, which may
    /// take `RESTORE_MARK_RESERVE_BYTES`.
    pub fn append_restore_mark(
        &mut self,
        epoch: u64,
        kind: u8,
        payload: &[u8],
    ) -> Result<Lsn, RedoError> {
        assert!(payload.len() <= RECORD_PAYLOAD_BYTES_MAX);
        self.room_for_restore_mark((RECORD_HEADER_BYTES + payload.len()) as u64)?;
        Ok(self.push(epoch, kind, &[payload]))
    }

    /// Appends one record; returns its `Lsn`. Nothing is appended on an
    /// error.
    pub fn append(&mut self, epoch: u64, kind: u8, payload: &[u8]) -> Result<Lsn, RedoError> {
        if payload.len() > RECORD_PAYLOAD_BYTES_MAX {
            return Err(RedoError::RecordTooLarge {
                bytes: payload.len(),
            });
        }
        self.room_for((RECORD_HEADER_BYTES + payload.len()) as u64)?;
        Ok(self.push(epoch, kind, &[payload]))
    }

    fn push(&mut self, epoch: u64, kind: u8, parts: &[&[u8]]) -> Lsn {
        let lsn = self.head;
        let start = self.buffer.len();
        encode_record_parts_into(lsn, epoch, self.generation, kind, parts, &mut self.buffer);
        self.head += (self.buffer.len() - start) as u64;
        assert_eq!(self.head - self.written, self.buffered_bytes());
        assert!(self.used_bytes() + self.reserved <= self.config.capacity_bytes());
        lsn
    }

    /// Asks for everything up to `lsn` (at most `head()`) to be made
    /// durable; `durable()` tells when it is.
    pub fn want_durable(&mut self, lsn: Lsn) {
        assert!(
            lsn <= self.head,
            "durable through {lsn} past the head {}",
            self.head
        );
        self.durable_wanted = self.durable_wanted.max(lsn);
    }

    /// Records before `lsn` are no longer needed (a local checkpoint
    /// covers them): their space is reused.
    pub fn release(&mut self, lsn: Lsn) {
        assert!(
            lsn <= self.synced,
            "released {lsn} past the durable end {}",
            self.synced
        );
        self.tail = self.tail.max(lsn);
    }

    /// The requests due now, appended to `out`.
    pub fn poll(&mut self, now_ms: u64, out: &mut Vec<DiskRequest>) {
        self.polled_at_ms = self.polled_at_ms.max(now_ms);
        if now_ms < self.retry_at_ms {
            return;
        }
        let unwritten = self.head - self.written;
        if self.write.is_none()
            && unwritten > 0
            && (unwritten >= WRITE_CHUNK_BYTES || self.durable_wanted > self.written)
        {
            self.start_write(out);
        }
        if self.sync.is_none() && self.durable_wanted > self.synced && self.written > self.synced {
            self.start_sync(out);
        }
    }

    fn start_write(&mut self, out: &mut Vec<DiskRequest>) {
        let mut flight = InFlight {
            end: self.head,
            pending: Vec::new(),
            failure: None,
            files: Vec::new(),
        };
        let mut at = self.written;
        while at < self.head {
            let (file, offset) = self.config.place(at);
            let piece = (self.config.file_bytes - offset)
                .min(self.head - at)
                .min(WRITE_REQUEST_BYTES_MAX);
            let from = (at - self.written) as usize;
            let bytes = self.buffer[from..from + piece as usize].to_vec();
            let token = self.token();
            flight.pending.push(token);
            flight.files.push(file);
            out.push(DiskRequest::Write {
                file,
                offset,
                bytes,
                token,
            });
            at += piece;
        }
        self.write = Some(flight);
    }

    fn start_sync(&mut self, out: &mut Vec<DiskRequest>) {
        let mut flight = InFlight {
            end: self.written,
            pending: Vec::new(),
            failure: None,
            files: Vec::new(),
        };
        for file in 0..self.config.files {
            if std::mem::take(&mut self.dirty[file as usize]) {
                let token = self.token();
                flight.pending.push(token);
                flight.files.push(file);
                out.push(DiskRequest::Sync { file, token });
            }
        }
        // A write marks its files when it completes, and a sync takes the
        // marks only of writes complete before it: a written byte not yet
        // synced has a dirty file.
        assert!(
            !flight.pending.is_empty(),
            "written bytes but no file to sync"
        );
        self.sync = Some(flight);
    }

    fn token(&mut self) -> u64 {
        let token = self.next_token;
        self.next_token += 1;
        token
    }

    /// Takes the outcome of a request from `poll`. Returns false for a
    /// token the log did not hand out (or already took).
    pub fn complete(&mut self, now_ms: u64, completion: DiskCompletion) -> bool {
        let (token, failure) = match completion {
            DiskCompletion::Done { token } => (token, None),
            DiskCompletion::Failed { token, error } => (token, Some(error)),
        };
        for is_write in [true, false] {
            let slot = if is_write {
                &mut self.write
            } else {
                &mut self.sync
            };
            let Some(flight) = slot else { continue };
            let Some(index) = flight.pending.iter().position(|t| *t == token) else {
                continue;
            };
            flight.pending.swap_remove(index);
            if failure.is_some() && flight.failure.is_none() {
                flight.failure = failure;
            }
            if flight.pending.is_empty() {
                let flight = slot.take().expect("the flight just completed");
                if is_write {
                    self.finish_write(now_ms, flight);
                } else {
                    self.finish_sync(now_ms, flight);
                }
            }
            return true;
        }
        false
    }

    fn finish_write(&mut self, now_ms: u64, flight: InFlight) {
        if let Some(error) = flight.failure {
            // The bytes stay buffered and are written again, whole (the
            // pieces that did get written are written again with the same
            // bytes).
            self.failure = Some(error);
            self.retry_at_ms = now_ms + RETRY_MS;
            return;
        }
        assert!(flight.end > self.written && flight.end <= self.head);
        // Marked only now: a sync that began while this write was out may
        // not cover it.
        for file in flight.files {
            self.dirty[file as usize] = true;
        }
        self.buffer.drain(..(flight.end - self.written) as usize);
        self.written = flight.end;
        if self.sync.is_none() {
            self.failure = None;
        }
        assert_eq!(self.head - self.written, self.buffered_bytes());
    }

    fn finish_sync(&mut self, now_ms: u64, flight: InFlight) {
        if let Some(error) = flight.failure {
            for file in flight.files {
                self.dirty[file as usize] = true;
            }
            self.failure = Some(error);
            self.retry_at_ms = now_ms + RETRY_MS;
            return;
        }
        assert!(flight.end > self.synced && flight.end <= self.written);
        self.synced = flight.end;
        if self.write.is_none() {
            self.failure = None;
        }
    }
}

/// Appends one record in the log's format to `out`: local checkpoint
/// files use it too, with `lsn` the record's offset in the file, so
/// `scan` reads them back.
pub fn encode_record_into(
    lsn: Lsn,
    epoch: u64,
    generation: u32,
    kind: u8,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    encode_record_parts_into(lsn, epoch, generation, kind, &[payload], out);
}

/// `encode_record_into` of the payload `parts` make one after another.
pub fn encode_record_parts_into(
    lsn: Lsn,
    epoch: u64,
    generation: u32,
    kind: u8,
    parts: &[&[u8]],
    out: &mut Vec<u8>,
) {
    let payload_bytes: usize = parts.iter().map(|part| part.len()).sum();
    assert!(payload_bytes <= RECORD_PAYLOAD_BYTES_MAX);
    let start = out.len();
    out.reserve(RECORD_HEADER_BYTES + payload_bytes);
    let length = u32::try_from(RECORD_HEADER_BYTES + payload_bytes).expect("a bounded record");
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.push(FORMAT_VERSION);
    out.push(kind);
    out.extend_from_slice(&[0; 2]);
    debug_assert_eq!(out.len() - start, RECORD_HEADER_BYTES);
    for part in parts {
        out.extend_from_slice(part);
    }
    let checksum = record_checksum(&out[start..]);
    out[start + 4..start + 8].copy_from_slice(&checksum.to_le_bytes());
}

/// CRC-32C, as the log's records use it.
pub fn checksum(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

fn record_checksum(record: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&record[0..4]), &record[8..])
}

/// Reads bytes of the redo files (the runtime's files at a restart, the
/// simulator's disk model).
pub trait ReadAt {
    /// Fills `into` from offset `offset` of redo file `file`; bytes never
    /// written read as zero. An error says which file failed and why.
    fn read_at(&mut self, file: u32, offset: u64, into: &mut [u8]) -> Result<(), String>;
}

/// Reads `length` bytes of the log from `lsn`, across file ends.
fn read_log(
    config: &RedoConfig,
    reader: &mut dyn ReadAt,
    lsn: Lsn,
    into: &mut [u8],
) -> Result<(), String> {
    let mut done = 0;
    while done < into.len() {
        let (file, offset) = config.place(lsn + done as u64);
        let piece = ((config.file_bytes - offset) as usize).min(into.len() - done);
        reader.read_at(file, offset, &mut into[done..done + piece])?;
        done += piece;
    }
    Ok(())
}

/// Reads the records from `start` to the log's end (see the module's
/// documentation), giving each to `visit`; returns the end: the `Lsn`
/// after the last good record.
pub fn scan(
    config: &RedoConfig,
    start: Lsn,
    reader: &mut dyn ReadAt,
    mut visit: impl FnMut(RedoRecord),
) -> Result<Lsn, String> {
    let mut scan = Scan::new(start);
    scan.step(config, reader, u64::MAX, &mut |record| {
        visit(record);
        Ok(())
    })?;
    Ok(scan.at())
}

/// A scan of the records from a start to the log's end (`scan`) that goes
/// a step at a time: a restore reads a bounded number of bytes between the
/// node's other work, so its heartbeats go on.
#[derive(Debug, Clone)]
pub struct Scan {
    start: Lsn,
    at: Lsn,
    /// The scan ends here at the latest.
    end: Lsn,
    /// The highest generation read so far: a record of a lower one is an
    /// earlier run's, past the end.
    generation: u32,
    ended: bool,
}

impl Scan {
    pub fn new(start: Lsn) -> Scan {
        Scan::until(start, Lsn::MAX)
    }

    /// A scan that ends at `end` at the latest: a restore of a node whose
    /// log goes on taking records reads only what was there at its start.
    pub fn until(start: Lsn, end: Lsn) -> Scan {
        Scan {
            start,
            at: start,
            end,
            generation: 0,
            ended: false,
        }
    }

    /// Where the next record is read (after the end: the end).
    pub fn at(&self) -> Lsn {
        self.at
    }

    /// Whether the end was reached.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Reads records until about `bytes_max` bytes were read (at least
    /// one record) or the end, giving each to `visit` and stopping at the
    /// first error it returns; returns whether the end was reached.
    pub fn step(
        &mut self,
        config: &RedoConfig,
        reader: &mut dyn ReadAt,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String> {
        let step_start = self.at;
        let mut record = Vec::new();
        while !self.ended && self.at - step_start < bytes_max {
            match self.read_one(config, reader, &mut record)? {
                Some(next) => {
                    self.at += next.payload.len() as u64 + RECORD_HEADER_BYTES as u64;
                    visit(next)?;
                }
                None => self.ended = true,
            }
        }
        Ok(self.ended)
    }

    /// The record at `self.at`, or `None` at the end.
    fn read_one(
        &mut self,
        config: &RedoConfig,
        reader: &mut dyn ReadAt,
        record: &mut Vec<u8>,
    ) -> Result<Option<RedoRecord>, String> {
        let (start, at) = (self.start, self.at);
        let mut header = [0u8; RECORD_HEADER_BYTES];
        if at >= self.end || at - start + RECORD_HEADER_BYTES as u64 > config.capacity_bytes() {
            return Ok(None);
        }
        read_log(config, reader, at, &mut header)?;
        let length = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
        if !(RECORD_HEADER_BYTES..=RECORD_HEADER_BYTES + RECORD_PAYLOAD_BYTES_MAX).contains(&length)
            || at - start + length as u64 > config.capacity_bytes()
        {
            return Ok(None);
        }
        let lsn = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
        let record_generation = u32::from_le_bytes(header[24..28].try_into().expect("4 bytes"));
        if lsn != at || header[28] != FORMAT_VERSION || record_generation < self.generation {
            return Ok(None);
        }
        record.clear();
        record.resize(length, 0);
        read_log(config, reader, at, record)?;
        let stored = u32::from_le_bytes(record[4..8].try_into().expect("4 bytes"));
        if record_checksum(record) != stored {
            return Ok(None);
        }
        self.generation = record_generation;
        Ok(Some(RedoRecord {
            lsn,
            epoch: u64::from_le_bytes(record[16..24].try_into().expect("8 bytes")),
            generation: record_generation,
            kind: record[29],
            payload: record[RECORD_HEADER_BYTES..].to_vec(),
        }))
    }
}

#[cfg(test)]
mod tests;
