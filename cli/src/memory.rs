//! How the binaries ask the C allocator to hold memory.
//!
//! Packing reads sessions on one thread per core and compresses on as many more. A large
//! session (a 34 MB transcript, its update stream, the transcript again as the stream's
//! dictionary) allocates buffers of tens of megabytes, and glibc, left to itself, keeps what
//! they free: its mmap threshold rises to the size of the largest block freed (up to 32 MiB),
//! so later big buffers come from an arena's heap and stay there, and each thread that
//! allocates under contention gets an arena of its own (up to eight per core).
//!
//! Two settings bound that: at most two arenas, and a fixed mmap threshold of 4 MiB, so every
//! big buffer is mapped and given back when freed. On the 1 GiB bench store, peak RSS of
//! `asp-pack` (`/usr/bin/time`, several runs, quiet machine): 258-270 MiB with glibc's
//! defaults, 212-262 MiB with two arenas alone, 173-182 MiB with both, for the same wall time
//! (7.7 s) and about 0.3 s more system time (the big buffers' pages are mapped afresh). One
//! arena gave 192 MiB but 10.6 s wall (the threads wait for its lock). Small allocations come
//! from each thread's cache without any lock.
//!
//! A third setting keeps what the fixed threshold costs in page faults down: glibc gives the
//! free top of a heap back to the system once it exceeds 128 KiB (`M_TRIM_THRESHOLD`), and
//! with the mmap threshold fixed that default stays, so every buffer of a few hundred
//! kilobytes to 4 MiB freed at the top of a heap was page-faulted afresh by the next one.
//! Raised to 64 MiB, the size of a second arena's heap on 64-bit, so those heaps are never
//! trimmed part way (the main heap still gives back a top over 64 MiB). Measured with the same
//! binary and `MALLOC_TRIM_THRESHOLD_`, runs alternated, `/usr/bin/time`: `asp verify` of the
//! 256 MiB bench store's bundle 0.59-0.65 s -> 0.39-0.41 s wall (system time 0.44-0.54 s ->
//! 0.07-0.11 s, 200-250 k page faults -> 37 k; 8 MiB, glibc's usual pairing with a 4 MiB mmap
//! threshold, left 60 k), of the 1 GiB one 2.0-2.5 s -> 1.6-1.7 s; `asp-pack` of the 256 MiB
//! store 2.11-2.23 s -> 1.84-1.87 s, of the 1 GiB one 8.2-8.9 s -> 7.6-8.3 s (system time
//! 1.6-1.7 s -> 1.1-1.2 s); peak RSS 3-20 MiB higher. Only for commands that end when their
//! work is done: `asp hub` runs for hours, and should give back what a burst of work freed.
//! A user's own `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_` wins.
//!
//! Another allocator was tried instead (stop 41): `mimalloc` as `asp-pack`'s global allocator
//! took about a tenth less user time packing the 256 MiB Codex home (`malloc` and `free` are an
//! eighth of its samples: its reader parses lines into `Value` trees) and the same for Claude
//! Code's, but twice the peak RSS (214-218 against 107-110 MiB for Codex, 248-257 against
//! 104-110 MiB for Claude Code; `/usr/bin/time`, two runs each, alternated), which issue 12
//! bounds; not kept.

/// Sets glibc up for a command that does its work and ends: [`bound_arenas`], and the free
/// top of a heap kept up to 64 MiB (see the module documentation). Called first thing in
/// `main`, before threads start.
pub fn for_batch_work() {
    bound_arenas();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none() {
        // SAFETY: `mallopt` takes two integers and changes a setting of the allocator; it is
        // called before this process starts any thread.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        }
    }
}

/// Caps glibc's arenas at two and fixes its mmap threshold at 4 MiB, each unless the
/// environment sets it; does nothing with another C library. Called first thing in `main`,
/// before threads start.
pub fn bound_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let unset = |var: &str| std::env::var_os(var).is_none();
        if unset("MALLOC_ARENA_MAX") {
            // SAFETY: `mallopt` takes two integers and changes a setting of the allocator; it
            // is called before this process starts any thread.
            #[allow(unsafe_code)]
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, 2);
            }
        }
        if unset("MALLOC_MMAP_THRESHOLD_") {
            // SAFETY: as above.
            #[allow(unsafe_code)]
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
            }
        }
    }
}
