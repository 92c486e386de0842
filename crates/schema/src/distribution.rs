//! Partition maps: how many partitions a table has, which node group and
//! which nodes hold each one, which replica is the primary, which LDM thread
//! owns it, and which partition a row's key hashes to (DESIGN §2).
//!
//! Everything here is a pure function of the cluster's shape and the
//! table's options, so the management node, every data node and every SQL
//! node compute the same map without talking to each other.
//!
//! ## Placement
//! Partition `p` of an ordinary table lives in node group `p mod groups`
//! and is that group's `p / groups`-th partition (its ordinal). Within a
//! group of `R` nodes whose data nodes run `L` LDM threads, ordinal `i`
//! takes:
//! - primary: the group's node `i mod R`, so primaries rotate over the
//!   group (with 2 nodes A, B: A, B, A, B, ...) and no node has more than
//!   one primary more than another;
//! - LDM thread: with `j = i mod (R × L)` and `m = lcm(R, L)`,
//!   `(j + j / m) mod L`. Inside each run of `m` ordinals the pair
//!   (node, LDM) is `(j mod R, j mod L)`, which is one-to-one; each of the
//!   `R × L / m = gcd(R, L)` runs shifts the LDM by one more, reaching the
//!   pairs the run before could not. So every `R × L` consecutive ordinals
//!   make every LDM thread of every node primary exactly once (what
//!   `FOR_RP_BY_LDM` promises), and since `m` is a multiple of `L`, every
//!   `L` consecutive ordinals from 0 use every LDM thread once (what
//!   `FOR_RA_BY_LDM` and its multiples promise).
//!
//! All replicas of a partition use the same LDM thread index, as in NDB.
//! The replica list starts with the primary and continues with the other
//! nodes in group order after it, wrapping around.
//!
//! A **fully replicated** table has its partition count computed as if the
//! cluster had one node group, and every node group holds a copy of every
//! partition, placed inside the group as above. Copy 0, in node group 0, is
//! the partition's main copy.
//!
//! ## Hashing rows to partitions
//! A row's partition is not `hash mod partitions`: the hash picks one of
//! `HASH_MAP_BUCKETS` buckets, and a bucket map says which partition owns
//! each bucket, as NDB's hash maps do (its DefaultHashMapSize is 3840).
//! Adding partitions later (online reorganisation after adding a node
//! group) then reassigns whole buckets to the new partitions, so only the
//! rows of moved buckets move; with `hash mod partitions` nearly every row
//! would change partition. 3840 = 2⁸ × 3 × 5 divides evenly by most
//! partition counts a cluster produces, and where it does not, bucket counts
//! per partition still differ by at most one.
//!
//! ## The distribution key
//! The hash is `key::key_hash` of the row's **distribution key** in the
//! sortable encoding (`key` module): the primary key's columns in
//! primary-key order by default, or the columns `PARTITION BY KEY (a, b)`
//! names, in the order it names them. Every one of those must be a
//! primary-key column (MySQL error 1503), so a primary-key lookup always
//! knows its partition. Only the distribution-key values go into the hash,
//! so rows that agree on them (under their collations: 'abc' and 'ABC' under
//! a case-insensitive one) share a partition whatever their other key
//! columns hold; that is what lets a transaction on one customer's rows stay
//! in one partition. With the default key the bytes hashed are exactly the
//! primary key's encoding, the same bytes the LDM hashes for its hash index.
//!
//! NDB flags distribution-key columns per column and hashes them in
//! primary-key order, so it places `KEY (b, a)` and `KEY (a, b)` alike;
//! Shoal hashes in the order written, and both orders are stable.

use crate::error::{Error, ErrorCode};
use crate::key::{encode_attrinfo_key, encode_key_column, encode_row_key, key_hash};
use crate::row::{AttrInfoReader, RowView};
use crate::table::{ColumnId, KEY_COLUMNS_MAX, TableDef};
use crate::value::Value;
use std::fmt::Write as _;

/// A data node's id (NDB's `NodeId`, 1..=144 for data nodes).
pub type NodeId = u8;

