//! The second pass: checks that look across sections, and the building of
//! the [`ClusterConfig`].
//!
//! The checks run in a fixed order so that each can rely on the earlier
//! ones: the node sections exist, NoOfReplicas agrees, explicit ids are
//! unique, the rest get ids, the data nodes split into node groups, and
//! `[tcp]` sections name nodes that exist. Every value arrives range-checked
//! by `parse.rs`, so narrowing it to its field's type cannot fail.

use std::collections::BTreeMap;

use crate::error::ConfigError;
use crate::parameters::{
    DATA_MEMORY_BYTES_MAX, DefaultValue, Origin, PARAMETERS, SectionKind, index_of,
};
use crate::parse::{Document, Section, Setting, Value};
use crate::{
    ApiKind, ApiNodeConfig, ClusterConfig, DataNodeConfig, ManagementNodeConfig, NodeId, TcpConfig,
    TcpConnectionConfig,
};

/// The largest data node id, as in NDB.
const DATA_NODE_ID_MAX: NodeId = 144;

/// Checks `document` as a whole and builds the cluster from it.
pub(crate) fn validate(document: &Document, file: &str) -> Result<ClusterConfig, ConfigError> {
    let sections_of = |kind: SectionKind| -> Vec<&Section> {
        document
            .sections
            .iter()
            .filter(|section| section.kind == kind)
            .collect()
    };
    let data_sections = sections_of(SectionKind::DataNode);
    let management_sections = sections_of(SectionKind::Management);
    let tcp_sections = sections_of(SectionKind::Tcp);

    if data_sections.is_empty() {
        return Err(ConfigError::new(
            file,
            0,
            None,
            "no [ndbd] section: a cluster needs at least one data node",
        ));
    }
    if management_sections.is_empty() {
        return Err(ConfigError::new(
            file,
            0,
            None,
            "no [ndb_mgmd] section: a cluster needs at least one management node",
        ));
    }

    let no_of_replicas = check_replicas(document, &data_sections, file)?;
    let node_ids = assign_node_ids(document, file)?;
    let node_groups =
        assign_node_groups(document, &data_sections, &node_ids, no_of_replicas, file)?;
    let known_ids: Vec<NodeId> = node_ids.values().copied().collect();

    let tcp = {
        let view = View {
            settings: &document.defaults[SectionKind::Tcp.index()],
            default_settings: None,
            kind: SectionKind::Tcp,
        };
        TcpConfig {
            send_buffer_memory_bytes: view.number("SendBufferMemory"),
            receive_buffer_memory_bytes: view.number("ReceiveBufferMemory"),
        }
    };
    let mut tcp_connections = Vec::new();
    for section in tcp_sections {
        tcp_connections.push(build_tcp_connection(document, section, &known_ids, file)?);
    }

    let mut notices = Vec::new();
    if let Some(notice) = without_effect_notice(document, file) {
        notices.push(notice);
    }
    let data_nodes = data_sections
        .iter()
        .map(|section| {
            let node_id = node_ids[&section.line];
            let node_group = node_groups
                .iter()
                .position(|group| group.contains(&node_id))
                .expect("every data node is in a group");
            build_data_node(
                document,
                section,
                node_id,
                node_group,
                &tcp,
                &mut notices,
                file,
            )
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let management_nodes = management_sections
        .iter()
        .map(|section| {
            let view = View::of(document, section);
            ManagementNodeConfig {
                node_id: node_ids[&section.line],
                host_name: view.text("HostName"),
                data_dir: view.text("DataDir"),
                port: narrow(view.number("PortNumber")),
                arbitration_rank: narrow(view.number("ArbitrationRank")),
                line: section.line,
            }
        })
        .collect();
    let api_nodes = document
        .sections
        .iter()
        .filter_map(|section| {
            let kind = match section.kind {
                SectionKind::Mysqld => ApiKind::Mysqld,
                SectionKind::Api => ApiKind::Api,
                _ => return None,
            };
            let view = View::of(document, section);
            Some(ApiNodeConfig {
                kind,
                node_id: node_ids.get(&section.line).copied(),
                // The table's "localhost" is for nodes Shoal starts; a slot
                // without a host name is open to clients from any host.
                host_name: view.explicit_text("HostName"),
                arbitration_rank: narrow(view.number("ArbitrationRank")),
                line: section.line,
            })
        })
        .collect();

    Ok(ClusterConfig {
        data_nodes,
        management_nodes,
        api_nodes,
        tcp,
        tcp_connections,
        no_of_replicas,
        node_groups,
        notices,
    })
}

/// The one notice naming every NDB parameter the file sets that Shoal does
/// not act on, with the line of its first setting, so the operator knows
/// which settings changed nothing. `None` when there are none.
fn without_effect_notice(document: &Document, file: &str) -> Option<String> {
    let mut named: Vec<(&str, u32)> = Vec::new();
    let ignored = document
        .without_effect
        .iter()
        .map(|setting| (setting.name, setting.line));
    // NDB keys of Shoal's own table that Shoal accepts and ignores.
    let settings = document
        .sections
        .iter()
        .map(|section| &section.settings)
        .chain(document.defaults.iter());
    let compatibility = settings.flat_map(|settings| {
        settings.iter().enumerate().filter_map(|(index, setting)| {
            let parameter = &PARAMETERS[index];
            let applied =
                parameter.origin != Origin::Compatibility || parameter.name == "IndexMemory";
            let setting = setting.as_ref()?;
            (!applied).then_some((parameter.name, setting.line))
        })
    });
    for (name, line) in ignored.chain(compatibility) {
        match named.iter_mut().find(|(known, _)| *known == name) {
            Some((_, first)) => *first = (*first).min(line),
            None => named.push((name, line)),
        }
    }
    if named.is_empty() {
        return None;
    }
    named.sort_by_key(|(_, line)| *line);
    let first_line = named[0].1;
    let list: Vec<String> = named
        .iter()
        .map(|(name, line)| format!("{name} (line {line})"))
        .collect();
    Some(format!(
        "{file}:{first_line}: {} NDB parameter(s) accepted without effect in Shoal: {}",
        named.len(),
        list.join(", ")
    ))
}

/// Reads the values that apply to one section: its own, else its kind's
/// default sections', else the table's.
struct View<'a> {
    settings: &'a [Option<Setting>],
    default_settings: Option<&'a [Option<Setting>]>,
    kind: SectionKind,
}

impl<'a> View<'a> {
    fn of(document: &'a Document, section: &'a Section) -> Self {
        View {
            settings: &section.settings,
            default_settings: Some(&document.defaults[section.kind.index()]),
            kind: section.kind,
        }
    }

    fn setting(&self, name: &str) -> Option<&'a Setting> {
        let index = index_of(name, self.kind);
        self.settings[index].as_ref().or_else(|| {
            self.default_settings
                .and_then(|defaults| defaults[index].as_ref())
        })
    }

    /// The number set for `name` and the line that set it, if any.
    fn explicit_number(&self, name: &str) -> Option<(u64, u32)> {
        self.setting(name).map(|setting| match &setting.value {
            Value::Number(number) => (*number, setting.line),
            Value::Text(_) => panic!("{name} is a number in the parameter table"),
        })
    }

    /// The number that applies for `name`, set or default.
    fn number(&self, name: &str) -> u64 {
        if let Some((number, _)) = self.explicit_number(name) {
            return number;
        }
        match PARAMETERS[index_of(name, self.kind)].default {
            DefaultValue::Number(number) => number,
            DefaultValue::Boolean(value) => u64::from(value),
            DefaultValue::None | DefaultValue::Text(_) => {
                panic!("{name} has no numeric default; read it with explicit_number")
            }
        }
    }

    fn explicit_text(&self, name: &str) -> Option<String> {
        self.setting(name).map(|setting| match &setting.value {
            Value::Text(text) => text.clone(),
            Value::Number(_) => panic!("{name} is text in the parameter table"),
        })
    }

    fn text(&self, name: &str) -> String {
        self.explicit_text(name).unwrap_or_else(|| {
            match PARAMETERS[index_of(name, self.kind)].default {
                DefaultValue::Text(text) => text.to_string(),
                _ => panic!("{name} has no text default; read it with explicit_text"),
            }
        })
    }
}

