//! The contract every harness converter keeps, run for each registered harness by name on its
//! sample home (`samples/<harness>/`), through the porcelain as the commands use it.
//!
//! A new harness is registered in [`contract!`] below (a test fails until it is) and gets
//! every rule here for free; what only that harness does belongs in its own module, and so
//! does its validator ([`validator`]): the checks its own reader would make of what another
//! harness's state was written as.

// A build without any harness runs none of the rules.
#![cfg_attr(
    not(any(
        feature = "claude-code",
        feature = "codex",
        feature = "gemini",
        feature = "pi"
    )),
    allow(dead_code, unused_imports)
)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
use asp_convert::kit::report::Severity;
use asp_format::answer::ImportAnswer;
use asp_format::blob::MemoryStore;
use asp_format::state::{Session, State};
use asp_format::{KindSet, StateKind};

use crate::support::{ReadBack, read_home, samples, tmp, write_home};

/// One test module per registered harness, each running every rule for it.
macro_rules! contract {
    ($($module:ident => $name:literal if $feature:literal;)*) => {
        /// The harnesses the contract runs for.
        const CONTRACTED: &[&str] = &[$(#[cfg(feature = $feature)] $name),*];
        $(
            #[cfg(feature = $feature)]
            mod $module {
                const H: &str = $name;
                #[test]
                fn a_restore_into_an_empty_home_gives_back_every_native_file_byte_for_byte() {
                    super::restore_is_byte_exact(H)
                }
                #[test]
                fn a_backup_restored_into_an_empty_home_gives_back_every_configuration_file() {
                    super::configuration_restores_byte_for_byte(H)
                }
                #[test]
                fn importing_twice_changes_nothing() {
                    super::importing_twice_changes_nothing(H)
                }
                #[test]
                fn a_thread_that_diverged_is_kept_beside_under_a_new_id() {
                    super::a_diverged_thread_is_kept_beside(H)
                }
                #[test]
                fn a_session_cut_short_there_is_brought_up_to_date_or_kept_beside() {
                    super::a_cut_short_session_is_kept_beside(H)
                }
                #[test]
                #[cfg(unix)]
                fn a_link_in_place_of_a_session_file_keeps_the_session_beside() {
                    super::a_link_in_the_way_keeps_it_beside(H)
                }
                #[test]
                fn an_archived_session_goes_into_the_archive_or_is_said_to_be_listed() {
                    super::archived_sessions_stay_archived(H)
                }
                #[test]
                fn a_session_continued_there_is_already_there() {
                    super::a_continued_session_is_already_there(H)
                }
                #[test]
                fn every_file_there_a_write_adds_to_is_named() {
                    super::files_added_to_are_named(H)
                }
                #[test]
                fn mcp_servers_added_to_a_file_there_are_named() {
                    super::servers_added_to_a_file_there_are_named(H)
                }
                #[test]
                fn a_dry_run_answers_like_the_real_run_and_writes_nothing() {
                    super::dry_run_is_exact(H)
                }
                #[test]
                fn damage_is_named_with_its_file_and_line() {
                    super::damage_is_named(H)
                }
                #[test]
                #[cfg(unix)]
                fn a_fifo_in_place_of_a_session_file_is_named_not_waited_on() {
                    super::a_fifo_is_named_not_waited_on(H)
                }
                #[test]
                fn an_export_reads_no_native_files() {
                    super::an_export_reads_no_native_files(H)
                }
                #[test]
                fn only_the_kinds_asked_for_are_read_and_taken() {
                    super::only_the_kinds_asked_for(H)
                }
                #[test]
                fn a_kind_is_never_given_empty() {
                    super::no_kind_is_given_empty(H)
                }
                #[test]
                fn an_import_into_every_other_harness_passes_its_validator() {
                    super::imports_pass_every_validator(H)
                }
                #[test]
                fn one_session_is_read_alone_and_as_it_is_read_with_the_others() {
                    super::one_session_reads_alone(H)
                }
                #[test]
                fn a_file_the_harness_appends_to_is_read_to_the_last_whole_line_surveyed() {
                    super::a_growing_file_is_read_as_surveyed(H)
                }
                #[test]
                fn the_bundle_is_the_same_on_one_thread_or_many() {
                    super::threads_do_not_change_the_bundle(H)
                }
                #[test]
                fn a_directory_unpacked_from_the_bundle_packs_back_to_it_byte_for_byte() {
                    super::the_directory_form_packs_back_to_the_bundle(H)
                }
                #[test]
                fn a_home_without_the_store_is_an_error_and_an_empty_store_is_0_sessions() {
                    super::no_store_is_an_error(H)
                }
                #[test]
                fn settings_are_written_only_with_values_the_harness_accepts() {
                    super::settings_only_as_accepted(H)
                }
                #[test]
                fn every_session_written_is_named_with_the_command_that_resumes_it() {
                    super::resume_commands(H)
                }
                #[test]
                fn a_hostile_bundle_writes_nothing_outside_the_home() {
                    super::hostile_ids_stay_inside(H)
                }
                #[test]
                fn pack_session_packs_that_session_and_refuses_one_it_does_not_have() {
                    super::pack_session_selects(H)
                }
                #[test]
                fn pack_session_of_a_subagent_packs_it_as_export_and_unpack_take_it() {
                    super::pack_session_takes_a_subagent_as_export_does(H)
                }
                #[test]
                fn each_update_stream_is_compressed_against_the_transcript_it_derives_from() {
                    super::streams_go_against_their_transcript(H)
                }
                #[test]
                fn the_project_a_pack_predicts_a_dictionary_by_is_one_working_directory() {
                    super::a_surveyed_project_is_one_cwd(H)
                }
                #[test]
                fn a_copy_of_an_untitled_session_is_titled_by_its_prompt_and_marked() {
                    super::an_untitled_copy_is_told_apart(H)
                }
                #[test]
                fn a_subagent_of_another_harness_goes_under_its_parent_or_is_said_to_stand_alone() {
                    super::foreign_subagents_linked_or_said(H)
                }
                #[test]
                fn the_settings_that_configure_the_harness_itself_are_said_left_out() {
                    super::own_settings_said(H)
                }
            }
        )*
    };
}

contract! {
    claude_code => "claude-code" if "claude-code";
    codex => "codex" if "codex";
    gemini => "gemini" if "gemini";
    opencode => "opencode" if "opencode";
    pi => "pi" if "pi";
    qwen => "qwen" if "qwen";
    copilot => "copilot" if "copilot";
}

#[test]
fn every_registered_harness_is_under_contract() {
    let registered: BTreeSet<String> = asp_convert::harness_names().into_iter().collect();
    let contracted: BTreeSet<String> = CONTRACTED.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        registered, contracted,
        "register the new harness in contract! (tests/contract.rs) and give it samples/<name>/"
    );
    for h in CONTRACTED {
        assert!(samples().join(h).is_dir(), "samples/{h}/ is missing");
        assert!(validator(h).is_some(), "{h} has no validator");
    }
}

/// A harness's own checks of a home something was written into: what its reader requires to
/// list and resume a session. Each is a fact of its harness, so it lives in that harness's
/// module.
pub type Validator = fn(&Path) -> Vec<String>;

fn validator(harness: &str) -> Option<Validator> {
    match harness {
        #[cfg(feature = "claude-code")]
        "claude-code" => Some(crate::claude_code::validate),
        #[cfg(feature = "codex")]
        "codex" => Some(crate::codex::validate),
        #[cfg(feature = "gemini")]
        "gemini" => Some(crate::gemini::validate),
        #[cfg(feature = "opencode")]
        "opencode" => Some(crate::opencode::validate),
        #[cfg(feature = "pi")]
        "pi" => Some(crate::pi::validate),
        #[cfg(feature = "qwen")]
        "qwen" => Some(crate::qwen::validate),
        #[cfg(feature = "copilot")]
        "copilot" => Some(crate::copilot::validate),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Helpers

fn sample(harness: &str) -> PathBuf {
    samples().join(harness)
}

fn read(harness: &str, home: &Path) -> ReadBack {
    read_home(harness, home, KindSet::ALL, ReadOptions::default())
}

fn write(harness: &str, home: &Path, r: &ReadBack, dry_run: bool) -> ImportAnswer {
    write_home(
        harness,
        home,
        &r.state,
        &r.store,
        dry_run,
        &PathMap::default(),
    )
    .0
}

/// The native session files of a state, by path relative to the home.
fn native_paths(state: &State) -> BTreeSet<String> {
    state
        .sessions
        .iter()
        .flatten()
        .flat_map(|s| s.native.iter().flat_map(|n| &n.files))
        .map(|f| f.path.as_str().to_owned())
        .collect()
}

/// The session file of `state` a harness appends to most: the largest `.jsonl` native file.
fn main_log(state: &State, home: &Path) -> (String, PathBuf) {
    state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| {
            let n = s.native.as_ref()?;
            let f = n
                .files
                .iter()
                .filter(|f| f.path.as_str().ends_with(".jsonl"))
                .max_by_key(|f| f.content.size)?;
            Some((f.content.size, s.id.to_string(), f.path.under(home)))
        })
        .max()
        .map(|(_, id, p)| (id, p))
        .expect("a sample has a session kept in a JSONL file")
}

/// The database of a store whose sessions travel as row documents (spec/aspstate.md §8.1:
/// `<database>/<table>/<key>.row.json`), with the session that has the most rows.
fn database(state: &State, home: &Path) -> Option<(String, PathBuf)> {
    state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| {
            let n = s.native.as_ref()?;
            let row = n
                .files
                .iter()
                .find(|f| f.path.as_str().ends_with(".row.json"))?;
            let p = row.path.as_str();
            let db = p.rsplitn(3, '/').nth(2)?.to_owned();
            Some((n.files.len(), s.id.to_string(), home.join(db)))
        })
        .max()
        .map(|(_, id, db)| (id, db))
}

/// Makes OpenCode's session `id` in `db` another version of the one carried: a message part's
/// text and the title differ.
pub(crate) fn diverge_row(db: &Path, id: &str) {
    let c = rusqlite::Connection::open(db).unwrap();
    // The conversation differs (a title alone does not make another version: the harness
    // renames), and the title says which one is there.
    let n = c
        .execute(
            "UPDATE part SET data = json_set(data, '$.text', json_extract(data, '$.text') || \
             ' (changed there)') WHERE id = (SELECT id FROM part WHERE session_id = ?1 AND \
             json_extract(data, '$.type') = 'text' ORDER BY id LIMIT 1)",
            [id],
        )
        .unwrap();
    assert_eq!(n, 1, "{id} has a text part in {}", db.display());
    let n = c
        .execute(
            "UPDATE session SET title = title || ' (changed there)' WHERE id = ?1",
            [id],
        )
        .unwrap();
    assert_eq!(n, 1, "{id} is in {}", db.display());
}

// ---------------------------------------------------------------------------------------
// The rules

/// The bodies of `inner`, but for `refused`, which are missing: what a repository whose
/// layers of those bodies are damaged gives.
struct Refusing<'a> {
    inner: &'a dyn asp_format::blob::BlobSource,
    refused: BTreeSet<asp_format::Descriptor>,
}

