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
use schema::types::ColumnType;
use schema::{ColumnDef, Error, ErrorCode, TableDef, Value};

/// Ids of hidden tables (unique indexes, auto-increment sequences) have
/// this bit set; the dictionary's own ids stay far below it.
pub const HIDDEN_TABLE_BIT: u32 = 1 << 31;
/// Bits of a hidden table id that say which of its base table's hidden
/// tables it is: slots 0..64 are unique indexes (by position; see
/// `schema::table::ORDERED_INDEXES_PER_TABLE_MAX`), `SEQUENCE_SLOT` the
/// auto-increment sequence.
const HIDDEN_SLOT_BITS: u32 = 7;
const SEQUENCE_SLOT: u32 = 64;
/// Largest base table id whose hidden tables get ids.
pub const HIDDEN_BASE_TABLE_ID_MAX: u32 = (HIDDEN_TABLE_BIT >> HIDDEN_SLOT_BITS) - 1;

/// The id of the hidden table holding unique index `position` of `table`.
pub fn unique_index_table_id(table: u32, position: u16) -> u32 {
    assert!(table <= HIDDEN_BASE_TABLE_ID_MAX);
    assert!(u32::from(position) < SEQUENCE_SLOT);
    HIDDEN_TABLE_BIT | (table << HIDDEN_SLOT_BITS) | u32::from(position)
}

/// The id of `table`'s auto-increment sequence: a hidden table with one
/// row, the next value to hand out (NDB keeps these in SYSTAB_0).
pub fn sequence_table_id(table: u32) -> u32 {
    assert!(table <= HIDDEN_BASE_TABLE_ID_MAX);
    HIDDEN_TABLE_BIT | (table << HIDDEN_SLOT_BITS) | SEQUENCE_SLOT
}

/// The sequence table's columns: the key (always `SEQUENCE_KEY`) and the
/// next value to hand out.
pub const SEQUENCE_KEY_COLUMN: ColumnId = 0;
pub const SEQUENCE_NEXT_COLUMN: ColumnId = 1;
pub const SEQUENCE_KEY: u32 = 0;

/// A unique index of a table, kept as NDB keeps it: a hidden table whose
/// primary key is the index's columns and whose other columns are the base
/// table's primary key. Its rows are partitioned by the index key, so a
/// lookup by the unique key goes to one partition, and inserting a
/// duplicate there fails like any duplicate primary key. The coordinator
/// keeps it in step with the base table inside each transaction (see
/// `coordinator`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueIndex {
    /// The index's position in the base table's `ordered_indexes`.
    pub position: u16,
    pub name: String,
    /// The hidden table's id.
    pub table: u32,
    /// The base table's columns of the index, in index order: the hidden
    /// table's columns `0..columns.len()`. The base table's primary-key
    /// columns follow them there, in key order.
    pub columns: Vec<ColumnId>,
}

