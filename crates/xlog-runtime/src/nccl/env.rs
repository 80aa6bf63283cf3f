//! One process per GPU: the rank, world size and local rank a launcher such as
//! `torchrun` sets, and the unique id handed from rank 0 to the others through a
//! file or an environment variable. xlog runs no network store of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use super::comm::{Communicator, UniqueId};
use crate::error::{Error, Result};
use crate::runtime::Runtime;

/// Environment variable holding the unique id as hexadecimal text
/// ([`UniqueId::to_hex`]), for launchers that hand it to every process.
pub const UNIQUE_ID_ENV: &str = "XLOG_NCCL_ID";

/// Environment variable naming a file rank 0 writes the unique id to and the
/// other ranks read it from (a path on storage every process sees; a fresh one per
/// job, since a stale file from an earlier job would hand out a dead id).
pub const UNIQUE_ID_FILE_ENV: &str = "XLOG_NCCL_ID_FILE";

/// Where this process sits among the job's processes, as `torchrun` (and most MPI
/// and Slurm wrappers) describe it: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessEnv {
    /// This process's rank in the job (`RANK`).
    pub rank: u32,
    /// How many processes the job has (`WORLD_SIZE`).
    pub world_size: u32,
    /// This process's rank on its node (`LOCAL_RANK`; `RANK` when unset): the
    /// ordinal of the device it uses.
    pub local_rank: u32,
}

fn var(name: &str) -> Result<Option<u32>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| Error::InvalidArgument {
                what: format!("{name}={v:?}"),
                reason: "expected a non-negative integer, as torchrun sets it".to_owned(),
            }),
    }
}

impl ProcessEnv {
    /// Read `RANK`, `WORLD_SIZE` and `LOCAL_RANK`; an error names a missing or
    /// malformed one.
    pub fn from_env() -> Result<ProcessEnv> {
        let missing = |name: &str| Error::InvalidArgument {
            what: name.to_owned(),
            reason: "not set; start the processes with a launcher that sets RANK and \
                     WORLD_SIZE (torchrun, mpirun with a wrapper, srun), or set them yourself"
                .to_owned(),
        };
        let rank = var("RANK")?.ok_or_else(|| missing("RANK"))?;
        let world_size = var("WORLD_SIZE")?.ok_or_else(|| missing("WORLD_SIZE"))?;
        let local_rank = var("LOCAL_RANK")?.unwrap_or(rank);
        if rank >= world_size {
            return Err(Error::InvalidArgument {
                what: format!("RANK={rank}"),
                reason: format!("not below WORLD_SIZE={world_size}"),
            });
        }
        Ok(ProcessEnv {
            rank,
            world_size,
            local_rank,
        })
    }

    /// The job's unique id: from [`UNIQUE_ID_ENV`] when set; otherwise through the
    /// file [`UNIQUE_ID_FILE_ENV`] names, which rank 0 writes (a fresh id) and the
    /// others wait for, up to `timeout`.
    pub fn unique_id(&self, timeout: Duration) -> Result<UniqueId> {
        if let Ok(hex) = std::env::var(UNIQUE_ID_ENV) {
            return UniqueId::from_hex(&hex);
        }
        let Some(path) = std::env::var_os(UNIQUE_ID_FILE_ENV) else {
            return Err(Error::InvalidArgument {
                what: "the NCCL unique id".to_owned(),
                reason: format!(
                    "set {UNIQUE_ID_ENV} (the id as hexadecimal text) or {UNIQUE_ID_FILE_ENV} \
                     (a file rank 0 writes it to) for every process"
                ),
            });
        };
        if self.rank == 0 {
            let id = UniqueId::new()?;
            id.write_file(Path::new(&path))?;
            Ok(id)
        } else {
            UniqueId::read_file(Path::new(&path), timeout)
        }
    }

    /// This process's runtime (device `local_rank`) and its communicator, joined
    /// through [`unique_id`](Self::unique_id) with
    /// [`Communicator::init_rank_within`]: `timeout` bounds the wait for the id
    /// file, for every rank to join, and for the check that they agree, each.
    pub fn communicator(&self, timeout: Duration) -> Result<(Runtime, Communicator)> {
        let rt = Runtime::get(self.local_rank)?;
        let id = self.unique_id(timeout)?;
        let comm = Communicator::init_rank_within(&rt, &id, self.rank, self.world_size, timeout)?;
        Ok((rt, comm))
    }
}

impl UniqueId {
    /// Write the id to `path` as hexadecimal text, atomically (a temporary file
    /// renamed over it), so a reader never sees half of it.
    pub fn write_file(&self, path: &Path) -> Result<()> {
        let io = |e: std::io::Error| Error::InvalidArgument {
            what: format!("writing the NCCL unique id to {}", path.display()),
            reason: e.to_string(),
        };
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, self.to_hex()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Read an id [`write_file`](Self::write_file) wrote, waiting up to `timeout`
    /// for the file to appear.
    pub fn read_file(path: &Path, timeout: Duration) -> Result<UniqueId> {
        let start = Instant::now();
        loop {
            match std::fs::read_to_string(path) {
                Ok(text) => return UniqueId::from_hex(&text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && start.elapsed() < timeout => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(Error::InvalidArgument {
                        what: format!("reading the NCCL unique id from {}", path.display()),
                        reason: format!(
                            "{e} (waited {:?} for rank 0 to write it)",
                            start.elapsed()
                        ),
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_id_round_trips_through_hex_and_files() {
        let mut bytes = [0u8; UniqueId::BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 37 + 5) as u8;
        }
        let id = UniqueId::from_bytes(bytes);
        assert_eq!(UniqueId::from_hex(&id.to_hex()).unwrap().to_bytes(), bytes);
        let dir = std::env::temp_dir().join(format!("xlog-nccl-id-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id");
        id.write_file(&path).unwrap();
        let back = UniqueId::read_file(&path, Duration::from_secs(1)).unwrap();
        assert_eq!(back.to_bytes(), bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_ids_and_missing_files_are_refused_with_a_reason() {
        let short = UniqueId::from_hex("abcd").unwrap_err().to_string();
        assert!(short.contains("256 hexadecimal digits"), "{short}");
        let bad = "zz".repeat(UniqueId::BYTES);
        let e = UniqueId::from_hex(&bad).unwrap_err().to_string();
        assert!(e.contains("not hexadecimal"), "{e}");
        let missing = std::env::temp_dir().join("xlog-nccl-id-never-written");
        let e = UniqueId::read_file(&missing, Duration::from_millis(50)).unwrap_err();
        assert!(e.to_string().contains("waited"), "{e}");
    }
}
