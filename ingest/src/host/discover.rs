//! Plugin discovery in the plugin directory and the integrity check that
//! runs before every launch.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::HostError;
use super::manifest::{Manifest, manifest_path, sha256_file};

/// File name prefix of plugin binaries: `svc-plugin-<name>`.
pub const PLUGIN_PREFIX: &str = "svc-plugin-";

/// A plugin binary found in the plugin directory.
#[derive(Clone, Debug)]
pub struct Discovered {
    /// The part of the file name after `svc-plugin-`: the provider it serves.
    pub name: String,
    pub path: PathBuf,
    /// The parsed `<binary>.yaml`, or why it could not be read.
    pub manifest: Result<Manifest, String>,
}

/// Every `svc-plugin-<name>` file in `dir`, sorted by name. Manifests
/// (`*.yaml`) and other files are skipped; a missing directory holds none.
pub fn discover(dir: &Path) -> Vec<Discovered> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<Discovered> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file_name = entry.file_name();
            let file_name = file_name.to_str()?;
            let name = file_name.strip_prefix(PLUGIN_PREFIX)?;
            if name.is_empty() || file_name.ends_with(".yaml") || file_name.ends_with(".yml") {
                return None;
            }
            let path = entry.path();
            if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                return None;
            }
            let manifest = read_manifest(&path);
            Some(Discovered {
                name: name.to_owned(),
                path,
                manifest,
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn read_manifest(binary: &Path) -> Result<Manifest, String> {
    let path = manifest_path(binary);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Manifest::from_yaml(&text).map_err(|e| format!("invalid {}: {e}", path.display()))
}

/// The launch integrity check: the binary at `path` is executable and its
/// SHA-256 equals the one in its `manifest` (as read, or why it could not be).
pub fn verify(path: &Path, manifest: &Result<Manifest, String>) -> Result<(), HostError> {
    let meta = std::fs::metadata(path).map_err(|source| HostError::Io {
        path: path.to_owned(),
        source,
    })?;
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(HostError::NotExecutable { path: path.to_owned() });
    }
    let manifest = manifest.as_ref().map_err(|reason| HostError::Manifest {
        path: path.to_owned(),
        reason: reason.clone(),
    })?;
    let actual = sha256_file(path)?;
    let expected = manifest.sha256.trim();
    if !actual.eq_ignore_ascii_case(expected) {
        return Err(HostError::Verification {
            path: path.to_owned(),
            actual,
            expected: expected.to_owned(),
        });
    }
    Ok(())
}

/// The integrity check of one plugin binary, kept across its launches:
/// [`Integrity::check`] runs before every launch, so a binary replaced or
/// changed after the daemon verified it is not started unchecked. The
/// binary is hashed again only when it or its manifest changed since it
/// last passed (another file, size, mode, modification or change time); a
/// launch of an unchanged binary costs two `stat`s.
#[derive(Debug, Default)]
pub struct Integrity {
    passed: Mutex<Passed>,
}

#[derive(Debug, Default)]
struct Passed {
    /// The binary and its manifest as they were when they last passed.
    files: Option<(Fingerprint, Option<Fingerprint>)>,
    /// How many different states of the files have passed.
    versions: u64,
}

/// What tells one state of a file from another without reading it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Fingerprint {
    dev: u64,
    ino: u64,
    len: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fingerprint {
    fn of(path: &Path) -> Result<Fingerprint, HostError> {
        let m = std::fs::metadata(path).map_err(|source| HostError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(Fingerprint {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mode: m.mode(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

impl Integrity {
    /// [`verify`]s the binary at `path` against its manifest, unless
    /// neither file changed since it last passed. Returns which version of
    /// the files passed: it changes when the plugin is installed again, so
    /// a process started from an earlier one can be told apart.
    pub fn check(&self, path: &Path) -> Result<u64, HostError> {
        // A manifest that cannot be read fails the check below.
        let now = (Fingerprint::of(path)?, Fingerprint::of(&manifest_path(path)).ok());
        let mut passed = self.passed.lock().unwrap_or_else(PoisonError::into_inner);
        if passed.files == Some(now) {
            return Ok(passed.versions);
        }
        passed.files = None;
        verify(path, &read_manifest(path))?;
        passed.files = Some(now);
        passed.versions += 1;
        Ok(passed.versions)
    }
}
