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
//! indices where zstd would correct them for overflow in the middle of a frame (about 3.5
//! GiB), whose exact point would depend on the context's history.

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
    let kept = KEPT
        .with(|k| k.borrow_mut().take())
        .filter(|k| k.took.saturating_add(bytes) <= FRESH_AFTER);
    let (cctx, took) = match kept {
        Some(k) => (k.cctx, k.took),
        None => (CCtx::create(), 0),
    };
    // SAFETY: only the lifetime changes (the same type, the same layout). A `CCtx<'static>`
    // holds no borrowed prefix or dictionary: a new one holds none, and a kept one was reset
    // before it was kept (`Lent::drop`).
    #[allow(unsafe_code)]
    let cctx = unsafe { std::mem::transmute::<CCtx<'static>, CCtx<'d>>(cctx) };
    let mut lent = Lent {
        cctx: Some(cctx),
        took: took.saturating_add(bytes),
    };
    f(lent.cctx.as_mut().expect("lent until dropped"))
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
        // SAFETY: only the lifetime changes. The reset above made zstd let go of every prefix
        // and dictionary this use referenced (`ZSTD_reset_session_and_parameters` clears
        // them), so nothing borrowed for `'d` is reachable from the context any more.
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

    #[test]
    fn a_kept_context_compresses_as_a_new_one() {
        let uses: Vec<(Option<Vec<u8>>, Vec<u8>, u32)> = vec![
            (Some(text(1, 600_000)), text(1, 500_000), 20),
            (None, text(2, 300_000), 17),
            (Some(text(3, 200_000)), text(3, 900_000), 19),
            (Some(text(1, 600_000)), text(4, 100_000), 20),
            (None, text(5, 2_000_000), 20),
        ];
        for (prefix, src, hash_log) in &uses {
            let kept = with(src.len(), |c| {
                compress(c, prefix.as_deref(), src, *hash_log)
            });
            let new = compress(&mut CCtx::create(), prefix.as_deref(), src, *hash_log);
            assert_eq!(kept, new);
        }
        // The same context went round: it is kept between uses.
        assert!(KEPT.with(|k| k.borrow().as_ref().is_some_and(|k| k.took > 3_000_000)));
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