/// Most partitions a table can have (NDB's limit with 8.0's hash maps).
pub const PARTITIONS_MAX: u32 = 2048;
/// Buckets of a table's hash map (NDB's DefaultHashMapSize).
pub const HASH_MAP_BUCKETS: u32 = 3840;
/// Most data nodes in a cluster (NDB's limit).
pub const DATA_NODES_MAX: usize = 144;
/// Most replicas of a partition (NDB's `NoOfReplicas` limit).
pub const REPLICAS_MAX: usize = 4;
/// Most LDM threads per data node (NDB's limit for `ThreadConfig`).
pub const LDM_THREADS_MAX: u32 = 332;

// Every partition must own at least one bucket, or some partitions could
// never receive a row.
const _: () = assert!(PARTITIONS_MAX <= HASH_MAP_BUCKETS);
// The bucket map stores partitions as u16.
const _: () = assert!(PARTITIONS_MAX <= u16::MAX as u32);

/// How the partition count follows the cluster's shape (`PARTITION_BALANCE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PartitionBalance {
    /// One primary partition per LDM thread on every data node: data nodes × LDM threads.
    #[default]
    ForRpByLdm,
    /// One partition per LDM thread in each node group: node groups × LDM threads.
    ForRaByLdm,
    /// One primary partition per data node: data nodes.
    ForRpByNode,
    /// One partition per node group: node groups.
    ForRaByNode,
    /// Two partitions per LDM thread in each node group.
    ForRaByLdmX2,
    /// Three partitions per LDM thread in each node group.
    ForRaByLdmX3,
    /// Four partitions per LDM thread in each node group.
    ForRaByLdmX4,
}

impl PartitionBalance {
    /// Every balance, in the order of their names in MySQL's documentation.
    pub const ALL: [PartitionBalance; 7] = [
        PartitionBalance::ForRpByLdm,
        PartitionBalance::ForRaByLdm,
        PartitionBalance::ForRpByNode,
        PartitionBalance::ForRaByNode,
        PartitionBalance::ForRaByLdmX2,
        PartitionBalance::ForRaByLdmX3,
        PartitionBalance::ForRaByLdmX4,
    ];

    /// The name `PARTITION_BALANCE=` takes.
    pub fn name(self) -> &'static str {
        match self {
            PartitionBalance::ForRpByLdm => "FOR_RP_BY_LDM",
            PartitionBalance::ForRaByLdm => "FOR_RA_BY_LDM",
            PartitionBalance::ForRpByNode => "FOR_RP_BY_NODE",
            PartitionBalance::ForRaByNode => "FOR_RA_BY_NODE",
            PartitionBalance::ForRaByLdmX2 => "FOR_RA_BY_LDM_X_2",
            PartitionBalance::ForRaByLdmX3 => "FOR_RA_BY_LDM_X_3",
            PartitionBalance::ForRaByLdmX4 => "FOR_RA_BY_LDM_X_4",
        }
    }

    /// The balance with this name, compared case-insensitively as MySQL does.
    pub fn from_name(name: &str) -> Option<PartitionBalance> {
        PartitionBalance::ALL
            .into_iter()
            .find(|balance| balance.name().eq_ignore_ascii_case(name))
    }

    /// The partition count on a cluster of `node_groups` groups of
    /// `replicas` nodes, each running `ldm_threads` LDM threads.
    pub fn partition_count(self, node_groups: u32, replicas: u32, ldm_threads: u32) -> u32 {
        match self {
            PartitionBalance::ForRpByLdm => node_groups * replicas * ldm_threads,
            PartitionBalance::ForRaByLdm => node_groups * ldm_threads,
            PartitionBalance::ForRpByNode => node_groups * replicas,
            PartitionBalance::ForRaByNode => node_groups,
            PartitionBalance::ForRaByLdmX2 => node_groups * ldm_threads * 2,
            PartitionBalance::ForRaByLdmX3 => node_groups * ldm_threads * 3,
            PartitionBalance::ForRaByLdmX4 => node_groups * ldm_threads * 4,
        }
    }
}

/// The text that starts the table options in a table comment.
const NDB_TABLE_PREFIX: &str = "NDB_TABLE=";

