//! Worker threads that each serve many client connections.
//!
//! Each connection is a task: a coroutine (`corosensei`) running the same
//! synchronous code a connection thread runs (`connection::serve`). Where
//! that code would block — reading the client's socket, writing to it, or
//! waiting in its native-API session for the cluster's reply
//! (`shoal_client::task`) — the task suspends and its worker runs another.
//! The worker sleeps in `epoll_wait` (`mio`) only when none of its tasks
//! can run.
//!
//! Why: with a thread per connection, every statement put its thread to
//! sleep twice (waiting for the client, then for the cluster) and a wake
//! is a futex call and a context switch. With a worker per core, a reply
//! from a data node wakes its task by a push onto the worker's queue, and
//! the worker's eventfd is written only while it sleeps.
//!
//! When the cluster connections are driven (`Cluster::connect_driven`),
//! the workers also read the data nodes' sockets: each watches some of
//! them in its `epoll` (`watched_links`) and reads them when readable, so
//! a reply reaches its task without waking a receiving thread first. The
//! sessions of a worker's tasks use the connection `worker % pool size`
//! (`native_session`): with a connection per worker, a worker reads the
//! replies of its own tasks only, and its wakes cost no system call.
//!
//! A task is woken without cause at times (an fd event for a wait on the
//! mailbox, a stale wake after a timeout); every wait it makes is a loop
//! that checks what it waits for, so that is harmless.

use std::collections::{BinaryHeap, VecDeque};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use shoal_client::{ClientError, ClusterPool, LinkReceiver, Session};

use crate::connection::{self, Shared};

/// A task's stack: as much as a connection thread's (Rust's default 2 MiB
/// for spawned threads). Only the pages a task touches take memory.
const TASK_STACK_BYTES: usize = 2 << 20;
/// The token of the worker's own waker; tasks' tokens are their slots.
const WAKE_TOKEN: Token = Token(usize::MAX);
/// Readiness events taken per `epoll_wait`.
const EVENTS_PER_POLL: usize = 256;
/// Tokens of the data-node sockets a worker watches, downwards from just
/// below `WAKE_TOKEN` (a worker watches at most one per data node of its
/// connection, far fewer than this).
const LINK_TOKENS: usize = 1 << 16;

fn link_token(index: usize) -> Token {
    assert!(index < LINK_TOKENS, "link token {index}");
    Token(usize::MAX - 1 - index)
}

fn link_index(token: Token) -> Option<usize> {
    (usize::MAX - 1)
        .checked_sub(token.0)
        .filter(|index| *index < LINK_TOKENS)
}

thread_local! {
    /// The index of the worker running on this thread.
    static WORKER_INDEX: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// A native-API session for a connection served on this thread: on a
/// worker, on the connection whose sockets that worker reads (see the
/// module's notes); elsewhere, the pool's next.
pub(crate) fn native_session(pool: &ClusterPool) -> Result<Session, ClientError> {
    match WORKER_INDEX.with(std::cell::Cell::get) {
        Some(index) => pool.session_on(index),
        None => pool.session(),
    }
}

/// Whether worker `worker` of `workers` watches the socket of the data
/// node at `node_index` (in the connection's order) on its connection
/// (`worker % pool`): the workers that share a connection take its data
/// nodes in turn, so each socket has one watcher.
fn watches(worker: usize, workers: usize, pool: usize, node_index: usize) -> bool {
    let connection = worker % pool;
    let sharing = (connection..workers).step_by(pool).count();
    node_index % sharing == worker / pool
}

/// What a suspended task waits for. Socket readiness resumes only a task
/// that waits for that readiness, so the edges the kernel reports while a
/// task waits for the cluster (the socket is writable again after every
/// response) do not resume it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitFor {
    /// A wake (`std::task::Waker`) or the deadline.
    Wake,
    /// Its client socket to be readable (or closed).
    Readable,
    /// Its client socket to take more bytes (or be closed).
    Writable,
}

