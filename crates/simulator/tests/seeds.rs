//! Runs the simulator over many seeds and cluster shapes. `SHOAL_SIM_SEEDS`
//! sets the seeds per shape (default 1000); a failure prints the command that
//! replays it.

use simulator::{SimulationOptions, run};

fn seeds_per_shape() -> u64 {
    std::env::var("SHOAL_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

/// `SHOAL_SIM_SEED_OFFSET` moves every shape's seeds by that much (default
/// 0), so a long run can search seeds that CI never runs.
fn seed_offset() -> u64 {
    std::env::var("SHOAL_SIM_SEED_OFFSET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Which rare paths a shape's seeds must reach (coverage marks): without
/// them the checkers would pass without ever seeing those paths.
struct Expected {
    arbitrator: bool,
    /// With one replica any failure is a cluster failure: no removals, no
    /// competing proposals to recover from.
    recovery: bool,
}

fn run_shape(data_nodes: u8, replicas: u8, first_seed: u64) {
    // Ties (exactly half the nodes) need the arbitrator: even node counts.
    let expected = Expected {
        arbitrator: data_nodes.is_multiple_of(2),
        recovery: replicas > 1,
    };
    let mut marks = cluster::data_node::Marks::default();
    let mut decided = 0;
    let mut crashes = 0;
    let mut acknowledged = 0;
    let mut renamed = 0;
    let mut refused_for_memory = 0;
    let mut refused_for_table_objects = 0;
    let first_seed = first_seed + seed_offset();
    for seed in first_seed..first_seed + seeds_per_shape() {
        let options = SimulationOptions::new(seed, data_nodes, replicas);
        match run(&options) {
            Ok(outcome) => {
                decided += outcome.versions_seen;
                crashes += outcome.crashes;
                acknowledged += outcome.schema_changes_acknowledged;
                renamed += outcome.renames_acknowledged;
                refused_for_memory += outcome.creates_refused_for_memory;
                refused_for_table_objects += outcome.creates_refused_for_table_objects;
                marks.add(&outcome.marks);
            }
            Err(failure) => panic!("{failure}"),
        }
    }
    // The faults must have done something, or the checks prove nothing.
    assert!(crashes > 0, "no node crashed in any seed");
    assert!(decided > 0 && acknowledged > 0, "nothing was decided");
    assert!(renamed > 0, "no rename was acknowledged");
    // DataMemory fills up in some seeds: the president refuses creates.
    assert!(
        refused_for_memory > 0,
        "no create was refused for DataMemory"
    );
    // Some seeds run with a small MaxNoOfTables: the president refuses
    // creates past it (707).
    assert!(
        refused_for_table_objects > 0,
        "no create was refused for MaxNoOfTables"
    );
    eprintln!("{data_nodes} nodes, {replicas} replicas: {marks:?}");
    assert!(marks.proposals_retried > 0, "{marks:?}");
    // A suspected member heard again stays suspected (its link is closed
    // again) until a change settles it.
    assert!(marks.suspected_members_heard_again > 0, "{marks:?}");
    if replicas > 1 {
        // Members do not follow a proposer they suspect or one behind a
        // member they still hear.
        assert!(
            marks.proposals_refused_from_a_member_not_followed > 0,
            "{marks:?}"
        );
    }
    // Retries of applied schema changes reach the president, so the
    // client's truth checks cover their answers.
    assert!(marks.schema_retry_answered_from_state > 0, "{marks:?}");
    if expected.recovery {
        // With one replica every suspicion loses a node group: since a
        // suspected peer's connection is closed (the peer then suspects
        // this node at once), the president reaches that verdict and
        // excludes itself before any member waits out ArbitrationTimeout,
        // so only shapes with several replicas reach this path; and with
        // two data nodes a lone one is exactly half, never a minority.
        if data_nodes > 2 {
            assert!(marks.excluded_without_quorum > 0, "{marks:?}");
        }
        assert!(marks.adopted_earlier_change > 0, "{marks:?}");
        assert!(marks.excluded_by_others > 0, "{marks:?}");
    } else {
        assert!(marks.excluded_node_group_lost > 0, "{marks:?}");
    }
    if expected.arbitrator && expected.recovery {
        // Exactly half of the members, waiting for the arbitrator: the
        // side stops serving and keeps its data.
        assert!(marks.stopped_serving_without_quorum > 0, "{marks:?}");
    }
    if expected.arbitrator {
        assert!(marks.decided_with_arbitrator > 0, "{marks:?}");
    }
    eprintln!(
        "{data_nodes} nodes, {replicas} replicas: {} seeds, {decided} states, {crashes} crashes, \
         {acknowledged} schema changes acknowledged, {refused_for_memory} creates refused for \
         DataMemory, {refused_for_table_objects} for MaxNoOfTables",
        seeds_per_shape()
    );
}

#[test]
fn two_nodes_two_replicas() {
    run_shape(2, 2, 1_000);
}

#[test]
fn four_nodes_two_replicas() {
    run_shape(4, 2, 2_000);
}

#[test]
fn three_nodes_three_replicas() {
    run_shape(3, 3, 3_000);
}

#[test]
fn four_nodes_one_replica() {
    run_shape(4, 1, 4_000);
}

#[test]
fn six_nodes_two_replicas() {
    run_shape(6, 2, 5_000);
}

#[test]
fn a_quiet_cluster_forms_and_takes_schema_changes() {
    let mut options = SimulationOptions::new(7, 4, 2);
    options.faults = false;
    let outcome = run(&options).unwrap_or_else(|failure| panic!("{failure}"));
    assert!(outcome.tables > 0);
    assert_eq!(outcome.crashes, 0);
}

/// The president counts fragment replicas per node against the same limit
/// the query handlers create engine tables under (the two crates do not
/// depend on each other, so the number is written twice).
#[test]
fn the_president_and_the_query_handlers_agree_on_fragment_replicas_per_node() {
    assert_eq!(
        cluster::dictionary::FRAGMENT_REPLICAS_PER_NODE_MAX,
        transaction::query_handler::FRAGMENT_REPLICAS_PER_NODE_MAX
    );
}
