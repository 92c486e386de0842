//! The identification step of `DataNodeComposite`: a connection's peer is
//! who its `Hello` claims only once its `HelloProof` holds under the
//! cluster secret; before that the connection can do nothing else, and a
//! claim never takes over the connection of a newer incarnation.

mod support;

use node::{DataNodeComposite, LinkId, Output};
use protocol::identity::{ClusterSecret, Nonce, hello_proof};
use protocol::{Message, NodeId, NodeRole};

const SECRET: ClusterSecret = [42; 32];

fn composite(node: NodeId) -> DataNodeComposite {
    support::composite(node, 1, SECRET)
}

/// Opens `link` and returns the nonce the composite challenged with.
fn open(node: &mut DataNodeComposite, link: LinkId) -> Nonce {
    let mut output = Output::default();
    let nonce = [link as u8; 16];
    node.on_connected(link, None, nonce, &mut output);
    assert!(matches!(
        output.sends.as_slice(),
        [(l, Message::Hello { node: 2, nonce: n, .. })] if *l == link && *n == nonce
    ));
    nonce
}

fn hello(node: NodeId, incarnation: u64) -> Message {
    Message::Hello {
        node,
        incarnation,
        role: NodeRole::Data,
        nonce: [9; 16],
    }
}

fn deliver(node: &mut DataNodeComposite, link: LinkId, message: Message) -> Output {
    let mut output = Output::default();
    node.on_message(0, link, message, &mut output);
    output
}

/// The whole handshake of a peer that knows `secret`.
fn prove(
    node: &mut DataNodeComposite,
    link: LinkId,
    peer: NodeId,
    incarnation: u64,
    secret: &ClusterSecret,
) -> Output {
    let nonce = open(node, link);
    let answer = deliver(node, link, hello(peer, incarnation));
    // The peer dialed, so it proves itself first: the node says nothing
    // until then.
    assert!(answer.sends.is_empty(), "{answer:?}");
    let proof = hello_proof(secret, true, &nonce, peer, incarnation, NodeRole::Data);
    let output = deliver(node, link, Message::HelloProof { proof });
    // Once the proof holds, the node answers with its own over the peer's
    // nonce, before anything else: its proof means accepted.
    if node.peer_of(link).is_some() {
        let expected = hello_proof(&SECRET, false, &[9; 16], 2, 100, NodeRole::Data);
        assert!(
            matches!(
                output.sends.first(),
                Some((l, Message::HelloProof { proof })) if *l == link && *proof == expected
            ),
            "{output:?}"
        );
    } else {
        assert!(
            !output
                .sends
                .iter()
                .any(|(l, m)| *l == link && matches!(m, Message::HelloProof { .. })),
            "a refused peer gets no proof: {output:?}"
        );
    }
    output
}

#[test]
fn a_peer_that_proves_its_claim_is_identified() {
    let mut node = composite(2);
    let output = prove(&mut node, 1, 3, 7, &SECRET);
    assert!(output.close.is_empty(), "{output:?}");
    assert_eq!(node.link_of(3), Some(1));
    assert_eq!(
        node.peer_of(1).map(|p| (p.node, p.incarnation)),
        Some((3, 7))
    );
}

#[test]
fn a_hello_without_the_secret_identifies_nothing_and_replaces_nothing() {
    let mut node = composite(2);
    prove(&mut node, 1, 3, 7, &SECRET);
    // A stranger claims node 3, even as a newer incarnation, and cannot
    // prove it.
    let output = prove(&mut node, 2, 3, 8, &[0; 32]);
    assert_eq!(output.close.len(), 1, "{output:?}");
    assert_eq!(output.close[0].0, 2);
    assert_eq!(
        node.link_of(3),
        Some(1),
        "the real node keeps its connection"
    );
    assert_eq!(node.peer_of(2), None);
    assert_eq!(node.incarnation(), 100, "no restart");
    assert!(!node.is_awaiting_restart());
}

