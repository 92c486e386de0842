//! `shoal bench storage`: single-threaded figures for one partition.

/// What `shoal bench storage` was asked for.
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// Rows loaded into the partition (the figure is 1,000,000).
    pub rows: u64,
    /// Print one JSON object instead of a table.
    pub json: bool,
}

/// Runs the storage benchmark and prints its figures to stdout.
pub fn run(options: &StorageOptions) -> Result<(), String> {
    let _ = options;
    Err("the storage benchmark is being written".to_string())
}