impl asp_format::blob::BlobSource for Refusing<'_> {
    fn open(
        &self,
        blob: &asp_format::Descriptor,
    ) -> Result<Box<dyn std::io::Read + Send + '_>, asp_format::blob::BlobError> {
        if self.refused.contains(blob) {
            return Err(asp_format::blob::BlobError::Missing(blob.digest));
        }
        self.inner.open(blob)
    }
}

/// A session restored into an empty home of the harness its native files came from is
/// written from them, its update stream not read, and every file comes back byte for byte.
/// (A restore still leaves out a session whose stream is damaged, `cli/src/salvage.rs`:
/// `--map-path`, a copy kept beside one already there, a subagent restored without its
/// parent are written from the stream.)
fn restore_is_byte_exact(h: &str) {
    use asp_format::blob::BlobSource;
    let packed = read(h, &sample(h));
    let home = tmp();
    let without_streams = Refusing {
        inner: &packed.store,
        refused: packed
            .state
            .sessions
            .iter()
            .flatten()
            .filter(|s| s.native.as_ref().is_some_and(|n| n.harness.as_str() == h))
            .map(|s| s.updates)
            .collect(),
    };
    assert!(!without_streams.refused.is_empty(), "{h}");
    let (answer, _) = write_home(
        h,
        home.path(),
        &packed.state,
        &without_streams,
        false,
        &PathMap::default(),
    );
    assert!(
        answer
            .not_taken
            .iter()
            .all(|n| n.kind != StateKind::Sessions || !n.lost),
        "{h}: {:?}",
        answer.not_taken
    );
    let paths = native_paths(&packed.state);
    assert!(!paths.is_empty(), "{h}: the sample carries native files");
    let back = read(h, home.path());
    let rows_back: std::collections::BTreeMap<String, Vec<u8>> = back
        .state
        .sessions
        .iter()
        .flatten()
        .flat_map(|s| s.native.iter().flat_map(|n| &n.files))
        .map(|f| {
            (
                f.path.as_str().to_owned(),
                back.store.read_all(&f.content).unwrap(),
            )
        })
        .collect();
    for p in &paths {
        if p.ends_with(".row.json") {
            // A row of a database: the same row, read back from the restored database.
            let f = packed
                .state
                .sessions
                .iter()
                .flatten()
                .flat_map(|s| s.native.iter().flat_map(|n| &n.files))
                .find(|f| f.path.as_str() == p)
                .unwrap();
            let original = packed.store.read_all(&f.content).unwrap();
            assert!(
                rows_back.get(p) == Some(&original),
                "{h}: row {p} is not the same row"
            );
            continue;
        }
        let original = fs::read(sample(h).join(p)).unwrap();
        let restored = fs::read(home.path().join(p))
            .unwrap_or_else(|e| panic!("{h}: {p} was not restored: {e}"));
        assert!(original == restored, "{h}: {p} is not the same bytes");
    }
    for s in packed.state.sessions.iter().flatten() {
        assert_eq!(
            answer.sessions.get(s.id.as_str()).map(String::as_str),
            Some(s.id.as_str()),
            "{h}: session {} keeps its id",
            s.id
        );
    }
    // And it reads back as the same sessions, by the same names. (Their streams may differ
    // where the harness keeps what they carry beside the session's files, as Codex keeps old
    // names of a thread in `session_index.jsonl`.)
    for s in packed.state.sessions.iter().flatten() {
        assert_eq!(back.session(s.id.as_str()).title, s.title, "{h}: {}", s.id);
    }
}

/// A backup keeps the harness's own configuration (`Harness::config_files`), and a restore
/// into an empty home gives each whole file back byte for byte at its path, after the
/// sessions' import has written into the same files (a part, `FILE#PART`, is a file without
/// its credentials: its harness's own tests check it).
fn configuration_restores_byte_for_byte(h: &str) {
    use crate::support::asp;
    let t = tmp();
    let repo = t.path().join("repo");
    let out = asp()
        .args(["backup", "-q", "--from", h, "--home"])
        .arg(sample(h))
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{h}: {out:?}");
    let to = t.path().join("to");
    fs::create_dir_all(&to).unwrap();
    let out = asp()
        .args(["restore", "-q", "--to", h, "--home"])
        .arg(&to)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{h}: {out:?}");
    let store = asp_convert::Store::harness(h, asp_convert::Home::at(sample(h))).unwrap();
    let kept = store
        .read_config(
            &MemoryStore::new(),
            &[],
            &asp_convert::kit::report::Diagnostics::new(),
        )
        .unwrap()
        .unwrap_or_else(|| panic!("{h}: the sample has configuration of its own"));
    let whole: Vec<&str> = kept
        .native
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| !p.contains('#'))
        .collect();
    assert!(!whole.is_empty(), "{h}: {:?}", kept.native.files);
    for p in whole {
        let restored = fs::read(to.join(p)).unwrap_or_else(|e| panic!("{h}: {p}: {e}"));
        assert!(
            restored == fs::read(sample(h).join(p)).unwrap(),
            "{h}: {p} is not given back as it was: {}",
            String::from_utf8_lossy(&restored)
        );
    }
}

/// Every sample read, and the sample bundle (whose ids are not all UUIDs).
fn every_source() -> Vec<(String, ReadBack)> {
    let mut out: Vec<(String, ReadBack)> = CONTRACTED
        .iter()
        .map(|h| (h.to_string(), read(h, &sample(h))))
        .collect();
    let bundle = asp_format::bundle::Bundle::open(&samples().join("state.aspstate")).unwrap();
    let store = MemoryStore::new();
    let state = bundle.manifest().state.clone();
    for d in state.descriptors() {
        use asp_format::blob::{BlobSink, BlobSource};
        store.put(&bundle.read_all(&d).unwrap()).unwrap();
    }
    out.push((
        "state.aspstate".to_owned(),
        ReadBack {
            state,
            store,
            diagnostics: Vec::new(),
        },
    ));
    out
}

fn importing_twice_changes_nothing(h: &str) {
    for (from, packed) in every_source() {
        let home = tmp();
        let first = write(h, home.path(), &packed, false);
        let after_first = crate::support::files_in(home.path());
        let second = write(h, home.path(), &packed, false);
        assert!(
            after_first == crate::support::files_in(home.path()),
            "{from} into {h}: the second import changed the home"
        );
        assert_eq!(
            first.sessions, second.sessions,
            "{from} into {h}: every session is found where the first import put it"
        );
        assert_eq!(first.taken, second.taken, "{from} into {h}");
        // And says so: every session of the second import was there already.
        assert_eq!(
            second.already_there.iter().collect::<Vec<_>>(),
            second.sessions.keys().collect::<Vec<_>>(),
            "{from} into {h}: the second import finds every session already there"
        );
        assert!(
            first.already_there.is_empty(),
            "{from} into {h}: nothing was there before the first import"
        );
    }
}

/// A session archived where it was read (Codex's `archived_sessions/`, OpenCode's
/// `time_archived`) is archived where the harness keeps an archive, and a listed one stays
/// listed; a harness without one lists it, and the write names it.
fn archived_sessions_stay_archived(h: &str) {
    use asp_convert::kit::archive::archived;
    let keeps = asp_convert::harness(h).unwrap().keeps_an_archive();
    let mut seen = 0;
    for (from, packed) in every_source() {
        let home = tmp();
        let (answer, diagnostics) = write_home(
            h,
            home.path(),
            &packed.state,
            &packed.store,
            false,
            &PathMap::default(),
        );
        let back = read(h, home.path());
        for s in packed.state.sessions.iter().flatten() {
            let Some(there) = answer.sessions.get(s.id.as_str()) else {
                continue;
            };
            let was = archived(s).is_some();
            let is = archived(back.session(there)).is_some();
            if !was {
                assert!(!is, "{from} into {h}: {} was listed, and is archived", s.id);
                continue;
            }
            seen += 1;
            if keeps {
                assert!(is, "{from} into {h}: {} was archived, and is listed", s.id);
            } else {
                assert!(
                    diagnostics
                        .iter()
                        .any(|d| d.message.contains("keeps no archive")
                            && d.message.contains(s.id.as_str())),
                    "{from} into {h}: {} was archived; the write does not say it is listed: \
                     {diagnostics:#?}",
                    s.id
                );
            }
        }
    }
    assert!(
        seen >= 2,
        "the samples' archived sessions (Codex's, OpenCode's) reach {h}"
    );
}

