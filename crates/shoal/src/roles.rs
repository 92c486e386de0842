//! What each subcommand of `shoal` does, and the exit status it ends with.
//!
//! Exit statuses: 0 success, 1 the role ran and failed (its error is printed
//! on stderr), 2 the command line was not understood or the role is not
//! built yet. Clap uses 2 for command-line errors too, so scripts can tell a
//! usage problem from a failure.

use std::process::ExitCode;

use crate::cli::{BenchArgs, BenchCommand, BenchStorageArgs, Command, SimArgs};

/// Runs the role chosen on the command line.
pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Up(args) => crate::up::run(&args),
        Command::Mgmd(args) => mgmd(&args),
        Command::Datad(args) => datad(&args),
        Command::Sqld(args) => sqld(&args),
        Command::Mgm(args) => crate::mgm::run(&args),
        Command::Bench(BenchArgs { command }) => match command {
            BenchCommand::Storage(args) => bench_storage(&args),
            BenchCommand::Pk(args) => bench_pk(&args),
            BenchCommand::Failover(args) => bench_failover(&args),
            BenchCommand::Restart(args) => bench_restart(&args),
            BenchCommand::Sysbench(args) => bench_sysbench(&args),
        },
        Command::Sim(args) => sim(&args),
    }
}

fn mgmd(args: &crate::cli::MgmdArgs) -> ExitCode {
    let options = runtime::mgmd::MgmdOptions {
        config_file: args.config_file.clone(),
        port: args.port,
    };
    match runtime::mgmd::run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal mgmd: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the SQL node until SIGINT or SIGTERM.
fn sqld(args: &crate::cli::SqldArgs) -> ExitCode {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(error) = signal_hook::flag::register(signal, std::sync::Arc::clone(&stop)) {
            eprintln!("shoal sqld: cannot handle signal {signal}: {error}");
            return ExitCode::FAILURE;
        }
    }
    let settings = sqld::Settings {
        connectstring: args.ndb_connectstring.clone(),
        bind_address: args.bind_address.clone(),
        port: args.port,
        pool_size: args.ndb_cluster_connection_pool,
        data_dir: args.data_dir.clone(),
        ssl_cert: args.ssl_cert.clone(),
        ssl_key: args.ssl_key.clone(),
        max_connections: args.max_connections,
        max_allowed_packet: args.max_allowed_packet,
        wait_timeout_seconds: args.wait_timeout,
        cluster_wait_seconds: args.ndb_wait_connected,
        worker_threads: args.worker_threads,
        worker_spin_us: args.worker_spin,
    };
    match sqld::run(settings, stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal sqld: {error}");
            ExitCode::FAILURE
        }
    }
}

