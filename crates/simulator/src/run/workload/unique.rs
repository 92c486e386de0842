//! Jobs on the `coded` table, whose nullable `code` column has a unique
//! index. NDB keeps it as a hidden table (code → id) that the coordinator
//! updates inside every writing transaction; codes come from a range as
//! small as the table, so writes collide and abort with 893 as a normal
//! outcome.
//!
//! Every write of a `coded` row sets its value to the writer's tag, so a
//! row read by either key names the transaction that wrote that version,
//! and the model keeps the code each tag gave each row. Checked:
//! - a read by unique key returns a row holding that code, a read by
//!   primary key the row asked for;
//! - every `coded` row read, and every row at the end, holds the code its
//!   tag's transaction gave it, and that transaction committed (or is the
//!   reader);
//! - within a transaction, reads by unique key see its own writes: the
//!   code it gave a row finds that row, the code it took away finds none;
//! - a swap never meets 893: it holds the code's index row locked from its
//!   first read to its commit, so no other transaction can take the code.
//!
//! `transactions::check_unique_indexes` checks the index rows themselves
//! after quiescence.

use std::collections::BTreeMap;

use protocol::{ExecuteEnd, Executed, OperationKind, OperationResult, TransactionState};
use rand_core::Rng;

use super::jobs::Next;
use super::model::TagState;
use super::{
    CODE_COLUMN, CODED_GROUP, DUPLICATE_KEY, LOCK_WAIT_TIMEOUT, NO_SUCH_ROW, Op, Sent, Simulation,
    UNIQUE_VIOLATION, WorkTable, chance,
};
use crate::run::transactions::int_column;

/// The code the load gives row `id`: even rows their id, odd rows NULL, so
/// that half of the codes are taken from the start.
pub(super) fn initial_code(id: i64) -> Option<i64> {
    (id % 2 == 0).then_some(id)
}

/// One transaction on `coded`.
#[derive(Debug, Clone)]
pub(super) enum CodedJob {
    /// Sets row `id`'s code (and value, to the tag) by primary key;
    /// `lock_first` reads the row with an exclusive lock first, so the
    /// session knows the code it replaces (and with `by_unique_key` updates
    /// the row through that code), and reads both codes by unique key
    /// after the update; `rollback` rolls back instead of committing.
    SetCode {
        id: i64,
        code: Option<i64>,
        lock_first: bool,
        by_unique_key: bool,
        rollback: bool,
    },
    /// Inserts row `id` with `code`, or with `upsert` writes it (an update
    /// when the row is there); `read_back` reads the code by unique key in
    /// a second batch.
    Insert {
        id: i64,
        code: Option<i64>,
        upsert: bool,
        read_back: bool,
    },
    /// Deletes the rows holding `codes` (distinct), by the unique key, in
    /// one batch.
    DeleteByCode { codes: Vec<i64>, ignore: bool },
    /// Reads the rows holding `codes` (distinct), by the unique key, in one
    /// batch.
    ReadByCode {
        codes: Vec<i64>,
        mode: OperationKind,
    },
    /// Frees a code and takes it again in one transaction: reads the row
    /// holding `code` by the unique key with an exclusive lock, sets its
    /// code to NULL (by primary key, or with `by_unique_key` through the
    /// index), and gives `code` to row `to` in the next batch (`to` may be
    /// the same row). With `one_batch` it sets the found row's code to
    /// NULL and back to `code` in one batch instead: two operations on one
    /// row run in order, so the index row's delete comes before its insert.
    /// Its last batch reads `code` by unique key and commits.
    Swap {
        code: i64,
        to: i64,
        by_unique_key: bool,
        one_batch: bool,
    },
}

impl CodedJob {
    pub(super) fn writes_code(&self) -> bool {
        !matches!(
            self,
            CodedJob::DeleteByCode { .. } | CodedJob::ReadByCode { .. }
        )
    }

