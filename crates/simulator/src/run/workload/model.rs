//! What the clients know and the checks against it: reads of the
//! transaction's own writes, locked reads of a group, and the final data.

use std::collections::BTreeMap;

use protocol::{Executed, OperationKind};

use super::unique::CodeRead;
use super::{GROUP_STRIDE, NO_SUCH_ROW, Sent, Simulation, TABLE_NAMES};
use crate::run::transactions::int_column;

/// How the transaction that writes a tag ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TagState {
    Open,
    Committed,
    Aborted,
    /// Its coordinator died while the commit was in flight.
    Unknown,
    /// It committed in an epoch a whole-cluster crash took back: reads
    /// before the crash may have seen it, the data after must not hold it.
    Lost,
}

/// Rows of the `tags` table that are inserted, updated and deleted together.
pub(super) struct Group {
    pub(super) rows: Vec<i64>,
    /// Whether its insert committed, once known.
    pub(super) inserted: Option<bool>,
    /// A delete of it committed.
    pub(super) deleted: bool,
    /// An insert or delete of it may have committed or not (its
    /// coordinator died during the commit): no job picks it again.
    pub(super) unknown: bool,
    /// The epochs its insert and delete committed in (0: none did).
    pub(super) inserted_epoch: u64,
    pub(super) deleted_epoch: u64,
}

/// A tag some read returned, checked at the end against its writer.
pub(super) struct TagRead {
    pub(super) seen: i64,
    /// The tag the reading transaction writes (0: none).
    pub(super) reader: u64,
    pub(super) group: usize,
}

/// What the clients know and what must hold.
pub(super) struct Model {
    /// The bank's money.
    pub(super) total: i64,
    /// Per counter: the epoch of each increment that committed.
    pub(super) increments: Vec<Vec<u64>>,
    /// Per counter: increments that may have committed.
    pub(super) unknown_increments: Vec<u64>,
    pub(super) groups: Vec<Group>,
    /// Per tag (index): its group and its transaction's end.
    pub(super) tags: Vec<(usize, TagState)>,
    /// Per committed tag: the epoch its transaction committed in.
    pub(super) tag_epochs: BTreeMap<u64, u64>,
    pub(super) reads: Vec<TagRead>,
    /// Per tag of a `coded` writer: the code it gave each row it wrote
    /// (its last write of the row).
    pub(super) code_writes: BTreeMap<u64, BTreeMap<i64, Option<i64>>>,
    /// `coded` rows that reads returned, checked at the end.
    pub(super) code_reads: Vec<CodeRead>,
}

impl Simulation {
    /// Reads see the transaction's own earlier writes, in its batch too.
    pub(super) fn check_own_writes(
        &mut self,
        index: usize,
        sent: &Sent,
        executed: &Executed,
    ) -> Result<(), String> {
        let running = self.workload_mut().sessions[index]
            .running
            .as_mut()
            .expect("running");
        for (op, result) in sent.operations.iter().zip(&executed.results) {
            // The session does not always know which row a unique key
            // reaches; `unique` checks those operations.
            if op.unique_key.is_some() {
                continue;
            }
            let row = (op.table as u8, op.id);
            if op.kind.is_write() {
                if result.error == 0 {
                    let value = (op.kind != OperationKind::Delete).then_some(op.value);
                    running.own_writes.insert(row, value);
                }
                continue;
            }
            let Some(written) = running.own_writes.get(&row) else {
                continue;
            };
            let seen = match result.error {
                0 => int_column(&result.data, 1),
                NO_SUCH_ROW => None,
                // A lock wait that timed out says nothing.
                _ => continue,
            };
            if seen != *written {
                return Err(format!(
                    "a read of {}.{} found {seen:?} after the transaction wrote {written:?}",
                    TABLE_NAMES[op.table as usize], op.id
                ));
            }
        }
        Ok(())
    }