thread_local! {
    /// What the next suspension of the running task waits for; `Wake`
    /// unless `wait_for_socket` says otherwise.
    static NEXT_WAIT: std::cell::Cell<WaitFor> = const { std::cell::Cell::new(WaitFor::Wake) };
    /// The running task's `Entry::readable_seen`, lent to it while it runs.
    static READABLE_SEEN: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether the running task's client socket may have input it has not
/// read: true unless no readiness was reported for the socket since the
/// last call. Clears the mark, so a caller that then finds the socket
/// empty (a read that comes short) waits for the next report
/// (`wait_for_socket`) instead of reading again.
///
/// Why: the epoll set is edge-triggered, and every readiness edge of a
/// task's socket, also one that comes while the task waits for the
/// cluster, sets the mark. A connection that answered a statement and
/// read its socket empty before would otherwise read it again for the
/// next statement and, on a busy server, almost always find nothing
/// (measured: 2.36 receive calls per sysbench point select without this,
/// 1.90 with it). Outside a task (a connection thread) the answer is
/// always true.
pub(crate) fn take_readable() -> bool {
    if !shoal_client::task::in_task() {
        return true;
    }
    READABLE_SEEN.with(|seen| seen.replace(false))
}

/// Suspends the running task until its socket is ready as `wait_for` says
/// or `deadline`; false, at once, when the thread runs no task.
pub(crate) fn wait_for_socket(wait_for: WaitFor, deadline: Instant) -> bool {
    NEXT_WAIT.with(|next| next.set(wait_for));
    let suspended = shoal_client::task::suspend(deadline);
    NEXT_WAIT.with(|next| next.set(WaitFor::Wake));
    suspended
}

/// A task's slot and which occupant of the slot it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct TaskId {
    slot: usize,
    generation: u64,
}

/// What other threads hand a worker.
#[derive(Default)]
struct Inbox {
    connections: Vec<(TcpStream, SocketAddr)>,
    woken: Vec<TaskId>,
}

/// The part of a worker other threads reach.
struct WorkerShared {
    inbox: Mutex<Inbox>,
    /// The worker is in (or about to enter) `epoll_wait`: whoever fills
    /// the inbox then must write its eventfd.
    sleeping: AtomicBool,
    waker: mio::Waker,
}

impl WorkerShared {
    fn wake_worker(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            // A failed write leaves the worker to its poll timeout; the
            // eventfd of a live worker does not fail.
            let _ = self.waker.wake();
        }
    }
}

/// Wakes one task (its `std::task::Waker`).
struct TaskWake {
    worker: Arc<WorkerShared>,
    id: TaskId,
}

impl std::task::Wake for TaskWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.worker
            .inbox
            .lock()
            .expect("worker inbox")
            .woken
            .push(self.id);
        self.worker.wake_worker();
    }
}

/// The running task as `shoal_client::task` sees it.
struct RunningTask<'y> {
    yielder: &'y Yielder<(), (Option<Instant>, WaitFor)>,
    waker: std::task::Waker,
}

impl shoal_client::task::Task for RunningTask<'_> {
    fn waker(&self) -> std::task::Waker {
        self.waker.clone()
    }

    fn suspend(&self, deadline: Option<Instant>) {
        shoal_client::task::leave();
        let wait_for = NEXT_WAIT.with(|next| next.replace(WaitFor::Wake));
        // The literals of the statement this task runs stay with it: the
        // tasks run meanwhile set and clear the thread's own.
        let mut literals = Vec::new();
        sql::statement_cache::swap_literals(&mut literals);
        self.yielder.suspend((deadline, wait_for));
        sql::statement_cache::swap_literals(&mut literals);
        debug_assert!(
            literals.is_empty(),
            "a suspended task left its statement's literals on the thread"
        );
        // SAFETY: `self` lives on this task's stack until the task ends,
        // and the task leaves before it ends (see `spawn_task`).
        unsafe { shoal_client::task::enter(self) };
    }
}

struct Entry {
    coroutine: Coroutine<(), (Option<Instant>, WaitFor), (), DefaultStack>,
    generation: u64,
    /// Suspended and not yet queued to run.
    waiting: bool,
    /// What it waits for, while `waiting`.
    wait_for: WaitFor,
    /// Readiness (or a close) was reported for its socket since the task
    /// last asked (`take_readable`); true at first, when nothing is known.
    readable_seen: bool,
    /// The earliest deadline in `Worker::timers` for this task. A later
    /// deadline is not pushed while it is there: when it fires the task
    /// runs, finds nothing, and waits again, pushing its deadline then. So
    /// the heap holds about one timer per task, not one per wait.
    timer: Option<Instant>,
}