fn datad(args: &crate::cli::DatadArgs) -> ExitCode {
    if !args.worker && !args.no_angel {
        return datad_angel(args);
    }
    if args.worker
        && let Some(angel) = args.angel_pid
        && let Err(error) = runtime::angel::become_worker(angel)
    {
        eprintln!("shoal datad: {error}");
        return ExitCode::FAILURE;
    }
    let options = runtime::datad::DatadOptions {
        connectstring: args.ndb_connectstring.clone(),
        node_id: args.ndb_nodeid,
        initial: args.initial,
        report_fd: args.report_fd,
    };
    match runtime::datad::run(&options) {
        // The code tells the angel (or `shoal up`) what to do next.
        Ok(kind) => ExitCode::from(kind.exit_code()),
        Err(error) => {
            eprintln!("shoal datad: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `shoal datad` without `--no-angel`: the angel, which runs the data node
/// as `shoal datad --worker` and restarts it by its policy.
fn datad_angel(args: &crate::cli::DatadArgs) -> ExitCode {
    let executable = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => {
            eprintln!("shoal datad: cannot find the shoal executable: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut arguments: Vec<std::ffi::OsString> = vec![
        "datad".into(),
        "--ndb-connectstring".into(),
        args.ndb_connectstring.clone().into(),
    ];
    if args.initial {
        arguments.push("--initial".into());
    }
    let options = runtime::angel::AngelOptions {
        executable,
        arguments,
        node_id: args.ndb_nodeid,
        connectstring: args.ndb_connectstring.clone(),
    };
    let code = runtime::angel::run(&options);
    ExitCode::from(u8::try_from(code).unwrap_or(runtime::exit::EXIT_FAILED))
}

fn sim(args: &SimArgs) -> ExitCode {
    if !args.nodes.is_multiple_of(args.replicas) {
        eprintln!(
            "shoal sim: {} data nodes do not split into node groups of {} replicas",
            args.nodes, args.replicas
        );
        return ExitCode::from(2);
    }
    let mut passed = 0;
    for seed in args.seed..args.seed.saturating_add(args.seeds) {
        let mut options = simulator::SimulationOptions::new(seed, args.nodes, args.replicas);
        options.fault_ms = args.fault_ms;
        options.settle_ms = args.settle_ms;
        options.faults = !args.no_faults;
        options.schema_changes = !args.no_schema_changes;
        options.keep_trace = args.trace;
        options.transactions = args.transactions;
        options.crashes = args.crashes;
        match simulator::run(&options) {
            Ok(outcome) => {
                passed += 1;
                if args.trace {
                    for line in &outcome.trace {
                        println!("{line}");
                    }
                }
                println!(
                    "seed {seed}: ok: generation version {} reached, {} states agreed, {} crashes \
                     ({} excluded), {} management crashes, {} link cuts, {} partitions, {} \
                     messages delivered, {} dropped, {} tables, {} schema changes acknowledged",
                    outcome.final_version,
                    outcome.versions_seen,
                    outcome.crashes,
                    outcome.exclusions,
                    outcome.management_crashes,
                    outcome.link_cuts,
                    outcome.partitions,
                    outcome.messages_delivered,
                    outcome.messages_dropped,
                    outcome.tables,
                    outcome.schema_changes_acknowledged
                );
                if outcome.system_restarts > 0 || outcome.system_crashes > 0 {
                    println!(
                        "seed {seed}: {} graceful system restart(s); {} whole-cluster crash(es) \
                         ({} again while starting): {} commit(s) kept, {} of later epochs taken \
                         back",
                        outcome.system_restarts,
                        outcome.system_crashes,
                        outcome.crash_restarts_crashed,
                        outcome.commits_kept_by_crashes,
                        outcome.commits_lost_to_crashes
                    );
                }
            }
            Err(failure) => {
                eprintln!("seed {seed}: {failure}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{passed} seed(s) passed");
    ExitCode::SUCCESS
}

/// Says in one line that a role does not exist yet, so that a user (or a
/// script) gets a clear answer instead of a silent success.
fn bench_pk(args: &crate::cli::BenchPkArgs) -> ExitCode {
    let executable = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => {
            eprintln!("shoal bench pk: cannot find the shoal executable: {error}");
            return ExitCode::FAILURE;
        }
    };
    if args.threads.is_empty() || args.threads.iter().any(|t| *t == 0 || *t > 1024) {
        eprintln!("shoal bench pk: --threads takes counts from 1 to 1024");
        return ExitCode::FAILURE;
    }
    let options = bench::pk::PkOptions {
        connect: args.connect.clone(),
        executable,
        threads: args.threads.clone(),
        rows_per_thread: args.rows.max(1),
        async_batch: args.batch.max(1),
        async_in_flight: args.in_flight.max(1),
        async_seconds: args.async_seconds,
        four_nodes: !args.no_four_nodes,
        json: args.json,
    };
    match bench::pk::run(&options) {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal bench pk: {error}");
            ExitCode::FAILURE
        }
    }
}

fn bench_sysbench(args: &crate::cli::BenchSysbenchArgs) -> ExitCode {
    let executable = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => {
            eprintln!("shoal bench sysbench: cannot find the shoal executable: {error}");
            return ExitCode::FAILURE;
        }
    };
    let target = |name: &str, address: &str, user: &str, password: &str| {
        bench::sysbench::Target::parse(name, address, user, password)
    };
    let connect = match args
        .connect
        .as_deref()
        .map(|a| target("shoal", a, "root", ""))
        .transpose()
    {
        Ok(t) => t,
        Err(error) => {
            eprintln!("shoal bench sysbench: --connect {error}");
            return ExitCode::from(2);
        }
    };
    let versus = match args
        .vs
        .as_deref()
        .map(|a| target("vs", a, &args.vs_user, &args.vs_password))
        .transpose()
    {
        Ok(t) => t,
        Err(error) => {
            eprintln!("shoal bench sysbench: --vs {error}");
            return ExitCode::from(2);
        }
    };
    if args.threads.is_empty()
        || args.threads.contains(&0)
        || args.tables == 0
        || args.time == 0
        || args.runs == 0
    {
        eprintln!(
            "shoal bench sysbench: --threads, --tables, --time and --runs take numbers above 0"
        );
        return ExitCode::from(2);
    }
    let options = bench::sysbench::SysbenchOptions {
        executable,
        connect,
        versus,
        tests: args.tests.clone(),
        threads: args.threads.clone(),
        tables: args.tables,
        table_size: args.table_size.max(1),
        seconds: args.time,
        runs: args.runs,
        json: args.json,
    };
    match bench::sysbench::run(&options) {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal bench sysbench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn bench_failover(args: &crate::cli::BenchFailoverArgs) -> ExitCode {
    let executable = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => {
            eprintln!("shoal bench failover: cannot find the shoal executable: {error}");
            return ExitCode::FAILURE;
        }
    };
    if args.row_bytes == 0 || args.updates_per_s == 0 {
        eprintln!("shoal bench failover: --row-bytes and --updates-per-s take numbers above 0");
        return ExitCode::FAILURE;
    }
    let options = bench::failover::FailoverOptions {
        executable,
        rows: args.rows.max(1_000),
        row_bytes: args.row_bytes,
        updates_per_s: args.updates_per_s,
        copy_rows_per_second: args.copy_rows_per_second,
        copy_batch_rows: args.copy_batch_rows,
        json: args.json,
    };
    match bench::failover::run(&options) {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal bench failover: {error}");
            ExitCode::FAILURE
        }
    }
}

fn bench_restart(args: &crate::cli::BenchRestartArgs) -> ExitCode {
    let executable = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => {
            eprintln!("shoal bench restart: cannot find the shoal executable: {error}");
            return ExitCode::FAILURE;
        }
    };
    if args.rows < 1_000
        || args.row_bytes == 0
        || args.threads == 0
        || args.update_seconds <= 0.0
        || args.rounds == Some(0)
    {
        eprintln!(
            "shoal bench restart: --rows takes 1000 or more; --row-bytes, --threads, \
             --update-seconds and --rounds take numbers above 0"
        );
        return ExitCode::FAILURE;
    }
    let options = bench::restart::RestartOptions {
        executable,
        rows: args.rows,
        row_bytes: args.row_bytes,
        threads: args.threads,
        update_seconds: args.update_seconds,
        rounds: args
            .rounds
            .unwrap_or_else(|| bench::restart::default_rounds(args.rows)),
        json: args.json,
    };
    match bench::restart::run(&options) {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal bench restart: {error}");
            ExitCode::FAILURE
        }
    }
}

fn bench_storage(args: &BenchStorageArgs) -> ExitCode {
    let options = bench::storage::StorageOptions {
        rows: args.rows,
        json: args.json,
    };
    match bench::storage::run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shoal bench storage: {error}");
            ExitCode::FAILURE
        }
    }
}