    /// The final data against the model: `tables` holds each table's
    /// committed rows (AttrInfo) by id.
    pub(super) fn check_workload_data(
        &mut self,
        tables: &BTreeMap<String, BTreeMap<i64, Vec<u8>>>,
    ) {
        let workload = self.workload();
        let mut problems = Vec::new();
        let empty = BTreeMap::new();
        let rows = |name: &str| tables.get(name).unwrap_or(&empty);
        // The replica checker made sure that every row has a value.
        let table = |name: &str| -> BTreeMap<i64, i64> {
            rows(name)
                .iter()
                .filter_map(|(id, row)| Some((*id, int_column(row, 1)?)))
                .collect()
        };
        let bank = &table("bank");
        let sum: i64 = bank.values().sum();
        if sum != workload.model.total {
            problems.push(format!(
                "the accounts sum to {sum}, not {} (the bank lost or made money)",
                workload.model.total
            ));
        }
        if bank.len() != workload.accounts as usize
            || bank.keys().any(|id| *id < 0 || *id >= workload.accounts)
        {
            problems.push(format!(
                "the bank has accounts {:?}",
                bank.keys().collect::<Vec<_>>()
            ));
        }
        let counters = table("counters");
        for (counter, increments) in workload.model.increments.iter().enumerate() {
            let value = counters.get(&(counter as i64)).copied();
            let unknown = workload.model.unknown_increments[counter];
            let low = increments.len() as i64;
            if value.is_none_or(|value| value < low || value > low + unknown as i64) {
                problems.push(format!(
                    "counter {counter} is {value:?} after {low} committed increments \
                     and {unknown} of unknown outcome"
                ));
            }
        }
        let tags = &table("tags");
        for (id, value) in tags {
            let group = id.div_euclid(GROUP_STRIDE) as usize;
            let known = workload
                .model
                .groups
                .get(group)
                .is_some_and(|g| g.rows.contains(id));
            if !known {
                problems.push(format!(
                    "tags has row {id}={value}, which no transaction wrote"
                ));
            }
        }
        for (group_id, group) in workload.model.groups.iter().enumerate() {
            let present: Vec<(i64, i64)> = group
                .rows
                .iter()
                .filter_map(|id| tags.get(id).map(|value| (*id, *value)))
                .collect();
            let expected = group.inserted == Some(true) && !group.deleted;
            let describe = || {
                format!(
                    "group {group_id} (rows {:?}, insert committed {:?}, delete committed {})",
                    group.rows, group.inserted, group.deleted
                )
            };
            if present.is_empty() {
                if expected && !group.unknown {
                    problems.push(format!("{} is gone", describe()));
                }
                continue;
            }
            if present.len() != group.rows.len() {
                problems.push(format!("{} is partly there: {present:?}", describe()));
                continue;
            }
            if !expected && !group.unknown {
                problems.push(format!("{} is there: {present:?}", describe()));
                continue;
            }
            let tag = present[0].1;
            if present.iter().any(|(_, value)| *value != tag) {
                problems.push(format!("{} holds several tags: {present:?}", describe()));
                continue;
            }
            match workload.model.tags.get(tag as usize) {
                Some((writer_group, TagState::Committed | TagState::Unknown))
                    if *writer_group == group_id => {}
                other => problems.push(format!(
                    "{} holds tag {tag}, whose transaction is {other:?}",
                    describe()
                )),
            }
        }
        for read in &workload.model.reads {
            let writer = workload.model.tags.get(read.seen as usize);
            let fine = read.seen as u64 == read.reader
                || matches!(
                    writer,
                    Some((group, TagState::Committed | TagState::Unknown | TagState::Lost))
                        if *group == read.group
                );
            if !fine {
                problems.push(format!(
                    "a read of group {} (by the transaction of tag {}) returned tag {}, whose \
                     transaction is {writer:?}: an uncommitted value was read",
                    read.group, read.reader, read.seen
                ));
            }
        }
        problems.extend(self.check_coded_data(rows("coded")));
        if !problems.is_empty() {
            problems.truncate(20);
            let mut message = String::from("the workload's data is wrong:");
            for problem in problems {
                message.push_str("\n  - ");
                message.push_str(&problem);
            }
            self.fail(message);
        }
    }
}

impl Model {
    /// After a whole-cluster crash whose restart brought back every commit
    /// of the epochs below `restored_below` and none of a later one: the
    /// commits of those later epochs are taken back (their tags are
    /// `Lost`, their inserts, deletes and increments undone), so the final
    /// checks ask for exactly the committed prefix. Commits of unknown
    /// outcome stay unknown. Returns how many commits were kept and how
    /// many taken back, or the first commit that wrote and named no epoch.
    pub(super) fn forget_commits_from(
        &mut self,
        restored_below: u64,
    ) -> Result<(u64, u64), String> {
        let (mut kept, mut lost) = (0, 0);
        let mut count = |epoch: u64, what: &dyn Fn() -> String| -> Result<bool, String> {
            if epoch == 0 {
                return Err(format!("{} committed without an epoch", what()));
            }
            let gone = epoch >= restored_below;
            if gone {
                lost += 1;
            } else {
                kept += 1;
            }
            Ok(gone)
        };
        for (tag, epoch) in &self.tag_epochs {
            let state = &mut self.tags[*tag as usize].1;
            // An update whose every write failed and was ignored (its group
            // was gone) commits without writing, so without an epoch.
            if *epoch == 0 {
                continue;
            }
            if *state == TagState::Committed && count(*epoch, &|| format!("tag {tag}"))? {
                *state = TagState::Lost;
            }
        }
        for (counter, epochs) in self.increments.iter_mut().enumerate() {
            for epoch in epochs.iter() {
                count(*epoch, &|| format!("an increment of counter {counter}"))?;
            }
            epochs.retain(|epoch| *epoch < restored_below);
        }
        // The groups' inserts and deletes are the tags' transactions,
        // counted above.
        for (index, group) in self.groups.iter_mut().enumerate() {
            if (group.inserted == Some(true) && group.inserted_epoch == 0)
                || (group.deleted && group.deleted_epoch == 0)
            {
                return Err(format!(
                    "a write of group {index} committed without an epoch"
                ));
            }
            if group.inserted == Some(true) && group.inserted_epoch >= restored_below {
                group.inserted = Some(false);
            }
            if group.deleted && group.deleted_epoch >= restored_below {
                group.deleted = false;
            }
        }
        Ok((kept, lost))
    }
}

/// A locked read of a group's rows: every row there with one tag, or
/// every row gone (626). Rows whose lock wait timed out say nothing.
/// Returns the tag, or `None` when the group is gone.
pub(super) fn consistent_group(
    executed: &Executed,
    values: &[Option<i64>],
) -> Result<Option<i64>, String> {
    let mut tags = Vec::new();
    let mut gone = 0;
    for (index, result) in executed.results.iter().enumerate() {
        match result.error {
            0 => tags.push(values[index].ok_or("a read returned no value")?),
            NO_SUCH_ROW => gone += 1,
            _ => {}
        }
    }
    if !tags.is_empty() && gone > 0 {
        return Err(format!(
            "a locked read found {gone} rows of a group gone and others there with {tags:?}"
        ));
    }
    if tags
        .iter()
        .any(|t| *t != tags.first().copied().unwrap_or_default())
    {
        return Err(format!(
            "a locked read found several tags in one group: {tags:?}"
        ));
    }
    Ok(tags.first().copied())
}
