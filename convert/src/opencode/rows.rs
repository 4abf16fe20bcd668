//! Database rows as they travel (spec/aspstate.md §8.1): one row document per row,
//! `<db>/<table>/<escaped key>.row.json` holding `{"table","key","row"}` with every column in
//! the table's order and each value by its SQLite storage class, so equal rows are equal bytes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rusqlite::Connection;
use rusqlite::types::{Value as Sql, ValueRef};
use serde_json::{Map, Value, json};

use crate::kit::escape::escape;

/// One row of one table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub table: String,
    /// The primary key's columns, in key order.
    pub key: Vec<String>,
    /// Every column with its value, in the table's column order.
    pub cols: Vec<(String, Sql)>,
}

/// A value of a column whose text is not UTF-8 (OpenCode shows U+FFFD for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotUtf8;

/// A column value as it is stored, from a row being read.
pub fn owned(v: ValueRef<'_>) -> (Sql, Option<NotUtf8>) {
    match v {
        ValueRef::Null => (Sql::Null, None),
        ValueRef::Integer(i) => (Sql::Integer(i), None),
        ValueRef::Real(r) => (Sql::Real(r), None),
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(s) => (Sql::Text(s.to_owned()), None),
            Err(_) => (
                Sql::Text(String::from_utf8_lossy(t).into_owned()),
                Some(NotUtf8),
            ),
        },
        ValueRef::Blob(b) => (Sql::Blob(b.to_vec()), None),
    }
}

fn encode(v: &Sql) -> Value {
    match v {
        Sql::Null => Value::Null,
        Sql::Integer(i) => json!(i),
        Sql::Real(r) => json!({"real": format!("{r}")}),
        Sql::Text(t) => json!(t),
        Sql::Blob(b) => json!({"blob": BASE64.encode(b)}),
    }
}

