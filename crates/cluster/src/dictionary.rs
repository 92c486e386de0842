//! Dictionary changes: turning an API node's create or drop request into a
//! `Change` the cluster agrees on. The president plans the change against
//! the current state (table id, partition map), so every node applies the
//! same entry; planning validates everything, so a decided change always
//! applies.
//!
//! Answers are true under failures and retries. A change carries the
//! request that asked for it (API node, request id, kept across the
//! client's retries) and the agreed state remembers it
//! (`ClusterState::schema_outcomes`), so a retry whose first attempt was
//! applied, on whichever president, gets the first attempt's answer rather
//! than "already exists" or "does not exist". NDB's DBDICT gets the same
//! from its schema transactions: the API's transaction key survives a
//! master takeover, and the new master finishes or rolls back each one.
//!
//! A create the members cannot hold is refused as a whole, before it is
//! proposed: the president counts each node's fragment replicas in the
//! dictionary (`FRAGMENT_REPLICAS_PER_NODE_MAX`) and compares the pages the
//! new fragments need with the free DataMemory each member last reported in
//! its heartbeat, less what tables created since that report take. The
//! decision is the president's, so it is agreed like the change itself;
//! nodes never refuse a decided change on their own. A refusal is final
//! only when no plan of the same request can still be decided: the
//! president proposes a request it already has in flight again instead of
//! planning it afresh (`data_node`), as NDB's new DICT master, at
//! takeover, first settles each schema transaction in flight (completes
//! it or rolls it back).

use std::collections::BTreeMap;

use protocol::{
    Change, ClusterState, ErrorReply, Fragment, FreePages, NodeId, SchemaChange, SchemaRequestId,
    TableEntry,
};
use schema::distribution::{ClusterShape, PartitionMap};
use schema::{Error, ErrorCode};

use crate::data_node::DataNodeSettings;

/// Most fragment replicas one data node holds: its query handler gives each
/// an engine table (`transaction::query_handler::FRAGMENT_REPLICAS_PER_NODE_MAX`
/// is the same number; the simulator's tests check that they agree).
pub const FRAGMENT_REPLICAS_PER_NODE_MAX: u32 = 8_192;
/// DataMemory pages every new fragment replica needs: one for its hash
/// index, taken when it is created, and one for its first rows, so a table
/// that is created can also be written (variable-size parts and ordered
/// indexes add a page each).
pub const FRAGMENT_PAGES_MIN: u64 = 2;
/// NDB's 711, the one temporary refusal planning gives (a node has not
/// reported its memory yet): the request may be retried and then applied.
pub const NOT_YET_NDB_CODE: u16 = 711;
/// NDB's 827, table full: a create the members' free DataMemory cannot hold.
pub const TABLE_FULL_NDB_CODE: u16 = 827;
/// Largest encoded table definition accepted.
pub const DEFINITION_BYTES_MAX: usize = 256 * 1024;
/// Largest dictionary, as it travels whole in a `Decided` message: well
/// under the frame limit (`protocol::frame::FRAME_PAYLOAD_BYTES_MAX`).
pub const DICTIONARY_BYTES_MAX: usize = 8 << 20;

/// Table metadata objects `table` takes, as NDB counts them against
/// MaxNoOfTables: the table and each of its unique hash indexes (NDB keeps
/// a unique index as a hidden table). Ordered indexes count against NDB's
/// MaxNoOfOrderedIndexes instead, and Shoal's auto-increment sequence is
/// NDB's row in SYSTAB_0, so neither counts here. A definition that no
/// longer decodes (it was validated when planned) counts as the table alone.
pub fn table_objects_of(table: &TableEntry) -> u64 {
    let unique_indexes = schema::table_codec::decode_table(&table.definition)
        .map_or(0, |(def, _)| {
            def.ordered_indexes.iter().filter(|i| i.unique).count() as u64
        });
    1 + unique_indexes
}

/// Table metadata objects in the dictionary (see [`table_objects_of`]).
pub fn table_objects(state: &ClusterState) -> u64 {
    state.tables.iter().map(table_objects_of).sum()
}

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

