//! The sample (`samples/opencode/`, made by OpenCode 1.18.33) read as its EXPECTED.md says.

use std::collections::BTreeMap;

use asp_format::blob::{BlobSource, MemoryStore};
use asp_format::progress::Quiet;
use serde_json::Value;

use super::*;
use crate::harness::{Home, ReadOptions};
use crate::kit::report::Diagnostics;
use asp_format::answer::ImportAnswer;

fn sample() -> Home {
    Home::at(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/opencode"))
}

const KINDS: [&str; 6] = [
    "user_message_chunk",
    "agent_thought_chunk",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

fn read_all(home: &Home) -> (Vec<Session>, MemoryStore, Diagnostics) {
    let d = Diagnostics::new();
    let survey = OpenCode
        .survey(&SurveyContext {
            home,
            diagnostics: &d,
        })
        .unwrap();
    let blobs = MemoryStore::new();
    let ctx = SessionContext {
        home,
        blobs: &blobs,
        diagnostics: &d,
        progress: &Quiet,
        options: ReadOptions::default(),
    };
    let mut out = Vec::new();
    for e in &survey.sessions {
        out.extend(OpenCode.read_session(&ctx, e).unwrap());
    }
    (out, blobs, d)
}

fn counts(s: &Session, blobs: &MemoryStore) -> [usize; 6] {
    let text = blobs.read_all(&s.updates).unwrap();
    let mut c = [0usize; 6];
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).unwrap();
        if let Some(i) = KINDS
            .iter()
            .position(|k| v["update"]["sessionUpdate"] == *k)
        {
            c[i] += 1;
        }
    }
    c
}

#[test]
fn the_sample_reads_as_expected_md_says() {
    let home = sample();
    let (sessions, blobs, d) = read_all(&home);
    assert!(d.is_empty(), "{:?}", d.items());
    assert_eq!(sessions.len(), 8);
    let by: BTreeMap<&str, &Session> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let expect: [(&str, &str, [usize; 6]); 8] = [
        (
            "ses_dcbe29379ffe7EA91rytPF0rq2",
            "Fix discount codes in checkout total",
            [2, 2, 3, 10, 10, 3],
        ),
        (
            "ses_dcbe26931ffe4oHq3LvtNHeEkH",
            "README logo",
            [2, 1, 2, 1, 1, 0],
        ),
        (
            "ses_dcbe2625dffeon9jAGX5j0o9Kz",
            "Find untested shop code",
            [1, 0, 2, 1, 1, 0],
        ),
        (
            "ses_dcbe260acffer3QV3aBzBoeP5p",
            "Find untested code (@explore subagent)",
            [1, 0, 1, 2, 2, 0],
        ),
        (
            "ses_dcbe25720ffePQA8vq5bct6Xvh",
            "Rename total_cents to cart_total",
            [2, 0, 2, 4, 4, 0],
        ),
        (
            "ses_dcbe23199ffeRfJ0vonjK4YnIf",
            "Explain deploy.sh",
            [3, 1, 3, 2, 2, 0],
        ),
        (
            "ses_dcbe22049ffeQ1g6jkD2LsynL4",
            "Check todos and nightly backup",
            [2, 0, 1, 3, 3, 0],
        ),
        (
            "ses_dcbe208e2ffeMHTQ6GSyj1unVK",
            "Reply to Sam about the invoice",
            [1, 0, 1, 0, 0, 0],
        ),
    ];
    for (id, title, c) in expect {
        let s = by[id];
        assert_eq!(s.title, title, "{id}");
        assert_eq!(counts(s, &blobs), c, "{id}");
        assert!(
            s.native.as_ref().is_some_and(|n| !n.files.is_empty()),
            "{id}"
        );
    }
    // The sub-agent knows its parent; the task call names its child.
    let child = by["ses_dcbe260acffer3QV3aBzBoeP5p"];
    assert_eq!(
        crate::kit::meta::parent_id(child.meta.as_ref()),
        Some("ses_dcbe2625dffeon9jAGX5j0o9Kz")
    );
    let s5 = by["ses_dcbe23199ffeRfJ0vonjK4YnIf"].meta.as_ref().unwrap();
    assert!(
        s5["opencode"]["compaction"][0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal")
    );
    let s4 = by["ses_dcbe25720ffePQA8vq5bct6Xvh"].meta.as_ref().unwrap();
    assert_eq!(s4["opencode"]["revertedMessages"], 3);
}

/// A home whose database is the sample's schema with no session (as a fresh OpenCode makes
/// it, with every migration recorded).
fn empty_home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(layout::DEFAULT_DB);
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(sample().join(layout::DEFAULT_DB), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "PRAGMA foreign_keys = ON; DELETE FROM event; DELETE FROM event_sequence; \
         DELETE FROM todo; DELETE FROM part; DELETE FROM message; DELETE FROM session; \
         DELETE FROM project_directory; DELETE FROM project;",
    )
    .unwrap();
    drop(c);
    let home = Home::at(dir.path());
    (dir, home)
}

