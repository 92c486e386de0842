//! A cluster connection (NDB's `Ndb_cluster_connection`): one API node id
//! from the management node, one TCP connection to every data node, a
//! receiving thread per data-node connection that hands each answer to the
//! session waiting for it, and the dictionary as routing.
//!
//! Sessions write their requests straight to the data node's socket (one
//! frame per execute, under that connection's lock); answers come back
//! through the session's mailbox. A transaction id carries its session in
//! its top bits, so the receiving thread finds the mailbox without a map.
//!
//! A **driven** connection (`Cluster::connect_driven`) has no receiving
//! threads: the threads that run its sessions read the sockets themselves
//! (`LinkReceiver::pump`, when their `epoll` says a socket is readable),
//! so an answer reaches a session without waking a thread in between (the
//! SQL node's workers, `crates/sqld/src/worker.rs`). Whoever pumps holds
//! the link's receiver; one that finds it held leaves a mark, and the
//! holder reads again before it lets go, so no input waits for the next.
//! A thread that blocks for an answer (not a task) reads the sockets
//! itself every `BLOCKED_PUMP_INTERVAL`, and a keeper thread per link,
//! which wakes only at the heartbeat interval, sends the heartbeats and
//! acknowledgements due and ends a silent link.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::net::Shutdown;
#[cfg(test)]
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use protocol::identity::ClusterSecret;
use protocol::{ClusterState, FrameDecoder, Message, NodeId, NodeRole, SchemaChange, encode_frame};
use runtime::blocking::{BlockingConnection, BlockingStream};
use runtime::shared_memory::{self, RingReader, RingWatch, RingWriter};
use schema::TableDef;
use schema::distribution::TableOptions;
use transaction::{Routing, TableRoute};

use crate::error::ClientError;
use crate::session::Session;

/// How long one request waits for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long opening a connection to a data node (TCP and its Hello) may
/// take: a data node on a host that does not answer must not hold up a
/// client for a whole request timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a data node that could not be reached is left alone before the
/// next attempt, so a node that is down costs nothing per request.
const RECONNECT_INTERVAL: Duration = Duration::from_millis(500);
/// How long a schema change follows redirects and retries temporary errors
/// before it gives up: long enough for the data nodes to detect a failed
/// president and agree on the next (retries are safe: see `schema_change`).
const SCHEMA_CHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// The first pause between two attempts of a schema change; it doubles up
/// to `SCHEMA_RETRY_PAUSE_MAX`.
const SCHEMA_RETRY_PAUSE: Duration = Duration::from_millis(50);
const SCHEMA_RETRY_PAUSE_MAX: Duration = Duration::from_secs(1);
/// Sessions one cluster connection serves at once.
pub const SESSIONS_MAX: usize = 4_096;
/// A transaction id is `session << SESSION_SHIFT | sequence`: the session's
/// mailbox in the top bits (so the receiving thread finds it without a
/// map), and below it a sequence counted per connection, not per session,
/// so a session that takes a freed mailbox never repeats an id. 2^52 ids
/// last 142 years at a million transactions a second.
pub(crate) const SESSION_SHIFT: u32 = 52;
const _: () = assert!(SESSIONS_MAX as u64 <= 1 << (64 - SESSION_SHIFT));
/// The mailbox of the connection's own requests (dictionary, schema).
const ADMIN_MAILBOX: usize = 0;

/// What a session's mailbox receives.
#[derive(Debug, Clone)]
pub(crate) enum Delivery {
    Message(Message),
    /// The connection to this data node failed.
    NodeDown(NodeId),
    /// Another thread interrupted the session (see `Interrupter`).
    Interrupted,
    /// The takeover of what data node `node` coordinated, at
    /// `incarnation` and before, is finished (`Message::TakeoverDone`).
    TakeoverDone {
        node: NodeId,
        incarnation: u64,
    },
}

#[derive(Default)]
pub(crate) struct Mailbox {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// The connection, when it is driven: a thread that blocks for a
    /// delivery reads its sockets meanwhile (see the module's notes).
    driven: Option<std::sync::Weak<Inner>>,
}

/// How often a thread blocked for an answer on a driven connection reads
/// its sockets: such waits are rare (dictionary requests, threads that are
/// not tasks), and this bounds what they add to one.
const BLOCKED_PUMP_INTERVAL: Duration = Duration::from_millis(1);

#[derive(Default)]
struct Queue {
    deliveries: VecDeque<Delivery>,
    /// The session waits on `Mailbox::ready`: a delivery wakes it (a wake
    /// is a system call, saved when nobody waits).
    waiting: bool,
    /// The session waits as a suspended task (`crate::task`): a delivery
    /// wakes it through this.
    task: Option<std::task::Waker>,
}

impl Mailbox {
    fn new(driven: Option<std::sync::Weak<Inner>>) -> Mailbox {
        Mailbox {
            driven,
            ..Mailbox::default()
        }
    }

    pub(crate) fn push(&self, delivery: Delivery) {
        let (waiting, task) = {
            let mut queue = self.queue.lock().expect("mailbox");
            queue.deliveries.push_back(delivery);
            (queue.waiting, queue.task.take())
        };
        if waiting {
            self.ready.notify_one();
        }
        if let Some(task) = task {
            task.wake();
        }
    }

    /// Takes everything delivered, waiting until `deadline` for the first.
    pub(crate) fn take(&self, deadline: Instant, into: &mut VecDeque<Delivery>) -> bool {
        self.take_waiting(deadline, into, true)
    }

    /// `take`, blocking the thread even when it runs a task: for a wait
    /// made while holding a lock other tasks of the thread may need.
    pub(crate) fn take_on_thread(&self, deadline: Instant, into: &mut VecDeque<Delivery>) -> bool {
        self.take_waiting(deadline, into, false)
    }

    fn take_waiting(
        &self,
        deadline: Instant,
        into: &mut VecDeque<Delivery>,
        suspend: bool,
    ) -> bool {
        let mut queue = self.queue.lock().expect("mailbox");
        loop {
            if !queue.deliveries.is_empty() {
                queue.waiting = false;
                queue.task = None;
                into.append(&mut queue.deliveries);
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                queue.waiting = false;
                queue.task = None;
                return false;
            }
            match crate::task::current_waker().filter(|_| suspend) {
                Some(waker) => {
                    // A task suspends instead of blocking its thread; the
                    // lock is not held meanwhile, as the delivery needs it.
                    queue.task = Some(waker);
                    drop(queue);
                    crate::task::suspend(deadline);
                    queue = self.queue.lock().expect("mailbox");
                }
                None => match &self.driven {
                    Some(inner) => {
                        // Nobody else may be reading the sockets now (the
                        // thread that watches them may be this one).
                        drop(queue);
                        if let Some(inner) = inner.upgrade() {
                            pump_links(&inner);
                        }
                        queue = self.queue.lock().expect("mailbox");
                        if queue.deliveries.is_empty() {
                            queue.waiting = true;
                            queue = self
                                .ready
                                .wait_timeout(queue, left.min(BLOCKED_PUMP_INTERVAL))
                                .expect("mailbox")
                                .0;
                        }
                    }
                    None => {
                        queue.waiting = true;
                        queue = self.ready.wait_timeout(queue, left).expect("mailbox").0;
                    }
                },
            }
        }
    }
}

/// Counters of a cluster connection, summed over its sessions (NDB's
/// `Ndb_api_*_count` status variables).
#[derive(Debug, Default)]
pub(crate) struct SharedCounters {
    pub(crate) values: [AtomicU64; crate::session::COUNTERS],
}

pub(crate) struct Link {
    pub(crate) node: NodeId,
    /// The data node's incarnation, from its handshake: a takeover of it
    /// names it (`Delivery::TakeoverDone`).
    pub(crate) incarnation: u64,
    /// The socket (the data node's local socket when it runs on this host,
    /// else TCP); written through `&BlockingStream` by one sender at a time
    /// (see `Outgoing`).
    stream: BlockingStream,
    /// Frames queued for the socket, and whether a sender is writing them.
    outgoing: Mutex<Outgoing>,
    /// A sender waits here for room in a full queue.
    room: Condvar,
    pub(crate) alive: AtomicBool,
    /// The connection's refusals (see `Shared::refusals`), so a send on a
    /// link its data node refused says why.
    refusals: Refusals,
    /// How it is read when the connection is driven (else a receiving
    /// thread owns the reading side).
    driven: Option<DrivenReceiver>,
    /// The outbound ring when the link runs over shared memory with a data
    /// node on this host (`runtime::shared_memory`): frames go there, and
    /// the socket carries doorbells. Written by one sender at a time (the
    /// one `Outgoing::writing` names), so the lock is never contended.
    ring: Option<Mutex<RingWriter>>,
    /// The inbound ring's sleep marks, for the thread that watches the
    /// link (`LinkReceiver::prepare_to_sleep`).
    ring_watch: Option<RingWatch>,
}

/// The reading side of a driven connection's link.
struct DrivenReceiver {
    receiver: Mutex<Receiver>,
    /// Set by a pump that found `receiver` held: its holder reads again.
    more: AtomicBool,
    fd: std::os::fd::RawFd,
}

/// What reads one link's socket of a driven connection; whoever pumps
/// holds it.
struct Receiver {
    reader: BlockingStream,
    /// The inbound ring of a link over shared memory: frames come from it,
    /// the socket brings doorbells.
    ring: Option<RingReader>,
    decoder: FrameDecoder,
    acks: PendingAcks,
    /// When the data node was last heard.
    heard: Instant,
    messages: Vec<Message>,
    ack_frame: Vec<u8>,
    /// The socket closed or failed and the sessions were told: nothing
    /// more is read.
    ended: bool,
}

