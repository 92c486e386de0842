//! `shoal`: the one Shoal binary, with a subcommand per role of an NDB-style
//! cluster (management node, data node, SQL node, management client, sandbox,
//! benchmarks).
//!
//! This file stays thin: it installs the global allocator, parses the command
//! line (`cli`) and hands the chosen role to `roles`, which owns the exit
//! status.

mod allocator;
mod cli;
mod mgm;
mod roles;
mod up;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc does the work (`allocator`); `shoal bench` counts allocations
/// per operation through the wrapper, which counts only once asked to.
#[global_allocator]
static GLOBAL: bench::allocation_counter::CountingAllocator<allocator::MiMalloc> =
    bench::allocation_counter::CountingAllocator(allocator::MiMalloc);

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    roles::run(cli.command)
}