/// Narrows a range-checked value to its field's type.
fn narrow<T: TryFrom<u64>>(value: u64) -> T {
    T::try_from(value)
        .unwrap_or_else(|_| panic!("the parameter table's limits keep {value} in range"))
}

/// NoOfReplicas must be the same on every data node; returns it.
fn check_replicas(
    document: &Document,
    data_sections: &[&Section],
    file: &str,
) -> Result<u8, ConfigError> {
    let first = View::of(document, data_sections[0]);
    let replicas = first.number("NoOfReplicas");
    for section in &data_sections[1..] {
        let view = View::of(document, section);
        let this = view.number("NoOfReplicas");
        if this != replicas {
            let line = view
                .explicit_number("NoOfReplicas")
                .map_or(section.line, |(_, line)| line);
            return Err(ConfigError::new(
                file,
                line,
                Some("NoOfReplicas"),
                format!(
                    "NoOfReplicas={this} for the data node on line {} differs from \
                     NoOfReplicas={replicas} for the data node on line {}; every data node must \
                     have the same",
                    section.line, data_sections[0].line
                ),
            ));
        }
    }
    Ok(narrow(replicas))
}

/// Gives every data and management node an id and keeps the explicit ids of
/// API slots. Returns ids by section header line, which identifies a
/// section.
fn assign_node_ids(document: &Document, file: &str) -> Result<BTreeMap<u32, NodeId>, ConfigError> {
    let node_sections = || {
        document
            .sections
            .iter()
            .filter(|section| section.kind.is_node())
    };
    let mut ids: BTreeMap<u32, NodeId> = BTreeMap::new();
    let mut owners: BTreeMap<NodeId, &Section> = BTreeMap::new();
    for section in node_sections() {
        let Some((id, line)) = View::of(document, section).explicit_number("NodeId") else {
            continue;
        };
        let id: NodeId = narrow(id);
        if let Some(owner) = owners.get(&id) {
            return Err(ConfigError::new(
                file,
                line,
                Some("NodeId"),
                format!(
                    "node id {id} is already used by the {} section on line {}",
                    owner.kind.header(false),
                    owner.line
                ),
            ));
        }
        owners.insert(id, section);
        ids.insert(section.line, id);
    }
    // Free API slots keep no id: their clients bring one when they connect.
    let needs_id = |section: &Section| {
        matches!(
            section.kind,
            SectionKind::DataNode | SectionKind::Management
        ) && !ids.contains_key(&section.line)
    };
    let waiting: Vec<&Section> = node_sections()
        .filter(|section| needs_id(section))
        .collect();
    for section in waiting {
        let id_max = if section.kind == SectionKind::DataNode {
            DATA_NODE_ID_MAX
        } else {
            NodeId::MAX
        };
        let Some(id) = (1..=id_max).find(|id| !owners.contains_key(id)) else {
            return Err(ConfigError::new(
                file,
                section.line,
                Some("NodeId"),
                format!(
                    "no free node id left for this {} section (ids 1..={id_max} are taken)",
                    section.kind.header(false)
                ),
            ));
        };
        owners.insert(id, section);
        ids.insert(section.line, id);
    }
    Ok(ids)
}