impl Receiver {
    /// Reads everything that has arrived and hands it out (`dispatch`).
    fn read_arrived(&mut self, shared: &Shared, link: &Link) {
        if self.ring.is_some() {
            self.read_ring(shared, link);
            return;
        }
        while !self.ended {
            match self.reader.read_now(self.decoder.spare(RECEIVE_BYTES_MIN)) {
                Ok(0) => self.end(shared, link),
                Ok(read) => {
                    self.heard = Instant::now();
                    self.decoder.filled(read);
                    shared.counters.values[crate::session::BYTES_RECEIVED]
                        .fetch_add(read as u64, Ordering::Relaxed);
                    let frames = dispatch_frames(
                        &mut self.decoder,
                        &mut self.messages,
                        shared,
                        link,
                        &mut self.acks,
                    );
                    if frames.is_err() {
                        self.end(shared, link);
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => self.end(shared, link),
            }
        }
        if !self.ended {
            send_acks(link, &mut self.acks, false, &mut self.ack_frame);
        }
    }

    /// A link over shared memory: the socket's doorbells are read (its
    /// close ends the link), then the ring.
    fn read_ring(&mut self, shared: &Shared, link: &Link) {
        let mut doorbells = [0u8; 64];
        // A closed socket ends the link after the ring is read: what the
        // data node wrote before it went is there.
        let mut closed = false;
        loop {
            // On to WouldBlock or the close: a close that came with the
            // last doorbell raises no edge of its own.
            match self.reader.read_now(&mut doorbells) {
                Ok(0) => closed = true,
                Ok(_) => continue,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => closed = true,
            }
            break;
        }
        let mut took = false;
        while !self.ended {
            let ring = self.ring.as_mut().expect("a ring");
            let read = match ring.read(self.decoder.spare(RECEIVE_BYTES_MIN)) {
                Ok(0) => break,
                Ok(read) => read,
                Err(_) => {
                    // The data node's position is out of range: the link
                    // cannot be trusted any more.
                    self.end(shared, link);
                    break;
                }
            };
            took = true;
            self.heard = Instant::now();
            self.decoder.filled(read);
            shared.counters.values[crate::session::BYTES_RECEIVED]
                .fetch_add(read as u64, Ordering::Relaxed);
            let frames = dispatch_frames(
                &mut self.decoder,
                &mut self.messages,
                shared,
                link,
                &mut self.acks,
            );
            if frames.is_err() {
                self.end(shared, link);
            }
        }
        if closed && !self.ended {
            self.end(shared, link);
        }
        if self.ended {
            return;
        }
        if took && self.ring.as_ref().expect("a ring").take_writer_waiting() {
            link.ring_doorbell();
        }
        send_acks(link, &mut self.acks, false, &mut self.ack_frame);
    }

    /// The link is over: every session hears that its node is down, once.
    fn end(&mut self, shared: &Shared, link: &Link) {
        assert!(!self.ended, "a link ended twice");
        self.ended = true;
        link.alive.store(false, Ordering::Release);
        let _ = self.reader.shutdown(Shutdown::Both);
        shared.node_down(link.node);
    }
}

/// Reads what has arrived on a driven `link`. Returns at once when
/// another thread is reading it: that thread reads this input too (see
/// the module's notes). Whoever takes the receiver other than through
/// here must pump after letting it go.
fn pump(shared: &Shared, link: &Link) {
    let Some(driven) = &link.driven else {
        return;
    };
    driven.more.store(true, Ordering::SeqCst);
    loop {
        let mut receiver = match driven.receiver.try_lock() {
            Ok(receiver) => receiver,
            Err(std::sync::TryLockError::WouldBlock) => return,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        };
        // Cleared while held: input that came before a mark set from here
        // on is read below, and a mark set later is seen after the unlock.
        driven.more.store(false, Ordering::SeqCst);
        receiver.read_arrived(shared, link);
        drop(receiver);
        if !driven.more.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// Reads what has arrived on every link of a driven connection.
fn pump_links(inner: &Inner) {
    for (_, slot) in &inner.links {
        let link = slot.lock().expect("link").clone();
        if let Some(link) = link {
            pump(&inner.shared, &link);
        }
    }
}

/// A data node's socket of a driven connection, for a thread that watches
/// it (`epoll`, edge-triggered) and reads it when it becomes readable.
#[derive(Clone)]
pub struct LinkReceiver {
    link: Arc<Link>,
    shared: Arc<Shared>,
}

impl LinkReceiver {
    /// The socket to watch for input. It stays open while this value
    /// lives.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.link.driven.as_ref().expect("a driven link").fd
    }

    pub fn node(&self) -> NodeId {
        self.link.node
    }

    /// Reads what has arrived and hands it to the sessions waiting for it.
    pub fn pump(&self) {
        pump(&self.shared, &self.link);
    }

    /// Whether this is the same link as `other`.
    pub fn same_link(&self, other: &LinkReceiver) -> bool {
        Arc::ptr_eq(&self.link, &other.link)
    }

    /// Whether the link runs over shared memory: its bytes raise no event
    /// on `fd` while the thread watching it says it is awake
    /// (`set_awake`), so that thread looks at `ring_waiting` instead.
    pub fn shared(&self) -> bool {
        self.link.ring.is_some()
    }

    /// Whether bytes wait in the inbound ring (always false for a link
    /// over its socket).
    pub fn ring_waiting(&self) -> bool {
        // A link that ended reads nothing more: bytes left in its ring must
        // not keep the worker polling.
        self.link.alive.load(Ordering::Acquire)
            && self
                .link
                .ring_watch
                .as_ref()
                .is_some_and(RingWatch::waiting)
    }

    /// The watching thread polls the ring from now on: the data node need
    /// not ring for its bytes.
    pub fn set_awake(&self) {
        if let Some(watch) = &self.link.ring_watch {
            watch.woke();
        }
    }

    /// The watching thread is about to sleep: the data node rings for its
    /// next bytes. Returns false if bytes came meanwhile (pump first).
    pub fn prepare_to_sleep(&self) -> bool {
        !self.link.alive.load(Ordering::Acquire)
            || self
                .link
                .ring_watch
                .as_ref()
                .is_none_or(RingWatch::prepare_to_sleep)
    }
}

/// A link's send queue. A sender that finds another one writing appends
/// its frames and goes on: the writer sends them with its own in one write
/// (under load, several sessions' requests in one system call), so no
/// sender ever waits for another's write, and a worker thread is never
/// blocked behind a write of another thread.
#[derive(Default)]
struct Outgoing {
    /// Frames appended while a sender writes.
    queued: Vec<u8>,
    /// A sender is writing (what it took from `queued`).
    writing: bool,
    /// The writer's spare buffer: `queued` and it swap, so a write
    /// allocates nothing.
    spare: Vec<u8>,
    /// Senders waiting on `Link::room`.
    waiting: usize,
}

/// How long a sender that found the ring full waits before it looks
/// again.
const RING_FULL_RETRY: Duration = Duration::from_micros(50);

/// The most bytes a link queues behind the write in flight before a
/// sender waits for room (a frame larger than this is queued alone): a
/// link holds at most about twice this, or one larger frame.
const LINK_QUEUE_BYTES_MAX: usize = 4 << 20;

/// The last refusal of each data node (see `Shared::refusals`).
type Refusals = Arc<Mutex<BTreeMap<NodeId, protocol::ErrorReply>>>;

/// The longest one blocking write to a data node lasts before the sender
/// looks at its deadline again (the socket's send timeout).
const WRITE_SLICE: Duration = Duration::from_millis(50);

impl Link {
    /// Shuts the socket down both ways: the receiving thread's read ends,
    /// and it tells every session that the node is down.
    pub(crate) fn close(&self) {
        // An error means the socket is closed already.
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// A link over `stream` to data node `node`. `None` if the socket
    /// refuses its send timeout.
    fn new(
        node: NodeId,
        incarnation: u64,
        stream: BlockingStream,
        refusals: Refusals,
    ) -> Option<Link> {
        stream.set_write_timeout(Some(WRITE_SLICE)).ok()?;
        Some(Link {
            node,
            incarnation,
            stream,
            outgoing: Mutex::new(Outgoing::default()),
            room: Condvar::new(),
            alive: AtomicBool::new(true),
            refusals,
            driven: None,
            ring: None,
            ring_watch: None,
        })
    }

    /// Wakes the data node's thread that reads this link's ring: one byte
    /// on the socket. A full socket holds doorbells unread already, and a
    /// failed one is noticed by its reader.
    fn ring_doorbell(&self) {
        let _ = self.stream.send_now(&[shared_memory::DOORBELL]);
    }

    /// Copies `bytes` into the ring by `deadline`, ringing the data node if
    /// it sleeps. A full ring asks the data node to ring back and is looked
    /// at again until then (rare: a ring holds ShmSize bytes).
    fn write_ring(
        &self,
        ring: &Mutex<RingWriter>,
        bytes: &[u8],
        deadline: Instant,
        alone: bool,
    ) -> Result<(), ClientError> {
        let mut ring = ring.lock().expect("link ring");
        let mut written = 0;
        while written < bytes.len() {
            if !self.alive.load(Ordering::Acquire) {
                return Err(down_error(&self.refusals, self.node));
            }
            let count = match ring.write(&bytes[written..]) {
                Ok(count) => count,
                Err(error) => {
                    self.alive.store(false, Ordering::Release);
                    let _ = self.stream.shutdown(Shutdown::Both);
                    return Err(ClientError::new(
                        crate::error::NODE_FAILURE,
                        format!(
                            "shared memory with data node {}: {error}; the connection was \
                             closed",
                            self.node
                        ),
                    ));
                }
            };
            written += count;
            // After every write that moved bytes: the reader may have woken
            // for an earlier doorbell, drained, and slept again meanwhile.
            if count > 0 && ring.reader_sleeping() {
                self.ring_doorbell();
            }
            if written < bytes.len() && !ring.wait_for_room() {
                if Instant::now() >= deadline {
                    if written == 0 && alone {
                        return Err(ClientError::new(
                            crate::error::REQUEST_TIMEOUT_CODE,
                            format!(
                                "data node {} took none of the request by the call's deadline \
                                 (its shared memory is full); nothing was sent",
                                self.node
                            ),
                        ));
                    }
                    self.alive.store(false, Ordering::Release);
                    let _ = self.stream.shutdown(Shutdown::Both);
                    return Err(ClientError::new(
                        crate::error::NODE_FAILURE,
                        format!(
                            "the call's deadline passed with {written} of {} bytes sent to data \
                             node {}; the connection was closed",
                            bytes.len(),
                            self.node
                        ),
                    ));
                }
                std::thread::sleep(RING_FULL_RETRY);
            }
        }
        Ok(())
    }

    /// Sends `bytes` (whole frames) by `deadline`: writes them, with what
    /// other senders queued meanwhile, or queues them behind the sender
    /// writing now, who writes them before it returns. Either way they
    /// reach the socket in order, or the link closes and every session on
    /// it hears `NodeDown`. A frame sent in part cannot be taken back, so
    /// a write that runs out of time midway, or that carries another
    /// sender's frames, closes the link on failure (the data node then
    /// rolls back this API node's open transactions); a write of this
    /// sender's frames alone that sent nothing leaves the link as it was.
    pub(crate) fn send(&self, bytes: &[u8], deadline: Instant) -> Result<(), ClientError> {
        let mut outgoing = self.outgoing.lock().expect("link outgoing");
        loop {
            if !self.alive.load(Ordering::Acquire) {
                return Err(down_error(&self.refusals, self.node));
            }
            if outgoing.queued.is_empty()
                || outgoing.queued.len() + bytes.len() <= LINK_QUEUE_BYTES_MAX
            {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::new(
                    crate::error::REQUEST_TIMEOUT_CODE,
                    format!(
                        "data node {} did not take the requests queued before this call's by \
                         its deadline (its connection is full); nothing was sent",
                        self.node
                    ),
                ));
            }
            // Rare (the data node reads slower than this node sends), so
            // the wait blocks the thread even in a task.
            outgoing.waiting += 1;
            outgoing = self
                .room
                .wait_timeout(outgoing, left)
                .expect("link outgoing")
                .0;
            outgoing.waiting -= 1;
        }
        outgoing.queued.extend_from_slice(bytes);
        if outgoing.writing {
            return Ok(());
        }
        outgoing.writing = true;
        let mut alone = true;
        let result = loop {
            let mut batch = std::mem::take(&mut outgoing.spare);
            std::mem::swap(&mut batch, &mut outgoing.queued);
            alone &= batch.len() == bytes.len();
            drop(outgoing);
            let written = self.write_by(&batch, deadline, alone);
            batch.clear();
            outgoing = self.outgoing.lock().expect("link outgoing");
            outgoing.spare = batch;
            if written.is_err() {
                if !self.alive.load(Ordering::Acquire) {
                    // Frames queued behind the failed write go nowhere:
                    // their sessions hear NodeDown from the receiving
                    // thread.
                    outgoing.queued.clear();
                }
                break written;
            }
            if outgoing.queued.is_empty() {
                break Ok(());
            }
            alone = false;
        };
        outgoing.writing = false;
        let waiting = outgoing.waiting;
        drop(outgoing);
        // A wake is a system call: only when a sender waits for room.
        if waiting > 0 {
            self.room.notify_all();
        }
        result
    }

    /// Writes `bytes` by `deadline`. `alone`: they are the caller's own
    /// frames only, so if none was written the link may stay open.
    fn write_by(&self, bytes: &[u8], deadline: Instant, alone: bool) -> Result<(), ClientError> {
        if let Some(ring) = &self.ring {
            return self.write_ring(ring, bytes, deadline, alone);
        }
        let mut stream = &self.stream;
        let mut written = 0;
        while written < bytes.len() {
            let failure = match stream.write(&bytes[written..]) {
                Ok(0) => "the connection accepts no more bytes".to_string(),
                Ok(count) => {
                    written += count;
                    continue;
                }
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    if Instant::now() < deadline {
                        continue;
                    }
                    if written == 0 && alone {
                        return Err(ClientError::new(
                            crate::error::REQUEST_TIMEOUT_CODE,
                            format!(
                                "data node {} took none of the request by the call's deadline \
                                 (its connection is full); nothing was sent",
                                self.node
                            ),
                        ));
                    }
                    format!(
                        "the call's deadline passed with {written} of {} bytes sent",
                        bytes.len()
                    )
                }
                Err(error) => error.to_string(),
            };
            self.alive.store(false, Ordering::Release);
            let _ = self.stream.shutdown(Shutdown::Both);
            if let Some(refused) = refusal_error(&self.refusals, self.node) {
                return Err(refused);
            }
            return Err(ClientError::new(
                crate::error::NODE_FAILURE,
                format!(
                    "send to data node {} failed: {failure}; the connection was closed",
                    self.node
                ),
            ));
        }
        Ok(())
    }
}

/// The ring each direction of an API node's link gets: what `ShmSize` is by
/// default (a data node whose ShmSize is smaller refuses, and the link
/// stays on its socket).
const RING_BYTES: usize = 4 << 20;

/// How long a data node may take to answer an offer of shared memory.
const OFFER_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Offers the data node at the other end of `opened` (a local socket, its
/// proof checked) shared memory for the link. Returns this side's ends of
/// the rings if it accepted, `None` if it refused (the link stays on the
/// socket); messages that came before its answer are put in `early`. An
/// error means the connection failed.
fn offer_shared_memory(
    opened: &mut BlockingConnection,
    early: &mut Vec<Message>,
) -> Result<Option<(RingWriter, RingReader)>, ()> {
    use std::os::fd::AsFd;
    let Ok((memory, file)) = shared_memory::LinkMemory::create(RING_BYTES) else {
        return Ok(None);
    };
    let offer = Message::SharedMemoryOffer {
        ring_bytes: RING_BYTES as u32,
    };
    opened
        .send_with_file(&[offer], file.as_fd())
        .map_err(|_| ())?;
    let deadline = Instant::now() + OFFER_ANSWER_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(());
        }
        match opened.receive(left) {
            Ok(Some(Message::SharedMemoryAnswer { accepted, .. })) => {
                return Ok(accepted.then(|| shared_memory::link_ends(memory, true)));
            }
            Ok(Some(message)) => early.push(message),
            Ok(None) => {}
            Err(_) => return Err(()),
        }
    }
}

/// Why data node `node` cannot be used: its refusal if it sent one, with
/// the refusal's codes, else a node failure.
fn down_error(refusals: &Refusals, node: NodeId) -> ClientError {
    refusal_error(refusals, node).unwrap_or_else(|| node_down(node))
}

/// Data node `node`'s refusal as an error naming the node, if it sent one.
fn refusal_error(refusals: &Refusals, node: NodeId) -> Option<ClientError> {
    let refusals = refusals.lock().expect("refusals");
    let refusal = refusals.get(&node)?;
    Some(ClientError {
        ndb_code: refusal.ndb_code,
        mysql_code: refusal.mysql_code,
        message: format!(
            "data node {node} refused this API node's connection (NDB error {}): {}",
            refusal.ndb_code, refusal.message
        ),
    })
}

pub(crate) fn node_down(node: NodeId) -> ClientError {
    ClientError::new(
        crate::error::NODE_FAILURE,
        format!("data node {node} is not connected (node failure); try again"),
    )
}

/// State the receiving threads share with the connection.
pub(crate) struct Shared {
    mailboxes: RwLock<Vec<Option<Arc<Mailbox>>>>,
    pub(crate) counters: SharedCounters,
    /// The last `Refused` each data node sent before closing this API
    /// node's connection (too many connections, a failed proof): kept so
    /// the callers that needed the node learn why, not just that it is
    /// down. Cleared when a new connection to the node passes its handshake.
    refusals: Refusals,
    /// The newest cluster state (generation, version) a data node's
    /// heartbeat answer named: routing older than it is read again before
    /// the next transaction picks a node, so a node that left (or is still
    /// copying after a restart) stops getting transactions within a
    /// heartbeat interval.
    /// With it, the data node that named it (alive then: it just
    /// answered), from which the routing is read again.
    state_seen: Mutex<((u64, u64), NodeId)>,
    /// Set when `state_seen` grew: the only thing a session looks at
    /// before each transaction, so the common case takes no lock.
    state_newer: AtomicBool,
    /// One session reads the routing again at a time; the others route
    /// with the one they have meanwhile.
    refreshing: AtomicBool,
}

impl Shared {
    fn deliver(&self, mailbox: usize, delivery: Delivery) {
        let mailboxes = self.mailboxes.read().expect("mailboxes");
        if let Some(Some(mailbox)) = mailboxes.get(mailbox) {
            mailbox.push(delivery);
        }
    }

