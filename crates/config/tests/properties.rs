//! Property tests of the parser: a valid cluster written with random key
//! case, spacing, separators, comments and section order parses to the same
//! structure as its plain rendering (and that structure matches the model);
//! random garbage never panics.

use config::{ApiKind, ClusterConfig, parse};
use proptest::prelude::*;

const MIB: u64 = 1024 * 1024;

/// A data node as the model knows it.
#[derive(Debug, Clone)]
struct DataNodeModel {
    /// `None`: left to auto-assignment.
    node_id: Option<u8>,
    data_memory_mib: Option<u64>,
    execution_threads: Option<u32>,
}

#[derive(Debug, Clone)]
struct ApiModel {
    kind: ApiKind,
    node_id: Option<u8>,
    host_name: Option<String>,
}

#[derive(Debug, Clone)]
struct ClusterModel {
    replicas: u8,
    default_data_memory_mib: Option<u64>,
    data_nodes: Vec<DataNodeModel>,
    /// Management nodes always carry explicit ids here, so that interleaving
    /// them with data nodes cannot change which id an auto-assigned data node
    /// gets.
    management_ids: Vec<u8>,
    api_nodes: Vec<ApiModel>,
}

/// One line of a section: canonical key and value.
type Line = (&'static str, String);

/// A section: its name and its lines.
#[derive(Debug, Clone)]
struct SectionText {
    name: &'static str,
    lines: Vec<Line>,
}

fn cluster_model() -> impl Strategy<Value = ClusterModel> {
    (1u8..=4, 1usize..=3, 1usize..=2, 0usize..=4)
        .prop_flat_map(|(replicas, groups, management_count, api_count)| {
            let data_count = usize::from(replicas) * groups;
            let id_pool = Just((1u8..=144).collect::<Vec<u8>>()).prop_shuffle();
            let data_nodes = proptest::collection::vec(
                (
                    any::<bool>(),
                    proptest::option::of(1u64..=512),
                    proptest::option::of(2u32..=72),
                ),
                data_count,
            );
            let api_nodes = proptest::collection::vec(
                (
                    any::<bool>(),
                    any::<bool>(),
                    proptest::option::of("[a-z][a-z0-9.]{0,10}"),
                ),
                api_count,
            );
            (
                Just(replicas),
                proptest::option::of(1u64..=512),
                data_nodes,
                Just(management_count),
                api_nodes,
                id_pool,
            )
        })
        .prop_map(
            |(replicas, default_data_memory_mib, data, management_count, api, id_pool)| {
                let mut ids = id_pool.into_iter();
                let mut next_id = || ids.next().expect("144 ids cover every node");
                let data_nodes = data
                    .into_iter()
                    .map(
                        |(explicit, data_memory_mib, execution_threads)| DataNodeModel {
                            node_id: explicit.then(&mut next_id),
                            data_memory_mib,
                            execution_threads,
                        },
                    )
                    .collect();
                let management_ids = (0..management_count).map(|_| next_id()).collect();
                let api_nodes = api
                    .into_iter()
                    .map(|(mysqld, explicit, host_name)| ApiModel {
                        kind: if mysqld {
                            ApiKind::Mysqld
                        } else {
                            ApiKind::Api
                        },
                        node_id: explicit.then(&mut next_id),
                        host_name,
                    })
                    .collect();
                ClusterModel {
                    replicas,
                    default_data_memory_mib,
                    data_nodes,
                    management_ids,
                    api_nodes,
                }
            },
        )
}

/// The sections of a model, grouped by kind in file order: the default
/// section, data nodes, management nodes, API slots.
fn sections(model: &ClusterModel) -> Vec<Vec<SectionText>> {
    let mut defaults = vec![("NoOfReplicas", model.replicas.to_string())];
    if let Some(mib) = model.default_data_memory_mib {
        defaults.push(("DataMemory", format!("{mib}M")));
    }
    let data = model
        .data_nodes
        .iter()
        .map(|node| {
            let mut lines = vec![("HostName", "localhost".to_string())];
            if let Some(id) = node.node_id {
                lines.push(("NodeId", id.to_string()));
            }
            if let Some(mib) = node.data_memory_mib {
                lines.push(("DataMemory", format!("{}K", mib * 1024)));
            }
            if let Some(threads) = node.execution_threads {
                lines.push(("MaxNoOfExecutionThreads", threads.to_string()));
            }
            SectionText {
                name: "ndbd",
                lines,
            }
        })
        .collect();
    let management = model
        .management_ids
        .iter()
        .map(|id| SectionText {
            name: "ndb_mgmd",
            lines: vec![("NodeId", id.to_string())],
        })
        .collect();
    let api = model
        .api_nodes
        .iter()
        .map(|node| {
            let mut lines = Vec::new();
            if let Some(id) = node.node_id {
                lines.push(("NodeId", id.to_string()));
            }
            if let Some(host) = &node.host_name {
                lines.push(("HostName", host.clone()));
            }
            let name = match node.kind {
                ApiKind::Mysqld => "mysqld",
                ApiKind::Api => "api",
            };
            SectionText { name, lines }
        })
        .collect();
    vec![
        vec![SectionText {
            name: "ndbd default",
            lines: defaults,
        }],
        data,
        management,
        api,
    ]
}

/// The plain rendering: kinds in order, `Key=value`, nothing else.
fn render_plain(model: &ClusterModel) -> String {
    let mut text = String::new();
    for section in sections(model).into_iter().flatten() {
        text.push_str(&format!("[{}]\n", section.name));
        for (key, value) in section.lines {
            text.push_str(&format!("{key}={value}\n"));
        }
    }
    text
}

/// Random choices for one rendering. Each list is read cyclically.
#[derive(Debug, Clone)]
struct Style {
    /// Which kind's next section comes next; sections of one kind keep
    /// their order, since that order assigns ids and node groups.
    interleaving: Vec<usize>,
    /// 0: as in the table, 1: lower, 2: upper, 3: alternating.
    case: Vec<u8>,
    /// Spacing and separator choices.
    layout: Vec<u8>,
    /// Blank or comment lines between lines.
    filler: Vec<u8>,
}

fn style() -> impl Strategy<Value = Style> {
    (
        proptest::collection::vec(0usize..4, 1..40),
        proptest::collection::vec(0u8..4, 1..40),
        proptest::collection::vec(0u8..8, 1..40),
        proptest::collection::vec(0u8..6, 1..40),
    )
        .prop_map(|(interleaving, case, layout, filler)| Style {
            interleaving,
            case,
            layout,
            filler,
        })
}

struct Cycle<'a, T> {
    items: &'a [T],
    at: usize,
}