/// A table's distribution and durability options.
///
/// Not `Copy`: the distribution key is a list. Check options against their
/// table with `validate_for` wherever both are known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableOptions {
    /// Committed reads may go to any replica (`READ_BACKUP=1`, the default
    /// as in NDB 8.0.19+); commits then wait for every replica.
    pub read_backup: bool,
    pub partition_balance: PartitionBalance,
    /// An explicit `PARTITIONS n`, which overrides the balance.
    pub partitions: Option<u32>,
    /// Every node group holds every row (`FULLY_REPLICATED=1`).
    pub fully_replicated: bool,
    /// Neither redo logged nor checkpointed: empty after a cluster restart (`NOLOGGING=1`).
    pub nologging: bool,
    /// The columns of `PARTITION BY KEY (...)`, in the order given, each a
    /// primary-key column; empty means the whole primary key in
    /// primary-key order. See the module documentation.
    pub distribution_key: Vec<ColumnId>,
    /// What the SQL layer keeps about the table beyond the engine's
    /// definition (defaults, AUTO_INCREMENT, comments, the engine named at
    /// CREATE TABLE), opaque here, as NDB keeps MySQL's table metadata in
    /// its dictionary: every SQL node reads the same, and it is created and
    /// dropped with the table in one change. At most
    /// `table_codec::SQL_METADATA_BYTES_MAX` bytes.
    pub sql_metadata: Vec<u8>,
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            read_backup: true,
            partition_balance: PartitionBalance::default(),
            partitions: None,
            fully_replicated: false,
            nologging: false,
            distribution_key: Vec::new(),
            sql_metadata: Vec::new(),
        }
    }
}

impl TableOptions {
    /// Checks the options on their own (the partition count against its limits).
    pub fn validate(&self) -> Result<(), Error> {
        match self.partitions {
            Some(0) => Err(ErrorCode::NoPartitions.into()),
            Some(count) if count > PARTITIONS_MAX => Err(Error::new(
                ErrorCode::TooManyPartitions,
                format!("PARTITIONS {count} is more than the limit of {PARTITIONS_MAX}"),
            )),
            _ => Ok(()),
        }
    }