/// A subagent session composed from its stream (another harness's, or this one's carried
/// without its native files, as the export form carries it), written with its parent, goes
/// under that parent where the harness links what it composes
/// (`Harness::links_composed_subagents`); where it does not, it is written as a conversation of
/// its own and the write says so, naming it.
fn foreign_subagents_linked_or_said(h: &str) {
    let links = asp_convert::harness(h).unwrap().links_composed_subagents();
    let mut subagents = 0;
    let mut sources = every_source();
    for (from, r) in &mut sources {
        if from == h {
            *from = format!("{h} without its native files");
            for s in r.state.sessions.iter_mut().flatten() {
                s.native = None;
            }
        }
    }
    for (from, packed) in sources {
        let home = tmp();
        let (answer, diagnostics) = packed.write_into(h, home.path());
        let back = read(h, home.path());
        let said: Vec<&str> = diagnostics
            .iter()
            .map(|d| d.message.as_str())
            .filter(|m| m.contains("keeps a subagent under its parent only as it restores"))
            .collect();
        for s in packed.state.sessions.iter().flatten() {
            let Some(parent) = asp_convert::kit::meta::parent_id(s.meta.as_ref()) else {
                continue;
            };
            if !answer.sessions.contains_key(parent) || !answer.sessions.contains_key(s.id.as_str())
            {
                continue;
            }
            subagents += 1;
            // Named with the id it was written as, when that is another.
            let written = &answer.sessions[s.id.as_str()];
            let shown = match written == s.id.as_str() {
                true => s.id.to_string(),
                false => format!("{} as {written}", s.id),
            };
            let named = said
                .iter()
                .any(|m| m.contains(&format!("{shown} (a subagent of {parent})")));
            assert_eq!(
                named, !links,
                "{from} into {h}: subagent {} said to stand alone: {said:?}",
                s.id
            );
            if links {
                let child = back.session(&answer.sessions[s.id.as_str()]);
                assert_eq!(
                    asp_convert::kit::meta::parent_id(child.meta.as_ref()),
                    Some(answer.sessions[parent].as_str()),
                    "{from} into {h}: subagent {} read back under its parent",
                    s.id
                );
            }
        }
    }
    assert!(subagents > 0, "the samples carried some subagent into {h}");
}

