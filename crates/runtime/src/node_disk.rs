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

use disk::system_file::{FILE_BYTES, SLOT_BYTES, SystemFile, slot_of};
use disk::{DiskCompletion, DiskRequest};

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

    pub fn contents(&self) -> SystemFile {
        self.contents
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

/// The thread that does the redo log's requests, in order, and wakes the
/// event loop with each outcome.
pub struct DiskThread {
    requests: Option<mpsc::Sender<DiskRequest>>,
    completions: mpsc::Receiver<DiskCompletion>,
    handle: Option<JoinHandle<()>>,
}

impl DiskThread {
    pub fn start(files: RedoFiles, waker: Arc<mio::Waker>) -> Result<DiskThread, String> {
        let (requests, incoming) = mpsc::channel::<DiskRequest>();
        let (done, completions) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("redo".to_string())
            .spawn(move || {
                for request in incoming {
                    if done.send(files.perform(&request)).is_err() {
                        return;
                    }
                    // A waker that fails leaves the completion for the
                    // loop's next wake-up (it polls at least every 50 ms).
                    let _ = waker.wake();
                }
            })
            .map_err(|e| format!("cannot start the redo log's thread: {e}"))?;
        Ok(DiskThread {
            requests: Some(requests),
            completions,
            handle: Some(handle),
        })
    }

    /// Hands `request` to the thread.
    pub fn submit(&self, request: DiskRequest) {
        self.requests
            .as_ref()
            .expect("the thread runs until dropped")
            .send(request)
            .expect("the redo log's thread ends only when dropped");
    }

    /// The outcomes that arrived, without waiting.
    pub fn completions(&self) -> impl Iterator<Item = DiskCompletion> + '_ {
        self.completions.try_iter()
    }
}

impl Drop for DiskThread {
    fn drop(&mut self) {
        // The thread finishes what it was given, then ends.
        self.requests = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}
