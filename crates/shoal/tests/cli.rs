//! The command line of the `shoal` binary as a user sees it: the roles listed
//! by `--help`, the exit status of a command that does not exist, and the
//! errors of `shoal mgm`, `shoal sqld` and `shoal up` that need no running
//! cluster (a management node without data nodes at most).

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Every role, as a subcommand, in the order `--help` lists them.
const ROLES: [&str; 6] = ["up", "mgmd", "datad", "sqld", "mgm", "bench"];

fn shoal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .output()
        .expect("the shoal binary runs")
}

#[test]
fn help_lists_every_role() {
    let output = shoal(&["--help"]);
    assert!(output.status.success(), "shoal --help: {:?}", output.status);
    let help = String::from_utf8(output.stdout).expect("help is UTF-8");
    for role in ROLES {
        let listed = help.lines().any(|line| {
            let mut words = line.split_whitespace();
            words.next() == Some(role) && words.next().is_some()
        });
        assert!(listed, "`shoal --help` does not list `{role}`:\n{help}");
    }
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("address").port()
}

#[test]
fn sqld_without_a_cluster_says_so_and_fails() {
    let port = free_port();
    let directory = std::env::temp_dir().join(format!("shoal-cli-sqld-{}", std::process::id()));
    let started = Instant::now();
    let output = shoal(&[
        "sqld",
        "-c",
        UNREACHABLE,
        "--ndb-wait-connected",
        "1",
        "--bind-address",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--data-dir",
        directory.to_str().expect("UTF-8 path"),
    ]);
    let _ = std::fs::remove_dir_all(&directory);
    let stderr = String::from_utf8(output.stderr).expect("stderr is UTF-8");
    assert_eq!(output.status.code(), Some(1), "stderr {stderr:?}");
    assert!(
        stderr.contains("could not connect to the cluster"),
        "{stderr}"
    );
    assert!(stderr.contains(UNREACHABLE), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn sqld_refuses_a_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = taken.local_addr().expect("address").port();
    let directory =
        std::env::temp_dir().join(format!("shoal-cli-sqld-port-{}", std::process::id()));
    let output = shoal(&[
        "sqld",
        "-c",
        UNREACHABLE,
        "--bind-address",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--data-dir",
        directory.to_str().expect("UTF-8 path"),
    ]);
    let _ = std::fs::remove_dir_all(&directory);
    let stderr = String::from_utf8(output.stderr).expect("stderr is UTF-8");
    assert_eq!(output.status.code(), Some(1), "stderr {stderr:?}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
}

#[test]
fn unknown_subcommand_fails() {
    let output = shoal(&["no-such-role"]);
    assert!(!output.status.success(), "shoal no-such-role succeeded");
}

#[test]
fn invalid_flag_values_are_refused() {
    let output = shoal(&["up", "--replicas", "5"]);
    assert_eq!(output.status.code(), Some(2), "NoOfReplicas is 1 to 4");
    let output = shoal(&["bench", "storage", "--rows", "many"]);
    assert_eq!(output.status.code(), Some(2), "--rows takes a number");
    // Checked before anything is bound or connected.
    let output = shoal(&["sqld", "--port", "0", "--worker-spin", "501"]);
    assert!(!output.status.success(), "a spin of 501 µs was taken");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--worker-spin must be 0 to 500 microseconds, not 501"),
        "{stderr}"
    );
}

/// An address where nothing listens: port 1 (tcpmux) is long obsolete, and
/// a connection to it is refused at once.
const UNREACHABLE: &str = "127.0.0.1:1";

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn mgm_says_when_it_cannot_connect_and_exits_1() {
    let output = shoal(&["mgm", "-c", UNREACHABLE, "-e", "SHOW"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "stderr {stderr:?}");
    assert!(
        stderr.starts_with("Unable to connect with connect string: nodeid=0,127.0.0.1:1\n"),
        "{stderr:?}"
    );
    assert!(
        stderr.contains("cannot connect to 127.0.0.1:1"),
        "{stderr:?}"
    );
    assert!(output.stdout.is_empty(), "wrote to stdout");
}

#[test]
fn mgm_shell_without_a_server_fails_before_the_prompt() {
    let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["mgm", "--ndb-connectstring", UNREACHABLE])
        .stdin(Stdio::null())
        .output()
        .expect("the shoal binary runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr_of(&output).contains("Unable to connect"));
    assert!(
        output.stdout.is_empty(),
        "printed a prompt without a server"
    );
}

#[test]
fn mgm_refuses_an_invalid_command_before_connecting() {
    let output = shoal(&["mgm", "-c", UNREACHABLE, "-e", "SHOWW ALL"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "stderr {stderr:?}");
    assert_eq!(stderr, "Invalid command: SHOWW ALL\nType HELP for help.\n");
}

#[test]
fn mgm_help_needs_no_server() {
    let output = shoal(&["mgm", "-c", UNREACHABLE, "-e", "help"]);
    assert!(output.status.success(), "stderr {:?}", stderr_of(&output));
    let help = stdout_of(&output);
    for command in ["SHOW", "ALL REPORT MEMORY", "<id> STOP", "SHUTDOWN"] {
        assert!(
            help.contains(command),
            "HELP does not list {command}:\n{help}"
        );
    }
}

/// Words of features that are not built: `--help` must not claim them.
const UNBUILT_CLAIMS: [&str; 4] = [
    "and the redo log",
    "writes checkpoints",
    "recovers after",
    "reproduce the published",
];

#[test]
fn help_claims_only_what_is_built() {
    for args in [
        &["--help"][..],
        &["up", "--help"],
        &["datad", "--help"],
        &["sqld", "--help"],
        &["bench", "--help"],
    ] {
        let output = shoal(args);
        assert!(output.status.success(), "shoal {args:?}");
        let help = stdout_of(&output);
        for claim in UNBUILT_CLAIMS {
            assert!(
                !help.contains(claim),
                "`shoal {}` claims `{claim}`:\n{help}",
                args.join(" ")
            );
        }
    }
    let sqld = stdout_of(&shoal(&["sqld", "--help"]));
    assert!(sqld.contains("--ndb-connectstring"), "{sqld}");
}

/// The commands `shoal mgm --help` names in backquotes, with `N` as node 2.
fn commands_in_mgm_help() -> Vec<String> {
    let help = stdout_of(&shoal(&["mgm", "--help"]));
    let mut commands = Vec::new();
    for (index, part) in help.split('`').enumerate() {
        // Odd parts lie between backquotes.
        if index % 2 == 1 {
            let words: Vec<&str> = part
                .split_whitespace()
                .map(|word| if word == "N" { "2" } else { word })
                .collect();
            commands.push(words.join(" "));
        }
    }
    assert!(commands.len() >= 8, "too few commands in:\n{help}");
    commands
}

#[test]
fn mgm_help_lists_only_commands_that_work() {
    let help = stdout_of(&shoal(&["mgm", "--help"]));
    for missing in ["NODEGROUP", "CLUSTERLOG", "BACKUP"] {
        assert!(!help.contains(missing), "lists {missing}:\n{help}");
    }
    // Each listed command parses: without a server it fails only for want
    // of a connection (or, for HELP and QUIT, succeeds), never as invalid.
    for command in commands_in_mgm_help() {
        let output = shoal(&["mgm", "-c", UNREACHABLE, "-e", &command]);
        let stderr = stderr_of(&output);
        assert!(
            !stderr.contains("Invalid command"),
            "`shoal mgm --help` lists `{command}`, which is refused: {stderr}"
        );
        assert!(
            output.status.success() || stderr.contains("Unable to connect"),
            "`{command}`: {stderr}"
        );
    }
    // The shell's own HELP lists the same commands.
    let shell_help = stdout_of(&shoal(&["mgm", "-c", UNREACHABLE, "-e", "HELP"]));
    for command in commands_in_mgm_help() {
        let generic = command.replace('2', "<id>");
        assert!(
            shell_help.contains(&command) || shell_help.contains(&generic),
            "HELP does not list `{command}`:\n{shell_help}"
        );
    }
}

#[test]
fn up_refuses_shapes_that_are_not_a_cluster_with_status_2() {
    for (nodes, replicas, reason) in [
        ("3", "2", "multiple of the replicas"),
        ("50", "2", "at most 48"),
    ] {
        let output = shoal(&[
            "up",
            "--data-dir",
            "/nonexistent/never-created",
            "--nodes",
            nodes,
            "--replicas",
            replicas,
        ]);
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(2), "--nodes {nodes}: {stderr:?}");
        assert!(stderr.contains(reason), "--nodes {nodes}: {stderr:?}");
    }
}

/// A directory of its own under the system's temporary directory, removed
/// when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(name: &str) -> ScratchDir {
        let path = std::env::temp_dir().join(format!("shoal-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        ScratchDir(path)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn up_refuses_a_management_port_in_use_before_writing_anything() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = taken.local_addr().expect("bound").port().to_string();
    let dir = ScratchDir::new("port-in-use");
    let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["up", "--data-dir"])
        .arg(&dir.0)
        .args(["--mgm-port", &port])
        .output()
        .expect("the shoal binary runs");
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr:?}");
    assert!(
        stderr.contains(&format!("port {port} is already in use")),
        "{stderr:?}"
    );
    assert!(stderr.contains("--mgm-port"), "{stderr:?}");
    assert!(!dir.0.exists(), "wrote the data directory anyway");
}

/// A management node of a two-data-node sandbox configuration, with no
/// data node started: what `shoal mgm` prints for nodes that are absent.
/// Killed and reaped on drop.
struct ManagementNode {
    child: Child,
    port: u16,
    _dir: ScratchDir,
}

impl ManagementNode {
    fn start(name: &str) -> ManagementNode {
        let dir = ScratchDir::new(name);
        std::fs::create_dir_all(&dir.0).expect("scratch directory");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let config = dir.0.join("config.ini");
        let mut file = std::fs::File::create(&config).expect("config.ini");
        write!(
            file,
            "[ndbd default]\nNoOfReplicas=2\nDataMemory=16M\nHostName=127.0.0.1\n\
             [ndb_mgmd]\nNodeId=1\nHostName=127.0.0.1\nDataDir={}\n\
             [ndbd]\nNodeId=2\n[ndbd]\nNodeId=3\n\
             [mysqld]\nNodeId=145\nHostName=127.0.0.1\n[api]\n",
            dir.0.display()
        )
        .expect("config.ini written");
        let child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["mgmd", "--config-file"])
            .arg(&config)
            .args(["--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("shoal mgmd starts");
        let mut node = ManagementNode {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "shoal mgmd did not listen within 10 s"
            );
            assert!(
                matches!(node.child.try_wait(), Ok(None)),
                "shoal mgmd exited at start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        node
    }

    fn mgm(&self, command: &str) -> Output {
        let address = format!("127.0.0.1:{}", self.port);
        shoal(&["mgm", "-c", &address, "-e", command])
    }
}

impl Drop for ManagementNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mgm_shows_and_reports_on_nodes_that_are_not_connected() {
    let management = ManagementNode::start("mgm-show");

    let output = management.mgm("show");
    assert!(output.status.success(), "{:?}", stderr_of(&output));
    let show = stdout_of(&output);
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        show.starts_with("Cluster Configuration\n---------------------\n"),
        "{show}"
    );
    assert!(show.contains("[ndbd(NDB)]\t2 node(s)\n"), "{show}");
    assert!(
        show.contains("id=2 (not connected, accepting connect from 127.0.0.1)\n"),
        "{show}"
    );
    assert!(
        show.contains(&format!(
            "[ndb_mgmd(MGM)]\t1 node(s)\nid=1\t@127.0.0.1  (shoal-{version})\n"
        )),
        "{show}"
    );
    assert!(show.contains("[mysqld(API)]\t2 node(s)\n"), "{show}");
    assert!(
        show.contains("id=? (not connected, accepting connect from any host)\n"),
        "{show}"
    );

    let output = management.mgm("2 STATUS");
    assert!(output.status.success(), "{:?}", stderr_of(&output));
    assert_eq!(stdout_of(&output), "Node 2: not connected\n");

    let output = management.mgm("9 status");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr_of(&output),
        "Node 9: no such node in the configuration\n"
    );

    let output = management.mgm("ALL REPORT MEMORY");
    assert!(output.status.success(), "{:?}", stderr_of(&output));
    assert_eq!(stdout_of(&output), "", "absent nodes report nothing");

    let output = management.mgm("3 REPORT MEMORY");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr_of(&output), "Node 3: not connected\n");

    let output = management.mgm("2 STOP");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr_of(&output), "Node 2: not connected\n");
    assert_eq!(
        stdout_of(&output),
        "",
        "announced a shutdown it did not start"
    );
}