/// A harness appends to the log of a session it resumes: a session continued in the home
/// since it was written there holds every line carried, so writing it again is "already
/// there", not a version to keep beside it. (A store of database rows has no log to append to.)
fn a_continued_session_is_already_there(h: &str) {
    let packed = read(h, &sample(h));
    let home = tmp();
    write(h, home.path(), &packed, false);
    if database(&packed.state, home.path()).is_some() {
        return;
    }
    let (id, log) = main_log(&packed.state, home.path());
    let mut continued = fs::read(&log).unwrap();
    let last = continued[..continued.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let line = continued[last..].to_vec();
    continued.extend_from_slice(&line);
    fs::write(&log, &continued).unwrap();
    let before = crate::support::files_in(home.path());
    let answer = write(h, home.path(), &packed, false);
    assert_eq!(answer.sessions[&id], id, "{h}: {answer:?}");
    assert!(answer.already_there.contains(&id), "{h}: {answer:?}");
    assert!(
        answer.not_taken.iter().all(|n| !n.reason.contains(&id)),
        "{h}: nothing of it is said to be left out: {answer:?}"
    );
    assert!(
        before == crate::support::files_in(home.path()),
        "{h}: nothing is written for it"
    );
}

/// A session there that lacks the carried one's last records (an older copy of it: the
/// session went on on another machine and came back; or one trimmed there by hand) is
/// another version. Where the harness keeps the session as one log the carried one continues
/// byte for byte (Claude Code, Codex), it is brought up to date under its own id: nothing
/// there is lost, and a round trip between two machines keeps one session, not a new copy each
/// time (new-user trial helper-136, 1). Elsewhere the carried one is kept beside it, and the
/// one there is left as it is, never filled in. A log loses its last line; a database its
/// session's last message.
fn a_cut_short_session_is_kept_beside(h: &str) {
    let packed = read(h, &sample(h));
    let home = tmp();
    write(h, home.path(), &packed, false);
    let (id, before) = if let Some((id, db)) = database(&packed.state, home.path()) {
        let c = rusqlite::Connection::open(&db).unwrap();
        let last = "(SELECT id FROM message WHERE session_id = ?1 ORDER BY time_created DESC, \
                    id DESC LIMIT 1)";
        c.execute(
            &format!("DELETE FROM part WHERE message_id = {last}"),
            [&id],
        )
        .unwrap();
        let n = c
            .execute(&format!("DELETE FROM message WHERE id = {last}"), [&id])
            .unwrap();
        assert_eq!(n, 1, "{h}: {id} has a message");
        drop(c);
        (id, Vec::new())
    } else {
        let (id, log) = main_log(&packed.state, home.path());
        let mut cut = fs::read(&log).unwrap();
        let full = cut.clone();
        let last = cut[..cut.len() - 1]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        cut.truncate(last);
        fs::write(&log, &cut).unwrap();
        if matches!(h, "claude-code" | "codex") {
            let answer = write(h, home.path(), &packed, false);
            assert_eq!(answer.sessions[&id], id, "{h}: {answer:?}");
            assert!(answer.updated.contains(&id), "{h}: {answer:?}");
            assert_eq!(fs::read(&log).unwrap(), full, "{h}: brought up to date");
            return;
        }
        (id, cut)
    };
    let answer = write(h, home.path(), &packed, false);
    let copy = &answer.sessions[&id];
    assert_ne!(
        copy, &id,
        "{h}: the carried {id} is kept beside: {answer:?}"
    );
    assert!(answer.beside.contains(&id), "{h}: {answer:?}");
    assert!(!answer.already_there.contains(&id), "{h}: {answer:?}");
    if database(&packed.state, home.path()).is_some() {
        let back = read(h, home.path());
        assert_ne!(
            back.session(&id).updates,
            packed.session(&id).updates,
            "{h}: the one there was filled in with what it lacked"
        );
    } else {
        let (_, log) = main_log(&packed.state, home.path());
        assert_eq!(
            fs::read(&log).unwrap(),
            before,
            "{h}: the log there is kept"
        );
    }
}

/// A symbolic link where the session's log would go (one that leads nowhere, or to a file
/// elsewhere) is something there that is not this session: the link is left as it is, never
/// followed or replaced, and the session is kept beside it under a new id (Claude Code, Gemini
/// CLI, Pi, Qwen Code, Copilot CLI) or said to be lost, naming the path (Codex), never
/// answered as written under its own id with its log unwritten (new-user trial helper-124, 2:
/// Claude Code counted it new, and exit 0).
#[cfg(unix)]
fn a_link_in_the_way_keeps_it_beside(h: &str) {
    let packed = read(h, &sample(h));
    for target in ["/nonexistent/asp-test", "elsewhere.jsonl"] {
        let home = tmp();
        write(h, home.path(), &packed, false);
        if database(&packed.state, home.path()).is_some() {
            return;
        }
        let (id, log) = main_log(&packed.state, home.path());
        let elsewhere = home.path().join("elsewhere.jsonl");
        fs::write(&elsewhere, b"{\"not\":\"this session\"}\n").unwrap();
        fs::remove_file(&log).unwrap();
        let target = if target.starts_with('/') {
            PathBuf::from(target)
        } else {
            elsewhere.clone()
        };
        std::os::unix::fs::symlink(&target, &log).unwrap();
        let answer = write(h, home.path(), &packed, false);
        assert_ne!(
            answer.sessions.get(&id),
            Some(&id),
            "{h}: kept beside the link to {}: {answer:?}",
            target.display()
        );
        assert!(!answer.already_there.contains(&id), "{h}: {answer:?}");
        if h == "codex" {
            assert!(
                answer
                    .not_taken
                    .iter()
                    .any(|n| n.reason.contains(&*log.to_string_lossy())),
                "{h}: said lost, naming the path: {answer:?}"
            );
        } else {
            assert!(answer.beside.contains(&id), "{h}: kept beside: {answer:?}");
        }
        assert_eq!(
            fs::read_link(&log).unwrap(),
            target,
            "{h}: the link is kept"
        );
        assert_eq!(
            fs::read(&elsewhere).unwrap(),
            b"{\"not\":\"this session\"}\n",
            "{h}: nothing is written through the link"
        );
    }
}

/// Every file the home had that a write of another harness's instructions, memory, MCP servers
/// and settings changed is named in the answer's `writtenInto`, so the owner knows which of
/// their files changed (new-user trial helper-126, 3: an index of memory notes and an
/// instructions file were changed unnamed).
fn files_added_to_are_named(h: &str) {
    use asp_format::StateKind::*;
    let own = read(h, &sample(h));
    let configuration = KindSet::EMPTY
        .with(Instructions)
        .with(Memory)
        .with(Tools)
        .with(Settings);
    let mut changed = 0;
    for (from, packed) in every_source().into_iter().filter(|(f, _)| f != h) {
        // Each run with the configuration kinds, then memory alone: a file changed by the
        // memory it was given is named as memory's.
        for kinds in [configuration, KindSet::EMPTY.with(Memory)] {
            let home = tmp();
            write(h, home.path(), &own, false);
            let before = crate::support::files_in(home.path());
            let mut given = packed.state.clone();
            given.retain_kinds(kinds);
            let carried = ReadBack {
                state: given,
                store: blobs_of(&packed),
                diagnostics: Vec::new(),
            };
            let answer = write(h, home.path(), &carried, false);
            let after = crate::support::files_in(home.path());
            for (path, bytes) in &before {
                if after.get(path).is_none_or(|now| now == bytes) {
                    continue;
                }
                changed += 1;
                let file = home.path().join(path);
                assert!(
                    answer
                        .written_into
                        .iter()
                        .any(|w| w.file == file && kinds.contains(w.kind)),
                    "{from} into {h} ({kinds:?}): {path} changed, and is not named as one of \
                     those kinds: {:#?}",
                    answer.written_into
                );
            }
        }
    }
    // Pi adds nothing to a file there (other instructions are kept beside, its settings are
    // not written over the user's); every other harness merges into some file.
    assert!(
        changed > 0 || h == "pi",
        "{h}: no write changed a file there; nothing was checked"
    );
}

/// MCP servers added to a configuration file the home already had are each named in the
/// answer's `written_into` (by name only: their entries can hold credentials), whichever file
/// and key the harness keeps them under: the harness's own sample makes its file, then another
/// harness's servers are added beside its own.
fn servers_added_to_a_file_there_are_named(h: &str) {
    let own = read(h, &sample(h));
    if own.state.tools.as_ref().is_none_or(Vec::is_empty) {
        return;
    }
    let home = tmp();
    write(h, home.path(), &own, false);
    // Another harness's servers (Claude Code's, or for Claude Code Gemini CLI's).
    let other = if h == "claude-code" {
        "gemini"
    } else {
        "claude-code"
    };
    let carried = read_home(
        other,
        &sample(other),
        KindSet::EMPTY.with(asp_format::StateKind::Tools),
        ReadOptions::default(),
    );
    let answer = write(h, home.path(), &carried, false);
    let servers: Vec<&str> = answer
        .written_into
        .iter()
        .filter(|w| w.kind == asp_format::StateKind::Tools)
        .flat_map(|w| w.what.split("MCP server \"").skip(1))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    let carried_names: Vec<&str> = carried
        .state
        .tools
        .iter()
        .flatten()
        .map(|t| t.name())
        .collect();
    assert!(!servers.is_empty(), "{h}: {answer:?}");
    for name in &servers {
        assert!(carried_names.contains(name), "{h}: {name} in {answer:?}");
    }
    // Each server carried is named as added, or said as not taken.
    for name in carried_names {
        assert!(
            servers.contains(&name) || answer.not_taken.iter().any(|n| n.reason.contains(name)),
            "{h}: {name}: {answer:?}"
        );
    }
}

fn a_diverged_thread_is_kept_beside(h: &str) {
    let packed = read(h, &sample(h));
    let home = tmp();
    write(h, home.path(), &packed, false);
    if let Some((id, db)) = database(&packed.state, home.path()) {
        diverge_row(&db, &id);
        let answer = write(h, home.path(), &packed, false);
        let copy = &answer.sessions[&id];
        assert_ne!(
            copy, &id,
            "{h}: the carried {id} is kept beside the one there"
        );
        assert!(answer.beside.contains(&id), "{h}: {answer:?}");
        let back = read(h, home.path());
        assert!(
            back.session(&id).title.ends_with(" (changed there)"),
            "{h}: the one there is kept"
        );
        assert!(
            back.session(copy).title.ends_with(&format!("~{h}")),
            "{h}: {copy}"
        );
        let again = write(h, home.path(), &packed, false);
        assert_eq!(&again.sessions[&id], copy, "{h}");
        assert!(again.already_there.contains(&id), "{h}: {again:?}");
        return;
    }
    let (id, log) = main_log(&packed.state, home.path());
    let mut changed = fs::read(&log).unwrap();
    crate::support::diverge(&mut changed, b"{\"type\":\"not-from-the-bundle\"}\n");
    fs::write(&log, &changed).unwrap();

    let answer = write(h, home.path(), &packed, false);
    let copy = &answer.sessions[&id];
    assert_ne!(
        copy, &id,
        "{h}: the carried {id} is kept beside the one there"
    );
    // And counted so, not as a new session (trial helper-124, 8: Gemini CLI said "1 new").
    assert!(answer.beside.contains(&id), "{h}: {answer:?}");
    assert!(
        answer.not_taken.iter().all(|n| !n.reason.contains(&id)),
        "{h}: {answer:?}"
    );
    assert_eq!(
        fs::read(&log).unwrap(),
        changed,
        "{h}: the one there is kept"
    );
    // Carried again, the copy is found where it was kept: already there, under its id.
    let again = write(h, home.path(), &packed, false);
    assert_eq!(&again.sessions[&id], copy, "{h}");
    assert!(again.already_there.contains(&id), "{h}: {again:?}");
    let back = read(h, home.path());
    let ids: Vec<&str> = back
        .state
        .sessions
        .iter()
        .flatten()
        .map(|s| s.id.as_str())
        .collect();
    assert!(
        ids.contains(&id.as_str()) && ids.contains(&copy.as_str()),
        "{h}: {ids:?}"
    );
    // The copy's title, in the harness's own title store, carries the marker; the one there
    // keeps its own.
    let original = &packed.session(&id).title;
    assert_eq!(
        back.session(copy).title,
        asp_convert::kit::beside::marked_title(original, h),
        "{h}: the copy is told apart by its title"
    );
    assert_eq!(&back.session(&id).title, original, "{h}");
    // And a session from another harness kept beside is marked with that harness.
    for (from, other) in every_source().into_iter().filter(|(f, _)| f != h) {
        let home = tmp();
        write(h, home.path(), &other, false);
        let Some(s) = other
            .state
            .sessions
            .iter()
            .flatten()
            .find(|s| !s.title.is_empty())
        else {
            continue;
        };
        let first = write(h, home.path(), &other, false);
        let written = &first.sessions[s.id.as_str()];
        // Make the one there differ: a second import of a changed state keeps the copy beside.
        let store = blobs_of(&other);
        let changed = answered_once_more(&other, &other.state, &store, s);
        let again = write_home(h, home.path(), &changed, &store, false, &PathMap::default()).0;
        let copy = &again.sessions[s.id.as_str()];
        if copy == written {
            continue;
        }
        let back = read(h, home.path());
        let harness = s.harness.as_ref().map_or("asp", |x| x.as_str());
        assert_eq!(
            back.session(copy).title,
            asp_convert::kit::beside::marked_title(&back.session(written).title, harness),
            "{from} into {h}"
        );
        break;
    }
    // The same copy is found again on the next import.
    let again = write(h, home.path(), &packed, false);
    assert_eq!(&again.sessions[&id], copy, "{h}");
}

/// A copy of the blobs `r` read, to add to.
fn blobs_of(r: &ReadBack) -> MemoryStore {
    use asp_format::blob::{BlobSink, BlobSource};
    let store = MemoryStore::new();
    for d in r.state.descriptors() {
        store.put(&r.store.read_all(&d).unwrap()).unwrap();
    }
    store
}

/// `state` where session `s` (read into `r`) has one more answer, to be composed from its
/// stream: a different version of what was written from `state`. The new stream goes into
/// `store`.
fn answered_once_more(r: &ReadBack, state: &State, store: &MemoryStore, s: &Session) -> State {
    use asp_format::blob::BlobSink;
    let mut body = r.text(&s.updates);
    body.push_str(
        "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"one more answer\"}}}\n",
    );
    let extra = store.put(body.as_bytes()).unwrap();
    let mut changed = state.clone();
    for c in changed.sessions.iter_mut().flatten() {
        if c.id == s.id {
            c.updates = extra;
            c.native = None;
        }
    }
    changed
}

/// A session without a title (Pi's, until named) is listed by its first prompt. A copy of it
/// kept beside a different version is listed by that prompt too, marked: never by the bare
/// `~<harness>` marker, which would not say which conversation it is.
fn an_untitled_copy_is_told_apart(h: &str) {
    let from = if h == "claude-code" {
        "codex"
    } else {
        "claude-code"
    };
    let other = read(from, &sample(from));
    let store = blobs_of(&other);
    let mut untitled = other.state.clone();
    for s in untitled.sessions.iter_mut().flatten() {
        s.title = String::new();
        s.native = None;
    }
    let s = untitled
        .sessions
        .iter()
        .flatten()
        .find(|s| asp_convert::kit::meta::parent_id(s.meta.as_ref()).is_none())
        .unwrap()
        .clone();
    let home = tmp();
    let first = write_home(
        h,
        home.path(),
        &untitled,
        &store,
        false,
        &PathMap::default(),
    )
    .0;
    let Some(written) = first.sessions.get(s.id.as_str()) else {
        panic!("{from} into {h}: {} not written: {first:?}", s.id);
    };
    let changed = answered_once_more(&other, &untitled, &store, &s);
    let again = write_home(h, home.path(), &changed, &store, false, &PathMap::default()).0;
    let copy = &again.sessions[s.id.as_str()];
    assert_ne!(copy, written, "{from} into {h}: a copy was kept beside");
    let back = read(h, home.path());
    // The one there is listed by its first prompt: by the harness's title, or with none (Pi),
    // by the prompt itself.
    let prompt = other
        .updates(s.id.as_str())
        .iter()
        .find_map(|u| {
            (u["sessionUpdate"] == "user_message_chunk").then(|| u["content"]["text"].as_str())?
        })
        .and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap()
        .to_owned();
    let there = match back.session(written).title.as_str() {
        "" => prompt,
        t => t.to_owned(),
    };
    assert_eq!(
        back.session(copy).title,
        asp_convert::kit::beside::marked_title(&there, from),
        "{from} into {h}"
    );
}

/// The files a write's findings name, in the order found.
fn files_named(findings: &[asp_convert::kit::report::Diagnostic]) -> Vec<Option<&Path>> {
    findings.iter().map(|d| d.file()).collect()
}

fn dry_run_is_exact(h: &str) {
    for (from, packed) in every_source() {
        // Into an empty home, and into one that already holds it, once diverged.
        let home = tmp();
        let before = crate::support::files_in(home.path());
        let (planned, said) = write_home(
            h,
            home.path(),
            &packed.state,
            &packed.store,
            true,
            &PathMap::default(),
        );
        assert!(
            before == crate::support::files_in(home.path()),
            "{from} into {h}: the dry run wrote"
        );
        let (done, found) = packed.write_into(h, home.path());
        assert_eq!(
            planned, done,
            "{from} into {h}: the dry run said something else"
        );
        // Its findings name the files the real run's name, never a scratch copy of them.
        assert_eq!(
            files_named(&said),
            files_named(&found),
            "{from} into {h}: the dry run's findings name other files"
        );
        if let Some((id, db)) = database(&packed.state, home.path()).filter(|_| from == h) {
            diverge_row(&db, &id);
        } else if from == h {
            let (_, log) = main_log(&packed.state, home.path());
            let mut bytes = fs::read(&log).unwrap();
            bytes.splice(
                0..0,
                b"{\"type\":\"not-from-the-bundle\"}\n".iter().copied(),
            );
            fs::write(&log, bytes).unwrap();
        }
        let before = crate::support::files_in(home.path());
        let (planned, said) = write_home(
            h,
            home.path(),
            &packed.state,
            &packed.store,
            true,
            &PathMap::default(),
        );
        assert!(
            before == crate::support::files_in(home.path()),
            "{from} into {h}: the dry run wrote"
        );
        let (done, found) = packed.write_into(h, home.path());
        assert_eq!(
            planned, done,
            "{from} into {h}: the dry run said something else"
        );
        assert_eq!(
            files_named(&said),
            files_named(&found),
            "{from} into {h}: the dry run's findings name other files"
        );
    }
}

fn damage_is_named(h: &str) {
    let packed = read(h, &sample(h));
    let home = tmp();
    write(h, home.path(), &packed, false);
    if let Some((_, db)) = database(&packed.state, home.path()) {
        // A row whose data was cut short: named by its database, table and id.
        let c = rusqlite::Connection::open(&db).unwrap();
        let part: String = c
            .query_row("SELECT id FROM part ORDER BY id LIMIT 1", [], |r| r.get(0))
            .unwrap();
        c.execute(
            "UPDATE part SET data = '{\"this row\": is not JSON' WHERE id = ?1",
            [&part],
        )
        .unwrap();
        drop(c);
        let back = read(h, home.path());
        // Named by the row's own native file, under the database: kept natively, as a
        // damaged line of a log is, so lost only where the session is composed.
        assert!(
            back.diagnostics
                .iter()
                .any(|d| d.severity == Severity::KeptNatively
                    && d.file().is_some_and(|f| f.starts_with(&db))
                    && d.message.contains(&format!("part row {part}"))),
            "{h}: the damaged row {part} of {} is reported: {:#?}",
            db.display(),
            back.diagnostics
        );
        damage_kept_natively_is_lost_elsewhere(h, &back);
        return;
    }
    let (_, log) = main_log(&packed.state, home.path());
    let mut bytes = fs::read(&log).unwrap();
    let lines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    bytes.extend_from_slice(b"{\"this line\": is not JSON\n");
    fs::write(&log, bytes).unwrap();
    let back = read(h, home.path());
    let named = back.diagnostics.iter().any(|d| {
        d.severity.is_not_carried() && d.file() == Some(log.as_path()) && d.line == Some(lines + 1)
    });
    assert!(
        named,
        "{h}: the damaged line {} of {} is reported: {:#?}",
        lines + 1,
        log.display(),
        back.diagnostics
    );
    damage_kept_natively_is_lost_elsewhere(h, &back);
}

/// A damaged place kept natively is not lost while its file travels (a restore into the same
/// harness writes the file as it was), and is lost in any other harness, which is written
/// from the conversation: the session says where it is (`_meta.asp.unreadable`).
fn damage_kept_natively_is_lost_elsewhere(h: &str, back: &ReadBack) {
    let kept: Vec<_> = back
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::KeptNatively)
        .collect();
    if kept.is_empty() {
        return;
    }
    let marked: Vec<&Session> = back
        .state
        .sessions
        .iter()
        .flatten()
        .filter(|s| !asp_convert::kit::meta::unreadable(s.meta.as_ref()).is_empty())
        .collect();
    assert!(
        !marked.is_empty(),
        "{h}: a session says where its damage is: {kept:#?}"
    );
    let own = tmp();
    let (_, said) = back.write_into(h, own.path());
    assert!(
        !said.iter().any(|d| d.severity.is_loss()),
        "{h} into {h}: the native file travels, nothing is lost: {said:#?}"
    );
    let to = if h == "claude-code" {
        "codex"
    } else {
        "claude-code"
    };
    let other = tmp();
    let (_, said) = back.write_into(to, other.path());
    for s in marked {
        assert!(
            said.iter()
                .any(|d| d.severity.is_loss() && d.message.contains(s.id.as_str())),
            "{h} into {to}: session {} is written without what its damaged places hold: {said:#?}",
            s.id
        );
    }
}

