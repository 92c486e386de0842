//! The redo log's files on a real disk: `NoOfFragmentLogFiles` files of
//! `FragmentLogFileSize` bytes, allocated in full when created (so the log
//! never meets a full disk once the node runs: a disk too small for it is
//! an error at start), written at their offsets and synced with
//! `fdatasync` (their size never changes, so no metadata needs syncing).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use disk::{DiskCompletion, DiskRequest, ReadAt, RedoConfig};

pub struct RedoFiles {
    directory: PathBuf,
    files: Vec<File>,
}

/// The name of redo file `number`.
pub fn redo_file_name(number: u32) -> String {
    format!("redo-{number:04}.log")
}

impl RedoFiles {
    /// Opens the log's files in `directory`, creating and allocating those
    /// missing or short. A file is allocated before it is used, so a full
    /// disk shows here, as an error naming the file, and not mid-write.
    pub fn open(directory: &Path, config: &RedoConfig) -> io::Result<RedoFiles> {
        std::fs::create_dir_all(directory).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create the redo directory {}: {e}",
                    directory.display()
                ),
            )
        })?;
        let mut files = Vec::with_capacity(config.files as usize);
        for number in 0..config.files {
            let path = directory.join(redo_file_name(number));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
                })?;
            let length = file.metadata()?.len();
            if length < config.file_bytes {
                rustix::fs::fallocate(
                    &file,
                    rustix::fs::FallocateFlags::empty(),
                    0,
                    config.file_bytes,
                )
                .map_err(|e| {
                    io::Error::other(format!(
                        "cannot allocate {} bytes for {}: {e}{}",
                        config.file_bytes,
                        path.display(),
                        if e == rustix::io::Errno::NOSPC {
                            " (the disk is full: free space, or lower NoOfFragmentLogFiles \
                                 or FragmentLogFileSize)"
                        } else {
                            ""
                        }
                    ))
                })?;
                rustix::fs::fsync(&file).map_err(io::Error::from)?;
            }
            files.push(file);
        }
        // The new files' names are durable once the directory is.
        File::open(directory)
            .and_then(|d| d.sync_all())
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot sync {}: {e}", directory.display()),
                )
            })?;
        Ok(RedoFiles {
            directory: directory.to_path_buf(),
            files,
        })
    }

    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// Does one request (blocking: the runtime calls this off its event
    /// loop).
    pub fn perform(&self, request: &DiskRequest) -> DiskCompletion {
        let token = request.token();
        let outcome = match request {
            DiskRequest::Write {
                file,
                offset,
                bytes,
                ..
            } => self.files[*file as usize].write_all_at(bytes, *offset),
            DiskRequest::Sync { file, .. } => {
                rustix::fs::fdatasync(&self.files[*file as usize]).map_err(io::Error::from)
            }
        };
        match outcome {
            Ok(()) => DiskCompletion::Done { token },
            Err(error) => DiskCompletion::Failed {
                token,
                error: error.to_string(),
            },
        }
    }
}

impl ReadAt for RedoFiles {
    fn read_at(&mut self, file: u32, offset: u64, into: &mut [u8]) -> Result<(), String> {
        self.files[file as usize]
            .read_exact_at(into, offset)
            .map_err(|e| {
                format!(
                    "cannot read {} at {offset}: {e}",
                    self.directory.join(redo_file_name(file)).display()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use disk::{RedoLog, scan};

    fn temporary_directory(name: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("shoal-disk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        directory
    }

    /// Records written through the real files are read back after the
    /// files are opened again (as at a restart), and opening them again
    /// neither shrinks nor clears them.
    #[test]
    fn records_survive_reopening_the_files() {
        let directory = temporary_directory("reopen");
        let config = RedoConfig {
            files: 2,
            file_bytes: 1 << 20,
            buffer_bytes: 1 << 20,
        };
        let files = RedoFiles::open(&directory, &config).expect("files");
        for number in 0..config.files {
            let length = std::fs::metadata(directory.join(redo_file_name(number)))
                .expect("a redo file")
                .len();
            assert_eq!(length, config.file_bytes, "allocated in full");
        }
        let mut log = RedoLog::new(config, 0, 1);
        for number in 0..50u32 {
            log.append(u64::from(number), 1, &vec![number as u8; 30_000])
                .expect("room");
            if number % 10 == 9 {
                log.want_durable(log.head());
                let mut requests = Vec::new();
                while {
                    log.poll(0, &mut requests);
                    !requests.is_empty()
                } {
                    for request in requests.drain(..) {
                        let completion = files.perform(&request);
                        assert_eq!(
                            completion,
                            DiskCompletion::Done {
                                token: request.token()
                            }
                        );
                        assert!(log.complete(0, completion));
                    }
                }
            }
        }
        assert_eq!(log.durable(), log.head());
        assert!(log.head() > config.file_bytes, "into the second file");
        drop(files);
        let mut files = RedoFiles::open(&directory, &config).expect("files again");
        let mut found = Vec::new();
        let end = scan(&config, 0, &mut files, |record| found.push(record)).expect("a scan");
        assert_eq!(end, log.head());
        assert_eq!(found.len(), 50);
        assert!(found.iter().enumerate().all(|(number, record)| {
            record.epoch == number as u64 && record.payload == vec![number as u8; 30_000]
        }));
        std::fs::remove_dir_all(&directory).expect("cleanup");
    }
}
