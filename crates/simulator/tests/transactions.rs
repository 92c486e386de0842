//! Runs the transaction workload (`SimulationOptions::transactions`) over
//! many seeds and cluster shapes. `SHOAL_SIM_SEEDS` sets the seeds per
//! shape (default 1000), as for `seeds.rs`; a failure prints the command
//! that replays it. The coverage marks prove the seeds reached the rare
//! paths of the commit protocol and of unique indexes, and, in the runs
//! where data nodes crash, a crash at every step of the commit protocol.

use simulator::{CrashMarks, DiskOutcome, SimulationOptions, TransactionMarks, run};

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

fn run_shape(data_nodes: u8, replicas: u8, first_seed: u64) -> TransactionMarks {
    let mut marks = TransactionMarks::default();
    let mut disks = DiskOutcome::default();
    let mut saves_after_sync = 0;
    let (mut checkpoints_installed, mut slices_cut) = (0, 0);
    let (mut partial_checkpoints, mut checkpoint_deletes, mut chain_restores) = (0, 0, 0);
    let (mut system_crashes, mut crashed_while_starting) = (0, 0);
    let (mut kept_by_crashes, mut lost_to_crashes) = (0, 0);
    let (mut committed, mut aborted, mut executes, mut rows, mut scans) = (0, 0, 0, 0, 0);
    let mut index_rows = 0;
    let first_seed = first_seed + seed_offset();
    for seed in first_seed..first_seed + seeds_per_shape() {
        let options = SimulationOptions::transactions(seed, data_nodes, replicas);
        match run(&options) {
            Ok(outcome) => {
                let transactions = outcome.transactions;
                marks.add(&transactions.marks);
                add_disks(&mut disks, &outcome.disks);
                saves_after_sync += outcome.node_marks.saves_after_sync;
                checkpoints_installed += outcome.node_marks.checkpoints_installed;
                slices_cut += outcome.node_marks.checkpoint_slices_cut;
                partial_checkpoints += outcome.node_marks.partial_checkpoints_installed;
                checkpoint_deletes += outcome.node_marks.checkpoint_deletes;
                chain_restores += outcome.node_marks.restores_from_chains;
                system_crashes += outcome.system_crashes;
                crashed_while_starting += outcome.crash_restarts_crashed;
                kept_by_crashes += outcome.commits_kept_by_crashes;
                lost_to_crashes += outcome.commits_lost_to_crashes;
                committed += transactions.committed;
                aborted += transactions.aborted;
                executes += transactions.executes;
                rows += transactions.rows_checked;
                scans += transactions.scans;
                index_rows += transactions.index_rows_checked;
                assert!(transactions.committed > 0, "seed {seed}: nothing committed");
            }
            Err(failure) => panic!("{failure}"),
        }
    }
    eprintln!(
        "{data_nodes} nodes, {replicas} replicas: {} seeds, {executes} executes, {committed} \
         committed, {aborted} aborted, {scans} scans, {rows} rows compared ({index_rows} of \
         unique indexes); {marks:?}",
        seeds_per_shape()
    );
    assert!(scans > 0, "no scan read every account");
    assert!(index_rows > 0, "no unique index had rows at the end");
    // Global checkpoints were saved once the redo logs were on disk, while
    // writes and syncs failed now and then and were retried.
    assert!(saves_after_sync > 0, "{disks:?}");
    // Local checkpoints were installed, their fragments written in slices
    // with commits between them (the final checks then hold on restarts
    // from them).
    assert!(
        checkpoints_installed > 0,
        "no local checkpoint was installed"
    );
    assert!(
        slices_cut > 0,
        "no checkpoint step stopped inside a fragment"
    );
    // Partial checkpoints (changed rows and deleted keys of most parts)
    // were installed, and restores read chains of them.
    eprintln!(
        "{checkpoints_installed} checkpoints installed, {partial_checkpoints} partial, \
         {checkpoint_deletes} deleted keys written; {chain_restores} restores from chains"
    );
    assert!(partial_checkpoints > 0, "no partial checkpoint");
    assert!(
        checkpoint_deletes > 0,
        "no partial checkpoint wrote a deleted key"
    );
    // Whole-cluster crashes (one run in four): some again while the nodes
    // started; their restarts kept the commits of the restored epochs and
    // took back some of later ones, and the final checks found exactly
    // the kept ones.
    eprintln!(
        "{system_crashes} whole-cluster crashes ({crashed_while_starting} again while starting): \
         {kept_by_crashes} commits kept, {lost_to_crashes} taken back"
    );
    if seeds_per_shape() >= 100 {
        assert!(system_crashes > 0 && crashed_while_starting > 0);
        assert!(kept_by_crashes > 0 && lost_to_crashes > 0);
        assert!(chain_restores > 0, "no restore read a chain of checkpoints");
    }
    assert!(disks.failures > 0, "{disks:?}");
    marks
}

