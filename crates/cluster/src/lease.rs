//! Membership leases: a data node serves reads, and its coordinator
//! decides commits (`transaction::Coordinator::set_lease`), only while
//! every other member has recently promised not to help remove it.
//!
//! A node cut off from the others keeps its memory and, until it learns
//! that it was removed, would answer reads from data the others have since
//! changed: NDB lets it, for up to the arbitration time. Shoal does not.
//!
//! - Every member stamps its heartbeats with its own clock (`sent_at_ms`).
//!   A member that vouches for the sender answers at once with the stamp
//!   (`HeartbeatEcho`), and so **promises** not to take part in removing
//!   the sender until `duration_ms` after it heard that heartbeat (its own
//!   clock): it accepts no change that removes the sender, as voter or as
//!   president, before then, and once it wants the sender removed (it
//!   suspects it, was told of it, or accepted such a change) it vouches no
//!   more.
//! - The sender holds a **lease** from each member until the echoed stamp
//!   plus `read_duration_ms` (its own clock: the stamp is from before the
//!   other heard the heartbeat, so the lease ends before the promise; the
//!   eighth less covers clocks that run at slightly different rates).
//!   It serves reads only while it holds a lease from every other member.
//! - A state that removes the node is decided by a quorum of voters; each
//!   voter other than the node is a member whose promise to it has
//!   expired, so the node's lease from that voter expired before the
//!   decision, and no write the others commit without it can be hidden
//!   from a read it serves. A member admitted after this node has no
//!   promise to keep yet: it votes for no removal for a detection time
//!   (twice `duration_ms`) after its admission, and this node lets it
//!   vouch late for a little less (its connections may take that long;
//!   a member silent for longer is suspected and removed anyway).
//!
//! `duration_ms` is half the failure detection time (heartbeat interval ×
//! missed heartbeats), so a node that goes silent is removed only after
//! every promise to it expired: leases cost a silent node's removal
//! nothing, and delay the removal of a crashed node (its connections
//! closed, suspected at once) by at most `duration_ms`.

use std::collections::BTreeMap;

use protocol::Member;

/// What a node knows and promised about its peers' leases.
#[derive(Debug)]
pub struct Leases {
    duration_ms: u64,
    /// Per member: the stamp of its newest heartbeat and when it arrived.
    heard: BTreeMap<Member, (u64, u64)>,
    /// Per member: until when this node promised not to help remove it.
    promised_until_ms: BTreeMap<Member, u64>,
    /// Per member: until when its echoes let this node serve reads.
    leased_until_ms: BTreeMap<Member, u64>,
    /// Members admitted after this node, and when this node learned it:
    /// they may vouch late (`newcomer_grace_ms`).
    admitted_later_ms: BTreeMap<Member, u64>,
    /// When this node installed its first state (its admission).
    admitted_ms: Option<u64>,
}

impl Leases {
    pub fn new(duration_ms: u64) -> Leases {
        assert!(
            duration_ms >= 8,
            "a lease of {duration_ms} ms leaves no margin"
        );
        Leases {
            duration_ms,
            heard: BTreeMap::new(),
            promised_until_ms: BTreeMap::new(),
            leased_until_ms: BTreeMap::new(),
            admitted_later_ms: BTreeMap::new(),
            admitted_ms: None,
        }
    }

    /// When this node installed its first state (was admitted).
    pub fn admitted_ms(&self) -> Option<u64> {
        self.admitted_ms
    }

    /// How long an echo lets the node serve: shorter than the promise by an
    /// eighth, for clock rate differences.
    fn read_duration_ms(&self) -> u64 {
        self.duration_ms - self.duration_ms / 8
    }

    /// How long a newly admitted member votes for no removal: the failure
    /// detection time.
    fn newcomer_ms(&self) -> u64 {
        2 * self.duration_ms
    }

    /// How long this node serves without a newly admitted member's echo:
    /// shorter than the newcomer's own wait by an eighth of a lease.
    fn newcomer_grace_ms(&self) -> u64 {
        self.newcomer_ms() - self.duration_ms / 8
    }

    /// `from`'s heartbeat stamped `sent_at_ms` arrived at `now_ms`.
    pub fn heard(&mut self, from: Member, sent_at_ms: u64, now_ms: u64) {
        let entry = self.heard.entry(from).or_insert((sent_at_ms, now_ms));
        if sent_at_ms >= entry.0 {
            *entry = (sent_at_ms, now_ms);
        }
    }

    /// This node vouches for `member`: the stamp to echo, if it heard one,
    /// and the promise that goes with it.
    pub fn vouch(&mut self, member: Member) -> Option<u64> {
        let (stamp, heard_ms) = *self.heard.get(&member)?;
        let until = heard_ms + self.duration_ms;
        let promised = self.promised_until_ms.entry(member).or_insert(until);
        *promised = (*promised).max(until);
        Some(stamp)
    }

