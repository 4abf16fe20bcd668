//! Reversible file names for arbitrary ids (`telegram:42` → `telegram%3A42`).

/// Bytes kept as they are; everything else becomes `%XX` (uppercase hex of each UTF-8 byte).
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// Longest escaped name used as is; longer ones are cut and suffixed with a hash, and the
/// real id lives in the session's `.json`.
const MAX_NAME: usize = 200;

/// A portable file name for `id`: `[A-Za-z0-9._-]` kept, every other byte `%XX`, plus a
/// leading `.` and the first letter of a Windows device name (`con`, `nul`, `com1`, ...)
/// escaped. Escaping is reversible by [`unescape`] unless the result would be longer than 200
/// bytes, in which case it is cut and ends in `~` and a hash of the id.
pub fn escape(id: &str) -> String {
    let bytes = id.as_bytes();
    let mut tokens: Vec<String> = bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let edge_dot = b == b'.' && (i == 0 || i + 1 == bytes.len());
            if plain(b) && !edge_dot {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let joined: String = tokens.concat();
    if asp_format::name::is_device_name(&joined) {
        tokens[0] = format!("%{:02X}", bytes[0]);
    }
    let out: String = tokens.concat();
    if out.len() <= MAX_NAME {
        return out;
    }
    let mut cut = String::new();
    for t in &tokens {
        if cut.len() + t.len() > MAX_NAME - 17 {
            break;
        }
        cut.push_str(t);
    }
    format!("{cut}~{}", fnv1a(id))
}

/// 64-bit FNV-1a, only to keep cut names of different ids apart.
fn fnv1a(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The id an [`escape`]d name stands for, or `None` if the name is not one `escape` makes
/// reversibly.
pub fn unescape(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = name.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if plain(b) => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn common_ids() {
        assert_eq!(escape("telegram:42"), "telegram%3A42");
        assert_eq!(
            escape("da41f528-2d0a-4f84-8acd-fe5d7087734b"),
            "da41f528-2d0a-4f84-8acd-fe5d7087734b"
        );
        assert_eq!(escape(".."), "%2E%2E");
        assert_eq!(escape("a/b"), "a%2Fb");
        assert_eq!(escape("con"), "%63on");
        assert_eq!(escape("100%"), "100%25");
        assert_eq!(unescape("telegram%3A42").as_deref(), Some("telegram:42"));
    }

    #[test]
    fn long_ids_are_cut_with_a_hash() {
        let id = "x".repeat(600);
        let e = escape(&id);
        assert!(e.len() <= 200, "{}", e.len());
        assert_ne!(e, escape(&"x".repeat(601)));
    }

    proptest! {
        #[test]
        fn escaping_is_reversible_and_portable(id in "\\PC{1,60}") {
            let e = escape(&id);
            prop_assert!(asp_format::name::RelPath::new(&e).is_ok(), "{e:?} is not a portable name");
            prop_assert!(!e.contains('/'));
            prop_assert!(e.len() <= MAX_NAME);
            if e.contains('~') {
                prop_assert_eq!(unescape(&e), None, "cut names are not read back as ids");
            } else {
                prop_assert_eq!(unescape(&e), Some(id));
            }
        }
    }
}