/// Splits the data nodes into node groups of `replicas` nodes: explicit
/// NodeGroup first, then the rest into the lowest group not yet full, in
/// section order.
fn assign_node_groups(
    document: &Document,
    data_sections: &[&Section],
    node_ids: &BTreeMap<u32, NodeId>,
    replicas: u8,
    file: &str,
) -> Result<Vec<Vec<NodeId>>, ConfigError> {
    let replicas_per_group = usize::from(replicas);
    if !data_sections.len().is_multiple_of(replicas_per_group) {
        let first = View::of(document, data_sections[0]);
        let line = first
            .explicit_number("NoOfReplicas")
            .map_or(data_sections[0].line, |(_, line)| line);
        return Err(ConfigError::new(
            file,
            line,
            Some("NoOfReplicas"),
            format!(
                "{} data nodes cannot form node groups of NoOfReplicas={replicas}; the number of \
                 data nodes must be a multiple of NoOfReplicas",
                data_sections.len()
            ),
        ));
    }
    let group_count = data_sections.len() / replicas_per_group;
    let mut groups: Vec<Vec<NodeId>> = vec![Vec::new(); group_count];
    let mut unplaced = Vec::new();
    for section in data_sections {
        let node_id = node_ids[&section.line];
        let Some((group, line)) = View::of(document, section).explicit_number("NodeGroup") else {
            unplaced.push(node_id);
            continue;
        };
        let Some(members) = usize::try_from(group)
            .ok()
            .and_then(|group| groups.get_mut(group))
        else {
            return Err(ConfigError::new(
                file,
                line,
                Some("NodeGroup"),
                format!(
                    "node group {group} does not exist: {} data nodes with \
                     NoOfReplicas={replicas} form node groups 0..={}, and a group outside them \
                     would leave one of those short of nodes",
                    data_sections.len(),
                    group_count - 1
                ),
            ));
        };
        if members.len() == replicas_per_group {
            return Err(ConfigError::new(
                file,
                line,
                Some("NodeGroup"),
                format!(
                    "node group {group} would get {} data nodes; each node group has exactly \
                     NoOfReplicas={replicas}",
                    replicas_per_group + 1
                ),
            ));
        }
        members.push(node_id);
    }
    for node_id in unplaced {
        let members = groups
            .iter_mut()
            .find(|members| members.len() < replicas_per_group)
            .expect("nodes = groups × replicas and no group is over-full, so one has room");
        members.push(node_id);
    }
    // Explicit members went in first; list each group in section order.
    let section_order: Vec<NodeId> = data_sections
        .iter()
        .map(|section| node_ids[&section.line])
        .collect();
    for members in &mut groups {
        members.sort_by_key(|id| section_order.iter().position(|other| other == id));
    }
    Ok(groups)
}

