//! zstd compression contexts kept by each thread from one frame to the next.
//!
//! A context's tables are megabytes (an update stream's, against its transcript: a 4 MiB hash
//! table, spec/aspstate.md §4), and a pack compresses thousands of frames. Made afresh for
//! each, every one was an allocation above the binaries' 4 MiB mmap threshold
//! (`asp_cli::memory`): mapped, page-faulted and zeroed, then unmapped. On the 256 MiB Claude
//! Code bench home that was 130-190 thousand page faults and 0.5-0.9 s of system time in a
//! 2 s pack (`/usr/bin/time`); kept, zstd reuses a context's tables when they are large
//! enough (and shrinks them when they have been far too large for a while).
//!
//! A kept context compresses exactly as a new one: it is reset (session and parameters) after
//! each use, so it holds no parameter and no dictionary, and zstd rejects every table entry
//! older than the new frame's window, which a new context holds none of. A context that has
//! taken in [`FRESH_AFTER`] bytes is made afresh, so its positions never come near the
//! indices where zstd would correct them for overflow in the middle of a frame (3,500 MB,
//! `ZSTD_CURRENT_MAX`; zstd's own check at a frame's start leaves a margin of 16 MB, less
//! than a frame of a 64 MiB body), whose exact point would depend on the context's history.

use std::cell::RefCell;

use zstd::zstd_safe::{CCtx, ResetDirective};

/// Bytes (prefixes and bodies) a context takes in before it is made afresh.
const FRESH_AFTER: u64 = 1 << 30;

/// A thread's context between two uses, with what it has taken in.
struct Kept {
    cctx: CCtx<'static>,
    took: u64,
}

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's context (a new one when it has none, or one that would take in
/// more than [`FRESH_AFTER`] bytes with the `bytes` of this use), as zstd makes it: no
/// parameter set, no dictionary. `f` may reference a prefix or a prepared dictionary that
/// lives as long as `'d`; the context lets go of them before it is kept again.
pub(crate) fn with<'d, R>(bytes: usize, f: impl FnOnce(&mut CCtx<'d>) -> R) -> R {
    let bytes = bytes as u64;
    // (A thread whose storage is being torn down makes a new one.)
    let kept = KEPT
        .try_with(|k| k.borrow_mut().take())
        .ok()
        .flatten()
        .filter(|k| k.took.saturating_add(bytes) <= FRESH_AFTER);
    let (cctx, took) = match kept {
        Some(k) => (k.cctx, k.took),
        None => (CCtx::create(), 0),
    };
    // `CCtx<'a>` is covariant in `'a`: a context that borrows nothing may borrow for `'d`.
    let cctx: CCtx<'d> = cctx;
    let mut lent = Lent {
        cctx: Some(cctx),
        took: took.saturating_add(bytes),
    };
    f(lent.cctx.as_mut().expect("lent until dropped"))
}

/// Lets go of this thread's kept context, if any. A thread that compresses only now and then
/// (a converter's, which compresses the windows of a large transcript's stream itself) should
/// not hold a context's megabytes of tables from one such stream to the next, while it reads
/// the hundreds of sessions in between.
pub(crate) fn release() {
    let _ = KEPT.try_with(|k| k.borrow_mut().take());
}

/// Calls [`release`] when dropped, on the thread that drops it: held by what compresses now
/// and then on a thread that is not a compression worker.
#[derive(Debug, Default)]
pub(crate) struct ReleaseOnDrop;

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        release();
    }
}