    /// Checks the options for `table`: what `validate` checks, and that
    /// every distribution-key column exists (MySQL error 1488), is named
    /// once (1652) and is part of the primary key (1503).
    pub fn validate_for(&self, table: &TableDef) -> Result<(), Error> {
        self.validate()?;
        for (position, &column) in self.distribution_key.iter().enumerate() {
            let Some(definition) = table.columns.get(usize::from(column)) else {
                return Err(Error::new(
                    ErrorCode::NoSuchDistributionKeyColumn,
                    format!(
                        "PARTITION BY KEY names column #{column}, but table '{}' has {} columns",
                        table.name,
                        table.columns.len()
                    ),
                ));
            };
            if self.distribution_key[..position].contains(&column) {
                return Err(Error::new(
                    ErrorCode::DuplicateDistributionKeyColumn,
                    format!("PARTITION BY KEY names column '{}' twice", definition.name),
                ));
            }
            if !table.primary_key.contains(&column) {
                return Err(Error::new(
                    ErrorCode::DistributionKeyOutsidePrimaryKey,
                    format!(
                        "column '{}' of table '{}' is in PARTITION BY KEY but not in the \
                         primary key; add it to the primary key or leave it out of the \
                         partitioning key",
                        definition.name, table.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Applies the `NDB_TABLE=` options found in a table comment, as
    /// `CREATE TABLE ... COMMENT="NDB_TABLE=READ_BACKUP=1,..."` and
    /// `ALTER TABLE ... COMMENT=...` do.
    ///
    /// The comment may hold other text around `NDB_TABLE=`; the options run
    /// from it to the next whitespace, separated by commas, each `KEY=VALUE`.
    /// Keys and values are case-insensitive. Options the comment does not
    /// name keep their value; a comment without `NDB_TABLE=` changes
    /// nothing. On error nothing changes.
    pub fn apply_ndb_table_comment(&mut self, comment: &str) -> Result<(), Error> {
        let Some(start) = find_ndb_table_prefix(comment) else {
            return Ok(());
        };
        let rest = &comment[start + NDB_TABLE_PREFIX.len()..];
        if find_ndb_table_prefix(rest).is_some() {
            return Err(illegal_option(
                "NDB_TABLE= appears twice in the comment; give every option once".to_string(),
            ));
        }
        let options_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let options_text = &rest[..options_end];
        if options_text.is_empty() {
            return Err(illegal_option(
                "NDB_TABLE= names no option; expected e.g. NDB_TABLE=READ_BACKUP=1".to_string(),
            ));
        }
        let mut updated = self.clone();
        let mut seen = [false; 4];
        for option in options_text.split(',') {
            let Some((key, value)) = option.split_once('=') else {
                return Err(illegal_option(format!(
                    "NDB_TABLE option '{option}' has no value; write it as {option}=value"
                )));
            };
            let slot = match NDB_TABLE_KEYS
                .iter()
                .position(|known| known.eq_ignore_ascii_case(key))
            {
                Some(slot) => slot,
                None => {
                    return Err(illegal_option(format!(
                        "unknown NDB_TABLE option '{key}'; known options are {}",
                        NDB_TABLE_KEYS.join(", ")
                    )));
                }
            };
            if seen[slot] {
                return Err(illegal_option(format!(
                    "NDB_TABLE option '{key}' is given twice"
                )));
            }
            seen[slot] = true;
            match slot {
                KEY_READ_BACKUP => updated.read_backup = parse_flag(key, value)?,
                KEY_PARTITION_BALANCE => {
                    updated.partition_balance =
                        PartitionBalance::from_name(value).ok_or_else(|| {
                            let names: Vec<&str> =
                                PartitionBalance::ALL.iter().map(|b| b.name()).collect();
                            illegal_option(format!(
                                "unknown PARTITION_BALANCE '{value}'; expected one of {}",
                                names.join(", ")
                            ))
                        })?;
                }
                KEY_FULLY_REPLICATED => updated.fully_replicated = parse_flag(key, value)?,
                KEY_NOLOGGING => updated.nologging = parse_flag(key, value)?,
                _ => unreachable!("NDB_TABLE_KEYS has four entries"),
            }
        }
        *self = updated;
        Ok(())
    }

    /// The comment that sets these options (all of them, so applying it to
    /// any options gives these back; `partitions` and `distribution_key`
    /// are SQL syntax, not comment options, and are left out).
    pub fn to_ndb_table_comment(&self) -> String {
        format!(
            "{NDB_TABLE_PREFIX}READ_BACKUP={},PARTITION_BALANCE={},FULLY_REPLICATED={},NOLOGGING={}",
            u8::from(self.read_backup),
            self.partition_balance.name(),
            u8::from(self.fully_replicated),
            u8::from(self.nologging),
        )
    }
}

/// The keys `NDB_TABLE=` knows, indexed by the `KEY_*` constants.
const NDB_TABLE_KEYS: [&str; 4] = [
    "READ_BACKUP",
    "PARTITION_BALANCE",
    "FULLY_REPLICATED",
    "NOLOGGING",
];
const KEY_READ_BACKUP: usize = 0;
const KEY_PARTITION_BALANCE: usize = 1;
const KEY_FULLY_REPLICATED: usize = 2;
const KEY_NOLOGGING: usize = 3;

fn illegal_option(detail: String) -> Error {
    Error::new(ErrorCode::IllegalTableOption, detail)
}

fn parse_flag(key: &str, value: &str) -> Result<bool, Error> {
    match value {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err(illegal_option(format!(
            "NDB_TABLE option '{key}' takes 0 or 1, not '{value}'"
        ))),
    }
}

/// The byte offset of the first `NDB_TABLE=` that starts a word, compared case-insensitively. Requiring a word start keeps
/// `XNDB_TABLE=` from counting.
fn find_ndb_table_prefix(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let prefix = NDB_TABLE_PREFIX.as_bytes();
    (0..=bytes.len().checked_sub(prefix.len())?).find(|&start| {
        bytes[start..start + prefix.len()].eq_ignore_ascii_case(prefix)
            && (start == 0 || {
                let before = bytes[start - 1];
                !(before.is_ascii_alphanumeric() || before == b'_')
            })
    })
}

/// The data nodes of a cluster, as node groups, and their LDM thread count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterShape {
    /// Each node group's nodes, in group order; every group has `NoOfReplicas` nodes.
    pub node_groups: Vec<Vec<NodeId>>,
    /// LDM threads on every data node.
    pub ldm_threads: u32,
}

impl ClusterShape {
    /// Groups `nodes` into node groups of `replicas` in the order given, as
    /// NDB does with the `[ndbd]` sections when no `NodeGroup=` is set.
    pub fn in_order(
        nodes: &[NodeId],
        replicas: usize,
        ldm_threads: u32,
    ) -> Result<ClusterShape, Error> {
        if replicas == 0 || !nodes.len().is_multiple_of(replicas) {
            return Err(Error::new(
                ErrorCode::BadConfiguration,
                format!(
                    "{} data nodes do not split into node groups of NoOfReplicas={replicas}",
                    nodes.len()
                ),
            ));
        }
        let shape = ClusterShape {
            node_groups: nodes.chunks(replicas).map(<[NodeId]>::to_vec).collect(),
            ldm_threads,
        };
        shape.validate()?;
        Ok(shape)
    }

    /// Checks that the groups are non-empty and of equal size (1..=4), the
    /// node ids distinct and non-zero, and the LDM thread count 1..=332.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |detail: String| Err(Error::new(ErrorCode::BadConfiguration, detail));
        let Some(first) = self.node_groups.first() else {
            return bad("a cluster needs at least one node group".to_string());
        };
        let replicas = first.len();
        if replicas == 0 || replicas > REPLICAS_MAX {
            return bad(format!(
                "NoOfReplicas must be 1..={REPLICAS_MAX}, node group 0 has {replicas} nodes"
            ));
        }
        if let Some((group, nodes)) = self
            .node_groups
            .iter()
            .enumerate()
            .find(|(_, nodes)| nodes.len() != replicas)
        {
            return bad(format!(
                "every node group needs NoOfReplicas={replicas} nodes, node group {group} has {}",
                nodes.len()
            ));
        }
        let data_nodes = self.data_nodes();
        if data_nodes > DATA_NODES_MAX {
            return bad(format!(
                "{data_nodes} data nodes, more than the limit of {DATA_NODES_MAX}"
            ));
        }
        let mut seen = [false; 256];
        for &node in self.node_groups.iter().flatten() {
            if node == 0 {
                return bad("node id 0 is not a valid data node id".to_string());
            }
            if seen[usize::from(node)] {
                return bad(format!("node {node} is in more than one place"));
            }
            seen[usize::from(node)] = true;
        }
        if self.ldm_threads == 0 || self.ldm_threads > LDM_THREADS_MAX {
            return bad(format!(
                "LDM threads must be 1..={LDM_THREADS_MAX}, not {}",
                self.ldm_threads
            ));
        }
        Ok(())
    }

    /// Nodes per node group (`NoOfReplicas`).
    pub fn replicas(&self) -> usize {
        self.node_groups.first().map_or(0, Vec::len)
    }

    /// Data nodes in the cluster.
    pub fn data_nodes(&self) -> usize {
        self.node_groups.iter().map(Vec::len).sum()
    }
}

/// Where one copy of a partition lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub node_group: u16,
    /// The nodes holding a replica; `[0]` is the primary, then the backups.
    pub replicas: Vec<NodeId>,
    /// The LDM thread index that owns the partition on each of its nodes.
    pub ldm: u32,
}

impl Partition {
    /// The node holding the primary replica.
    pub fn primary(&self) -> NodeId {
        self.replicas[0]
    }

    /// The nodes holding backup replicas, in takeover order.
    pub fn backups(&self) -> &[NodeId] {
        &self.replicas[1..]
    }
}

/// A table's partitions, their placement, and its hash map of buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMap {
    partition_count: u32,
    fully_replicated: bool,
    /// Copy-major: copy `c` of partition `p` is at `c × partition_count + p`.
    /// An ordinary table has one copy of each partition.
    copies: Vec<Partition>,
    /// The partition owning each of the `HASH_MAP_BUCKETS` buckets.
    bucket_map: Vec<u16>,
}

impl PartitionMap {
    /// The partition map of a table with `options` on a cluster of `shape`.
    pub fn compute(shape: &ClusterShape, options: &TableOptions) -> Result<PartitionMap, Error> {
        shape.validate()?;
        options.validate()?;
        let node_groups = shape.node_groups.len() as u32;
        let replicas = shape.replicas() as u32;
        let partition_count = match options.partitions {
            Some(count) => count,
            None => {
                // A fully replicated table is partitioned as if the cluster
                // were one node group, then copied to every group.
                let groups_counted = if options.fully_replicated {
                    1
                } else {
                    node_groups
                };
                let count = options.partition_balance.partition_count(
                    groups_counted,
                    replicas,
                    shape.ldm_threads,
                );
                if count > PARTITIONS_MAX {
                    return Err(Error::new(
                        ErrorCode::TooManyPartitions,
                        format!(
                            "PARTITION_BALANCE={} gives {count} partitions on this cluster, \
                             more than {PARTITIONS_MAX}; choose a smaller balance or PARTITIONS n",
                            options.partition_balance.name()
                        ),
                    ));
                }
                count
            }
        };
        assert!((1..=PARTITIONS_MAX).contains(&partition_count));

        let mut copies = Vec::new();
        if options.fully_replicated {
            for (group_index, group) in shape.node_groups.iter().enumerate() {
                for ordinal in 0..partition_count {
                    copies.push(place(group_index, group, ordinal, shape.ldm_threads));
                }
            }
        } else {
            for partition in 0..partition_count {
                let group_index = (partition % node_groups) as usize;
                let ordinal = partition / node_groups;
                copies.push(place(
                    group_index,
                    &shape.node_groups[group_index],
                    ordinal,
                    shape.ldm_threads,
                ));
            }
        }
        let bucket_map = (0..HASH_MAP_BUCKETS)
            .map(|bucket| default_partition_of_bucket(partition_count, bucket) as u16)
            .collect();
        Ok(PartitionMap {
            partition_count,
            fully_replicated: options.fully_replicated,
            copies,
            bucket_map,
        })
    }

    pub fn partition_count(&self) -> u32 {
        self.partition_count
    }

    /// Whether every node group holds a copy of every partition.
    pub fn fully_replicated(&self) -> bool {
        self.fully_replicated
    }

    /// Copies of each partition: the node group count for a fully
    /// replicated table, 1 otherwise.
    pub fn copies_per_partition(&self) -> usize {
        self.copies.len() / self.partition_count as usize
    }

    /// Partition `partition`, or for a fully replicated table its main copy
    /// (in node group 0). Panics if `partition` is out of range.
    pub fn partition(&self, partition: u32) -> &Partition {
        assert!(
            partition < self.partition_count,
            "partition {partition} of a table with {} partitions",
            self.partition_count
        );
        &self.copies[partition as usize]
    }

    /// Every copy of `partition`, one per node group holding it, in node
    /// group order: one for an ordinary table, one per node group for a
    /// fully replicated one. Panics if `partition` is out of range.
    pub fn copies(&self, partition: u32) -> impl Iterator<Item = &Partition> + '_ {
        assert!(
            partition < self.partition_count,
            "partition {partition} of a table with {} partitions",
            self.partition_count
        );
        self.copies
            .iter()
            .skip(partition as usize)
            .step_by(self.partition_count as usize)
    }

    /// The partitions `node` holds a replica of, in partition order, each
    /// with whether the node holds the primary. A node is in one node
    /// group, so it holds at most one copy of each partition.
    pub fn partitions_on(&self, node: NodeId) -> impl Iterator<Item = (u32, bool)> + '_ {
        (0..self.partition_count).filter_map(move |partition| {
            self.copies(partition)
                .find(|copy| copy.replicas.contains(&node))
                .map(|copy| (partition, copy.primary() == node))
        })
    }

