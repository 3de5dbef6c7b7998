//! Atomic file replacement: a reader of `path` sees the old content or the
//! new one, never a part, and after a crash the file holds one of the two.
//!
//! The new content goes to a temporary file in the same directory (so the
//! rename stays on one filesystem), named `.<file>.tmp.<pid>.<counter>` so
//! two writers of the same path never share one. The file is synced,
//! renamed over `path`, and the directory is synced so the rename itself is
//! durable. Whatever step fails, and if the writer panics, the temporary
//! file is removed: a part left on a full disk would hold its space.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Attempts at a free temporary name before giving up: a name is only taken
/// by a leftover of an earlier process that had the same pid.
const NAME_ATTEMPTS: u32 = 16;

/// Replaces `path` with what `write` puts in the file it is given.
///
/// `write` receives the temporary file; anything it wraps around the file
/// (a `BufWriter`) must be flushed before it returns, since the file is
/// synced and renamed right after. An error from `write`, the sync, the
/// rename or the directory sync is returned unchanged; the old content of
/// `path` is kept unless the rename happened.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let mut pending = begin(path)?;
    write(pending.file())?;
    pending.finish()
}

/// A replacement of a file written now and put in place later: the content
/// goes to the temporary file ([`Pending::file`]) and [`Pending::finish`]
/// syncs it and renames it over the path, so the slow part (the sync) can
/// run on another thread. Dropped unfinished, the temporary file is removed.
pub struct Pending {
    file: File,
    tmp: Temp,
    path: PathBuf,
    dir: PathBuf,
}

/// Starts replacing `path`: a new temporary file beside it.
pub fn begin(path: &Path) -> io::Result<Pending> {
    let Some(name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        ));
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let (file, tmp) = create_temp(dir, &name.to_string_lossy())?;
    Ok(Pending {
        file,
        tmp,
        path: path.to_owned(),
        dir: dir.to_owned(),
    })
}

impl Pending {
    /// The temporary file; anything wrapped around it (a `BufWriter`) must
    /// be flushed before [`Pending::finish`].
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Syncs the temporary file, renames it over the path and syncs the
    /// directory.
    pub fn finish(self) -> io::Result<()> {
        let Pending { file, tmp, path, dir } = self;
        file.sync_all()?;
        drop(file);
        std::fs::rename(tmp.path(), &path)?;
        tmp.disarm();
        File::open(&dir)?.sync_all()
    }
}

/// Replaces `path` with `bytes`, as [`write_atomic`] does.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(path, |f| f.write_all(bytes))
}

/// A temporary file that is removed when dropped, unless disarmed once it
/// has been renamed away.
struct Temp {
    path: PathBuf,
    armed: bool,
}

impl Temp {
    fn path(&self) -> &Path {
        &self.path
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Creates a new, empty temporary file for `name` in `dir`.
fn create_temp(dir: &Path, name: &str) -> io::Result<(File, Temp)> {
    let pid = std::process::id();
    let mut last = None;
    for _ in 0..NAME_ATTEMPTS {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp.{pid}.{n}"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((f, Temp { path: tmp, armed: true })),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn success_replaces_the_content_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_bytes_atomic(&path, b"first").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        write_bytes_atomic(&path, b"second, longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second, longer");
        assert_eq!(names(dir.path()), ["state.json"]);
    }

    #[test]
    fn a_failing_writer_keeps_the_old_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "old").unwrap();
        let e = write_atomic(&path, |f| {
            f.write_all(b"half of the new")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(names(dir.path()), ["config.toml"]);
    }

    #[test]
    fn a_panicking_writer_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "old").unwrap();
        let panicked = std::panic::catch_unwind(|| write_atomic(&path, |_| panic!("writer bug")));
        assert!(panicked.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(names(dir.path()), ["config.toml"]);
    }

    #[test]
    fn a_failed_rename_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A non-empty directory cannot be replaced by a file.
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "kept").unwrap();
        let e = write_bytes_atomic(&path, b"new").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
        assert_eq!(names(dir.path()), ["taken"]);
        assert_eq!(std::fs::read_to_string(path.join("inside")).unwrap(), "kept");
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_file_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_bytes_atomic(&dir.path().join("absent/state.json"), b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(names(dir.path()).is_empty());
        let e = write_bytes_atomic(Path::new("/"), b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn concurrent_writers_of_one_path_each_use_their_own_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let contents: Vec<String> = (0..8).map(|i| format!("writer {i}")).collect();
        std::thread::scope(|s| {
            for c in &contents {
                let path = &path;
                s.spawn(move || {
                    for _ in 0..20 {
                        write_bytes_atomic(path, c.as_bytes()).unwrap();
                    }
                });
            }
        });
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(contents.contains(&last), "{last:?} is one writer's content, whole");
        assert_eq!(names(dir.path()), ["state.json"]);
    }
}