/// A context lent to one use: reset and kept when the use ends, even by a panic.
struct Lent<'d> {
    cctx: Option<CCtx<'d>>,
    took: u64,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let Some(mut cctx) = self.cctx.take() else {
            return;
        };
        // A context that cannot be reset is dropped, not kept: it may still reference the
        // prefix or dictionary of this use.
        if cctx.reset(ResetDirective::SessionAndParameters).is_err() {
            return;
        }
        // SAFETY: only the lifetime changes (the same type, the same layout). What a context
        // borrows through zstd-safe's API is a prefix or a dictionary (`ref_prefix`,
        // `ref_cdict`; this workspace builds zstd without `zstdmt`, so `ref_thread_pool` is
        // not there), and the reset above made zstd let go of both
        // (`ZSTD_reset_session_and_parameters` calls `ZSTD_clearAllDicts`). The window's
        // pointers into the last frame's bytes stay until the next frame starts, which resets
        // them before any read; every safe compression call starts a frame (the `unsafe`
        // `compress_block`, which would not, is never called).
        #[allow(unsafe_code)]
        let cctx = unsafe { std::mem::transmute::<CCtx<'_>, CCtx<'static>>(cctx) };
        let took = self.took;
        // Best effort: a thread whose storage is being torn down drops the context instead.
        let _ = KEPT.try_with(|k| {
            let mut k = k.borrow_mut();
            if k.is_none() {
                *k = Some(Kept { cctx, took });
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zstd::zstd_safe::CParameter;

    fn text(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Words from a small vocabulary, so there is something to match.
                if i % 7 == 6 {
                    b' '
                } else {
                    b"abcdefgh"[(x >> 60) as usize % 8]
                }
            })
            .collect()
    }

    fn compress<'d>(
        cctx: &mut CCtx<'d>,
        prefix: Option<&'d [u8]>,
        src: &[u8],
        hash_log: u32,
    ) -> Vec<u8> {
        cctx.set_parameter(CParameter::CompressionLevel(3)).unwrap();
        cctx.set_parameter(CParameter::HashLog(hash_log)).unwrap();
        cctx.set_parameter(CParameter::WindowLog(23)).unwrap();
        if let Some(p) = prefix {
            cctx.ref_prefix(p).unwrap();
        }
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(src.len()));
        cctx.compress2(&mut out, src).unwrap();
        out
    }

    /// A frame's prefix or prepared dictionary, its body, its hash log (0: the level's own),
    /// and whether it has a wide window and long-distance matching.
    type Use<'u> = (
        Option<Vec<u8>>,
        Option<&'u zstd::zstd_safe::CDict<'static>>,
        Vec<u8>,
        u32,
        bool,
    );

    fn run<'d>(cctx: &mut CCtx<'d>, u: &'d Use<'d>) -> Vec<u8> {
        let (prefix, cdict, src, hash_log, wide) = u;
        cctx.set_parameter(CParameter::CompressionLevel(3)).unwrap();
        if *hash_log > 0 {
            cctx.set_parameter(CParameter::HashLog(*hash_log)).unwrap();
        }
        cctx.set_parameter(CParameter::WindowLog(23)).unwrap();
        if *wide {
            cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
                .unwrap();
        }
        if let Some(p) = prefix {
            cctx.ref_prefix(p).unwrap();
        }
        if let Some(d) = cdict {
            cctx.ref_cdict(d).unwrap();
        }
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(src.len()));
        cctx.compress2(&mut out, src).unwrap();
        out
    }

    #[test]
    fn a_kept_context_compresses_as_a_new_one() {
        use zstd::zstd_safe::CDict;
        let dict = text(9, 300_000);
        let small = CDict::create(&dict[..10_000], 3);
        let large = CDict::create(&dict, 3);
        // Each use as the writer's kinds of frame set it up: against a prefix, alone, alone
        // with a wide window and long-distance matching, against a prepared dictionary (zstd
        // copies its tables into the context for the 400 KB body, attaches them for the 8 KB
        // one).
        let uses: Vec<Use<'_>> = vec![
            (Some(text(1, 600_000)), None, text(1, 500_000), 20, false),
            (None, None, text(2, 300_000), 17, false),
            (None, None, text(6, 3_000_000), 0, true),
            (Some(text(3, 200_000)), None, text(3, 900_000), 19, false),
            (None, Some(&large), text(9, 400_000), 0, false),
            (None, Some(&small), text(9, 8_000), 0, false),
            (Some(text(1, 600_000)), None, text(4, 100_000), 20, false),
            (None, None, text(5, 2_000_000), 20, false),
        ];
        for u in &uses {
            // A frame that did not fit its room first, as `frame` meets one: the context is
            // reset after it all the same.
            with(u.2.len(), |c| {
                c.set_parameter(CParameter::CompressionLevel(3)).unwrap();
                let mut tiny = Vec::with_capacity(16);
                assert!(c.compress2(&mut tiny, &u.2).is_err());
            });
            let kept = with(u.2.len(), |c| run(c, u));
            let new = run(&mut CCtx::create(), u);
            assert_eq!(kept, new);
        }
        // The same context went round: it is kept between uses.
        assert!(KEPT.with(|k| k.borrow().as_ref().is_some_and(|k| k.took > 6_000_000)));
    }

    #[test]
    fn a_context_that_took_in_enough_is_made_afresh() {
        with(FRESH_AFTER as usize - 10, |_| ());
        assert!(KEPT.with(|k| k.borrow().as_ref().unwrap().took) == FRESH_AFTER - 10);
        with(100, |_| ());
        assert_eq!(KEPT.with(|k| k.borrow().as_ref().unwrap().took), 100);
    }

    #[test]
    fn a_use_that_panics_leaves_a_clean_context() {
        let prefix = text(7, 100_000);
        let src = text(7, 100_000);
        let r = std::panic::catch_unwind(|| {
            with(0, |c| {
                c.ref_prefix(&prefix).unwrap();
                panic!("a use that fails");
            })
        });
        assert!(r.is_err());
        // Kept, without the prefix: it compresses as a new context does without one.
        let kept = with(0, |c| compress(c, None, &src, 17));
        assert_eq!(kept, compress(&mut CCtx::create(), None, &src, 17));
    }
}
