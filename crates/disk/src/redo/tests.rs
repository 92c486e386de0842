//! Tests of the redo log: appends, refusals (410, 1234), failed requests
//! retried, and crashes of the disk model at random points with the scan
//! finding every durable record and only a prefix of what was appended.

use super::*;
use crate::model::DiskModel;

const SMALL: RedoConfig = RedoConfig {
    files: 3,
    file_bytes: 300 << 10,
    buffer_bytes: 600 << 10,
};

/// Performs every request the log hands out on `disk`, completing each.
fn drive(log: &mut RedoLog, disk: &mut DiskModel<u32>, now_ms: u64) {
    let mut requests = Vec::new();
    loop {
        log.poll(now_ms, &mut requests);
        if requests.is_empty() {
            return;
        }
        for request in requests.drain(..) {
            disk.perform(&request);
            assert!(log.complete(
                now_ms,
                DiskCompletion::Done {
                    token: request.token()
                }
            ));
        }
    }
}

fn scan_all(config: &RedoConfig, disk: &DiskModel<u32>, start: Lsn) -> (Vec<RedoRecord>, Lsn) {
    let mut records = Vec::new();
    let end = scan(config, start, &mut disk.clone(), |record| {
        records.push(record)
    })
    .expect("reads");
    (records, end)
}

fn payload(number: u64, bytes: usize) -> Vec<u8> {
    (0..bytes)
        .map(|i| (number as usize * 31 + i) as u8)
        .collect()
}

#[test]
fn records_made_durable_are_found_again_across_file_ends() {
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    let mut appended = Vec::new();
    for number in 0..40u64 {
        let body = payload(number, 10_000 + number as usize * 517);
        let lsn = log
            .append(number / 7, (number % 3) as u8, &body)
            .expect("room");
        appended.push((lsn, number / 7, (number % 3) as u8, body));
        if number % 10 == 9 {
            drive(&mut log, &mut disk, 0);
        }
    }
    assert!(
        log.head() > SMALL.file_bytes,
        "the records reach the second file"
    );
    log.want_durable(log.head());
    drive(&mut log, &mut disk, 0);
    assert_eq!(log.durable(), log.head());
    assert_eq!(log.buffered_bytes(), 0);
    let (records, end) = scan_all(&SMALL, &disk, 0);
    assert_eq!(end, log.head());
    assert_eq!(records.len(), appended.len());
    for (record, (lsn, epoch, kind, body)) in records.iter().zip(&appended) {
        assert_eq!(
            (record.lsn, record.epoch, record.kind),
            (*lsn, *epoch, *kind)
        );
        assert_eq!(&record.payload, body);
        assert_eq!(record.generation, 1);
    }
}

#[test]
fn a_full_log_refuses_with_410_until_the_tail_is_released() {
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    let body = payload(1, 50_000);
    let refusal = loop {
        match log.append(1, 0, &body) {
            Ok(_) => {
                log.want_durable(log.head());
                drive(&mut log, &mut disk, 0);
            }
            Err(error) => break error,
        }
    };
    assert!(matches!(refusal, RedoError::LogFull { .. }), "{refusal}");
    assert_eq!(refusal.ndb_code(), 410);
    assert!(log.used_bytes() + body.len() as u64 + 32 > SMALL.capacity_bytes());
    // A local checkpoint covers the first half: its space is reused, and
    // the log runs over the start of the first file again.
    let half = log.head() / 2;
    log.release(half);
    let lsn = log.append(2, 0, &body).expect("room after the release");
    assert!(lsn + 50_032 > SMALL.capacity_bytes());
    log.want_durable(log.head());
    drive(&mut log, &mut disk, 0);
    // Scanning from the first record at or after the released point finds
    // every record to the head, the one written over file 0 included.
    let (records, end) = scan_all(&SMALL, &disk, (half / 50_032 + 1) * 50_032);
    assert_eq!(end, log.head());
    assert_eq!(records.last().map(|r| (r.lsn, r.epoch)), Some((lsn, 2)));
}

#[test]
fn a_buffer_the_disk_does_not_empty_refuses_with_1234_and_the_node_goes_on() {
    let mut log = RedoLog::new(SMALL, 0, 1);
    let body = payload(2, 60_000);
    let mut requests = Vec::new();
    let refusal = loop {
        match log.append(1, 0, &body) {
            // The disk never answers: writes stay in flight.
            Ok(_) => log.poll(0, &mut requests),
            Err(error) => break error,
        }
    };
    assert!(matches!(refusal, RedoError::BufferFull { .. }), "{refusal}");
    assert_eq!(refusal.ndb_code(), 1234);
    assert!(log.buffered_bytes() <= SMALL.buffer_bytes);
    // Once the disk takes the write, appends fit again.
    let mut disk = DiskModel::new();
    for request in requests.drain(..) {
        disk.perform(&request);
        assert!(log.complete(
            0,
            DiskCompletion::Done {
                token: request.token()
            }
        ));
    }
    drive(&mut log, &mut disk, 0);
    log.append(1, 0, &body)
        .expect("room once the disk took the bytes");
    assert!(matches!(
        log.append(1, 0, &vec![0; RECORD_PAYLOAD_BYTES_MAX + 1]),
        Err(RedoError::RecordTooLarge { .. })
    ));
}

