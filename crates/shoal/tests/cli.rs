//! The command line of the `shoal` binary as a user sees it: the roles listed
//! by `--help`, the one-line answer of roles that are not built yet, and the
//! exit status of a command that does not exist.

use std::process::{Command, Output};

/// Every role, as a subcommand, in the order `--help` lists them.
const ROLES: [&str; 6] = ["up", "mgmd", "datad", "sqld", "mgm", "bench"];

/// The roles that answer "not built yet" today. A role leaves this list the
/// day it is built, and gets its own tests.
const UNBUILT_ROLES: [&str; 5] = ["up", "mgmd", "datad", "sqld", "mgm"];

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

#[test]
fn unbuilt_roles_say_so_in_one_line_and_exit_2() {
    for role in UNBUILT_ROLES {
        let output = shoal(&[role]);
        let stderr = String::from_utf8(output.stderr).expect("stderr is UTF-8");
        assert_eq!(
            output.status.code(),
            Some(2),
            "shoal {role}: status {:?}, stderr {stderr:?}",
            output.status
        );
        assert_eq!(stderr.lines().count(), 1, "shoal {role}: stderr {stderr:?}");
        assert!(
            stderr.starts_with(&format!("shoal {role}: ")),
            "shoal {role}: stderr does not name the role: {stderr:?}"
        );
        assert!(output.stdout.is_empty(), "shoal {role}: wrote to stdout");
    }
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
}