    /// The partition owning hash map bucket `bucket` (< `HASH_MAP_BUCKETS`).
    pub fn partition_of_bucket(&self, bucket: u32) -> u32 {
        u32::from(self.bucket_map[bucket as usize])
    }

    /// The partition a row with this key hash lives in.
    #[inline]
    pub fn partition_of_hash(&self, hash: u64) -> u32 {
        self.partition_of_bucket(bucket_of_hash(hash))
    }

    /// The partition of a row whose distribution key has this sortable
    /// encoding (from one of the `encode_distribution_key_from_*` functions).
    #[inline]
    pub fn partition_of_key(&self, encoded_key: &[u8]) -> u32 {
        self.partition_of_hash(key_hash(encoded_key))
    }

    /// The map as `ndb_desc -p` would list it: a header, then one line per
    /// partition copy (one per partition for an ordinary table).
    pub fn render(&self) -> String {
        let mut out = String::from("Partition\tNode group\tPrimary\tBackups\tLDM\n");
        for partition in 0..self.partition_count {
            for copy in self.copies(partition) {
                let backups: Vec<String> = copy.backups().iter().map(u8::to_string).collect();
                let backups = if backups.is_empty() {
                    "-".to_string()
                } else {
                    backups.join(",")
                };
                // Writing to a String cannot fail.
                let _ = writeln!(
                    out,
                    "{partition}\t{}\t{}\t{backups}\t{}",
                    copy.node_group,
                    copy.primary(),
                    copy.ldm
                );
            }
        }
        out
    }
}

