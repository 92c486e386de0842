//! How a peer proves who it is. The management node hands every node it
//! allocates an id to the cluster secret (`NodeIdAllocated`). On a new
//! connection each side sends `Hello` with its claimed identity and a
//! fresh random nonce; each answers the other's `Hello` with `HelloProof`,
//! a keyed BLAKE3 hash under the secret of the other side's nonce and its
//! own claimed identity. A side that cannot produce the proof does not know
//! the secret; the secret itself never crosses a data connection, and a
//! proof is good for one connection only (the nonce).
//!
//! The proof also says which side of the connection the prover is (the
//! one that dialed or the one that accepted), so a stranger cannot relay a
//! node's answer on one connection it opened as the proof of its own claim
//! on another it opened too.
//!
//! Byte layout hashed (all integers little-endian): the context
//! `b"shoal hello proof v1"`, 1 if the prover dialed else 0, the 16-byte
//! nonce, the node id (1 byte), the incarnation (8 bytes), the role's wire
//! id (1 byte).

use crate::types::{NodeId, NodeRole};

/// The cluster secret the management node generates once and keeps in its
/// DataDir.
pub type ClusterSecret = [u8; 32];
/// A connection's random challenge.
pub type Nonce = [u8; 16];
/// A `HelloProof`.
pub type Proof = [u8; 32];

const CONTEXT: &[u8] = b"shoal hello proof v1";

/// The proof that the sender of `Hello { node, incarnation, role }` knows
/// `secret`, for the connection whose other side chose `nonce`; `dialed`
/// tells whether the sender opened the connection.
pub fn hello_proof(
    secret: &ClusterSecret,
    dialed: bool,
    nonce: &Nonce,
    node: NodeId,
    incarnation: u64,
    role: NodeRole,
) -> Proof {
    let mut hasher = blake3::Hasher::new_keyed(secret);
    hasher.update(CONTEXT);
    hasher.update(&[u8::from(dialed)]);
    hasher.update(nonce);
    hasher.update(&[node]);
    hasher.update(&incarnation.to_le_bytes());
    hasher.update(&[role.wire_id()]);
    *hasher.finalize().as_bytes()
}

/// Whether `proof` is the right one, compared in constant time.
pub fn proof_holds(
    proof: &Proof,
    secret: &ClusterSecret,
    dialed: bool,
    nonce: &Nonce,
    node: NodeId,
    incarnation: u64,
    role: NodeRole,
) -> bool {
    let expected =
        blake3::Hash::from_bytes(hello_proof(secret, dialed, nonce, node, incarnation, role));
    expected == blake3::Hash::from_bytes(*proof)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_binds_secret_nonce_and_identity() {
        let secret = [7u8; 32];
        let nonce = [1u8; 16];
        let proof = hello_proof(&secret, true, &nonce, 2, 42, NodeRole::Data);
        assert!(proof_holds(
            &proof,
            &secret,
            true,
            &nonce,
            2,
            42,
            NodeRole::Data
        ));
        assert!(!proof_holds(
            &proof,
            &[8u8; 32],
            true,
            &nonce,
            2,
            42,
            NodeRole::Data
        ));
        assert!(!proof_holds(
            &proof,
            &secret,
            false,
            &nonce,
            2,
            42,
            NodeRole::Data
        ));
        assert!(!proof_holds(
            &proof,
            &secret,
            true,
            &[2u8; 16],
            2,
            42,
            NodeRole::Data
        ));
        assert!(!proof_holds(
            &proof,
            &secret,
            true,
            &nonce,
            3,
            42,
            NodeRole::Data
        ));
        assert!(!proof_holds(
            &proof,
            &secret,
            true,
            &nonce,
            2,
            43,
            NodeRole::Data
        ));
        assert!(!proof_holds(
            &proof,
            &secret,
            true,
            &nonce,
            2,
            42,
            NodeRole::Api
        ));
    }
}