fn an_export_reads_no_native_files(h: &str) {
    let export = read_home(
        h,
        &sample(h),
        KindSet::ALL,
        ReadOptions {
            native: false,
            ..ReadOptions::default()
        },
    );
    let full = read(h, &sample(h));
    let sessions = export.state.sessions.as_ref().unwrap();
    assert_eq!(sessions.len(), full.state.sessions.as_ref().unwrap().len());
    for s in sessions {
        assert!(s.native.is_none(), "{h}: {} has native files", s.id);
        let with = full.session(s.id.as_str());
        assert_eq!(
            &asp_format::state::Session {
                native: None,
                ..with.clone()
            },
            s,
            "{h}: {} is the same session, without its files",
            s.id
        );
    }
    // Nothing was stored but what the state refers to: no native file was read into a blob.
    let referred: BTreeSet<_> = export
        .state
        .descriptors()
        .iter()
        .map(|d| d.digest)
        .collect();
    assert_eq!(export.store.len(), referred.len(), "{h}");
}

/// Every sample's settings file holds settings of the harness's own (its theme, providers,
/// UI) beside the session options a state carries: a read of the settings names them, as left
/// out by design, with the file (new-user trial helper-131, 6: five harnesses dropped them
/// with no word). Each name is a key of that file.
fn own_settings_said(h: &str) {
    let r = read_home(
        h,
        &sample(h),
        KindSet::EMPTY.with(StateKind::Settings),
        ReadOptions::default(),
    );
    let said: Vec<&asp_convert::kit::report::Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| {
            d.message
                .contains("itself, not a session, and are not carried")
        })
        .collect();
    assert_eq!(said.len(), 1, "{h}: {:#?}", r.diagnostics);
    let d = said[0];
    assert_eq!(
        d.severity,
        asp_convert::kit::report::Severity::LeftOut,
        "{h}"
    );
    let file = d.file().expect("the settings file");
    let text = fs::read_to_string(file).unwrap();
    let names = d.message.rsplit_once(": ").unwrap().1;
    for name in names.split(", ") {
        let last = name.rsplit('.').next().unwrap();
        assert!(
            text.contains(last),
            "{h}: {name} is not in {}",
            file.display()
        );
    }
}

fn only_the_kinds_asked_for(h: &str) {
    let full = read(h, &sample(h));
    for kind in StateKind::ALL {
        let asked = KindSet::EMPTY.with(kind);
        let r = read_home(h, &sample(h), asked, ReadOptions::default());
        assert!(
            r.state.kinds().iter().all(|k| k == kind),
            "{h}: asked for {kind}, got {}",
            r.state.kinds()
        );
        assert_eq!(
            r.state.kinds().contains(kind),
            full.state.kinds().contains(kind),
            "{h}: {kind} is given alone as it is with the others"
        );
        let home = tmp();
        let written = crate::support::store_of(h, home.path())
            .write(
                &full.state,
                &asp_convert::store::WriteRequest {
                    kinds: Some(asked),
                    dry_run: false,
                    path_map: &PathMap::default(),
                    force: false,
                    restoring: false,
                    blobs: &full.store,
                    diagnostics: &asp_convert::kit::report::Diagnostics::new(),
                    progress: &asp_format::progress::Quiet,
                },
            )
            .unwrap();
        assert!(
            written.answer.taken.iter().all(|k| k == kind)
                && written.answer.not_taken.iter().all(|n| n.kind == kind),
            "{h}: asked to take {kind}: {:?}",
            written.answer
        );
    }
}

fn no_kind_is_given_empty(h: &str) {
    let check = |what: &str, state: &State| {
        for (kind, n) in state.counts() {
            if kind != StateKind::Instructions {
                assert!(n > 0, "{h}: {what} gives {kind} empty");
            }
        }
    };
    check("its sample", &read(h, &sample(h)).state);
    let asp_convert::Store::Harness { harness, .. } = crate::support::store_of(h, &sample(h))
    else {
        unreachable!()
    };
    // A store that exists and holds nothing gives nothing, every kind; so does one beside
    // another harness's whole store (every one of its paths there, empty).
    let empty = tmp();
    let paths = harness.store_paths(&asp_convert::Home::at(empty.path()));
    fs::create_dir_all(&paths[0]).unwrap();
    let r = read(h, empty.path());
    assert_eq!(
        r.state.kinds(),
        KindSet::EMPTY,
        "{h}: an empty store gives no kind"
    );
    for other in CONTRACTED.iter().filter(|o| **o != h) {
        let home = tmp();
        crate::support::copy_dir(&sample(other), home.path());
        for p in harness.store_paths(&asp_convert::Home::at(home.path())) {
            if !p.exists() {
                fs::create_dir_all(&p).unwrap();
            }
        }
        check(&format!("the {other} sample"), &read(h, home.path()).state);
    }
    // The directory form says what it gives by its files: a state written there reads back
    // with the same kinds, none added empty.
    let state = read(h, &sample(h));
    let dir = tmp();
    let target = dir.path().join("state");
    asp_convert::Store::Dir(target.clone())
        .write(
            &state.state,
            &asp_convert::store::WriteRequest {
                kinds: None,
                dry_run: false,
                path_map: &PathMap::default(),
                force: false,
                restoring: false,
                blobs: &state.store,
                diagnostics: &asp_convert::kit::report::Diagnostics::new(),
                progress: &asp_format::progress::Quiet,
            },
        )
        .unwrap();
    let back = read_dir(&target);
    assert_eq!(back.kinds(), state.state.kinds(), "{h}: the directory form");
    check("its sample through the directory form", &back);
    let mut sessions_only = state.state.clone();
    sessions_only.retain_kinds(KindSet::EMPTY.with(StateKind::Sessions));
    let target = dir.path().join("sessions-only");
    asp_convert::Store::Dir(target.clone())
        .write(
            &sessions_only,
            &asp_convert::store::WriteRequest {
                kinds: None,
                dry_run: false,
                path_map: &PathMap::default(),
                force: false,
                restoring: false,
                blobs: &state.store,
                diagnostics: &asp_convert::kit::report::Diagnostics::new(),
                progress: &asp_format::progress::Quiet,
            },
        )
        .unwrap();
    assert_eq!(
        read_dir(&target).kinds(),
        KindSet::EMPTY.with(StateKind::Sessions),
        "{h}: a kind not given is not written into the directory form"
    );
}

fn read_dir(dir: &Path) -> State {
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let store = MemoryStore::new();
    asp_convert::Store::Dir(dir.to_path_buf())
        .read(&asp_convert::store::ReadRequest::new(
            &store,
            &diagnostics,
            &asp_format::progress::Quiet,
        ))
        .unwrap()
}