    /// Errors that may abort this transaction without a bug. A lock wait
    /// may time out anywhere: the index rows are locked as well as the
    /// base rows, and two transactions taking them in opposite orders wait
    /// for each other until one times out.
    pub(super) fn may_abort_with(&self, code: u16) -> bool {
        let allowed: &[u16] = match self {
            // The row is locked before the update, so it cannot be gone.
            CodedJob::SetCode {
                lock_first: true, ..
            } => &[UNIQUE_VIOLATION],
            CodedJob::SetCode {
                lock_first: false, ..
            } => &[NO_SUCH_ROW, UNIQUE_VIOLATION],
            CodedJob::Insert { upsert: false, .. } => &[DUPLICATE_KEY, UNIQUE_VIOLATION],
            CodedJob::Insert { upsert: true, .. } => &[UNIQUE_VIOLATION],
            CodedJob::DeleteByCode { ignore: false, .. } => &[NO_SUCH_ROW],
            CodedJob::DeleteByCode { ignore: true, .. } | CodedJob::ReadByCode { .. } => &[],
            // Row `to` may be gone, but the code stays locked (see the
            // module notes).
            CodedJob::Swap { .. } => &[NO_SUCH_ROW],
        };
        code == LOCK_WAIT_TIMEOUT || allowed.contains(&code)
    }
}

/// A `coded` row some read returned, checked at the end against its writer.
pub(super) struct CodeRead {
    pub(super) id: i64,
    /// The row's value: the tag of the transaction that wrote it.
    pub(super) tag: u64,
    pub(super) code: Option<i64>,
    /// The tag the reading transaction writes (0: none).
    pub(super) reader: u64,
}

/// What a read of a `coded` row found.
enum Found {
    Row {
        id: i64,
        tag: u64,
        code: Option<i64>,
    },
    Gone,
    TimedOut,
}

impl Simulation {
    /// A new `coded` job; `roll` (below 25) picks its kind.
    pub(super) fn new_coded_job(&mut self, roll: u64, rollback: bool, ignore: bool) -> CodedJob {
        let rows = self.workload().coded_rows as u64;
        let id = (self.rng.next_u64() % rows) as i64;
        let code = (self.rng.next_u64() % rows) as i64;
        // Some written codes are NULL, which any number of rows may hold.
        let written = (!chance(&mut self.rng, 0.25)).then_some(code);
        // Several operations by unique key in one batch run side by side.
        let mut codes = vec![code];
        for _ in 0..self.rng.next_u64() % 3 {
            let other = (self.rng.next_u64() % rows) as i64;
            if !codes.contains(&other) {
                codes.push(other);
            }
        }
        match roll {
            0..6 => CodedJob::SetCode {
                id,
                code: written,
                lock_first: chance(&mut self.rng, 0.6),
                by_unique_key: chance(&mut self.rng, 0.5),
                rollback,
            },
            6..10 => CodedJob::Insert {
                id,
                code: written,
                upsert: chance(&mut self.rng, 0.4),
                read_back: chance(&mut self.rng, 0.5),
            },
            10..13 => CodedJob::DeleteByCode {
                codes: codes[..codes.len().min(2)].to_vec(),
                ignore,
            },
            13..19 => CodedJob::ReadByCode {
                codes,
                mode: match self.rng.next_u64() % 3 {
                    0 => OperationKind::ReadShared,
                    1 => OperationKind::ReadExclusive,
                    _ => OperationKind::ReadCommitted,
                },
            },
            _ => CodedJob::Swap {
                code,
                to: id,
                by_unique_key: chance(&mut self.rng, 0.5),
                one_batch: chance(&mut self.rng, 0.3),
            },
        }
    }

    pub(super) fn coded_first_batch(&mut self, index: usize, job: CodedJob) -> Next {
        let running = self.workload().sessions[index]
            .running
            .as_ref()
            .expect("running");
        let tag = running.tag as i64;
        match job {
            CodedJob::SetCode {
                id,
                lock_first: true,
                ..
            } => Next::Send(
                ExecuteEnd::NoCommit,
                vec![Op::new(WorkTable::Coded, OperationKind::ReadExclusive, id).ignoring(true)],
            ),
            CodedJob::SetCode {
                id,
                code,
                lock_first: false,
                rollback,
                ..
            } => Next::Send(
                if rollback {
                    ExecuteEnd::NoCommit
                } else {
                    ExecuteEnd::Commit
                },
                vec![
                    Op::new(WorkTable::Coded, OperationKind::Update, id)
                        .writing(tag)
                        .coding(code),
                ],
            ),
            CodedJob::Insert {
                id,
                code,
                upsert,
                read_back,
            } => {
                let kind = if upsert {
                    OperationKind::Write
                } else {
                    OperationKind::Insert
                };
                Next::Send(
                    if read_back {
                        ExecuteEnd::NoCommit
                    } else {
                        ExecuteEnd::Commit
                    },
                    vec![
                        Op::new(WorkTable::Coded, kind, id)
                            .writing(tag)
                            .coding(code),
                    ],
                )
            }
            CodedJob::DeleteByCode { codes, ignore } => Next::Send(
                ExecuteEnd::Commit,
                codes
                    .iter()
                    .map(|code| Op::by_code(OperationKind::Delete, *code).ignoring(ignore))
                    .collect(),
            ),
            CodedJob::ReadByCode { codes, mode } => Next::Send(
                ExecuteEnd::Commit,
                codes
                    .iter()
                    .map(|code| Op::by_code(mode, *code).ignoring(true))
                    .collect(),
            ),
            CodedJob::Swap { code, .. } => Next::Send(
                ExecuteEnd::NoCommit,
                vec![Op::by_code(OperationKind::ReadExclusive, code).ignoring(true)],
            ),
        }
    }

