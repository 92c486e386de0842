//! Repository automation, run as `cargo run -p xtask -- <task>`.
//!
//! Tasks are Rust rather than shell so that they run the same everywhere
//! cargo does. The tidy checks are also `#[test]`s in `tidy`, so
//! `cargo test --workspace` runs them without anyone remembering to.

mod tidy;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo run -p xtask -- <task>

tasks:
  tidy    check repository conventions: module docs on every file, paths in
          ARCHITECTURE.md, no I/O in sans-IO crates, no todo!() in crates";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["tidy"] => run_tidy(),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Runs every tidy check and prints every problem, not only the first.
fn run_tidy() -> ExitCode {
    let root = tidy::repository_root();
    let mut failed = false;
    for check in tidy::CHECKS {
        let problems = (check.run)(&root);
        if problems.is_empty() {
            println!("ok    {}", check.name);
        } else {
            failed = true;
            let plural = if problems.len() == 1 { "" } else { "s" };
            println!("FAIL  {} ({} problem{plural})", check.name, problems.len());
            for problem in &problems {
                println!("      {problem}");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
