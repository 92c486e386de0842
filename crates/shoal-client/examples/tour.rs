//! A tour of the native API against a running cluster (`shoal up`):
//! multi-partition transactions, batched reads, parallel and pruned scans,
//! the asynchronous interface, a unique index, auto-increment values, and
//! the counters that show round trips.
//!
//! `cargo run --release -p shoal-client --example tour -- 127.0.0.1:1186`

use std::time::Duration;

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, IndexDef, TableDef};
use shoal_client::{Cluster, ExecuteEnd, Hint, LockMode, ScanOptions, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let connectstring = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:1186".into());
    let cluster = Cluster::connect(&connectstring, Duration::from_secs(30))?;
    println!("connected as API node {}", cluster.node_id());

    // accounts(id INT PRIMARY KEY, branch INT, balance BIGINT), partitioned by id.
    let definition = TableDef::new(
        "tour_accounts",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("branch", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("balance", ColumnType::BigInt { unsigned: false }, false),
        ],
        vec![0],
        Vec::new(),
    )?;
    let _ = cluster.drop_table("tour_accounts");
    cluster.create_table(&definition, &TableOptions::default())?;
    let accounts = cluster.table("tour_accounts")?;
    println!(
        "table tour_accounts: {} partitions, READ_BACKUP={}",
        accounts.partition_count, accounts.read_backup
    );
    let mut session = cluster.session()?;

    // 1. One transaction inserts 100 rows spread over every partition: one round trip.
    let before = session.counters();
    let mut transaction = session.start_transaction(None)?;
    for id in 0..100i64 {
        transaction.insert(
            &accounts,
            &[
                (0, Value::Int(id)),
                (1, Value::Int(id % 4)),
                (2, Value::Int(1_000)),
            ],
        )?;
    }
    session.execute(&mut transaction, ExecuteEnd::Commit)?;
    let after = session.counters();
    println!(
        "insert 100 rows in one transaction: {} round trip(s), {:?}",
        after.execute_count - before.execute_count,
        transaction.status()
    );

    // 2. A transfer across two partitions: read both with exclusive locks,
    //    update both, commit. Atomic on every replica of both partitions.
    let key = |id: i64| vec![(0u16, Value::Int(id))];
    let mut transfer = session.start_transaction(Some(Hint {
        table: &accounts,
        key: &key(7),
        committed_read: false,
    }))?;
    let from = transfer.read(&accounts, &key(7), &[2], LockMode::Exclusive)?;
    let to = transfer.read(&accounts, &key(42), &[2], LockMode::Exclusive)?;
    session.execute(&mut transfer, ExecuteEnd::NoCommit)?;
    let balance = |row: shoal_client::Row| match row.get(2) {
        Some(Value::Int(value)) => *value,
        other => panic!("balance is {other:?}"),
    };
    let (from_balance, to_balance) = (balance(transfer.row(from)?), balance(transfer.row(to)?));
    transfer.update(&accounts, &key(7), &[(2, Value::Int(from_balance - 250))])?;
    transfer.update(&accounts, &key(42), &[(2, Value::Int(to_balance + 250))])?;
    session.execute(&mut transfer, ExecuteEnd::Commit)?;
    println!(
        "transfer 7 → 42: {:?} on coordinator node {}",
        transfer.status(),
        transfer.coordinator()
    );

    // 3. Ten reads in one batch: one round trip.
    let before = session.counters();
    let mut reads = session.start_transaction(None)?;
    let operations: Vec<_> = (0..10)
        .map(|id| reads.read(&accounts, &key(id), &[0, 2], LockMode::Committed))
        .collect::<Result<_, _>>()?;
    session.execute(&mut reads, ExecuteEnd::Commit)?;
    let total: i64 = operations
        .iter()
        .map(|op| reads.row(*op).map(balance))
        .sum::<Result<i64, _>>()?;
    let after = session.counters();
    println!(
        "batched read of 10 rows: {} round trip(s), balances sum {total}",
        after.execute_count - before.execute_count
    );

    // 4. A full scan runs on every partition in parallel.
    let mut scan_transaction = session.start_transaction(None)?;
    let scan = session.scan(&mut scan_transaction, &accounts, &ScanOptions::default())?;
    let mut rows = 0;
    let mut sum = 0i64;
    while let Some(row) = session.next_row(&scan)? {
        rows += 1;
        sum += balance(row);
    }
    session.execute(&mut scan_transaction, ExecuteEnd::Commit)?;
    println!("parallel scan: {rows} rows, total balance {sum} (kept by the transfer)");

    // 5. A scan with the whole distribution key fixed touches one partition.
    let mut pruned_transaction = session.start_transaction(None)?;
    let pruned = session.scan(
        &mut pruned_transaction,
        &accounts,
        &ScanOptions {
            partition_key: Some(key(42)),
            ..ScanOptions::default()
        },
    )?;
    let mut in_partition = 0;
    while session.next_row(&pruned)?.is_some() {
        in_partition += 1;
    }
    session.execute(&mut pruned_transaction, ExecuteEnd::Commit)?;
    println!("pruned scan: {in_partition} rows of the one partition holding id 42");

    // 6. Asynchronous: 50 single-row reads in flight from this thread.
    for id in 0..50 {
        let mut transaction = session.start_transaction(Some(Hint {
            table: &accounts,
            key: &key(id),
            committed_read: true,
        }))?;
        transaction.read(&accounts, &key(id), &[2], LockMode::Committed)?;
        session.prepare_async(transaction, ExecuteEnd::Commit)?;
    }
    let mut answered = 0;
    while answered < 50 {
        answered += session
            .send_poll(50 - answered, Duration::from_secs(10))?
            .len();
    }
    println!("asynchronous: {answered} transactions answered");

    // 7. A unique index: find a row by it; a duplicate is refused with 893.
    let members = TableDef::new(
        "tour_members",
        vec![
            ColumnDef::new("id", ColumnType::BigInt { unsigned: true }, false),
            ColumnDef::new("email", ColumnType::Varbinary { length: 64 }, false),
        ],
        vec![0],
        vec![IndexDef {
            name: "email".into(),
            columns: vec![1],
            unique: true,
        }],
    )?;
    let _ = cluster.drop_table("tour_members");
    cluster.create_table(&members, &TableOptions::default())?;
    let members = cluster.table("tour_members")?;
    // Ids from the table's auto-increment counter, 10 per round trip.
    session.set_auto_increment_prefetch(10)?;
    let mut transaction = session.start_transaction(None)?;
    for name in ["ada", "grace", "edsger"] {
        let id = session.auto_increment(&members)?;
        let email = Value::Bytes(format!("{name}@example.org").into_bytes());
        transaction.insert(&members, &[(0, Value::UInt(id)), (1, email)])?;
    }
    session.execute(&mut transaction, ExecuteEnd::Commit)?;
    let email = |name: &str| vec![(1, Value::Bytes(format!("{name}@example.org").into_bytes()))];
    let mut transaction = session.start_transaction(None)?;
    let found = transaction.read_unique(
        &members,
        "email",
        &email("grace"),
        &[0],
        LockMode::Committed,
    )?;
    session.execute(&mut transaction, ExecuteEnd::Commit)?;
    println!(
        "unique index: grace@example.org is member {:?}",
        transaction.row(found)?.get(0)
    );
    let mut transaction = session.start_transaction(None)?;
    let id = session.auto_increment(&members)?;
    transaction.insert(&members, &[(0, Value::UInt(id)), email("ada")[0].clone()])?;
    let refused = session.execute(&mut transaction, ExecuteEnd::Commit);
    println!(
        "a second ada@example.org: {}",
        refused
            .err()
            .map_or("accepted?".to_string(), |e| e.to_string())
    );
    cluster.drop_table("tour_members")?;

    let counters = session.counters();
    println!(
        "counters: execute_count {} pk_op_count {} scan_count {} pruned_scan_count {} \
         trans_start_count {} trans_commit_count {} trans_abort_count {} bytes_sent {} \
         bytes_received {} data_node_hops {}",
        counters.execute_count,
        counters.pk_op_count,
        counters.scan_count,
        counters.pruned_scan_count,
        counters.trans_start_count,
        counters.trans_commit_count,
        counters.trans_abort_count,
        counters.bytes_sent_count,
        cluster.counters().bytes_received_count,
        counters.data_node_hops
    );
    cluster.drop_table("tour_accounts")?;
    Ok(())
}
