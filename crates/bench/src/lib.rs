//! Benchmarks behind `shoal bench`: they drive the sans-IO engine with real
//! clocks and count heap allocations through `CountingAllocator`, which the
//! `shoal` binary installs as its global allocator.

pub mod allocation_counter;
pub mod failover;
pub mod huge_pages;
pub mod own_cluster;
pub mod pk;
pub mod restart;
pub mod storage;
pub mod sysbench;