impl UniqueIndex {
    /// The hidden table's column for base primary-key column number `j`
    /// (in key order).
    pub fn key_column(&self, j: usize) -> ColumnId {
        (self.columns.len() + j) as ColumnId
    }
}

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
    /// The table's unique indexes (none for a hidden index table).
    pub unique_indexes: Vec<UniqueIndex>,
    /// Every column of any unique index, sorted: what a write must return
    /// of the row before it so the indexes can be kept in step.
    pub unique_columns: Vec<ColumnId>,
    /// For a hidden unique-index table: the base table's id. Only the
    /// coordinator touches these tables.
    pub base_table: Option<u32>,
    /// For an auto-increment sequence: the table it numbers.
    pub sequence_of: Option<u32>,
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
        if entry.id > HIDDEN_BASE_TABLE_ID_MAX {
            return Err(Error::new(
                ErrorCode::CorruptTableDefinition,
                format!("table id {} is too large for hidden table ids", entry.id),
            ));
        }
        let mut unique_indexes = Vec::new();
        for (position, index) in def.ordered_indexes.iter().enumerate() {
            if !index.unique {
                continue;
            }
            unique_indexes.push(UniqueIndex {
                position: position as u16,
                name: index.name.clone(),
                table: unique_index_table_id(entry.id, position as u16),
                columns: index.columns.clone(),
            });
        }
        let mut unique_columns: Vec<ColumnId> = unique_indexes
            .iter()
            .flat_map(|index| index.columns.iter().copied())
            .collect();
        unique_columns.sort_unstable();
        unique_columns.dedup();
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
            unique_indexes,
            unique_columns,
            base_table: None,
            sequence_of: None,
            copies,
        })
    }

    /// The hidden table of one of this table's unique indexes. It has the
    /// base table's partition count and fragment placement, and is
    /// distributed by its whole primary key (the index key).
    pub fn unique_index_route(&self, index: &UniqueIndex) -> Result<TableRoute, Error> {
        let mut columns = Vec::with_capacity(index.columns.len() + self.def.primary_key.len());
        for &column in &index.columns {
            let base = &self.def.columns[usize::from(column)];
            columns.push(ColumnDef::new(&base.name, base.column_type.clone(), false));
        }
        for &column in &self.def.primary_key {
            let base = &self.def.columns[usize::from(column)];
            columns.push(ColumnDef::new(
                &format!("NDB$PK${}", base.name),
                base.column_type.clone(),
                false,
            ));
        }
        let name = format!("{}${}$unique", self.name, index.name);
        let key: Vec<ColumnId> = (0..index.columns.len() as ColumnId).collect();
        let def = TableDef::new(&name, columns, key, Vec::new())?;
        let options = TableOptions {
            distribution_key: Vec::new(),
            ..self.options.clone()
        };
        Ok(TableRoute {
            id: index.table,
            name,
            schema_version: self.schema_version,
            def,
            options,
            partition_count: self.partition_count,
            read_backup: self.read_backup,
            fully_replicated: self.fully_replicated,
            fragments: self.fragments.clone(),
            unique_indexes: Vec::new(),
            unique_columns: Vec::new(),
            base_table: Some(self.id),
            sequence_of: None,
            copies: self.copies,
        })
    }

    /// The table's auto-increment sequence: one partition, on the replicas
    /// of the table's first fragment.
    pub fn sequence_route(&self) -> Result<TableRoute, Error> {
        let name = format!("{}$sequence", self.name);
        let def = TableDef::new(
            &name,
            vec![
                ColumnDef::new("key", ColumnType::Int { unsigned: true }, false),
                ColumnDef::new("next", ColumnType::BigInt { unsigned: true }, false),
            ],
            vec![SEQUENCE_KEY_COLUMN],
            Vec::new(),
        )?;
        Ok(TableRoute {
            id: sequence_table_id(self.id),
            name,
            schema_version: self.schema_version,
            def,
            options: TableOptions {
                partitions: Some(1),
                fully_replicated: false,
                distribution_key: Vec::new(),
                ..self.options.clone()
            },
            partition_count: 1,
            read_backup: self.read_backup,
            fully_replicated: false,
            fragments: vec![Fragment {
                partition: 0,
                ..self.fragments[0].clone()
            }],
            unique_indexes: Vec::new(),
            unique_columns: Vec::new(),
            base_table: None,
            sequence_of: Some(self.id),
            copies: 1,
        })
    }

    /// The unique index at `position` of the table's ordered indexes.
    pub fn unique_index(&self, position: u16) -> Option<&UniqueIndex> {
        self.unique_indexes.iter().find(|i| i.position == position)
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
    /// Per node id: the member's incarnation (0 for a non-member).
    incarnations: Vec<u64>,
    /// Per node id: a member still copying its fragment replicas (node
    /// recovery). It takes writes, last in each chain, and nothing else.
    starting: Vec<bool>,
    /// Members that joined the running cluster and finished their copy,
    /// in the order they finished: they follow the members that formed
    /// the cluster in every chain (see `ClusterState::recovered`).
    recovered: Vec<NodeId>,
    version: (u64, u64),
}

