//! Dictionary changes: turning an API node's create or drop request into a
//! `Change` the cluster agrees on. The president plans the change against
//! the current state (table id, partition map), so every node applies the
//! same entry; planning validates everything, so a decided change always
//! applies.

use protocol::{Change, ClusterState, ErrorReply, Fragment, NodeId, SchemaChange, TableEntry};
use schema::distribution::{ClusterShape, PartitionMap};
use schema::{Error, ErrorCode};

use crate::data_node::DataNodeSettings;

/// Most tables in the dictionary (NDB's MaxNoOfTables default is 128; we
/// allow more because a table costs only its definition until it has rows).
pub const TABLES_MAX: u32 = 1024;
/// Largest encoded table definition accepted.
pub const DEFINITION_BYTES_MAX: usize = 256 * 1024;

/// The error for a dictionary request sent to a node that does not preside.
pub fn not_president(president: NodeId) -> ErrorReply {
    ErrorReply {
        ndb_code: 702,
        mysql_code: 1297,
        message: format!(
            "request to a node that does not preside: retry at node {president} \
             (a temporary error)"
        ),
    }
}

fn reply(error: Error) -> ErrorReply {
    ErrorReply {
        ndb_code: error.code.ndb_code().unwrap_or(4000),
        mysql_code: error.code.mysql_code(),
        message: error.to_string(),
    }
}

/// Plans `request` against `state`.
pub fn plan(
    state: &ClusterState,
    request: &SchemaChange,
    settings: &DataNodeSettings,
) -> Result<Change, ErrorReply> {
    match request {
        SchemaChange::CreateTable { definition } => {
            if definition.len() > DEFINITION_BYTES_MAX {
                return Err(reply(Error::new(
                    ErrorCode::WrongColumnSpec,
                    format!("table definition exceeds {DEFINITION_BYTES_MAX} bytes"),
                )));
            }
            let (table, options) = schema::table_codec::decode_table(definition).map_err(reply)?;
            if state.table_by_name(&table.name).is_some() {
                return Err(reply(Error::new(
                    ErrorCode::TableExists,
                    format!("table '{}' already exists", table.name),
                )));
            }
            if state.tables.len() as u32 >= settings.tables_max {
                return Err(ErrorReply {
                    ndb_code: 707,
                    mysql_code: 1005,
                    message: format!(
                        "no more table metadata objects: the dictionary holds the maximum of {} \
                         tables",
                        settings.tables_max
                    ),
                });
            }
            let shape = ClusterShape {
                node_groups: settings.node_groups.clone(),
                ldm_threads: settings.ldm_threads,
            };
            let map = PartitionMap::compute(&shape, &options).map_err(reply)?;
            Ok(Change::CreateTable {
                table: TableEntry {
                    id: state.next_table_id,
                    name: table.name.clone(),
                    schema_version: state.schema_version + 1,
                    definition: definition.clone(),
                    partition_count: map.partition_count(),
                    fully_replicated: map.fully_replicated(),
                    read_backup: options.read_backup,
                    fragments: fragments(&map),
                },
            })
        }
        SchemaChange::DropTable { name } => match state.table_by_name(name) {
            Some(table) => Ok(Change::DropTable { table_id: table.id }),
            None => Err(reply(Error::new(
                ErrorCode::NoSuchTable,
                format!("table '{name}' does not exist"),
            ))),
        },
    }
}

/// Every fragment of the map: one per partition, or one per partition and
/// node group for fully replicated tables.
pub fn fragments(map: &PartitionMap) -> Vec<Fragment> {
    let mut out = Vec::new();
    for partition in 0..map.partition_count() {
        for copy in map.copies(partition) {
            out.push(Fragment {
                partition,
                node_group: copy.node_group,
                replicas: copy.replicas.clone(),
                ldm: copy.ldm,
            });
        }
    }
    out
}

/// A table's fragments as `ndb_desc -p` prints them.
pub fn render_fragments(table: &TableEntry) -> String {
    let mut out = String::from("Partition\tNode group\tPrimary\tBackups\tLDM\n");
    for fragment in &table.fragments {
        let backups: Vec<String> = fragment.replicas[1..]
            .iter()
            .map(|n| n.to_string())
            .collect();
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            fragment.partition,
            fragment.node_group,
            fragment.replicas[0],
            backups.join(","),
            fragment.ldm
        ));
    }
    out
}
