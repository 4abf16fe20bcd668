//! Thread ids: Codex names every thread by a UUID (v7 in current builds) and finds a thread by
//! the UUID at the end of its rollout file name, so a session carried in from a harness whose
//! ids are not UUIDs (`telegram:42`) needs a new one.
//!
//! New ids are derived, not random: the same session imported twice gets the same id, so the
//! second import finds its own earlier copy and answers "already there" instead of piling up
//! duplicates. They keep the UUIDv7 layout (48-bit millisecond time first) so Codex, which
//! sorts v7 ids by time, places them where the conversation happened.

use sha2::{Digest, Sha256};

/// Whether `s` is a UUID in Codex's spelling: lowercase hex, 8-4-4-4-12.
pub fn is_uuid(s: &str) -> bool {
    crate::kit::uuid::is_uuid(s) && !s.bytes().any(|b| b.is_ascii_uppercase())
}

/// A UUIDv7-shaped id: `millis` in the time field, the rest from SHA-256 of `seed`.
pub fn derive_v7(millis: i64, seed: &[u8]) -> String {
    let h = Sha256::digest(seed);
    let mut b = [0u8; 16];
    let ms = (millis.max(0) as u64) & 0xFFFF_FFFF_FFFF;
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6..].copy_from_slice(&h[..10]);
    b[6] = 0x70 | (b[6] & 0x0F);
    b[8] = 0x80 | (b[8] & 0x3F);
    crate::kit::uuid::format(&b)
}

/// The millisecond time in a UUIDv7 (`None` for other versions).
pub fn v7_millis(id: &str) -> Option<i64> {
    if !is_uuid(id) || id.as_bytes()[14] != b'7' {
        return None;
    }
    let hex: String = id.chars().filter(|c| *c != '-').take(12).collect();
    i64::from_str_radix(&hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_are_stable_v7_uuids() {
        let a = derive_v7(1_795_269_800_300, b"claude-code\0telegram:42");
        assert!(is_uuid(&a), "{a}");
        assert_eq!(&a[14..15], "7");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(a, derive_v7(1_795_269_800_300, b"claude-code\0telegram:42"));
        assert_ne!(a, derive_v7(1_795_269_800_300, b"claude-code\0telegram:43"));
        assert_eq!(v7_millis(&a), Some(1_795_269_800_300));
        assert_eq!(
            v7_millis("01a1fe6b-30a4-77a2-b12a-76a63dd1d7e5"),
            Some(0x01a1fe6b30a4)
        );
    }

    #[test]
    fn only_lowercase_hyphenated_uuids_count() {
        assert!(is_uuid("da41f528-2d0a-4f84-8acd-fe5d7087734b"));
        assert!(!is_uuid("DA41F528-2D0A-4F84-8ACD-FE5D7087734B"));
        assert!(!is_uuid("telegram:42"));
        assert!(!is_uuid("da41f5282d0a4f848acdfe5d7087734b"));
    }
}