/// The SQL node's workers; connections are dealt to them in turn.
pub struct Workers {
    workers: Vec<Arc<WorkerShared>>,
    next: AtomicUsize,
}

impl Workers {
    /// Starts `count` workers serving connections with `shared`, each
    /// polling for `spin` before it sleeps.
    pub fn start(
        count: usize,
        spin: std::time::Duration,
        shared: Arc<Shared>,
    ) -> Result<Workers, String> {
        let mut workers = Vec::with_capacity(count);
        for index in 0..count {
            let poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
            let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)
                .map_err(|e| format!("eventfd: {e}"))?;
            let worker = Arc::new(WorkerShared {
                inbox: Mutex::new(Inbox::default()),
                sleeping: AtomicBool::new(false),
                waker,
            });
            let shared = Arc::clone(&shared);
            let own = Arc::clone(&worker);
            std::thread::Builder::new()
                .name(format!("sql-worker-{index}"))
                .spawn(move || {
                    WORKER_INDEX.with(|current| current.set(Some(index)));
                    Worker::new(own, index, count, spin, poll, shared).run()
                })
                .map_err(|e| format!("cannot start a worker thread: {e}"))?;
            workers.push(worker);
        }
        Ok(Workers {
            workers,
            next: AtomicUsize::new(0),
        })
    }

    /// Hands a new connection to the next worker.
    pub fn assign(&self, stream: TcpStream, peer: SocketAddr) {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.workers.len();
        let worker = &self.workers[index];
        worker
            .inbox
            .lock()
            .expect("worker inbox")
            .connections
            .push((stream, peer));
        worker.wake_worker();
    }
}

/// What a worker's spin found.
enum Spun {
    Events,
    Inbox,
    Nothing,
}

struct Worker {
    own: Arc<WorkerShared>,
    /// How long the worker polls before it sleeps (`spin`).
    spin_for: std::time::Duration,
    index: usize,
    workers: usize,
    poll: Poll,
    shared: Arc<Shared>,
    /// The data-node sockets this worker watches (by `link_token`), and
    /// its connection's `links_opened` when they were taken.
    links: Vec<LinkReceiver>,
    links_seen: Option<u64>,
    tasks: Vec<Option<Entry>>,
    free: Vec<usize>,
    generation: u64,
    ready: VecDeque<usize>,
    timers: BinaryHeap<std::cmp::Reverse<(Instant, TaskId)>>,
}