fn add_disks(total: &mut DiskOutcome, run: &DiskOutcome) {
    total.requests += run.requests;
    total.failures += run.failures;
    total.crashes_checked += run.crashes_checked;
}

/// Every rare path must be reached, or the checkers never saw it.
fn assert_marks(marks: &TransactionMarks) {
    // Commits were decided in many epochs, checked in decision order.
    assert!(marks.commit_epochs > 100, "{marks:?}");
    assert!(marks.commits_decided > marks.commit_epochs, "{marks:?}");
    assert!(marks.lock_wait_timeouts > 0, "{marks:?}");
    assert!(marks.backup_refusals > 0, "{marks:?}");
    assert!(marks.ignored_errors > 0, "{marks:?}");
    assert!(marks.rollbacks > 0, "{marks:?}");
    assert!(marks.answered_after_complete > 0, "{marks:?}");
    assert!(marks.multi_fragment_commits > 0, "{marks:?}");
    assert!(marks.unique_lookups > 0, "{marks:?}");
    assert!(marks.unique_violations > 0, "{marks:?}");
    assert!(marks.index_rows_moved > 0, "{marks:?}");
    assert!(marks.code_swaps > 0, "{marks:?}");
    assert!(marks.commits_past_waiting_scans > 0, "{marks:?}");
    assert!(marks.inactive_timeouts > 0, "{marks:?}");
}

#[test]
fn transactions_two_nodes_two_replicas() {
    assert_marks(&run_shape(2, 2, 10_000));
}

#[test]
fn transactions_four_nodes_two_replicas() {
    assert_marks(&run_shape(4, 2, 20_000));
}

#[test]
fn transactions_three_nodes_three_replicas() {
    assert_marks(&run_shape(3, 3, 30_000));
}

/// Runs the workload with data nodes crashing (`SimulationOptions::crashes`)
/// over the seeds of one shape; returns the coverage marks and the crashes.
fn run_shape_with_crashes(
    data_nodes: u8,
    replicas: u8,
    first_seed: u64,
) -> (TransactionMarks, CrashMarks) {
    let mut marks = TransactionMarks::default();
    let mut crashes = CrashMarks::default();
    let mut disks = DiskOutcome::default();
    let (mut committed, mut aborted, mut executes) = (0, 0, 0);
    let first_seed = first_seed + seed_offset();
    for seed in first_seed..first_seed + seeds_per_shape() {
        let options = SimulationOptions::transactions_with_crashes(seed, data_nodes, replicas);
        match run(&options) {
            Ok(outcome) => {
                let transactions = outcome.transactions;
                marks.add(&transactions.marks);
                crashes.add(&transactions.crashes);
                add_disks(&mut disks, &outcome.disks);
                committed += transactions.committed;
                aborted += transactions.aborted;
                executes += transactions.executes;
                assert!(transactions.committed > 0, "seed {seed}: nothing committed");
            }
            Err(failure) => panic!("{failure}"),
        }
    }
    eprintln!(
        "{data_nodes} nodes, {replicas} replicas, with crashes: {} seeds, {executes} executes, \
         {committed} committed, {aborted} aborted; {crashes:?}; {marks:?}",
        seeds_per_shape()
    );
    // Every crash read the node's redo log back from its disk, and found
    // every record it had made durable.
    assert!(disks.crashes_checked > 0, "{disks:?}");
    (marks, crashes)
}