    /// Gives every session a copy of `delivery` (rare news: a takeover).
    fn deliver_to_all(&self, delivery: Delivery) {
        let mailboxes = self.mailboxes.read().expect("mailboxes");
        for mailbox in mailboxes.iter().skip(ADMIN_MAILBOX + 1).flatten() {
            mailbox.push(delivery.clone());
        }
    }

    /// Why data node `node` cannot be used (see `down_error`).
    pub(crate) fn down_error(&self, node: NodeId) -> ClientError {
        down_error(&self.refusals, node)
    }

    fn node_down(&self, node: NodeId) {
        let mailboxes = self.mailboxes.read().expect("mailboxes");
        for mailbox in mailboxes.iter().flatten() {
            mailbox.push(Delivery::NodeDown(node));
        }
    }
}

/// The connection to the management node, and why it is closed when it is.
struct ManagementLink {
    connection: Option<BlockingConnection>,
    /// What closed it, or why the last attempt to reopen it failed.
    down_reason: String,
}

impl ManagementLink {
    fn open(connection: BlockingConnection) -> Mutex<ManagementLink> {
        Mutex::new(ManagementLink {
            connection: Some(connection),
            down_reason: String::new(),
        })
    }
}

/// How often the management thread reads what the management node sent
/// (data-node addresses) and so notices that its connection closed.
const MANAGEMENT_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The first pause before reopening a closed management connection; it
/// doubles after each failed attempt up to `MANAGEMENT_RETRY_PAUSE_MAX`.
const MANAGEMENT_RETRY_PAUSE: Duration = Duration::from_millis(100);
const MANAGEMENT_RETRY_PAUSE_MAX: Duration = Duration::from_secs(2);

pub(crate) struct Inner {
    pub(crate) node: NodeId,
    /// Where the management node listens ("host:port").
    connectstring: String,
    management: Mutex<ManagementLink>,
    /// The cluster secret from the management node: this API node proves
    /// its id to data nodes with it, and they theirs to it.
    secret: ClusterSecret,
    addresses: Mutex<BTreeMap<NodeId, String>>,
    pub(crate) data_nodes: Vec<NodeId>,
    /// Each data node's HeartbeatIntervalDbApi (ms) and MaxMissedHeartbeats.
    heartbeats: BTreeMap<NodeId, (u64, u32)>,
    /// Between keep-alives on the management connection: the smallest
    /// HeartbeatIntervalDbApi (the management node uses the first data
    /// node's).
    management_keep_alive: Duration,
    links: Vec<(NodeId, Mutex<Option<Arc<Link>>>)>,
    /// When each data node last failed to connect (see `RECONNECT_INTERVAL`).
    failed_connects: Mutex<BTreeMap<NodeId, Instant>>,
    pub(crate) shared: Arc<Shared>,
    routing: RwLock<Arc<Routing>>,
    next_request: AtomicU64,
    /// The sequence part of the next transaction id (see `SESSION_SHIFT`).
    next_transaction: AtomicU64,
    round_robin: AtomicUsize,
    /// One administrative request at a time: they share a mailbox.
    admin: Mutex<()>,
    /// Read by the threads that run its sessions, not by receiving
    /// threads (see the module's notes).
    driven: bool,
    /// Counts the links opened, so a thread that watches the sockets
    /// notices a new one.
    links_opened: AtomicU64,
    /// Held while links are opened: two threads that found the same link
    /// down would each open one, and the data node refuses an API node's
    /// second connection.
    connecting: Mutex<()>,
    /// The other connections of its pool (`ClusterPool`): a dictionary
    /// this one read after its own DDL is theirs at once too, as one
    /// process must not see a table dropped through one connection still
    /// existing through another (NDB's mysqld shares its dictionary
    /// across its pool).
    siblings: OnceLock<Vec<Weak<Inner>>>,
}

/// A connection to a cluster. Cheap to clone; every clone is the same
/// connection. Create one `Session` per thread.
#[derive(Clone)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for (_, slot) in &self.links {
            if let Some(link) = slot.lock().expect("link").take() {
                let _ = link.stream.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Cluster {
    /// Connects to the management node at `connectstring` ("host:port"),
    /// takes a free API node id, connects to every data node and waits
    /// (up to `timeout`) until all are connected and the dictionary is read.
    pub fn connect(connectstring: &str, timeout: Duration) -> Result<Cluster, ClientError> {
        Cluster::connect_with(connectstring, timeout, false)
    }

    /// `connect`, for a runtime whose threads read the data nodes' sockets
    /// themselves (`link_receivers`): no receiving threads.
    pub fn connect_driven(connectstring: &str, timeout: Duration) -> Result<Cluster, ClientError> {
        Cluster::connect_with(connectstring, timeout, true)
    }

    fn connect_with(
        connectstring: &str,
        timeout: Duration,
        driven: bool,
    ) -> Result<Cluster, ClientError> {
        let mut management =
            BlockingConnection::connect(connectstring, 0, NodeRole::Api, REQUEST_TIMEOUT)
                .map_err(|e| ClientError::connection(e.to_string()))?;
        let reply = management
            .request(
                Message::AllocateNodeId {
                    role: NodeRole::Api,
                    requested: None,
                    listen_port: 0,
                },
                REQUEST_TIMEOUT,
                |m| matches!(m, Message::NodeIdAllocated { .. } | Message::Refused { .. }),
            )
            .map_err(|e| ClientError::connection(e.to_string()))?;
        let (node, config_text, config_file, secret) = match reply {
            Message::NodeIdAllocated {
                node,
                config_text,
                config_file,
                secret,
            } => (node, config_text, config_file, secret),
            Message::Refused { error } => return Err(ClientError::reply(error)),
            _ => unreachable!("filtered by the request"),
        };
        let config = config::parse(&config_text, &config_file).map_err(|e| {
            ClientError::connection(format!("the management node sent a bad configuration: {e}"))
        })?;
        let data_nodes: Vec<NodeId> = config.data_nodes.iter().map(|d| d.node_id).collect();
        let heartbeats: BTreeMap<NodeId, (u64, u32)> = config
            .data_nodes
            .iter()
            .map(|d| {
                (
                    d.node_id,
                    (d.heartbeat_interval_db_api_ms, d.missed_heartbeats_max),
                )
            })
            .collect();
        let inner = Arc::new_cyclic(|weak| Inner {
            node,
            connectstring: connectstring.to_string(),
            management: ManagementLink::open(management),
            secret,
            addresses: Mutex::new(BTreeMap::new()),
            links: data_nodes.iter().map(|n| (*n, Mutex::new(None))).collect(),
            failed_connects: Mutex::new(BTreeMap::new()),
            data_nodes,
            management_keep_alive: Duration::from_millis(
                heartbeats
                    .values()
                    .map(|(interval_ms, _)| *interval_ms)
                    .min()
                    .unwrap_or(DEFAULT_API_HEARTBEAT_MS),
            ),
            heartbeats,
            shared: Arc::new(Shared {
                mailboxes: RwLock::new({
                    let mut mailboxes = vec![None; SESSIONS_MAX];
                    mailboxes[ADMIN_MAILBOX] =
                        Some(Arc::new(Mailbox::new(driven.then(|| weak.clone()))));
                    mailboxes
                }),
                counters: SharedCounters::default(),
                refusals: Refusals::default(),
                state_seen: Mutex::new(((0, 0), 0)),
                state_newer: AtomicBool::new(false),
                refreshing: AtomicBool::new(false),
            }),
            routing: RwLock::new(Arc::new(Routing::new())),
            next_request: AtomicU64::new(first_request_id()),
            next_transaction: AtomicU64::new(1),
            round_robin: AtomicUsize::new(0),
            admin: Mutex::new(()),
            driven,
            links_opened: AtomicU64::new(0),
            connecting: Mutex::new(()),
            siblings: OnceLock::new(),
        });
        let cluster = Cluster { inner };
        let weak = Arc::downgrade(&cluster.inner);
        std::thread::Builder::new()
            .name(format!("shoal-management-{node}"))
            .spawn(move || keep_management_connection(weak))
            .map_err(|e| ClientError::connection(format!("cannot start a thread: {e}")))?;
        let weak = Arc::downgrade(&cluster.inner);
        std::thread::Builder::new()
            .name(format!("shoal-links-{node}"))
            .spawn(move || keep_data_node_links(weak))
            .map_err(|e| ClientError::connection(format!("cannot start a thread: {e}")))?;
        cluster.wait_until_ready(&config.node_groups, Instant::now() + timeout)?;
        Ok(cluster)
    }

    /// Connects to the data nodes and reads the dictionary. Ready as soon
    /// as every member of the started cluster is connected: a data node
    /// that is down is not waited for. At the deadline, a connected member
    /// in every node group is enough; without one the error names the node
    /// groups and nodes not reached.
    fn wait_until_ready(
        &self,
        node_groups: &[Vec<NodeId>],
        deadline: Instant,
    ) -> Result<(), ClientError> {
        let mut last_error = None;
        loop {
            self.absorb_addresses(Duration::from_millis(50))?;
            self.connect_data_nodes();
            let connected: Vec<NodeId> = self
                .inner
                .data_nodes
                .iter()
                .copied()
                .filter(|n| self.link(*n).is_some())
                .collect();
            if !connected.is_empty() {
                // A dictionary from a member means the cluster has started.
                match self.refresh_dictionary() {
                    Ok(()) => {
                        let routing = self.routing();
                        let members = self
                            .inner
                            .data_nodes
                            .iter()
                            .filter(|n| routing.is_live(**n));
                        if members.clone().all(|n| connected.contains(n)) {
                            return Ok(());
                        }
                        let every_group = node_groups.iter().all(|group| {
                            group
                                .iter()
                                .any(|n| routing.is_live(*n) && connected.contains(n))
                        });
                        if every_group && Instant::now() >= deadline {
                            return Ok(());
                        }
                        let missing: Vec<NodeId> = members
                            .filter(|n| !connected.contains(n))
                            .copied()
                            .collect();
                        let listed: Vec<String> = missing.iter().map(|n| n.to_string()).collect();
                        let mut error = ClientError::connection(format!(
                            "data node(s) {} are cluster members but not connected",
                            listed.join(", ")
                        ));
                        // A member that refused this API node says why.
                        if let Some(refused) = self.refusal_among(&missing) {
                            error.ndb_code = refused.ndb_code;
                            error.mysql_code = refused.mysql_code;
                            error.message = format!("{}; {}", error.message, refused.message);
                        }
                        last_error = Some(error);
                    }
                    Err(error) => last_error = Some(error),
                }
            }
            if Instant::now() >= deadline {
                return Err(last_error.unwrap_or_else(|| {
                    let error = ClientError::connection(format!(
                        "no data node reachable (configured: {:?}) by the deadline",
                        self.inner.data_nodes
                    ));
                    match self.refusal_among(&self.inner.data_nodes) {
                        Some(refused) => ClientError {
                            message: format!("{}; {}", error.message, refused.message),
                            ..refused
                        },
                        None => error,
                    }
                }));
            }
            crate::task::pause(Duration::from_millis(20));
        }
    }

    /// The error of the first of `nodes` that refused this API node's
    /// connection, if any did.
    fn refusal_among(&self, nodes: &[NodeId]) -> Option<ClientError> {
        let refused = {
            let refusals = self.inner.shared.refusals.lock().expect("refusals");
            nodes.iter().copied().find(|n| refusals.contains_key(n))?
        };
        Some(self.inner.shared.down_error(refused))
    }

    /// Data node `node`'s refusal of this API node's connection, if its
    /// last connection ended with one.
    pub(crate) fn refusal(&self, node: NodeId) -> Option<ClientError> {
        self.refusal_among(&[node])
    }

    /// Whether the management connection is open. While it is not, a
    /// background thread reopens it (see `keep_management_connection`).
    pub fn management_connected(&self) -> bool {
        self.inner
            .management
            .lock()
            .expect("management")
            .connection
            .is_some()
    }

    /// The API node id the management node gave this connection.
    pub fn node_id(&self) -> NodeId {
        self.inner.node
    }

    /// The data nodes this connection reaches through their local socket
    /// (those on this host) rather than TCP.
    pub fn local_links(&self) -> Vec<NodeId> {
        self.inner
            .data_nodes
            .iter()
            .filter(|n| self.link(**n).is_some_and(|link| link.stream.is_local()))
            .copied()
            .collect()
    }

    /// The configured data nodes, and whether each is connected.
    pub fn data_nodes(&self) -> Vec<(NodeId, bool)> {
        self.inner
            .data_nodes
            .iter()
            .map(|n| (*n, self.link(*n).is_some()))
            .collect()
    }

    /// Whether this connection is driven (`connect_driven`).
    pub fn is_driven(&self) -> bool {
        self.inner.driven
    }

    /// How many links to data nodes this connection has opened: when it
    /// changes, `link_receivers` has a new one.
    pub fn links_opened(&self) -> u64 {
        self.inner.links_opened.load(Ordering::Acquire)
    }

    /// The open links of a driven connection, to watch and pump (empty
    /// for one that is not driven).
    pub fn link_receivers(&self) -> Vec<LinkReceiver> {
        if !self.inner.driven {
            return Vec::new();
        }
        self.inner
            .links
            .iter()
            .filter_map(|(_, slot)| slot.lock().expect("link").clone())
            .filter(|link| link.alive.load(Ordering::Acquire))
            .map(|link| LinkReceiver {
                link,
                shared: Arc::clone(&self.inner.shared),
            })
            .collect()
    }

    /// A new session (NDB's `Ndb` object): one per thread.
    pub fn session(&self) -> Result<Session, ClientError> {
        let mut mailboxes = self.inner.shared.mailboxes.write().expect("mailboxes");
        let Some(id) = mailboxes
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, m)| m.is_none())
            .map(|(i, _)| i)
        else {
            return Err(ClientError::new(
                4006,
                format!("{SESSIONS_MAX} sessions are open on this cluster connection"),
            ));
        };
        let driven = self.inner.driven.then(|| Arc::downgrade(&self.inner));
        let mailbox = Arc::new(Mailbox::new(driven));
        mailboxes[id] = Some(Arc::clone(&mailbox));
        Ok(Session::new(self.clone(), id as u32, mailbox))
    }