#[test]
fn a_failed_write_or_sync_is_retried_and_nothing_is_durable_before() {
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    log.append(5, 1, &payload(3, 1000)).expect("room");
    log.want_durable(log.head());
    let mut requests = Vec::new();
    log.poll(0, &mut requests);
    assert_eq!(requests.len(), 1);
    let token = requests[0].token();
    assert!(log.complete(
        0,
        DiskCompletion::Failed {
            token,
            error: "No space left on device".into()
        }
    ));
    assert!(
        !log.complete(0, DiskCompletion::Done { token }),
        "taken once"
    );
    assert_eq!(log.durable(), 0);
    assert_eq!(log.failure(), Some("No space left on device"));
    requests.clear();
    log.poll(RETRY_MS - 1, &mut requests);
    assert!(requests.is_empty(), "not before the retry time");
    log.poll(RETRY_MS, &mut requests);
    assert_eq!(requests.len(), 1, "written again");
    for request in requests.drain(..) {
        disk.perform(&request);
        log.complete(
            RETRY_MS,
            DiskCompletion::Done {
                token: request.token(),
            },
        );
    }
    log.poll(RETRY_MS, &mut requests);
    let [DiskRequest::Sync { token, .. }] = requests[..] else {
        panic!("a sync: {requests:?}");
    };
    log.complete(
        RETRY_MS,
        DiskCompletion::Failed {
            token,
            error: "Input/output error".into(),
        },
    );
    assert_eq!(log.durable(), 0, "a failed sync makes nothing durable");
    drive(&mut log, &mut disk, 2 * RETRY_MS);
    assert_eq!(log.durable(), log.head());
    assert_eq!(log.failure(), None);
}

/// A small random number source for the crash tests.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One run of the log until a crash: random appends, syncs asked for,
/// requests completed in random order and at random times. Returns what
/// was appended and how far the log was durable when the power failed.
fn run_until_crash(
    random: &mut Random,
    log: &mut RedoLog,
    disk: &mut DiskModel<u32>,
) -> (Vec<(Lsn, u64, Vec<u8>)>, Lsn) {
    let mut appended = Vec::new();
    let mut requests: Vec<DiskRequest> = Vec::new();
    let mut now_ms = 0;
    for step in 0..random.below(200) {
        now_ms += random.below(20);
        match random.below(10) {
            0..=5 => {
                // Few sizes: a later run's records often end where an
                // earlier run's stale record starts.
                let body = payload(step, random.below(4) as usize * 5_000);
                let epoch = step / 10;
                if let Ok(lsn) = log.append(epoch, 0, &body) {
                    appended.push((lsn, epoch, body));
                }
            }
            6 => log.want_durable(log.head()),
            7 => {
                // Checkpoints release a durable prefix now and then, so
                // the log wraps round its files.
                let durable = log.durable();
                let tail = log.tail();
                if durable > tail {
                    let release = tail + random.below(durable - tail + 1);
                    // Only at a record start: the test scans from one.
                    if let Some((lsn, _, _)) = appended.iter().find(|(lsn, _, _)| *lsn >= release) {
                        log.release((*lsn).min(durable));
                    }
                }
            }
            _ => {
                log.poll(now_ms, &mut requests);
                // Complete some of the requests out there, in any order.
                let mut index = 0;
                while index < requests.len() {
                    if random.below(2) == 0 {
                        let request = requests.swap_remove(index);
                        let completion = if random.below(30) == 0 {
                            DiskCompletion::Failed {
                                token: request.token(),
                                error: "injected".into(),
                            }
                        } else {
                            disk.perform(&request);
                            DiskCompletion::Done {
                                token: request.token(),
                            }
                        };
                        assert!(log.complete(now_ms, completion));
                    } else {
                        index += 1;
                    }
                }
            }
        }
    }
    let durable = log.durable();
    disk.crash(|n| random.below(n));
    (appended, durable)
}

