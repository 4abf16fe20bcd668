//! OpenCode's ids (spec §3): `<prefix>_<12 hex><14 base62>`, the hex being 48 bits of
//! `ms × 4096 + counter`, inverted for sessions (newest sorts first). Ids of composed rows take
//! their random part from a hash of the source's names, so carrying the same session twice
//! gives the same ids and finds the first copy.

use sha2::{Digest, Sha256};

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// 14 base62 characters from the hash of `name`.
fn tail(name: &str) -> String {
    let h = Sha256::digest(name.as_bytes());
    h.iter()
        .take(14)
        .map(|b| BASE62[(*b as usize) % 62] as char)
        .collect()
}

const MASK: u64 = (1 << 48) - 1;

/// A session id for `name` created at `ms` (descending).
pub fn session(name: &str, ms: i64) -> String {
    let t = (ms.max(0) as u64).wrapping_mul(4096) & MASK;
    format!("ses_{:012x}{}", !t & MASK, tail(name))
}

/// A message or part id (`prefix` `msg`/`prt`) for the `n`-th of `name` at `ms` (ascending).
pub fn ascending(prefix: &str, name: &str, ms: i64, n: u64) -> String {
    let t = ((ms.max(0) as u64).wrapping_mul(4096) + n) & MASK;
    format!("{prefix}_{t:012x}{}", tail(&format!("{name}/{prefix}/{n}")))
}

/// A slug of two words from the name, as OpenCode's own (`jolly-canyon`) are.
pub fn slug(name: &str) -> String {
    const A: &[&str] = &[
        "brave", "calm", "eager", "gentle", "quiet", "swift", "tidy", "witty",
    ];
    const B: &[&str] = &[
        "river", "canyon", "meadow", "harbor", "forest", "summit", "garden", "comet",
    ];
    let h = Sha256::digest(name.as_bytes());
    format!(
        "{}-{}",
        A[h[0] as usize % A.len()],
        B[h[1] as usize % B.len()]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_as_opencode_sorts_them() {
        let a = session("a", 1_796_170_673_394);
        let b = session("a", 1_796_170_673_395);
        assert!(b < a, "a newer session sorts first");
        assert_eq!(a.len(), 4 + 12 + 14);
        assert!(ascending("msg", "x", 5, 1) < ascending("msg", "x", 5, 2));
        assert!(ascending("msg", "x", 5, 4095) < ascending("msg", "x", 6, 0));
        assert_eq!(session("a", 7), session("a", 7));
    }
}
