//! `malloc::release` hands memory freed in the middle of the allocator's
//! heaps back to the kernel. A test binary of its own: it reads the
//! process's resident memory, which other tests would move.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use svc_engine::malloc;

/// Resident bytes of this process, from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status is readable on Linux");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("status has VmRSS in kB");
    kib * 1024
}

#[test]
fn memory_freed_under_live_allocations_goes_back_only_when_released() {
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: usize = 1024; // 64 MiB, each chunk below the mmap threshold
    assert!(malloc::tune(), "the daemon's thresholds apply");

    // Chunks written page by page, then one small allocation above them,
    // so that freeing them leaves free memory under a live one, as a
    // scan's staged batches are freed under the graph's rows.
    let mut chunks: Vec<Vec<u8>> = (0..CHUNKS).map(|i| vec![i as u8 | 1; CHUNK]).collect();
    let pin = Box::new([7u8; 64]);
    let written = resident_bytes();
    chunks.clear();
    chunks.shrink_to_fit();
    let freed = resident_bytes();
    // glibc keeps what was freed: with the trim threshold at 64 MiB it
    // gives back nothing from the middle of a heap by itself.
    let kept = written.saturating_sub(freed);
    assert!(
        kept < (CHUNK * CHUNKS / 4) as u64,
        "{kept} bytes went back without a release: the test shows nothing"
    );

    assert!(malloc::release(), "malloc_trim released nothing");
    let released = freed.saturating_sub(resident_bytes());
    assert!(
        released >= (CHUNK * CHUNKS / 2) as u64,
        "only {released} of {} freed bytes went back to the kernel",
        CHUNK * CHUNKS
    );
    assert_eq!(pin[0], 7);
}