/// Crashes hit every step of the commit protocol, and transactions that
/// used a node that died were aborted with 4010 (not left hanging).
fn assert_crash_marks(marks: &TransactionMarks, crashes: &CrashMarks) {
    assert!(marks.node_failure_aborts > 0, "{marks:?}");
    // Coordinators died, and the president's takeovers both committed and
    // aborted their transactions. Clients with a commit in flight learned
    // how it ended from the takeover (the commit markers): the president's
    // answer, or its announcement without one (aborted); some after they
    // saw their coordinator die, some repeated after the answer came. A
    // client that connected to the president after the takeover began is
    // not told, and its outcome stays unknown.
    assert!(marks.coordinator_losses > 0, "{marks:?}");
    assert!(marks.outcomes_committed_by_takeover > 0, "{marks:?}");
    assert!(marks.takeovers_without_answer > 0, "{marks:?}");
    assert!(marks.outcomes_after_coordinator_loss > 0, "{marks:?}");
    assert!(marks.repeated_takeover_answers > 0, "{marks:?}");
    assert!(marks.takeover_commits > 0, "{marks:?}");
    assert!(marks.takeover_aborts > 0, "{marks:?}");
    assert!(crashes.at_random > 0, "{crashes:?}");
    assert!(crashes.after_key_request > 0, "{crashes:?}");
    assert!(crashes.after_commit > 0, "{crashes:?}");
    assert!(crashes.after_complete > 0, "{crashes:?}");
    assert!(crashes.after_abort > 0, "{crashes:?}");
    assert!(crashes.after_fragment_scan > 0, "{crashes:?}");
    // Nodes were cut off while serving their API nodes, and refused reads
    // (4035) once their membership lease ran out.
    assert!(crashes.isolations > 0, "{crashes:?}");
    assert!(marks.not_member_aborts > 0, "{marks:?}");
    assert!(marks.reads_refused_without_lease > 0, "{marks:?}");
    // A backup that became the primary committed at once the work whose
    // commit phase had passed it (its old primary may have acknowledged it).
    assert!(marks.commits_on_promotion > 0, "{marks:?}");
    // Crashed nodes came back empty, copied their fragments at their pace
    // while the workload wrote (writes reached rows not copied yet, and rows that
    // transactions held when their copy arrived, which it waited for), and
    // became started.
    assert!(marks.nodes_recovered > 0, "{marks:?}");
    assert!(marks.fragments_copied > 0, "{marks:?}");
    assert!(marks.rows_copied > 0, "{marks:?}");
    assert!(marks.writes_before_copy > 0, "{marks:?}");
    // Restarted nodes restored their own disks and took the rows written
    // before from them, by key; rows deleted while they were down went.
    // Their restores always matched what the copies named.
    assert!(marks.rows_copied_by_key > 0, "{marks:?}");
    assert!(marks.restored_rows_dropped > 0, "{marks:?}");
    assert_eq!(marks.copies_by_key_refused, 0, "{marks:?}");
    // Restores whose rows aside outgrew their bound gave them up and
    // copied every row whole (the final checks hold all the same).
    assert!(marks.restores_for_copy_given_up > 0, "{marks:?}");
}

#[test]
fn transactions_with_crashes_two_nodes_two_replicas() {
    let (marks, crashes) = run_shape_with_crashes(2, 2, 40_000);
    assert_crash_marks(&marks, &crashes);
    // Copies kept to their rate (`NodeRecoveryCopyRowsPerSecond`; rows
    // sent by key cost it little, so few copies meet it elsewhere).
    assert!(marks.copy_pauses > 0, "{marks:?}");
}

