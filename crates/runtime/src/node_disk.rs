//! A data node's files (NDB's `ndb_<id>_fs` directory in its DataDir): the
//! redo log's files, the system file, and the thread that does the redo
//! log's writes and syncs so the event loop never waits for the disk.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use disk::system_file::{CheckpointInfo, FILE_BYTES, SLOT_BYTES, SystemFile, slot_of};
use disk::{DiskCompletion, DiskRequest, ReadAt, RedoConfig, RedoRecord};
use node::durability::{FileJob, FileTask, RestoreSource, read_checkpoint_step};

use crate::redo_files::RedoFiles;

/// The node's file system directory in its DataDir, as NDB names it.
pub fn file_system_directory(data_dir: &Path, node: protocol::NodeId) -> PathBuf {
    data_dir.join(format!("ndb_{node}_fs"))
}

/// The redo log's directory in the node's file system directory.
pub fn redo_directory(file_system: &Path) -> PathBuf {
    file_system.join("redo")
}

/// The system file (`disk::system_file`), written in place.
pub struct SystemFileStore {
    path: PathBuf,
    file: File,
    contents: SystemFile,
    /// The sequence of the last write (0: never written).
    sequence: u64,
}

impl SystemFileStore {
    /// Opens (or creates) the system file in `directory`; a file with no
    /// valid slot is an error (a restart must not take it for a new node).
    pub fn open(directory: &Path) -> Result<SystemFileStore, String> {
        std::fs::create_dir_all(directory)
            .map_err(|e| format!("cannot create {}: {e}", directory.display()))?;
        let path = directory.join("system");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut bytes = vec![0u8; FILE_BYTES as usize];
        let length = file
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len()
            .min(FILE_BYTES) as usize;
        file.read_exact_at(&mut bytes[..length], 0)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let (contents, sequence) = SystemFile::decode(&bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .unwrap_or_default();
        // A new file's name is durable once its directory is.
        File::open(directory)
            .and_then(|d| d.sync_all())
            .map_err(|e| format!("cannot sync {}: {e}", directory.display()))?;
        Ok(SystemFileStore {
            path,
            file,
            contents,
            sequence,
        })
    }

    pub fn contents(&self) -> &SystemFile {
        &self.contents
    }

    /// Writes `contents` to the slot the last write did not use and syncs
    /// it; only then does it count.
    pub fn write(&mut self, contents: SystemFile) -> Result<(), String> {
        let sequence = self.sequence + 1;
        let slot = contents.encode(sequence);
        self.file
            .write_all_at(&slot, slot_of(sequence) * SLOT_BYTES as u64)
            .and_then(|()| rustix::fs::fdatasync(&self.file).map_err(io::Error::from))
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        self.sequence = sequence;
        self.contents = contents;
        Ok(())
    }
}

/// The saved cluster state's file (`node::durability::encode_state`).
const STATE_FILE: &str = "cluster-state";

/// The directory of the local checkpoints.
pub fn checkpoint_directory(file_system: &Path) -> PathBuf {
    file_system.join("lcp")
}

pub fn checkpoint_path(file_system: &Path, id: u64) -> PathBuf {
    checkpoint_directory(file_system).join(format!("{id:010}.lcp"))
}

/// Deletes the checkpoint files the system file's chain does not name, at
/// start: one the node died while writing, or ones a newer checkpoint made
/// unneeded when the node died before deleting them. Nothing else reads
/// them, and left alone they would fill the disk run after run. Returns
/// the files deleted.
pub fn delete_unchained_checkpoints(
    file_system: &Path,
    chain: &[CheckpointInfo],
) -> Result<Vec<PathBuf>, String> {
    let directory = checkpoint_directory(file_system);
    let mut deleted = Vec::new();
    let entries = match std::fs::read_dir(&directory) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(deleted),
        Err(e) => return Err(format!("cannot list {}: {e}", directory.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", directory.display()))?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|name| name.strip_suffix(".lcp"))
            .and_then(|id| id.parse::<u64>().ok())
        else {
            continue;
        };
        if chain.iter().any(|checkpoint| checkpoint.id == id) {
            continue;
        }
        let path = checkpoint_path(file_system, id);
        std::fs::remove_file(&path)
            .map_err(|e| format!("cannot delete {}: {e}", path.display()))?;
        deleted.push(path);
    }
    Ok(deleted)
}

/// The cluster state saved in `file_system`, if any.
pub fn read_saved_state(file_system: &Path) -> Result<Option<protocol::ClusterState>, String> {
    let path = file_system.join(STATE_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => node::durability::decode_state(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Work for the disk thread.
enum Job {
    Redo(DiskRequest),
    File(FileTask),
}

/// What the disk thread reports.
pub enum Done {
    Redo(DiskCompletion),
    File {
        token: u64,
        result: Result<(), String>,
    },
}

/// The files the thread works on.
struct Files {
    redo: RedoFiles,
    system: SystemFileStore,
    file_system: PathBuf,
}

impl Files {
    fn perform(&mut self, job: Job) -> Done {
        match job {
            Job::Redo(request) => Done::Redo(self.redo.perform(&request)),
            Job::File(task) => Done::File {
                token: task.token,
                result: self.file_job(task.job),
            },
        }
    }

    /// Checkpoint `id`'s file, created if missing, for writing.
    fn open_checkpoint(&self, id: u64) -> Result<(PathBuf, File), String> {
        let path = checkpoint_path(&self.file_system, id);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok((path, file))
    }

    fn file_job(&mut self, job: FileJob) -> Result<(), String> {
        match job {
            FileJob::CheckpointWrite { id, offset, bytes } => {
                let directory = checkpoint_directory(&self.file_system);
                std::fs::create_dir_all(&directory)
                    .map_err(|e| format!("cannot create {}: {e}", directory.display()))?;
                let (path, file) = self.open_checkpoint(id)?;
                file.write_all_at(&bytes, offset)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))
            }
            FileJob::CheckpointSync { id } => {
                // A checkpoint without rows has no file yet.
                let (path, file) = self.open_checkpoint(id)?;
                rustix::fs::fdatasync(&file)
                    .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
                sync_directory(&checkpoint_directory(&self.file_system))
            }
            FileJob::CheckpointDelete { id } => {
                let path = checkpoint_path(&self.file_system, id);
                match std::fs::remove_file(&path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(format!("cannot delete {}: {e}", path.display())),
                }
            }
            FileJob::System(contents) => self.system.write(contents),
            FileJob::State(bytes) => {
                let path = self.file_system.join(STATE_FILE);
                let temporary = self.file_system.join(format!("{STATE_FILE}.new"));
                std::fs::write(&temporary, &bytes)
                    .and_then(|()| File::open(&temporary)?.sync_all())
                    .and_then(|()| std::fs::rename(&temporary, &path))
                    .map_err(|e| format!("cannot save {}: {e}", path.display()))?;
                sync_directory(&self.file_system)
            }
        }
    }
}

fn sync_directory(directory: &Path) -> Result<(), String> {
    File::open(directory)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", directory.display()))
}

/// The thread that does the node's disk work, in order (so a system file
/// written before a redo write is on disk first), and wakes the event loop
/// with each outcome.
pub struct DiskThread {
    jobs: Option<mpsc::Sender<Job>>,
    completions: mpsc::Receiver<Done>,
    handle: Option<JoinHandle<()>>,
}

impl DiskThread {
    pub fn start(
        redo: RedoFiles,
        system: SystemFileStore,
        file_system: PathBuf,
        waker: Arc<mio::Waker>,
    ) -> Result<DiskThread, String> {
        let (jobs, incoming) = mpsc::channel::<Job>();
        let (done, completions) = mpsc::channel();
        let mut files = Files {
            redo,
            system,
            file_system,
        };
        let handle = std::thread::Builder::new()
            .name("disk".to_string())
            .spawn(move || {
                for job in incoming {
                    if done.send(files.perform(job)).is_err() {
                        return;
                    }
                    // A waker that fails leaves the completion for the
                    // loop's next wake-up (it polls at least every 50 ms).
                    let _ = waker.wake();
                }
            })
            .map_err(|e| format!("cannot start the disk thread: {e}"))?;
        Ok(DiskThread {
            jobs: Some(jobs),
            completions,
            handle: Some(handle),
        })
    }

    fn send(&self, job: Job) {
        self.jobs
            .as_ref()
            .expect("the thread runs until dropped")
            .send(job)
            .expect("the disk thread ends only when dropped");
    }

    /// Hands a redo log request to the thread.
    pub fn submit(&self, request: DiskRequest) {
        self.send(Job::Redo(request));
    }

    /// Hands a file task to the thread.
    pub fn submit_file(&self, task: FileTask) {
        self.send(Job::File(task));
    }

    /// The outcomes that arrived, without waiting.
    pub fn completions(&self) -> impl Iterator<Item = Done> + '_ {
        self.completions.try_iter()
    }
}

/// Reads a checkpoint file: bytes past its end read as zero (so the scan
/// ends there).
struct CheckpointFile(File);

impl ReadAt for CheckpointFile {
    fn read_at(&mut self, _file: u32, offset: u64, into: &mut [u8]) -> Result<(), String> {
        into.fill(0);
        let mut done = 0;
        while done < into.len() {
            match self.0.read_at(&mut into[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(read) => done += read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("cannot read a local checkpoint: {e}")),
            }
        }
        Ok(())
    }
}

/// The node's files, read for a restore.
pub struct FileRestoreSource {
    pub file_system: PathBuf,
    pub redo_config: RedoConfig,
    /// The redo log's files, opened at the restore's first redo step.
    pub redo_files: Option<RedoFiles>,
}

impl RestoreSource for FileRestoreSource {
    fn checkpoint_step(
        &mut self,
        info: &CheckpointInfo,
        scan: &mut disk::Scan,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String> {
        let path = checkpoint_path(&self.file_system, info.id);
        let file = File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        read_checkpoint_step(info, scan, &mut CheckpointFile(file), bytes_max, visit)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn redo_step(
        &mut self,
        scan: &mut disk::Scan,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String> {
        let files = match &mut self.redo_files {
            Some(files) => files,
            files => files.insert(
                RedoFiles::open(&redo_directory(&self.file_system), &self.redo_config)
                    .map_err(|e| e.to_string())?,
            ),
        };
        let ended = scan.step(&self.redo_config, files, bytes_max, visit)?;
        if ended {
            // The files are not read again until the next restore.
            self.redo_files = None;
        }
        Ok(ended)
    }
}

impl Drop for DiskThread {
    fn drop(&mut self) {
        // The thread finishes what it was given, then ends.
        self.jobs = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At start, checkpoint files the chain does not name go (one being
    /// written when the node died, ones made unneeded); the chain's stay.
    #[test]
    fn checkpoint_files_no_chain_names_are_deleted_at_start() {
        let file_system =
            std::env::temp_dir().join(format!("shoal-unchained-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&file_system);
        std::fs::create_dir_all(checkpoint_directory(&file_system)).expect("a directory");
        for id in [3, 4, 5, 9] {
            std::fs::write(checkpoint_path(&file_system, id), b"rows").expect("written");
        }
        let other = checkpoint_directory(&file_system).join("notes.txt");
        std::fs::write(&other, b"not ours").expect("written");
        let info = |id| CheckpointInfo {
            id,
            redo_start: 0,
            epoch_limit: 1,
            bytes: 4,
            whole_parts: u64::MAX,
        };
        let mut deleted =
            delete_unchained_checkpoints(&file_system, &[info(4), info(5)]).expect("deleted");
        deleted.sort();
        assert_eq!(
            deleted,
            vec![
                checkpoint_path(&file_system, 3),
                checkpoint_path(&file_system, 9)
            ]
        );
        for (id, kept) in [(3, false), (4, true), (5, true), (9, false)] {
            assert_eq!(checkpoint_path(&file_system, id).exists(), kept, "{id}");
        }
        assert!(other.exists(), "a file that is not a checkpoint stays");
        std::fs::remove_dir_all(&file_system).expect("cleaned up");
    }
}
