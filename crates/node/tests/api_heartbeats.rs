//! API nodes are heartbeated: a data node answers each API heartbeat, and
//! closes the connection of an API node silent for MaxMissedHeartbeats ×
//! HeartbeatIntervalDbApi, which rolls back its transactions and frees
//! its locks (a stopped API process keeps its socket open).

mod support;

use node::{DataNodeComposite, LinkId, Output};
use protocol::identity::{ClusterSecret, hello_proof};
use protocol::{Message, NodeId, NodeRole};

const SECRET: ClusterSecret = [42; 32];
const API: NodeId = 200;
const LINK: LinkId = 1;

fn composite() -> DataNodeComposite {
    support::composite(2, 1, SECRET)
}

fn heartbeat() -> Message {
    Message::Heartbeat {
        generation: 0,
        version: 0,
        free_pages: None,
        sent_at_ms: 0,
    }
}

/// A data node with API node `API` identified on `LINK` at time 0.
fn connected_api() -> DataNodeComposite {
    let mut node = composite();
    let mut output = Output::default();
    let nonce = [7; 16];
    node.on_connected(LINK, None, nonce, &mut output);
    let hello = Message::Hello {
        node: API,
        incarnation: 0,
        role: NodeRole::Api,
        nonce: [9; 16],
    };
    node.on_message(0, LINK, hello, &mut output);
    let proof = hello_proof(&SECRET, true, &nonce, API, 0, NodeRole::Api);
    node.on_message(0, LINK, Message::HelloProof { proof }, &mut output);
    assert_eq!(node.link_of(API), Some(LINK), "{output:?}");
    node
}

/// Ticks `node` from `from_ms` to `until_ms` at its deadlines, delivering
/// an API heartbeat every `heartbeat_ms` if given; returns when the API
/// link was closed, if it was.
fn run(
    node: &mut DataNodeComposite,
    from_ms: u64,
    until_ms: u64,
    heartbeat_ms: Option<u64>,
) -> Option<u64> {
    let mut now = from_ms;
    let mut next_heartbeat = from_ms;
    while now <= until_ms {
        let mut output = Output::default();
        if let Some(every) = heartbeat_ms
            && now >= next_heartbeat
        {
            next_heartbeat = now + every;
            node.on_message(now, LINK, heartbeat(), &mut output);
            assert!(
                output
                    .sends
                    .iter()
                    .any(|(l, m)| *l == LINK && matches!(m, Message::Heartbeat { .. })),
                "an API heartbeat is answered: {output:?}"
            );
        }
        node.tick(now, &mut output);
        if let Some((_, why)) = output.close.iter().find(|(l, _)| *l == LINK) {
            assert!(why.contains("declared dead"), "{why}");
            return Some(now);
        }
        let next = node.next_deadline_ms().min(next_heartbeat);
        now = next.max(now + 1);
    }
    None
}

#[test]
fn an_api_node_that_heartbeats_stays_and_a_silent_one_is_closed_in_time() {
    let mut node = connected_api();
    let settings = node.membership().settings().clone();
    let interval = settings.api_heartbeat_interval_ms;
    let silence_max = interval * u64::from(settings.missed_heartbeats_max);
    // Heartbeats at the interval keep the link for many silence limits.
    let heartbeats_until = 4 * silence_max;
    assert_eq!(run(&mut node, 0, heartbeats_until, Some(interval)), None);
    assert_eq!(node.link_of(API), Some(LINK));
    let last_heard = heartbeats_until - heartbeats_until % interval;
    // Then silence: closed after the limit, at most one data-node
    // heartbeat interval (the tick that checks) late.
    let closed = run(
        &mut node,
        heartbeats_until + 1,
        last_heard + 3 * silence_max,
        None,
    )
    .expect("a silent API node's link is closed");
    assert!(closed > last_heard + silence_max, "closed at {closed}");
    assert!(
        closed <= last_heard + silence_max + settings.heartbeat_interval_ms + 1,
        "closed at {closed}, last heard {last_heard}"
    );
    assert_eq!(node.link_of(API), None);
    assert_eq!(node.marks().api_declared_dead, 1);
}
