//! An API node that walks away: once the tables are loaded it opens a
//! transaction on one coordinator, writes absurd values into a counter and
//! an account without committing (holding their locks), and when the
//! answer comes it closes its connection, or (half of the runs) stops
//! sending anything, heartbeats included, with its connections left open,
//! as a stopped process does. The data node must roll the
//! transaction back (NDB's API failure handling): otherwise the coordinator
//! keeps an open transaction, the rows stay locked for the sessions, and
//! the final checks fail; and were the writes ever committed, the counter
//! and bank checks would.

use protocol::{Execute, ExecuteEnd, Executed, Message, NodeId, OperationKind, TransactionState};

use super::{Op, Phase, Simulation, WorkTable};

/// The deserter's node id, apart from the sessions' API nodes.
pub const DESERTER_API: NodeId = 240;
/// A value no transfer or increment ever writes.
const ABSURD_VALUE: i64 = 1_000_000_007;

impl Simulation {
    /// Sends the deserter's uncommitted writes to a random coordinator.
    pub(in crate::run) fn deserter_step(&mut self) {
        if self.workload().phase != Phase::Running {
            return;
        }
        let coordinator = self.safe_coordinator_node();
        let workload = self.workload_mut();
        let transaction = workload.new_transaction_id(DESERTER_API);
        let operations = vec![
            workload.operation(
                &Op::new(WorkTable::Counters, OperationKind::Update, 0).writing(ABSURD_VALUE),
            ),
            workload.operation(
                &Op::new(WorkTable::Bank, OperationKind::Update, 0).writing(ABSURD_VALUE),
            ),
        ];
        workload.deserter = Some((transaction, coordinator));
        self.trace(format!(
            "deserter: api {DESERTER_API} writes without committing through node {coordinator}"
        ));
        self.outcome.transactions.executes += 1;
        self.send(
            DESERTER_API,
            coordinator,
            Message::Execute(Execute {
                transaction,
                start: true,
                end: ExecuteEnd::NoCommit,
                operations,
            }),
        );
    }

    /// The deserter's answer came: it leaves without a word.
    pub(in crate::run) fn deserter_receive(&mut self, from: NodeId, executed: Executed) {
        let Some((transaction, coordinator)) = self.workload_mut().deserter.take() else {
            // A node its open transaction used crashed after it walked
            // away: the coordinator reports the abort to an API that no
            // longer listens.
            let node_failure = executed.state == TransactionState::Aborted
                && executed.error.as_ref().map(|e| e.ndb_code) == Some(super::NODE_FAILURE);
            // After a whole-cluster crash, whatever was on its way to it
            // before the crash may still arrive.
            if !(node_failure && self.crash_plan.is_some()) && self.system_stop.crash.is_none() {
                self.fail(format!("the deserter got an unexpected {executed:?}"));
            }
            return;
        };
        if executed.transaction != transaction || from != coordinator {
            self.fail(format!(
                "the deserter got {executed:?} from node {from}, not the answer to its \
                 transaction {transaction} on node {coordinator}"
            ));
            return;
        }
        if executed.state == TransactionState::Committed {
            self.fail(format!(
                "the deserter's uncommitted writes committed: {executed:?}"
            ));
            return;
        }
        if executed.state == TransactionState::Open {
            // The transaction is open, with its locks, when the API goes.
            self.outcome.transactions.marks.api_disconnects += 1;
        }
        if super::super::chance(&mut self.rng, 0.5) {
            // A stopped process: its connections stay open and silent, so
            // only the missed heartbeats tell the data node to roll back.
            self.trace(format!(
                "deserter: got {:?}; stops (no more messages, connections open)",
                executed.state
            ));
            self.frozen_apis.insert(DESERTER_API);
            return;
        }
        self.trace(format!(
            "deserter: got {:?}; closes its connection to node {coordinator}",
            executed.state
        ));
        self.disconnect_api(DESERTER_API, coordinator);
    }
}
