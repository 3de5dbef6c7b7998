//! The C allocator's thresholds and arenas, set for scans and readers.
//!
//! glibc's `malloc` serves an allocation above its mmap threshold (128 KiB
//! at start) from a mapping of its own: the pages are faulted in as they
//! are first written and handed back to the kernel when it is freed. Only
//! after such a chunk is freed does glibc raise the threshold to its size
//! (up to 32 MiB) and the trim threshold to twice that. A scan writes
//! hundreds of megabytes into buffers of that size (staged node and edge
//! batches, shard columns and arenas, message buffers), most of them
//! before anything is freed, so the dynamic rule comes too late: with the
//! thresholds it ends at set from the start, a one-million-node plugin
//! scan takes ~20% fewer page faults and ~5% less CPU (docs/perf-log.md, plugin
//! row). Freed memory below the trim threshold stays with the process for
//! the rest of the scan's buffers, as it would once glibc had adjusted
//! itself.
//!
//! glibc also gives a thread that finds every arena busy an arena of its
//! own, up to eight per CPU, and an arena keeps the memory its threads
//! freed for the rest of the process. The API's blocking pool grows to
//! dozens of threads under a burst of readers, and each arena then kept
//! its share of what the requests had allocated: a 20,000-node daemon held
//! ~120 MB more after a burst of sixteen readers with sixteen arenas, ~45
//! MB more with two, and served as many requests. So there are at most as
//! many arenas as CPUs ([`arena_max`]; plugin ingest ran as fast with one
//! or two arenas as with sixteen). docs/perf-log.md, the soak.
//!
//! What a scan freed is handed back to the kernel when it ends
//! ([`release`]): glibc gives back on its own only the free memory at the
//! top of a heap, and a scan frees its staged batches, message buffers and
//! the commit's pages in the middle of the heaps, under live rows. A
//! one-million-node daemon held ~2.2 GB between scans without it and ~1.3
//! GB with it; its next scan, faulting those pages in again, takes ~7%
//! longer (docs/perf-log.md, the daemon's resident memory).

/// Largest allocation served from the allocator's heaps rather than a
/// mapping of its own: glibc's upper bound for `M_MMAP_THRESHOLD`.
pub const MMAP_THRESHOLD: usize = 32 * 1024 * 1024;

/// Free memory at the top of a heap kept for later allocations before it
/// is handed back (`M_TRIM_THRESHOLD`): twice [`MMAP_THRESHOLD`], as
/// glibc's own rule sets it.
pub const TRIM_THRESHOLD: usize = 2 * MMAP_THRESHOLD;

/// Most arenas the allocator keeps (`M_ARENA_MAX`): one per CPU the
/// process may run on.
pub fn arena_max() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Sets the thresholds above and the arenas' number. Call once, first
/// thing in `main`. Returns whether the allocator took them (always
/// `false` off glibc, where there is nothing to set).
pub fn tune() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let set = |param: libc::c_int, value: usize| {
            let value = libc::c_int::try_from(value).unwrap_or(libc::c_int::MAX);
            // SAFETY: `mallopt` takes two integers and changes only the
            // allocator's own parameters, under its own locks; it reads
            // and writes no memory of the caller's.
            #[allow(unsafe_code)]
            let ok = unsafe { libc::mallopt(param, value) };
            ok == 1
        };
        set(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            & set(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD)
            & set(libc::M_ARENA_MAX, arena_max())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Hands the free memory in the allocator's heaps back to the kernel
/// (`malloc_trim`): every whole free page of every arena. Call when a
/// scan's buffers are gone. Returns whether any memory went back (always
/// `false` off glibc). Takes tens of milliseconds after a
/// one-million-node scan; allocations in other threads wait on each
/// arena's lock meanwhile.
pub fn release() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` takes an integer and only returns free
        // pages of the allocator's own heaps to the kernel, under the
        // allocator's locks; no live allocation is touched.
        #[allow(unsafe_code)]
        let released = unsafe { libc::malloc_trim(0) };
        released == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_both_thresholds() {
        // glibc refuses an mmap threshold above its upper bound; this
        // fails if the constant ever leaves the accepted range.
        assert!(tune());
    }
}