    /// The counters of every session of this connection, summed.
    pub fn counters(&self) -> crate::session::Counters {
        crate::session::Counters::from_values(&self.counter_values())
    }

    pub(crate) fn counter_values(&self) -> [u64; crate::session::COUNTERS] {
        let counters = &self.inner.shared.counters.values;
        std::array::from_fn(|index| counters[index].load(Ordering::Relaxed))
    }

    /// A transaction id for session `session`, never used before on this
    /// connection.
    pub(crate) fn next_transaction_id(&self, session: u32) -> u64 {
        let sequence = self.inner.next_transaction.fetch_add(1, Ordering::Relaxed);
        assert!(sequence < 1 << SESSION_SHIFT, "transaction ids ran out");
        (u64::from(session) << SESSION_SHIFT) | sequence
    }

    pub(crate) fn release_session(&self, id: u32) {
        let mut mailboxes = self.inner.shared.mailboxes.write().expect("mailboxes");
        mailboxes[id as usize] = None;
    }

    /// The routing view of the dictionary this connection last read.
    pub fn routing(&self) -> Arc<Routing> {
        Arc::clone(&self.inner.routing.read().expect("routing"))
    }

    /// The routing view, read again first if a data node's heartbeat named
    /// a newer cluster state (by one session at a time; a failed read
    /// leaves the old view, and the next heartbeat tries again).
    pub(crate) fn current_routing(&self) -> Arc<Routing> {
        let routing = self.routing();
        let shared = &self.inner.shared;
        if !shared.state_newer.load(Ordering::Acquire)
            || shared.refreshing.swap(true, Ordering::AcqRel)
        {
            return routing;
        }
        // Cleared before `state_seen` is read: a heartbeat naming a newer
        // state after this sets it again, so none is missed.
        shared.state_newer.store(false, Ordering::Release);
        let (seen, named_by) = *shared.state_seen.lock().expect("state seen");
        let mut current = Arc::clone(&routing);
        if seen > current.version() && self.refresh_dictionary_from(Some(named_by)).is_ok() {
            current = self.routing();
            self.close_departed(&routing, &current);
        }
        if current.version() < seen {
            // The read failed or found an older state: try again next time.
            shared.state_newer.store(true, Ordering::Release);
        }
        shared.refreshing.store(false, Ordering::Release);
        current
    }

    /// A table by name, from the dictionary this connection last read
    /// (re-read once if the name is unknown).
    pub fn table(&self, name: &str) -> Result<Arc<TableRoute>, ClientError> {
        if let Some(table) = self.routing().table_by_name(name) {
            return Ok(Arc::clone(table));
        }
        self.refresh_dictionary()?;
        self.routing()
            .table_by_name(name)
            .cloned()
            .ok_or_else(|| ClientError {
                ndb_code: 723,
                mysql_code: 1146,
                message: format!("No such table existed: {name}"),
            })
    }

    /// Reads the dictionary again from a connected data node.
    pub fn refresh_dictionary(&self) -> Result<(), ClientError> {
        self.refresh_dictionary_from(None)
    }

    /// Reads the dictionary from `node` if it is connected, else from any
    /// connected data node.
    fn refresh_dictionary_from(&self, node: Option<NodeId>) -> Result<(), ClientError> {
        let node = match node.filter(|node| self.link(*node).is_some()) {
            Some(node) => node,
            None => self.any_connected()?,
        };
        let state = self.cluster_state(node)?;
        if state.members.is_empty() {
            return Err(ClientError::connection("the cluster has not started yet"));
        }
        let mut routing = Routing::new();
        routing.install(&state);
        let routing = Arc::new(routing);
        *self.inner.routing.write().expect("routing") = Arc::clone(&routing);
        for sibling in self.inner.siblings.get().into_iter().flatten() {
            if let Some(inner) = sibling.upgrade() {
                Cluster { inner }.adopt_routing(&routing);
            }
        }
        Ok(())
    }

    /// Takes `routing`, read by another connection of the same pool, if
    /// it is newer than this connection's.
    fn adopt_routing(&self, routing: &Arc<Routing>) {
        let before = {
            let mut current = self.inner.routing.write().expect("routing");
            if current.version() >= routing.version() {
                return;
            }
            std::mem::replace(&mut *current, Arc::clone(routing))
        };
        self.close_departed(&before, routing);
    }

    /// Makes `connections` one pool: each adopts the dictionary any other
    /// reads (see `Inner::siblings`). Once per connection.
    pub(crate) fn join_pool(connections: &[Cluster]) {
        for connection in connections {
            let others = connections
                .iter()
                .filter(|other| !Arc::ptr_eq(&other.inner, &connection.inner))
                .map(|other| Arc::downgrade(&other.inner))
                .collect();
            let joined = connection.inner.siblings.set(others).is_ok();
            assert!(joined, "a connection joins one pool");
        }
    }

    /// Closes the link to every data node that `before` had as a member
    /// and `after` no longer has: the cluster removed it (it stopped, or
    /// was cut off), so the calls waiting on it hear `NodeDown` now rather
    /// than after this connection's own silence limit.
    fn close_departed(&self, before: &Routing, after: &Routing) {
        for node in &self.inner.data_nodes {
            if before.is_live(*node)
                && !after.is_live(*node)
                && let Some(link) = self.link(*node)
            {
                link.close();
            }
        }
    }

    pub(crate) fn link(&self, node: NodeId) -> Option<Arc<Link>> {
        let (_, slot) = self.inner.links.iter().find(|(n, _)| *n == node)?;
        slot.lock()
            .expect("link")
            .as_ref()
            .filter(|l| l.alive.load(Ordering::Acquire))
            .cloned()
    }

    /// The link to `node`, reconnecting once if it is down.
    pub(crate) fn link_or_connect(&self, node: NodeId) -> Result<Arc<Link>, ClientError> {
        if let Some(link) = self.link(node) {
            return Ok(link);
        }
        self.absorb_addresses(Duration::ZERO)?;
        self.connect_data_nodes();
        self.link(node).ok_or_else(|| {
            let mut error = self.inner.shared.down_error(node);
            let management = self.inner.management.lock().expect("management");
            if management.connection.is_none() {
                error.message = format!(
                    "{}; the management node, which tells where data nodes listen, is not \
                     connected either ({}); reconnecting to it in the background",
                    error.message, management.down_reason
                );
            }
            error
        })
    }

    /// A connected data node, round-robin (transactions without a hint).
    pub(crate) fn next_node(&self) -> Result<NodeId, ClientError> {
        let nodes = &self.inner.data_nodes;
        let start = self.inner.round_robin.fetch_add(1, Ordering::Relaxed);
        let routing = self.current_routing();
        for offset in 0..nodes.len() {
            let node = nodes[(start + offset) % nodes.len()];
            // A starting member refuses transactions until its copy is done.
            if self.link(node).is_some() && routing.is_started(node) {
                return Ok(node);
            }
        }
        self.any_connected()
    }

    /// Takes the data-node addresses the management node sent, waiting up
    /// to `wait` for more. A closed management connection is not an error
    /// here: the addresses known stay usable, and the management thread
    /// reopens it (a caller that needs a node it cannot reach is told why,
    /// see `link_or_connect`).
    fn absorb_addresses(&self, wait: Duration) -> Result<(), ClientError> {
        absorb_addresses(&self.inner, wait);
        Ok(())
    }

    fn connect_data_nodes(&self) {
        let _connecting = self.inner.connecting.lock().expect("connecting");
        self.connect_data_nodes_held();
    }

    /// `connect_data_nodes` with `Inner::connecting` held.
    fn connect_data_nodes_held(&self) {
        for (node, slot) in &self.inner.links {
            if self.link(*node).is_some() {
                continue;
            }
            let Some(address) = self
                .inner
                .addresses
                .lock()
                .expect("addresses")
                .get(node)
                .cloned()
            else {
                continue;
            };
            let recently_failed = self
                .inner
                .failed_connects
                .lock()
                .expect("failed connects")
                .get(node)
                .is_some_and(|at| at.elapsed() < RECONNECT_INTERVAL);
            if recently_failed {
                continue;
            }
            match self.open_link(*node, &address) {
                Some(link) => {
                    *slot.lock().expect("link") = Some(link);
                    // After the link is in its slot: whoever sees the count
                    // change finds it there.
                    self.inner.links_opened.fetch_add(1, Ordering::AcqRel);
                    self.inner
                        .failed_connects
                        .lock()
                        .expect("failed connects")
                        .remove(node);
                }
                None => {
                    self.inner
                        .failed_connects
                        .lock()
                        .expect("failed connects")
                        .insert(*node, Instant::now());
                }
            }
        }
    }

    /// Connects to data node `node` at `address` and starts its receiving
    /// thread; `None` if it cannot be reached within `CONNECT_TIMEOUT`.
    fn open_link(&self, node: NodeId, address: &str) -> Option<Arc<Link>> {
        let mut opened = BlockingConnection::connect_local_first(
            address,
            self.inner.node,
            NodeRole::Api,
            CONNECT_TIMEOUT,
        )
        .ok()?;
        // Each side proves its claim before anything else; a peer that
        // cannot is not the data node it says it is.
        let incarnation = match opened.prove(&self.inner.secret, CONNECT_TIMEOUT) {
            Ok((proven, incarnation)) if proven == node => incarnation,
            _ => {
                // A data node that refuses says why before it closes the
                // connection; what arrived is read for that reason.
                while let Ok(Some(message)) = opened.receive(Duration::ZERO) {
                    if let Message::Refused { error } = message {
                        self.inner
                            .shared
                            .refusals
                            .lock()
                            .expect("refusals")
                            .insert(node, error);
                    }
                }
                return None;
            }
        };
        // A refusal from an earlier connection no longer says why the node
        // is unusable; this connection's own refusal, if any, follows.
        self.inner
            .shared
            .refusals
            .lock()
            .expect("refusals")
            .remove(&node);
        // A driven link to a data node on this host goes over shared memory
        // when the data node agrees (`runtime::shared_memory`).
        let mut rings = None;
        let mut early = Vec::new();
        if self.inner.driven && opened.is_local() {
            match offer_shared_memory(&mut opened, &mut early) {
                Ok(ends) => rings = ends,
                Err(_) => return None,
            }
        }
        let (stream, mut decoder, pending) = opened.into_parts();
        early.extend(pending);
        let pending = early;
        if rings.is_some() {
            // Frames come from the ring now; the socket brings doorbells.
            decoder = FrameDecoder::new();
            decoder.set_payload_bytes_max(protocol::frame::FRAME_PAYLOAD_BYTES_MAX);
        }
        // The handshake left its own read timeout on the socket, and a
        // clone shares it: the receiving thread wakes at the heartbeat
        // interval to send its heartbeat and to notice a silent data node.
        let heartbeats = self.heartbeats(node);
        stream.set_read_timeout(Some(heartbeats.interval)).ok()?;
        let reader = stream.try_clone().ok()?;
        let mut link = Link::new(
            node,
            incarnation,
            stream,
            Arc::clone(&self.inner.shared.refusals),
        )?;
        let shared = Arc::clone(&self.inner.shared);
        let mut acks = PendingAcks::default();
        if self.inner.driven {
            let mut ring_reader = None;
            if let Some((writer, reader)) = rings {
                let watch = reader.watch();
                // No thread watches the ring yet: the data node rings for
                // every write until one says it is awake.
                watch.prepare_to_sleep();
                link.ring = Some(Mutex::new(writer));
                link.ring_watch = Some(watch);
                ring_reader = Some(reader);
            }
            link.driven = Some(DrivenReceiver {
                fd: reader.raw_fd(),
                receiver: Mutex::new(Receiver {
                    reader,
                    ring: ring_reader,
                    decoder,
                    acks,
                    heard: Instant::now(),
                    messages: Vec::new(),
                    ack_frame: Vec::new(),
                    ended: false,
                }),
                more: AtomicBool::new(false),
            });
            let link = Arc::new(link);
            for message in pending {
                let mut receiver = link
                    .driven
                    .as_ref()
                    .expect("driven")
                    .receiver
                    .lock()
                    .expect("receiver");
                dispatch(&shared, &link, message, &mut receiver.acks);
            }
            let keeping = Arc::clone(&link);
            std::thread::Builder::new()
                .name(format!("shoal-keeper-{node}"))
                .spawn(move || keep_link(keeping, shared, heartbeats))
                .ok()?;
            return Some(link);
        }
        let link = Arc::new(link);
        for message in pending {
            dispatch(&shared, &link, message, &mut acks);
        }
        let receiving = Arc::clone(&link);
        std::thread::Builder::new()
            .name(format!("shoal-receive-{node}"))
            .spawn(move || receive_loop(reader, decoder, receiving, shared, heartbeats, acks))
            .ok()?;
        Some(link)
    }