#[test]
fn transactions_with_crashes_four_nodes_two_replicas() {
    let (marks, crashes) = run_shape_with_crashes(4, 2, 50_000);
    assert_crash_marks(&marks, &crashes);
    // Copies met rows that transactions held and waited for them (rare
    // with a single crash candidate, as on two nodes).
    assert!(marks.rows_copy_skipped_locked > 0, "{marks:?}");
}

#[test]
fn transactions_with_crashes_three_nodes_three_replicas() {
    let (marks, crashes) = run_shape_with_crashes(3, 3, 60_000);
    assert_crash_marks(&marks, &crashes);
    // With three replicas a copy's source may crash under it (the copy
    // starts again from the next started replica).
    assert!(marks.copies_restarted > 0, "{marks:?}");
    assert!(marks.rows_copy_skipped_locked > 0, "{marks:?}");
}

#[test]
fn a_quiet_transaction_run_replays_exactly() {
    let mut options = SimulationOptions::transactions(42, 4, 2);
    options.faults = false;
    options.keep_trace = true;
    let first = run(&options).unwrap_or_else(|failure| panic!("{failure}"));
    let second = run(&options).unwrap_or_else(|failure| panic!("{failure}"));
    assert!(first.transactions.committed > 0);
    // On time heartbeats keep every node's membership lease.
    assert_eq!(first.transactions.marks.not_member_aborts, 0);
    assert_eq!(first.trace, second.trace);
}

#[test]
fn a_transaction_run_with_crashes_replays_exactly() {
    let mut options = SimulationOptions::transactions_with_crashes(43, 4, 2);
    options.keep_trace = true;
    let first = run(&options).unwrap_or_else(|failure| panic!("{failure}"));
    let second = run(&options).unwrap_or_else(|failure| panic!("{failure}"));
    assert!(
        first.crashes > 0 || first.transactions.crashes.isolations > 0,
        "seed 43 crashed or isolated no node"
    );
    assert_eq!(first.trace, second.trace);
}

