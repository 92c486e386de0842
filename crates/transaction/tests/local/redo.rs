//! The query handler's redo log: what each replica appends when a commit
//! reaches it, and the refusals of a log or buffer that is full.

use std::collections::BTreeMap;

use disk::model::DiskModel;
use disk::redo::RESTORE_MARK_RESERVE_BYTES;
use disk::{DiskCompletion, RedoConfig, RedoLog, RedoRecord};
use protocol::{ExecuteEnd, NodeId, TransactionState};
use transaction::CoordinatorConfig;
use transaction::redo::{KIND_CHANGES, read_changes};

use super::{Cluster, TEST_EPOCH, delete, insert, int, read, update};

const TEST_REDO: RedoConfig = RedoConfig {
    files: 2,
    file_bytes: 300 << 10,
    buffer_bytes: 300 << 10,
};

fn with_redo(read_backup: bool) -> Cluster {
    let mut cluster = Cluster::new(read_backup, CoordinatorConfig::default());
    for node in [1, 2] {
        cluster
            .query_handler(node)
            .set_redo(RedoLog::new(TEST_REDO, 0, 1));
    }
    cluster
}

/// Writes `log` out to `disk`, through its head, and syncs it.
fn flush(log: &mut RedoLog, disk: &mut DiskModel<u32>) {
    log.want_durable(log.head());
    let mut requests = Vec::new();
    loop {
        log.poll(0, &mut requests);
        if requests.is_empty() {
            break;
        }
        for request in requests.drain(..) {
            disk.perform(&request);
            assert!(log.complete(
                0,
                DiskCompletion::Done {
                    token: request.token()
                }
            ));
        }
    }
    assert_eq!(log.durable(), log.head());
}

/// Every record of `node`'s redo log, read back from disk.
fn records(cluster: &mut Cluster, node: NodeId) -> Vec<RedoRecord> {
    records_on(cluster, node, &mut DiskModel::new())
}

/// Every record of `node`'s redo log, read back from `disk`, which holds
/// what earlier calls wrote.
fn records_on(cluster: &mut Cluster, node: NodeId, disk: &mut DiskModel<u32>) -> Vec<RedoRecord> {
    let log = cluster.query_handler(node).redo_mut().expect("a redo log");
    flush(log, disk);
    let mut records = Vec::new();
    let end =
        disk::scan(&TEST_REDO, log.tail(), disk, |record| records.push(record)).expect("reads");
    assert_eq!(end, log.head(), "the scan finds every record");
    records
}

/// The rows the records make, replayed in order from nothing; and the
/// transactions that wrote them.
fn replay(records: &[RedoRecord]) -> (Vec<(i64, Option<i64>)>, Vec<u64>) {
    let mut rows = BTreeMap::new();
    let mut transactions = Vec::new();
    for record in records {
        assert_eq!(record.kind, KIND_CHANGES);
        assert_eq!(record.epoch, TEST_EPOCH, "logged in its commit's epoch");
        let changes = read_changes(&record.payload).expect("a changes record");
        transactions.push(changes.transaction);
        for change in storage::changes(changes.changes) {
            let (kind, attrinfo) = change.expect("whole changes");
            let id = int(attrinfo, 0).expect("the key");
            if kind == storage::CHANGE_PUT {
                rows.insert(id, int(attrinfo, 1));
            } else {
                assert_eq!(kind, storage::CHANGE_DELETE);
                assert!(rows.remove(&id).is_some(), "a delete of a logged row");
            }
        }
    }
    transactions.sort_unstable();
    transactions.dedup();
    (rows.into_iter().collect(), transactions)
}