/// After a crash the log scans to a prefix of what was appended that
/// holds every durable record; a restarted log appends from there, and
/// after a second crash the scan gives the first run's prefix then a
/// prefix of the second run's records, never a stale record of the first
/// run past where the second resumed.
#[test]
fn crashes_keep_every_durable_record_and_only_a_prefix() {
    for seed in 0..300u64 {
        let mut random = Random(seed);
        let mut disk = DiskModel::new();
        let mut log = RedoLog::new(SMALL, 0, 1);
        let (first, durable) = run_until_crash(&mut random, &mut log, &mut disk);
        let tail = log.tail();
        let (found, end) = scan_all(&SMALL, &disk, tail);
        let expected: Vec<_> = first.iter().filter(|(lsn, _, _)| *lsn >= tail).collect();
        assert!(
            found.len() <= expected.len(),
            "seed {seed}: more than appended"
        );
        for (record, (lsn, epoch, body)) in found.iter().zip(&expected) {
            assert_eq!((record.lsn, record.epoch), (*lsn, *epoch), "seed {seed}");
            assert_eq!(&record.payload, body, "seed {seed}");
        }
        assert!(
            end >= durable,
            "seed {seed}: durable {durable} lost, the log ends at {end}"
        );

        // The second run resumes at the end found, with a new generation.
        let mut log = RedoLog::resume(SMALL, tail, end, 2);
        let (second, durable) = run_until_crash(&mut random, &mut log, &mut disk);
        let tail = log.tail();
        let (found, end) = scan_all(&SMALL, &disk, tail);
        let expected: Vec<_> = found_prefix(&first, &second, tail, end);
        assert_eq!(found.len(), expected.len(), "seed {seed}");
        for (record, (lsn, epoch, body)) in found.iter().zip(&expected) {
            assert_eq!((record.lsn, record.epoch), (*lsn, *epoch), "seed {seed}");
            assert_eq!(&record.payload, body, "seed {seed}");
        }
        assert!(
            end >= durable,
            "seed {seed}: durable {durable} lost, the log ends at {end}"
        );
        let resumed_at = second.first().map_or(end, |(lsn, _, _)| *lsn);
        assert!(
            found
                .iter()
                .all(|r| r.lsn < resumed_at || r.generation == 2),
            "seed {seed}: a first-run record past the point the second run resumed from"
        );
    }
}

/// The records of both runs from `tail` up to `end`, in log order.
fn found_prefix<'a>(
    first: &'a [(Lsn, u64, Vec<u8>)],
    second: &'a [(Lsn, u64, Vec<u8>)],
    tail: Lsn,
    end: Lsn,
) -> Vec<&'a (Lsn, u64, Vec<u8>)> {
    let resumed_at = second.first().map_or(Lsn::MAX, |(lsn, _, _)| *lsn);
    first
        .iter()
        .filter(|(lsn, _, _)| *lsn < resumed_at)
        .chain(second)
        .filter(|(lsn, _, _)| *lsn >= tail && *lsn < end)
        .collect()
}