fn imports_pass_every_validator(h: &str) {
    let packed = read(h, &sample(h));
    for to in CONTRACTED {
        let home = tmp();
        let answer = write(to, home.path(), &packed, false);
        let problems = validator(to).expect("checked above")(home.path());
        assert!(
            problems.is_empty(),
            "{h} into {to}: the {to} validator says:\n{}\n{answer:?}",
            problems.join("\n")
        );
        // And the target's own reader reads what was written without damage.
        let back = read(to, home.path());
        let damage: Vec<_> = back
            .diagnostics
            .iter()
            .filter(|d| d.severity.is_not_carried())
            .collect();
        assert!(damage.is_empty(), "{h} into {to}: {damage:#?}");
    }
}

fn one_session_reads_alone(h: &str) {
    let full = read(h, &sample(h));
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let survey = crate::support::store_of(h, &sample(h))
        .survey(&diagnostics)
        .unwrap();
    for entry in &survey.sessions {
        let store = MemoryStore::new();
        let d = asp_convert::kit::report::Diagnostics::new();
        let sessions = asp_convert::store::Sessions::Only(vec![entry.id.clone()]);
        let mut req =
            asp_convert::store::ReadRequest::new(&store, &d, &asp_format::progress::Quiet);
        req.kinds = KindSet::EMPTY.with(StateKind::Sessions);
        req.sessions = &sessions;
        let alone = crate::support::store_of(h, &sample(h)).read(&req).unwrap();
        let alone = alone.sessions.unwrap_or_default();
        assert!(
            alone.iter().any(|s| s.id == entry.id),
            "{h}: {} is read when named",
            entry.id
        );
        for s in &alone {
            let with_all = full
                .state
                .sessions
                .iter()
                .flatten()
                .find(|f| f.id == s.id)
                .unwrap();
            assert_eq!(s, with_all, "{h}: {} reads alone as with the others", s.id);
        }
        // What is read is only the entry's own (and its subagents').
        let own: BTreeSet<_> = survey
            .select(std::slice::from_ref(&entry.id), "asp sessions")
            .unwrap()
            .entries
            .iter()
            .flat_map(|e| e.files.iter().map(|f| f.path.clone()))
            .collect();
        for s in &alone {
            for f in s.native.iter().flat_map(|n| &n.files) {
                // A row document is its database's (`<database>/<table>/<key>.row.json`).
                let path = f.path.under(&sample(h));
                let of_db = path.ancestors().nth(2).is_some_and(|db| own.contains(db));
                assert!(
                    own.contains(&path) || (f.path.as_str().ends_with(".row.json") && of_db),
                    "{h}: {} is not {}'s",
                    f.path,
                    entry.id
                );
            }
        }
    }
}

fn a_growing_file_is_read_as_surveyed(h: &str) {
    let packed = read(h, &sample(h));
    let home = tmp();
    write(h, home.path(), &packed, false);
    if database(&packed.state, home.path()).is_some() {
        // A database is not appended to: what it holds is read in one read transaction.
        return;
    }
    let store = crate::support::store_of(h, home.path());
    let survey = store
        .survey(&asp_convert::kit::report::Diagnostics::new())
        .unwrap();
    let (id, log) = main_log(&packed.state, home.path());
    let before = fs::read(&log).unwrap();
    // The harness goes on writing after the survey: a whole line and half of the next.
    let mut f = fs::OpenOptions::new().append(true).open(&log).unwrap();
    use std::io::Write;
    f.write_all(b"{\"type\":\"written-after-the-survey\"}\n{\"type\":\"half")
        .unwrap();
    drop(f);
    let entry = survey
        .sessions
        .iter()
        .find(|e| e.files.iter().any(|f| f.path == log))
        .unwrap_or_else(|| panic!("{h}: {} is surveyed", log.display()));
    let blobs = MemoryStore::new();
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let Some(harness) = asp_convert::harness(h) else {
        unreachable!()
    };
    let read = harness
        .read_session(
            &asp_convert::harness::SessionContext {
                home: &asp_convert::Home::at(home.path()),
                blobs: &blobs,
                diagnostics: &diagnostics,
                progress: &asp_format::progress::Quiet,
                options: ReadOptions::default(),
            },
            entry,
        )
        .unwrap();
    let s = read.iter().find(|s| s.id.as_str() == id).unwrap();
    let rel = log.strip_prefix(home.path()).unwrap().to_str().unwrap();
    let native = s
        .native
        .iter()
        .flat_map(|n| &n.files)
        .find(|f| f.path.as_str() == rel)
        .unwrap();
    use asp_format::blob::BlobSource;
    assert!(
        blobs.read_all(&native.content).unwrap() == before,
        "{h}: only what the survey saw is read"
    );
    assert!(
        diagnostics
            .items()
            .iter()
            .all(|d| !d.severity.is_not_carried()),
        "{h}: no half line was read: {:#?}",
        diagnostics.items()
    );
}

/// A FIFO where a session's file was (planted, or left by a tool) is a file that is not
/// there: named, and the rest packed. Opening it for reading waits for a writer that never
/// comes, which hung `asp backup` for good, with the repository's lock held (found by a new
/// user's trial).
#[cfg(unix)]
fn a_fifo_is_named_not_waited_on(h: &str) {
    let packed = read(h, &sample(h));
    let home = tmp();
    write(h, home.path(), &packed, false);
    if database(&packed.state, home.path()).is_some() {
        // Sessions are rows of a database, not files.
        return;
    }
    let (_, log) = main_log(&packed.state, home.path());
    fs::remove_file(&log).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&log)
        .status()
        .unwrap();
    assert!(made.success());
    let out = tmp();
    let run = crate::support::asp_pack()
        .args(["--from", h, "--home"])
        .arg(home.path())
        .arg("-o")
        .arg(out.path().join("b.aspstate"))
        .arg("--json")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.code().is_some(),
        "{h}: the pack was stopped after waiting 120 s: {stderr}"
    );
    assert!(
        out.path().join("b.aspstate").exists(),
        "{h}: the rest is packed: {stderr}"
    );
    // Named as what it is: a file that is not one to read, not a session without its file.
    let said: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let named: Vec<&serde_json::Value> = said["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"].as_str() == log.to_str())
        .collect();
    assert!(
        named.iter().any(|f| {
            let m = f["message"].as_str().unwrap_or("");
            m.contains("not a regular file") || m.contains("not a readable file")
        }),
        "{h}: {} is named as not a regular file: {said:#}",
        log.display()
    );
}

fn threads_do_not_change_the_bundle(h: &str) {
    let dir = tmp();
    let pack = |threads: &str| {
        let out = dir.path().join(format!("t{threads}.aspstate"));
        let o = pack_sample(h, &out, &["--threads", threads]);
        (fs::read(&out).unwrap(), o.stderr)
    };
    let (one, one_said) = pack("1");
    for n in ["2", "7"] {
        let (many, said) = pack(n);
        assert!(one == many, "{h}: the bundle packed on {n} threads differs");
        assert_eq!(one_said, said, "{h}: {n} threads report in another order");
    }
}

/// spec/aspstate.md §11: packing a directory written from a bundle gives that bundle back. The
/// directory read knows no store, so each update stream must derive from the same native
/// transcript (its dictionary, §4) as when the harness was read.
fn the_directory_form_packs_back_to_the_bundle(h: &str) {
    use crate::support::{asp_pack, asp_unpack};
    let dir = tmp();
    let packed = dir.path().join("home.aspstate");
    pack_sample(h, &packed, &[]);
    let plain = dir.path().join("plain");
    asp_unpack()
        .arg(&packed)
        .arg("--to-dir")
        .arg(&plain)
        .assert()
        .success();
    let again = dir.path().join("again.aspstate");
    asp_pack()
        .arg("--from-dir")
        .arg(&plain)
        .arg("-o")
        .arg(&again)
        .assert()
        .success();
    assert!(
        fs::read(&packed).unwrap() == fs::read(&again).unwrap(),
        "{h}: the bundle packed from the directory differs from the one it was unpacked from"
    );
}

/// The harnesses whose converter names each session's native transcript
/// (`Harness::transcript`); the others' streams are compressed alone (spec/aspstate.md §4).
const NAME_A_TRANSCRIPT: &[&str] = &["claude-code", "codex", "copilot", "gemini", "pi"];

/// spec/aspstate.md §4: a session's update stream repeats its native transcript's text, so a
/// bundle compresses it against the transcript its harness names, found from the state alone.
fn streams_go_against_their_transcript(h: &str) {
    let dir = tmp();
    let packed = dir.path().join("home.aspstate");
    pack_sample(h, &packed, &[]);
    let harness = asp_convert::harness(h).expect("a registered harness");
    let b = asp_format::bundle::Bundle::open(&packed).unwrap();
    let mut against = 0;
    for s in b.manifest().state.sessions.iter().flatten() {
        let transcript = s
            .native
            .as_ref()
            .and_then(|n| harness.transcript(&s.id, n, s.meta.as_ref()));
        let (_, dictionary) = b.layer_of(&s.updates.digest).expect("a layer");
        assert_eq!(
            dictionary,
            transcript.map(|t| t.digest),
            "{h}: session {}'s stream",
            s.id
        );
        against += usize::from(transcript.is_some());
    }
    assert_eq!(
        against > 0,
        NAME_A_TRANSCRIPT.contains(&h),
        "{h}: {against} streams compressed against their transcript"
    );
}

/// The harnesses whose survey names each session's project (`Harness::surveyed_project`), so
/// a pack compresses their transcripts against a predicted dictionary as it reads them.
const PREDICT_PROJECTS: &[&str] = &["claude-code", "codex", "gemini", "pi"];

/// spec/aspstate.md §4.1: a project is the sessions with one `cwd`, so what the survey
/// predicts a project's dictionary by names sessions of one `cwd` (a wrong prediction costs
/// a second compression, never other bytes).
fn a_surveyed_project_is_one_cwd(h: &str) {
    let full = read(h, &sample(h));
    let harness = asp_convert::harness(h).expect("a registered harness");
    let survey = crate::support::store_of(h, &sample(h))
        .survey(&asp_convert::kit::report::Diagnostics::new())
        .unwrap();
    let mut cwds: std::collections::BTreeMap<PathBuf, BTreeSet<Option<String>>> =
        Default::default();
    for e in &survey.sessions {
        if let Some(project) = harness.surveyed_project(e) {
            let cwd = full.session(e.id.as_str()).cwd.clone();
            cwds.entry(project).or_default().insert(cwd);
        }
    }
    for (project, cwd) in &cwds {
        assert_eq!(cwd.len(), 1, "{h}: {} names {cwd:?}", project.display());
    }
    assert_eq!(
        !cwds.is_empty(),
        PREDICT_PROJECTS.contains(&h),
        "{h}: projects {cwds:?}"
    );
}