    /// How this API node heartbeats data node `node`: its
    /// HeartbeatIntervalDbApi, and the silence after which the node is
    /// taken for dead (MaxMissedHeartbeats intervals).
    fn heartbeats(&self, node: NodeId) -> Heartbeats {
        let (interval_ms, missed) = self
            .inner
            .heartbeats
            .get(&node)
            .copied()
            .unwrap_or((DEFAULT_API_HEARTBEAT_MS, DEFAULT_MISSED_HEARTBEATS));
        Heartbeats {
            interval: Duration::from_millis(interval_ms),
            silence_max: Duration::from_millis(interval_ms * u64::from(missed)),
        }
    }

    fn any_connected(&self) -> Result<NodeId, ClientError> {
        for node in &self.inner.data_nodes {
            if self.link(*node).is_some() {
                return Ok(*node);
            }
        }
        self.absorb_addresses(Duration::from_millis(100))?;
        self.connect_data_nodes();
        self.inner
            .data_nodes
            .iter()
            .copied()
            .find(|n| self.link(*n).is_some())
            .ok_or_else(|| ClientError::connection("no data node is connected"))
    }

    /// Sends an administrative request to `node` and waits for its answer.
    fn request_from(
        &self,
        node: NodeId,
        make: impl Fn(u64) -> Message,
    ) -> Result<Message, ClientError> {
        let request = self.inner.next_request.fetch_add(1, Ordering::Relaxed);
        self.request_as(node, request, make)
    }

    /// Sends administrative request `request` to `node` and waits for its
    /// answer (a retry passes the id of its first attempt).
    fn request_as(
        &self,
        node: NodeId,
        request: u64,
        make: impl Fn(u64) -> Message,
    ) -> Result<Message, ClientError> {
        let link = self.link_or_connect(node)?;
        let mut bytes = Vec::new();
        encode_frame(&[make(request)], &mut bytes);
        let _admin = self.inner.admin.lock().expect("admin");
        let mailbox = {
            let mailboxes = self.inner.shared.mailboxes.read().expect("mailboxes");
            Arc::clone(mailboxes[ADMIN_MAILBOX].as_ref().expect("admin mailbox"))
        };
        // What the mailbox holds is older than this request (a failure of
        // an earlier link, a late answer): it must not be taken for its
        // answer.
        let mut received = VecDeque::new();
        mailbox.take(Instant::now(), &mut received);
        received.clear();
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        link.send(&bytes, deadline)?;
        loop {
            // `admin` is held: a task that suspended here could leave
            // another task of its thread blocked on `admin`, and the thread
            // with it, so the wait blocks the thread instead.
            if !mailbox.take_on_thread(deadline, &mut received) {
                return Err(ClientError::new(
                    crate::error::NODE_FAILURE,
                    format!("data node {node} did not answer within {REQUEST_TIMEOUT:?}"),
                ));
            }
            while let Some(delivery) = received.pop_front() {
                match delivery {
                    Delivery::Message(
                        message @ (Message::SchemaReply { .. } | Message::DictionaryReply { .. }),
                    ) if reply_request(&message) == Some(request) => return Ok(message),
                    Delivery::NodeDown(down) if down == node => {
                        return Err(self.inner.shared.down_error(node));
                    }
                    _ => {}
                }
            }
        }
    }

    /// The dictionary and membership as data node `node` sees them.
    pub fn cluster_state(&self, node: NodeId) -> Result<ClusterState, ClientError> {
        match self.request_from(node, |request| Message::DictionaryRequest { request })? {
            Message::DictionaryReply { state, .. } => Ok(*state),
            _ => unreachable!("filtered by the request"),
        }
    }

    /// Creates a table; returns its table id. The connection's dictionary
    /// is re-read afterwards.
    pub fn create_table(
        &self,
        table: &TableDef,
        options: &TableOptions,
    ) -> Result<u32, ClientError> {
        let mut definition = Vec::new();
        schema::table_codec::encode_table(table, options, &mut definition);
        let id = self.schema_change(SchemaChange::CreateTable { definition })?;
        self.refresh_dictionary()?;
        Ok(id)
    }

    /// Drops the table called `name`; returns the id it had.
    pub fn drop_table(&self, name: &str) -> Result<u32, ClientError> {
        let id = self.schema_change(SchemaChange::DropTable {
            name: name.to_string(),
        })?;
        self.refresh_dictionary()?;
        Ok(id)
    }

    /// Renames table `from` to `to` (its rows, id and fragments stay);
    /// returns its id.
    pub fn rename_table(&self, from: &str, to: &str) -> Result<u32, ClientError> {
        let id = self.schema_change(SchemaChange::RenameTable {
            from: from.to_string(),
            to: to.to_string(),
        })?;
        self.refresh_dictionary()?;
        Ok(id)
    }

    /// Sends a dictionary change to the president, following redirects and
    /// retrying temporary errors for at most `SCHEMA_CHANGE_TIMEOUT`. Every attempt
    /// carries the same request id: the cluster remembers the changes it
    /// applied by request, so a retry of one whose answer was lost (the
    /// president failed, the connection closed) gets the answer the first
    /// attempt got, not "already exists" or "does not exist".
    fn schema_change(&self, change: SchemaChange) -> Result<u32, ClientError> {
        let request = self.inner.next_request.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + SCHEMA_CHANGE_TIMEOUT;
        let mut pause = SCHEMA_RETRY_PAUSE;
        let mut target = self.any_connected()?;
        let mut attempts = 0u32;
        // Whether an attempt may have reached the president without its
        // answer coming back: then giving up leaves the outcome unknown.
        let mut outcome_unknown = false;
        let last_error = loop {
            attempts += 1;
            let reply = self.request_as(target, request, |request| Message::SchemaRequest {
                request,
                change: change.clone(),
            });
            let (error, president) = match reply {
                Ok(Message::SchemaReply { result: Ok(id), .. }) => return Ok(id),
                Ok(Message::SchemaReply {
                    result: Err(error), ..
                }) => {
                    let president = error.president_hint();
                    (ClientError::reply(error), president)
                }
                Ok(_) => unreachable!("filtered by the request"),
                Err(error) => {
                    outcome_unknown = true;
                    (error, None)
                }
            };
            if !error.is_temporary() {
                return Err(error);
            }
            if Instant::now() + pause >= deadline {
                break error;
            }
            crate::task::pause(pause);
            pause = (pause * 2).min(SCHEMA_RETRY_PAUSE_MAX);
            let next = president
                .filter(|n| self.inner.data_nodes.contains(n))
                .map_or_else(|| self.any_connected(), Ok);
            match next {
                Ok(node) => target = node,
                Err(error) => break error,
            }
        };
        if outcome_unknown {
            return Err(ClientError::new(
                crate::error::REQUEST_TIMEOUT_CODE,
                format!(
                    "the schema change may or may not have been applied: no answer after \
                     {attempts} attempts in {SCHEMA_CHANGE_TIMEOUT:?} (last: {last_error}); read \
                     the dictionary before retrying"
                ),
            ));
        }
        Err(last_error)
    }
}

/// Takes what the management node sent (data-node addresses), waiting up
/// to `wait`; closes the connection if it failed, for the management
/// thread to reopen.
fn absorb_addresses(inner: &Inner, wait: Duration) {
    let deadline = Instant::now() + wait;
    let mut management = inner.management.lock().expect("management");
    let Some(connection) = management.connection.as_mut() else {
        return;
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match connection.receive(left) {
            Ok(Some(Message::Addresses { entries })) => {
                let mut addresses = inner.addresses.lock().expect("addresses");
                for entry in entries {
                    addresses.insert(entry.node, format!("{}:{}", entry.host, entry.port));
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(error) => {
                management.connection = None;
                management.down_reason = error.to_string();
                return;
            }
        }
    }
}

/// The management thread of a cluster connection: reads the management
/// node's messages every `MANAGEMENT_POLL_INTERVAL`, and when the
/// connection closed (the management node restarted), reopens it with the
/// same API node id, as NDB's API does, pausing longer after each failed
/// attempt. Sessions never wait for it: they use the addresses already
/// known. Ends when the cluster connection is dropped.
/// Connects again, in the background, to each data node whose link is
/// down, at most every `RECONNECT_INTERVAL` (as NDB's API nodes do): a
/// restarted data node is otherwise reached again only by a call that
/// needs it, while transactions are routed to connected nodes only, so it
/// would never get the share of the load its replicas are for. On a
/// thread of its own: an attempt may take `CONNECT_TIMEOUT`.
fn keep_data_node_links(inner: std::sync::Weak<Inner>) {
    loop {
        std::thread::sleep(RECONNECT_INTERVAL);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let cluster = Cluster { inner };
        if cluster
            .inner
            .data_nodes
            .iter()
            .any(|node| cluster.link(*node).is_none())
        {
            // A caller connecting now does this already.
            let Ok(_connecting) = cluster.inner.connecting.try_lock() else {
                continue;
            };
            absorb_addresses(&cluster.inner, Duration::ZERO);
            cluster.connect_data_nodes_held();
        }
    }
}

fn keep_management_connection(inner: std::sync::Weak<Inner>) {
    let mut pause = MANAGEMENT_RETRY_PAUSE;
    let mut next_keep_alive = Instant::now();
    loop {
        std::thread::sleep(MANAGEMENT_POLL_INTERVAL);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        absorb_addresses(&inner, Duration::ZERO);
        if Instant::now() >= next_keep_alive {
            // The management node closes an API node's connection silent
            // for MaxMissedHeartbeats keep-alive intervals (so SHOW lists
            // only live nodes and a dead one's id is free again).
            next_keep_alive = Instant::now() + inner.management_keep_alive;
            keep_management_alive(&inner);
        }
        if inner
            .management
            .lock()
            .expect("management")
            .connection
            .is_some()
        {
            pause = MANAGEMENT_RETRY_PAUSE;
            continue;
        }
        let attempt = reopen_management(&inner);
        let mut management = inner.management.lock().expect("management");
        match attempt {
            Ok(connection) => {
                management.connection = Some(connection);
                management.down_reason.clear();
                pause = MANAGEMENT_RETRY_PAUSE;
            }
            Err(why) => {
                management.down_reason = why;
                drop(management);
                drop(inner);
                std::thread::sleep(pause);
                pause = (pause * 2).min(MANAGEMENT_RETRY_PAUSE_MAX);
            }
        }
    }
}

/// Sends the management node a keep-alive; a connection that fails is
/// dropped, for the next poll to reopen.
fn keep_management_alive(inner: &Inner) {
    let mut management = inner.management.lock().expect("management");
    let Some(connection) = management.connection.as_mut() else {
        return;
    };
    let keep_alive = Message::Heartbeat {
        generation: 0,
        version: 0,
        free_pages: None,
        sent_at_ms: 0,
    };
    if let Err(error) = connection.send(&[keep_alive]) {
        management.connection = None;
        management.down_reason = error.to_string();
    }
}

/// Connects to the management node again and asks for this connection's
/// own API node id; the management node must hand out the same cluster
/// secret, or the data nodes would not accept this node's proofs.
fn reopen_management(inner: &Inner) -> Result<BlockingConnection, String> {
    let mut connection =
        BlockingConnection::connect(&inner.connectstring, 0, NodeRole::Api, CONNECT_TIMEOUT)
            .map_err(|e| e.to_string())?;
    let reply = connection
        .request(
            Message::AllocateNodeId {
                role: NodeRole::Api,
                requested: Some(inner.node),
                listen_port: 0,
            },
            CONNECT_TIMEOUT,
            |m| matches!(m, Message::NodeIdAllocated { .. } | Message::Refused { .. }),
        )
        .map_err(|e| e.to_string())?;
    match reply {
        Message::NodeIdAllocated { node, secret, .. } if node == inner.node => {
            if secret != inner.secret {
                return Err(
                    "the management node now has another cluster secret (its DataDir changed)"
                        .into(),
                );
            }
            Ok(connection)
        }
        Message::NodeIdAllocated { node, .. } => Err(format!(
            "the management node gave node id {node} instead of {}",
            inner.node
        )),
        Message::Refused { error } => Err(format!(
            "the management node refused node id {}: {} (NDB error {})",
            inner.node, error.message, error.ndb_code
        )),
        _ => unreachable!("filtered by the request"),
    }
}

/// The first request id of a connection: the wall clock in microseconds,
/// so an API node id reused by a later process does not repeat the request
/// ids of an earlier one, which the cluster remembers with their schema
/// changes.
fn first_request_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |since| since.as_micros() as u64)
        .max(1)
}