    /// Checks a `coded` job's answer (batch `step`) and picks its next batch.
    pub(super) fn coded_after_batch(
        &mut self,
        index: usize,
        step: u8,
        executed: &Executed,
        job: CodedJob,
    ) -> Result<Option<Next>, String> {
        let committed = executed.state == TransactionState::Committed;
        let running = self.workload().sessions[index]
            .running
            .as_ref()
            .expect("running");
        let (tag, found) = (running.tag as i64, running.found);
        let roll_back = Ok(Some(Next::Send(ExecuteEnd::Rollback, Vec::new())));
        let finish = Ok(Some(Next::Finish));
        let read = |code: i64| Op::by_code(OperationKind::ReadCommitted, code).ignoring(true);
        match job {
            CodedJob::SetCode {
                lock_first: false, ..
            } => {
                if committed {
                    return finish;
                }
                roll_back
            }
            CodedJob::SetCode {
                id,
                code,
                lock_first: true,
                by_unique_key,
                rollback,
            } => match step {
                0 => match self.read_coded_row(index, &executed.results[0], Some(id), None)? {
                    Found::Row { id, code: old, .. } => {
                        self.set_found(index, id, old);
                        let mut update = match old {
                            // The row is locked, so its code still finds it.
                            Some(old) if by_unique_key => Op::by_code(OperationKind::Update, old),
                            _ => Op::new(WorkTable::Coded, OperationKind::Update, id),
                        };
                        update.id = id;
                        Ok(Some(Next::Send(
                            ExecuteEnd::NoCommit,
                            vec![update.writing(tag).coding(code)],
                        )))
                    }
                    Found::Gone => Ok(Some(Next::Send(ExecuteEnd::Commit, Vec::new()))),
                    Found::TimedOut => roll_back,
                },
                1 if committed => finish,
                1 => {
                    // Both codes by unique key: the new one finds the row
                    // as written, the old one nothing.
                    let old = found.and_then(|(_, old)| old);
                    let mut operations: Vec<Op> = code.into_iter().map(read).collect();
                    if old.is_some() && old != code {
                        operations.extend(old.map(read));
                    }
                    Ok(Some(Next::Send(
                        if rollback {
                            ExecuteEnd::NoCommit
                        } else {
                            ExecuteEnd::Commit
                        },
                        operations,
                    )))
                }
                _ => {
                    let old = found.and_then(|(_, old)| old);
                    let mut results = executed.results.iter();
                    if let Some(code) = code {
                        let result = results.next().ok_or("no result")?;
                        self.read_own_row(index, result, id, code, old == Some(code))?;
                    }
                    if let Some(result) = results.next()
                        && result.error != NO_SUCH_ROW
                    {
                        return Err(format!(
                            "after the transaction moved row {id} from code {old:?} to {code:?}, \
                             a read by unique key {old:?} answered {} (not 626)",
                            result.error
                        ));
                    }
                    if !committed {
                        return roll_back;
                    }
                    if old.is_some() && code.is_some() && old != code {
                        self.outcome.transactions.marks.index_rows_moved += 1;
                    }
                    finish
                }
            },
            CodedJob::Insert {
                id,
                code,
                upsert,
                read_back,
            } => {
                if !read_back {
                    return finish;
                }
                if step == 0 {
                    return Ok(Some(Next::Send(
                        ExecuteEnd::Commit,
                        code.into_iter().map(read).collect(),
                    )));
                }
                if let Some(code) = code {
                    // An upsert may have updated a row that had the code.
                    self.read_own_row(index, &executed.results[0], id, code, upsert)?;
                }
                finish
            }
            CodedJob::DeleteByCode { .. } => finish,
            CodedJob::ReadByCode { codes, .. } => {
                for (code, result) in codes.iter().zip(&executed.results) {
                    self.read_coded_row(index, result, None, Some(*code))?;
                }
                finish
            }
            CodedJob::Swap {
                code,
                to,
                by_unique_key,
                one_batch,
            } => {
                if step == 0 {
                    return match self.read_coded_row(
                        index,
                        &executed.results[0],
                        None,
                        Some(code),
                    )? {
                        Found::Row { id, .. } => {
                            self.set_found(index, id, Some(code));
                            let free = |op: Op| op.writing(tag).coding(None);
                            if one_batch {
                                return Ok(Some(Next::Send(
                                    ExecuteEnd::NoCommit,
                                    vec![
                                        free(Op::new(WorkTable::Coded, OperationKind::Update, id)),
                                        Op::new(WorkTable::Coded, OperationKind::Update, id)
                                            .writing(tag)
                                            .coding(Some(code)),
                                    ],
                                )));
                            }
                            let mut op = if by_unique_key {
                                Op::by_code(OperationKind::Update, code)
                            } else {
                                Op::new(WorkTable::Coded, OperationKind::Update, id)
                            };
                            // The session holds the code's lock: the row it
                            // found is the one this reaches.
                            op.id = id;
                            Ok(Some(Next::Send(ExecuteEnd::NoCommit, vec![free(op)])))
                        }
                        Found::Gone => Ok(Some(Next::Send(ExecuteEnd::Commit, Vec::new()))),
                        Found::TimedOut => roll_back,
                    };
                }
                if committed && found.is_none() {
                    return finish;
                }
                let (holder, taken_at) = match (one_batch, found) {
                    (true, Some((id, _))) => (id, 1),
                    _ => (to, 2),
                };
                if step < taken_at {
                    // The code is free now: give it to row `to`.
                    return Ok(Some(Next::Send(
                        ExecuteEnd::NoCommit,
                        vec![
                            Op::new(WorkTable::Coded, OperationKind::Update, to)
                                .writing(tag)
                                .coding(Some(code)),
                        ],
                    )));
                }
                if step == taken_at {
                    return Ok(Some(Next::Send(ExecuteEnd::Commit, vec![read(code)])));
                }
                self.read_own_row(index, &executed.results[0], holder, code, false)?;
                self.outcome.transactions.marks.code_swaps += 1;
                finish
            }
        }
    }