    /// Whether this node holds no lease from `member` at `now_ms` (and
    /// should ask for an echo at once rather than at its next heartbeat).
    pub fn lacks(&self, member: Member, now_ms: u64) -> bool {
        self.leased_until_ms
            .get(&member)
            .is_none_or(|until| *until <= now_ms)
    }

    /// `from` echoed this node's heartbeat stamped `sent_at_ms`.
    pub fn echoed(&mut self, from: Member, sent_at_ms: u64, now_ms: u64) {
        if sent_at_ms > now_ms {
            // Not a stamp this clock made.
            return;
        }
        let until = sent_at_ms + self.read_duration_ms();
        let leased = self.leased_until_ms.entry(from).or_insert(until);
        *leased = (*leased).max(until);
    }

    /// The earliest time this node may accept a change that removes
    /// `removed` (none removed: any time).
    pub fn removal_fence_ms(&self, removed: &[Member]) -> u64 {
        if removed.is_empty() {
            return 0;
        }
        let promised = removed
            .iter()
            .filter_map(|member| self.promised_until_ms.get(member))
            .copied()
            .max()
            .unwrap_or(0);
        let since_admission = self.admitted_ms.map_or(0, |at| at + self.newcomer_ms());
        promised.max(since_admission)
    }

    /// Until when this node may serve reads, given the other members of
    /// its installed state.
    pub fn read_lease_until_ms(&self, others: impl Iterator<Item = Member>) -> u64 {
        others
            .map(|member| {
                let echoed = self.leased_until_ms.get(&member).copied().unwrap_or(0);
                let late = self
                    .admitted_later_ms
                    .get(&member)
                    .map_or(0, |at| at + self.newcomer_grace_ms());
                echoed.max(late)
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    /// A state with `members` (this node among them) was installed.
    pub fn installed(&mut self, members: &[Member], now_ms: u64) {
        let first = self.admitted_ms.is_none();
        if first {
            self.admitted_ms = Some(now_ms);
        }
        for member in members {
            if !first
                && !self.heard.contains_key(member)
                && !self.leased_until_ms.contains_key(member)
            {
                self.admitted_later_ms.entry(*member).or_insert(now_ms);
            }
        }
        self.heard.retain(|member, _| members.contains(member));
        self.leased_until_ms
            .retain(|member, _| members.contains(member));
        self.admitted_later_ms
            .retain(|member, _| members.contains(member));
        // A removed member is never removed again (a new incarnation is
        // another member), so its promise, and all else about it, goes.
        self.promised_until_ms
            .retain(|member, _| members.contains(member));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(node: u8) -> Member {
        Member {
            node,
            incarnation: 1,
        }
    }

    #[test]
    fn a_lease_ends_before_the_promise_that_backs_it() {
        let (a, b) = (member(1), member(2));
        let mut at_a = Leases::new(400);
        let mut at_b = Leases::new(400);
        at_a.installed(&[a, b], 0);
        at_b.installed(&[a, b], 0);
        // a sends at 1000 (its clock); b hears it at 1030 and vouches.
        at_b.heard(a, 1_000, 1_030);
        let stamp = at_b.vouch(a).expect("heard");
        at_a.echoed(b, stamp, 1_060);
        assert_eq!(at_a.read_lease_until_ms([b].into_iter()), 1_350);
        assert_eq!(at_b.removal_fence_ms(&[a]), 1_430);
        assert_eq!(at_b.removal_fence_ms(&[]), 0);
    }

    #[test]
    fn without_an_echo_from_every_other_member_there_is_no_lease() {
        let (a, b, c) = (member(1), member(2), member(3));
        let mut at_a = Leases::new(400);
        at_a.installed(&[a, b, c], 0);
        at_a.echoed(b, 100, 110);
        assert_eq!(at_a.read_lease_until_ms([b, c].into_iter()), 0);
        at_a.echoed(c, 150, 160);
        assert_eq!(at_a.read_lease_until_ms([b, c].into_iter()), 450);
        // An echo of an older stamp does not shorten the lease; a stamp
        // from the future is not this clock's.
        at_a.echoed(c, 120, 170);
        at_a.echoed(b, 9_000, 170);
        assert_eq!(at_a.read_lease_until_ms([b, c].into_iter()), 450);
        assert_eq!(at_a.read_lease_until_ms(std::iter::empty()), u64::MAX);
    }

    #[test]
    fn a_member_admitted_later_may_vouch_late_and_votes_no_removal_at_first() {
        let (a, b, c) = (member(1), member(2), member(3));
        let mut at_a = Leases::new(400);
        at_a.installed(&[a, b], 0);
        at_a.echoed(b, 1_000, 1_010);
        at_a.installed(&[a, b, c], 1_100);
        // c has not echoed yet: it may until 1100 + 800 - 50.
        assert_eq!(at_a.read_lease_until_ms([c].into_iter()), 1_850);
        assert_eq!(at_a.read_lease_until_ms([b, c].into_iter()), 1_350);
        let mut at_c = Leases::new(400);
        at_c.installed(&[a, b, c], 1_120);
        assert_eq!(at_c.removal_fence_ms(&[a]), 1_920);
    }
}
