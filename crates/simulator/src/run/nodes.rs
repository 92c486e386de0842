//! The simulated data nodes: each runs `node::DataNodeComposite`, the
//! composite `shoal datad` runs, and this module plays datad's part — the
//! sockets. A connection is a pair of link ends (`SimLink`), one per node;
//! a data node dials the data nodes its composite names, API nodes connect
//! to every running data node, and the `Hello`s of a new connection are
//! exchanged at once (TCP's handshake is not what the simulator tests).
//! Membership messages on a link travel over the lossy `Network`,
//! transaction messages over `TcpLinks`. A crash, or a cut the operating
//! system notices, closes link ends the way a reset does: the other end
//! sees it a little later, or when it next sends after the cut heals.
//!
//! The management connection is the composite's too: it asks to reconnect
//! after losing the management node, and the simulator connects it when
//! the management node runs and the link is not cut.

use cluster::management::ConnectionId;
use node::{DataNodeComposite, LinkId, ManagementOutput, Output};
use protocol::{Address, Message, NodeId, NodeRole};
use storage::engine::EngineConfig;
use transaction::{CoordinatorConfig, QueryHandler, is_transaction_message};

use super::{
    CLIENT_NODE, DIAL_DELAY_MS_MAX, SCHEMA_RUN_DATA_MEMORY_PAGES, SimEvent, Simulation, between,
    counted_in_flight,
};

/// One end of a simulated connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct SimLink {
    pub owner: NodeId,
    pub owner_incarnation: u64,
    pub peer: NodeId,
    pub peer_link: LinkId,
}

/// The port every simulated data node "listens" on (the composite dials
/// only published addresses with a port).
const SIMULATED_PORT: u16 = 1;

/// The bound on a restore's rows aside in the starts that test giving
/// them up: a few dozen rows.
const RESTORED_ASIDE_BYTES_MAX_SMALL: u64 = 4_096;

impl Simulation {
    /// The engine of a data node in a run without the transaction
    /// workload: `SCHEMA_RUN_DATA_MEMORY_PAGES` of DataMemory, which the
    /// schema client's creates fill.
    fn membership_engine_config() -> EngineConfig {
        EngineConfig {
            data_memory_bytes: SCHEMA_RUN_DATA_MEMORY_PAGES
                * storage::memory::PAGE_SIZE_BYTES as u64,
            operations_max: 256,
            transactions_max: 64,
            scans_max: 16,
            tables_max: 1_024,
            ..EngineConfig::default()
        }
    }

    pub(super) fn start_data_node(&mut self, node: NodeId) {
        let incarnation = self.next_incarnation;
        self.next_incarnation += 1;
        let now = self.now_ms;
        let engine = self
            .workload
            .as_ref()
            .map_or_else(Simulation::membership_engine_config, |w| w.engine_config());
        let mut query_handler =
            QueryHandler::new(node, engine).expect("the simulator's engine config fits");
        // Small copy batches make a node recovery copy interleave with the
        // workload's writes row by row.
        if self.crash_plan.is_some() {
            let batch_rows = between(&mut self.rng, 1, 8) as u32;
            query_handler.set_copy_batch_rows(batch_rows);
            // One start in eight bounds the rows a restore from the node's
            // own disk keeps aside to a few, so the restore gives them up
            // and its copies send every row whole (no draw of its own, so
            // the seeds' runs stay as they were).
            if batch_rows == 1 {
                query_handler.set_restored_aside_bytes_max(RESTORED_ASIDE_BYTES_MAX_SMALL);
            }
            // Paced copies wait between batches, under the workload.
            query_handler.set_copy_rows_per_second(between(&mut self.rng, 1_000, 100_000));
        }
        let disk_start = self.attach_redo(node, &mut query_handler);
        let mut composite = DataNodeComposite::new(
            self.settings(node, incarnation),
            now,
            query_handler,
            self.workload
                .as_ref()
                .map_or_else(CoordinatorConfig::default, |w| w.coordinator_config()),
            Address {
                node,
                host: "sim".into(),
                port: SIMULATED_PORT,
            },
            self.secret,
            self.epoch_config,
        );
        composite.set_observing(self.workload.is_some());
        self.give_disk(node, &mut composite, disk_start);
        let sim = self.nodes.get_mut(&node).expect("configured node");
        assert!(sim.composite.is_none(), "a running node is not restarted");
        sim.composite = Some(composite);
        sim.incarnation = incarnation;
        if let Some(plan) = self.crash_plan.as_mut() {
            plan.crashed.remove(&node);
        }
        sim.tick_at_ms = None;
        self.trace(format!("node {node} starts as incarnation {incarnation}"));
        if !self.register_with_management(node) {
            let mut output = Output::default();
            self.composite_mut(node)
                .expect("just started")
                .on_management_lost(now, "the management node is down", &mut output);
            self.perform(node, output);
        }
        self.connect_api_nodes(node);
        self.schedule_tick(node);
    }