fn decode(v: &Value) -> Option<Sql> {
    Some(match v {
        Value::Null => Sql::Null,
        Value::Number(n) => Sql::Integer(n.as_i64()?),
        Value::String(s) => Sql::Text(s.clone()),
        Value::Object(o) if o.len() == 1 => {
            if let Some(r) = o.get("real").and_then(Value::as_str) {
                Sql::Real(r.parse().ok()?)
            } else if let Some(b) = o.get("blob").and_then(Value::as_str) {
                Sql::Blob(BASE64.decode(b).ok()?)
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

impl Row {
    pub fn get(&self, col: &str) -> Option<&Sql> {
        self.cols.iter().find(|(c, _)| c == col).map(|(_, v)| v)
    }

    pub fn text(&self, col: &str) -> Option<&str> {
        match self.get(col) {
            Some(Sql::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn int(&self, col: &str) -> Option<i64> {
        match self.get(col) {
            Some(Sql::Integer(i)) => Some(*i),
            _ => None,
        }
    }

    fn key_values(&self) -> Vec<&Sql> {
        self.key
            .iter()
            .map(|k| self.get(k).unwrap_or(&Sql::Null))
            .collect()
    }

    /// `<table>/<escaped key>.row.json`.
    pub fn path(&self) -> String {
        let key: Vec<String> = self
            .key_values()
            .into_iter()
            .map(|v| match v {
                Sql::Text(t) => t.clone(),
                Sql::Integer(i) => i.to_string(),
                other => encode(other).to_string(),
            })
            .collect();
        format!("{}/{}.row.json", self.table, escape(&key.join(",")))
    }

    /// The row document: compact, members in column order, a final newline.
    pub fn document(&self) -> Vec<u8> {
        let mut key = Map::new();
        for k in &self.key {
            key.insert(k.clone(), encode(self.get(k).unwrap_or(&Sql::Null)));
        }
        let mut row = Map::new();
        for (c, v) in &self.cols {
            row.insert(c.clone(), encode(v));
        }
        let doc = json!({"table": self.table, "key": key, "row": row});
        let mut out = serde_json::to_vec(&doc).expect("JSON values serialise");
        out.push(b'\n');
        out
    }

    /// A row document read back; `None` when it is not one.
    pub fn parse(bytes: &[u8]) -> Option<Row> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        let table = v.get("table")?.as_str()?.to_owned();
        let key = v.get("key")?.as_object()?.keys().cloned().collect();
        let mut cols = Vec::new();
        for (c, val) in v.get("row")?.as_object()? {
            cols.push((c.clone(), decode(val)?));
        }
        Some(Row { table, key, cols })
    }
}

/// The columns of `table`, in order, with their place in the primary key (0 = not in it) and
/// whether they must have a value.
pub struct Columns {
    pub names: Vec<String>,
    pub key: Vec<String>,
    pub required: Vec<String>,
}

pub fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Columns> {
    let mut stmt =
        conn.prepare("SELECT name, pk, \"notnull\", dflt_value FROM pragma_table_info(?1)")?;
    let mut names = Vec::new();
    let mut key: Vec<(i64, String)> = Vec::new();
    let mut required = Vec::new();
    let rows = stmt.query_map([table], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Option<String>>(3)?,
        ))
    })?;
    for r in rows {
        let (name, pk, notnull, default) = r?;
        if pk > 0 {
            key.push((pk, name.clone()));
        }
        if notnull != 0 && default.is_none() && pk == 0 {
            required.push(name.clone());
        }
        names.push(name);
    }
    key.sort();
    Ok(Columns {
        names,
        key: key.into_iter().map(|(_, n)| n).collect(),
        required,
    })
}

/// Every row of `table` matching `filter` (an SQL condition on `params`), ordered by `order`,
/// with whether any text in it was not UTF-8.
pub fn select(
    conn: &Connection,
    table: &str,
    filter: &str,
    params: &[&dyn rusqlite::ToSql],
    order: &str,
) -> rusqlite::Result<Vec<(Row, bool)>> {
    let cols = columns(conn, table)?;
    let list: Vec<String> = cols.names.iter().map(|c| format!("\"{c}\"")).collect();
    let sql = format!(
        "SELECT {} FROM \"{table}\" WHERE {filter} ORDER BY {order}",
        list.join(", ")
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut vals = Vec::with_capacity(cols.names.len());
        let mut bad = false;
        for (i, c) in cols.names.iter().enumerate() {
            let (v, nu) = owned(r.get_ref(i)?);
            bad |= nu.is_some();
            vals.push((c.clone(), v));
        }
        out.push((
            Row {
                table: table.to_owned(),
                key: cols.key.clone(),
                cols: vals,
            },
            bad,
        ));
    }
    Ok(out)
}

/// The row stored under `row`'s key, if any.
pub fn existing(conn: &Connection, row: &Row) -> rusqlite::Result<Option<Row>> {
    let filter: Vec<String> = row
        .key
        .iter()
        .enumerate()
        .map(|(i, k)| format!("\"{k}\" = ?{}", i + 1))
        .collect();
    let vals = row.key_values();
    let params: Vec<&dyn rusqlite::ToSql> =
        vals.iter().map(|v| *v as &dyn rusqlite::ToSql).collect();
    let found = select(conn, &row.table, &filter.join(" AND "), &params, "rowid")?;
    Ok(found.into_iter().next().map(|(r, _)| r))
}

/// Why a row cannot go into this database's table, if it cannot.
pub fn misfit(cols: &Columns, row: &Row) -> Option<String> {
    if cols.names.is_empty() {
        return Some(format!("the database has no table {}", row.table));
    }
    if let Some((c, _)) = row.cols.iter().find(|(c, _)| !cols.names.contains(c)) {
        return Some(format!("table {} has no column {c}", row.table));
    }
    if let Some(c) = cols.required.iter().find(|c| row.get(c).is_none()) {
        return Some(format!("the row of {} has no value for {c}", row.table));
    }
    if cols.key != row.key {
        return Some(format!(
            "table {}'s key is not {}",
            row.table,
            row.key.join(", ")
        ));
    }
    None
}

/// Inserts `row` (only the columns it has).
pub fn insert(conn: &Connection, row: &Row) -> rusqlite::Result<()> {
    let names: Vec<String> = row.cols.iter().map(|(c, _)| format!("\"{c}\"")).collect();
    let marks: Vec<String> = (1..=row.cols.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO \"{}\" ({}) VALUES ({})",
        row.table,
        names.join(", "),
        marks.join(", ")
    );
    let params: Vec<&dyn rusqlite::ToSql> = row
        .cols
        .iter()
        .map(|(_, v)| v as &dyn rusqlite::ToSql)
        .collect();
    conn.execute(&sql, params.as_slice())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_document_round_trips_every_storage_class() {
        let r = Row {
            table: "todo".into(),
            key: vec!["session_id".into(), "position".into()],
            cols: vec![
                ("session_id".into(), Sql::Text("ses_1".into())),
                ("position".into(), Sql::Integer(2)),
                ("cost".into(), Sql::Real(0.1)),
                ("raw".into(), Sql::Blob(vec![0, 255])),
                ("none".into(), Sql::Null),
            ],
        };
        let d = r.document();
        assert_eq!(
            String::from_utf8(d.clone()).unwrap(),
            "{\"table\":\"todo\",\"key\":{\"session_id\":\"ses_1\",\"position\":2},\"row\":{\"session_id\":\"ses_1\",\"position\":2,\"cost\":{\"real\":\"0.1\"},\"raw\":{\"blob\":\"AP8=\"},\"none\":null}}\n"
        );
        assert_eq!(Row::parse(&d), Some(r.clone()));
        assert_eq!(r.path(), "todo/ses_1%2C2.row.json");
    }
}
