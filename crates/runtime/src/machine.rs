//! What this machine can give a data node, read from the operating system
//! at start: the memory available for DataMemory.
//!
//! A data node commits all of DataMemory at start (the storage engine
//! writes every page once), so a DataMemory larger than the memory the
//! machine has free would either swap for minutes or be killed by the
//! kernel part-way. Checking first turns that into one clear error.

use std::path::Path;

/// Where Linux reports memory.
const MEMINFO: &str = "/proc/meminfo";

/// Refuses a DataMemory of `data_memory_bytes` that is more than the
/// machine has available now (MemAvailable: free memory plus what the
/// kernel can reclaim without swapping).
pub fn check_data_memory(data_memory_bytes: u64) -> Result<(), String> {
    let meminfo = std::fs::read_to_string(Path::new(MEMINFO))
        .map_err(|e| format!("cannot read {MEMINFO} to check DataMemory: {e}"))?;
    let available = meminfo_bytes(&meminfo, "MemAvailable")
        .ok_or_else(|| format!("{MEMINFO} has no MemAvailable line"))?;
    let total = meminfo_bytes(&meminfo, "MemTotal").unwrap_or(available);
    if data_memory_bytes <= available {
        return Ok(());
    }
    Err(format!(
        "DataMemory is {} but this machine has only {} MiB available ({} MiB in all, \
         MemAvailable and MemTotal in {MEMINFO}); a data node commits all of DataMemory at \
         start, so lower DataMemory in config.ini or free memory",
        config::value::format_size(data_memory_bytes),
        available >> 20,
        total >> 20
    ))
}

/// The value of a `Name:   1234 kB` line of /proc/meminfo, in bytes.
fn meminfo_bytes(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| {
        line.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let mut words = line.split_whitespace().skip(1);
    let number: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => number.checked_mul(1024),
        None => Some(number),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines_read_in_bytes() {
        let meminfo = "MemTotal:       24539020 kB\nMemFree:         1234 kB\n\
                       MemAvailable:   20000000 kB\nHugePages_Total:       0\n";
        assert_eq!(meminfo_bytes(meminfo, "MemTotal"), Some(24_539_020 * 1024));
        assert_eq!(
            meminfo_bytes(meminfo, "MemAvailable"),
            Some(20_000_000 * 1024)
        );
        assert_eq!(meminfo_bytes(meminfo, "HugePages_Total"), Some(0));
        assert_eq!(meminfo_bytes(meminfo, "Mem"), None);
        assert_eq!(meminfo_bytes(meminfo, "SwapTotal"), None);
    }

    #[test]
    fn this_machine_holds_a_small_data_memory_and_not_a_huge_one() {
        assert_eq!(check_data_memory(1 << 20), Ok(()));
        let error = check_data_memory(u64::MAX).expect_err("no machine has 16 EiB");
        assert!(error.contains("but this machine has only"), "{error}");
    }
}