impl Routing {
    pub fn new() -> Routing {
        Routing {
            tables: BTreeMap::new(),
            live: vec![false; 256],
            incarnations: vec![0; 256],
            starting: vec![false; 256],
            recovered: Vec::new(),
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
            // A renamed table keeps its schema version: the name tells.
            let kept = self.tables.get(&entry.id).filter(|t| {
                t.schema_version == entry.schema_version
                    && t.fragments == entry.fragments
                    && t.name == entry.name
            });
            match kept {
                Some(route) => {
                    let hidden_ids = route
                        .unique_indexes
                        .iter()
                        .map(|index| index.table)
                        .chain([sequence_table_id(route.id)]);
                    for id in hidden_ids {
                        let hidden = self.tables.get(&id).expect("installed with its base");
                        tables.insert(id, Arc::clone(hidden));
                    }
                    tables.insert(entry.id, Arc::clone(route));
                }
                None => match TableRoute::from_entry(entry).and_then(|route| {
                    let mut hidden = route
                        .unique_indexes
                        .iter()
                        .map(|index| route.unique_index_route(index))
                        .collect::<Result<Vec<_>, Error>>()?;
                    hidden.push(route.sequence_route()?);
                    Ok((route, hidden))
                }) {
                    Ok((route, hidden)) => {
                        for index_route in hidden {
                            tables.insert(index_route.id, Arc::new(index_route));
                        }
                        tables.insert(entry.id, Arc::new(route));
                    }
                    Err(error) => problems.push(format!("table {}: {}", entry.name, error.detail)),
                },
            }
        }
        self.tables = tables;
        self.live = vec![false; 256];
        self.incarnations = vec![0; 256];
        for member in &state.members {
            self.live[usize::from(member.node)] = true;
            self.incarnations[usize::from(member.node)] = member.incarnation;
        }
        self.starting = vec![false; 256];
        for member in &state.starting {
            self.starting[usize::from(member.node)] = true;
        }
        self.recovered = state.recovered.iter().map(|m| m.node).collect();
        self.version = state.position();
        problems
    }

    pub fn version(&self) -> (u64, u64) {
        self.version
    }

    pub fn table(&self, id: u32) -> Option<&Arc<TableRoute>> {
        self.tables.get(&id)
    }

    /// A table the dictionary lists (hidden index tables are not found by name).
    pub fn table_by_name(&self, name: &str) -> Option<&Arc<TableRoute>> {
        self.tables.values().find(|t| {
            t.base_table.is_none() && t.sequence_of.is_none() && t.name.eq_ignore_ascii_case(name)
        })
    }

    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableRoute>> {
        self.tables.values()
    }

    pub fn is_live(&self, node: NodeId) -> bool {
        self.live[usize::from(node)]
    }

    /// The incarnation of member `node` (0 if it is not a member).
    pub fn incarnation(&self, node: NodeId) -> u64 {
        self.incarnations[usize::from(node)]
    }

    /// A member that holds all of its fragment replicas: it may serve
    /// reads, act as primary and coordinate.
    pub fn is_started(&self, node: NodeId) -> bool {
        self.live[usize::from(node)] && !self.starting[usize::from(node)]
    }

    /// A member still copying its fragment replicas.
    pub fn is_starting(&self, node: NodeId) -> bool {
        self.live[usize::from(node)] && self.starting[usize::from(node)]
    }

    /// The live replicas of a fragment, the write chain: the started ones
    /// primary first (when the primary is down, the first live backup acts
    /// as primary), then the starting ones. A starting replica comes last
    /// so that every write reaches it after passing the replica it copies
    /// from, and so that a chain planned before it started is a prefix of
    /// one planned after.
    pub fn live_replicas(&self, table: &TableRoute, fragment: u32) -> Vec<NodeId> {
        let replicas = &table.fragments[fragment as usize].replicas;
        let mut chain: Vec<NodeId> = replicas
            .iter()
            .copied()
            .filter(|node| self.is_started(*node) && !self.recovered.contains(node))
            .collect();
        chain.extend(
            self.recovered
                .iter()
                .copied()
                .filter(|node| replicas.contains(node) && self.is_started(*node)),
        );
        chain.extend(
            replicas
                .iter()
                .copied()
                .filter(|node| self.is_starting(*node)),
        );
        chain
    }

    /// Whether a fragment has a started replica (one that holds its rows).
    pub fn has_started_replica(&self, table: &TableRoute, fragment: u32) -> bool {
        table.fragments[fragment as usize]
            .replicas
            .iter()
            .any(|node| self.is_started(*node))
    }

    /// The node that runs a committed read of `fragment` for a coordinator
    /// on `near`: `near` itself when it holds a replica and the table lets
    /// reads go to any replica, else the (acting) primary.
    pub fn read_replica(&self, table: &TableRoute, fragment: u32, near: NodeId) -> Option<NodeId> {
        let replicas = &table.fragments[fragment as usize].replicas;
        if table.reads_any_replica() && replicas.contains(&near) && self.is_started(near) {
            return Some(near);
        }
        if self.recovered.is_empty() {
            // The common case, without building the chain.
            return replicas.iter().copied().find(|node| self.is_started(*node));
        }
        self.live_replicas(table, fragment)
            .first()
            .copied()
            .filter(|node| self.is_started(*node))
    }
}