    /// A read by unique key `code` after the transaction gave that code to
    /// row `id`: it must find that row as the transaction wrote it. When
    /// the row may have had the code already, the transaction holds no
    /// lock on its index row, so the lookup may wait for another
    /// transaction that holds it and waits for the row (`may_time_out`).
    fn read_own_row(
        &mut self,
        index: usize,
        result: &OperationResult,
        id: i64,
        code: i64,
        may_time_out: bool,
    ) -> Result<(), String> {
        let tag = self.workload().sessions[index]
            .running
            .as_ref()
            .expect("running")
            .tag;
        match self.read_coded_row(index, result, Some(id), Some(code))? {
            Found::Row { tag: seen, .. } if seen == tag => Ok(()),
            Found::Row { tag: seen, .. } => Err(format!(
                "a read by unique key {code} found row {id} with tag {seen}, not the \
                 transaction's own write (tag {tag})"
            )),
            Found::TimedOut if may_time_out => Ok(()),
            Found::Gone | Found::TimedOut => Err(format!(
                "a read by unique key {code} after the transaction gave it to row {id} answered {}",
                result.error
            )),
        }
    }

    fn set_found(&mut self, index: usize, id: i64, code: Option<i64>) {
        let running = self.workload_mut().sessions[index]
            .running
            .as_mut()
            .expect("running");
        running.found = Some((id, code));
    }