/// Plans `request`, asked by `origin`, against `state`. `free_pages` holds
/// the members' last DataMemory reports; a create waits (a temporary
/// error) until every node it places fragments on has reported.
pub fn plan(
    state: &ClusterState,
    request: &SchemaChange,
    origin: SchemaRequestId,
    settings: &DataNodeSettings,
    free_pages: &BTreeMap<NodeId, FreePages>,
) -> Result<Change, ErrorReply> {
    assert!(
        state.schema_outcome(origin).is_none(),
        "an applied request is answered from its outcome, not planned again"
    );
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
            let held = table_objects(state);
            let unique_indexes = table.ordered_indexes.iter().filter(|i| i.unique).count() as u64;
            let adding = 1 + unique_indexes;
            if held + adding > u64::from(settings.tables_max) {
                return Err(ErrorReply {
                    ndb_code: 707,
                    mysql_code: 1005,
                    message: format!(
                        "no more table metadata objects: the dictionary holds {held} tables and \
                         unique indexes, and table '{}' would add {adding}, more than \
                         MaxNoOfTables={}: drop tables or increase MaxNoOfTables",
                        table.name, settings.tables_max
                    ),
                });
            }
            if options.fully_replicated && settings.node_groups.len() > 1 {
                // The coordinators write a row to the copy of one node
                // group only (`fragment_near`), while each node reads its
                // own group's: refused, not served wrong.
                return Err(reply(Error::new(
                    ErrorCode::IllegalTableOption,
                    format!(
                        "FULLY_REPLICATED=1 for table '{}' on {} node groups: a write reaches \
                         the copy of one node group only in this version, so the others would \
                         read without it; use READ_BACKUP=1 (the default), or one node group",
                        table.name,
                        settings.node_groups.len()
                    ),
                )));
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
            check_members_hold(state, &entry, settings, free_pages)?;
            Ok(Change::CreateTable {
                table: entry,
                origin,
            })
        }
        SchemaChange::RenameTable { from, to } => {
            let Some(table) = state.table_by_name(from) else {
                return Err(reply(Error::new(
                    ErrorCode::NoSuchTable,
                    format!("table '{from}' does not exist"),
                )));
            };
            if state.table_by_name(to).is_some() {
                return Err(reply(Error::new(
                    ErrorCode::TableExists,
                    format!("table '{to}' already exists"),
                )));
            }
            let (mut def, options) =
                schema::table_codec::decode_table(&table.definition).map_err(reply)?;
            def.name = to.clone();
            let mut definition = Vec::new();
            schema::table_codec::encode_table(&def, &options, &mut definition);
            // The name went through the same checks as a created table's.
            schema::table_codec::decode_table(&definition).map_err(reply)?;
            Ok(Change::RenameTable {
                table_id: table.id,
                name: to.clone(),
                definition,
                origin,
            })
        }
        SchemaChange::DropTable { name } => match state.table_by_name(name) {
            Some(table) => Ok(Change::DropTable {
                table_id: table.id,
                origin,
            }),
            None => Err(reply(Error::new(
                ErrorCode::NoSuchTable,
                format!("table '{name}' does not exist"),
            ))),
        },
    }
}

/// What a table's fragment replicas take on one node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NodeNeed {
    /// Engine tables: fragment replicas, hidden tables' included.
    replicas: u64,
    /// DataMemory pages for them to be created and take a first row.
    pages: u64,
}

/// DataMemory pages a fragment replica of `def` needs to be created and to
/// take its first row: its hash index page, a page of fixed-size rows, one
/// of variable-size parts if it has any, and one per ordered index.
fn fragment_pages(def: &schema::TableDef) -> u64 {
    FRAGMENT_PAGES_MIN + u64::from(def.layout.var_columns > 0) + def.ordered_indexes.len() as u64
}

/// What `table` places on each node, counting its hidden tables as the
/// nodes' query handlers create them: one per unique index with the
/// table's fragments, and the auto-increment sequence with one partition
/// on the replicas of the first fragment.
fn needs_per_node(table: &TableEntry) -> BTreeMap<NodeId, NodeNeed> {
    // A definition that no longer decodes (it was validated when planned)
    // counts as the smallest table.
    let (unique_indexes, pages) = schema::table_codec::decode_table(&table.definition).map_or(
        (0, FRAGMENT_PAGES_MIN),
        |(def, _)| {
            let unique = def.ordered_indexes.iter().filter(|i| i.unique).count() as u64;
            // A unique index's hidden table: its key may be variable-sized.
            (
                unique,
                fragment_pages(&def) + unique * (FRAGMENT_PAGES_MIN + 1),
            )
        },
    );
    let mut needs: BTreeMap<NodeId, NodeNeed> = BTreeMap::new();
    for fragment in &table.fragments {
        for node in &fragment.replicas {
            let need = needs.entry(*node).or_default();
            need.replicas += 1 + unique_indexes;
            need.pages += pages;
        }
    }
    if let Some(first) = table.fragments.first() {
        for node in &first.replicas {
            let need = needs.entry(*node).or_default();
            need.replicas += 1;
            need.pages += FRAGMENT_PAGES_MIN;
        }
    }
    needs
}