/// A record an earlier run wrote past the end a later run resumed from
/// (never synced, kept by the crash) is not taken for the later run's,
/// even where the later run's record ends exactly at its start.
/// A scan in steps of a few bytes reads the same records as one scan, a
/// visit's error stops it, and a scan until a position ends there.
#[test]
fn a_scan_in_steps_reads_what_one_scan_does_and_ends_where_it_is_told() {
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    for number in 0..30u64 {
        log.append(number, 1, &payload(number, 5_000 + number as usize * 977))
            .expect("room");
    }
    log.want_durable(log.head());
    drive(&mut log, &mut disk, 0);
    let (all, end) = scan_all(&SMALL, &disk, 0);
    assert_eq!((all.len(), end), (30, log.head()));
    let mut scan = Scan::new(0);
    let (mut stepped, mut steps) = (Vec::new(), 0);
    while !scan
        .step(&SMALL, &mut disk.clone(), 20_000, &mut |record| {
            stepped.push(record);
            Ok(())
        })
        .expect("reads")
    {
        steps += 1;
    }
    assert!(steps > 5, "{steps} steps");
    assert_eq!(stepped, all);
    assert_eq!(scan.at(), end);
    // Until the 10th record's position: the nine before it.
    let mut until = Scan::until(0, all[9].lsn);
    let mut read = 0;
    assert!(
        until
            .step(&SMALL, &mut disk.clone(), u64::MAX, &mut |_| {
                read += 1;
                Ok(())
            })
            .expect("reads")
    );
    assert_eq!((read, until.at()), (9, all[9].lsn));
    // A visit's error stops the scan and is returned.
    let mut failing = Scan::new(0);
    let error = failing
        .step(&SMALL, &mut disk.clone(), u64::MAX, &mut |record| {
            if record.epoch == 3 {
                Err("no".to_string())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
    assert_eq!(error, "no");
    assert_eq!(failing.at(), all[4].lsn);
}

#[test]
fn a_stale_record_of_an_earlier_run_ends_the_log() {
    use crate::model::WriteFate;
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    for number in 0..2 {
        log.append(1, 0, &payload(number, 100)).expect("room");
        log.want_durable(log.head());
        let mut requests = Vec::new();
        log.poll(0, &mut requests);
        // The syncs never happen.
        let writes: Vec<_> = requests
            .iter()
            .filter(|r| matches!(r, DiskRequest::Write { .. }))
            .collect();
        assert_eq!(writes.len(), 1, "{requests:?}");
        disk.perform(writes[0]);
        log.complete(
            0,
            DiskCompletion::Done {
                token: writes[0].token(),
            },
        );
    }
    assert_eq!(log.durable(), 0);
    // The first record's write is lost, the second's kept.
    let mut fates = [WriteFate::Lost, WriteFate::Kept].into_iter();
    disk.crash_with(
        |fates| fates.next().expect("two writes"),
        |_| true,
        &mut fates,
    );
    let (records, end) = scan_all(&SMALL, &disk, 0);
    assert_eq!((records.len(), end), (0, 0));
    let mut log = RedoLog::resume(SMALL, 0, 0, 2);
    log.append(1, 0, &payload(9, 100)).expect("room");
    log.want_durable(log.head());
    drive(&mut log, &mut disk, 0);
    let (records, end) = scan_all(&SMALL, &disk, 0);
    assert_eq!(
        records.len(),
        1,
        "the first run's record after it: {records:?}"
    );
    assert_eq!(records[0].payload, payload(9, 100));
    assert_eq!(end, log.head());
}

/// Reserved bytes count against the files and the buffer, so a commit's
/// append from them is never refused; what is left is given back.
#[test]
fn reserved_bytes_are_kept_for_the_commit_that_uses_them() {
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    // Most of the buffer promised to prepared operations.
    let promised = SMALL.buffer_bytes - 1_000;
    log.reserve(promised).expect("room");
    assert!(matches!(
        log.append(1, 0, &payload(1, 2_000)),
        Err(RedoError::BufferFull { .. })
    ));
    assert!(matches!(
        log.reserve(2_000),
        Err(RedoError::BufferFull { .. })
    ));
    // The commit appends from its reservation even though the buffer
    // looks full to anyone else.
    let body = payload(2, 100_000);
    let lsn = log.append_reserved(3, 1, &body, promised);
    assert_eq!(lsn, 0);
    assert_eq!(log.reserved_bytes(), promised - body.len() as u64 - 32);
    log.unreserve(log.reserved_bytes());
    assert_eq!(log.reserved_bytes(), 0);
    log.append(1, 0, &payload(1, 2_000))
        .expect("room once given back");
    log.want_durable(log.head());
    drive(&mut log, &mut disk, 0);
    let (records, _) = scan_all(&SMALL, &disk, 0);
    assert_eq!(records[0].payload, body);
    // Reservations count against the files too.
    let mut log = RedoLog::new(SMALL, 0, 1);
    log.reserve(500_000).expect("room");
    for number in 0..4 {
        log.append(1, 0, &payload(number, 100_000)).expect("room");
        log.want_durable(log.head());
        drive(&mut log, &mut disk, 0);
    }
    assert_eq!(log.buffered_bytes(), 0);
    let refusal = log.reserve(30_000).expect_err("the files are promised");
    assert!(matches!(refusal, RedoError::LogFull { .. }), "{refusal}");
}

/// A log full to its last records still takes the marks of system
/// restarts' restore points, from a reserve no other record takes.
#[test]
fn a_full_log_still_takes_a_restore_mark() {
    let mut disk = DiskModel::new();
    let mut log = RedoLog::new(SMALL, 0, 1);
    for bytes in [50_000, 1_000, 16] {
        let body = payload(1, bytes);
        while log.append(1, 0, &body).is_ok() {
            log.want_durable(log.head());
            drive(&mut log, &mut disk, 0);
        }
    }
    let free = SMALL.capacity_bytes() - log.used_bytes();
    assert!(free < RESTORE_MARK_RESERVE_BYTES + 48, "{free}");
    assert!(free >= RESTORE_MARK_RESERVE_BYTES, "{free}");
    let mark = [7u8; 16];
    let refusal = log.append(2, 1, &mark).expect_err("the reserve is kept");
    assert_eq!(refusal.ndb_code(), 410);
    let mut marks = 0;
    while log.append_restore_mark(2, 1, &mark).is_ok() {
        marks += 1;
        log.want_durable(log.head());
        drive(&mut log, &mut disk, 0);
    }
    assert_eq!(marks, free / 48, "marks of 48 bytes in {free}");
}
