//! Names in a Pi store: the per-cwd session directory, the file name, session and entry ids.
//!
//! Pi names a session with a UUID v7 and each entry with 8 hex characters. A state's ids are
//! any text, so one that is not a UUID gets a name-based UUID (the first 16 bytes of
//! `sha256("asp:pi:" + id)` with the version 8 bits): the same id always gives the same UUID,
//! so carrying a session again finds the file written last time. Entry ids of a written
//! session derive from its id and the entry's position, for the same reason.

use std::collections::HashSet;

use asp_format::Digest;

pub use crate::kit::uuid::is_uuid;

/// The name-based UUID (version 8) of `name`.
pub fn name_uuid(name: &str) -> String {
    crate::kit::uuid::name_based("asp:pi:", name)
}

/// The Pi session id for a state id: itself when it is a UUID, else its name-based UUID.
pub fn pi_id(id: &str) -> String {
    if is_uuid(id) {
        id.to_owned()
    } else {
        name_uuid(id)
    }
}

/// Pi's `getDefaultSessionDir` name for a cwd: one leading `/` or `\` dropped, `/`, `\` and
/// `:` turned into `-`, wrapped in `--`. Lossy (`/a-b` and `/a/b` meet); the header's `cwd`
/// is the real one.
pub fn session_dir(cwd: &str) -> String {
    let rest = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let body: String = rest
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// `<header time with ':' and '.' as '-'>_<id>.jsonl`. The time comes from a carried file, so
/// only one that parses as RFC 3339 is used, reformatted as Pi writes it (`toISOString`);
/// anything else (`/etc/x`, `../..`) gives the epoch, so the name is always one component.
pub fn file_name(timestamp: &str, id: &str) -> String {
    let stamp = crate::kit::time::parse(timestamp)
        .map_or_else(|| EPOCH.to_owned(), crate::kit::time::format_millis);
    let t: String = stamp
        .chars()
        .map(|c| if matches!(c, ':' | '.') { '-' } else { c })
        .collect();
    format!("{t}_{id}.jsonl")
}

const EPOCH: &str = "1970-01-01T00:00:00.000Z";

/// Entry ids for one written session: 8 hex of `sha256(session id + ":" + n)`, never one
/// already given in the file.
#[derive(Debug)]
pub struct EntryIds {
    session: String,
    n: u64,
    used: HashSet<String>,
}

impl EntryIds {
    pub fn new(session: &str) -> Self {
        EntryIds {
            session: session.to_owned(),
            n: 0,
            used: HashSet::new(),
        }
    }

    pub fn next(&mut self) -> String {
        loop {
            self.n += 1;
            let d = Digest::of(format!("{}:{}", self.session, self.n).as_bytes());
            let id = hex::encode(&d.as_bytes()[..4]);
            if self.used.insert(id.clone()) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_pi() {
        assert_eq!(session_dir("/home/dev/shop"), "--home-dev-shop--");
        assert_eq!(session_dir("C:\\work\\x"), "--C--work-x--");
        assert_eq!(
            file_name("2026-12-01T23:47:55.743Z", "01a2"),
            "2026-12-01T23-47-55-743Z_01a2.jsonl"
        );
        assert_eq!(
            pi_id("01a23401-fede-73bb-a519-9d9e83d26f55"),
            "01a23401-fede-73bb-a519-9d9e83d26f55"
        );
        assert!(is_uuid(&pi_id("telegram:42")));
        // A header time from a bundle never becomes a path.
        for hostile in ["/etc/cron.d/x", "../../x", "a\\b", ""] {
            assert_eq!(
                file_name(hostile, "01a2"),
                "1970-01-01T00-00-00-000Z_01a2.jsonl"
            );
        }
        assert_eq!(
            file_name("2026-12-01T23:47:55+01:00", "01a2"),
            "2026-12-01T22-47-55-000Z_01a2.jsonl"
        );
        let mut a = EntryIds::new("s");
        let (x, y) = (a.next(), a.next());
        assert_ne!(x, y);
        assert_eq!(x.len(), 8);
        assert_eq!(x, EntryIds::new("s").next());
    }
}
