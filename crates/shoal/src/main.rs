//! `shoal`: the one Shoal binary, with a subcommand per role of an NDB-style
//! cluster (management node, data node, SQL node, management client, sandbox,
//! benchmarks).
//!
//! This file stays thin: it installs the global allocator, parses the command
//! line (`cli`) and hands the chosen role to `roles`, which owns the exit
//! status.

mod cli;
mod mgm;
mod roles;
mod up;

use std::process::ExitCode;

use clap::Parser;

/// Every heap allocation of the process is counted so that `shoal bench` can
/// report allocations per operation; mimalloc does the actual work.
#[global_allocator]
static GLOBAL: bench::allocation_counter::CountingAllocator<mimalloc::MiMalloc> =
    bench::allocation_counter::CountingAllocator(mimalloc::MiMalloc);

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    roles::run(cli.command)
}