    /// The node's runtime connects to the management node, asks for its id
    /// and publishes its address, as `shoal datad` does at start. Returns
    /// whether the management node runs and answered.
    fn register_with_management(&mut self, node: NodeId) -> bool {
        let now = self.now_ms;
        let management_incarnation = self.management.incarnation;
        let incarnation = self.nodes[&node].incarnation;
        let Some(management) = self.management.composite.as_mut() else {
            return false;
        };
        let connection = ConnectionId::from(node);
        let mut output = ManagementOutput::default();
        management.on_link_closed(now, connection, &mut output);
        management.on_connected(connection, "127.0.0.1");
        // As datad's blocking connection does: Hello, then the request.
        management.on_message(
            now,
            connection,
            Message::Hello {
                node,
                incarnation,
                role: NodeRole::Data,
                nonce: [0; 16],
            },
            &mut output,
        );
        management.on_message(
            now,
            connection,
            Message::AllocateNodeId {
                role: NodeRole::Data,
                requested: Some(node),
                // The sockets exist before the allocation in the simulator.
                listen_port: SIMULATED_PORT,
            },
            &mut output,
        );
        let refused = management.block().node_of(connection) != Some(node)
            || management.peer_of(connection).map(|peer| peer.incarnation) != Some(incarnation);
        management.on_message(
            now,
            connection,
            Message::Addresses {
                entries: vec![Address {
                    node,
                    host: "sim".into(),
                    port: SIMULATED_PORT,
                }],
            },
            &mut output,
        );
        if refused {
            self.fail(format!(
                "the management node refused to give node {node} (incarnation {incarnation}) its \
                 id, or did not take its Hello's incarnation"
            ));
        }
        if let Some(sim) = self.nodes.get_mut(&node) {
            sim.management_incarnation = Some(management_incarnation);
        }
        self.apply_management_output(output);
        true
    }

    /// The composite asked to reach the management node again.
    fn connect_management(&mut self, node: NodeId) {
        let now = self.now_ms;
        let mut output = Output::default();
        let reachable =
            self.management.composite.is_some() && !self.network.is_cut(node, self.management_node);
        let management_incarnation = self.management.incarnation;
        if reachable {
            let mut management_output = ManagementOutput::default();
            let management = self.management.composite.as_mut().expect("checked");
            let connection = ConnectionId::from(node);
            management.on_link_closed(now, connection, &mut management_output);
            management.on_connected(connection, "127.0.0.1");
            self.apply_management_output(management_output);
            self.nodes
                .get_mut(&node)
                .expect("a data node")
                .management_incarnation = Some(management_incarnation);
            self.trace(format!("node {node} reconnects to the management node"));
            let Some(composite) = self.composite_mut(node) else {
                return;
            };
            composite.on_management_connected(now, &mut output);
        } else {
            let Some(composite) = self.composite_mut(node) else {
                return;
            };
            composite.on_management_lost(now, "connection refused", &mut output);
        }
        self.perform(node, output);
    }

    /// Every API node (the schema client, the workload's) connects to a
    /// data node that started, as `shoal-client` connects to every data
    /// node it is told of.
    fn connect_api_nodes(&mut self, node: NodeId) {
        let mut apis = vec![CLIENT_NODE];
        if let Some(workload) = &self.workload {
            apis.extend(workload.apis());
        }
        for api in apis {
            self.open_link(api, node, None, NodeRole::Api);
        }
    }

