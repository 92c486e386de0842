//! The decisions `ManagementComposite` makes for `mgmd` and the simulator:
//! when a link counts as identified, what a `Hello` does, and that a
//! turn's votes come out to be made durable before its sends.

use cluster::ManagementSettings;
use node::data_node::Peer;
use node::management_node::{TICK_INTERVAL_MAX_MS, TICK_INTERVAL_MIN_MS};
use node::{ManagementComposite, ManagementOutput};
use protocol::persisted::ArbitratorVotes;
use protocol::{Ballot, Message, NodeRole};

fn composite() -> ManagementComposite {
    composite_with_votes(None)
}

fn composite_with_votes(votes: Option<ArbitratorVotes>) -> ManagementComposite {
    let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
    let config = config::parse(&text, "config.ini").expect("a valid config");
    let settings = ManagementSettings::new("config.ini", &text, config, [7; 32]);
    ManagementComposite::new(settings, 50, 0, votes)
}

fn hello(node: u8, incarnation: u64, role: NodeRole) -> Message {
    Message::Hello {
        node,
        incarnation,
        role,
        nonce: [0; 16],
    }
}

fn allocate(requested: Option<u8>) -> Message {
    Message::AllocateNodeId {
        role: NodeRole::Data,
        requested,
        listen_port: 4000,
    }
}

#[test]
fn a_hello_claim_followed_by_an_allocation_identifies_the_link_with_the_claim() {
    let mut management = composite();
    let mut output = ManagementOutput::default();
    management.on_connected(1, "127.0.0.1");
    management.on_message(10, 1, hello(0, 77, NodeRole::Data), &mut output);
    // The Hello reaches no block and makes nobody known yet.
    assert!(output.sends.is_empty());
    assert_eq!(management.peer_of(1), None);
    management.on_message(11, 1, allocate(Some(2)), &mut output);
    let expected = Peer {
        node: 2,
        incarnation: 77,
        role: NodeRole::Data,
    };
    assert_eq!(management.peer_of(1), Some(expected));
    assert_eq!(output.identified, vec![(1, expected)]);
    assert!(matches!(
        output.sends.as_slice(),
        [(1, Message::NodeIdAllocated { node: 2, .. }), ..]
    ));
    assert_eq!(management.block().node_of(1), Some(2));
}

#[test]
fn a_message_before_hello_reaches_the_block_but_does_not_identify_the_link() {
    let mut management = composite();
    let mut output = ManagementOutput::default();
    management.on_connected(3, "127.0.0.1");
    management.on_message(5, 3, allocate(Some(2)), &mut output);
    // The block answered and allocated: clients talk before any Hello.
    assert!(matches!(
        output.sends.as_slice(),
        [(3, Message::NodeIdAllocated { node: 2, .. }), ..]
    ));
    assert_eq!(management.block().node_of(3), Some(2));
    // Without a claim there is no incarnation or role to count it by.
    assert_eq!(management.peer_of(3), None);
    assert!(output.identified.is_empty());
    // A Hello after the allocation is remembered, but only an allocation
    // identifies a link.
    output.clear();
    management.on_message(6, 3, hello(2, 9, NodeRole::Data), &mut output);
    assert_eq!(management.peer_of(3), None);
    assert!(output.sends.is_empty() && output.identified.is_empty());
}

#[test]
fn a_hello_proof_is_ignored_and_a_closed_link_is_forgotten() {
    let mut management = composite();
    let mut output = ManagementOutput::default();
    management.on_connected(4, "127.0.0.1");
    management.on_message(1, 4, hello(0, 5, NodeRole::Api), &mut output);
    management.on_message(1, 4, Message::HelloProof { proof: [0; 32] }, &mut output);
    assert!(output.sends.is_empty() && output.logs.is_empty());
    management.on_message(
        2,
        4,
        Message::AllocateNodeId {
            role: NodeRole::Api,
            requested: None,
            listen_port: 0,
        },
        &mut output,
    );
    let peer = management.peer_of(4).expect("identified");
    assert_eq!((peer.incarnation, peer.role), (5, NodeRole::Api));
    output.clear();
    management.on_link_closed(3, 4, &mut output);
    assert_eq!(management.peer_of(4), None);
    assert_eq!(management.block().node_of(4), None);
    // A message the runtime read in the same turn as the close goes nowhere.
    management.on_message(3, 4, allocate(None), &mut output);
    assert!(output.sends.is_empty());
}

#[test]
fn a_vote_comes_out_with_its_votes_to_persist_before_the_send() {
    // Started with its votes read back, the arbitrator votes at once.
    let mut management = composite_with_votes(Some(ArbitratorVotes::default()));
    let mut output = ManagementOutput::default();
    management.on_connected(1, "127.0.0.1");
    management.on_message(0, 1, hello(0, 77, NodeRole::Data), &mut output);
    management.on_message(0, 1, allocate(Some(2)), &mut output);
    output.clear();
    let now = 10;
    let prepare = Message::Prepare {
        generation: 1,
        version: 5,
        ballot: Ballot { round: 1, node: 2 },
    };
    management.on_message(now, 1, prepare, &mut output);
    let votes = output.votes.as_ref().expect("a vote is persisted");
    let decoded = ArbitratorVotes::decode(votes).expect("the votes decode");
    assert_eq!(decoded, management.block().votes());
    assert!(
        matches!(output.sends.as_slice(), [(1, Message::Promise { .. })]),
        "the vote itself goes out in the same turn: {:?}",
        output.sends
    );
}