fn reply_request(message: &Message) -> Option<u64> {
    match message {
        Message::SchemaReply { request, .. } | Message::DictionaryReply { request, .. } => {
            Some(*request)
        }
        _ => None,
    }
}

/// Hands one message from data node `node` to the mailbox waiting for it.
/// A refusal is kept for the callers that need the node (the data node
/// closes the connection after it).
fn dispatch(shared: &Shared, link: &Link, message: Message, acks: &mut PendingAcks) {
    let node = link.node;
    let mailbox = match &message {
        Message::Executed(executed) => {
            if executed.acknowledge {
                // The data node's replicas keep the commit's marker until
                // this node says it has the answer (whoever waits for it).
                acks.ids.push(executed.transaction);
                acks.since.get_or_insert_with(Instant::now);
            }
            (executed.transaction >> SESSION_SHIFT) as usize
        }
        Message::TakeoverDone {
            failed_node,
            failed_incarnation,
        } => {
            shared.deliver_to_all(Delivery::TakeoverDone {
                node: *failed_node,
                incarnation: *failed_incarnation,
            });
            return;
        }
        Message::ScanRows(rows) => (rows.transaction >> SESSION_SHIFT) as usize,
        Message::SchemaReply { .. } | Message::DictionaryReply { .. } => ADMIN_MAILBOX,
        Message::Refused { error } => {
            shared
                .refusals
                .lock()
                .expect("refusals")
                .insert(node, error.clone());
            return;
        }
        Message::Heartbeat {
            generation,
            version,
            ..
        } => {
            let mut seen = shared.state_seen.lock().expect("state seen");
            if (*generation, *version) > seen.0 {
                *seen = ((*generation, *version), node);
                shared.state_newer.store(true, Ordering::Release);
            }
            return;
        }
        _ => return,
    };
    shared.deliver(mailbox, Delivery::Message(message));
}

/// The heartbeat timing of one data-node connection.
#[derive(Debug, Clone, Copy)]
struct Heartbeats {
    interval: Duration,
    silence_max: Duration,
}

/// HeartbeatIntervalDbApi and MaxMissedHeartbeats for a data node the
/// configuration does not describe (only in tests of the client alone).
const DEFAULT_API_HEARTBEAT_MS: u64 = 500;
const DEFAULT_MISSED_HEARTBEATS: u32 = 6;

/// Room each read of a data-node connection offers at least.
const RECEIVE_BYTES_MIN: usize = 256 * 1024;

/// The frame of an API node's heartbeat to a data node.
fn heartbeat_frame() -> Vec<u8> {
    let mut frame = Vec::new();
    encode_frame(
        &[Message::Heartbeat {
            generation: 0,
            version: 0,
            free_pages: None,
            sent_at_ms: 0,
        }],
        &mut frame,
    );
    frame
}

/// The keeper of a driven connection's link: at each heartbeat interval
/// it reads what no watcher read, sends the acknowledgements due and a
/// heartbeat, and ends the link when the data node has been silent too
/// long (the receiving thread's other duties, see `receive_loop`).
fn keep_link(link: Arc<Link>, shared: Arc<Shared>, heartbeats: Heartbeats) {
    let heartbeat_frame = heartbeat_frame();
    let driven = link.driven.as_ref().expect("a driven link");
    loop {
        std::thread::sleep(heartbeats.interval);
        pump(&shared, &link);
        let mut receiver = driven.receiver.lock().unwrap_or_else(|p| p.into_inner());
        if receiver.ended {
            return;
        }
        if receiver.heard.elapsed() > heartbeats.silence_max {
            // A stopped data node keeps its socket open: only its silence
            // tells, and the sessions waiting on it must hear NodeDown.
            receiver.end(&shared, &link);
            return;
        }
        let Receiver {
            acks, ack_frame, ..
        } = &mut *receiver;
        send_acks(&link, acks, true, ack_frame);
        drop(receiver);
        // A pump that found the receiver held meanwhile left its input to
        // the holder, which reads only here.
        pump(&shared, &link);
        // The data node answers each heartbeat, and closes the connection
        // of an API node that stopped sending them. A send that failed
        // closed the socket: the next read ends the link.
        let _ = link.send(&heartbeat_frame, Instant::now() + heartbeats.interval);
    }
}

/// Reads one data-node connection until it fails, dispatching answers.
fn receive_loop(
    mut reader: BlockingStream,
    mut decoder: FrameDecoder,
    link: Arc<Link>,
    shared: Arc<Shared>,
    heartbeats: Heartbeats,
    mut acks: PendingAcks,
) {
    let mut messages = Vec::new();
    let heartbeat_frame = heartbeat_frame();
    // The handshake just heard the data node.
    let mut heard = Instant::now();
    let mut next_heartbeat = heard + heartbeats.interval;
    let mut ack_frame = Vec::new();
    loop {
        let now = Instant::now();
        send_acks(&link, &mut acks, now >= next_heartbeat, &mut ack_frame);
        if now >= next_heartbeat {
            // The data node answers each heartbeat, and closes the
            // connection of an API node that stopped sending them, rolling
            // its transactions back.
            next_heartbeat = now + heartbeats.interval;
            // A send that timed out behind a session's long write leaves
            // the link as it was (and that write proves this node alive).
            if link.send(&heartbeat_frame, next_heartbeat).is_err()
                && !link.alive.load(Ordering::Acquire)
            {
                break;
            }
        }
        if now.saturating_duration_since(heard) > heartbeats.silence_max {
            // A stopped data node keeps its socket open: only its silence
            // tells, and the sessions waiting on it must hear NodeDown.
            let _ = reader.shutdown(Shutdown::Both);
            break;
        }
        // Read straight into the decoder's buffer: no copy per read.
        let read = match reader.read(decoder.spare(RECEIVE_BYTES_MIN)) {
            Ok(0) => break,
            Ok(n) => {
                heard = Instant::now();
                n
            }
            // Only a closed or failed connection is a node failure: a
            // timeout or an interrupted read just means nothing arrived.
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => break,
        };
        decoder.filled(read);
        shared.counters.values[crate::session::BYTES_RECEIVED]
            .fetch_add(read as u64, Ordering::Relaxed);
        if dispatch_frames(&mut decoder, &mut messages, &shared, &link, &mut acks).is_err() {
            break;
        }
    }
    link.alive.store(false, Ordering::Release);
    shared.node_down(link.node);
}

/// Hands every whole frame `decoder` holds to its sessions (a link's
/// receiving thread and a driven link's pump both read this way). An
/// error is a corrupt stream: the caller ends the link.
fn dispatch_frames(
    decoder: &mut FrameDecoder,
    messages: &mut Vec<Message>,
    shared: &Shared,
    link: &Link,
    acks: &mut PendingAcks,
) -> Result<(), protocol::DecodeError> {
    while decoder.next_frame(messages)? {
        for message in messages.drain(..) {
            dispatch(shared, link, message, acks);
        }
    }
    Ok(())
}

/// Committed answers acknowledged in one `CommitAck` once this many are
/// waiting, or once the oldest waited `ACK_DELAY`: a batch per read under
/// load, and few enough markers kept meanwhile (each data node allows
/// MaxNoOfConcurrentTransactions unacknowledged answers).
const ACK_BATCH: usize = 32;
const ACK_DELAY: Duration = Duration::from_millis(2);

/// Sends the link's pending acknowledgements when a batch is full, the
/// oldest is due, or `all` (at the heartbeat: nothing else may come to
/// wake the thread). A send that fails leaves them for the next try; a
/// dead link's are moot (its data node rolls back nothing it committed,
/// and its takeover answers no one on this link).
fn send_acks(link: &Link, acks: &mut PendingAcks, all: bool, frame: &mut Vec<u8>) {
    let due = acks.since.is_some_and(|since| since.elapsed() >= ACK_DELAY);
    if acks.ids.is_empty() || !(all || due || acks.ids.len() >= ACK_BATCH) {
        return;
    }
    frame.clear();
    let messages: Vec<Message> = acks
        .ids
        .chunks(protocol::MARKER_IDS_MAX)
        .map(|chunk| Message::CommitAck {
            transactions: Box::new(chunk.to_vec()),
        })
        .collect();
    encode_frame(&messages, frame);
    if link.send(frame, Instant::now() + WRITE_SLICE).is_ok() || !link.alive.load(Ordering::Acquire)
    {
        acks.ids.clear();
        acks.since = None;
    } else {
        // Tried again once due again.
        acks.since = Some(Instant::now());
    }
}

/// Committed answers a link's receiving thread took in and has not yet
/// acknowledged to the data node (`Message::CommitAck`), and when the
/// oldest came; only that thread touches them.
#[derive(Default)]
struct PendingAcks {
    ids: Vec<u64>,
    since: Option<Instant>,
}

/// A cluster connection with no management node or data node behind it,
/// for tests of the client's own bookkeeping: its data nodes are
/// `data_nodes`, none connected (see `attach_link`).
#[cfg(test)]
pub(crate) fn offline_cluster(data_nodes: &[NodeId]) -> (Cluster, std::net::TcpListener) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let management =
        BlockingConnection::connect(&address, 0, NodeRole::Api, Duration::from_secs(5))
            .expect("connect");
    let mut mailboxes = vec![None; SESSIONS_MAX];
    mailboxes[ADMIN_MAILBOX] = Some(Arc::new(Mailbox::default()));
    let inner = Arc::new(Inner {
        node: 100,
        connectstring: address,
        management: ManagementLink::open(management),
        secret: [0; 32],
        addresses: Mutex::new(BTreeMap::new()),
        links: data_nodes.iter().map(|n| (*n, Mutex::new(None))).collect(),
        failed_connects: Mutex::new(BTreeMap::new()),
        data_nodes: data_nodes.to_vec(),
        heartbeats: BTreeMap::new(),
        management_keep_alive: Duration::from_millis(DEFAULT_API_HEARTBEAT_MS),
        shared: Arc::new(Shared {
            mailboxes: RwLock::new(mailboxes),
            counters: SharedCounters::default(),
            refusals: Refusals::default(),
            state_seen: Mutex::new(((0, 0), 0)),
            state_newer: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),
        }),
        routing: RwLock::new(Arc::new(Routing::new())),
        next_request: AtomicU64::new(1),
        next_transaction: AtomicU64::new(1),
        round_robin: AtomicUsize::new(0),
        admin: Mutex::new(()),
        driven: false,
        links_opened: AtomicU64::new(0),
        connecting: Mutex::new(()),
        siblings: OnceLock::new(),
    });
    (Cluster { inner }, listener)
}