impl<T: Copy> Cycle<'_, T> {
    fn next(&mut self) -> T {
        let item = self.items[self.at % self.items.len()];
        self.at += 1;
        item
    }
}

fn recase(word: &str, case: u8) -> String {
    match case {
        0 => word.to_string(),
        1 => word.to_lowercase(),
        2 => word.to_uppercase(),
        _ => word
            .chars()
            .enumerate()
            .map(|(at, c)| {
                if at % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect(),
    }
}

fn render_styled(model: &ClusterModel, style: &Style) -> String {
    let mut case = Cycle {
        items: &style.case,
        at: 0,
    };
    let mut layout = Cycle {
        items: &style.layout,
        at: 0,
    };
    let mut filler = Cycle {
        items: &style.filler,
        at: 0,
    };
    let mut interleaving = Cycle {
        items: &style.interleaving,
        at: 0,
    };
    let mut filler_line = |text: &mut String| match filler.next() {
        0 => text.push('\n'),
        1 => text.push_str("# a comment = with [brackets]\n"),
        2 => text.push_str("   ; another: comment\n"),
        3 => text.push_str("\t\n"),
        _ => {}
    };

    let mut kinds: Vec<std::collections::VecDeque<SectionText>> =
        sections(model).into_iter().map(Into::into).collect();
    let mut text = String::new();
    while kinds.iter().any(|kind| !kind.is_empty()) {
        let waiting: Vec<usize> = (0..kinds.len()).filter(|&k| !kinds[k].is_empty()).collect();
        let kind = waiting[interleaving.next() % waiting.len()];
        let section = kinds[kind]
            .pop_front()
            .expect("chosen among non-empty kinds");
        filler_line(&mut text);
        let name = section
            .name
            .split(' ')
            .map(|word| recase(word, case.next()))
            .collect::<Vec<_>>()
            .join(if layout.next().is_multiple_of(2) {
                " "
            } else {
                "  "
            });
        if layout.next().is_multiple_of(2) {
            text.push_str(&format!("[{name}]\n"));
        } else {
            text.push_str(&format!(" [ {name} ]  # section\n"));
        }
        for (key, value) in section.lines {
            filler_line(&mut text);
            let key = if key == "NodeId" && case.next().is_multiple_of(2) {
                "Id"
            } else {
                key
            };
            let key = recase(key, case.next());
            let value = if value.ends_with('M') || value.ends_with('K') {
                recase(&value, case.next())
            } else {
                value
            };
            let line = match layout.next() {
                0 => format!("{key}={value}"),
                1 => format!("{key} = {value}"),
                2 => format!("{key}: {value}"),
                3 => format!("  {key}\t:\t{value}  "),
                4 => format!("{key}={value} # trailing comment"),
                5 => format!("{key}:{value}\t; trailing comment"),
                6 => format!("{key} ={value}\r"),
                _ => format!("\t{key}=  {value}"),
            };
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

/// The structure without header lines, which depend on the layout.
fn without_lines(mut config: ClusterConfig) -> ClusterConfig {
    config.data_nodes.iter_mut().for_each(|node| node.line = 0);
    config
        .management_nodes
        .iter_mut()
        .for_each(|node| node.line = 0);
    config.api_nodes.iter_mut().for_each(|node| node.line = 0);
    config
}

fn check_against_model(config: &ClusterConfig, model: &ClusterModel) {
    assert_eq!(config.no_of_replicas, model.replicas);
    assert_eq!(config.data_nodes.len(), model.data_nodes.len());
    for (node, expected) in config.data_nodes.iter().zip(&model.data_nodes) {
        if let Some(id) = expected.node_id {
            assert_eq!(node.node_id, id);
        }
        let mib = expected
            .data_memory_mib
            .or(model.default_data_memory_mib)
            .unwrap_or(98);
        assert_eq!(node.data_memory_bytes, mib * MIB);
        assert_eq!(
            node.execution_threads,
            expected.execution_threads.unwrap_or(2)
        );
    }
    let data_ids: Vec<u8> = config.data_nodes.iter().map(|node| node.node_id).collect();
    let expected_groups: Vec<Vec<u8>> = data_ids
        .chunks(usize::from(model.replicas))
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(config.node_groups, expected_groups);
    let management_ids: Vec<u8> = config
        .management_nodes
        .iter()
        .map(|node| node.node_id)
        .collect();
    assert_eq!(management_ids, model.management_ids);
    assert_eq!(config.api_nodes.len(), model.api_nodes.len());
    for (node, expected) in config.api_nodes.iter().zip(&model.api_nodes) {
        assert_eq!(node.kind, expected.kind);
        assert_eq!(node.node_id, expected.node_id);
        assert_eq!(node.host_name, expected.host_name);
    }
    let mut ids = config.all_node_ids();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "node ids are unique");
}

/// Lines that look like config.ini, or almost.
fn garbage_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,30}",
        "\\[[a-zA-Z_ ]{0,14}\\]?",
        "(NodeId|Id|DataMemory|NoOfReplicas|NodeGroup|IndexMemory|NodeId1|HostName|StopOnError)\
         [ \t]*[=:][ \t]*[-+0-9a-zA-Z#;. ]{0,12}",
        "[=:#;\\[\\] \t0-9kKmMgG\u{feff}é]{0,12}",
        Just("[ndbd]".to_string()),
        Just("[ndb_mgmd]".to_string()),
        Just("[tcp]".to_string()),
    ]
}

proptest! {
    #[test]
    fn styled_renderings_parse_like_the_plain_one(model in cluster_model(), style in style()) {
        let plain = parse(&render_plain(&model), "plain.ini")
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        check_against_model(&plain, &model);
        let styled_text = render_styled(&model, &style);
        let styled = parse(&styled_text, "styled.ini")
            .map_err(|error| TestCaseError::fail(format!("{error}\n{styled_text}")))?;
        prop_assert_eq!(without_lines(styled), without_lines(plain), "{}", styled_text);
    }

    #[test]
    fn garbage_never_panics(lines in proptest::collection::vec(garbage_line(), 0..30)) {
        let text = lines.join("\n");
        // Either outcome is fine; returning at all is the property.
        let _ = parse(&text, "garbage.ini");
    }

    #[test]
    fn garbage_inside_a_valid_file_never_panics(
        model in cluster_model(),
        lines in proptest::collection::vec((garbage_line(), any::<prop::sample::Index>()), 1..5),
    ) {
        let mut text: Vec<String> = render_plain(&model).lines().map(str::to_string).collect();
        for (line, at) in lines {
            let at = at.index(text.len() + 1);
            text.insert(at, line);
        }
        let _ = parse(&text.join("\n"), "damaged.ini");
    }
}
