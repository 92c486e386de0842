//! The jobs a workload session runs, one transaction each: what each sends
//! first, and what it checks and sends next when a batch is answered.

use protocol::{ExecuteEnd, Executed, OperationKind, TransactionState};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::model::{Group, TagRead, consistent_group};
use super::unique::CodedJob;
use super::{
    CODED_GROUP, GROUP_STRIDE, LOCK_WAIT_TIMEOUT, NO_SUCH_ROW, Op, Sent, Simulation, WorkTable,
    between, chance,
};
use crate::run::transactions::int_column;

/// One transaction of a session. `rollback`: it ends with a rollback
/// after its writes instead of a commit; `probe`: it adds an ignore-error
/// operation on a row that never exists (626 expected).
#[derive(Debug, Clone)]
pub(super) enum Job {
    /// Reads two accounts with exclusive locks, then moves `amount`.
    /// With `unread_scan`, it also opens a locking scan of every account
    /// that it never reads: the commit (or rollback) ends the scan, which
    /// often waits for a lock another transfer holds on a fragment this
    /// one wrote.
    Transfer {
        from: i64,
        to: i64,
        amount: i64,
        rollback: bool,
        probe: bool,
        unread_scan: Option<UnreadScan>,
    },
    /// Reads every account, by key or with a scan.
    Audit { mode: OperationKind, scan: bool },
    /// Inserts a new group with a new tag; `split` takes two batches, the
    /// second reading back the first one's rows.
    InsertGroup {
        group: usize,
        split: bool,
        rollback: bool,
        probe: bool,
        /// Write (insert or update) instead of insert.
        upsert: bool,
    },
    /// Writes a new tag into every row of a group; `lock_first` reads the
    /// rows with exclusive locks first (and then may `upsert` them with
    /// Write); `ignore` makes the updates ignore-error (then they fail on
    /// every row or on none).
    UpdateGroup {
        group: usize,
        lock_first: bool,
        ignore: bool,
        upsert: bool,
        rollback: bool,
    },
    /// Deletes every row of a group, and with `reinsert` inserts them
    /// again with a new tag in the same batch.
    DeleteGroup {
        group: usize,
        reinsert: bool,
        rollback: bool,
    },
    /// Reads every row of a group, committed or with shared locks.
    ReadGroup { group: usize, mode: OperationKind },
    /// Reads a counter with an exclusive lock, then adds one.
    Increment { counter: i64, rollback: bool },
    /// Reads a counter without a lock (committed read, served by any
    /// replica the routing picks), checked against the acknowledged
    /// increments.
    ReadCounter { counter: i64 },
    /// A job on the `coded` table (see `unique`).
    Coded(CodedJob),
}

impl Job {
    /// The group whose rows the job writes its tag into (`CODED_GROUP`
    /// for `coded` rows), or `None` when it writes no tag.
    pub(super) fn tag_group(&self) -> Option<usize> {
        match self {
            Job::InsertGroup { group, .. }
            | Job::UpdateGroup { group, .. }
            | Job::DeleteGroup { group, .. } => Some(*group),
            Job::Coded(job) if job.writes_code() => Some(CODED_GROUP),
            _ => None,
        }
    }

    /// Errors that may abort this transaction without a bug.
    pub(super) fn may_abort_with(&self, code: u16) -> bool {
        match self {
            Job::UpdateGroup { .. } | Job::DeleteGroup { .. } => {
                code == LOCK_WAIT_TIMEOUT || code == NO_SUCH_ROW
            }
            Job::Coded(job) => job.may_abort_with(code),
            _ => code == LOCK_WAIT_TIMEOUT,
        }
    }

    pub(super) fn retried(&self) -> bool {
        matches!(
            self,
            Job::Transfer { .. }
                | Job::Audit { .. }
                | Job::Increment { .. }
                | Job::ReadCounter { .. }
        )
    }
}

/// A locking scan of every account that a transfer opens and never reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct UnreadScan {
    /// `ReadShared` or `ReadExclusive`.
    mode: OperationKind,
    /// Opened once the updates were confirmed, just before an empty
    /// commit; otherwise just before the commit batch with the updates.
    after_writes: bool,
}

/// What a session does after a batch was answered.
pub(super) enum Next {
    Send(ExecuteEnd, Vec<Op>),
    Finish,
}