/// DataMemory pages `table` needs on each node it places fragments on (as
/// the president counts them when it plans a create).
pub fn pages_per_node(table: &TableEntry) -> BTreeMap<NodeId, u64> {
    needs_per_node(table)
        .into_iter()
        .map(|(node, need)| (node, need.pages))
        .collect()
}

/// Refuses `entry` unless every node it places fragments on has an engine
/// table for each and, by its last report, the DataMemory for them.
fn check_members_hold(
    state: &ClusterState,
    entry: &TableEntry,
    settings: &DataNodeSettings,
    free_pages: &BTreeMap<NodeId, FreePages>,
) -> Result<(), ErrorReply> {
    let existing: Vec<BTreeMap<NodeId, NodeNeed>> =
        state.tables.iter().map(needs_per_node).collect();
    for (node, need) in needs_per_node(entry) {
        let held: u64 = existing
            .iter()
            .map(|needs| needs.get(&node).map_or(0, |n| n.replicas))
            .sum();
        if held + need.replicas > u64::from(settings.fragment_replicas_per_node_max) {
            return Err(ErrorReply {
                ndb_code: 707,
                mysql_code: 1005,
                message: format!(
                    "no more table metadata objects: data node {node} holds {held} fragment \
                     replicas and table '{}' would add {}, more than the maximum of {} per \
                     node: drop tables or use fewer partitions",
                    entry.name, need.replicas, settings.fragment_replicas_per_node_max
                ),
            });
        }
        let Some(report) = free_pages.get(&node) else {
            // Heartbeats carry the report, and a joining node sends one as
            // soon as it installs the state that admits it: the wait is short.
            return Err(ErrorReply {
                ndb_code: NOT_YET_NDB_CODE,
                mysql_code: 1297,
                message: format!(
                    "cannot create table '{}' yet: data node {node} has not reported its free \
                     DataMemory (it is starting): a temporary error, retry",
                    entry.name
                ),
            });
        };
        // Tables created after the report took pages the report still
        // counts as free.
        let taken_since: u64 = state
            .tables
            .iter()
            .zip(&existing)
            .filter(|(table, _)| table.schema_version > report.schema_version)
            .map(|(_, needs)| needs.get(&node).map_or(0, |n| n.pages))
            .sum();
        let free = report.pages.saturating_sub(taken_since);
        if free < need.pages {
            return Err(reply(Error::new(
                ErrorCode::TableFull,
                format!(
                    "cannot create table '{}': data node {node} has {free} free DataMemory pages \
                     and its {} fragment replicas need {}: increase DataMemory or free memory, \
                     then retry",
                    entry.name, need.replicas, need.pages
                ),
            )));
        }
    }
    Ok(())
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
            api_heartbeat_interval_ms: 200,
            missed_heartbeats_max: 4,
            arbitration_timeout_ms: 1_000,
            tables_max: 1_024,
            fragment_replicas_per_node_max: FRAGMENT_REPLICAS_PER_NODE_MAX,
        }
    }

    fn origin(request: u64) -> SchemaRequestId {
        SchemaRequestId { node: 250, request }
    }

    /// Both nodes report plenty of free DataMemory.
    fn roomy() -> BTreeMap<NodeId, FreePages> {
        [2, 3]
            .into_iter()
            .map(|node| {
                let free = FreePages {
                    pages: 1 << 40,
                    schema_version: 0,
                };
                (node, free)
            })
            .collect()
    }

    fn plan_for(
        state: &ClusterState,
        request: &SchemaChange,
        id: u64,
    ) -> Result<Change, ErrorReply> {
        plan(state, request, origin(id), &settings(), &roomy())
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
        let Change::CreateTable { table, .. } =
            plan_for(&state, &create("t", &TableOptions::default()), 1).expect("plans")
        else {
            panic!("a create plans a CreateTable");
        };
        assert_eq!(table.id, 0);
        // FOR_RP_BY_LDM: 2 nodes × 2 LDM threads.
        assert_eq!(table.partition_count, 4);
        assert_eq!(table.fragments.len(), 4);
    }

    #[test]
    fn a_rename_keeps_the_id_and_rewrites_the_name_in_the_definition() {
        let mut state = ClusterState::default();
        for (request, name) in [(1, "a"), (2, "b")] {
            let Ok(Change::CreateTable { table, .. }) =
                plan_for(&state, &create(name, &TableOptions::default()), request)
            else {
                panic!("plans");
            };
            state.next_table_id = table.id + 1;
            state.tables.push(table);
        }
        let rename = |from: &str, to: &str| SchemaChange::RenameTable {
            from: from.into(),
            to: to.into(),
        };
        let error = plan_for(&state, &rename("missing", "c"), 3).expect_err("no such table");
        assert_eq!(error.mysql_code, 1146, "{error:?}");
        let error = plan_for(&state, &rename("a", "b"), 4).expect_err("b exists");
        assert_eq!(error.mysql_code, 1050, "{error:?}");
        let Ok(change @ Change::RenameTable { table_id, .. }) =
            plan_for(&state, &rename("a", "c"), 5)
        else {
            panic!("a rename plans a RenameTable");
        };
        assert_eq!(table_id, state.tables[0].id);
        let next = crate::state::apply(&state, &change);
        let renamed = next.table_by_name("c").expect("renamed");
        assert_eq!(renamed.id, table_id);
        assert_eq!(renamed.fragments, state.tables[0].fragments);
        let (def, _) = schema::table_codec::decode_table(&renamed.definition).expect("decodes");
        assert_eq!(def.name, "c");
        assert!(next.table_by_name("a").is_none());
        assert_eq!(next.schema_version, state.schema_version + 1);
    }

    #[test]
    fn duplicate_names_and_unknown_drops_are_refused() {
        let mut state = ClusterState::default();
        let Ok(Change::CreateTable { table, .. }) =
            plan_for(&state, &create("t", &TableOptions::default()), 1)
        else {
            panic!("plans");
        };
        state.tables.push(table);
        let error = plan_for(&state, &create("T", &TableOptions::default()), 2)
            .expect_err("names are case-insensitive");
        assert_eq!(error.mysql_code, 1050, "{error:?}");
        let error = plan_for(&state, &SchemaChange::DropTable { name: "u".into() }, 3)
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
            let settings = DataNodeSettings {
                // This test is about bytes; the per-node limit comes first otherwise.
                fragment_replicas_per_node_max: u32::MAX,
                ..settings()
            };
            let request = create(&format!("t{created}"), &big);
            match plan(&state, &request, origin(created), &settings, &roomy()) {
                Ok(Change::CreateTable { table, .. }) => {
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

    /// A table with `unique_indexes` unique hash indexes, each on its own column.
    fn create_with_unique_indexes(name: &str, unique_indexes: u16) -> SchemaChange {
        let mut columns = vec![ColumnDef::new(
            "id",
            ColumnType::Int { unsigned: false },
            false,
        )];
        let mut indexes = Vec::new();
        for index in 0..unique_indexes {
            columns.push(ColumnDef::new(
                &format!("c{index}"),
                ColumnType::Int { unsigned: false },
                false,
            ));
            indexes.push(schema::IndexDef {
                name: format!("u{index}"),
                columns: vec![index + 1],
                unique: true,
            });
        }
        let table = TableDef::new(name, columns, vec![0], indexes).expect("valid");
        let mut definition = Vec::new();
        schema::table_codec::encode_table(&table, &TableOptions::default(), &mut definition);
        SchemaChange::CreateTable { definition }
    }

    /// MaxNoOfTables counts table metadata objects as NDB does: each table
    /// and each unique hash index (NDB makes it a hidden table). A create
    /// that would pass the limit is refused whole with 707.
    #[test]
    fn max_no_of_tables_counts_tables_and_unique_indexes() {
        let settings = DataNodeSettings {
            tables_max: 8,
            ..settings()
        };
        let mut state = ClusterState::default();
        // Two tables with two unique indexes each: 6 objects.
        for (id, name) in ["a", "b"].into_iter().enumerate() {
            let change = plan(
                &state,
                &create_with_unique_indexes(name, 2),
                origin(id as u64),
                &settings,
                &roomy(),
            )
            .expect("fits");
            apply_create(&mut state, change);
        }
        assert_eq!(table_objects(&state), 6);
        // A third with two unique indexes would make 9.
        let error = plan(
            &state,
            &create_with_unique_indexes("c", 2),
            origin(10),
            &settings,
            &roomy(),
        )
        .expect_err("9 objects exceed MaxNoOfTables=8");
        assert_eq!(error.ndb_code, 707, "{error:?}");
        assert_eq!(error.mysql_code, 1005, "{error:?}");
        assert!(error.message.contains("MaxNoOfTables"), "{error:?}");
        // Two plain tables fit exactly; the next does not.
        for (id, name) in ["d", "e"].into_iter().enumerate() {
            let change = plan(
                &state,
                &create(name, &TableOptions::default()),
                origin(20 + id as u64),
                &settings,
                &roomy(),
            )
            .expect("fits");
            apply_create(&mut state, change);
        }
        assert_eq!(table_objects(&state), 8);
        let error = plan(
            &state,
            &create("f", &TableOptions::default()),
            origin(30),
            &settings,
            &roomy(),
        )
        .expect_err("the 9th object");
        assert_eq!(error.ndb_code, 707, "{error:?}");
        assert_eq!(state.tables.len(), 4, "a refused create adds nothing");
        // A drop frees its objects for the next create.
        state.tables.retain(|t| t.name != "a");
        plan(
            &state,
            &create_with_unique_indexes("g", 2),
            origin(40),
            &settings,
            &roomy(),
        )
        .expect("the dropped table's objects are free again");
    }

    fn apply_create(state: &mut ClusterState, change: Change) {
        let Change::CreateTable { table, .. } = change else {
            panic!("a create plans a CreateTable");
        };
        state.next_table_id = table.id + 1;
        state.schema_version = table.schema_version;
        state.tables.push(table);
    }

    #[test]
    fn a_create_the_nodes_have_no_fragment_replicas_for_is_refused_whole() {
        let settings = DataNodeSettings {
            fragment_replicas_per_node_max: 12,
            ..settings()
        };
        let mut state = ClusterState::default();
        // Four partitions, each on both nodes, and the one-partition
        // sequence table: five replicas per node.
        for (id, name) in ["a", "b"].into_iter().enumerate() {
            let request = create(name, &TableOptions::default());
            let change =
                plan(&state, &request, origin(id as u64), &settings, &roomy()).expect("fits");
            apply_create(&mut state, change);
        }
        let request = create("c", &TableOptions::default());
        let error = plan(&state, &request, origin(9), &settings, &roomy())
            .expect_err("15 replicas on a node of at most 12");
        assert_eq!(error.ndb_code, 707, "{error:?}");
        assert!(error.message.contains("data node 2"), "{error:?}");
    }

    #[test]
    fn a_create_the_nodes_lack_data_memory_for_is_refused_whole() {
        let mut state = ClusterState::default();
        let request = create("a", &TableOptions::default());
        let error = plan(&state, &request, origin(1), &settings(), &BTreeMap::new())
            .expect_err("no reports yet");
        assert_eq!(error.ndb_code, 711, "a temporary error: {error:?}");
        // Five replicas per node (four fragments and the sequence) need 10
        // pages; node 3 reported 11 free at schema version 0.
        let mut free = BTreeMap::new();
        free.insert(
            2,
            FreePages {
                pages: 1_000,
                schema_version: 0,
            },
        );
        free.insert(
            3,
            FreePages {
                pages: 11,
                schema_version: 0,
            },
        );
        let change = plan(&state, &request, origin(1), &settings(), &free).expect("fits");
        apply_create(&mut state, change);
        // The report predates table a, whose 10 pages it still counts as free.
        let request = create("b", &TableOptions::default());
        let error = plan(&state, &request, origin(2), &settings(), &free)
            .expect_err("1 page left on node 3");
        assert_eq!(error.ndb_code, 827, "{error:?}");
        assert_eq!(error.mysql_code, 1114, "{error:?}");
        assert!(error.message.contains("data node 3"), "{error:?}");
        assert!(error.message.contains("DataMemory"), "{error:?}");
        // A newer report that counts table a and shows room again lets it in.
        free.insert(
            3,
            FreePages {
                pages: 10,
                schema_version: state.schema_version,
            },
        );
        plan(&state, &request, origin(2), &settings(), &free).expect("room after all");
    }
}
