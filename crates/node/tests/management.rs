//! The management connection of `DataNodeComposite` is a state machine the
//! runtime's loop drives: after a loss it asks for a connection once per
//! retry interval, asks for the node's id on it, and gives it up when no
//! answer came by the deadline — nothing waits, so heartbeats go on.

mod support;

use node::data_node::{MANAGEMENT_ANSWER_TIMEOUT_MS, MANAGEMENT_RETRY_MS, ManagementLink};
use node::{DataNodeComposite, Output};
use protocol::{Message, NodeRole};

fn composite() -> DataNodeComposite {
    support::composite(2, 4321, [1; 32])
}

/// Ticks at every deadline up to `until_ms`; returns every output.
fn run_until(node: &mut DataNodeComposite, from_ms: u64, until_ms: u64) -> Vec<(u64, Output)> {
    let mut outputs = Vec::new();
    let mut now = from_ms;
    while now <= until_ms {
        let mut output = Output::default();
        node.tick(now, &mut output);
        outputs.push((now, output));
        now = node.next_deadline_ms().max(now + 1);
    }
    outputs
}

#[test]
fn a_silent_management_node_is_given_up_at_its_deadline_and_tried_again() {
    let mut node = composite();
    let mut output = Output::default();
    node.on_management_lost(0, "closed by the peer", &mut output);
    assert_eq!(
        node.management_link(),
        ManagementLink::Down {
            retry_at_ms: MANAGEMENT_RETRY_MS
        }
    );
    // The retry: the runtime is asked to connect, and it connects.
    let outputs = run_until(&mut node, 1, MANAGEMENT_RETRY_MS);
    let asked: Vec<u64> = outputs
        .iter()
        .filter(|(_, o)| o.connect_management)
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(asked, vec![MANAGEMENT_RETRY_MS]);
    let mut output = Output::default();
    node.on_management_connected(MANAGEMENT_RETRY_MS + 5, &mut output);
    assert!(matches!(
        output.to_management.as_slice(),
        [
            Message::Hello { node: 2, .. },
            Message::AllocateNodeId {
                role: NodeRole::Data,
                requested: Some(2),
                listen_port: 4321
            }
        ]
    ));
    // No answer: heartbeats go on (ticks keep coming), and at the deadline
    // the connection is given up and another attempt follows.
    let deadline = MANAGEMENT_RETRY_MS + 5 + MANAGEMENT_ANSWER_TIMEOUT_MS;
    let outputs = run_until(
        &mut node,
        MANAGEMENT_RETRY_MS + 6,
        deadline + MANAGEMENT_RETRY_MS,
    );
    let heartbeat_ms = node.membership().settings().heartbeat_interval_ms;
    let ticks_min = (MANAGEMENT_ANSWER_TIMEOUT_MS / heartbeat_ms) as usize;
    assert!(ticks_min >= 1);
    assert!(
        outputs.len() >= ticks_min,
        "heartbeat ticks went on while waiting: {} < {ticks_min}",
        outputs.len()
    );
    let given_up: Vec<u64> = outputs
        .iter()
        .filter(|(_, o)| o.close_management.is_some())
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(given_up, vec![deadline]);
    assert!(
        outputs
            .iter()
            .any(|(at, o)| o.connect_management && *at == deadline + MANAGEMENT_RETRY_MS)
    );
    assert_eq!(node.marks().management_timeouts, 1);
}

#[test]
fn an_answer_for_another_node_id_is_not_taken() {
    let mut node = composite();
    let mut output = Output::default();
    node.on_management_lost(0, "closed", &mut output);
    run_until(&mut node, 1, MANAGEMENT_RETRY_MS);
    node.on_management_connected(MANAGEMENT_RETRY_MS, &mut output);
    let mut output = Output::default();
    node.on_management_message(
        MANAGEMENT_RETRY_MS + 1,
        Message::NodeIdAllocated {
            node: 3,
            config_file: "config.ini".into(),
            config_text: String::new(),
            secret: [1; 32],
        },
        &mut output,
    );
    assert!(output.close_management.is_some(), "{output:?}");
    assert!(matches!(
        node.management_link(),
        ManagementLink::Down { .. }
    ));
    // The right answer on the next attempt brings the link up and
    // publishes the node's address again.
    run_until(
        &mut node,
        MANAGEMENT_RETRY_MS + 2,
        2 * MANAGEMENT_RETRY_MS + 1,
    );
    let mut output = Output::default();
    node.on_management_connected(2 * MANAGEMENT_RETRY_MS + 2, &mut output);
    let mut output = Output::default();
    node.on_management_message(
        2 * MANAGEMENT_RETRY_MS + 3,
        Message::NodeIdAllocated {
            node: 2,
            config_file: "config.ini".into(),
            config_text: String::new(),
            secret: [1; 32],
        },
        &mut output,
    );
    assert_eq!(node.management_link(), ManagementLink::Up);
    assert!(matches!(
        output.to_management.as_slice(),
        [Message::Addresses { entries }] if entries.len() == 1 && entries[0].port == 4321
    ));
}