#[test]
fn each_replica_logs_what_its_commits_change_and_nothing_else() {
    let mut cluster = with_redo(false);
    let (a, b, c) = (
        cluster.key_in(0, 0),
        cluster.key_in(1, 0),
        cluster.key_in(0, 1),
    );
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 10), insert(b, 20)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    let executed = cluster.execute(2, 2, ExecuteEnd::Commit, vec![update(a, 11)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    // Rolled back, and refused: nothing of either is logged.
    let executed = cluster.execute(1, 3, ExecuteEnd::NoCommit, vec![insert(c, 30)]);
    assert_eq!(executed.state, TransactionState::Open);
    let executed = cluster.execute(1, 3, ExecuteEnd::Rollback, Vec::new());
    assert_eq!(executed.state, TransactionState::Aborted);
    let executed = cluster.execute(2, 4, ExecuteEnd::Commit, vec![insert(c, 40), insert(a, 0)]);
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    // Read only: nothing to log.
    let executed = cluster.execute(
        2,
        5,
        ExecuteEnd::Commit,
        vec![read(a, protocol::OperationKind::ReadExclusive)],
    );
    assert_eq!(executed.state, TransactionState::Committed);
    let executed = cluster.execute(2, 6, ExecuteEnd::Commit, vec![delete(b), insert(c, 60)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    for node in [1, 2] {
        let log = cluster.query_handler(node).redo().expect("a redo log");
        assert_eq!(
            log.reserved_bytes(),
            0,
            "node {node} gave back every reservation"
        );
        let records = records(&mut cluster, node);
        let (rows, transactions) = replay(&records);
        assert_eq!(rows, cluster.committed_rows(node), "node {node}");
        // Transactions 1, 2 and 6 (by the coordinators' ids).
        assert_eq!(transactions.len(), 3, "node {node}: {transactions:?}");
    }
}

/// Fills `log` until fewer than `left` bytes are free in its files (past
/// the restore marks' reserve), with everything written out (so its
/// buffer is empty).
fn fill(log: &mut RedoLog, left: u64) {
    let mut disk = DiskModel::new();
    loop {
        let free = TEST_REDO.capacity_bytes() - log.used_bytes() - RESTORE_MARK_RESERVE_BYTES;
        if free < left {
            break;
        }
        let payload = (free - left.min(free)).clamp(1, 200 << 10) as usize;
        log.append(1, 9, &vec![0u8; payload]).expect("room");
        flush(log, &mut disk);
    }
}

#[test]
fn a_full_redo_log_or_buffer_refuses_writes_with_410_or_1234_and_reads_go_on() {
    let mut cluster = with_redo(false);
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(0, 1));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    // The backup's log is full: the write is refused there, the
    // transaction aborts, and the primary gives back what it reserved.
    fill(cluster.query_handler(2).redo_mut().expect("log"), 50);
    let executed = cluster.execute(1, 2, ExecuteEnd::Commit, vec![insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    let error = executed.error.expect("an error");
    assert_eq!((error.ndb_code, error.mysql_code), (410, 1297), "{error:?}");
    assert!(
        error.message.contains("REDO log files overloaded"),
        "{error:?}"
    );
    let executed = cluster.execute(
        1,
        3,
        ExecuteEnd::Commit,
        vec![read(a, protocol::OperationKind::ReadCommitted)],
    );
    assert_eq!(executed.state, TransactionState::Committed, "reads go on");
    assert_eq!(int(&executed.results[0].data, 1), Some(1));
    cluster.assert_idle();
    for node in [1, 2] {
        let log = cluster.query_handler(node).redo().expect("log");
        assert_eq!(log.reserved_bytes(), 0, "node {node}");
    }
    // A local checkpoint frees the log: the same write is taken.
    let log = cluster.query_handler(2).redo_mut().expect("log");
    log.release(log.durable());
    let executed = cluster.execute(1, 4, ExecuteEnd::Commit, vec![insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    // A buffer the disk has not emptied: 1234.
    let log = cluster.query_handler(1).redo_mut().expect("log");
    loop {
        let free = TEST_REDO.buffer_bytes - log.buffered_bytes();
        if free < 100 {
            break;
        }
        let payload = (free - 80).min(200 << 10) as usize;
        log.append(1, 9, &vec![0u8; payload]).expect("room");
    }
    let executed = cluster.execute(2, 5, ExecuteEnd::Commit, vec![update(a, 5)]);
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    let error = executed.error.expect("an error");
    assert_eq!(
        (error.ndb_code, error.mysql_code),
        (1234, 1297),
        "{error:?}"
    );
    cluster.assert_idle();
    let committed = cluster.committed_rows(1);
    assert_eq!(committed, cluster.committed_rows(2));
    let mut expected = vec![(i64::from(a), Some(1)), (i64::from(b), Some(2))];
    expected.sort_unstable();
    assert_eq!(committed, expected);
}

/// Applies changes (a checkpoint's or a redo record's) to `rows`: a put
/// writes the whole row, a delete removes it if it is there (a checkpoint
/// taken while writes went on may or may not hold it). A checkpoint's rows
/// are taken only of `parts`, and carry the GCI of their last commit,
/// which is never 0 here.
fn apply(rows: &mut BTreeMap<i64, Option<i64>>, changes: &[u8], parts: u64) {
    for change in storage::changes(changes) {
        let (kind, change) = change.expect("whole changes");
        let attrinfo = if kind == storage::CHANGE_ROW_OF_PART {
            let row = storage::split_row_of_part(change).expect("a part and a GCI");
            assert_ne!(row.gci, 0, "a checkpointed row without its GCI");
            assert!(u32::from(row.part) < storage::CHECKPOINT_PARTS);
            if parts & (1 << row.part) == 0 {
                continue;
            }
            row.attrinfo
        } else {
            change
        };
        let id = int(attrinfo, 0).expect("the key");
        if kind == storage::CHANGE_PUT || kind == storage::CHANGE_ROW_OF_PART {
            rows.insert(id, int(attrinfo, 1));
        } else {
            assert_eq!(kind, storage::CHANGE_DELETE);
            rows.remove(&id);
        }
    }
}

#[test]
fn a_checkpoint_written_in_slices_while_commits_go_on_restores_with_the_redo_after_its_start() {
    let mut cluster = with_redo(false);
    let keys: Vec<i32> = (0..24)
        .map(|n| cluster.key_in(n % super::PARTITIONS, (n / super::PARTITIONS) as usize))
        .collect();
    let inserts = keys.iter().map(|id| insert(*id, i64::from(*id))).collect();
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, inserts);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    // Its Complete reaches every replica first: a commit still completing
    // when the checkpoint begins would be replayed from the log too.
    cluster.assert_idle();
    // The checkpoint begins: every record from here on is replayed over it.
    let redo_start = cluster
        .query_handler(1)
        .begin_checkpoint(true)
        .expect("a redo log")
        .redo_start;
    let fragments = cluster.query_handler(1).fragment_replicas();
    let mut checkpoint = Vec::new();
    let (mut slices, mut rows_written) = (0, 0);
    let mut next_transaction = 10;
    let mut later = keys.len() as i32;
    for fragment in fragments {
        let mut cursor = None;
        loop {
            // About two rows a slice.
            let (rows, next) = cluster
                .query_handler(1)
                .checkpoint_slice(
                    fragment,
                    cursor,
                    storage::CheckpointSelection::ALL,
                    40,
                    &mut checkpoint,
                )
                .expect("a fragment of this node");
            slices += 1;
            rows_written += rows;
            // Between slices: a row updated, one deleted, and one
            // inserted, behind and ahead of the cursor; a third of the
            // rows stays as it was, for the checkpoint alone to bring back.
            let key = keys[(slices * 5) % 8];
            let doomed = keys[8 + (slices * 7) % 8];
            let operations = vec![update(key, 1_000 + slices as i64), delete(doomed)];
            let executed = cluster.execute(1, next_transaction, ExecuteEnd::Commit, operations);
            next_transaction += 1;
            // A row deleted earlier is not there to delete (626): that
            // transaction aborts and changes nothing.
            assert_ne!(executed.state, TransactionState::Open, "{executed:?}");
            let fresh = cluster.key_in(0, later as usize);
            later += 1;
            let executed = cluster.execute(
                1,
                next_transaction,
                ExecuteEnd::Commit,
                vec![insert(fresh, i64::from(fresh))],
            );
            next_transaction += 1;
            assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
            cursor = next;
            if cursor.is_none() {
                break;
            }
        }
    }
    cluster.assert_idle();
    assert!(
        slices > 2 * super::PARTITIONS as usize,
        "{slices} slices for {rows_written} rows: the fragments were not cut"
    );
    // Restore: the checkpoint, then every record logged since it began.
    let mut restored = BTreeMap::new();
    apply(&mut restored, &checkpoint, u64::MAX);
    let records = records(&mut cluster, 1);
    assert!(
        records.iter().any(|record| record.lsn < redo_start),
        "the rows inserted before the checkpoint must come from it alone"
    );
    for record in records.iter().filter(|record| record.lsn >= redo_start) {
        let changes = read_changes(&record.payload).expect("a changes record");
        apply(&mut restored, changes.changes, u64::MAX);
    }
    let restored: Vec<(i64, Option<i64>)> = restored.into_iter().collect();
    assert_eq!(restored, cluster.committed_rows(1));
}

/// Partial checkpoints (NDB 7.6's partial LCP): a whole one, then ten that
/// each write an eighth of the parts whole and of the others the rows
/// changed and the keys deleted since the previous one began, while
/// updates, deletes, inserts and keys deleted and inserted again go on
/// between their slices. The chain the system file would keep, each part
/// from its newest whole checkpoint on, with the redo after the newest's
/// start, must give exactly the committed rows after every checkpoint.
#[test]
fn a_chain_of_partial_checkpoints_with_the_redo_after_the_newest_restores_every_commit() {
    use disk::system_file::{CheckpointInfo, chain_with, newest_whole, parts_taken};
    let mut cluster = with_redo(false);
    let keys: Vec<i32> = (0..160)
        .map(|n| cluster.key_in(n % super::PARTITIONS, (n / super::PARTITIONS) as usize))
        .collect();
    let inserts = keys.iter().map(|id| insert(*id, i64::from(*id))).collect();
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, inserts);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    let mut next_transaction = 10;
    let mut later = keys.len();
    let mut files: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut chain: Vec<CheckpointInfo> = Vec::new();
    let (mut whole_rows, mut partial_rows_max, mut deletes) = (0, 0, 0);
    let mut step = 0usize;
    let mut disk = DiskModel::new();
    for id in 1..=11u64 {
        // Each checkpoint begins in a global checkpoint of its own, as
        // the cluster's are seconds apart.
        cluster.set_commit_epoch(TEST_EPOCH + (id << 32));
        let whole_parts = if id == 1 {
            u64::MAX
        } else {
            0x0101_0101_0101_0101u64 << ((id - 2) % 8)
        };
        let start = cluster
            .query_handler(1)
            .begin_checkpoint(whole_parts == u64::MAX)
            .expect("a redo log");
        let selection = storage::CheckpointSelection {
            whole_parts,
            changed_since_gci: start.changed_since_gci,
        };
        let mut file = Vec::new();
        let mut rows_written = 0;
        for fragment in cluster.query_handler(1).fragment_replicas() {
            if whole_parts != u64::MAX {
                deletes += cluster
                    .query_handler(1)
                    .checkpoint_deletes(fragment, &mut file);
            }
            let mut cursor = None;
            loop {
                let (rows, next) = cluster
                    .query_handler(1)
                    .checkpoint_slice(fragment, cursor, selection, 200, &mut file)
                    .expect("a fragment of this node");
                rows_written += rows;
                // Between slices: a row updated, one deleted, one inserted,
                // and a key deleted before and inserted again now.
                step += 1;
                let updated = keys[(step * 5) % 40];
                let doomed = keys[40 + (step * 7) % 120];
                let operations = vec![update(updated, 1_000 + step as i64), delete(doomed)];
                let executed = cluster.execute(1, next_transaction, ExecuteEnd::Commit, operations);
                next_transaction += 1;
                assert_ne!(executed.state, TransactionState::Open, "{executed:?}");
                let back = keys[40 + (step * 11) % 120];
                let fresh = cluster.key_in(0, later);
                later += 1;
                for operation in [
                    insert(fresh, i64::from(fresh)),
                    insert(back, -(step as i64)),
                ] {
                    // The key inserted again may be there still (630): that
                    // transaction aborts and changes nothing.
                    let executed =
                        cluster.execute(1, next_transaction, ExecuteEnd::Commit, vec![operation]);
                    next_transaction += 1;
                    assert_ne!(executed.state, TransactionState::Open, "{executed:?}");
                }
                cursor = next;
                if cursor.is_none() {
                    break;
                }
            }
        }
        if whole_parts == u64::MAX {
            whole_rows = rows_written;
        } else {
            partial_rows_max = partial_rows_max.max(rows_written);
        }
        cluster.assert_idle();
        let info = CheckpointInfo {
            id,
            redo_start: start.redo_start,
            epoch_limit: 0,
            bytes: file.len() as u64,
            whole_parts,
        };
        files.insert(id, file);
        let (next_chain, unneeded) = chain_with(&chain, info);
        for id in unneeded {
            files.remove(&id);
        }
        chain = next_chain;
        // Restore: the chain, each checkpoint's parts from their newest
        // whole one on, then every record logged since the newest began.
        let newest = newest_whole(&chain).expect("every part");
        let mut restored = BTreeMap::new();
        for (position, checkpoint) in chain.iter().enumerate() {
            apply(
                &mut restored,
                &files[&checkpoint.id],
                parts_taken(&newest, position),
            );
        }
        let records = records_on(&mut cluster, 1, &mut disk);
        for record in records
            .iter()
            .filter(|record| record.lsn >= start.redo_start)
        {
            let changes = read_changes(&record.payload).expect("a changes record");
            apply(&mut restored, changes.changes, u64::MAX);
        }
        let restored: Vec<(i64, Option<i64>)> = restored.into_iter().collect();
        assert_eq!(
            restored,
            cluster.committed_rows(1),
            "restored from checkpoints {:?}",
            chain.iter().map(|c| c.id).collect::<Vec<_>>()
        );
    }
    assert_eq!(chain.len(), 8, "the whole one is no longer needed");
    assert!(deletes > 0, "no partial checkpoint wrote a deleted key");
    assert!(
        partial_rows_max < whole_rows,
        "partial checkpoints wrote {partial_rows_max} rows, the whole one {whole_rows}"
    );
}
