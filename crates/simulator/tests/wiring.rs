//! The simulator drives `node::DataNodeComposite`, the code `shoal datad`
//! runs, so the wiring between a data node's blocks and its connections is
//! tested too: these runs must reach each of its paths (coverage marks) —
//! restarting as a new incarnation in the same process, messages held for
//! a peer not yet connected, the node's own messages through the local
//! queue, lock waits ended by ticks, the management connection reopened,
//! a suspected peer's connection closed, and an API node that disconnects
//! with an open transaction (the workload's deserter), whose transaction
//! must be rolled back or the final checks fail.

use simulator::{SimulationOptions, run};

fn seeds() -> u64 {
    std::env::var("SHOAL_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(60, |seeds: u64| seeds.min(60))
}

#[test]
fn membership_runs_go_through_the_composite() {
    let mut marks = node::NodeMarks::default();
    for seed in 0..seeds() {
        let outcome = run(&SimulationOptions::new(70_000 + seed, 4, 2))
            .unwrap_or_else(|failure| panic!("{failure}"));
        marks.add(&outcome.node_marks);
    }
    eprintln!("{marks:?}");
    assert!(marks.restarts > 0, "{marks:?}");
    assert!(marks.pending_delivered > 0, "{marks:?}");
    assert!(marks.management_reconnects > 0, "{marks:?}");
    // Cut links go silent without closing: the node that suspects the
    // peer closes the connection, and the dialing side connects afresh.
    assert!(marks.suspected_links_closed > 0, "{marks:?}");
}

#[test]
fn transaction_runs_go_through_the_composite() {
    let mut marks = node::NodeMarks::default();
    let mut api_disconnects = 0;
    for seed in 0..seeds() {
        let outcome = run(&SimulationOptions::transactions(80_000 + seed, 2, 2))
            .unwrap_or_else(|failure| panic!("{failure}"));
        marks.add(&outcome.node_marks);
        api_disconnects += outcome.transactions.marks.api_disconnects;
    }
    eprintln!("{marks:?}, {api_disconnects} API disconnects");
    assert!(marks.local_deliveries > 0, "{marks:?}");
    assert!(marks.lock_wait_ticks > 0, "{marks:?}");
    assert!(marks.api_failures_with_transactions > 0, "{marks:?}");
    // A stopped deserter is found by its missed heartbeats.
    assert!(marks.api_declared_dead > 0, "{marks:?}");
    assert!(
        api_disconnects > 0,
        "no API node left with an open transaction"
    );
}
