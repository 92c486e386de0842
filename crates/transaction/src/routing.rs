//! Where a key lives: tables decoded once from the cluster state, the
//! partition of a key, the fragment copy nearest a node, and which of a
//! fragment's replicas are alive.
//!
//! Coordinators route every operation with this; API nodes use the same
//! code to start a transaction on a node that holds the key (distribution
//! awareness), so both always agree.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::{ClusterState, Fragment, NodeId, TableEntry};
use schema::distribution::{
    TableOptions, bucket_of_hash, default_partition_of_bucket,
    encode_distribution_key_from_attrinfo, encode_distribution_key_from_values,
};
use schema::key::key_hash;
use schema::table::ColumnId;
use schema::{Error, ErrorCode, TableDef, Value};

/// A table as routing needs it: its definition, options and fragments.
#[derive(Debug)]
pub struct TableRoute {
    pub id: u32,
    pub name: String,
    pub schema_version: u64,
    pub def: TableDef,
    pub options: TableOptions,
    pub partition_count: u32,
    pub read_backup: bool,
    pub fully_replicated: bool,
    pub fragments: Vec<Fragment>,
    /// Copies per partition: 1, or the node group count when fully replicated.
    copies: u32,
}

impl TableRoute {
    pub fn from_entry(entry: &TableEntry) -> Result<TableRoute, Error> {
        let (def, options) = schema::table_codec::decode_table(&entry.definition)?;
        let copies = (entry.fragments.len() as u32)
            .checked_div(entry.partition_count)
            .unwrap_or(0);
        if copies == 0 || copies * entry.partition_count != entry.fragments.len() as u32 {
            return Err(Error::new(
                ErrorCode::CorruptTableDefinition,
                format!(
                    "table {} has {} fragments for {} partitions",
                    entry.name,
                    entry.fragments.len(),
                    entry.partition_count
                ),
            ));
        }
        // `cluster::dictionary::fragments` lists the copies of each
        // partition together, partition by partition.
        for (index, fragment) in entry.fragments.iter().enumerate() {
            if fragment.partition != index as u32 / copies || fragment.replicas.is_empty() {
                return Err(Error::new(
                    ErrorCode::CorruptTableDefinition,
                    format!("table {}: fragment {index} is out of order", entry.name),
                ));
            }
        }
        Ok(TableRoute {
            id: entry.id,
            name: entry.name.clone(),
            schema_version: entry.schema_version,
            def,
            options,
            partition_count: entry.partition_count,
            read_backup: entry.read_backup,
            fully_replicated: entry.fully_replicated,
            fragments: entry.fragments.clone(),
            copies,
        })
    }

    /// The partition of a primary key given as AttrInfo. `scratch` is reused.
    pub fn partition_of_key(&self, key: &[u8], scratch: &mut Vec<u8>) -> Result<u32, Error> {
        scratch.clear();
        encode_distribution_key_from_attrinfo(&self.def, &self.options, key, scratch)?;
        Ok(self.partition_of_hash(key_hash(scratch)))
    }

    /// The partition of a row or key given as typed values (at least every
    /// distribution-key column).
    pub fn partition_of_values(&self, values: &[(ColumnId, Value)]) -> Result<u32, Error> {
        let mut encoded = Vec::new();
        encode_distribution_key_from_values(&self.def, &self.options, values, &mut encoded)?;
        Ok(self.partition_of_hash(key_hash(&encoded)))
    }

    #[inline]
    pub fn partition_of_hash(&self, hash: u64) -> u32 {
        default_partition_of_bucket(self.partition_count, bucket_of_hash(hash))
    }

    /// The fragment indexes holding `partition`: one, or one per node group
    /// for a fully replicated table.
    pub fn fragments_of(&self, partition: u32) -> std::ops::Range<u32> {
        assert!(partition < self.partition_count);
        partition * self.copies..(partition + 1) * self.copies
    }

    /// The copy of `partition` to use from `near`: the one with a replica
    /// on `near` if there is one (fully replicated tables), else the first.
    pub fn fragment_near(&self, partition: u32, near: NodeId) -> u32 {
        let range = self.fragments_of(partition);
        if self.copies > 1 {
            for index in range.clone() {
                if self.fragments[index as usize].replicas.contains(&near) {
                    return index;
                }
            }
        }
        range.start
    }

    /// Whether committed reads may go to any replica (READ_BACKUP, or a
    /// fully replicated table, whose every copy is read locally).
    pub fn reads_any_replica(&self) -> bool {
        self.read_backup || self.fully_replicated
    }
}

/// The routing view of one cluster state.
#[derive(Debug, Default, Clone)]
pub struct Routing {
    tables: BTreeMap<u32, Arc<TableRoute>>,
    /// Per node id: a member of the current state.
    live: Vec<bool>,
    version: (u64, u64),
}

impl Routing {
    pub fn new() -> Routing {
        Routing {
            tables: BTreeMap::new(),
            live: vec![false; 256],
            version: (0, 0),
        }
    }

    /// Adopts `state`: tables decoded once (kept when unchanged), members
    /// alive. A table whose definition does not decode is left out (and
    /// reported), so operations on it fail with "no such table".
    pub fn install(&mut self, state: &ClusterState) -> Vec<String> {
        let mut problems = Vec::new();
        let mut tables = BTreeMap::new();
        for entry in &state.tables {
            let kept = self.tables.get(&entry.id).filter(|t| {
                t.schema_version == entry.schema_version && t.fragments == entry.fragments
            });
            match kept {
                Some(route) => {
                    tables.insert(entry.id, Arc::clone(route));
                }
                None => match TableRoute::from_entry(entry) {
                    Ok(route) => {
                        tables.insert(entry.id, Arc::new(route));
                    }
                    Err(error) => problems.push(format!("table {}: {}", entry.name, error.detail)),
                },
            }
        }
        self.tables = tables;
        self.live = vec![false; 256];
        for member in &state.members {
            self.live[usize::from(member.node)] = true;
        }
        self.version = state.position();
        problems
    }

    pub fn version(&self) -> (u64, u64) {
        self.version
    }

    pub fn table(&self, id: u32) -> Option<&Arc<TableRoute>> {
        self.tables.get(&id)
    }

    pub fn table_by_name(&self, name: &str) -> Option<&Arc<TableRoute>> {
        self.tables
            .values()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableRoute>> {
        self.tables.values()
    }

    pub fn is_live(&self, node: NodeId) -> bool {
        self.live[usize::from(node)]
    }

    /// The live replicas of a fragment, primary first: when the primary is
    /// down, the first live backup acts as primary.
    pub fn live_replicas(&self, table: &TableRoute, fragment: u32) -> Vec<NodeId> {
        table.fragments[fragment as usize]
            .replicas
            .iter()
            .copied()
            .filter(|node| self.is_live(*node))
            .collect()
    }

    /// The node that runs a committed read of `fragment` for a coordinator
    /// on `near`: `near` itself when it holds a replica and the table lets
    /// reads go to any replica, else the (acting) primary.
    pub fn read_replica(&self, table: &TableRoute, fragment: u32, near: NodeId) -> Option<NodeId> {
        let replicas = &table.fragments[fragment as usize].replicas;
        if table.reads_any_replica() && replicas.contains(&near) && self.is_live(near) {
            return Some(near);
        }
        replicas.iter().copied().find(|node| self.is_live(*node))
    }
}
