//! Reading one surveyed session from the database: its rows (the native layer, as row
//! documents, so a restore into OpenCode is row-exact) and its stream ([`super::replay`]).

use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{FileEntry, Meta, Native, Session};
use asp_format::update::UpdateWriter;
use rusqlite::Connection;
use serde_json::{Value, json};

use super::NAME;
use super::layout::Layout;
use super::replay::{self, Summary};
use super::rows::{Row, select};
use super::survey::{Plan, explain, open};
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::{meta, time};

/// Every row a session's restore needs (spec §11), in the order they are inserted: what a
/// row points to before it. `session_share` (a write token) and credentials never travel.
pub fn session_rows(conn: &Connection, id: &str) -> rusqlite::Result<Vec<(Row, bool)>> {
    let mut out = select(conn, "session", "id = ?1", &[&id], "id")?;
    if let Some((s, _)) = out.first() {
        let project = s.text("project_id").unwrap_or("").to_owned();
        let dir = s.text("directory").unwrap_or("").to_owned();
        let mut head = select(conn, "project", "id = ?1", &[&project], "id")?;
        head.extend(select(
            conn,
            "project_directory",
            "project_id = ?1 AND directory = ?2",
            &[&project, &dir],
            "directory",
        )?);
        head.append(&mut out);
        out = head;
    }
    out.extend(select(
        conn,
        "message",
        "session_id = ?1",
        &[&id],
        "time_created, id",
    )?);
    out.extend(select(
        conn,
        "part",
        "session_id = ?1",
        &[&id],
        "message_id, id",
    )?);
    out.extend(select(conn, "todo", "session_id = ?1", &[&id], "position")?);
    out.extend(select(
        conn,
        "event_sequence",
        "aggregate_id = ?1",
        &[&id],
        "aggregate_id",
    )?);
    out.extend(select(conn, "event", "aggregate_id = ?1", &[&id], "seq")?);
    Ok(out)
}

pub fn read_session(
    layout: &Layout,
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let d = ctx.diagnostics;
    let db = &layout.db;
    let rows = match open(layout).and_then(|c| session_rows(&c, &plan.id)) {
        Ok(r) => r,
        Err(e) if super::survey::is_locked(&e) => return Err(super::survey::locked(db, &e)),
        Err(e) => {
            d.lost(
                db,
                None,
                format!("session {}: {}; not carried", plan.id, explain(&e)),
            );
            return Ok(Vec::new());
        }
    };
    let Some(session) = rows
        .iter()
        .find(|(r, _)| r.table == "session")
        .map(|(r, _)| r.clone())
    else {
        d.lost(
            db,
            None,
            format!("session {} is gone since the survey; not carried", plan.id),
        );
        return Ok(Vec::new());
    };
    for (r, bad) in &rows {
        if *bad {
            d.note(
                db,
                None,
                format!(
                    "table {} row {}: text that is not UTF-8 was read with U+FFFD in its place \
                     (as OpenCode shows it)",
                    r.table,
                    r.path()
                ),
            );
        }
    }

    // The native layer: every row as its document.
    let rel = layout.db_rel();
    let files = if ctx.options.native {
        let mut files = Vec::new();
        for (r, _) in &rows {
            let content = ctx.blobs.put(&r.document())?;
            match RelPath::new(&format!("{rel}/{}", r.path())) {
                Ok(path) => files.push(FileEntry {
                    path,
                    executable: false,
                    content,
                }),
                Err(e) => d.lost(db, None, format!("row {} cannot be named: {e}", r.path())),
            }
        }
        Some(files)
    } else {
        None
    };

    // The conversation: messages in order, each with its parts, up to a pending revert.
    let revert: Option<Value> = session
        .text("revert")
        .and_then(|t| serde_json::from_str(t).ok());
    let stop = revert
        .as_ref()
        .and_then(|r| r.get("messageID"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut summary = Summary::default();
    let mut updates = Vec::new();
    let mut reverted = 0usize;
    let mut stopped = false;
    let parse = |r: &Row| -> Option<Value> {
        let text = r.text("data")?;
        match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_object() => Some(v),
            _ => {
                // Named by the row's own native file (under the database's path), so the
                // damage is kept natively with the session and said lost where it is composed.
                d.damaged(
                    &db.join(r.path()),
                    None,
                    format!(
                        "table {} row {}: its data is not a JSON object (OpenCode cannot load \
                         it either); left out of session {}",
                        r.table,
                        r.text("id").unwrap_or("?"),
                        plan.id
                    ),
                );
                None
            }
        }
    };
    let parts: Vec<&Row> = rows
        .iter()
        .filter(|(r, _)| r.table == "part")
        .map(|(r, _)| r)
        .collect();
    for (m, _) in rows.iter().filter(|(r, _)| r.table == "message") {
        let mid = m.text("id").unwrap_or("");
        if stopped || stop.as_deref() == Some(mid) {
            stopped = true;
            reverted += 1;
            continue;
        }
        let Some(mut info) = parse(m) else { continue };
        info["id"] = json!(mid);
        let mine: Vec<Value> = parts
            .iter()
            .filter(|p| p.text("message_id") == Some(mid))
            .filter_map(|p| {
                let mut v = parse(p)?;
                v["id"] = json!(p.text("id"));
                Some(v)
            })
            .collect();
        replay::message(&info, &mine, &mut updates, &mut summary);
    }
    let sid = entry.id.as_str().to_owned();
    let mut w = UpdateWriter::new(ctx.blobs)?;
    for u in &updates {
        w.push(&u.notification(&sid))?;
    }
    let updates = w.finish()?;

    let mut oc = summary.meta;
    for col in ["slug", "project_id", "version", "agent", "parent_id"] {
        if let Some(v) = session.text(col) {
            oc.insert(camel(col), json!(v));
        }
    }
    if let Some(m) = session
        .text("model")
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
    {
        oc.insert("model".into(), m);
    }
    if let Some(a) = session.int("time_archived") {
        oc.insert(
            "archivedAt".into(),
            json!(time::format_millis(time::from_millis(a))),
        );
    }
    if let Some(r) = revert {
        oc.insert("revert".into(), r);
        oc.insert("revertedMessages".into(), json!(reverted));
    }
    let mut smeta: Option<Meta> = Some(Meta::new());
    if let Some(p) = session.text("parent_id") {
        meta::set_parent(&mut smeta, &meta::Parent::new(p));
    }
    let mut smeta = smeta.unwrap_or_default();
    smeta.insert("opencode".into(), Value::Object(oc));
    let harness = HarnessName::new(NAME).expect("a valid harness name");
    Ok(vec![Session {
        id: entry.id.clone(),
        title: session.text("title").unwrap_or("").to_owned(),
        harness: Some(harness.clone()),
        cwd: session.text("directory").map(str::to_owned),
        updated_at: session
            .int("time_updated")
            .map(|t| time::format_millis(time::from_millis(t))),
        updates,
        native: files.map(|files| Native { harness, files }),
        meta: Some(smeta),
    }])
}

fn camel(col: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in col.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}