    /// A read of a `coded` row (ignore-error, columns id, value, code) by
    /// primary key `id` or by unique key `code`: checks that it found that
    /// row and keeps it for the final checks.
    fn read_coded_row(
        &mut self,
        index: usize,
        result: &OperationResult,
        id: Option<i64>,
        code: Option<i64>,
    ) -> Result<Found, String> {
        match result.error {
            0 => {}
            NO_SUCH_ROW => return Ok(Found::Gone),
            LOCK_WAIT_TIMEOUT => return Ok(Found::TimedOut),
            other => return Err(format!("a read of a coded row failed with {other}")),
        }
        let (Some(found_id), Some(tag)) =
            (int_column(&result.data, 0), int_column(&result.data, 1))
        else {
            return Err("a read of a coded row returned no id or value".into());
        };
        let found_code = int_column(&result.data, CODE_COLUMN);
        if let Some(id) = id
            && found_id != id
        {
            return Err(format!("a read of coded row {id} returned row {found_id}"));
        }
        if let Some(code) = code
            && found_code != Some(code)
        {
            return Err(format!(
                "a read by unique key {code} returned row {found_id}, whose code is {found_code:?}"
            ));
        }
        let workload = self.workload_mut();
        let reader = workload.sessions[index]
            .running
            .as_ref()
            .expect("running")
            .tag;
        workload.model.code_reads.push(CodeRead {
            id: found_id,
            tag: tag as u64,
            code: found_code,
            reader,
        });
        Ok(Found::Row {
            id: found_id,
            tag: tag as u64,
            code: found_code,
        })
    }

    /// After a batch that did not abort: counts the operations by unique
    /// key that found their row, and keeps the code each `coded` write gave
    /// its row.
    pub(super) fn note_coded_batch(&mut self, index: usize, sent: &Sent, executed: &Executed) {
        let mut lookups = 0;
        let workload = self.workload_mut();
        let tag = workload.sessions[index]
            .running
            .as_ref()
            .expect("running")
            .tag;
        for (op, result) in sent.operations.iter().zip(&executed.results) {
            if op.table != WorkTable::Coded || result.error != 0 {
                continue;
            }
            if op.unique_key.is_some() {
                lookups += 1;
            }
            let writes_row = matches!(
                op.kind,
                OperationKind::Insert | OperationKind::Write | OperationKind::Update
            );
            if writes_row && op.id >= 0 {
                workload
                    .model
                    .code_writes
                    .entry(tag)
                    .or_default()
                    .insert(op.id, op.code);
            }
        }
        self.outcome.transactions.marks.unique_lookups += lookups;
    }

    /// The final `coded` rows (AttrInfo by id) against the model.
    pub(super) fn check_coded_data(&self, rows: &BTreeMap<i64, Vec<u8>>) -> Vec<String> {
        let workload = self.workload();
        let model = &workload.model;
        let written = |tag: u64, id: i64| {
            model
                .code_writes
                .get(&tag)
                .and_then(|writes| writes.get(&id))
                .copied()
        };
        let mut problems = Vec::new();
        for (id, row) in rows {
            if !(0..workload.coded_rows).contains(id) {
                problems.push(format!("coded has row {id}, which no transaction wrote"));
                continue;
            }
            let tag = int_column(row, 1).unwrap_or_default() as u64;
            let code = int_column(row, CODE_COLUMN);
            match model.tags.get(tag as usize) {
                Some((CODED_GROUP, TagState::Committed)) => {}
                other => {
                    problems.push(format!(
                        "coded row {id} holds tag {tag}, whose transaction is {other:?}"
                    ));
                    continue;
                }
            }
            let given = written(tag, *id);
            if given != Some(code) {
                problems.push(format!(
                    "coded row {id} has code {code:?}, but its tag {tag} gave it {given:?}"
                ));
            }
        }
        for read in &model.code_reads {
            let writer = model.tags.get(read.tag as usize);
            let committed = matches!(writer, Some((CODED_GROUP, TagState::Committed)));
            if read.tag != read.reader && !committed {
                problems.push(format!(
                    "a read of coded row {} (by the transaction of tag {}) returned tag {}, whose \
                     transaction is {writer:?}: an uncommitted value was read",
                    read.id, read.reader, read.tag
                ));
                continue;
            }
            let given = written(read.tag, read.id);
            if given != Some(read.code) {
                problems.push(format!(
                    "a read of coded row {} found code {:?} and tag {}, but that tag gave it {given:?}",
                    read.id, read.code, read.tag
                ));
            }
        }
        problems
    }
}
