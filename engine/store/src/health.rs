//! A redb database that comes back after an I/O failure, and the faults
//! that say why a store cannot be used meanwhile.
//!
//! redb latches its first I/O error: every later read or write through
//! that `Database` answers `PreviousIo`, even once the disk has room again;
//! only opening the file anew (redb then repairs it) clears it. A
//! [`Reopening`] holds the database behind a lock. The first I/O failure
//! seen through it drops the database and records a [`Fault`]; the next
//! use opens the file again, at most once per [`RETRY`], so a full disk
//! costs one open attempt a second, not one per request. A store without
//! a fault is used as before, through a cheap `Arc` clone.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redb::Database;

/// Shortest time between two attempts to open a failed database again.
pub const RETRY: Duration = Duration::from_secs(1);

/// Why a store cannot be used now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The file that failed.
    pub path: PathBuf,
    /// The disk (or the user's quota) is full: writes fail until space is freed.
    pub disk_full: bool,
    /// What failed, as the operating system or redb said it.
    pub reason: String,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.disk_full {
            write!(
                f,
                "{}: the disk is full ({}); writes resume once space is freed",
                self.path.display(),
                self.reason
            )
        } else {
            write!(
                f,
                "{}: i/o failed ({}); the file is opened again until it succeeds",
                self.path.display(),
                self.reason
            )
        }
    }
}

/// Whether `e` is an I/O failure of the database file, and which: `Some(true)`
/// for a full disk or quota, `Some(false)` for another I/O error or redb's
/// latch of an earlier one, `None` for anything else (a logic or format error).
pub fn io_failure(e: &redb::Error) -> Option<bool> {
    match e {
        redb::Error::Io(io) => Some(is_disk_full(io)),
        redb::Error::PreviousIo => Some(false),
        _ => None,
    }
}

/// Below this much room for the caller, a disk counts as full.
const NEARLY_FULL: u64 = 1 << 20;

/// Whether the file system holding `path` has less than [`NEARLY_FULL`]
/// left for this process: what a latched error redb reports without its
/// cause most likely was.
fn nearly_full(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    nix::sys::statvfs::statvfs(dir).is_ok_and(|s| s.blocks_available().saturating_mul(s.fragment_size()) < NEARLY_FULL)
}

/// ENOSPC or EDQUOT.
pub fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

type Opener = Box<dyn Fn(&Path) -> Result<Database, redb::Error> + Send + Sync>;

struct State {
    db: Option<Arc<Database>>,
    fault: Option<Fault>,
    last_try: Option<Instant>,
    /// Counts the databases opened: an error of an earlier one (a handle
    /// taken before the file was opened again) says nothing of the current.
    generation: u64,
    /// The last fault recorded, kept after recovery to classify such late errors.
    last_fault: Option<Fault>,
}

/// A database reopened after an I/O failure; see the module docs.
pub struct Reopening {
    path: PathBuf,
    open: Opener,
    state: Mutex<State>,
}