#[test]
fn a_message_before_the_proof_closes_the_connection() {
    for early in [
        Message::Heartbeat {
            generation: 1,
            version: 1,
            free_pages: None,
            sent_at_ms: 0,
        },
        Message::Stop,
    ] {
        let mut node = composite(2);
        open(&mut node, 1);
        deliver(&mut node, 1, hello(3, 7));
        let output = deliver(&mut node, 1, early);
        assert_eq!(output.close.len(), 1, "{output:?}");
        assert_eq!(node.link_of(3), None);
        // Closed: even the right proof is no longer heard.
        let proof = hello_proof(&SECRET, true, &[1; 16], 3, 7, NodeRole::Data);
        deliver(&mut node, 1, Message::HelloProof { proof });
        assert_eq!(node.link_of(3), None);
    }
}

#[test]
fn a_proof_without_a_hello_closes_the_connection() {
    let mut node = composite(2);
    let nonce = open(&mut node, 1);
    let proof = hello_proof(&SECRET, true, &nonce, 3, 7, NodeRole::Data);
    let output = deliver(&mut node, 1, Message::HelloProof { proof });
    assert_eq!(output.close.len(), 1, "{output:?}");
    assert_eq!(node.link_of(3), None);
}

#[test]
fn a_proof_relayed_from_the_accepting_side_does_not_hold() {
    // A stranger that dialed two nodes could hand one the other's proof,
    // made as the accepting side: it proves nothing for a dialer.
    let mut node = composite(2);
    let nonce = open(&mut node, 1);
    deliver(&mut node, 1, hello(3, 7));
    let relayed = hello_proof(&SECRET, false, &nonce, 3, 7, NodeRole::Data);
    let output = deliver(&mut node, 1, Message::HelloProof { proof: relayed });
    assert_eq!(output.close.len(), 1, "{output:?}");
    assert_eq!(node.link_of(3), None);
}

#[test]
fn an_older_incarnation_never_replaces_a_newer_ones_connection() {
    let mut node = composite(2);
    prove(&mut node, 1, 3, 7, &SECRET);
    let output = prove(&mut node, 2, 3, 6, &SECRET);
    assert_eq!(output.close.len(), 1, "{output:?}");
    assert_eq!(output.close[0].0, 2);
    assert_eq!(node.link_of(3), Some(1));
}

#[test]
fn a_proven_newer_connection_replaces_the_older_one() {
    let mut node = composite(2);
    prove(&mut node, 1, 3, 7, &SECRET);
    let output = prove(&mut node, 2, 3, 8, &SECRET);
    assert_eq!(output.close.len(), 1, "{output:?}");
    assert_eq!(output.close[0].0, 1, "the older connection goes");
    assert_eq!(node.link_of(3), Some(2));
    assert_eq!(node.marks().replaced_links, 1);
}

/// Both nodes may dial each other at once; replacing the connection in use
/// would lose what travels on it, so the accepting side refuses the second
/// one before proving itself (`prove` asserts that no proof is sent).
#[test]
fn a_second_connection_from_the_same_live_incarnation_is_refused_unproven() {
    let mut node = composite(2);
    prove(&mut node, 1, 3, 7, &SECRET);
    let output = prove(&mut node, 2, 3, 7, &SECRET);
    assert_eq!(output.close.len(), 1, "{output:?}");
    assert_eq!(output.close[0].0, 2, "the new connection goes");
    assert_eq!(node.link_of(3), Some(1));
    assert_eq!(node.marks().duplicate_links_refused, 1);
    assert_eq!(node.marks().replaced_links, 0);
}

#[test]
fn a_claim_to_be_an_unconfigured_data_node_or_this_node_is_refused() {
    for (claimed, role) in [
        (9, NodeRole::Data),
        (2, NodeRole::Data),
        (1, NodeRole::Management),
    ] {
        let mut node = composite(2);
        open(&mut node, 1);
        let output = deliver(
            &mut node,
            1,
            Message::Hello {
                node: claimed,
                incarnation: 1,
                role,
                nonce: [0; 16],
            },
        );
        assert_eq!(output.close.len(), 1, "{claimed} {role:?}: {output:?}");
        assert!(
            output.sends.is_empty(),
            "no proof for a claim that cannot hold"
        );
    }
}