/// Packs harness `h`'s sample into `out` with `args`: it does what was asked (exit 0, or 3
/// when the sample holds what a bundle cannot keep). What it printed.
fn pack_sample(h: &str, out: &Path, args: &[&str]) -> std::process::Output {
    let o = crate::support::pack_home(h, sample(h), out)
        .args(args)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 3)), "{h}: {o:?}");
    o
}

fn pack_session_selects(h: &str) {
    let full = read(h, &sample(h));
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let survey = crate::support::store_of(h, &sample(h))
        .survey(&diagnostics)
        .unwrap();
    let first = &survey.sessions[0];
    let dir = tmp();
    let out = dir.path().join("one.aspstate");
    pack_sample(h, &out, &["--session", first.id.as_str()]);
    let bundle = asp_format::bundle::Bundle::open(&out).unwrap();
    let packed = &bundle.manifest().state;
    let expected: BTreeSet<String> = survey
        .select(std::slice::from_ref(&first.id), "asp sessions")
        .unwrap()
        .entries
        .iter()
        .map(|e| e.id.to_string())
        .collect();
    let ids: BTreeSet<String> = packed
        .sessions
        .iter()
        .flatten()
        .map(|s| s.id.to_string())
        .collect();
    assert!(ids.contains(first.id.as_str()), "{h}: {ids:?}");
    for id in &ids {
        let s = full.session(id);
        let parent = asp_convert::kit::meta::parent_id(s.meta.as_ref());
        assert!(
            expected.contains(id) || parent.is_some_and(|p| ids.contains(p)),
            "{h}: {id} was packed, but it is neither {} nor one of its subagents",
            first.id
        );
    }
    assert_eq!(
        packed.kinds(),
        KindSet::EMPTY.with(StateKind::Sessions),
        "{h}: one conversation carried is that conversation, as export and unpack take it"
    );
    let with_tools = dir.path().join("with-tools.aspstate");
    pack_sample(
        h,
        &with_tools,
        &["--session", first.id.as_str(), "--kinds", "sessions,tools"],
    );
    let bundle = asp_format::bundle::Bundle::open(&with_tools).unwrap();
    assert_eq!(
        bundle.manifest().state.tools,
        full.state.tools,
        "{h}: --kinds adds the other kinds on purpose"
    );
    let missing = crate::support::pack_home(h, sample(h), dir.path().join("none.aspstate"))
        .args(["--session", "no-such-session"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2), "{h}: a usage error");
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no session no-such-session"),
        "{h}: {}",
        String::from_utf8_lossy(&missing.stderr)
    );
}

/// `asp-pack --session` of a subagent session packs what `asp export --session` and
/// `asp-unpack --session` take of the same id from the whole pack: that subagent with its own
/// subagents, not its parent, whether the harness keeps it as an entry of its own (OpenCode,
/// Codex) or reads it with its parent (Claude Code, Gemini CLI, Qwen Code). A sample without
/// subagents has nothing to check.
fn pack_session_takes_a_subagent_as_export_does(h: &str) {
    let dir = tmp();
    let whole = dir.path().join("whole.aspstate");
    pack_sample(h, &whole, &[]);
    let whole = asp_format::bundle::Bundle::open(&whole).unwrap();
    let state = &whole.manifest().state;
    let subagents = state
        .sessions
        .iter()
        .flatten()
        .filter(|s| asp_convert::kit::meta::parent_id(s.meta.as_ref()).is_some());
    for (n, sub) in subagents.enumerate() {
        let out = dir.path().join(format!("subagent-{n}.aspstate"));
        pack_sample(h, &out, &["--session", sub.id.as_str()]);
        let packed = asp_format::bundle::Bundle::open(&out).unwrap();
        let (taken, missing) = state.select(
            KindSet::EMPTY.with(StateKind::Sessions),
            Some(&[sub.id.to_string()]),
        );
        assert!(missing.is_empty(), "{h}: {missing:?}");
        assert_eq!(
            packed.manifest().state.sessions,
            taken.sessions,
            "{h}: --session {} packs that subagent session as export takes it",
            sub.id
        );
    }
}