impl Worker {
    fn new(
        own: Arc<WorkerShared>,
        index: usize,
        workers: usize,
        spin: std::time::Duration,
        poll: Poll,
        shared: Arc<Shared>,
    ) -> Worker {
        Worker {
            own,
            spin_for: spin,
            index,
            workers,
            poll,
            shared,
            links: Vec::new(),
            links_seen: None,
            tasks: Vec::new(),
            free: Vec::new(),
            generation: 0,
            ready: VecDeque::new(),
            timers: BinaryHeap::new(),
        }
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS_PER_POLL);
        loop {
            self.take_inbox();
            while let Some(slot) = self.ready.pop_front() {
                self.resume(slot);
                // Wakes that came in while tasks ran are taken between
                // tasks, so a woken task does not wait for a poll.
                if self.ready.is_empty() {
                    self.take_inbox();
                }
            }
            self.watch_links();
            let polled = match self.spin(&mut events) {
                Spun::Events => Ok(()),
                Spun::Inbox => continue,
                Spun::Nothing => {
                    self.own.sleeping.store(true, Ordering::SeqCst);
                    if self.inbox_has_work() || !self.links_prepare_to_sleep() {
                        self.own.sleeping.store(false, Ordering::SeqCst);
                        self.links_awake();
                        continue;
                    }
                    let timeout = self.timers.peek().map(|std::cmp::Reverse((at, _))| {
                        at.saturating_duration_since(Instant::now())
                    });
                    let polled = self.poll.poll(&mut events, timeout);
                    self.own.sleeping.store(false, Ordering::SeqCst);
                    self.links_awake();
                    polled
                }
            };
            if let Err(e) = polled
                && e.kind() != std::io::ErrorKind::Interrupted
            {
                eprintln!("sqld: worker poll failed: {e}");
            }
            for event in events.iter() {
                let slot = event.token().0;
                if event.token() == WAKE_TOKEN {
                    continue;
                }
                if let Some(index) = link_index(event.token()) {
                    // Replies wake their tasks through the inbox, which
                    // the loop takes next.
                    if let Some(link) = self.links.get(index) {
                        link.pump();
                    }
                    continue;
                }
                let closed = event.is_error() || event.is_read_closed() || event.is_write_closed();
                let wanted = match self.tasks.get_mut(slot) {
                    Some(Some(entry)) => {
                        entry.readable_seen |= event.is_readable() || closed;
                        match entry.wait_for {
                            WaitFor::Wake => false,
                            WaitFor::Readable => event.is_readable() || closed,
                            WaitFor::Writable => event.is_writable() || closed,
                        }
                    }
                    _ => false,
                };
                if wanted {
                    self.make_ready(slot, None);
                }
            }
            let now = Instant::now();
            while let Some(std::cmp::Reverse((at, id))) = self.timers.peek().copied() {
                if at > now {
                    break;
                }
                self.timers.pop();
                if let Some(Some(entry)) = self.tasks.get_mut(id.slot)
                    && entry.generation == id.generation
                    && entry.timer == Some(at)
                {
                    entry.timer = None;
                    self.make_ready(id.slot, Some(id.generation));
                }
            }
        }
    }

    /// Watches the sockets of the data nodes this worker reads, again
    /// whenever its connection opened a link since it last looked.
    fn watch_links(&mut self) {
        let pool = &self.shared.server.pool;
        let connections = pool.connections();
        let cluster = &connections[self.index % connections.len()];
        if !cluster.is_driven() {
            return;
        }
        let opened = cluster.links_opened();
        if self.links_seen == Some(opened) {
            return;
        }
        self.links_seen = Some(opened);
        for link in self.links.drain(..) {
            // The link (and with it its socket) is alive until dropped
            // here, so the descriptor is still the one registered.
            let _ = self.poll.registry().deregister(&mut SourceFd(&link.fd()));
            // Unwatched, its data node rings for every write again.
            if !link.prepare_to_sleep() {
                link.pump();
            }
        }
        let nodes: Vec<_> = cluster.data_nodes().iter().map(|(node, _)| *node).collect();
        for link in cluster.link_receivers() {
            let Some(node_index) = nodes.iter().position(|node| *node == link.node()) else {
                continue;
            };
            if !watches(self.index, self.workers, connections.len(), node_index) {
                continue;
            }
            let token = link_token(self.links.len());
            match self.poll.registry().register(
                &mut SourceFd(&link.fd()),
                token,
                Interest::READABLE,
            ) {
                Ok(()) => {
                    // What came before the registration is read now.
                    link.pump();
                    self.links.push(link);
                }
                // Its keeper and blocked waits still read it, late.
                Err(e) => eprintln!(
                    "sqld: worker {} cannot watch data node {}: {e}",
                    self.index,
                    link.node()
                ),
            }
        }
    }

    /// Polls without sleeping, yielding the core between polls, for up to
    /// `spin` (never past the next timer): a worker that sleeps is woken
    /// by the next reply or request, and on a machine with fewer cores
    /// than busy threads that wake-up was the biggest part of a query's
    /// cost (see `datad`'s `SchedulerSpinTimer`).
    fn spin(&mut self, events: &mut Events) -> Spun {
        if self.spin_for.is_zero() {
            return Spun::Nothing;
        }
        let now = Instant::now();
        let until = match self.timers.peek() {
            Some(std::cmp::Reverse((at, _))) => (*at).min(now + self.spin_for),
            None => now + self.spin_for,
        };
        loop {
            match self.poll.poll(events, Some(std::time::Duration::ZERO)) {
                Ok(()) if !events.is_empty() => return Spun::Events,
                _ => {}
            }
            // A link over shared memory raises no event for its bytes
            // while this worker is awake: its ring is looked at here.
            for link in &self.links {
                if link.ring_waiting() {
                    link.pump();
                }
            }
            if self.inbox_has_work() {
                return Spun::Inbox;
            }
            if Instant::now() >= until {
                return Spun::Nothing;
            }
            std::thread::yield_now();
        }
    }

    /// Tells the data nodes of the links over shared memory this worker
    /// watches that it sleeps (they ring the socket for their next bytes),
    /// unless bytes came meanwhile: then they are read, and it must not.
    fn links_prepare_to_sleep(&self) -> bool {
        let mut sleep = true;
        for link in &self.links {
            if !link.prepare_to_sleep() {
                link.pump();
                sleep = false;
            }
        }
        sleep
    }

    /// Awake again: the watched rings are polled, not rung.
    fn links_awake(&self) {
        for link in &self.links {
            link.set_awake();
        }
    }

    fn inbox_has_work(&self) -> bool {
        let inbox = self.own.inbox.lock().expect("worker inbox");
        !inbox.connections.is_empty() || !inbox.woken.is_empty()
    }

    fn take_inbox(&mut self) {
        let (connections, woken) = {
            let mut inbox = self.own.inbox.lock().expect("worker inbox");
            (
                std::mem::take(&mut inbox.connections),
                std::mem::take(&mut inbox.woken),
            )
        };
        for id in woken {
            self.make_ready(id.slot, Some(id.generation));
        }
        for (stream, peer) in connections {
            self.spawn_task(stream, peer);
        }
    }

    /// Queues the task in `slot` to run if it waits (and, with
    /// `generation`, is still the task that was meant).
    fn make_ready(&mut self, slot: usize, generation: Option<u64>) {
        if let Some(Some(entry)) = self.tasks.get_mut(slot)
            && entry.waiting
            && generation.is_none_or(|g| g == entry.generation)
        {
            entry.waiting = false;
            self.ready.push_back(slot);
        }
    }

    fn spawn_task(&mut self, stream: TcpStream, peer: SocketAddr) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.tasks.push(None);
            self.tasks.len() - 1
        });
        self.generation += 1;
        let id = TaskId {
            slot,
            generation: self.generation,
        };
        let fd = stream.as_raw_fd();
        if let Err(e) = stream.set_nonblocking(true).and_then(|()| {
            self.poll.registry().register(
                &mut SourceFd(&fd),
                Token(slot),
                Interest::READABLE | Interest::WRITABLE,
            )
        }) {
            eprintln!("sqld: cannot serve a connection from {peer}: {e}");
            self.free.push(slot);
            return;
        }
        let stack = match DefaultStack::new(TASK_STACK_BYTES) {
            Ok(stack) => stack,
            Err(e) => {
                eprintln!("sqld: no stack for a connection from {peer}: {e}");
                let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
                self.free.push(slot);
                return;
            }
        };
        let waker = std::task::Waker::from(Arc::new(TaskWake {
            worker: Arc::clone(&self.own),
            id,
        }));
        let shared = Arc::clone(&self.shared);
        let coroutine = Coroutine::with_stack(
            stack,
            move |yielder: &Yielder<(), (Option<Instant>, WaitFor)>, ()| {
                let task = RunningTask { yielder, waker };
                // SAFETY: `task` outlives the time it is current: `leave`
                // below runs before it is dropped, and `suspend` leaves while
                // the task is away.
                unsafe { shoal_client::task::enter(&task) };
                // A panic outside a statement ends this connection only.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    connection::serve(shared, stream, peer);
                }));
                shoal_client::task::leave();
            },
        );
        self.tasks[slot] = Some(Entry {
            coroutine,
            generation: id.generation,
            waiting: false,
            wait_for: WaitFor::Wake,
            readable_seen: true,
            timer: None,
        });
        self.ready.push_back(slot);
    }

    fn resume(&mut self, slot: usize) {
        let Some(Some(entry)) = self.tasks.get_mut(slot) else {
            return;
        };
        READABLE_SEEN.with(|seen| seen.set(entry.readable_seen));
        let resumed = entry.coroutine.resume(());
        entry.readable_seen = READABLE_SEEN.with(std::cell::Cell::get);
        match resumed {
            CoroutineResult::Yield((deadline, wait_for)) => {
                entry.waiting = true;
                entry.wait_for = wait_for;
                if let Some(at) = deadline
                    && entry.timer.is_none_or(|pending| at < pending)
                {
                    entry.timer = Some(at);
                    self.timers.push(std::cmp::Reverse((
                        at,
                        TaskId {
                            slot,
                            generation: entry.generation,
                        },
                    )));
                }
            }
            CoroutineResult::Return(()) => {
                // The connection closed its socket, which took it out of
                // the epoll set.
                self.tasks[slot] = None;
                self.free.push(slot);
            }
        }
    }
}
