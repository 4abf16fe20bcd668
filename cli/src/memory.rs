//! How the binaries ask the C allocator to hold memory.
//!
//! glibc gives each thread that allocates under contention an arena of its own (up to eight
//! per core) and keeps what a thread frees in that arena for its next allocation. Packing a
//! store reads sessions on one thread per core and compresses on as many more, and a large
//! session (a 34 MB transcript, its update stream and the transcript again as the stream's
//! dictionary) leaves about a hundred megabytes behind in whichever arenas served it. Two
//! arenas bound that: on the 1 GiB bench store, peak RSS of `asp-pack` went from 258 to
//! 191 MiB with the same CPU time (`MALLOC_ARENA_MAX=2`, 18.3 s user either way; one arena:
//! 183 MiB; a fixed 4 MiB mmap threshold as well: 180 MiB for a fifth more system time).
//! Small allocations come from each thread's cache without the arena lock, so two arenas
//! cost no measurable time on two cores; a user who wants more sets `MALLOC_ARENA_MAX`,
//! which wins.

/// Caps glibc's arenas at two unless `MALLOC_ARENA_MAX` says otherwise; does nothing with
/// another C library. Called first thing in `main`, before threads start.
pub fn bound_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: `mallopt` takes two integers and changes a setting of the allocator; it is
        // called before this process starts any thread.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}