/// The effective distribution key of `table` under `options`, borrowed:
/// the `PARTITION BY KEY` columns, or the primary key if there are none.
#[inline]
pub fn distribution_key_columns<'a>(
    table: &'a TableDef,
    options: &'a TableOptions,
) -> &'a [ColumnId] {
    if options.distribution_key.is_empty() {
        &table.primary_key
    } else {
        &options.distribution_key
    }
}

/// The effective distribution key of `table` under `options`: the
/// `PARTITION BY KEY` columns, or the primary key if there are none.
pub fn distribution_key(table: &TableDef, options: &TableOptions) -> Vec<ColumnId> {
    distribution_key_columns(table, options).to_vec()
}

/// Appends the distribution key of a stored row, the bytes
/// `PartitionMap::partition_of_key` takes. `options` must have passed
/// `validate_for(table)`.
#[inline]
pub fn encode_distribution_key_from_row(
    table: &TableDef,
    options: &TableOptions,
    row: RowView<'_>,
    out: &mut Vec<u8>,
) {
    encode_row_key(table, distribution_key_columns(table, options), row, out);
}

/// Appends the distribution key of a primary key given as AttrInfo (every
/// primary-key column once, in any order), the bytes
/// `PartitionMap::partition_of_key` takes. `options` must have passed
/// `validate_for(table)`.
///
/// The whole primary key is checked as the LDM's `key::encode_attrinfo_key`
/// checks it, with the same errors, so a key is routed to a partition only
/// if the LDM there would accept it. On error nothing is appended.
pub fn encode_distribution_key_from_attrinfo(
    table: &TableDef,
    options: &TableOptions,
    attrinfo: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let start = out.len();
    encode_attrinfo_key(table, &table.primary_key, attrinfo, false, out)?;
    let columns = distribution_key_columns(table, options);
    if columns == table.primary_key.as_slice() {
        // The primary key's encoding is the distribution key's.
        return Ok(());
    }
    out.truncate(start);
    assert!(
        columns.len() <= KEY_COLUMNS_MAX,
        "a distribution key is part of a primary key of at most {KEY_COLUMNS_MAX} columns"
    );
    // Per distribution-key column: None = not in the AttrInfo, else its value.
    // On the stack: this runs for every key routed.
    let mut given: [Option<Option<&[u8]>>; KEY_COLUMNS_MAX] = [None; KEY_COLUMNS_MAX];
    for entry in AttrInfoReader::new(attrinfo) {
        // encode_attrinfo_key has read the whole stream without error.
        let (column, value) = entry?;
        if let Some(position) = columns.iter().position(|&key_column| key_column == column) {
            given[position] = Some(value);
        }
    }
    for (&column, value) in columns.iter().zip(&given) {
        let Some(value) = *value else {
            // Only options not validated for this table get here: the
            // AttrInfo holds exactly the primary key, and the column is not
            // in it (it may not even be in the table).
            out.truncate(start);
            return Err(Error::new(
                ErrorCode::DistributionKeyOutsidePrimaryKey,
                format!("distribution key column #{column} is not in the primary key"),
            ));
        };
        let definition = &table.columns[usize::from(column)];
        encode_key_column(&definition.column_type, definition.nullable, value, out);
    }
    Ok(())
}