/// Connects `cluster`'s link to data node `node` to a test socket, whose
/// other end is returned.
#[cfg(test)]
pub(crate) fn attach_link(cluster: &Cluster, node: NodeId) -> TcpStream {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let stream = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    let link = Arc::new(
        Link::new(
            node,
            1,
            stream.into(),
            Arc::clone(&cluster.inner.shared.refusals),
        )
        .expect("a send timeout"),
    );
    let (_, slot) = cluster
        .inner
        .links
        .iter()
        .find(|(n, _)| *n == node)
        .expect("a configured data node");
    *slot.lock().expect("link") = Some(link);
    server
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{ExecuteEnd, Executed, TransactionState};
    use std::net::TcpListener;

    /// A session that takes a freed mailbox never reuses a transaction id
    /// of the session before it: the coordinator keys transactions by (API
    /// node, id), so a reused id would join the old session's transaction.
    #[test]
    fn transaction_ids_are_never_reused_on_a_connection() {
        let (cluster, _management) = offline_cluster(&[2]);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..3 {
            let mut session = cluster.session().expect("session");
            for _ in 0..3 {
                let transaction = session.transaction_at(2);
                assert!(
                    seen.insert(transaction.id()),
                    "id {} reused",
                    transaction.id()
                );
            }
        }
        let mut first = cluster.session().expect("session");
        let mut second = cluster.session().expect("session");
        for _ in 0..3 {
            assert!(seen.insert(first.transaction_at(2).id()));
            assert!(seen.insert(second.transaction_at(2).id()));
        }
    }

    /// A receiving thread, its link, and the mailbox of session 1, reading
    /// `client`; the server side of the socket is returned to write to.
    /// Its heartbeats are an hour apart, so the tests see only their own
    /// messages.
    fn receiving(client: TcpStream) -> (Arc<Link>, Arc<Mailbox>) {
        let hour = Duration::from_secs(3_600);
        receiving_with(
            client,
            Heartbeats {
                interval: hour,
                silence_max: hour,
            },
        )
    }

    fn receiving_with(client: TcpStream, heartbeats: Heartbeats) -> (Arc<Link>, Arc<Mailbox>) {
        let mut mailboxes = vec![None; 4];
        let mailbox = Arc::new(Mailbox::default());
        mailboxes[1] = Some(Arc::clone(&mailbox));
        let shared = Arc::new(Shared {
            mailboxes: RwLock::new(mailboxes),
            counters: SharedCounters::default(),
            refusals: Refusals::default(),
            state_seen: Mutex::new(((0, 0), 0)),
            state_newer: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),
        });
        let link = Arc::new(
            Link::new(
                2,
                1,
                client.try_clone().expect("clone").into(),
                Arc::clone(&shared.refusals),
            )
            .expect("link"),
        );
        let receiving = Arc::clone(&link);
        std::thread::spawn(move || {
            receive_loop(
                client.into(),
                FrameDecoder::new(),
                receiving,
                shared,
                heartbeats,
                PendingAcks::default(),
            )
        });
        (link, mailbox)
    }

    /// The receiving thread heartbeats the data node at its interval, and
    /// a data node that answers nothing for the silence limit (a stopped
    /// process keeps its socket open) is taken for down: the sessions hear
    /// `NodeDown` instead of waiting for TCP.
    #[test]
    fn a_silent_data_node_is_heartbeated_then_declared_down() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        let interval = Duration::from_millis(50);
        client.set_read_timeout(Some(interval)).expect("timeout");
        let started = Instant::now();
        let (link, mailbox) = receiving_with(
            client,
            Heartbeats {
                interval,
                silence_max: 6 * interval,
            },
        );
        let sent = read_messages(&mut server, 2);
        assert!(
            sent.len() == 2 && sent.iter().all(|m| matches!(m, Message::Heartbeat { .. })),
            "{sent:?}"
        );
        let mut deliveries = VecDeque::new();
        assert!(mailbox.take(Instant::now() + Duration::from_secs(5), &mut deliveries));
        assert!(matches!(deliveries.front(), Some(Delivery::NodeDown(2))));
        assert!(!link.alive.load(Ordering::Acquire));
        assert!(
            started.elapsed() >= 6 * interval,
            "declared down after {:?}",
            started.elapsed()
        );
    }

    /// Reads frames from `server` until `count` messages arrived or a
    /// second passes.
    /// Senders on one link at once: each frame arrives whole, each
    /// sender's in the order it sent them, none lost (a sender that finds
    /// another writing queues its frames for that writer to send).
    #[test]
    fn concurrent_senders_frames_arrive_whole_and_in_order() {
        const SENDERS: u64 = 4;
        const FRAMES: u64 = 3000;
        let (cluster, _management) = offline_cluster(&[2]);
        let start = Arc::new(std::sync::Barrier::new(SENDERS as usize));
        let mut server = attach_link(&cluster, 2);
        let link = cluster.link(2).expect("the attached link");
        let senders: Vec<_> = (0..SENDERS)
            .map(|sender| {
                let link = Arc::clone(&link);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let mut frame = Vec::new();
                    start.wait();
                    for number in 0..FRAMES {
                        frame.clear();
                        encode_frame(
                            &[Message::Heartbeat {
                                generation: sender,
                                version: 0,
                                free_pages: None,
                                sent_at_ms: number,
                            }],
                            &mut frame,
                        );
                        link.send(&frame, Instant::now() + Duration::from_secs(5))
                            .expect("a send on a live link");
                    }
                })
            })
            .collect();
        let mut next = [0u64; SENDERS as usize];
        let mut decoder = FrameDecoder::new();
        let mut messages = Vec::new();
        let mut buffer = [0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(10);
        server
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let mut received = 0;
        while received < SENDERS * FRAMES && Instant::now() < deadline {
            if let Ok(read) = server.read(&mut buffer) {
                decoder.push(&buffer[..read]);
                while decoder.next_frame(&mut messages).expect("a whole frame") {}
            }
            for message in messages.drain(..) {
                let Message::Heartbeat {
                    generation: sender,
                    sent_at_ms: number,
                    ..
                } = message
                else {
                    panic!("not a sent frame: {message:?}");
                };
                assert_eq!(
                    number, next[sender as usize],
                    "sender {sender} out of order"
                );
                next[sender as usize] += 1;
                received += 1;
            }
        }
        for sender in senders {
            sender.join().expect("a sender");
        }
        assert_eq!(next, [FRAMES; SENDERS as usize]);
    }

    /// A sender that finds another one writing (here stuck on a full
    /// socket) does not wait for it: its frame is queued, and the writer
    /// sends it after its own once the data node reads again.
    #[test]
    fn a_sender_behind_a_stuck_write_queues_and_the_writer_sends_its_frame() {
        let (cluster, _management) = offline_cluster(&[2]);
        let mut server = attach_link(&cluster, 2);
        let link = cluster.link(2).expect("the attached link");
        let frame_of = |sender: u16, bytes: usize| {
            let mut frame = Vec::new();
            encode_frame(
                &[Message::Refused {
                    error: protocol::ErrorReply {
                        ndb_code: sender,
                        mysql_code: 0,
                        message: "x".repeat(bytes),
                    },
                }],
                &mut frame,
            );
            frame
        };
        // Far more than the socket's buffers hold: the write blocks until
        // the server reads.
        let large = frame_of(1, 8 << 20);
        let writer = {
            let link = Arc::clone(&link);
            std::thread::spawn(move || link.send(&large, Instant::now() + Duration::from_secs(20)))
        };
        let writing_started = Instant::now() + Duration::from_secs(5);
        while !link.outgoing.lock().expect("outgoing").writing {
            assert!(
                Instant::now() < writing_started,
                "the first send never wrote"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let queued_at = Instant::now();
        link.send(&frame_of(2, 10), Instant::now() + Duration::from_secs(20))
            .expect("a queued send");
        assert!(
            queued_at.elapsed() < Duration::from_secs(1),
            "the second sender waited for the first one's write"
        );
        let mut decoder = FrameDecoder::new();
        let mut messages = Vec::new();
        let mut buffer = vec![0u8; 1 << 16];
        let deadline = Instant::now() + Duration::from_secs(5);
        server
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        while messages.len() < 2 && Instant::now() < deadline {
            match server.read(&mut buffer) {
                Ok(0) => panic!("the link closed"),
                Ok(read) => {
                    decoder.push(&buffer[..read]);
                    while decoder.next_frame(&mut messages).expect("a whole frame") {}
                }
                Err(_) => {}
            }
        }
        writer.join().expect("the writer").expect("the large send");
        let codes: Vec<u16> = messages
            .iter()
            .map(|message| match message {
                Message::Refused { error } => error.ndb_code,
                other => panic!("not a sent frame: {other:?}"),
            })
            .collect();
        assert_eq!(codes, [1, 2]);
    }

    fn read_messages(server: &mut TcpStream, count: usize) -> Vec<Message> {
        server
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut decoder = FrameDecoder::new();
        let mut messages = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut buffer = [0u8; 4096];
        while messages.len() < count && Instant::now() < deadline {
            if let Ok(read) = server.read(&mut buffer) {
                decoder.push(&buffer[..read]);
                while decoder.next_frame(&mut messages).expect("a good frame") {}
            }
        }
        messages
    }

    fn execute_of(message: &Message) -> (u64, bool, ExecuteEnd) {
        match message {
            Message::Execute(execute) => (execute.transaction, execute.start, execute.end),
            other => panic!("expected an Execute, got {other:?}"),
        }
    }

    /// What a session leaves open is rolled back: a started transaction
    /// dropped by its owner, and one in flight when its session is dropped.
    #[test]
    fn dropped_open_transactions_are_rolled_back() {
        let (cluster, _management) = offline_cluster(&[2]);
        let mut server = attach_link(&cluster, 2);
        let mut session = cluster.session().expect("session");
        let held = session.transaction_at(2);
        let held_id = held.id();
        session
            .prepare_async(held, ExecuteEnd::NoCommit)
            .expect("prepare");
        assert!(
            session
                .send_poll(1, Duration::ZERO)
                .expect("send")
                .is_empty()
        );
        let sent = read_messages(&mut server, 1);
        assert_eq!(sent.len(), 1);
        assert_eq!(execute_of(&sent[0]), (held_id, true, ExecuteEnd::NoCommit));
        cluster.inner.shared.deliver(
            (held_id >> SESSION_SHIFT) as usize,
            Delivery::Message(Message::Executed(Executed {
                transaction: held_id,
                state: TransactionState::Open,
                error: None,
                results: Vec::new(),
                hops: 0,
                acknowledge: false,
                epoch: 0,
            })),
        );
        let mut answered = session.send_poll(1, Duration::from_secs(5)).expect("poll");
        assert_eq!(answered.len(), 1);
        let held = answered.pop().expect("one");
        assert_eq!(held.status(), crate::session::Status::Open);
        drop(held);
        let sent = read_messages(&mut server, 1);
        assert_eq!(sent.len(), 1, "no rollback for a dropped open transaction");
        assert_eq!(execute_of(&sent[0]), (held_id, false, ExecuteEnd::Rollback));

        let in_flight = session.transaction_at(2);
        let in_flight_id = in_flight.id();
        session
            .prepare_async(in_flight, ExecuteEnd::Commit)
            .expect("prepare");
        assert!(
            session
                .send_poll(1, Duration::ZERO)
                .expect("send")
                .is_empty()
        );
        drop(session);
        let sent = read_messages(&mut server, 2);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(
            execute_of(&sent[0]),
            (in_flight_id, true, ExecuteEnd::Commit)
        );
        assert_eq!(
            execute_of(&sent[1]),
            (in_flight_id, false, ExecuteEnd::Rollback)
        );
    }

    /// A one-column table known to no cluster (sends only).
    fn test_table() -> TableRoute {
        let definition = schema::TableDef::new(
            "t",
            vec![schema::ColumnDef::new(
                "id",
                schema::ColumnType::Int { unsigned: false },
                false,
            )],
            vec![0],
            vec![],
        )
        .expect("a table");
        let mut encoded = Vec::new();
        schema::table_codec::encode_table(&definition, &TableOptions::default(), &mut encoded);
        TableRoute::from_entry(&protocol::TableEntry {
            id: 1,
            name: "t".into(),
            schema_version: 1,
            definition: encoded,
            partition_count: 1,
            fully_replicated: false,
            read_backup: false,
            fragments: vec![protocol::Fragment {
                partition: 0,
                node_group: 0,
                replicas: vec![2],
                ldm: 0,
            }],
        })
        .expect("a route")
    }

    /// A data node that stops reading must not hold up its client for
    /// ever: a call given a deadline returns by it, and so does another
    /// session's call that waits to send to the same data node.
    #[test]
    fn a_stuck_data_node_does_not_outlast_a_deadline() {
        use crate::session::Status;
        let (cluster, _management) = offline_cluster(&[2]);
        // The server end never reads: the socket's buffers fill up.
        let _server = attach_link(&cluster, 2);
        let table = Arc::new(test_table());
        let (done, finished) = std::sync::mpsc::channel();
        for session_number in 0..2 {
            let cluster = cluster.clone();
            let table = Arc::clone(&table);
            let done = done.clone();
            std::thread::spawn(move || {
                let mut session = cluster.session().expect("session");
                session.set_deadline(Some(Instant::now() + Duration::from_millis(500)));
                let mut transaction = session.transaction_at(2);
                transaction
                    .define_encoded(
                        &table,
                        protocol::OperationKind::Insert,
                        Vec::new(),
                        vec![7; 16 << 20],
                        Vec::new(),
                    )
                    .expect("define");
                let started = Instant::now();
                let outcome = session.execute(&mut transaction, ExecuteEnd::Commit);
                let _ = done.send((session_number, started.elapsed(), outcome.err()));
                assert_ne!(transaction.status(), Status::Committed);
            });
        }
        for _ in 0..2 {
            let (session, took, error) = finished
                .recv_timeout(Duration::from_secs(10))
                .expect("an execute to a stuck data node never returned");
            let error = error.expect("an error, not a success");
            assert!(
                took < Duration::from_secs(3),
                "session {session} took {took:?}"
            );
            // The session whose frame went to the socket hears of data
            // node 2; one whose frame was queued behind it may instead
            // hear that no answer came by its deadline.
            assert!(
                error.message.contains("data node 2")
                    || error.ndb_code == crate::error::REQUEST_TIMEOUT_CODE,
                "{error}"
            );
        }
    }

    /// A batch larger than a frame may carry is refused with an error, in
    /// the synchronous and the asynchronous interface; the process goes on.
    #[test]
    fn a_batch_too_large_for_a_frame_is_an_error_not_a_crash() {
        let (cluster, _management) = offline_cluster(&[2]);
        let _server = attach_link(&cluster, 2);
        let table = Arc::new(test_table());
        let mut session = cluster.session().expect("session");
        let huge = || vec![7; protocol::frame::FRAME_PAYLOAD_BYTES_MAX + 1];
        let mut transaction = session.transaction_at(2);
        transaction
            .define_encoded(
                &table,
                protocol::OperationKind::Insert,
                Vec::new(),
                huge(),
                Vec::new(),
            )
            .expect("define");
        let error = session
            .execute(&mut transaction, ExecuteEnd::Commit)
            .expect_err("too large");
        assert_eq!(error.ndb_code, crate::error::API_USAGE, "{error}");
        let mut transaction = session.transaction_at(2);
        transaction
            .define_encoded(
                &table,
                protocol::OperationKind::Insert,
                Vec::new(),
                huge(),
                Vec::new(),
            )
            .expect("define");
        let error = session
            .prepare_async(transaction, ExecuteEnd::Commit)
            .expect_err("too large");
        assert_eq!(error.ndb_code, crate::error::API_USAGE, "{error}");
    }

    /// Another thread interrupts a call that waits for the cluster (the
    /// SQL node's KILL QUERY): it returns at once with MySQL's 1317, and
    /// its transaction is rolled back at the coordinator.
    #[test]
    fn an_interrupt_from_another_thread_ends_a_waiting_call() {
        let (cluster, _management) = offline_cluster(&[2]);
        // The data node takes the request and never answers.
        let mut server = attach_link(&cluster, 2);
        let mut session = cluster.session().expect("session");
        let interrupter = session.interrupter();
        let (done, finished) = std::sync::mpsc::channel();
        let table = Arc::new(test_table());
        std::thread::spawn(move || {
            let mut transaction = session.transaction_at(2);
            transaction
                .define_encoded(
                    &table,
                    protocol::OperationKind::Insert,
                    Vec::new(),
                    Vec::new(),
                    Vec::new(),
                )
                .expect("define");
            let started = Instant::now();
            let outcome = session.execute(&mut transaction, ExecuteEnd::Commit);
            let _ = done.send((started.elapsed(), outcome.err(), transaction.status()));
        });
        std::thread::sleep(Duration::from_millis(200));
        interrupter.interrupt();
        let (took, error, status) = finished
            .recv_timeout(Duration::from_secs(5))
            .expect("the interrupted call did not return");
        let error = error.expect("an error, not a success");
        assert_eq!(error.mysql_code, 1317, "{error}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        assert_eq!(status, crate::session::Status::Aborted);
        let sent = read_messages(&mut server, 2);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(execute_of(&sent[1]).2, ExecuteEnd::Rollback);
    }

    /// A commit closes the transaction's open scans on the data nodes; the
    /// client knows it committed, so a later `next_row` on such a scan is
    /// NDB's 4120 at once, and no ScanNext goes to the data node (which
    /// would only answer that the scan is not open).
    #[test]
    fn a_scan_used_after_its_transaction_committed_is_scan_already_complete() {
        let (cluster, _management) = offline_cluster(&[2]);
        let mut server = attach_link(&cluster, 2);
        let table = Arc::new(test_table());
        let mut session = cluster.session().expect("session");
        session.set_timeout(Duration::from_secs(2));
        let mut transaction = session.transaction_at(2);
        let id = transaction.id();
        let scan = session
            .scan(
                &mut transaction,
                &table,
                &crate::session::ScanOptions::default(),
            )
            .expect("scan");
        let sent = read_messages(&mut server, 1);
        assert!(
            matches!(sent.as_slice(), [Message::ScanOpen(_)]),
            "{sent:?}"
        );
        let mailbox = (id >> SESSION_SHIFT) as usize;
        // The fragment's first batch is empty and not its last: the next
        // row would take a ScanNext.
        cluster.inner.shared.deliver(
            mailbox,
            Delivery::Message(Message::ScanRows(protocol::ScanRows {
                transaction: id,
                scan: 1,
                fragment: 0,
                rows: 0,
                data: Vec::new(),
                finished: false,
                error: None,
            })),
        );
        cluster.inner.shared.deliver(
            mailbox,
            Delivery::Message(Message::Executed(Executed {
                transaction: id,
                state: TransactionState::Committed,
                error: None,
                results: Vec::new(),
                hops: 0,
                acknowledge: false,
                epoch: 0,
            })),
        );
        session
            .execute(&mut transaction, ExecuteEnd::Commit)
            .expect("commit");
        let sent = read_messages(&mut server, 1);
        assert_eq!(execute_of(&sent[0]).2, ExecuteEnd::Commit);
        let started = Instant::now();
        let error = session.next_row(&scan).expect_err("the scan is closed");
        assert!(started.elapsed() < Duration::from_secs(1), "{error}");
        assert_eq!(error.ndb_code, 4120, "{error}");
        assert!(error.message.contains("committed"), "{error}");
        let error = session.next_row(&scan).expect_err("still closed");
        assert_eq!(error.ndb_code, 4120, "{error}");
        let sent = read_messages(&mut server, 1);
        assert!(sent.is_empty(), "sent after the commit: {sent:?}");
        session.close_scan(scan).expect("closing a closed scan");
    }

    /// A commit whose coordinator's connection fails waits for what the
    /// takeover says: the committed answer from another data node is a
    /// commit; the takeover announced done (for the coordinator's
    /// incarnation or a later one) without it is an abort (4010); an
    /// announcement for an earlier incarnation says nothing, and without
    /// news by the deadline the result is unknown. Each is what arrives
    /// in the session's mailbox after the commit went out.
    #[test]
    fn a_commit_whose_coordinator_failed_takes_the_takeovers_outcome() {
        use crate::error::ErrorClass;
        let (cluster, _management) = offline_cluster(&[2]);
        let _server = attach_link(&cluster, 2);
        let table = Arc::new(test_table());
        let mut session = cluster.session().expect("session");
        let committed = |id: u64| {
            Delivery::Message(Message::Executed(Executed {
                transaction: id,
                state: TransactionState::Committed,
                error: None,
                results: Vec::new(),
                hops: 0,
                acknowledge: false,
                epoch: 0,
            }))
        };
        let done = |incarnation: u64| Delivery::TakeoverDone {
            node: 2,
            incarnation,
        };
        for case in 0..3 {
            session.set_timeout(Duration::from_secs(1));
            let mut transaction = session.transaction_at(2);
            let id = transaction.id();
            transaction
                .insert(&table, &[(0, schema::Value::Int(1))])
                .expect("insert");
            let mailbox = (id >> SESSION_SHIFT) as usize;
            let shared = &cluster.inner.shared;
            match case {
                0 => {
                    shared.deliver(mailbox, Delivery::NodeDown(2));
                    shared.deliver(mailbox, committed(id));
                }
                1 => {
                    shared.deliver(mailbox, done(0));
                    shared.deliver(mailbox, Delivery::NodeDown(2));
                    shared.deliver(mailbox, done(1));
                }
                _ => {
                    shared.deliver(mailbox, done(0));
                    shared.deliver(mailbox, Delivery::NodeDown(2));
                }
            }
            let started = Instant::now();
            let result = session.execute(&mut transaction, ExecuteEnd::Commit);
            match case {
                0 => result.expect("committed by the takeover"),
                1 => {
                    let error = result.expect_err("aborted by the takeover");
                    assert_eq!(error.ndb_code, 4010, "{error}");
                    assert!(error.message.contains("takeover"), "{error}");
                    assert!(started.elapsed() < Duration::from_millis(500));
                }
                _ => {
                    let error = result.expect_err("no news");
                    assert_eq!(error.class(), ErrorClass::UnknownResult, "{error}");
                    assert!(started.elapsed() >= Duration::from_millis(900));
                }
            }
        }
    }

    /// The asynchronous API waits for the takeover's outcome the same way:
    /// after the coordinator's connection failed, a commit answered by
    /// another data node comes back committed, and the rest come back
    /// aborted (4010) once the takeover is announced; until then they stay
    /// in flight.
    #[test]
    fn asynchronous_commits_whose_coordinator_failed_take_the_takeovers_outcome() {
        use crate::session::Status;
        let (cluster, _management) = offline_cluster(&[2]);
        let mut server = attach_link(&cluster, 2);
        let mut session = cluster.session().expect("session");
        let mut ids = Vec::new();
        for _ in 0..2 {
            let transaction = session.transaction_at(2);
            ids.push(transaction.id());
            session
                .prepare_async(transaction, ExecuteEnd::Commit)
                .expect("prepare");
        }
        assert!(
            session
                .send_poll(0, Duration::ZERO)
                .expect("send")
                .is_empty()
        );
        assert_eq!(read_messages(&mut server, 2).len(), 2);
        let mailbox = (ids[0] >> SESSION_SHIFT) as usize;
        let shared = &cluster.inner.shared;
        shared.deliver(mailbox, Delivery::NodeDown(2));
        shared.deliver(
            mailbox,
            Delivery::Message(Message::Executed(Executed {
                transaction: ids[0],
                state: TransactionState::Committed,
                error: None,
                results: Vec::new(),
                hops: 0,
                acknowledge: false,
                epoch: 0,
            })),
        );
        let answered = session
            .send_poll(2, Duration::from_millis(300))
            .expect("poll");
        assert_eq!(answered.len(), 1);
        assert_eq!(answered[0].id(), ids[0]);
        assert_eq!(answered[0].status(), Status::Committed);
        assert_eq!(session.in_flight(), 1, "the other waits for the takeover");
        shared.deliver(
            mailbox,
            Delivery::TakeoverDone {
                node: 2,
                incarnation: 1,
            },
        );
        let answered = session.send_poll(1, Duration::from_secs(1)).expect("poll");
        assert_eq!(answered.len(), 1);
        assert_eq!(answered[0].id(), ids[1]);
        assert_eq!(answered[0].status(), Status::Aborted);
        let error = answered[0].error().expect("an error");
        assert_eq!(error.ndb_code, 4010, "{error}");
        assert_eq!(session.in_flight(), 0);
    }

    /// A fake data node 2 that completes the handshake on every connection
    /// (under the offline cluster's all-zero secret) and then refuses it,
    /// as `shoal datad` does when its connection slots are taken; returns
    /// its address.
    fn refusing_data_node(before_proof: bool) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let secret = [0u8; 32];
                let mut bytes = Vec::new();
                encode_frame(
                    &[Message::Hello {
                        node: 2,
                        incarnation: 1,
                        role: NodeRole::Data,
                        nonce: [9; 16],
                    }],
                    &mut bytes,
                );
                let _ = stream.write_all(&bytes);
                let received = read_messages(&mut stream, 1);
                let Some(Message::Hello { nonce, .. }) = received.first().cloned() else {
                    continue;
                };
                if before_proof {
                    // Refused as soon as it said Hello, before any proof.
                    bytes.clear();
                    encode_frame(
                        &[Message::Refused {
                            error: protocol::ErrorReply {
                                ndb_code: 5019,
                                mysql_code: 1040,
                                message: "data node 2 is full".into(),
                            },
                        }],
                        &mut bytes,
                    );
                    let _ = stream.write_all(&bytes);
                    let _ = stream.shutdown(Shutdown::Both);
                    continue;
                }
                // The proof of this side's own Hello, to the client's nonce.
                let proof =
                    protocol::identity::hello_proof(&secret, false, &nonce, 2, 1, NodeRole::Data);
                let refusal = Message::Refused {
                    error: protocol::ErrorReply {
                        ndb_code: 5019,
                        mysql_code: 1040,
                        message: "data node 2 already serves 3 identified connections".into(),
                    },
                };
                bytes.clear();
                encode_frame(&[Message::HelloProof { proof }], &mut bytes);
                let _ = stream.write_all(&bytes);
                // The refusal follows the client's proof, as a data node
                // counts its identified connections only once proven.
                let _ = read_messages(&mut stream, 1);
                bytes.clear();
                encode_frame(&[refusal], &mut bytes);
                let _ = stream.write_all(&bytes);
                let _ = stream.shutdown(Shutdown::Both);
            }
        });
        address
    }

    /// A data node that refuses this API node's connection is reported
    /// with its refusal (codes and message, naming the node) to a
    /// transaction that needs it and by the wait for a ready cluster, not
    /// as a generic "not connected".
    #[test]
    fn a_data_node_refusal_reaches_the_callers() {
        refusal_reaches_the_callers(false);
    }

    /// The same when the refusal comes before the handshake is over.
    #[test]
    fn a_data_node_refusal_during_the_handshake_reaches_the_callers() {
        refusal_reaches_the_callers(true);
    }

    fn refusal_reaches_the_callers(before_proof: bool) {
        let (cluster, _management) = offline_cluster(&[2]);
        cluster
            .inner
            .addresses
            .lock()
            .expect("addresses")
            .insert(2, refusing_data_node(before_proof));
        cluster.connect_data_nodes();
        let closed_by = Instant::now() + Duration::from_secs(5);
        while cluster.link(2).is_some() {
            assert!(Instant::now() < closed_by, "the refused link stayed up");
            std::thread::sleep(Duration::from_millis(10));
        }
        let table = Arc::new(test_table());
        let mut session = cluster.session().expect("session");
        let mut transaction = session.transaction_at(2);
        transaction
            .define_encoded(
                &table,
                protocol::OperationKind::Insert,
                Vec::new(),
                Vec::new(),
                Vec::new(),
            )
            .expect("define");
        // Without a commit in flight the refusal's codes hold whether the
        // reconnection this call makes is refused before or after it sends.
        let error = session
            .execute(&mut transaction, ExecuteEnd::NoCommit)
            .expect_err("a refused data node");
        assert_eq!((error.ndb_code, error.mysql_code), (5019, 1040), "{error}");
        assert!(error.message.contains("data node 2"), "{error}");
        assert!(error.message.contains("refused"), "{error}");
        assert!(error.is_temporary(), "{error}");

        let error = cluster
            .wait_until_ready(&[vec![2]], Instant::now() + Duration::from_millis(300))
            .expect_err("no data node accepts");
        assert_eq!((error.ndb_code, error.mysql_code), (5019, 1040), "{error}");
        assert!(error.message.contains("data node 2"), "{error}");
    }

    /// A socket that still carries a read timeout (as the handshake leaves
    /// it) must not end the receiving thread: an idle link stays up.
    #[test]
    fn an_idle_link_outlives_a_read_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        client
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let (link, mailbox) = receiving(client);
        std::thread::sleep(Duration::from_millis(300));
        assert!(link.alive.load(Ordering::Acquire), "the idle link died");
        let mut bytes = Vec::new();
        encode_frame(
            &[Message::Executed(Executed {
                transaction: 1 << SESSION_SHIFT | 7,
                state: TransactionState::Committed,
                error: None,
                results: Vec::new(),
                hops: 0,
                acknowledge: false,
                epoch: 0,
            })],
            &mut bytes,
        );
        server.write_all(&bytes).expect("write");
        let mut received = VecDeque::new();
        assert!(mailbox.take(Instant::now() + Duration::from_secs(5), &mut received));
        assert!(
            matches!(received.front(), Some(Delivery::Message(Message::Executed(e))) if e.transaction & 0xFF == 7),
            "got {received:?}"
        );
        assert!(link.alive.load(Ordering::Acquire));
    }
}
