//! Waiting without a thread per session.
//!
//! A session's calls wait in one place: its mailbox, until a reply, a node
//! failure or an interrupt is delivered (`connection::Mailbox::take`). On an
//! ordinary thread that wait blocks the thread. A runtime that runs many
//! sessions as tasks on one thread each (the SQL node's workers, see
//! `crates/sqld/src/worker.rs`) installs the running task here; the wait
//! then suspends that task, and the delivery wakes it through its
//! [`std::task::Waker`], so the thread goes on with other sessions instead
//! of sleeping and being woken once per reply.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// A task the current thread is running.
pub trait Task {
    /// Wakes this task from any thread: once woken it is resumed, and
    /// whatever it waited for is checked again (a task may be woken
    /// without cause, so every wait is a loop).
    fn waker(&self) -> std::task::Waker;
    /// Suspends the task until it is woken or `deadline` passes.
    fn suspend(&self, deadline: Option<Instant>);
}

thread_local! {
    /// The task running on this thread. Set only while it runs: a task
    /// clears it when it suspends and sets it again when resumed.
    static CURRENT: Cell<Option<*const dyn Task>> = const { Cell::new(None) };
}

/// Makes `task` the running task of this thread until [`leave`].
///
/// # Safety
/// `task` must stay valid until `leave` is called on this thread.
pub unsafe fn enter(task: &dyn Task) {
    // SAFETY: only the lifetime is erased; the caller keeps `task` alive
    // until `leave`, and `current` hands it out only within that time.
    let task: *const (dyn Task + 'static) = unsafe { std::mem::transmute(task) };
    CURRENT.with(|current| current.set(Some(task)));
}

/// Ends what [`enter`] began.
pub fn leave() {
    CURRENT.with(|current| current.set(None));
}

/// Runs `with` on the task running on this thread, if there is one.
pub(crate) fn with_current<R>(with: impl FnOnce(Option<&dyn Task>) -> R) -> R {
    let task = CURRENT.with(Cell::get);
    // SAFETY: `enter`'s contract keeps the task alive while it is current.
    with(task.map(|task| unsafe { &*task }))
}

/// The waker of the task running on this thread, if there is one.
pub(crate) fn current_waker() -> Option<std::task::Waker> {
    with_current(|task| task.map(Task::waker))
}

/// Whether this thread runs a task now.
pub fn in_task() -> bool {
    CURRENT.with(Cell::get).is_some()
}

/// Suspends the running task until it is woken or `deadline`; false, at
/// once, when the thread runs no task.
pub fn suspend(deadline: Instant) -> bool {
    with_current(|task| task.map(|task| task.suspend(Some(deadline))).is_some())
}

/// Waits `duration`: the task suspends, a thread sleeps.
pub fn pause(duration: Duration) {
    let until = Instant::now() + duration;
    with_current(|task| match task {
        Some(task) => {
            while Instant::now() < until {
                task.suspend(Some(until));
            }
        }
        None => std::thread::sleep(duration),
    });
}