impl Reopening {
    /// Holds `db`, opened from `path`; `open` opens it again after a failure.
    pub fn new(
        db: Database,
        path: &Path,
        open: impl Fn(&Path) -> Result<Database, redb::Error> + Send + Sync + 'static,
    ) -> Reopening {
        Reopening {
            path: path.to_owned(),
            open: Box::new(open),
            state: Mutex::new(State {
                db: Some(Arc::new(db)),
                fault: None,
                last_try: None,
                generation: 0,
                last_fault: None,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database, opened again first when an I/O failure dropped it (at
    /// most once per [`RETRY`]); the fault while it cannot be opened.
    pub fn get(&self) -> Result<Arc<Database>, Fault> {
        self.get_at().map(|(db, _)| db)
    }

    /// [`Reopening::get`] with the database's generation, for
    /// [`Reopening::observe_at`].
    pub fn get_at(&self) -> Result<(Arc<Database>, u64), Fault> {
        let mut state = self.state.lock();
        if let Some(db) = &state.db {
            return Ok((Arc::clone(db), state.generation));
        }
        let db = self.reopen(&mut state, false)?;
        Ok((db, state.generation))
    }

    /// The generation of the database [`Reopening::get`] would give now.
    pub fn generation(&self) -> u64 {
        self.state.lock().generation
    }

    /// Opens the database again now when it failed, without waiting for
    /// [`RETRY`] (a health check's probe), with its generation; whether it
    /// can be written, only a write tells ([`Reopening::wrote`]).
    pub fn recover(&self) -> Result<(Arc<Database>, u64), Fault> {
        let mut state = self.state.lock();
        if let Some(db) = &state.db {
            return Ok((Arc::clone(db), state.generation));
        }
        let db = self.reopen(&mut state, true)?;
        Ok((db, state.generation))
    }

    fn reopen(&self, state: &mut State, now: bool) -> Result<Arc<Database>, Fault> {
        let fault = state
            .fault
            .clone()
            .unwrap_or_else(|| self.fault_of(false, "closed".to_owned()));
        if !now && state.last_try.is_some_and(|t| t.elapsed() < RETRY) {
            return Err(fault);
        }
        state.last_try = Some(Instant::now());
        match (self.open)(&self.path) {
            Ok(db) => {
                tracing::info!(path = %self.path.display(), "store opened again after an i/o failure");
                // Opening needs no room: the fault stays until a write
                // succeeds ([`Reopening::wrote`]).
                let db = Arc::new(db);
                state.db = Some(Arc::clone(&db));
                state.generation += 1;
                Ok(db)
            }
            Err(e) => {
                // Still full, or a reader of the failed database still holds
                // the file: keep the first fault's kind unless this one says more.
                let fault = match io_failure(&e) {
                    Some(true) => self.fault_of(true, e.to_string()),
                    _ => fault,
                };
                state.fault = Some(fault.clone());
                Err(fault)
            }
        }
    }

    /// Records `e` when it is an I/O failure: the database is dropped (its
    /// readers finish on their own handles) and opened again on next use.
    /// Returns the fault recorded, if any.
    pub fn observe(&self, e: &redb::Error) -> Option<Fault> {
        let generation = self.generation();
        self.observe_at(generation, e)
    }

    /// [`Reopening::observe`] for an error of the database of `generation`:
    /// one of an earlier database (opened again since) changes nothing and
    /// is answered with the fault that ended that database.
    pub fn observe_at(&self, generation: u64, e: &redb::Error) -> Option<Fault> {
        let disk_full = io_failure(e)?;
        let mut state = self.state.lock();
        if generation != state.generation {
            let earlier = state.fault.clone().or_else(|| state.last_fault.clone());
            return Some(earlier.unwrap_or_else(|| self.fault_of(disk_full, e.to_string())));
        }
        let latched = matches!(e, redb::Error::PreviousIo);
        let fault = match state.fault.as_ref() {
            // redb's latch repeats an earlier failure: keep what that was.
            Some(f) if latched => f.clone(),
            // A latch whose first error went unseen (one in a transaction's
            // drop): the disk's room tells what it was.
            _ if latched => self.fault_of(nearly_full(&self.path), e.to_string()),
            _ => self.fault_of(disk_full, e.to_string()),
        };
        state.last_fault = Some(fault.clone());
        if state.db.take().is_some() {
            tracing::error!(path = %self.path.display(), error = %e, "store i/o failed; it is opened again on next use");
        }
        state.fault = Some(fault.clone());
        state.last_try = None;
        Some(fault)
    }

    /// The current fault: the database failed and no write has succeeded since.
    pub fn fault(&self) -> Option<Fault> {
        self.state.lock().fault.clone()
    }

    /// A durable write to the database of `generation` succeeded: the
    /// fault, if any, is over.
    pub fn wrote(&self, generation: u64) {
        let mut state = self.state.lock();
        if state.generation == generation && state.db.is_some() && state.fault.take().is_some() {
            tracing::info!(path = %self.path.display(), "store writable again");
        }
    }

    fn fault_of(&self, disk_full: bool, reason: String) -> Fault {
        Fault {
            path: self.path.clone(),
            disk_full,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn enospc() -> redb::Error {
        redb::Error::Io(std::io::Error::from_raw_os_error(28))
    }

    #[test]
    fn a_full_disk_is_told_from_other_io_errors() {
        assert_eq!(io_failure(&enospc()), Some(true));
        assert_eq!(
            io_failure(&redb::Error::Io(std::io::Error::from_raw_os_error(122))),
            Some(true),
            "EDQUOT"
        );
        assert_eq!(
            io_failure(&redb::Error::Io(std::io::Error::from_raw_os_error(5))),
            Some(false),
            "EIO"
        );
        assert_eq!(io_failure(&redb::Error::PreviousIo), Some(false));
        assert_eq!(io_failure(&redb::Error::TableDoesNotExist("t".into())), None);
    }

    #[test]
    fn a_failed_database_is_opened_again_once_it_can_be() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.redb");
        let db = Database::create(&path).expect("create");
        let refuse = Arc::new(AtomicBool::new(true));
        let r = {
            let refuse = Arc::clone(&refuse);
            Reopening::new(db, &path, move |p| {
                if refuse.load(Ordering::Acquire) {
                    Err(enospc())
                } else {
                    Database::create(p).map_err(redb::Error::from)
                }
            })
        };
        assert!(r.get().is_ok() && r.fault().is_none());
        assert!(r.observe(&redb::Error::TableDoesNotExist("t".into())).is_none());
        assert!(r.get().is_ok(), "a non-i/o error changes nothing");

        let fault = r.observe(&enospc()).expect("an i/o failure is a fault");
        assert!(
            fault.disk_full && fault.to_string().contains("the disk is full"),
            "{fault}"
        );
        // redb's latch afterwards does not hide that the disk was full.
        assert!(r.observe(&redb::Error::PreviousIo).is_some_and(|f| f.disk_full));
        assert!(r.recover().is_err_and(|f| f.disk_full), "still full");
        assert!(r.get().is_err(), "no second attempt within the retry interval");

        let failed_generation = r.generation();
        refuse.store(false, Ordering::Release);
        let (db, generation) = r.recover().expect("space is back");
        assert!(r.fault().is_some(), "opening is no proof a write succeeds");
        let mut w = db.begin_write().unwrap();
        w.set_durability(redb::Durability::Immediate).unwrap();
        w.commit().unwrap();
        r.wrote(generation);
        assert!(r.fault().is_none());
        assert!(r.get().is_ok());

        // A handle taken before the file was opened again fails late: that
        // says how it ended, and leaves the new database alone.
        assert_ne!(r.generation(), failed_generation);
        let late = r
            .observe_at(failed_generation, &redb::Error::PreviousIo)
            .expect("an i/o failure");
        assert!(late.disk_full, "{late}");
        assert!(r.fault().is_none() && r.get().is_ok());
    }
}
