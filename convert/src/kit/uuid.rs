//! UUIDs in the text form harnesses key their sessions by.
//!
//! Claude Code lists only transcripts whose file stem is a UUID, Codex finds a thread by the
//! UUID at the end of its rollout name, and Gemini names chats after the first 8 characters of
//! one. A session carried in from a harness with other ids (`telegram:42`) therefore needs a
//! UUID, and it is derived from the id rather than drawn at random: the same session imported
//! twice gets the same id, so the second import finds its own earlier copy.

use asp_format::Digest;

/// Whether `s` is a UUID in its canonical 8-4-4-4-12 hex form (any version, either case).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The canonical lowercase text of 16 bytes.
pub fn format(b: &[u8; 16]) -> String {
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A name-based UUID: the first 16 bytes of `sha256(namespace + name)` with the RFC 9562
/// version 8 ("custom") and variant bits. Each converter uses its own namespace, so the same
/// name carried into two harnesses gets two ids.
pub fn name_based(namespace: &str, name: &str) -> String {
    let d = Digest::of(format!("{namespace}{name}").as_bytes());
    let mut b: [u8; 16] = d.as_bytes()[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    format(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_based_ids_are_stable_version_8_uuids() {
        let a = name_based("asp/test/", "telegram:42");
        assert!(is_uuid(&a), "{a}");
        assert_eq!(a, name_based("asp/test/", "telegram:42"));
        assert_ne!(a, name_based("asp/other/", "telegram:42"));
        assert_eq!(&a[14..15], "8");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert!(!is_uuid("71958462-4bb8-46b6-a36a-1becf56c22dc~codex"));
        assert!(is_uuid("71958462-4BB8-46b6-a36a-1becf56c22dc"));
    }
}
