//! A snapshot write that fails part-way, as on a full disk, leaves the old
//! snapshot in place and no part of the new one. A test binary of its own:
//! it lowers this process's file size limit (`RLIMIT_FSIZE`), which makes a
//! write past it fail as a full disk's would.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]
#![cfg(target_os = "linux")]

use std::sync::Arc;

use svc_engine::store::snapshot::{self, SnapshotError, SnapshotKey};
use svc_engine::{Graph, Interner};

/// Sets the largest file this process may write, in bytes, and makes a
/// write past it fail with `EFBIG` instead of stopping the process.
fn limit_file_size(bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `signal` only changes how this process answers SIGXFSZ
    // (ignored: the failing write returns `EFBIG`), and `setrlimit` reads
    // the `rlimit` above, which lives across the call.
    #[allow(unsafe_code)]
    let ok = unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN) != libc::SIG_ERR && libc::setrlimit(libc::RLIMIT_FSIZE, &limit) == 0
    };
    assert!(ok, "the file size limit could not be set");
}

#[test]
fn a_write_that_fails_part_way_leaves_the_old_snapshot_and_no_part() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.snap");
    let graph = Graph::new(Arc::new(Interner::new()));
    let key = |scan_seq| SnapshotKey {
        generation: 1,
        scan_seq,
        commit_us: scan_seq,
        symbols: 0,
    };
    let size = snapshot::write(&path, &graph, key(1)).unwrap();
    let old = std::fs::read(&path).unwrap();
    assert_eq!(old.len() as u64, size);

    limit_file_size(size / 2);
    let failed = snapshot::write(&path, &graph, key(2));
    limit_file_size(libc::RLIM_INFINITY);

    match failed {
        Err(SnapshotError::Io { path: p, source }) => {
            assert_eq!(p, path);
            assert_eq!(source.raw_os_error(), Some(libc::EFBIG), "{source}");
        }
        other => panic!("expected the write to fail: {other:?}"),
    }
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "graph.snap")
        .collect();
    assert!(left.is_empty(), "the part written was left behind: {left:?}");
    assert_eq!(std::fs::read(&path).unwrap(), old, "the old snapshot stands");
}