    /// Opens a connection from `from` (a data node dialing, or an API node)
    /// to the data node `to`, and exchanges Hellos at once.
    pub(super) fn open_link(
        &mut self,
        from: NodeId,
        to: NodeId,
        dialed: Option<NodeId>,
        role: NodeRole,
    ) {
        let Some(to_incarnation) = self.composite_incarnation(to) else {
            return;
        };
        let from_incarnation = if role == NodeRole::Api {
            0
        } else {
            match self.composite_incarnation(from) {
                Some(incarnation) => incarnation,
                None => return,
            }
        };
        if self.network.is_cut(from, to) {
            if role == NodeRole::Data {
                self.trace(format!(
                    "node {from} cannot connect to node {to}: the link is cut"
                ));
            }
            return;
        }
        if role == NodeRole::Data {
            self.trace(format!("node {from} connects to node {to}"));
        }
        let from_link = self.next_link;
        let to_link = self.next_link + 1;
        self.next_link += 2;
        self.links.insert(
            from_link,
            SimLink {
                owner: from,
                owner_incarnation: from_incarnation,
                peer: to,
                peer_link: to_link,
            },
        );
        self.links.insert(
            to_link,
            SimLink {
                owner: to,
                owner_incarnation: to_incarnation,
                peer: from,
                peer_link: from_link,
            },
        );
        let now = self.now_ms;
        // Both ends exist before either says Hello.
        let mut from_output = Output::default();
        let from_nonce = self.nonce();
        let to_nonce = self.nonce();
        if role == NodeRole::Data {
            self.composite_mut(from).expect("checked").on_connected(
                from_link,
                dialed,
                from_nonce,
                &mut from_output,
            );
        } else {
            self.api_links.insert((from, to), from_link);
            self.api_nonces.insert(from_link, from_nonce);
        }
        let mut output = Output::default();
        self.composite_mut(to)
            .expect("checked")
            .on_connected(to_link, None, to_nonce, &mut output);
        if role == NodeRole::Api {
            // The API node's Hello, as `shoal-client` says it.
            self.composite_mut(to).expect("checked").on_message(
                now,
                to_link,
                Message::Hello {
                    node: from,
                    incarnation: 0,
                    role: NodeRole::Api,
                    nonce: from_nonce,
                },
                &mut output,
            );
        }
        // Both Hellos are queued before either is answered, as both leave
        // before anything comes back on a real connection.
        let draining = std::mem::replace(&mut self.draining_handshakes, true);
        if role == NodeRole::Data {
            self.perform(from, from_output);
        }
        self.perform(to, output);
        self.draining_handshakes = draining;
        if !draining {
            self.drain_handshakes();
        }
    }

    /// A connection's random challenge, from the run's seeded source.
    fn nonce(&mut self) -> protocol::identity::Nonce {
        let mut nonce = [0u8; 16];
        rand_core::Rng::fill_bytes(&mut self.rng, &mut nonce);
        nonce
    }

    pub(super) fn composite_incarnation(&self, node: NodeId) -> Option<u64> {
        let sim = self.nodes.get(&node)?;
        sim.composite.as_ref().map(|_| sim.incarnation)
    }

    pub(super) fn composite_mut(&mut self, node: NodeId) -> Option<&mut DataNodeComposite> {
        self.nodes.get_mut(&node)?.composite.as_mut()
    }

    /// Closes one end of a link; the other end learns of it a little later
    /// unless the link is cut (then on its next send after the cut heals).
    /// `tell_owner` is false when the owner closed it itself.
    pub(super) fn close_link(&mut self, link: LinkId, why: &str, tell_owner: bool) {
        let Some(end) = self.links.remove(&link) else {
            return;
        };
        self.trace(format!(
            "node {}'s connection to node {} closes: {why}",
            end.owner, end.peer
        ));
        if let Some(api) = self.api_links.get(&(end.owner, end.peer))
            && *api == link
        {
            self.api_links.remove(&(end.owner, end.peer));
        }
        if tell_owner && self.composite_incarnation(end.owner) == Some(end.owner_incarnation) {
            let now = self.now_ms;
            let mut output = Output::default();
            self.composite_mut(end.owner)
                .expect("checked")
                .on_link_closed(now, link, why, &mut output);
            self.perform(end.owner, output);
        } else if tell_owner && self.workload.as_ref().is_some_and(|w| w.is_api(end.owner)) {
            // Everything the data node sent before it died has arrived.
            self.workload_link_lost(end.owner, end.peer);
        }
        if self.links.contains_key(&end.peer_link) && !self.network.is_cut(end.owner, end.peer) {
            let at = self.now_ms + between(&mut self.rng, 1, 5);
            self.schedule_link_closed(at, end.peer_link);
        }
    }