fn build_tcp_connection(
    document: &Document,
    section: &Section,
    known_ids: &[NodeId],
    file: &str,
) -> Result<TcpConnectionConfig, ConfigError> {
    let view = View::of(document, section);
    let mut ends = [0 as NodeId; 2];
    for (end, name) in ends.iter_mut().zip(["NodeId1", "NodeId2"]) {
        let Some((id, line)) = view.explicit_number(name) else {
            return Err(ConfigError::new(
                file,
                section.line,
                Some(name),
                "a [tcp] section must name both of its nodes with NodeId1 and NodeId2",
            ));
        };
        let id: NodeId = narrow(id);
        if !known_ids.contains(&id) {
            return Err(ConfigError::new(
                file,
                line,
                Some(name),
                format!("node {id} is not defined by any node section"),
            ));
        }
        *end = id;
    }
    if ends[0] == ends[1] {
        let (_, line) = view
            .explicit_number("NodeId2")
            .expect("NodeId2 was read above");
        return Err(ConfigError::new(
            file,
            line,
            Some("NodeId2"),
            format!(
                "a [tcp] section connects two different nodes, not node {} to itself",
                ends[0]
            ),
        ));
    }
    Ok(TcpConnectionConfig {
        node_id_1: ends[0],
        node_id_2: ends[1],
        send_buffer_memory_bytes: view.number("SendBufferMemory"),
        receive_buffer_memory_bytes: view.number("ReceiveBufferMemory"),
        line: section.line,
    })
}

