//! Listing OpenCode's sessions without reading a conversation: one query of the `session`
//! table of the database, opened in place (with its WAL, which holds rows not yet in the main
//! file). Each session is an entry; a sub-agent session (`parent_id`) is an entry whose parent
//! is its parent's.

use std::path::Path;

use asp_format::name::SessionId;
use rusqlite::{Connection, OpenFlags};

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::source::SourceFile;

/// What reading one session needs: its id in the database (the read opens it again).
#[derive(Debug)]
pub struct Plan {
    pub id: String,
}

/// How long a read waits for an OpenCode that holds the database's lock.
const BUSY: std::time::Duration = std::time::Duration::from_secs(5);

/// The database opened read-only in place. With a `-wal` beside it SQLite reads the WAL too
/// (and keeps its `-shm` index, as OpenCode does); without one the file is opened immutable,
/// so a read leaves nothing behind in the user's store.
pub fn open(layout: &Layout) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if layout.wal().exists() {
        Connection::open_with_flags(&layout.db, flags)?
    } else {
        let uri = format!("file:{}?immutable=1", uri_path(&layout.db));
        Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)?
    };
    conn.busy_timeout(BUSY)?;
    Ok(conn)
}

/// `path` with the characters a URI gives meaning to escaped.
fn uri_path(path: &Path) -> String {
    let s = path.to_string_lossy();
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' | '?' | '#' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Whether another program holds the database's lock past [`BUSY`]: a moment's state of the
/// store, not damage. A read or write that meets it fails as a whole (exit 1, nothing
/// written), where a lost read would give a bundle of no sessions (exit 3) that `--force`
/// put over a good one, and a write would try each session for [`BUSY`] and call every one
/// lost (new-user trial helper-131, 7).
pub fn is_locked(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// [`is_locked`], as the error that ends the read or write.
pub fn locked(db: &Path, e: &rusqlite::Error) -> ConvertError {
    ConvertError::io(db)(std::io::Error::new(
        std::io::ErrorKind::ResourceBusy,
        format!(
            "{}; try again when it is free (what was written before it is there, and the next \
             run finds it already there)",
            explain(e)
        ),
    ))
}

/// Says what went wrong with the database in words a person acts on.
pub fn explain(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            format!("the database is locked by another program (OpenCode running?): {e}")
        }
        Some(rusqlite::ErrorCode::NotADatabase) => format!("not an SQLite database: {e}"),
        _ => e.to_string(),
    }
}

pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let d = ctx.diagnostics;
    if !layout.db.is_file() {
        return Ok(Survey::of(Vec::new()));
    }
    let mut files =
        vec![SourceFile::stat(&layout.db, false).map_err(ConvertError::io(&layout.db))?];
    if let Ok(w) = SourceFile::stat(&layout.wal(), false) {
        files.push(w);
    }
    let rows = open(layout).and_then(|conn| {
        let has: bool = conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session')",
            [],
            |r| r.get(0),
        )?;
        if !has {
            return Ok(None);
        }
        if let Some(why) = super::migrations::mismatch(&conn)? {
            d.note(
                &layout.db,
                None,
                format!(
                    "{why}; its sessions are read as their rows are, and asp writes none into it"
                ),
            );
        }
        let mut stmt = conn.prepare(
            "SELECT s.id, s.parent_id, s.time_updated, \
             (SELECT max(m.time_updated) FROM message m WHERE m.session_id = s.id), \
             (SELECT count(*) FROM message m WHERE m.session_id = s.id), \
             (SELECT max(p.time_updated) FROM part p WHERE p.session_id = s.id), \
             (SELECT count(*) FROM part p WHERE p.session_id = s.id) \
             FROM session s ORDER BY s.time_created, s.id",
        )?;
        let list = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    format!(
                        "{:?}|{:?}|{:?}|{:?}|{:?}",
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, Option<i64>>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, Option<i64>>(5)?,
                        r.get::<_, i64>(6)?,
                    ),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Some(list))
    });
    let rows = match rows {
        Ok(Some(r)) => r,
        Ok(None) => {
            d.lost(
                &layout.db,
                None,
                "the database has no session table (OpenCode itself refuses it: \"Database is \
                 not empty and has no session table\"); nothing read",
            );
            return Ok(Survey::of(Vec::new()));
        }
        Err(e) if is_locked(&e) => return Err(locked(&layout.db, &e)),
        Err(e) => {
            d.lost(&layout.db, None, format!("{}; nothing read", explain(&e)));
            return Ok(Survey::of(Vec::new()));
        }
    };
    let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let mut out = Vec::new();
    for (id, parent, facts) in &rows {
        let sid = match SessionId::new(id) {
            Ok(s) => s,
            Err(e) => {
                d.lost(
                    &layout.db,
                    None,
                    format!("session row {id:?}: {e}; skipped"),
                );
                continue;
            }
        };
        let parent = parent
            .as_deref()
            .filter(|p| ids.contains(p))
            .and_then(|p| SessionId::new(p).ok());
        let facts = format!("{id}|{parent:?}|{facts}");
        out.push(
            Surveyed::new(
                sid,
                files.clone(),
                facts.as_bytes(),
                Plan { id: id.clone() },
            )
            .with_parent(parent),
        );
    }
    Ok(Survey::of(out))
}