    /// The end `link` of a connection sees it closed at `at`; until then
    /// the workload counts the close as something that moves it on.
    pub(super) fn schedule_link_closed(&mut self, at: u64, link: LinkId) {
        self.link_closes_pending += 1;
        self.schedule(at, SimEvent::LinkClosed { link });
    }

    /// API node `api` closes its connection to data node `node`.
    pub(super) fn disconnect_api(&mut self, api: NodeId, node: NodeId) {
        if let Some(link) = self.api_links.get(&(api, node)).copied() {
            self.close_link(link, "the API node disconnected", false);
        }
    }

    /// Closes every link between `a` and `b` (a cut the system noticed).
    pub(super) fn close_links_between(&mut self, a: NodeId, b: NodeId) {
        let ends: Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, end)| (end.owner, end.peer) == (a, b) || (end.owner, end.peer) == (b, a))
            .map(|(link, _)| *link)
            .collect();
        for link in ends {
            let at = self.now_ms + between(&mut self.rng, 1, 50);
            self.schedule_link_closed(at, link);
        }
    }

    pub(super) fn crash_data_node(&mut self, node: NodeId, why: &str) {
        self.take_down(node, why, true);
    }

    /// The node's process ends; with `restart` it is started again later
    /// (its angel's doing, or the crash plan's).
    pub(super) fn take_down(&mut self, node: NodeId, why: &str, restart: bool) {
        let sim = self.nodes.get_mut(&node).expect("configured node");
        let Some(composite) = sim.composite.take() else {
            return;
        };
        let incarnation = sim.incarnation;
        sim.management_incarnation = None;
        self.outcome.marks.add(&composite.membership_marks());
        self.outcome.node_marks.add(&composite.marks());
        self.crash_disk(node, composite.query_handler().redo());
        let planned = match self.crash_plan.as_mut() {
            Some(plan) if plan.candidates.contains(&node) => {
                plan.crashed.insert(node);
                plan.down.insert((node, incarnation));
                plan.crashes += 1;
                plan.last_crash_ms = Some(self.now_ms);
                true
            }
            _ => false,
        };
        if !planned
            && !self.system_stop.requested
            && self.workload.as_ref().is_some_and(|w| w.has_data())
        {
            self.fail(format!(
                "node {node} went down during the transaction workload ({why}); only the planned \
                 crashes of nodes that are not coordinators are part of transaction runs"
            ));
        }
        self.outcome.crashes += 1;
        self.trace(format!(
            "node {node} (incarnation {incarnation}) goes down: {why}"
        ));
        // Its link ends vanish; peers with a working link see theirs close.
        let ends: Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, end)| end.owner == node)
            .map(|(link, _)| *link)
            .collect();
        for link in ends {
            self.close_link(link, "the process died", false);
        }
        let now = self.now_ms;
        if let Some(management) = self.management.composite.as_mut() {
            let mut output = ManagementOutput::default();
            management.on_link_closed(now, ConnectionId::from(node), &mut output);
            self.apply_management_output(output);
        }
        if !restart {
            return;
        }
        if planned {
            // Empty when it is back: it copies its fragments first.
            self.plan_restart(node);
            return;
        }
        let at = self.now_ms + between(&mut self.rng, 200, 3_000);
        self.schedule(at, SimEvent::Restart { node });
    }

    /// Schedules the node's next tick when the composite needs it sooner
    /// than the one scheduled.
    pub(super) fn schedule_tick(&mut self, node: NodeId) {
        let now = self.now_ms;
        let Some(sim) = self.nodes.get_mut(&node) else {
            return;
        };
        let incarnation = sim.incarnation;
        let Some(composite) = sim.composite.as_ref() else {
            return;
        };
        let at_ms = composite.next_deadline_ms().max(now);
        if sim.tick_at_ms.is_some_and(|scheduled| scheduled <= at_ms) {
            return;
        }
        sim.tick_at_ms = Some(at_ms);
        self.schedule(
            at_ms,
            SimEvent::Tick {
                node,
                incarnation,
                at_ms,
            },
        );
    }

    pub(super) fn tick(&mut self, node: NodeId, incarnation: u64, at_ms: u64) {
        let now = self.now_ms;
        let Some(sim) = self.nodes.get_mut(&node) else {
            return;
        };
        if sim.incarnation != incarnation || sim.tick_at_ms != Some(at_ms) {
            return;
        }
        sim.tick_at_ms = None;
        let Some(composite) = sim.composite.as_mut() else {
            return;
        };
        let mut output = Output::default();
        composite.tick(now, &mut output);
        self.perform(node, output);
        // A tick that changed nothing must not come again at once.
        if let Some(sim) = self.nodes.get_mut(&node)
            && sim.incarnation == incarnation
            && sim.tick_at_ms.is_none()
            && let Some(composite) = sim.composite.as_ref()
            && composite.next_deadline_ms() <= now
        {
            sim.tick_at_ms = Some(now + 1);
            self.schedule(
                now + 1,
                SimEvent::Tick {
                    node,
                    incarnation,
                    at_ms: now + 1,
                },
            );
        }
    }

    /// Does what a data node's composite asked for, as datad does.
    pub(super) fn perform(&mut self, node: NodeId, mut output: Output) {
        let Some(incarnation) = self.composite_incarnation(node) else {
            return;
        };
        for line in output.logs.drain(..) {
            self.trace(format!("node {node}: {line}"));
        }
        let files = std::mem::take(&mut output.files);
        self.schedule_files(node, files);
        for problem in output.problems.drain(..) {
            self.fail(format!("node {node}#{incarnation}: {problem}"));
        }
        if !output.coordinator_steps.is_empty() {
            let steps = std::mem::take(&mut output.coordinator_steps);
            self.check_coordinator_steps(node, steps);
        }
        if !output.commit_decisions.is_empty() {
            let decisions = std::mem::take(&mut output.commit_decisions);
            self.check_commit_decisions(node, decisions);
        }
        for state in output.installed.drain(..) {
            self.check_installed(node, incarnation, state);
            if self.workload.is_some() {
                self.workload_installed();
            }
        }
        for (link, why) in output.close.drain(..) {
            self.close_link(link, &why, false);
        }
        for (link, message) in output.sends.drain(..) {
            self.send_on_link(link, message);
        }
        for message in output.to_management.drain(..) {
            self.send_to_management(node, incarnation, message);
        }
        if let Some(why) = output.close_management.take() {
            self.trace(format!(
                "node {node} closes its management connection: {why}"
            ));
            self.break_management_connection(node, self.management_node, false);
        }
        if output.connect_management {
            self.connect_management(node);
        }
        for address in output.dial.drain(..) {
            if !self.dials.insert((node, incarnation, address.node)) {
                continue;
            }
            let at_ms = self.now_ms + between(&mut self.rng, 0, DIAL_DELAY_MS_MAX);
            self.schedule(
                at_ms,
                SimEvent::Dial {
                    from: node,
                    incarnation,
                    to: address.node,
                },
            );
        }
        if let Some(reason) = output.stop.take() {
            // Stopped for good by the operator's ALL STOP: its angel does
            // not start it again (the operator does, once all are down).
            let restart = !self.system_stop.requested;
            self.take_down(node, &format!("stopped: {reason}"), restart);
            return;
        }
        if let Some(reason) = output.excluded.take() {
            self.restart_in_place(node, &reason);
            return;
        }
        self.drive_disk(node);
        self.schedule_tick(node);
    }

    /// The node was excluded: it restarts as a new incarnation in the same
    /// process, as datad does.
    fn restart_in_place(&mut self, node: NodeId, reason: &str) {
        self.outcome.exclusions += 1;
        // A node that may crash may also be excluded (say, restarted and
        // not yet told where its peers listen, as a lost message can
        // delay, it misses their heartbeats): it starts again as a new
        // incarnation, as after a crash.
        let old_incarnation = self.nodes[&node].incarnation;
        let candidate = match self.crash_plan.as_mut() {
            Some(plan) if plan.candidates.contains(&node) => {
                plan.down.insert((node, old_incarnation));
                plan.crashes += 1;
                plan.last_crash_ms = Some(self.now_ms);
                true
            }
            _ => false,
        };
        // While the operator stops every node, the last ones see the others
        // go (a node group with none left is a cluster failure, as in NDB).
        if !candidate
            && !self.system_stop.requested
            && self.workload.as_ref().is_some_and(|w| w.has_data())
        {
            self.fail(format!(
                "node {node} was excluded during the transaction workload ({reason}); node \
                 failures are not part of transaction runs"
            ));
        }
        let incarnation = self.next_incarnation;
        self.next_incarnation += 1;
        self.trace(format!(
            "node {node} excluded ({reason}); restarts as incarnation {incarnation}"
        ));
        let now = self.now_ms;
        let mut output = Output::default();
        let sim = self.nodes.get_mut(&node).expect("a data node");
        sim.incarnation = incarnation;
        sim.tick_at_ms = None;
        let composite = sim.composite.as_mut().expect("running");
        composite.restart(now, incarnation, &mut output);
        self.perform(node, output);
        self.coordinator_restarted(node);
        self.connect_api_nodes(node);
        self.schedule_tick(node);
    }

    /// A message a data node's composite sends on one of its links.
    fn send_on_link(&mut self, link: LinkId, message: Message) {
        let Some(end) = self.links.get(&link).copied() else {
            self.outcome.messages_dropped += 1;
            return;
        };
        let peer_alive = self
            .links
            .get(&end.peer_link)
            .is_some_and(|peer| self.incarnation_of(peer.owner) == Some(peer.owner_incarnation));
        if !peer_alive {
            self.outcome.messages_dropped += 1;
            // The other end is gone: the send is answered by a reset,
            // unless the link is cut and nothing comes back.
            if !self.network.is_cut(end.owner, end.peer) {
                let at = self.now_ms + between(&mut self.rng, 1, 5);
                self.schedule_link_closed(at, link);
            }
            return;
        }
        if matches!(message, Message::Hello { .. } | Message::HelloProof { .. }) {
            self.handshake(end.owner, end.peer_link, message);
            return;
        }
        self.transmit(end.owner, end.peer, Some(end.peer_link), message);
    }

    /// A handshake message (`Hello`, `HelloProof`) arrives at once — TCP's
    /// handshake timing is not what the simulator tests — but in order:
    /// through one queue, so each side's `Hello` comes before its proof,
    /// as on a TCP stream.
    fn handshake(&mut self, from: NodeId, to_end: LinkId, message: Message) {
        self.handshakes.push_back((from, to_end, message));
        if !self.draining_handshakes {
            self.drain_handshakes();
        }
    }

    fn drain_handshakes(&mut self) {
        self.draining_handshakes = true;
        while let Some((from, to_end, message)) = self.handshakes.pop_front() {
            self.deliver_on_link(from, to_end, message);
        }
        self.draining_handshakes = false;
    }

    /// A message from an API node (the schema client or the workload's) to
    /// a data node, on the API node's connection to it.
    pub(super) fn send_from_api(&mut self, api: NodeId, to: NodeId, message: Message) {
        let Some(link) = self.api_links.get(&(api, to)).copied() else {
            self.outcome.messages_dropped += 1;
            if is_transaction_message(&message) {
                self.fail(format!(
                    "API node {api} has no connection to data node {to} for {}",
                    message.name()
                ));
            }
            return;
        };
        let end = self.links[&link];
        if !self.links.contains_key(&end.peer_link) {
            self.outcome.messages_dropped += 1;
            return;
        }
        self.transmit(api, to, Some(end.peer_link), message);
    }

    /// A message from a data node to the management node.
    fn send_to_management(&mut self, node: NodeId, incarnation: u64, message: Message) {
        let connected = self.nodes[&node].management_incarnation;
        let alive =
            self.management.composite.is_some() && connected == Some(self.management.incarnation);
        if !alive {
            self.outcome.messages_dropped += 1;
            // The management process that connection reached is gone: the
            // send is answered by a reset.
            if !self.network.is_cut(node, self.management_node) {
                let at = self.now_ms + between(&mut self.rng, 1, 5);
                self.schedule(at, SimEvent::ManagementLost { node, incarnation });
            }
            return;
        }
        self.transmit(node, self.management_node, None, message);
    }

    /// Puts a message on the network: transaction messages on `TcpLinks`,
    /// the rest on the lossy network.
    pub(super) fn transmit(
        &mut self,
        from: NodeId,
        to: NodeId,
        link: Option<LinkId>,
        message: Message,
    ) {
        let Some(to_incarnation) = self.incarnation_of(to) else {
            self.outcome.messages_dropped += 1;
            return;
        };
        if is_transaction_message(&message) {
            if self.network.is_cut(from, to) {
                // Only an isolation cuts a data node's connections in a
                // transaction run; they are reset when it ends.
                self.outcome.messages_dropped += 1;
                return;
            }
            let at_ms = self.tcp.arrival_ms(
                &mut self.rng,
                self.now_ms,
                from,
                to,
                counted_in_flight(&message),
            );
            if self.options.keep_trace {
                self.trace(format!("{from} -> {to} (arrives {at_ms}): {message:?}"));
            }
            self.schedule(
                at_ms,
                SimEvent::Deliver {
                    from,
                    to,
                    to_incarnation,
                    link,
                    message,
                },
            );
            return;
        }
        if self.network.is_cut(from, to) || super::chance(&mut self.rng, self.network.faults.loss) {
            self.outcome.messages_dropped += 1;
            return;
        }
        let copies = if super::chance(&mut self.rng, self.network.faults.duplication) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut latency = between(&mut self.rng, 1, self.network.faults.latency_ms_max.max(1));
            if super::chance(&mut self.rng, self.network.faults.slow) {
                latency += between(&mut self.rng, 0, self.network.faults.slow_ms_max);
            }
            self.schedule(
                self.now_ms + latency,
                SimEvent::Deliver {
                    from,
                    to,
                    to_incarnation,
                    link,
                    message: message.clone(),
                },
            );
        }
    }

    /// A message arrives at the end `link` of a connection.
    pub(super) fn deliver_on_link(&mut self, from: NodeId, link: LinkId, message: Message) {
        let Some(end) = self.links.get(&link).copied() else {
            self.outcome.messages_dropped += 1;
            return;
        };
        if self.incarnation_of(end.owner) != Some(end.owner_incarnation) {
            self.outcome.messages_dropped += 1;
            return;
        }
        let to = end.owner;
        if self.nodes.contains_key(&to) {
            let now = self.now_ms;
            let trigger = self.armed_trigger(to, &message);
            let mut output = Output::default();
            self.composite_mut(to)
                .expect("incarnation matched")
                .on_message(now, link, message, &mut output);
            match trigger {
                Some(trigger) => self.crash_after(to, trigger, output),
                None => self.perform(to, output),
            }
            return;
        }
        match message {
            // A data node's Hello to an API node: the API node proves its
            // claim, as `shoal-client` does.
            Message::Hello { nonce, .. } => {
                // API nodes dial.
                let proof = protocol::identity::hello_proof(
                    &self.secret,
                    true,
                    &nonce,
                    to,
                    0,
                    NodeRole::Api,
                );
                self.handshake(to, end.peer_link, Message::HelloProof { proof });
            }
            // The data node's proof: checked as `shoal-client` checks it.
            Message::HelloProof { proof } => {
                let nonce = self.api_nonces.remove(&link).unwrap_or_default();
                let incarnation = self.composite_incarnation(from).unwrap_or(0);
                if !protocol::identity::proof_holds(
                    &proof,
                    &self.secret,
                    false,
                    &nonce,
                    from,
                    incarnation,
                    NodeRole::Data,
                ) {
                    self.fail(format!(
                        "data node {from} failed to prove itself to API node {to}"
                    ));
                }
            }
            // A data node's answer to the API node's heartbeat.
            Message::Heartbeat { .. } => {}
            Message::TakeoverDone {
                failed_node,
                failed_incarnation,
            } => self.workload_takeover_done(to, failed_node, failed_incarnation),
            other if to == CLIENT_NODE => self.client_receive(from, other),
            Message::Executed(mut executed) => {
                // Every API node but the deserter acknowledges committed
                // answers at once (the replicas keep the commit's markers
                // until then); the deserter's go with its connection.
                if executed.acknowledge && to != super::workload::DESERTER_API {
                    self.send_from_api(
                        to,
                        from,
                        Message::CommitAck {
                            transactions: Box::new(vec![executed.transaction]),
                        },
                    );
                }
                if let Some(error) = executed.error.as_mut() {
                    self.temporary_refusal_as_node_failure(error);
                }
                self.workload_receive(from, to, executed)
            }
            Message::ScanRows(mut rows) => {
                if let Some(error) = rows.error.as_mut() {
                    self.temporary_refusal_as_node_failure(error);
                }
                self.workload_scan_rows(from, to, rows)
            }
            other => self.fail(format!("API node {to} got {other:?} from {from}")),
        }
    }

    /// In a run with crashes, a transaction refused with 1204
    /// ("distribution changed": routed on a state a node restart made old,
    /// a write that missed a starting replica, a read of a replica still
    /// copying) or with 4035 (a node cut off from the others, or without a
    /// membership lease) did nothing: the workload retries it as it
    /// retries 4010, and counts it.
    fn temporary_refusal_as_node_failure(&mut self, error: &mut protocol::ErrorReply) {
        let distribution_changed = schema::ErrorCode::DistributionChanged
            .ndb_code()
            .expect("has an NDB code");
        // A node cut off from the others refuses work with 4035 (its side
        // may have lost, or its membership lease ran out): nothing ran.
        let not_member = schema::ErrorCode::NotMember
            .ndb_code()
            .expect("has an NDB code");
        if self.crash_plan.is_some() && error.ndb_code == not_member {
            self.outcome.transactions.marks.not_member_aborts += 1;
            error.ndb_code = schema::ErrorCode::NodeFailure
                .ndb_code()
                .expect("has an NDB code");
        }
        if self.crash_plan.is_some() && error.ndb_code == distribution_changed {
            self.outcome.transactions.marks.distribution_changed_aborts += 1;
            error.ndb_code = schema::ErrorCode::NodeFailure
                .ndb_code()
                .expect("has an NDB code");
        }
    }

    /// The management node's message to a data node.
    pub(super) fn deliver_from_management(&mut self, to: NodeId, message: Message) {
        let now = self.now_ms;
        let mut output = Output::default();
        let Some(composite) = self.composite_mut(to) else {
            return;
        };
        composite.on_management_message(now, message, &mut output);
        self.perform(to, output);
    }

    /// If `a`-`b` is a data node's link to the management node, the
    /// connection closes: the management node sees it at once, the data
    /// node (when `tell_node`) a little later.
    pub(super) fn break_management_connection(&mut self, a: NodeId, b: NodeId, tell_node: bool) {
        let node = if a == self.management_node {
            b
        } else if b == self.management_node {
            a
        } else {
            return;
        };
        let now = self.now_ms;
        if let Some(management) = self.management.composite.as_mut() {
            let mut output = ManagementOutput::default();
            management.on_link_closed(now, ConnectionId::from(node), &mut output);
            self.apply_management_output(output);
        }
        if let Some(sim) = self.nodes.get_mut(&node) {
            sim.management_incarnation = None;
            if tell_node && sim.composite.is_some() {
                let incarnation = sim.incarnation;
                let at = self.now_ms + between(&mut self.rng, 1, 50);
                self.schedule(at, SimEvent::ManagementLost { node, incarnation });
            }
        }
    }

    pub(super) fn management_lost(&mut self, node: NodeId, incarnation: u64) {
        if self.composite_incarnation(node) != Some(incarnation) {
            return;
        }
        let now = self.now_ms;
        self.nodes
            .get_mut(&node)
            .expect("a data node")
            .management_incarnation = None;
        let mut output = Output::default();
        self.composite_mut(node)
            .expect("checked")
            .on_management_lost(now, "the connection closed", &mut output);
        self.perform(node, output);
    }
}