#[test]
fn ticks_come_at_the_heartbeat_interval_within_bounds() {
    let mut management = composite();
    assert_eq!(
        management.next_deadline_ms(),
        0,
        "the first tick is due at once"
    );
    let mut output = ManagementOutput::default();
    management.tick(100, &mut output);
    let interval_ms = management.next_deadline_ms() - 100;
    let heartbeat_ms = management.block().settings().heartbeat_interval_ms;
    assert_eq!(
        interval_ms,
        heartbeat_ms.clamp(TICK_INTERVAL_MIN_MS, TICK_INTERVAL_MAX_MS)
    );
}

#[test]
fn a_closed_data_node_link_is_logged_and_its_node_id_freed_for_a_new_claim() {
    let mut management = composite();
    let mut output = ManagementOutput::default();
    management.on_connected(1, "127.0.0.1");
    management.on_message(0, 1, hello(2, 10, NodeRole::Data), &mut output);
    management.on_message(0, 1, allocate(Some(2)), &mut output);
    output.clear();
    management.on_link_closed(5, 1, &mut output);
    assert!(
        output.logs.iter().any(|line| line.contains("Node 2")),
        "the cluster log hears of the disconnect: {:?}",
        output.logs
    );
    // The node's next incarnation gets the same id on a new link, and the
    // link is identified with the new claim, not the old one.
    output.clear();
    management.on_connected(2, "127.0.0.1");
    management.on_message(6, 2, hello(2, 11, NodeRole::Data), &mut output);
    management.on_message(6, 2, allocate(Some(2)), &mut output);
    assert_eq!(
        management.peer_of(2),
        Some(Peer {
            node: 2,
            incarnation: 11,
            role: NodeRole::Data
        })
    );
    assert_eq!(management.peer_of(1), None);
}

#[test]
#[should_panic(expected = "not reused while open")]
fn an_open_link_id_is_never_given_twice() {
    let mut management = composite();
    management.on_connected(1, "127.0.0.1");
    management.on_connected(1, "127.0.0.2");
}

/// A node id whose connection is still open is refused for now (5020,
/// temporary), not for good; once that connection has been silent for
/// MaxMissedHeartbeats of the node's heartbeat intervals the management
/// node closes it (SHOW then tells the truth), and the id is given again.
/// A connection that keeps reporting is never closed.
#[test]
fn a_silent_node_connection_is_closed_and_its_id_refused_only_for_now_until_then() {
    let mut management = composite();
    let settings = management.block().settings().clone();
    let silence_max_ms = settings.heartbeat_interval_ms * u64::from(settings.missed_heartbeats_max);
    let mut output = ManagementOutput::default();
    management.on_connected(1, "127.0.0.1");
    management.on_message(0, 1, hello(2, 10, NodeRole::Data), &mut output);
    management.on_message(0, 1, allocate(Some(2)), &mut output);
    // Node 3 keeps reporting at its interval.
    management.on_connected(3, "127.0.0.1");
    management.on_message(0, 3, hello(3, 10, NodeRole::Data), &mut output);
    management.on_message(0, 3, allocate(Some(3)), &mut output);
    let report = |management: &mut ManagementComposite, now: u64, output: &mut ManagementOutput| {
        let report = protocol::DataNodeReport {
            started: false,
            incarnation: 10,
            generation: 0,
            version: 0,
            president: 0,
            members: Vec::new(),
            schema_version: 0,
            tables: 0,
            pages_used: 0,
            pages_total: 0,
            ..Default::default()
        };
        management.on_message(
            now,
            3,
            Message::StatusReport {
                report: Box::new(report),
            },
            output,
        );
    };
    output.clear();
    // Node 2's next process asks for its id while the old connection is
    // open: a temporary refusal.
    management.on_connected(2, "127.0.0.1");
    management.on_message(1, 2, hello(2, 11, NodeRole::Data), &mut output);
    management.on_message(1, 2, allocate(Some(2)), &mut output);
    let refused = output
        .sends
        .iter()
        .find_map(|(link, message)| match message {
            Message::Refused { error } if *link == 2 => Some(error.ndb_code),
            _ => None,
        });
    assert_eq!(refused, Some(cluster::management::NODE_ID_HELD_NDB_CODE));
    management.on_link_closed(1, 2, &mut output);
    // Ticks up to the limit close nothing; past it, node 2's old link.
    let mut now = 0;
    let mut closed_at = None;
    while now <= 3 * silence_max_ms && closed_at.is_none() {
        output.clear();
        report(&mut management, now, &mut output);
        management.tick(now, &mut output);
        if let Some((link, why)) = output.close.first() {
            assert_eq!(*link, 1, "only the silent node's link: {:?}", output.close);
            assert!(why.contains("Node 2"), "{why}");
            closed_at = Some(now);
        }
        now += settings.heartbeat_interval_ms / 2;
    }
    let closed_at = closed_at.expect("the silent connection is closed");
    assert!(closed_at > silence_max_ms, "closed at {closed_at}");
    assert_eq!(management.peer_of(1), None);
    assert_eq!(management.block().node_of(3), Some(3));
    // The id is free again.
    output.clear();
    management.on_connected(4, "127.0.0.1");
    management.on_message(now, 4, hello(2, 11, NodeRole::Data), &mut output);
    management.on_message(now, 4, allocate(Some(2)), &mut output);
    assert_eq!(management.block().node_of(4), Some(2), "{output:?}");
}