fn write(home: &Home, sessions: &[Session], blobs: &MemoryStore, dry_run: bool) -> ImportAnswer {
    let state = State {
        sessions: Some(sessions.to_vec()),
        ..State::default()
    };
    let writer = crate::kit::fsops::Writer::new(dry_run);
    let d = Diagnostics::new();
    OpenCode
        .write(&WriteContext {
            home,
            state: &state,
            blobs,
            writer: &writer,
            diagnostics: &d,
            progress: &Quiet,
            options: &crate::harness::WriteOptions::default(),
        })
        .unwrap()
}

fn documents(sessions: &[Session], blobs: &MemoryStore) -> BTreeMap<String, Vec<u8>> {
    sessions
        .iter()
        .flat_map(|s| s.native.iter().flat_map(|n| &n.files))
        .map(|f| {
            (
                f.path.as_str().to_owned(),
                blobs.read_all(&f.content).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_restore_is_row_exact_and_a_second_one_changes_nothing() {
    let (sessions, blobs, _) = read_all(&sample());
    let (_dir, home) = empty_home();
    let dry = write(&home, &sessions, &blobs, true);
    let (none, _, _) = read_all(&home);
    assert!(none.is_empty(), "the dry run wrote");
    let first = write(&home, &sessions, &blobs, false);
    assert_eq!(dry, first);
    assert!(first.not_taken.is_empty(), "{first:?}");
    for s in &sessions {
        assert_eq!(first.sessions[s.id.as_str()], s.id.as_str());
    }
    let (back, back_blobs, d) = read_all(&home);
    assert!(d.is_empty(), "{:?}", d.items());
    assert_eq!(documents(&back, &back_blobs), documents(&sessions, &blobs));
    let second = write(&home, &sessions, &blobs, false);
    assert_eq!(first.sessions, second.sessions);
    let (again, again_blobs, _) = read_all(&home);
    assert_eq!(
        documents(&again, &again_blobs),
        documents(&sessions, &blobs)
    );
}

#[test]
fn a_diverged_session_is_kept_beside_and_found_again() {
    let (sessions, blobs, _) = read_all(&sample());
    let (_dir, home) = empty_home();
    write(&home, &sessions, &blobs, false);
    let id = "ses_dcbe208e2ffeMHTQ6GSyj1unVK";
    let db = home.join(layout::DEFAULT_DB);
    let c = rusqlite::Connection::open(&db).unwrap();
    // Another version: a message's text changed there (a title alone is not one: OpenCode
    // renames), and the title says which one is there.
    let parts = c
        .execute(
            "UPDATE part SET data = json_set(data, '$.text', json_extract(data, '$.text') || \
             ' (changed there)') WHERE id = (SELECT id FROM part WHERE session_id = ?1 AND \
             json_extract(data, '$.type') = 'text' ORDER BY id LIMIT 1)",
            [id],
        )
        .unwrap();
    assert_eq!(parts, 1);
    c.execute(
        "UPDATE session SET title = 'changed there' WHERE id = ?1",
        [id],
    )
    .unwrap();
    drop(c);
    let answer = write(&home, &sessions, &blobs, false);
    let copy = &answer.sessions[id];
    assert_ne!(copy, id);
    assert!(copy.starts_with("ses_"));
    let (back, back_blobs, d) = read_all(&home);
    assert!(d.is_empty(), "{:?}", d.items());
    let kept = back.iter().find(|s| s.id.as_str() == copy).unwrap();
    assert_eq!(kept.title, "Reply to Sam about the invoice ~opencode");
    assert_eq!(counts(kept, &back_blobs)[0], 1);
    assert_eq!(counts(kept, &back_blobs)[2], 1);
    assert_eq!(
        back.iter().find(|s| s.id.as_str() == id).unwrap().title,
        "changed there"
    );
    let again = write(&home, &sessions, &blobs, false);
    assert_eq!(&again.sessions[id], copy);
}

#[test]
fn a_foreign_session_is_composed_into_rows_opencode_loads() {
    let (mut sessions, blobs, _) = read_all(&sample());
    for s in &mut sessions {
        s.native = None;
        s.harness = Some(HarnessName::new("pi").unwrap());
    }
    let (_dir, home) = empty_home();
    let answer = write(&home, &sessions, &blobs, false);
    assert!(answer.not_taken.is_empty(), "{answer:?}");
    let (back, back_blobs, d) = read_all(&home);
    assert!(d.is_empty(), "{:?}", d.items());
    assert_eq!(back.len(), sessions.len());
    for s in &sessions {
        let new = back
            .iter()
            .find(|b| b.id.as_str() == answer.sessions[s.id.as_str()])
            .unwrap();
        assert_eq!(new.title, s.title);
        assert_eq!(new.cwd, s.cwd);
        let (a, b) = (counts(s, &blobs), counts(new, &back_blobs));
        assert_eq!(
            (a[0], a[2], a[3], a[4]),
            (b[0], b[2], b[3], b[4]),
            "{}",
            s.id
        );
    }
    let again = write(&home, &sessions, &blobs, false);
    assert_eq!(again.sessions, answer.sessions);
    let (twice, _, _) = read_all(&home);
    assert_eq!(twice.len(), sessions.len());
}

#[test]
fn a_home_without_a_database_gets_one_as_opencode_makes_it() {
    let (sessions, blobs, _) = read_all(&sample());
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let dry = write(&home, &sessions, &blobs, true);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the dry run wrote"
    );
    let done = write(&home, &sessions, &blobs, false);
    assert_eq!(dry, done);
    assert!(done.not_taken.is_empty(), "{done:?}");
    let (back, back_blobs, d) = read_all(&home);
    assert!(d.is_empty(), "{:?}", d.items());
    assert_eq!(documents(&back, &back_blobs), documents(&sessions, &blobs));
    let c = rusqlite::Connection::open(home.join(layout::DEFAULT_DB)).unwrap();
    let n: i64 = c
        .query_row("SELECT count(*) FROM migration", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 38);
}

// A damaged part row and non-UTF-8 text: tests/fixtures/opencode/ (tests/opencode.rs).

#[test]
fn a_locked_database_is_named_and_nothing_is_read_half() {
    let (_dir, home) = empty_home();
    let (sessions, blobs, _) = read_all(&sample());
    write(&home, &sessions, &blobs, false);
    let db = home.join(layout::DEFAULT_DB);
    // OpenCode's WAL beside the file, and another program holding an exclusive lock.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    c.execute("UPDATE session SET title = title", []).unwrap();
    let d = Diagnostics::new();
    // An error that ends the read (exit 1), naming the file: not a read of no sessions, which
    // a pack would write as a bundle (exit 3) and `--force` would put over a good one.
    let Err(e) = OpenCode.survey(&SurveyContext {
        home: &home,
        diagnostics: &d,
    }) else {
        panic!("a locked database ends the read");
    };
    use asp_format::error::Classify as _;
    assert_eq!(e.class(), asp_format::error::ErrorClass::Source, "{e}");
    let said = e.to_string();
    assert!(
        said.contains(&db.display().to_string()) && said.contains("locked"),
        "{said}"
    );
    assert!(d.items().is_empty(), "{:?}", d.items());
    drop(c);
}

#[test]
fn a_database_without_a_session_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(layout::DEFAULT_DB);
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE other (x);")
        .unwrap();
    let home = Home::at(dir.path());
    let (sessions, _, d) = read_all(&home);
    assert!(sessions.is_empty());
    assert!(
        d.items()[0].message.contains("no session table"),
        "{:?}",
        d.items()
    );
}