#[test]
fn mgm_shell_reads_commands_until_quit_and_survives_mistakes() {
    let management = ManagementNode::start("mgm-shell");
    let address = format!("127.0.0.1:{}", management.port);
    let mut shell = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["mgm", "-c", &address])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shoal mgm starts");
    shell
        .stdin
        .take()
        .expect("piped")
        .write_all(b"nonsense\n\n2 status\nquit\nshow\n")
        .expect("commands written");
    let output = shell.wait_with_output().expect("shoal mgm ends");
    assert!(output.status.success(), "{:?}", stderr_of(&output));
    let stdout = stdout_of(&output);
    assert!(
        stdout.starts_with(&format!("Connected to Management Server at: {address}\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("shoal> Node 2: not connected\n"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("Cluster Configuration"),
        "ran a command after QUIT: {stdout}"
    );
    assert_eq!(
        stderr_of(&output),
        "Invalid command: nonsense\nType HELP for help.\n"
    );
}

#[test]
fn mgm_shell_reports_a_line_that_is_not_utf8_and_goes_on() {
    let management = ManagementNode::start("mgm-latin1");
    let address = format!("127.0.0.1:{}", management.port);
    let mut shell = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["mgm", "-c", &address])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shoal mgm starts");
    shell
        .stdin
        .take()
        .expect("piped")
        .write_all(b"2 st\xe4tus\n2 status\nquit\n")
        .expect("commands written");
    let output = shell.wait_with_output().expect("shoal mgm ends");
    assert!(output.status.success(), "{:?}", stderr_of(&output));
    assert!(
        stdout_of(&output).contains("shoal> Node 2: not connected\n"),
        "the command after the bad line did not run: {}",
        stdout_of(&output)
    );
    assert_eq!(
        stderr_of(&output),
        "Invalid command: the line is not UTF-8 text (byte 0xe4 at column 5)\n\
         Type HELP for help.\n"
    );
}