/// A backup of nothing must not succeed: a home that does not exist, or that holds no store of
/// the harness, is an error (exit 1) naming what was looked for; a store that exists and is
/// empty packs as "0 sessions".
fn no_store_is_an_error(h: &str) {
    let dir = tmp();
    let out = dir.path().join("b.aspstate");
    let missing = dir.path().join("no-such-home");
    let o = crate::support::pack_home(h, &missing, &out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{h}: {said}");
    assert!(
        said.contains("does not exist") && said.contains(&missing.display().to_string()),
        "{h}: {said}"
    );
    assert!(!out.exists(), "{h}: no bundle is written");

    let home = dir.path().join("home");
    fs::create_dir(&home).unwrap();
    let o = crate::support::pack_home(h, &home, &out).output().unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{h}: {said}");
    let asp_convert::Store::Harness { harness, home: at } = crate::support::store_of(h, &home)
    else {
        unreachable!()
    };
    let looked_for = harness.store_paths(&at);
    assert!(said.contains(&format!("holds no {h} store")), "{h}: {said}");
    for p in &looked_for {
        assert!(said.contains(&p.display().to_string()), "{h}: {said}");
    }
    assert!(!out.exists(), "{h}: no bundle is written");

    fs::create_dir_all(&looked_for[0]).unwrap();
    let o = crate::support::pack_home(h, &home, &out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{h}: {o:?}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("packed 0 sessions"),
        "{h}: {o:?}"
    );
}

/// A setting is written into a harness only with a value it accepts: a model of its own
/// provider, a mode from its own list; anything else is not taken, with the one rule's reason.
/// And whatever another harness's whole state brings, the model read back is one it runs.
fn settings_only_as_accepted(h: &str) {
    use asp_convert::kit::accepted::{Provider, Runs};
    use asp_format::state::{SettingValue, Settings};
    let asp_convert::Store::Harness { harness, .. } = crate::support::store_of(h, &sample(h))
    else {
        unreachable!()
    };
    let accepts = harness.accepts();
    if !harness.capabilities().import.contains(StateKind::Settings) {
        // A harness that takes no settings writes none: checked by "only the kinds asked for".
        return;
    }
    let with = |id: &str, v: &str| State {
        settings: Some(Settings::from([(
            id.to_owned(),
            SettingValue::Select(v.to_owned()),
        )])),
        ..State::default()
    };
    for model in [
        "claude-opus-4-6",
        "gpt-5.3-codex",
        "gemini-2.5-pro",
        "opus",
        "anthropic/claude-opus-4-6",
    ] {
        let home = tmp();
        let answer = write_home(
            h,
            home.path(),
            &with("model", model),
            &MemoryStore::new(),
            false,
            &PathMap::default(),
        )
        .0;
        // Literal expectations, not the rule's own answer: a one-provider harness takes its
        // provider's models by their own ids only; Pi and OpenCode take `provider/model`, and
        // a full model id of a provider they both know by name with that name before it (an
        // alias, `opus`, names no model there).
        let own = match accepts.runs {
            Runs::One(Provider::Anthropic) => matches!(model, "claude-opus-4-6" | "opus"),
            Runs::One(Provider::OpenAi) => model == "gpt-5.3-codex",
            Runs::One(Provider::Google) => model == "gemini-2.5-pro",
            Runs::One(Provider::Alibaba) => false,
            Runs::ProviderSlashModel => model != "opus",
            Runs::Several(ps) => match model {
                "claude-opus-4-6" | "opus" => ps.contains(&Provider::Anthropic),
                "gpt-5.3-codex" => ps.contains(&Provider::OpenAi),
                "gemini-2.5-pro" => ps.contains(&Provider::Google),
                _ => false,
            },
        };
        let written = match (accepts.runs, model) {
            (Runs::ProviderSlashModel, "claude-opus-4-6") => "anthropic/claude-opus-4-6",
            (Runs::ProviderSlashModel, "gpt-5.3-codex") => "openai/gpt-5.3-codex",
            (Runs::ProviderSlashModel, "gemini-2.5-pro") => "google/gemini-2.5-pro",
            _ => model,
        };
        if own {
            assert!(answer.not_taken.is_empty(), "{h} {model}: {answer:?}");
            let back = read(h, home.path()).state.settings.unwrap_or_default();
            assert_eq!(
                back.get("model"),
                Some(&SettingValue::Select(written.to_owned())),
                "{h}"
            );
        } else {
            let reasons: Vec<&str> = answer.not_taken.iter().map(|n| n.reason.as_str()).collect();
            assert_eq!(
                reasons,
                [accepts.model(model).unwrap_err().as_str()],
                "{h} {model}"
            );
            assert!(
                !answer.taken.contains(StateKind::Settings),
                "{h} {model}: {answer:?}"
            );
        }
    }
    // Codex's model with the provider it ran through: where models are provider/model, the
    // provider goes into the model written, so that setting is taken with it; when the model
    // is not written (another provider, or another model already set), it is not taken.
    if accepts.runs == Runs::ProviderSlashModel {
        let codex = |model: &str, provider: &str| State {
            settings: Some(Settings::from([
                ("model".to_owned(), SettingValue::Select(model.to_owned())),
                (
                    "model_provider".to_owned(),
                    SettingValue::Select(provider.to_owned()),
                ),
            ])),
            ..State::default()
        };
        let reasons = |answer: &ImportAnswer| -> Vec<String> {
            answer.not_taken.iter().map(|n| n.reason.clone()).collect()
        };
        let home = tmp();
        let into = |state: &State| {
            write_home(
                h,
                home.path(),
                state,
                &MemoryStore::new(),
                false,
                &PathMap::default(),
            )
            .0
        };
        // Written, then already there: either way the provider is in the model.
        for _ in 0..2 {
            let answer = into(&codex("gpt-5.5", "openai"));
            assert!(answer.not_taken.is_empty(), "{h}: {answer:?}");
            assert!(answer.taken.contains(StateKind::Settings), "{h}");
        }
        let back = read(h, home.path()).state.settings.unwrap_or_default();
        assert_eq!(
            back.get("model"),
            Some(&SettingValue::Select("openai/gpt-5.5".to_owned())),
            "{h}"
        );
        // Another model is set there now: neither the model nor its provider is written.
        let answer = into(&codex("gpt-5.3-codex", "openai"));
        let said = reasons(&answer);
        assert_eq!(said.len(), 2, "{h}: {said:?}");
        assert!(said[0].contains("already sets"), "{h}: {said:?}");
        assert!(said[1].contains("\"model_provider\""), "{h}: {said:?}");
        // Ran through another provider: the model is refused, and so is the provider.
        let answer = into(&codex("gpt-5.5", "azure"));
        let said = reasons(&answer);
        assert_eq!(said.len(), 2, "{h}: {said:?}");
        assert!(
            said[0].contains("ran through the model provider"),
            "{h}: {said:?}"
        );
        assert!(said[1].contains("\"model_provider\""), "{h}: {said:?}");
    }
    // Every mode any harness uses, and the ones that stop or unguard a harness.
    for mode in [
        "auto",
        "autoEdit",
        "acceptEdits",
        "plan",
        "yolo",
        "full-access",
        "dontAsk",
    ] {
        let home = tmp();
        let answer = write_home(
            h,
            home.path(),
            &with("mode", mode),
            &MemoryStore::new(),
            false,
            &PathMap::default(),
        )
        .0;
        if !answer.taken.contains(StateKind::Settings) {
            assert_eq!(answer.not_taken.len(), 1, "{h} {mode}: {answer:?}");
        }
    }
    // Every other sample's whole state: the model read back is one this harness runs.
    for (from, packed) in every_source() {
        let home = tmp();
        write(h, home.path(), &packed, false);
        let back = read(h, home.path()).state.settings.unwrap_or_default();
        if let Some(SettingValue::Select(m)) = back.get("model") {
            assert!(accepts.model(m).is_ok(), "{from} into {h}: model {m}");
        }
    }
}

/// After an import, each session written (subagents travel with their parent) has the command
/// that resumes it in this harness, naming its new id; `--json` carries the same under
/// `_meta.asp.resume`, the protocol's own fields as they are.
fn resume_commands(h: &str) {
    for (from, packed) in every_source() {
        let home = tmp();
        let written = crate::support::store_of(h, home.path())
            .write(
                &packed.state,
                &asp_convert::store::WriteRequest {
                    kinds: None,
                    dry_run: false,
                    path_map: &PathMap::default(),
                    force: false,
                    restoring: false,
                    blobs: &packed.store,
                    diagnostics: &asp_convert::kit::report::Diagnostics::new(),
                    progress: &asp_format::progress::Quiet,
                },
            )
            .unwrap();
        for s in packed.state.sessions.iter().flatten() {
            if asp_convert::kit::meta::parent_id(s.meta.as_ref()).is_some() {
                continue;
            }
            let Some(new) = written.answer.sessions.get(s.id.as_str()) else {
                continue;
            };
            let cmd = written
                .resume
                .get(new)
                .unwrap_or_else(|| panic!("{from} into {h}: no resume command for {new}"));
            assert!(cmd.ends_with(&format!(" {new}")), "{from} into {h}: {cmd}");
            if let Some(cwd) = s.cwd.as_deref().filter(|_| cmd.starts_with("cd ")) {
                assert!(cmd.contains(cwd), "{from} into {h}: {cmd}");
            }
        }
    }
    let dir = tmp();
    let o = crate::support::asp_unpack()
        .arg(samples().join("state.aspstate"))
        .args(["--to", h, "--json", "--home"])
        .arg(dir.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let resume = v["_meta"]["asp"]["resume"]
        .as_object()
        .expect("_meta.asp.resume");
    for (new, cmd) in resume {
        assert!(
            v["sessions"]
                .as_object()
                .unwrap()
                .values()
                .any(|x| x == new),
            "{h}: {new} is a session written"
        );
        assert!(cmd.as_str().unwrap().contains(new.as_str()), "{h}: {cmd}");
    }
    assert!(!resume.is_empty(), "{h}: {v}");
    let o = crate::support::asp_unpack()
        .arg(samples().join("state.aspstate"))
        .args(["--to", h, "--home"])
        .arg(crate::support::new_home(dir.path().join("again")))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("to continue:"), "{h}: {said}");
    for cmd in resume.values() {
        let cmd = cmd.as_str().unwrap();
        let (_, id) = cmd.rsplit_once(' ').unwrap();
        assert!(said.contains(id), "{h}: {said}");
    }
}

/// Session ids come from other machines and may be anything but empty or control characters:
/// `../../.ssh` or an absolute path. Whatever a bundle calls its sessions (and their parents),
/// writing it puts nothing outside the home: each session is written under a name the
/// converter made, or refused.
fn hostile_ids_stay_inside(h: &str) {
    for (from, packed) in every_source() {
        let dir = tmp();
        let home = dir.path().join("home");
        fs::create_dir(&home).unwrap();
        let outside = dir.path().join("outside");
        let mut text = serde_json::to_string(&packed.state).unwrap();
        for (i, s) in packed.state.sessions.iter().flatten().enumerate() {
            let id = s.id.as_str();
            // Climbing past the root from any depth, then down into `outside`; or absolute.
            let hostile = if i % 2 == 0 {
                format!(
                    "{}{}/{id}",
                    "../".repeat(64),
                    outside.display().to_string().trim_start_matches('/')
                )
            } else {
                format!("{}/{id}", outside.display())
            };
            text = text.replace(
                &serde_json::to_string(id).unwrap(),
                &serde_json::to_string(&hostile).unwrap(),
            );
        }
        let state: State = serde_json::from_str(&text).unwrap();
        let written = crate::support::try_write_home(
            h,
            &home,
            &state,
            &packed.store,
            false,
            &PathMap::default(),
        );
        let strays: Vec<PathBuf> = crate::support::files_under(dir.path())
            .into_iter()
            .filter(|p| !p.starts_with(&home))
            .collect();
        assert!(
            strays.is_empty(),
            "{from} into {h}: written outside the home: {strays:?}"
        );
        // Refused per session, not by the writer's own check failing the whole import.
        written.unwrap_or_else(|e| panic!("{from} into {h}: {e}"));
    }
}

#[cfg(feature = "claude-code")]
#[test]
fn claude_code_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("claude-code")
}
#[cfg(feature = "codex")]
#[test]
fn codex_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("codex")
}
#[cfg(feature = "gemini")]
#[test]
fn gemini_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("gemini")
}
#[cfg(feature = "pi")]
#[test]
fn pi_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("pi")
}
#[cfg(feature = "qwen")]
#[test]
fn qwen_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("qwen")
}
#[cfg(feature = "opencode")]
#[test]
fn opencode_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("opencode")
}
#[cfg(feature = "copilot")]
#[test]
fn copilot_reports_updates_it_cannot_keep_as_not_carried() {
    updates_left_out_are_not_carried("copilot")
}

/// An update of a kind the harness has no place for is either read back from the written
/// session or reported as not carried (so `--strict` exits 3), never only as a note.
fn updates_left_out_are_not_carried(h: &str) {
    let id = "telegram:77";
    let store = MemoryStore::new();
    let update = |u: serde_json::Value| serde_json::json!({"sessionId": id, "update": u});
    let session = serde_json::json!({
        "id": id, "title": "T", "harness": "opencode", "cwd": "/tmp/x",
        "updatedAt": "2026-12-01T10:00:00.000Z",
        "updates": [
            update(serde_json::json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}})),
            update(serde_json::json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "deploy", "description": "ship it"}]})),
            update(serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})),
        ],
    });
    let export: asp_format::export::ExportState =
        serde_json::from_value(serde_json::json!({"sessions": [session]})).unwrap();
    let state = export.into_state(&store).unwrap();
    let home = tmp();
    let (answer, diagnostics) =
        write_home(h, home.path(), &state, &store, false, &PathMap::default());
    assert!(answer.sessions.contains_key(id), "{h}: {answer:?}");
    let kind = "available_commands_update";
    let back = read(h, home.path());
    let kept = back.state.sessions.iter().flatten().any(|s| {
        crate::support::updates_of(&back.store, s)
            .iter()
            .any(|u| u["sessionUpdate"] == kind)
    });
    let reported = diagnostics
        .iter()
        .any(|d| d.severity.is_not_carried() && d.to_string().contains(kind));
    assert!(
        kept || reported,
        "{h}: the {kind} update is neither kept nor reported as not carried: {diagnostics:?}"
    );
}

/// A file where a harness keeps a folder (`chats`, `session-state`, a project's folder) is
/// named as such, and nothing is written under it: it was said as "File exists (os error
/// 17)", or as 100 different versions of each session already there (found by a new user's
/// trial).
#[test]
fn a_file_where_a_store_keeps_a_folder_is_named() {
    let claude = read("claude-code", &sample("claude-code"));
    for (to, folder) in [
        ("qwen", ".qwen/projects/-home-dev-shop/chats"),
        ("copilot", ".copilot/session-state"),
        ("pi", ".pi/agent/sessions/--home-dev-shop--"),
        ("codex", ".codex/sessions"),
    ] {
        if !CONTRACTED.contains(&to) {
            continue;
        }
        let home = tmp();
        let file = home.path().join(folder);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, b"").unwrap();
        let tried = crate::support::try_write_home(
            to,
            home.path(),
            &claude.state,
            &claude.store,
            false,
            &PathMap::default(),
        );
        let said = match tried {
            Err(e) => e.to_string(),
            Ok((answer, diagnostics)) => format!("{answer:?} {diagnostics:?}"),
        };
        assert!(
            said.contains(folder) && said.contains("is a file where"),
            "{to}: {said}"
        );
        assert_eq!(fs::read(&file).unwrap(), b"", "{to}");
    }
}
