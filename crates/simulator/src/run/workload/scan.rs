//! Audits by scan: every account read with one scan (committed, shared or
//! exclusive), batch by batch across the fragments, then committed.

use std::collections::{BTreeMap, BTreeSet};

use protocol::{ExecuteEnd, Message, NodeId, OperationKind, ScanNext, ScanOpen, ScanRows};

use super::jobs::Job;
use super::{LOCK_WAIT_TIMEOUT, NODE_FAILURE, NOT_MEMBER, Simulation, WorkTable, between};
use crate::run::transactions::int_column;

/// A scan of every account, as its batches arrive.
#[derive(Default)]
pub(super) struct ScanState {
    /// Fragments whose last batch came.
    pub(super) finished: BTreeSet<u32>,
    pub(super) rows: BTreeMap<i64, i64>,
    /// The scan failed and the transaction is being rolled back.
    pub(super) failed: bool,
}

impl Simulation {
    /// Opens a scan of every account for session `index`.
    pub(super) fn open_scan(&mut self, index: usize, mode: OperationKind) {
        let batch_rows = between(&mut self.rng, 1, 8) as u32;
        let workload = self.workload_mut();
        let table = workload.table_id(WorkTable::Bank);
        let api = workload.sessions[index].api;
        let running = workload.sessions[index].running.as_mut().expect("running");
        running.scan = Some(ScanState::default());
        let start = !running.started;
        running.started = true;
        let (transaction, coordinator) = (running.transaction, running.coordinator);
        self.trace(format!(
            "api {api} transaction {transaction} -> node {coordinator}: scan bank {mode:?}, \
             {batch_rows} rows a batch"
        ));
        self.send(
            api,
            coordinator,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction,
                start,
                scan: 1,
                table,
                columns: vec![0, 1],
                mode,
                batch_rows,
                batch_bytes: 1 << 16,
                ..ScanOpen::default()
            })),
        );
    }

    /// Opens a scan of every account for session `index` that the session
    /// never reads: its transaction goes on and ends with the scan open
    /// (see `Job::Transfer`). Its batches are dropped when they come.
    pub(super) fn open_unread_scan(&mut self, index: usize, mode: OperationKind) {
        let workload = self.workload_mut();
        let table = workload.table_id(WorkTable::Bank);
        let api = workload.sessions[index].api;
        let running = workload.sessions[index].running.as_ref().expect("running");
        let (transaction, coordinator) = (running.transaction, running.coordinator);
        workload.unread_scans.insert((api, transaction));
        self.trace(format!(
            "api {api} transaction {transaction} -> node {coordinator}: scan bank {mode:?}, \
             left unread"
        ));
        self.send(
            api,
            coordinator,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction,
                scan: 1,
                table,
                columns: vec![0, 1],
                mode,
                // A batch as large as a fragment: the scan goes on locking
                // rows until it meets one another transaction holds.
                batch_rows: 1_000,
                batch_bytes: 1 << 16,
                ..ScanOpen::default()
            })),
        );
    }

    /// A batch of a scan reached API node `api` from `from`.
    pub(in crate::run) fn workload_scan_rows(&mut self, from: NodeId, api: NodeId, rows: ScanRows) {
        let result = self.on_scan_rows(from, api, &rows);
        if let Err(failure) = result {
            self.fail(format!(
                "api {api} transaction {} scan: {failure}\n  got from node {from}: {} rows, \
                 fragment {}, finished {}, error {:?}",
                rows.transaction, rows.rows, rows.fragment, rows.finished, rows.error
            ));
        }
    }

    pub(super) fn on_scan_rows(
        &mut self,
        from: NodeId,
        api: NodeId,
        rows: &ScanRows,
    ) -> Result<(), String> {
        if self
            .workload()
            .unread_scans
            .contains(&(api, rows.transaction))
        {
            // Batches of a scan its transaction never reads (it may have
            // ended already): whatever they hold, the session ignores them.
            return Ok(());
        }
        if self
            .workload()
            .ended_by_node_failure
            .contains(&(api, rows.transaction))
        {
            // Batches already on their way when a node failure ended the
            // transaction.
            return Ok(());
        }
        let partitions = self.workload().tables[WorkTable::Bank as usize].partitions as usize;
        let (accounts, total) = (self.workload().accounts, self.workload().model.total);
        let index = self
            .workload()
            .sessions
            .iter()
            .position(|s| {
                s.api == api
                    && s.running
                        .as_ref()
                        .is_some_and(|r| r.transaction == rows.transaction)
            })
            .ok_or("no such transaction is running")?;
        let crashes = self.crash_plan.is_some();
        let running = self.workload_mut().sessions[index]
            .running
            .as_mut()
            .expect("found");
        let Job::Audit { mode, .. } = running.job else {
            return Err("the transaction runs no scan".into());
        };
        if from != running.coordinator || rows.scan != 1 {
            return Err("rows from another coordinator or scan".into());
        }
        let transaction = running.transaction;
        let scan = running.scan.as_mut().ok_or("the scan was over")?;
        if scan.failed {
            // Batches already on their way when the scan failed elsewhere.
            return Ok(());
        }
        if let Some(error) = &rows.error {
            let node_failure =
                (error.ndb_code == NODE_FAILURE && crashes) || error.ndb_code == NOT_MEMBER;
            let lock_wait = error.ndb_code == LOCK_WAIT_TIMEOUT && mode.locks();
            if !node_failure && !lock_wait {
                return Err(format!("unexpected error {}", error.ndb_code));
            }
            scan.failed = true;
            if node_failure {
                self.outcome.transactions.marks.node_failure_aborts += 1;
            } else {
                self.outcome.transactions.marks.lock_wait_timeouts += 1;
            }
            self.send_batch(index, ExecuteEnd::Rollback, Vec::new());
            return Ok(());
        }
        if scan.finished.contains(&rows.fragment) {
            return Err(format!(
                "fragment {} sent rows after its last batch",
                rows.fragment
            ));
        }
        let mut data = rows.data.as_slice();
        let mut count = 0;
        while !data.is_empty() {
            let prefix = data.get(..4).ok_or("truncated rows")?;
            let length = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
            let row = data.get(4..4 + length).ok_or("truncated rows")?;
            data = &data[4 + length..];
            count += 1;
            let (Some(id), Some(balance)) = (int_column(row, 0), int_column(row, 1)) else {
                return Err("a row without id or balance".into());
            };
            if scan.rows.insert(id, balance).is_some() {
                return Err(format!("account {id} came twice"));
            }
        }
        if count != rows.rows {
            return Err(format!("{count} rows where {} were announced", rows.rows));
        }
        if !rows.finished {
            self.send(
                api,
                from,
                Message::ScanNext(ScanNext {
                    transaction,
                    scan: 1,
                    fragments: vec![rows.fragment],
                    coordinator: 0,
                }),
            );
            return Ok(());
        }
        scan.finished.insert(rows.fragment);
        if scan.finished.len() < partitions {
            return Ok(());
        }
        let scan = running.scan.take().expect("checked");
        if scan.rows.len() != accounts as usize
            || scan.rows.keys().any(|id| *id < 0 || *id >= accounts)
        {
            return Err(format!(
                "the scan found accounts {:?}",
                scan.rows.keys().collect::<Vec<_>>()
            ));
        }
        let sum: i64 = scan.rows.values().sum();
        if mode.locks() && sum != total {
            return Err(format!(
                "a locked scan of every account sums to {sum}, not {total}"
            ));
        }
        running.step = 1;
        self.outcome.transactions.scans += 1;
        self.send_batch(index, ExecuteEnd::Commit, Vec::new());
        Ok(())
    }
}
