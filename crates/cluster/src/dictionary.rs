//! Dictionary changes: turning an API node's create or drop request into a
//! `Change` the cluster agrees on. The president plans the change against
//! the current state (table id, partition map), so every node applies the
//! same entry; planning validates everything, so a decided change always
//! applies.

use protocol::{Change, ClusterState, ErrorReply, Fragment, SchemaChange, TableEntry};
use schema::distribution::{ClusterShape, PartitionMap};
use schema::{Error, ErrorCode};

use crate::data_node::DataNodeSettings;

/// Most tables in the dictionary (NDB's MaxNoOfTables default is 128; we
/// allow more because a table costs only its definition until it has rows).
pub const TABLES_MAX: u32 = 1024;
/// Largest encoded table definition accepted.
pub const DEFINITION_BYTES_MAX: usize = 256 * 1024;
/// Largest dictionary, as it travels whole in a `Decided` message: well
/// under the frame limit (`protocol::frame::FRAME_PAYLOAD_BYTES_MAX`).
pub const DICTIONARY_BYTES_MAX: usize = 8 << 20;

/// Bytes a table takes in an encoded cluster state (an upper bound).
pub fn table_bytes(table: &TableEntry) -> usize {
    64 + table.name.len()
        + table.definition.len()
        + table
            .fragments
            .iter()
            .map(|f| 16 + f.replicas.len())
            .sum::<usize>()
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
            let entry = TableEntry {
                id: state.next_table_id,
                name: table.name.clone(),
                schema_version: state.schema_version + 1,
                definition: definition.clone(),
                partition_count: map.partition_count(),
                fully_replicated: map.fully_replicated(),
                read_backup: options.read_backup,
                fragments: fragments(&map),
            };
            let dictionary_bytes: usize =
                state.tables.iter().map(table_bytes).sum::<usize>() + table_bytes(&entry);
            if dictionary_bytes > DICTIONARY_BYTES_MAX {
                return Err(ErrorReply {
                    ndb_code: 707,
                    mysql_code: 1005,
                    message: format!(
                        "the dictionary would take {dictionary_bytes} bytes, more than its limit of \
                         {DICTIONARY_BYTES_MAX}: drop tables or use fewer partitions"
                    ),
                });
            }
            Ok(Change::CreateTable { table: entry })
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

#[cfg(test)]
mod tests {
    use super::*;
    use schema::distribution::TableOptions;
    use schema::{ColumnDef, ColumnType, TableDef};

    fn settings() -> DataNodeSettings {
        DataNodeSettings {
            node: 2,
            incarnation: 1,
            data_nodes: vec![2, 3],
            node_groups: vec![vec![2, 3]],
            ldm_threads: 2,
            management_node: 1,
            arbitrator: Some(1),
            heartbeat_interval_ms: 100,
            missed_heartbeats_max: 4,
            arbitration_timeout_ms: 1_000,
            tables_max: TABLES_MAX,
        }
    }

    fn create(name: &str, options: &TableOptions) -> SchemaChange {
        let table = TableDef::new(
            name,
            vec![ColumnDef::new(
                "id",
                ColumnType::Int { unsigned: false },
                false,
            )],
            vec![0],
            vec![],
        )
        .expect("valid");
        let mut definition = Vec::new();
        schema::table_codec::encode_table(&table, options, &mut definition);
        SchemaChange::CreateTable { definition }
    }

    #[test]
    fn a_create_gets_the_next_id_and_a_partition_map() {
        let state = ClusterState::default();
        let Change::CreateTable { table } =
            plan(&state, &create("t", &TableOptions::default()), &settings()).expect("plans")
        else {
            panic!("a create plans a CreateTable");
        };
        assert_eq!(table.id, 0);
        // FOR_RP_BY_LDM: 2 nodes × 2 LDM threads.
        assert_eq!(table.partition_count, 4);
        assert_eq!(table.fragments.len(), 4);
    }

    #[test]
    fn duplicate_names_and_unknown_drops_are_refused() {
        let mut state = ClusterState::default();
        let Ok(Change::CreateTable { table }) =
            plan(&state, &create("t", &TableOptions::default()), &settings())
        else {
            panic!("plans");
        };
        state.tables.push(table);
        let error = plan(&state, &create("T", &TableOptions::default()), &settings())
            .expect_err("names are case-insensitive");
        assert_eq!(error.mysql_code, 1050, "{error:?}");
        let error = plan(
            &state,
            &SchemaChange::DropTable { name: "u".into() },
            &settings(),
        )
        .expect_err("no such table");
        assert_eq!(error.ndb_code, 723, "{error:?}");
    }

    #[test]
    fn the_dictionary_has_a_size_limit() {
        let mut state = ClusterState::default();
        let big = TableOptions {
            partitions: Some(2048),
            ..TableOptions::default()
        };
        let mut created = 0;
        let error = loop {
            match plan(&state, &create(&format!("t{created}"), &big), &settings()) {
                Ok(Change::CreateTable { table }) => {
                    state.next_table_id = table.id + 1;
                    state.tables.push(table);
                    created += 1;
                }
                Ok(other) => panic!("unexpected {other:?}"),
                Err(error) => break error,
            }
            assert!(created < 1_000, "the limit never came");
        };
        assert_eq!(error.ndb_code, 707, "{error:?}");
        let total: usize = state.tables.iter().map(table_bytes).sum();
        assert!(total <= DICTIONARY_BYTES_MAX);
        assert!(created > 10, "{created} tables of 2048 partitions fit");
    }
}