impl Simulation {
    pub(super) fn new_job(&mut self) -> Job {
        // Rolls from 100 go to the `coded` jobs, except where coordinators
        // crash: their model takes no commit of unknown outcome.
        // Nor where the whole cluster crashes: their model does not take
        // commits back.
        let coordinators_crash = self
            .crash_plan
            .as_ref()
            .is_some_and(|plan| plan.coordinators_crash)
            || self.system_crash_planned();
        let roll = self.rng.next_u64() % if coordinators_crash { 100 } else { 125 };
        let (rollback_chance, ignore_chance) = (
            self.workload().rollback_chance,
            self.workload().ignore_chance,
        );
        let rollback = chance(&mut self.rng, rollback_chance);
        let ignore = chance(&mut self.rng, ignore_chance);
        let probe = chance(&mut self.rng, ignore_chance);
        let workload = self.workload();
        let live_groups: Vec<usize> = workload
            .model
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.inserted == Some(true) && !g.deleted && !g.unknown)
            .map(|(index, _)| index)
            .collect();
        let accounts = workload.accounts as u64;
        let counters = workload.counters as u64;
        // Most picks go to the newest groups, so that transactions contend.
        let pick_group = |rng: &mut ChaCha8Rng| {
            let hot = live_groups.len().min(3) as u64;
            let choices = if chance(rng, 0.6) {
                &live_groups[live_groups.len() - hot as usize..]
            } else {
                &live_groups[..]
            };
            (!choices.is_empty()).then(|| choices[(rng.next_u64() % choices.len() as u64) as usize])
        };
        match roll {
            0..30 => {
                let from = (self.rng.next_u64() % accounts) as i64;
                let to =
                    (from + 1 + (self.rng.next_u64() % (accounts - 1)) as i64) % accounts as i64;
                let amount = between(&mut self.rng, 1, 100) as i64;
                let unread_scan = chance(&mut self.rng, 0.2).then(|| UnreadScan {
                    mode: if chance(&mut self.rng, 0.5) {
                        OperationKind::ReadShared
                    } else {
                        OperationKind::ReadExclusive
                    },
                    after_writes: chance(&mut self.rng, 0.5),
                });
                Job::Transfer {
                    from,
                    to,
                    amount,
                    rollback,
                    probe,
                    unread_scan,
                }
            }
            30..35 => Job::Audit {
                mode: match self.rng.next_u64() % 3 {
                    0 => OperationKind::ReadShared,
                    1 => OperationKind::ReadExclusive,
                    _ => OperationKind::ReadCommitted,
                },
                scan: chance(&mut self.rng, 0.5),
            },
            35..56 => self.new_group_insert(rollback, probe),
            56..70 => match pick_group(&mut self.rng) {
                Some(group) => Job::UpdateGroup {
                    group,
                    lock_first: chance(&mut self.rng, 0.5),
                    ignore,
                    upsert: chance(&mut self.rng, 0.3),
                    rollback,
                },
                None => self.new_group_insert(rollback, probe),
            },
            70..75 => match pick_group(&mut self.rng) {
                Some(group) => Job::DeleteGroup {
                    group,
                    reinsert: chance(&mut self.rng, 0.3),
                    rollback,
                },
                None => self.new_group_insert(rollback, probe),
            },
            75..88 => match pick_group(&mut self.rng) {
                Some(group) => Job::ReadGroup {
                    group,
                    mode: if chance(&mut self.rng, 0.5) {
                        OperationKind::ReadCommitted
                    } else {
                        OperationKind::ReadShared
                    },
                },
                None => self.new_group_insert(rollback, probe),
            },
            88..96 => Job::Increment {
                counter: (self.rng.next_u64() % counters) as i64,
                rollback,
            },
            96..100 => Job::ReadCounter {
                counter: (self.rng.next_u64() % counters) as i64,
            },
            _ => Job::Coded(self.new_coded_job(roll - 100, rollback, ignore)),
        }
    }

    pub(super) fn new_group_insert(&mut self, rollback: bool, probe: bool) -> Job {
        let size = between(&mut self.rng, 2, 4) as i64;
        let split = chance(&mut self.rng, 0.5);
        let upsert = chance(&mut self.rng, 0.3);
        let model = &mut self.workload_mut().model;
        let group = model.groups.len();
        model.groups.push(Group {
            rows: (0..size).map(|i| group as i64 * GROUP_STRIDE + i).collect(),
            inserted: None,
            deleted: false,
            unknown: false,
            inserted_epoch: 0,
            deleted_epoch: 0,
        });
        Job::InsertGroup {
            group,
            split,
            rollback,
            probe,
            upsert,
        }
    }

    pub(super) fn first_batch(&mut self, index: usize) -> Next {
        let probe_id = -1 - (self.rng.next_u64() % 1_000) as i64;
        let variant = self.rng.next_u64();
        let workload = self.workload_mut();
        let running = workload.sessions[index].running.as_mut().expect("running");
        let tag = running.tag as i64;
        match running.job.clone() {
            Job::Transfer {
                from, to, probe, ..
            } => {
                let mut operations = vec![
                    Op::new(WorkTable::Bank, OperationKind::ReadExclusive, from),
                    Op::new(WorkTable::Bank, OperationKind::ReadExclusive, to),
                ];
                if probe {
                    operations.push(
                        Op::new(WorkTable::Bank, OperationKind::ReadCommitted, probe_id)
                            .ignoring(true),
                    );
                }
                Next::Send(ExecuteEnd::NoCommit, operations)
            }
            Job::Audit { mode, .. } => Next::Send(
                ExecuteEnd::Commit,
                (0..workload.accounts)
                    .map(|account| Op::new(WorkTable::Bank, mode, account))
                    .collect(),
            ),
            Job::InsertGroup {
                group,
                split,
                rollback,
                probe,
                upsert,
            } => {
                let rows = &workload.model.groups[group].rows;
                let count = if split { rows.len() / 2 } else { rows.len() };
                let kind = if upsert {
                    OperationKind::Write
                } else {
                    OperationKind::Insert
                };
                let mut operations: Vec<Op> = rows[..count]
                    .iter()
                    .map(|id| Op::new(WorkTable::Tags, kind, *id).writing(tag))
                    .collect();
                if probe {
                    operations.push(
                        Op::new(WorkTable::Tags, OperationKind::Delete, probe_id).ignoring(true),
                    );
                }
                let end = if split || rollback {
                    ExecuteEnd::NoCommit
                } else {
                    ExecuteEnd::Commit
                };
                Next::Send(end, operations)
            }
            Job::UpdateGroup {
                group,
                lock_first: true,
                ignore,
                ..
            } => Next::Send(
                ExecuteEnd::NoCommit,
                workload.model.groups[group]
                    .rows
                    .iter()
                    .map(|id| {
                        Op::new(WorkTable::Tags, OperationKind::ReadExclusive, *id).ignoring(ignore)
                    })
                    .collect(),
            ),
            Job::UpdateGroup {
                group,
                lock_first: false,
                ignore,
                rollback,
                ..
            } => {
                running.step = 1;
                let rows = &workload.model.groups[group].rows;
                let mut operations = group_updates(rows, tag, ignore);
                // Several operations on one row in one batch: they must run
                // in order (each sees the one before).
                if !ignore && variant % 3 == 1 {
                    operations.extend(group_updates(rows, tag, false));
                }
                if !ignore && !variant.is_multiple_of(3) {
                    operations.extend(
                        rows.iter()
                            .map(|id| Op::new(WorkTable::Tags, OperationKind::ReadCommitted, *id)),
                    );
                }
                Next::Send(
                    if ignore || rollback {
                        ExecuteEnd::NoCommit
                    } else {
                        ExecuteEnd::Commit
                    },
                    operations,
                )
            }
            Job::DeleteGroup {
                group,
                reinsert,
                rollback,
            } => {
                let rows = &workload.model.groups[group].rows;
                let mut operations: Vec<Op> = rows
                    .iter()
                    .map(|id| Op::new(WorkTable::Tags, OperationKind::Delete, *id))
                    .collect();
                if reinsert {
                    operations.extend(rows.iter().map(|id| {
                        Op::new(WorkTable::Tags, OperationKind::Insert, *id).writing(tag)
                    }));
                }
                if variant % 2 == 1 {
                    operations.extend(rows.iter().map(|id| {
                        Op::new(WorkTable::Tags, OperationKind::ReadCommitted, *id).ignoring(true)
                    }));
                }
                Next::Send(
                    if rollback {
                        ExecuteEnd::NoCommit
                    } else {
                        ExecuteEnd::Commit
                    },
                    operations,
                )
            }
            Job::ReadGroup { group, mode } => Next::Send(
                ExecuteEnd::Commit,
                workload.model.groups[group]
                    .rows
                    .iter()
                    .map(|id| Op::new(WorkTable::Tags, mode, *id).ignoring(true))
                    .collect(),
            ),
            Job::Coded(job) => self.coded_first_batch(index, job),
            Job::Increment { counter, .. } => Next::Send(
                ExecuteEnd::NoCommit,
                vec![Op::new(
                    WorkTable::Counters,
                    OperationKind::ReadExclusive,
                    counter,
                )],
            ),
            Job::ReadCounter { counter } => Next::Send(
                ExecuteEnd::Commit,
                vec![Op::new(
                    WorkTable::Counters,
                    OperationKind::ReadCommitted,
                    counter,
                )],
            ),
        }
    }

    /// The job-specific part: checks the results and picks the next batch.
    pub(super) fn after_batch(
        &mut self,
        index: usize,
        sent: &Sent,
        executed: &Executed,
        job: Job,
    ) -> Result<Option<Next>, String> {
        let committed = executed.state == TransactionState::Committed;
        let values: Vec<Option<i64>> = executed
            .results
            .iter()
            .map(|r| {
                if r.error == 0 {
                    int_column(&r.data, 1)
                } else {
                    None
                }
            })
            .collect();
        let workload = self.workload_mut();
        let running = workload.sessions[index].running.as_mut().expect("running");
        let tag = running.tag;
        let step = running.step;
        running.step += 1;
        let rollback = |end: ExecuteEnd| Ok(Some(Next::Send(end, Vec::new())));
        match job {
            Job::Transfer {
                from,
                to,
                amount,
                rollback: roll_back,
                unread_scan,
                ..
            } => match step {
                0 => {
                    let (Some(a), Some(b)) = (values[0], values[1]) else {
                        return Err("an account read returned no balance".into());
                    };
                    let after_writes = unread_scan.is_some_and(|scan| scan.after_writes);
                    if let Some(scan) = unread_scan
                        && !scan.after_writes
                    {
                        self.open_unread_scan(index, scan.mode);
                    }
                    Ok(Some(Next::Send(
                        if roll_back || after_writes {
                            ExecuteEnd::NoCommit
                        } else {
                            ExecuteEnd::Commit
                        },
                        vec![
                            Op::new(WorkTable::Bank, OperationKind::Update, from)
                                .writing(a - amount),
                            Op::new(WorkTable::Bank, OperationKind::Update, to).writing(b + amount),
                        ],
                    )))
                }
                _ if committed => Ok(Some(Next::Finish)),
                _ => {
                    // The updates are confirmed and the transaction is open.
                    if let Some(scan) = unread_scan
                        && scan.after_writes
                    {
                        self.open_unread_scan(index, scan.mode);
                    }
                    if roll_back {
                        rollback(ExecuteEnd::Rollback)
                    } else {
                        Ok(Some(Next::Send(ExecuteEnd::Commit, Vec::new())))
                    }
                }
            },
            Job::Audit { scan: true, .. } => Ok(Some(Next::Finish)),
            Job::Audit { mode, .. } => {
                if mode.locks() {
                    let mut sum = 0;
                    for value in &values {
                        sum += value.ok_or("an account read returned no balance")?;
                    }
                    if sum != workload.model.total {
                        return Err(format!(
                            "a locked read of every account sums to {sum}, not {}",
                            workload.model.total
                        ));
                    }
                }
                Ok(Some(Next::Finish))
            }
            Job::InsertGroup {
                group,
                split,
                rollback: roll_back,
                upsert,
                ..
            } => {
                if step == 1 {
                    // The second batch read back the first one's rows.
                    let half = workload.model.groups[group].rows.len() / 2;
                    let inserted = workload.model.groups[group].rows.len() - half;
                    let read_back = &values[inserted..inserted + half];
                    if read_back.iter().any(|v| *v != Some(tag as i64)) {
                        return Err(format!(
                            "reading back its own inserts found {read_back:?}, not tag {tag}"
                        ));
                    }
                }
                if committed {
                    return Ok(Some(Next::Finish));
                }
                if split && step == 0 {
                    let rows = &workload.model.groups[group].rows;
                    let half = rows.len() / 2;
                    let kind = if upsert {
                        OperationKind::Write
                    } else {
                        OperationKind::Insert
                    };
                    let mut operations: Vec<Op> = rows[half..]
                        .iter()
                        .map(|id| Op::new(WorkTable::Tags, kind, *id).writing(tag as i64))
                        .collect();
                    operations.extend(
                        rows[..half]
                            .iter()
                            .map(|id| Op::new(WorkTable::Tags, OperationKind::ReadCommitted, *id)),
                    );
                    return Ok(Some(Next::Send(
                        if roll_back {
                            ExecuteEnd::NoCommit
                        } else {
                            ExecuteEnd::Commit
                        },
                        operations,
                    )));
                }
                rollback(ExecuteEnd::Rollback)
            }
            Job::UpdateGroup {
                group,
                ignore,
                upsert,
                rollback: roll_back,
                ..
            } => {
                let rows = workload.model.groups[group].rows.clone();
                if step == 0 {
                    // The locked read: the group is all there with one
                    // tag, or (only when errors are ignored) all gone.
                    let seen = consistent_group(executed, &values)?;
                    for value in seen.iter() {
                        workload.model.reads.push(TagRead {
                            seen: *value,
                            reader: tag,
                            group,
                        });
                    }
                    if executed
                        .results
                        .iter()
                        .any(|r| r.error == LOCK_WAIT_TIMEOUT)
                    {
                        return rollback(ExecuteEnd::Rollback);
                    }
                    if seen.is_none() {
                        return Ok(Some(Next::Send(ExecuteEnd::Commit, Vec::new())));
                    }
                    let mut operations = group_updates(&rows, tag as i64, ignore);
                    if upsert {
                        // The rows are locked and there: Write updates them.
                        for op in &mut operations {
                            op.kind = OperationKind::Write;
                        }
                    }
                    return Ok(Some(Next::Send(
                        if ignore || roll_back {
                            ExecuteEnd::NoCommit
                        } else {
                            ExecuteEnd::Commit
                        },
                        operations,
                    )));
                }
                if step == 1 && ignore {
                    let errors: Vec<u16> = executed.results.iter().map(|r| r.error).collect();
                    if errors.contains(&LOCK_WAIT_TIMEOUT) {
                        // Some rows were not updated (their primary timed
                        // out, so no replica changed): update them again,
                        // without ignoring errors this time.
                        let again: Vec<Op> = sent
                            .operations
                            .iter()
                            .zip(&errors)
                            .filter(|(_, error)| **error == LOCK_WAIT_TIMEOUT)
                            .map(|(op, _)| op.clone().ignoring(false))
                            .collect();
                        running.step = 1;
                        return Ok(Some(Next::Send(ExecuteEnd::NoCommit, again)));
                    }
                    if errors.iter().any(|e| *e != errors[0]) {
                        return Err(format!(
                            "ignore-error updates of one group failed on some rows only: {errors:?}"
                        ));
                    }
                }
                if committed {
                    return Ok(Some(Next::Finish));
                }
                if step == 1 && !roll_back {
                    return Ok(Some(Next::Send(ExecuteEnd::Commit, Vec::new())));
                }
                rollback(ExecuteEnd::Rollback)
            }
            Job::DeleteGroup { .. } => {
                if committed {
                    return Ok(Some(Next::Finish));
                }
                rollback(ExecuteEnd::Rollback)
            }
            Job::ReadGroup { group, mode } => {
                if mode.locks() {
                    consistent_group(executed, &values)?;
                }
                for value in values.iter().flatten() {
                    workload.model.reads.push(TagRead {
                        seen: *value,
                        reader: 0,
                        group,
                    });
                }
                Ok(Some(Next::Finish))
            }
            Job::Coded(job) => self.coded_after_batch(index, step, executed, job),
            Job::Increment {
                counter,
                rollback: roll_back,
                ..
            } => match step {
                0 => {
                    let value = values[0].ok_or("a counter read returned no value")?;
                    fresh_counter(sent, counter, value)?;
                    Ok(Some(Next::Send(
                        if roll_back {
                            ExecuteEnd::NoCommit
                        } else {
                            ExecuteEnd::Commit
                        },
                        vec![
                            Op::new(WorkTable::Counters, OperationKind::Update, counter)
                                .writing(value + 1),
                        ],
                    )))
                }
                _ if committed => Ok(Some(Next::Finish)),
                _ => rollback(ExecuteEnd::Rollback),
            },
            Job::ReadCounter { counter } => {
                let value = values[0].ok_or("a counter read returned no value")?;
                fresh_counter(sent, counter, value)?;
                Ok(Some(Next::Finish))
            }
        }
    }
}

/// A read of `counter` that returned `value` saw every increment
/// acknowledged before it was sent.
fn fresh_counter(sent: &Sent, counter: i64, value: i64) -> Result<(), String> {
    let floor = sent.counter_floors.get(&counter).copied().unwrap_or(0);
    if value < floor as i64 {
        return Err(format!(
            "stale read: counter {counter} read {value} after {floor} increments of it were acknowledged as committed"
        ));
    }
    Ok(())
}

pub(super) fn group_updates(rows: &[i64], tag: i64, ignore: bool) -> Vec<Op> {
    rows.iter()
        .map(|id| {
            Op::new(WorkTable::Tags, OperationKind::Update, *id)
                .writing(tag)
                .ignoring(ignore)
        })
        .collect()
}
