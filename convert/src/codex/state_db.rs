//! `state_<N>.sqlite`, Codex's thread index (spec/harnesses/codex.md §9.3).
//!
//! Codex keeps one `threads` row per rollout and, for legacy rollouts, repairs missing rows
//! itself when it lists threads; paginated threads and some builds' `codex resume <id>` need the
//! row. So a writer adds a row for each thread it writes, but only where Codex already made
//! the database (never creating one: that would skip Codex's migrations), only with the
//! columns the table has (the schema changes between releases), in one transaction of the
//! writer ([`Writer::sqlite`]: rolled back in a dry run), never touching other rows, and
//! waiting politely for a running Codex that holds the lock.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags, params_from_iter};

use crate::kit::fsops::Writer;

/// How long to wait for a Codex that holds the database lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The newest `state_<N>.sqlite` in `codex_home`.
pub fn find(codex_home: &Path) -> Option<PathBuf> {
    let mut best: Option<(u32, PathBuf)> = None;
    for entry in std::fs::read_dir(codex_home).ok()?.flatten() {
        let name = entry.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("state_"))
            .and_then(|n| n.strip_suffix(".sqlite"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| n > *b) {
            best = Some((n, entry.path()));
        }
    }
    best.map(|(_, p)| p)
}

/// What the index says about a thread, where reading can use it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thread {
    /// `name` (paginated renames).
    pub name: Option<String>,
    /// `title` (legacy renames live here; otherwise the first prompt).
    pub title: Option<String>,
    pub first_user_message: Option<String>,
    pub archived: bool,
}

fn columns(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('threads')")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// Every thread of the index, read-only.
pub fn read(path: &Path) -> rusqlite::Result<HashMap<String, Thread>> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let cols = columns(&conn)?;
    let pick = |c: &str| {
        if cols.contains(c) {
            c.to_owned()
        } else {
            "NULL".to_owned()
        }
    };
    let sql = format!(
        "SELECT id, {}, {}, {}, {} FROM threads",
        pick("name"),
        pick("title"),
        pick("first_user_message"),
        pick("archived")
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Thread {
                name: r.get(1)?,
                title: r.get(2)?,
                first_user_message: r.get(3)?,
                archived: r.get::<_, Option<i64>>(4)?.unwrap_or(0) != 0,
            },
        ))
    })?;
    rows.collect()
}

/// A row to add: values by column name. Columns the table lacks are left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub values: Vec<(&'static str, Sql)>,
}

impl Row {
    pub fn set(&mut self, column: &'static str, value: impl Into<Sql>) {
        self.values.push((column, value.into()));
    }

    pub fn get(&self, column: &str) -> Option<&Sql> {
        self.values
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, v)| v)
    }
}

/// What adding a row did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Insert {
    Added,
    /// A row with that id is there already; it was left as it is.
    AlreadyThere,
    /// The database has no `threads` table (another program's file, or a future schema).
    NoTable,
}

/// Adds `row` (which must have an `id`) to `threads` in one transaction of the writer (rolled
/// back in a dry run, which so answers exactly like the real run).
pub fn insert(writer: &Writer, path: &Path, row: &Row) -> rusqlite::Result<Insert> {
    writer.sqlite(path, |tx| insert_in(tx, row))
}

fn insert_in(tx: &Connection, row: &Row) -> rusqlite::Result<Insert> {
    let cols = columns(tx)?;
    if cols.is_empty() {
        return Ok(Insert::NoTable);
    }
    let id = row.get("id").cloned().unwrap_or(Sql::Null);
    let exists: bool = tx.query_row(
        "SELECT EXISTS(SELECT 1 FROM threads WHERE id = ?1)",
        [&id],
        |r| r.get(0),
    )?;
    if exists {
        return Ok(Insert::AlreadyThere);
    }
    let present: Vec<&(&str, Sql)> = row
        .values
        .iter()
        .filter(|(c, _)| cols.contains(*c))
        .collect();
    let names: Vec<&str> = present.iter().map(|(c, _)| *c).collect();
    let marks: Vec<String> = (1..=present.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO threads ({}) VALUES ({})",
        names.join(", "),
        marks.join(", ")
    );
    tx.execute(&sql, params_from_iter(present.iter().map(|(_, v)| v)))?;
    Ok(Insert::Added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_use_only_the_columns_the_table_has_and_never_touch_others() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state_5.sqlite");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, title TEXT NOT NULL, preview TEXT NOT NULL DEFAULT '');
             INSERT INTO threads VALUES ('other', '/x', 'Other', 'p');",
        )
        .unwrap();
        drop(conn);
        assert_eq!(find(dir.path()), Some(db.clone()));
        let mut row = Row::default();
        row.set("id", "t1".to_owned());
        row.set("rollout_path", "/r".to_owned());
        row.set("title", "Hello".to_owned());
        row.set("column_from_the_future", 1i64);
        // A dry run makes the same checks and inserts, and leaves the database as it was.
        let before = std::fs::read(&db).unwrap();
        assert_eq!(
            insert(&Writer::new(true), &db, &row).unwrap(),
            Insert::Added
        );
        assert_eq!(
            insert(&Writer::new(true), &db, &row).unwrap(),
            Insert::Added
        );
        assert_eq!(std::fs::read(&db).unwrap(), before);
        assert!(!db.with_extension("sqlite-journal").exists());
        let w = Writer::new(false);
        assert_eq!(insert(&w, &db, &row).unwrap(), Insert::Added);
        assert_eq!(insert(&w, &db, &row).unwrap(), Insert::AlreadyThere);
        let threads = read(&db).unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads["t1"].title.as_deref(), Some("Hello"));
        assert_eq!(threads["other"].title.as_deref(), Some("Other"));
    }
}