/// Seeds of the long crash runs (20 s of faults, as `shoal sim` runs them)
/// that found bugs, kept passing: a stale report of a suspected member
/// acted on after the state that made it moot (810010), a transaction on a
/// node back as a new incarnation left waiting (800434), a commit marker
/// left by a repeated Commit (800047), a message held for a failed link
/// reaching a later incarnation (800005), a takeover's answer after the
/// API was told (800002), a healed node removing the president the others
/// still heard (900101), a Commit passed on over a restarted node's old
/// connection (900870), a rollback after a refused scan open answered
/// with an error (900382), a waiting scan timed out as idle (950317),
/// withdrawn suspicions that left transactions waiting for messages a
/// closed connection lost (951215, 960169), an abandoned transaction's
/// timeout arriving after its coordinator restarted (991446), an install
/// that freed locks without running their waiters (50354 with 2 s of
/// faults), a system restart's member that missed version 1 of the state
/// and served its fragments empty (20842, a whole-cluster crash without
/// single crashes), global checkpoints whose saves replaced each other
/// faster than a failing disk could finish one (21374), and a second
/// whole-cluster crash soon after a restart that found a node group's
/// disks only in the older generation (20482, 124454), and a node cut off from
/// the others that answered updates 626 from rows they had since
/// inserted, then committed in an epoch below theirs (42996), and a cut-off
/// coordinator that decided a commit in an epoch below theirs (242797),
/// and takeovers that answered READ_BACKUP commits before their Complete
/// reached the backups (553040, 567652).
#[test]
fn seeds_that_found_bugs_pass() {
    let long = |seed: u64, data_nodes: u8, replicas: u8| SimulationOptions {
        fault_ms: 20_000,
        settle_ms: 20_000,
        ..SimulationOptions::transactions_with_crashes(seed, data_nodes, replicas)
    };
    let runs = [
        long(810_010, 3, 3),
        long(800_434, 4, 2),
        long(800_047, 4, 2),
        long(800_005, 4, 2),
        long(800_005, 3, 3),
        long(800_002, 2, 2),
        // A healed node proposed removing the president the rest still
        // heard (`follows`).
        long(900_101, 3, 3),
        // A Commit passed on to a restarted node over the connection of
        // its old incarnation was lost (`stale_links_closed`).
        long(900_870, 4, 2),
        // A connection to a restarted member's old incarnation in use
        // (`stale_links_closed`). 900870 no longer reaches it since the
        // takeover announcement changed its run; the seeds that replaced
        // it each stopped reaching it as the runs changed (epoch rounds,
        // disks, local checkpoints and their slices, node restarts from
        // their own disks, partial checkpoints and restores in steps,
        // commits that wait for the lease): these reach it now.
        long(900_005, 4, 2),
        long(900_009, 4, 2),
        long(900_020, 4, 2),
        // A rollback after a refused scan open was answered with 4350.
        long(900_382, 2, 2),
        // A scan waiting for a cut-off replica was timed out as idle.
        long(950_317, 2, 2),
        // Suspicions withdrawn after a cut healed: messages the closed
        // connections lost were never resent, and transactions hung.
        long(951_215, 2, 2),
        long(960_169, 3, 3),
        // An abandoned transaction's timeout from a coordinator that
        // restarted right after sending it.
        long(991_446, 2, 2),
        SimulationOptions::transactions_with_crashes(50_354, 4, 2),
        // A genesis member of a system restart whose first state was
        // version 2 took itself for a joiner and never restored.
        SimulationOptions::transactions(20_842, 4, 2),
        // A new global checkpoint's save replaced the last one's while a
        // failing disk still synced it: none ever became durable.
        SimulationOptions::transactions(21_374, 4, 2),
        // A restart's restored disk counted for its node group only once
        // it saved a global checkpoint of the new generation; a second
        // crash came before that, and the cluster refused to start.
        SimulationOptions::transactions(20_482, 4, 2),
        // The same, when the second crash came before one node group's
        // marks of the restore point were durable: that group's disks
        // were only of the older generation.
        SimulationOptions::transactions(124_454, 4, 2),
        // Writes served without a membership lease by a node cut off
        // from the others.
        SimulationOptions::transactions_with_crashes(42_996, 2, 2),
        // A coordinator cut off from the others decided a commit in an
        // epoch below theirs, after they had removed it.
        SimulationOptions::transactions_with_crashes(242_797, 2, 2),
        // A takeover answered a READ_BACKUP commit before its Complete
        // reached the backups, and a read there right after found the
        // older row.
        SimulationOptions::transactions_with_crashes(553_040, 4, 2),
        SimulationOptions::transactions_with_crashes(567_652, 3, 3),
        // A scan's next batch reached a restarted node's new incarnation
        // before the coordinator's node removed the old one, and was
        // answered "unknown scan" (4000).
        SimulationOptions::transactions_with_crashes(660_514, 3, 3),
        // A copying node skipped the state that removed a starting node
        // and went on with the old incarnation's copy: its last batch
        // reached the node's next incarnation, which took it for the
        // answer to its own copy 1, and a replica lost the rows sent
        // before.
        SimulationOptions::transactions_with_crashes(753_208, 4, 2),
    ];
    let mut node_marks = node::NodeMarks::default();
    for options in runs {
        match run(&options) {
            Ok(outcome) => node_marks.add(&outcome.node_marks),
            Err(failure) => panic!("{failure}"),
        }
    }
    assert!(node_marks.stale_links_closed > 0, "{node_marks:?}");
    assert!(node_marks.commits_released_by_lease > 0, "{node_marks:?}");
}
