//! Which migrations a database has had (spec §2.3): OpenCode 1.18.33 records the id of each
//! migration it ran in the `migration` table (older OpenCode: drizzle's
//! `__drizzle_migrations`) and runs, at its next start, every known one not recorded. A
//! migration whose effect is there but whose row is missing (a half-migrated file) makes that
//! start fail (`duplicate column name: path`, measured); a database with ids 1.18.33 does not
//! know was made by a newer OpenCode, whose schema asp does not know. asp writes only into a
//! database whose migrations are exactly those of the pinned version.

use rusqlite::Connection;

use super::write::SCHEMA;

/// The ids of the migrations OpenCode 1.18.33 records, in order (from [`SCHEMA`]'s rows).
pub fn known() -> Vec<&'static str> {
    SCHEMA
        .lines()
        .filter_map(|l| l.strip_prefix("INSERT INTO migration (id, time_completed) VALUES ('"))
        .filter_map(|l| l.split_once('\'').map(|(id, _)| id))
        .collect()
}

fn table_exists(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [name],
        |r| r.get(0),
    )
}

/// `Ok(None)` when the database's migrations are exactly those of OpenCode 1.18.33, else why
/// asp must not write into it, in words naming the table and the rows.
pub fn mismatch(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let known = known();
    if !table_exists(conn, "migration")? {
        let old = table_exists(conn, "__drizzle_migrations")?;
        return Ok(Some(if old {
            "the database was last opened by an OpenCode older than 1.18 (it has drizzle's \
             __drizzle_migrations table and no migration table); run OpenCode 1.18.33 once so \
             it migrates the database, then import again"
                .to_owned()
        } else {
            "the database has no migration table, so which schema it has is not known; run \
             OpenCode 1.18.33 once, then import again"
                .to_owned()
        }));
    }
    let mut stmt = conn.prepare("SELECT id FROM migration ORDER BY id")?;
    let have = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let missing: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| !have.iter().any(|h| h == k))
        .collect();
    let unknown: Vec<&str> = have
        .iter()
        .map(String::as_str)
        .filter(|h| !known.contains(h))
        .collect();
    let some = |l: &[&str]| match l {
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} and {} more", rest.len()),
        [] => String::new(),
    };
    if !unknown.is_empty() {
        return Ok(Some(format!(
            "the database was migrated by a newer OpenCode than 1.18.33 (migration row {} is \
             not one 1.18.33 knows), so its schema is not the one asp writes",
            some(&unknown)
        )));
    }
    if !missing.is_empty() {
        return Ok(Some(format!(
            "the database is half-migrated or from an older OpenCode: the migration table has \
             no row for {} of the {} migrations of OpenCode 1.18.33, which OpenCode would run \
             (or stop on) at its next start; run OpenCode 1.18.33 once, and if it stops, \
             repair the database, then import again",
            some(&missing),
            known.len()
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_version_knows_38_migrations() {
        let k = known();
        assert_eq!(k.len(), 38);
        assert_eq!(k[0], "20260127222353_familiar_lady_ursula");
        assert_eq!(k[37], "20260622202450_simplify_session_input");
    }

    #[test]
    fn a_fresh_database_fits_and_a_missing_or_unknown_row_does_not() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        assert_eq!(mismatch(&conn).unwrap(), None);
        conn.execute(
            "DELETE FROM migration WHERE id = '20260428004200_add_session_path'",
            [],
        )
        .unwrap();
        let why = mismatch(&conn).unwrap().unwrap();
        assert!(why.contains("half-migrated"), "{why}");
        assert!(why.contains("20260428004200_add_session_path"), "{why}");
        conn.execute(
            "INSERT INTO migration VALUES ('20260428004200_add_session_path', 1), \
             ('20270101000000_future', 2)",
            [],
        )
        .unwrap();
        let why = mismatch(&conn).unwrap().unwrap();
        assert!(why.contains("newer OpenCode"), "{why}");
        conn.execute_batch("DROP TABLE migration; CREATE TABLE __drizzle_migrations (id INTEGER);")
            .unwrap();
        assert!(
            mismatch(&conn)
                .unwrap()
                .unwrap()
                .contains("__drizzle_migrations")
        );
    }
}