/// Appends the distribution key of a row or key given as typed values, the
/// bytes `PartitionMap::partition_of_key` takes: what a client computes to
/// pick the node to start a transaction on. `values` must give every
/// distribution-key column once (`WrongKey` otherwise) and may give other
/// columns too, which are ignored, so a whole row or its primary key both
/// do. `options` must have passed `validate_for(table)`.
///
/// Each value is checked as an insert would check it (`WrongValue`,
/// `DataTooLong`, `NullNotAllowed`). On error nothing is appended.
pub fn encode_distribution_key_from_values(
    table: &TableDef,
    options: &TableOptions,
    values: &[(ColumnId, Value)],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let start = out.len();
    let result = append_distribution_key_from_values(table, options, values, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn append_distribution_key_from_values(
    table: &TableDef,
    options: &TableOptions,
    values: &[(ColumnId, Value)],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut stored = Vec::new();
    for &column in distribution_key_columns(table, options) {
        let definition = table.columns.get(usize::from(column)).ok_or_else(|| {
            Error::new(
                ErrorCode::NoSuchDistributionKeyColumn,
                format!(
                    "distribution key names column #{column}, which table '{}' lacks",
                    table.name
                ),
            )
        })?;
        let mut matching = values.iter().filter(|(id, _)| *id == column);
        let Some((_, value)) = matching.next() else {
            return Err(Error::new(
                ErrorCode::WrongKey,
                format!("no value for distribution key column '{}'", definition.name),
            ));
        };
        if matching.next().is_some() {
            return Err(Error::new(
                ErrorCode::WrongKey,
                format!(
                    "distribution key column '{}' is given twice",
                    definition.name
                ),
            ));
        }
        if matches!(value, Value::Null) {
            if !definition.nullable {
                return Err(Error::new(
                    ErrorCode::NullNotAllowed,
                    format!("distribution key column '{}' given NULL", definition.name),
                ));
            }
            encode_key_column(&definition.column_type, true, None, out);
            continue;
        }
        stored.clear();
        value
            .encode(&definition.column_type, &mut stored)
            .map_err(|error| {
                Error::new(
                    error.code,
                    format!("column '{}': {}", definition.name, error.detail),
                )
            })?;
        encode_key_column(
            &definition.column_type,
            definition.nullable,
            Some(&stored),
            out,
        );
    }
    Ok(())
}

/// The partition owning `bucket` in the hash map a table gets at creation:
/// buckets dealt round-robin. Clients and coordinators that know only a
/// table's partition count route with this; `PartitionMap` is built from it.
#[inline]
pub fn default_partition_of_bucket(partition_count: u32, bucket: u32) -> u32 {
    assert!(partition_count > 0, "a table has at least one partition");
    bucket % partition_count
}

/// The hash map bucket of a key hash.
#[inline]
pub fn bucket_of_hash(hash: u64) -> u32 {
    (hash % u64::from(HASH_MAP_BUCKETS)) as u32
}

/// Places the `ordinal`-th partition of node group `group_index` (see the
/// module documentation for why this spreads primaries and LDM threads).
fn place(group_index: usize, group: &[NodeId], ordinal: u32, ldm_threads: u32) -> Partition {
    let replicas = group.len() as u32;
    assert!(replicas >= 1);
    assert!(ldm_threads >= 1);
    let cycle_position = ordinal % (replicas * ldm_threads);
    let run_length = least_common_multiple(replicas, ldm_threads);
    let ldm = (cycle_position + cycle_position / run_length) % ldm_threads;
    let primary_index = (ordinal % replicas) as usize;
    let replica_nodes = (0..group.len())
        .map(|offset| group[(primary_index + offset) % group.len()])
        .collect();
    Partition {
        node_group: u16::try_from(group_index).expect("at most 144 node groups"),
        replicas: replica_nodes,
        ldm,
    }
}

fn least_common_multiple(a: u32, b: u32) -> u32 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}