fn build_data_node(
    document: &Document,
    section: &Section,
    node_id: NodeId,
    node_group: usize,
    tcp: &TcpConfig,
    notices: &mut Vec<String>,
    file: &str,
) -> Result<DataNodeConfig, ConfigError> {
    let view = View::of(document, section);
    let mut data_memory_bytes = view.number("DataMemory");
    if let Some((index_memory_bytes, line)) = view.explicit_number("IndexMemory") {
        // NDB 7.6 moved indexes into DataMemory; existing files still size
        // them apart, so their memory is kept rather than dropped.
        data_memory_bytes += index_memory_bytes;
        if data_memory_bytes > DATA_MEMORY_BYTES_MAX {
            return Err(ConfigError::new(
                file,
                line,
                Some("IndexMemory"),
                format!(
                    "DataMemory plus IndexMemory is {} bytes, more than the {} bytes \
                     (2097151 pages of 32K) a data node of Shoal holds",
                    data_memory_bytes, DATA_MEMORY_BYTES_MAX
                ),
            ));
        }
        let notice = format!(
            "{file}:{line}: IndexMemory is deprecated; its {index_memory_bytes} bytes were added \
             to DataMemory"
        );
        // One notice per setting, not per node a default section reaches.
        if !notices.contains(&notice) {
            notices.push(notice);
        }
    }
    Ok(DataNodeConfig {
        node_id,
        host_name: view.text("HostName"),
        data_dir: view.text("DataDir"),
        node_group: u16::try_from(node_group).expect("at most 144 data nodes, so as many groups"),
        data_memory_bytes,
        execution_threads: narrow(view.number("MaxNoOfExecutionThreads")),
        server_port: narrow(view.number("ServerPort")),
        heartbeat_interval_db_db_ms: view.number("HeartbeatIntervalDbDb"),
        heartbeat_interval_db_api_ms: view.number("HeartbeatIntervalDbApi"),
        missed_heartbeats_max: narrow(view.number("MaxMissedHeartbeats")),
        arbitration_timeout_ms: view.number("ArbitrationTimeout"),
        start_partial_timeout_ms: view.number("StartPartialTimeout"),
        transaction_deadlock_detection_timeout_ms: view
            .number("TransactionDeadlockDetectionTimeout"),
        copy_batch_rows: narrow(view.number("NodeRecoveryCopyBatchRows")),
        copy_rows_per_second: view.number("NodeRecoveryCopyRowsPerSecond"),
        transaction_inactive_timeout_ms: view.number("TransactionInactiveTimeout"),
        time_between_global_checkpoints_ms: view.number("TimeBetweenGlobalCheckpoints"),
        time_between_epochs_ms: view.number("TimeBetweenEpochs"),
        scheduler_spin_us: view.number("SchedulerSpinTimer"),
        use_shared_memory: view.number("UseShm") != 0,
        shared_memory_bytes: view.number("ShmSize"),
        time_between_local_checkpoints: narrow(view.number("TimeBetweenLocalCheckpoints")),
        fragment_log_files: narrow(view.number("NoOfFragmentLogFiles")),
        fragment_log_file_size_bytes: view.number("FragmentLogFileSize"),
        redo_buffer_bytes: view.number("RedoBuffer"),
        send_buffer_memory_bytes: view
            .explicit_number("SendBufferMemory")
            .map_or(tcp.send_buffer_memory_bytes, |(bytes, _)| bytes),
        concurrent_operations_max: narrow(view.number("MaxNoOfConcurrentOperations")),
        concurrent_transactions_max: narrow(view.number("MaxNoOfConcurrentTransactions")),
        concurrent_scans_max: narrow(view.number("MaxNoOfConcurrentScans")),
        tables_max: narrow(view.number("MaxNoOfTables")),
        lock_pages_in_main_memory: narrow(view.number("LockPagesInMainMemory")),
        stop_on_error: view.number("StopOnError") != 0,
        diskless: view.number("Diskless") != 0,
        start_fail_retries_max: narrow(view.number("MaxStartFailRetries")),
        start_fail_retry_delay_s: narrow(view.number("StartFailRetryDelay")),
        line: section.line,
    })
}
