//! The Gemini CLI converter, pinned against `samples/gemini/EXPECTED.md`,
//! `tests/fixtures/gemini/EXPECTED.md` and `spec/harnesses/gemini.md`: reading (log replay,
//! ACP mapping, every other kind), writing (byte-identical restore, no-overwrite, foreign
//! sessions Gemini lists, memory and settings merges, dry runs), through the library and
//! through the binaries, and the migration of other harnesses' samples.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::ReadBack as Read;
use crate::support::{asp_pack, asp_unpack, new_home, pack_home, samples, tmp};
use asp_convert::harness::ReadOptions;
use asp_convert::kit::conversation::{Item, fold};
use asp_convert::kit::pathmap::PathMap;
use asp_convert::kit::report::{Diagnostic, Severity};
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource, MemoryStore};
use asp_format::bundle::Bundle;
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::RelPath;
use asp_format::state::{McpServer, MemoryNote, NoteBody, Origin, SettingValue, State};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Helpers

const HARNESS: &str = "gemini";

/// The UUID Gemini sessions are written under for a name (a non-UUID id, a kept-beside copy):
/// the converter's name-based UUIDs, in the namespace compatibility freezes.
fn name_uuid(name: &str) -> String {
    asp_convert::kit::uuid::name_based("asp:gemini:", name)
}

fn sample_home() -> PathBuf {
    samples().join("gemini")
}

fn fixture(name: &str) -> PathBuf {
    crate::support::root()
        .join("tests/fixtures/gemini")
        .join(name)
}

fn read_home(home: &Path) -> Read {
    read_kinds(home, KindSet::ALL)
}

fn read_kinds(home: &Path, kinds: KindSet) -> Read {
    crate::support::read_home(HARNESS, home, kinds, ReadOptions::default())
}

fn kinds(updates: &[Value]) -> Vec<&str> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect()
}

fn count(updates: &[Value], kind: &str) -> usize {
    kinds(updates).iter().filter(|k| **k == kind).count()
}

fn text_of(u: &Value) -> &str {
    u["content"]["text"].as_str().unwrap_or("")
}

/// Writes a state into a Gemini home through the library.
fn write(
    home: &Path,
    state: &State,
    blobs: &dyn BlobSource,
    dry_run: bool,
) -> (ImportAnswer, Vec<Diagnostic>) {
    crate::support::write_home(HARNESS, home, state, blobs, dry_run, &PathMap::default())
}

/// The sample state (a Claude Code session and a Codex session `telegram:42`).
fn state_bundle() -> Bundle {
    Bundle::open(&samples().join("state.aspstate")).unwrap()
}

fn chat_files(home: &Path) -> BTreeMap<String, Vec<u8>> {
    crate::support::files_in(&home.join(".gemini/tmp"))
        .into_iter()
        .filter(|(p, _)| p.contains("/chats/"))
        .collect()
}

/// The sample's `issues` MCP server is trusted (`trust: true`) in its settings.json; a
/// bundle never grants that, so a restore takes everything but that one grant.
fn everything_but_the_trust_of_issues(answer: &ImportAnswer) {
    let not_taken: Vec<(StateKind, &str)> = answer
        .not_taken
        .iter()
        .map(|n| (n.kind, n.reason.as_str()))
        .collect();
    assert_eq!(not_taken.len(), 1, "{answer:?}");
    assert_eq!(not_taken[0].0, StateKind::Tools);
    assert!(
        not_taken[0]
            .1
            .starts_with("MCP server \"issues\": trust: true (its tool calls would run without asking) not carried"),
        "{}",
        not_taken[0].1
    );
}

const S1: &str = "fed50604-91d7-43a0-ae1f-8998673c3ced";
const S2: &str = "5f877e48-22f2-49ab-8055-0194661aee73";
const S3: &str = "74fc793d-e13b-4fc3-a859-050b7745d5a6";
const S4: &str = "e4b28117-0162-4d21-ac86-d4a4c098583b";
const S4B: &str = "75019869-95e4-4509-a6d3-4409df55c502";
const S5: &str = "3b9e1f0a-6c2d-4e8b-a7f5-91d2c4e6b803";

// ---------------------------------------------------------------------------------------
// Reading sessions (samples/gemini/EXPECTED.md §1-5)

#[test]
fn every_chat_of_the_sample_is_one_session_with_its_project_and_title() {
    let r = read_home(&sample_home());
    let sessions = r.state.sessions.as_ref().unwrap();
    let mut ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, [S5, S2, S3, S4B, S4, S1]);
    let expect = [
        (
            S1,
            "/home/dev/code/shop",
            "Fix discount codes in checkout total",
            "2026-11-23T09:14:40.935Z",
        ),
        (
            S2,
            "/home/dev/code/shop",
            "Add tests for VIP25 and for an unknown code, then run the suite.",
            "2026-11-25T16:42:58.411Z",
        ),
        (
            S3,
            "/home/dev/work/Shop",
            "Issue #142 says discount codes are case-sensitive in this shop too. Read the issue, check how others normalise coupon codes, and find where we parse them.",
            "2026-11-27T10:05:36.188Z",
        ),
        (
            S4,
            "/home/dev/work/Shop",
            "How does @src/checkout.ts round the discount?",
            "2026-11-27T10:07:31.026Z",
        ),
        (
            // A subagent's `summary` is its JSON report: its title is the task its parent gave.
            S4B,
            "/home/dev/work/Shop",
            "Find every place where discount/coupon codes are parsed, looked up or compared in this repository, and report whether the lookup is case-sensitive or whitespace-sensitive.",
            "2026-11-27T10:05:36.099Z",
        ),
        (
            S5,
            "/home/dev/code/dotfiles",
            "My zsh prompt takes about two seconds to appear. Can you find out why? The config is in zsh/.zshrc.",
            "2026-11-20T16:05:44.391Z",
        ),
    ];
    for (id, cwd, title, updated) in expect {
        let s = r.session(id);
        assert_eq!(s.cwd.as_deref(), Some(cwd), "{id}");
        assert_eq!(s.title, title, "{id}");
        assert_eq!(s.updated_at.as_deref(), Some(updated), "{id}");
        assert_eq!(s.harness.as_ref().unwrap().as_str(), "gemini");
        let native = s.native.as_ref().unwrap();
        assert_eq!(native.harness.as_str(), "gemini");
        assert_eq!(native.files.len(), 1);
    }
    assert_eq!(
        r.session(S5).native.as_ref().unwrap().files[0]
            .path
            .as_str(),
        ".gemini/tmp/bc5f1c2c9a96f2e8cf162c935903922001bb85f184a5af37abbf70283f1aed9c/chats/session-2026-11-20T16-05-3b9e1f0a.json",
        "the legacy hash directory's root is found by hashing trustedFolders.json's roots"
    );
    // (But the settings of Gemini CLI's own, said as left out by design.)
    let skipped: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity.is_not_carried())
        .filter(|d| {
            !d.file()
                .is_some_and(|f| f.ends_with(".gemini/settings.json"))
        })
        .collect();
    assert!(skipped.is_empty(), "{skipped:?}");
}

#[test]
fn session_1_replays_the_log_last_write_wins_with_plans_usage_and_a_diff() {
    let r = read_home(&sample_home());
    let u = r.updates(S1);
    let mut want = vec!["user_message_chunk", "agent_thought_chunk"];
    want.extend(["tool_call", "tool_call_update", "plan", "usage_update"]);
    want.extend([
        "tool_call",
        "tool_call_update",
        "tool_call",
        "tool_call_update",
        "usage_update",
    ]);
    want.extend([
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "usage_update",
    ]);
    want.extend(["tool_call", "tool_call_update", "usage_update"]);
    want.extend([
        "tool_call",
        "tool_call_update",
        "plan",
        "tool_call",
        "tool_call_update",
        "usage_update",
    ]);
    want.extend(["tool_call", "tool_call_update", "plan", "usage_update"]);
    want.extend([
        "agent_thought_chunk",
        "agent_message_chunk",
        "usage_update",
        "session_info_update",
    ]);
    assert_eq!(kinds(&u), want);
    assert_eq!(
        text_of(&u[0]),
        "Checkout totals ignore discount codes like welcome10. Fix total_cents and make sure the tests pass."
    );
    assert_eq!(
        text_of(&u[1]),
        "**Planning the discount fix**\nThe user reports that discount codes are ignored. I'll set up a short plan, then read the cart module and its tests."
    );
    // write_todos: other, completed, no content; its plan right after.
    assert_eq!(
        u[2]["toolCallId"],
        "write_todos__write_todos_1795425279900_0"
    );
    assert_eq!(u[2]["title"], "WriteTodos");
    assert_eq!(u[2]["kind"], "other");
    assert_eq!(u[2]["status"], "pending");
    assert_eq!(
        u[2]["rawInput"]["todos"][0]["description"],
        "Read cart.py and the failing test"
    );
    assert_eq!(u[3]["status"], "completed");
    assert!(u[3].get("content").is_none());
    let plan = |i: usize| -> Vec<(String, String)> {
        u[i]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["content"].as_str().unwrap().into(),
                    e["status"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    assert_eq!(
        plan(4),
        [
            (
                "Read cart.py and the failing test".into(),
                "in_progress".into()
            ),
            (
                "Apply the discount code in total_cents".into(),
                "pending".into()
            ),
            ("Run the unit tests".into(), "pending".into())
        ]
    );
    assert_eq!(u[5]["used"], 8412 + 61);
    assert_eq!(u[5]["size"], 1_048_576);
    assert_eq!(u[5]["_meta"]["gemini"]["tokens"]["thoughts"], 118);
    assert_eq!(u[5]["_meta"]["gemini"]["model"], "gemini-2.5-pro");
    // Two parallel reads: kind read, no content, raw output the file, locations absolute.
    assert_eq!(u[6]["kind"], "read");
    assert_eq!(
        u[6]["locations"],
        json!([{"path": "/home/dev/code/shop/cart.py"}])
    );
    assert_eq!(
        u[8]["locations"],
        json!([{"path": "/home/dev/code/shop/tests/test_cart.py"}])
    );
    assert!(u[7].get("content").is_none());
    assert!(
        u[7]["rawOutput"]["output"]
            .as_str()
            .unwrap()
            .starts_with("from dataclasses import dataclass")
    );
    // A shell command that exits 1 is a completed call.
    assert_eq!(u[13]["title"], "Shell");
    assert_eq!(u[13]["kind"], "execute");
    assert_eq!(u[14]["status"], "completed");
    assert!(text_of(&u[14]["content"][0]).contains("FAIL: test_discount_code"));
    let raw = u[14]["rawOutput"]["output"].as_str().unwrap();
    assert!(
        raw.starts_with("<untrusted_context>\nOutput: ")
            && raw.contains("Exit Code: 1\nProcess Group PGID: 7865")
    );
    // The edit's diff comes from the FileDiff: absolute path, whole old and new file.
    assert_eq!(u[16]["kind"], "edit");
    let diff = &u[17]["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["path"], "/home/dev/code/shop/cart.py");
    assert!(
        diff["oldText"]
            .as_str()
            .unwrap()
            .starts_with("from dataclasses import dataclass")
    );
    assert!(
        diff["newText"]
            .as_str()
            .unwrap()
            .contains("percent = DISCOUNTS.get(code.upper(), 0)")
    );
    assert_eq!(
        plan(21).iter().map(|p| p.1.as_str()).collect::<Vec<_>>(),
        ["completed", "completed", "in_progress"]
    );
    assert_eq!(
        text_of(&u[23]["content"][0]),
        "----------------------------------------------------------------------\nRan 2 tests in 0.000s\n\nOK"
    );
    assert_eq!(
        plan(27).iter().map(|p| p.1.as_str()).collect::<Vec<_>>(),
        ["completed"; 3]
    );
    assert_eq!(u[31]["used"], 10429);
    // The summary's `$set` is the one title event, where it was recorded: at the end.
    assert_eq!(u[32]["title"], "Fix discount codes in checkout total");
    assert_eq!(count(&u, "tool_call"), 8);
    assert_eq!(count(&u, "tool_call_update"), 8);
}

#[test]
fn session_2_applies_checkpoints_and_rewind_and_keeps_ui_lines_out_of_the_stream() {
    let r = read_home(&sample_home());
    let u = r.updates(S2);
    assert_eq!(
        kinds(&u),
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "agent_message_chunk",
            "usage_update",
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "agent_message_chunk",
            "usage_update",
            "user_message_chunk",
            "agent_message_chunk",
            "usage_update",
        ]
    );
    // Thoughts come from `thoughts`, not from the checkpoint's Part array.
    assert_eq!(
        text_of(&u[1]),
        "**Adding coverage**\nTwo cases are missing: the 25% code and an unknown code that must leave the total unchanged."
    );
    assert_eq!(
        u[3]["content"][0]["path"],
        "/home/dev/code/shop/tests/test_cart.py"
    );
    // The TUI's AnsiOutput, flattened.
    assert_eq!(
        text_of(&u[6]["content"][0]),
        "----------------------------------------------------------------------\nRan 4 tests in 0.000s\n\nOK"
    );
    assert_eq!(text_of(&u[10]), "Push it.");
    assert_eq!(u[12]["status"], "failed");
    assert_eq!(
        text_of(&u[12]["content"][0]),
        "Tool execution denied by policy. Pushing is done by CI only."
    );
    assert_eq!(
        u[12]["rawOutput"],
        json!({"error": "Tool execution denied by policy. Pushing is done by CI only."})
    );
    assert_eq!(
        text_of(&u[16]),
        "Leave the codes as they are. Summarize what changed today in two bullets."
    );
    // Rewound, failed and duplicated things are gone; each tool call once.
    let all = serde_json::to_string(&u).unwrap();
    assert!(
        !all.contains("surrounding spaces"),
        "the failed and the rewound prompt are dropped"
    );
    assert!(!all.contains("Considering whitespace"));
    assert!(!all.contains("session_context"));
    assert!(
        !all.contains("YOLO"),
        "the warning is not part of the stream"
    );
    let ui = &r.session(S2).meta.as_ref().unwrap()["gemini"]["uiMessages"];
    assert_eq!(
        ui.as_array().unwrap().len(),
        1,
        "info and error records were dropped by checkpoints"
    );
    assert_eq!(ui[0]["type"], "warning");
    assert_eq!(ui[0]["id"], "5f46869a-ebb2-4de6-ab39-16674709990f");
}

#[test]
fn session_3_links_its_subagent_chat_both_ways() {
    let r = read_home(&sample_home());
    let u = r.updates(S3);
    assert_eq!(u[2]["title"], "get_issue (issues MCP Server)");
    assert_eq!(u[2]["kind"], "other");
    assert_eq!(u[2]["_meta"]["gemini"]["name"], "mcp_issues_get_issue");
    assert!(
        text_of(&u[3]["content"][0]).starts_with("#142 Discount codes are case-sensitive [open]")
    );
    assert_eq!(u[5]["title"], "GoogleSearch");
    assert_eq!(u[5]["kind"], "search");
    assert!(
        u[6]["rawOutput"]["output"]
            .as_str()
            .unwrap()
            .contains("Sources:")
    );
    let invoke = &u[9];
    assert_eq!(
        invoke["toolCallId"],
        "invoke_agent__invoke_agent_1795773935674_0"
    );
    assert_eq!(invoke["title"], "Invoke Subagent");
    assert_eq!(invoke["kind"], "think");
    assert_eq!(invoke["rawInput"]["agent_name"], "codebase_investigator");
    assert_eq!(invoke["_meta"]["gemini"]["agentId"], S4B);
    assert_eq!(invoke["_meta"]["asp"]["subagentSessionId"], S4B);
    assert!(text_of(&u[10]["content"][0]).contains("SummaryOfFindings"));
    assert_eq!(kinds(&u).len(), 14);

    let child = r.session(S4B);
    assert_eq!(
        child.meta.as_ref().unwrap()["asp"]["parent"],
        json!({"sessionId": S3, "toolCallId": "invoke_agent__invoke_agent_1795773935674_0"})
    );
    assert_eq!(child.cwd.as_deref(), Some("/home/dev/work/Shop"));
    let c = r.updates(S4B);
    assert_eq!(
        kinds(&c),
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
        ]
    );
    // The `summary` Gemini `$set` when it finished is its JSON result, not a title: no
    // `session_info_update` says otherwise than the session's title (its task).
    assert!(
        c.iter()
            .all(|u| u["sessionUpdate"] != "session_info_update"),
        "{c:#?}"
    );
    assert!(
        child
            .title
            .starts_with("Find every place where discount/coupon codes")
    );
    assert_eq!(c[2]["title"], "SearchText");
    assert_eq!(text_of(&c[3]["content"][0]), "Found 3 matches");
    assert_eq!(c[9]["title"], "Complete Task");
    assert_eq!(
        text_of(&c[10]["content"][0]),
        "Output submitted and task completed."
    );
    assert_eq!(c[11]["_meta"]["gemini"]["model"], "gemini-3-flash-preview");
}

#[test]
fn session_4_keeps_what_was_sent_and_what_was_typed() {
    let r = read_home(&sample_home());
    let u = r.updates(S4);
    assert_eq!(
        kinds(&u),
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk",
            "usage_update"
        ]
    );
    let prompt = text_of(&u[0]);
    assert!(prompt.starts_with("How does @src/checkout.ts round the discount?\n--- Content from referenced files ---\nContent from @src/checkout.ts:\nimport"), "{prompt}");
    assert!(prompt.ends_with("--- End of content ---"), "{prompt}");
    assert_eq!(
        u[0]["_meta"]["gemini"]["displayContent"],
        json!([{"text": "How does @src/checkout.ts round the discount?"}])
    );
    assert_eq!(u[3]["used"], 7410 + 71);
}

#[test]
fn the_legacy_document_replays_like_a_log() {
    let r = read_home(&sample_home());
    let u = r.updates(S5);
    assert_eq!(
        kinds(&u),
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "agent_thought_chunk",
            "agent_message_chunk",
            "usage_update",
        ]
    );
    assert_eq!(u[2]["toolCallId"], "read_file-1795190736102-4c1e9a7f2b3d8");
    assert_eq!(u[2]["title"], "ReadFile");
    assert_eq!(
        u[2]["locations"],
        json!([{"path": "/home/dev/code/dotfiles/zsh/.zshrc"}])
    );
    assert!(
        u[3]["rawOutput"]["output"]
            .as_str()
            .unwrap()
            .starts_with("export ZSH=")
    );
    assert!(text_of(&u[6]).starts_with("The delay comes from `nvm`"));
}

// ---------------------------------------------------------------------------------------
// Damaged chats (tests/fixtures/gemini/EXPECTED.md)

#[test]
fn a_line_that_is_not_json_is_reported_and_skipped() {
    let r = read_home(&fixture("non-json-line"));
    let id = "2c7e5a19-8f41-4d6b-9a3e-b05d1f8c7e26";
    let u = r.updates(id);
    assert_eq!(
        kinds(&u),
        [
            "user_message_chunk",
            "agent_message_chunk",
            "usage_update",
            "user_message_chunk",
            "agent_message_chunk",
            "usage_update"
        ]
    );
    assert!(text_of(&u[1]).starts_with("It returns `0`"));
    assert_eq!(
        r.session(id).title,
        "What does total_cents return for an empty cart?"
    );
    let skipped: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity.is_not_carried())
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].line, Some(5));
    assert!(skipped[0].message.contains("not JSON"));
}

#[test]
fn a_cut_off_last_line_is_reported_and_the_session_ends_before_it() {
    let r = read_home(&fixture("truncated-last-line"));
    let id = "8d3b6f20-4e9a-4c71-b5d8-2a6e0c9f4b13";
    let u = r.updates(id);
    assert_eq!(
        kinds(&u),
        [
            "user_message_chunk",
            "agent_message_chunk",
            "usage_update",
            "user_message_chunk"
        ]
    );
    assert_eq!(text_of(&u[3]), "Yes, go ahead.");
    let skipped: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity.is_not_carried())
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].line, Some(9));
    assert!(skipped[0].message.contains("cut off"));
}

#[test]
fn a_rewind_to_an_unknown_id_clears_everything_before_it() {
    let r = read_home(&fixture("rewind-unknown-id"));
    let id = "e5f60718-293a-4b4c-9d5e-6f708192a3b4";
    let u = r.updates(id);
    assert_eq!(
        kinds(&u),
        ["user_message_chunk", "agent_message_chunk", "usage_update"]
    );
    assert_eq!(text_of(&u[0]), "Which code is the biggest?");
    assert_eq!(r.session(id).title, "Which code is the biggest?");
    assert!(
        r.diagnostics.iter().any(|d| d.severity == Severity::Note && d.message.contains("List the discount codes.")),
        "the listing's different title is noted: {:?}",
        r.diagnostics
    );
}

// ---------------------------------------------------------------------------------------
// Other kinds

#[test]
fn instructions_are_gemini_md_without_the_memories_section() {
    let r = read_home(&sample_home());
    let text = r.text(&r.state.instructions.as_ref().unwrap().text);
    let original = fs::read_to_string(sample_home().join(".gemini/GEMINI.md")).unwrap();
    let start = original.find("## Gemini Added Memories").unwrap();
    let end = original.find("## Reminders").unwrap();
    assert_eq!(text, format!("{}{}", &original[..start], &original[end..]));
    assert!(
        text.contains("## Why\nCodes were compared verbatim"),
        "the fenced `## ` line stays"
    );
    assert!(!text.contains("Helix"));
}

#[test]
fn memories_are_the_sections_bullets_and_the_project_memory_files() {
    let r = read_home(&sample_home());
    let notes = r.state.memory.as_ref().unwrap();
    let global: Vec<(&str, String)> = notes
        .iter()
        .filter(|n| n.origin.project.is_none())
        .map(|n| match n.body {
            NoteBody::Text(d) => (n.path.as_str(), r.text(&d)),
            NoteBody::Deleted => panic!("no tombstones in a store"),
        })
        .collect();
    assert_eq!(
        global,
        [
            (
                "gemini-added-memories/my-preferred-shell-is-zsh-and-my-editor-is-helix-hx.md",
                "My preferred shell is zsh and my editor is Helix (`hx`).\n".to_owned()
            ),
            (
                "gemini-added-memories/run-python-tests-with-python3-m-unittest-q-from-the.md",
                "Run Python tests with `python3 -m unittest -q` from the repository root.\n"
                    .to_owned()
            ),
            (
                "gemini-added-memories/the-staging-database-listens-on-port-5433-not-5432.md",
                "The staging database listens on port 5433, not 5432.\n".to_owned()
            ),
        ]
    );
    for n in notes.iter().filter(|n| n.origin.project.is_none()) {
        assert_eq!(n.origin.harness.as_ref().unwrap().as_str(), "gemini");
        assert_eq!(
            n.origin.path.as_deref(),
            Some(".gemini/GEMINI.md#gemini-added-memories")
        );
    }
    let project: Vec<&MemoryNote> = notes
        .iter()
        .filter(|n| n.origin.project.is_some())
        .collect();
    assert_eq!(project.len(), 2);
    assert_eq!(project[0].path.as_str(), "shop/MEMORY.md");
    assert_eq!(project[1].path.as_str(), "shop/local-setup.md");
    assert_eq!(
        project[1].origin.path.as_deref(),
        Some(".gemini/tmp/shop/memory/local-setup.md")
    );
    assert_eq!(
        project[1].origin.project.as_deref(),
        Some("/home/dev/code/shop")
    );
}

#[test]
fn skills_come_from_both_roots_with_their_modes() {
    let r = read_home(&sample_home());
    let skills = r.state.skills.as_ref().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pr-review", "release-notes"]);
    let rn = &skills[1];
    assert_eq!(rn.meta.as_ref().unwrap()["gemini"]["dir"], ".gemini/skills");
    let script = rn
        .files
        .iter()
        .find(|f| f.path.as_str() == "scripts/changelog.sh")
        .unwrap();
    assert_eq!(script.executable, cfg!(unix));
    assert!(
        skills[0].meta.is_none(),
        "the shared .agents location needs no note"
    );
}

#[test]
fn mcp_servers_follow_the_clis_transport_rules() {
    let r = read_home(&sample_home());
    let tools = r.state.tools.as_ref().unwrap();
    let by_name = |n: &str| tools.iter().find(|t| t.name() == n).unwrap();
    let issues = serde_json::to_value(by_name("issues")).unwrap();
    assert_eq!(issues["command"], "python3");
    assert_eq!(
        issues["args"],
        json!(["/home/dev/tools/issues-mcp/server.py"])
    );
    assert_eq!(
        issues["env"],
        json!([{"name": "ISSUES_BASE_URL", "value": "https://issues.internal.example.com"}, {"name": "ISSUES_TOKEN", "value": "$ISSUES_TOKEN"}])
    );
    assert_eq!(
        issues["_meta"]["gemini"],
        json!({"cwd": "/home/dev/tools/issues-mcp", "description": "Team issue tracker", "trust": true, "includeTools": ["get_issue"], "timeout": 30000})
    );
    let docs = by_name("docs");
    assert!(
        matches!(docs, McpServer::Http(_)),
        "httpUrl is streamable HTTP"
    );
    let docs = serde_json::to_value(docs).unwrap();
    assert_eq!(docs["url"], "https://mcp.docs.example.com/mcp");
    assert_eq!(
        docs["headers"],
        json!([{"name": "Authorization", "value": "Bearer $DOCS_MCP_TOKEN"}])
    );
    let metrics = by_name("metrics");
    assert!(
        matches!(metrics, McpServer::Sse(_)),
        "url with type sse is SSE"
    );
    assert_eq!(serde_json::to_value(metrics).unwrap()["headers"], json!([]));
}

#[test]
fn settings_are_the_model_and_gemini_acp_mode_id() {
    let r = read_home(&sample_home());
    let s = r.state.settings.as_ref().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s["model"], SettingValue::Select("gemini-2.5-pro".into()));
    assert_eq!(s["mode"], SettingValue::Select("autoEdit".into()));
}

// ---------------------------------------------------------------------------------------
// Writing Gemini sessions back

#[test]
fn a_restore_into_an_empty_home_gives_back_the_same_bytes_at_the_same_paths() {
    let r = read_home(&sample_home());
    let home = tmp();
    let (answer, diagnostics) = write(home.path(), &r.state, &r.store, false);
    everything_but_the_trust_of_issues(&answer);
    assert_eq!(answer.taken, KindSet::ALL);
    for s in r.state.sessions.as_ref().unwrap() {
        assert_eq!(
            answer.sessions[s.id.as_str()],
            s.id.as_str(),
            "Gemini ids stay"
        );
    }
    assert_eq!(chat_files(home.path()), chat_files(&sample_home()));
    // The projects are registered as the CLI registers them, the old hash directory's too.
    let g = home.path().join(".gemini");
    let registry: Value =
        serde_json::from_slice(&fs::read(g.join("projects.json")).unwrap()).unwrap();
    assert_eq!(
        registry,
        json!({"projects": {"/home/dev/code/dotfiles": "dotfiles", "/home/dev/code/shop": "shop", "/home/dev/work/Shop": "shop-1"}})
    );
    for marker in [
        "tmp/shop/.project_root",
        "history/shop/.project_root",
        "tmp/shop-1/.project_root",
    ] {
        assert_eq!(
            fs::read(g.join(marker)).unwrap(),
            fs::read(sample_home().join(".gemini").join(marker)).unwrap(),
            "{marker}"
        );
    }
    assert!(
        diagnostics
            .iter()
            .any(|d| d.message.contains("general.sessionRetention")),
        "the retention hazard is pointed out: {diagnostics:?}"
    );
}

#[test]
fn restoring_again_finds_everything_already_there_and_changes_nothing() {
    let r = read_home(&sample_home());
    let home = tmp();
    let (first, _) = write(home.path(), &r.state, &r.store, false);
    let before = crate::support::files_in(home.path());
    let (again, _) = write(home.path(), &r.state, &r.store, false);
    assert_eq!(again.sessions, first.sessions);
    everything_but_the_trust_of_issues(&again);
    assert_eq!(crate::support::files_in(home.path()), before);
}

#[test]
fn a_session_continued_in_gemini_since_the_restore_is_already_there() {
    let r = read_home(&sample_home());
    let home = tmp();
    write(home.path(), &r.state, &r.store, false);
    let chat = home
        .path()
        .join(".gemini/tmp/shop/chats/session-2026-11-23T09-14-fed50604.jsonl");
    let mut bytes = fs::read(&chat).unwrap();
    bytes.extend_from_slice(b"{\"$set\":{\"lastUpdated\":\"2026-11-30T08:00:00.000Z\"}}\n");
    fs::write(&chat, &bytes).unwrap();
    let before = crate::support::files_in(home.path());
    let (again, _) = write(home.path(), &r.state, &r.store, false);
    assert_eq!(again.sessions[S1], S1);
    assert_eq!(crate::support::files_in(home.path()), before);
}

#[test]
fn a_different_version_of_a_session_is_kept_beside_it_as_thread_tilde_harness() {
    let r = read_home(&sample_home());
    let home = tmp();
    write(home.path(), &r.state, &r.store, false);
    let chats = home.path().join(".gemini/tmp/shop-1/chats");
    let original = chats.join("session-2026-11-27T10-07-e4b28117.jsonl");
    let changed = fs::read_to_string(&original)
        .unwrap()
        .replace("fractional cent", "fractional CENT");
    fs::write(&original, &changed).unwrap();

    let (answer, diagnostics) = write(home.path(), &r.state, &r.store, false);
    let copy_id = name_uuid(&format!("{S4}~gemini"));
    assert_eq!(answer.sessions[S4], copy_id);
    assert_eq!(
        fs::read_to_string(&original).unwrap(),
        changed,
        "the version there is untouched"
    );
    let copy = chats.join(format!("session-2026-11-27T10-07-{}.jsonl", &copy_id[..8]));
    let copy_text = fs::read_to_string(&copy).unwrap();
    let sample = fs::read_to_string(
        sample_home().join(".gemini/tmp/shop-1/chats/session-2026-11-27T10-07-e4b28117.jsonl"),
    )
    .unwrap();
    let (first, rest) = copy_text.split_once('\n').unwrap();
    let (rest, title) = rest.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(
        format!("{rest}\n"),
        sample.split_once('\n').unwrap().1,
        "only the metadata line changes, and the copy's title is set at the end"
    );
    assert_eq!(
        title,
        r#"{"$set":{"summary":"How does @src/checkout.ts round the discount? ~gemini"}}"#
    );
    assert_eq!(
        serde_json::from_str::<Value>(first).unwrap()["sessionId"],
        copy_id
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d.message.contains(&format!("{S4}~gemini")))
    );
    // Gemini now has both versions.
    let back = read_home(home.path());
    assert_eq!(
        back.session(&copy_id).title,
        format!("{} ~gemini", r.session(S4).title),
        "the copy's title carries the marker"
    );
    assert!(
        back.updates(S4)
            .iter()
            .any(|u| text_of(u).contains("fractional CENT"))
    );
}

#[test]
fn unknown_native_paths_are_refused_not_written() {
    let r = read_home(&sample_home());
    let mut state = State {
        sessions: Some(vec![r.session(S1).clone()]),
        ..State::default()
    };
    let s = &mut state.sessions.as_mut().unwrap()[0];
    s.native.as_mut().unwrap().files[0].path = RelPath::new(".gemini/settings.json").unwrap();
    let home = tmp();
    let (answer, _) = write(home.path(), &state, &r.store, false);
    assert!(answer.sessions.is_empty());
    assert!(
        answer.not_taken[0]
            .reason
            .contains("not a Gemini chat file"),
        "{answer:?}"
    );
    assert!(!home.path().join(".gemini/settings.json").exists());
}

// ---------------------------------------------------------------------------------------
// Writing sessions from other harnesses

/// A conversation's visible parts, to compare across harnesses.
#[derive(Debug, Default, PartialEq)]
struct Conversation {
    prompts: Vec<String>,
    answers: Vec<String>,
    thoughts: Vec<String>,
    /// id → (title, status, raw output)
    calls: BTreeMap<String, (String, String, Option<Value>)>,
    plans: Vec<Vec<(String, String)>>,
}

fn conversation(updates: &[Value]) -> Conversation {
    let mut c = Conversation::default();
    for item in fold(
        updates
            .iter()
            .map(|u| json!({"sessionId": "s", "update": u})),
    ) {
        match item {
            Item::User(m) => c.prompts.push(m.text()),
            Item::Agent(m) if !m.text().trim().is_empty() => c.answers.push(m.text()),
            Item::Thought(m) => c.thoughts.extend(
                m.blocks
                    .iter()
                    .map(|b| b["text"].as_str().unwrap_or("").to_owned()),
            ),
            Item::Tool(t) => {
                let status = match t.status {
                    Some(asp_convert::kit::acp::ToolStatus::Completed) => "completed",
                    _ => "failed",
                };
                c.calls.insert(
                    t.id.clone(),
                    (t.title.clone(), status.to_owned(), t.raw_output.clone()),
                );
            }
            Item::Plan { entries, .. } => c.plans.push(
                entries
                    .iter()
                    .map(|e| {
                        (
                            e["content"].as_str().unwrap().to_owned(),
                            e["status"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect(),
            ),
            _ => {}
        }
    }
    c
}

/// The conversation `back` still says everything `source` said: the same prompts, every
/// answer and thought, every tool call with its title, outcome and result, the same plans.
fn assert_survives(label: &str, source: &[Value], back: &[Value]) {
    let (s, b) = (conversation(source), conversation(back));
    assert_eq!(b.prompts, s.prompts, "{label}: prompts");
    let answers = b.answers.join("\n\n");
    for a in &s.answers {
        assert!(
            answers.contains(a.trim()),
            "{label}: answer {a:?} is lost in {answers:?}"
        );
    }
    let thoughts = b.thoughts.join("\n");
    for t in &s.thoughts {
        assert!(
            thoughts.contains(t.trim()),
            "{label}: thought {t:?} is lost"
        );
    }
    assert_eq!(
        b.calls.keys().collect::<Vec<_>>(),
        s.calls.keys().collect::<Vec<_>>(),
        "{label}: tool calls"
    );
    for (id, (title, status, raw)) in &s.calls {
        let (btitle, bstatus, braw) = &b.calls[id];
        if !title.is_empty() {
            assert_eq!(btitle, title, "{label}: title of {id}");
        }
        assert_eq!(bstatus, status, "{label}: status of {id}");
        match raw {
            Some(Value::Object(_)) => {
                assert_eq!(braw.as_ref(), raw.as_ref(), "{label}: result of {id}")
            }
            Some(Value::String(text)) => {
                // Gemini keeps a text result as `{"output": ...}` (or `{"error": ...}`);
                // a harness that keeps text results as text gives it back as it was.
                let got = match braw {
                    Some(Value::String(t)) => Some(t.as_str()),
                    other => other
                        .as_ref()
                        .and_then(|r| r.get("output").or_else(|| r.get("error")))
                        .and_then(Value::as_str),
                };
                assert_eq!(got, Some(text.as_str()), "{label}: result of {id}");
            }
            _ => {}
        }
    }
    assert_eq!(b.plans, s.plans, "{label}: plans");
}

fn title_of(state: &State, store: &dyn BlobSource, id: &str) -> (String, Vec<Value>) {
    let s = state
        .sessions
        .iter()
        .flatten()
        .find(|s| s.id.as_str() == id)
        .unwrap();
    let text = String::from_utf8(store.read_all(&s.updates).unwrap()).unwrap();
    (
        s.title.clone(),
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["update"].clone())
            .collect(),
    )
}

#[test]
fn foreign_sessions_become_chats_gemini_lists() {
    let bundle = state_bundle();
    let state = bundle.manifest().state.clone();
    let home = tmp();
    let (answer, diagnostics) = write(home.path(), &state, &bundle, false);
    let claude = "da41f528-2d0a-4f84-8acd-fe5d7087734b";
    assert_eq!(
        answer.sessions[claude], claude,
        "a UUID stays the Gemini id"
    );
    let telegram = &answer.sessions["telegram:42"];
    assert_eq!(
        *telegram,
        name_uuid("telegram:42"),
        "any other id gets a name-based UUID"
    );
    assert!(asp_convert::kit::uuid::is_uuid(telegram));

    // The project is registered exactly as the CLI would.
    let g = home.path().join(".gemini");
    assert_eq!(
        fs::read_to_string(g.join("projects.json")).unwrap(),
        "{\n  \"projects\": {\n    \"/home/dev/shop\": \"shop\"\n  }\n}"
    );
    for m in ["tmp/shop/.project_root", "history/shop/.project_root"] {
        assert_eq!(fs::read_to_string(g.join(m)).unwrap(), "/home/dev/shop");
    }

    let chats = g.join("tmp/shop/chats");
    let file = chats.join("session-2026-11-29T10-00-da41f528.jsonl");
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.ends_with('\n'));
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let meta = &records[0];
    assert_eq!(meta["sessionId"], claude);
    assert_eq!(
        meta["projectHash"],
        crate::support::sha256_hex(b"/home/dev/shop")
    );
    assert_eq!(meta["kind"], "main");
    assert_eq!(meta["summary"], "Add dry-run flag to deploy script");
    assert_eq!(meta["lastUpdated"], "2026-11-29T10:00:09.000Z");
    assert!(
        !text.contains("$set") && !text.contains("$rewindTo") && !text.contains("session_context")
    );
    let mut ids = std::collections::HashSet::new();
    let mut calls = 0;
    for r in &records[1..] {
        assert!(
            ids.insert(r["id"].as_str().unwrap().to_owned()),
            "each message id once"
        );
        for call in r["toolCalls"].as_array().into_iter().flatten() {
            calls += 1;
            let fr = &call["result"][0]["functionResponse"];
            assert_eq!(fr["id"], call["id"], "every call has its matching response");
            assert_eq!(fr["name"], call["name"]);
            assert!(fr["response"].is_object());
        }
    }
    assert_eq!(calls, 3, "Read, the plan as write_todos, Edit");
    assert!(
        chats
            .join(format!("session-2026-11-28T16-20-{}.jsonl", &telegram[..8]))
            .is_file()
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d.message.contains("usage_update")),
        "{diagnostics:?}"
    );
    let settings_refusals: Vec<&str> = answer
        .not_taken
        .iter()
        .map(|n| {
            assert_eq!(n.kind, StateKind::Settings);
            n.reason.as_str()
        })
        .collect();
    assert_eq!(
        settings_refusals.len(),
        3,
        "effort, thinking and the model opus: {settings_refusals:?}"
    );
    assert_eq!(answer.taken, KindSet::ALL);
}

#[test]
fn carried_sessions_read_back_with_prompts_answers_tool_results_plans_and_titles() {
    let bundle = state_bundle();
    let state = bundle.manifest().state.clone();
    let home = tmp();
    let (answer, _) = write(home.path(), &state, &bundle, false);
    let back = read_home(home.path());
    for s in state.sessions.as_ref().unwrap() {
        let (title, source) = title_of(&state, &bundle, s.id.as_str());
        let new = &answer.sessions[s.id.as_str()];
        assert_eq!(back.session(new).title, title);
        assert_eq!(back.session(new).cwd, s.cwd);
        assert_survives(s.id.as_str(), &source, &back.updates(new));
    }
    // Kinds come back from the carried tool names.
    let u = back.updates("da41f528-2d0a-4f84-8acd-fe5d7087734b");
    let calls: Vec<(&str, &str)> = u
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| (u["title"].as_str().unwrap(), u["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [("Read deploy.sh", "read"), ("Edit deploy.sh", "edit")]
    );
    let diff = &u
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "toolu_01Ed")
        .unwrap()["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["path"], "/home/dev/shop/deploy.sh");
}

#[test]
fn carrying_a_session_again_is_already_there_and_a_changed_one_goes_beside_it() {
    let bundle = state_bundle();
    let state = bundle.manifest().state.clone();
    let home = tmp();
    let (first, _) = write(home.path(), &state, &bundle, false);
    let before = crate::support::files_in(home.path());
    let (again, _) = write(home.path(), &state, &bundle, false);
    assert_eq!(again.sessions, first.sessions);
    assert_eq!(crate::support::files_in(home.path()), before);

    let file = home
        .path()
        .join(".gemini/tmp/shop/chats/session-2026-11-29T10-00-da41f528.jsonl");
    let edited = fs::read_to_string(&file)
        .unwrap()
        .replace("instead of running it", "and exits");
    fs::write(&file, &edited).unwrap();
    let (third, _) = write(home.path(), &state, &bundle, false);
    let copy = name_uuid("da41f528-2d0a-4f84-8acd-fe5d7087734b~claude-code");
    assert_eq!(third.sessions["da41f528-2d0a-4f84-8acd-fe5d7087734b"], copy);
    assert_eq!(fs::read_to_string(&file).unwrap(), edited);
    assert!(
        home.path()
            .join(format!(
                ".gemini/tmp/shop/chats/session-2026-11-29T10-00-{}.jsonl",
                &copy[..8]
            ))
            .is_file()
    );
}

#[test]
fn gemini_sessions_without_their_files_are_rebuilt_from_their_updates() {
    let r = read_home(&sample_home());
    let mut state = r.state.clone();
    for s in state.sessions.as_mut().unwrap() {
        s.native = None;
    }
    let home = tmp();
    let (answer, _) = write(home.path(), &state, &r.store, false);
    everything_but_the_trust_of_issues(&answer);
    let back = read_home(home.path());
    for s in state.sessions.as_ref().unwrap() {
        let id = s.id.as_str();
        assert_eq!(answer.sessions[id], id);
        let (src, got) = (r.updates(id), back.updates(id));
        assert_survives(id, &src, &got);
        assert_eq!(back.session(id).title, s.title, "{id}");
        assert_eq!(
            count(&got, "usage_update"),
            count(&src, "usage_update"),
            "{id}: tokens are kept"
        );
        let used = |u: &[Value]| {
            u.iter()
                .filter(|u| u["sessionUpdate"] == "usage_update")
                .map(|u| u["used"].as_u64().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(used(&got), used(&src), "{id}");
    }
    // Gemini's own write_todos calls come back as themselves, with their plans.
    let chat = fs::read_to_string(
        home.path()
            .join(".gemini/tmp/shop/chats/session-2026-11-23T09-14-fed50604.jsonl"),
    )
    .unwrap();
    let names: Vec<String> = chat
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .flat_map(|r| r["toolCalls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "write_todos",
            "read_file",
            "read_file",
            "run_shell_command",
            "replace",
            "write_todos",
            "run_shell_command",
            "write_todos"
        ]
    );
    // The subagent is a subagent chat again, under its parent, linked from the call.
    let child = home
        .path()
        .join(format!(".gemini/tmp/shop-1/chats/{S3}/{S4B}.jsonl"));
    let meta: Value =
        serde_json::from_str(fs::read_to_string(&child).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(meta["kind"], "subagent");
    assert_eq!(
        back.session(S4B).meta.as_ref().unwrap()["asp"]["parent"]["toolCallId"],
        "invoke_agent__invoke_agent_1795773935674_0"
    );
}

// ---------------------------------------------------------------------------------------
// Memory, instructions, settings and tools written back

fn note(path: &str, origin: Origin, body: Option<&str>, sink: &dyn BlobSink) -> MemoryNote {
    MemoryNote {
        path: RelPath::new(path).unwrap(),
        origin,
        body: match body {
            Some(t) => NoteBody::Text(sink.put(t.as_bytes()).unwrap()),
            None => NoteBody::Deleted,
        },
    }
}

fn gemini_section() -> Origin {
    Origin {
        harness: Some("gemini".parse().unwrap()),
        path: Some(".gemini/GEMINI.md#gemini-added-memories".into()),
        project: None,
    }
}

#[test]
fn memory_notes_go_into_the_section_and_a_tombstone_removes_its_bullet() {
    let home = tmp();
    let g = home.path().join(".gemini");
    fs::create_dir_all(&g).unwrap();
    let original = fs::read_to_string(sample_home().join(".gemini/GEMINI.md")).unwrap();
    fs::write(g.join("GEMINI.md"), &original).unwrap();
    let store = MemoryStore::new();
    let state = State {
        memory: Some(vec![
            note(
                "gemini-added-memories/the-staging-database-listens-on-port-5433-not-5432.md",
                gemini_section(),
                None,
                &store,
            ),
            note(
                "prefs.md",
                gemini_section(),
                Some("- The user prefers tabs over spaces in Makefiles.\n"),
                &store,
            ),
            note(
                "gemini-added-memories/my-preferred-shell-is-zsh-and-my-editor-is-helix-hx.md",
                gemini_section(),
                Some("My preferred shell is zsh and my editor is Helix (`hx`).\n"),
                &store,
            ),
        ]),
        ..State::default()
    };
    let (answer, _) = write(home.path(), &state, &store, false);
    assert_eq!(answer.taken, KindSet::EMPTY.with(StateKind::Memory));
    let text = fs::read_to_string(g.join("GEMINI.md")).unwrap();
    let expected = original.replace(
        "- The staging database listens on port 5433, not 5432.\n",
        "- The user prefers tabs over spaces in Makefiles.\n",
    );
    assert_eq!(text, expected);
    let back = read_home(home.path());
    let notes: Vec<String> = back
        .state
        .memory
        .as_ref()
        .unwrap()
        .iter()
        .map(|n| n.path.to_string())
        .collect();
    assert_eq!(
        notes,
        [
            "gemini-added-memories/my-preferred-shell-is-zsh-and-my-editor-is-helix-hx.md",
            "gemini-added-memories/run-python-tests-with-python3-m-unittest-q-from-the.md",
            "gemini-added-memories/the-user-prefers-tabs-over-spaces-in-makefiles.md",
        ]
    );
}

#[test]
fn project_notes_become_memory_files_pointed_to_from_memory_md() {
    let bundle = state_bundle();
    let state = State {
        memory: bundle.manifest().state.memory.clone(),
        ..State::default()
    };
    let home = tmp();
    let (answer, _) = write(home.path(), &state, &bundle, false);
    assert!(answer.is_complete(), "{answer:?}");
    let memdir = home.path().join(".gemini/tmp/shop/memory");
    let deploy = fs::read_to_string(memdir.join("deploy.md")).unwrap();
    assert!(deploy.starts_with("---\nname: deploy\n"));
    let index = fs::read_to_string(memdir.join("MEMORY.md")).unwrap();
    let abs = std::path::absolute(memdir.join("deploy.md")).unwrap();
    assert_eq!(
        index,
        format!(
            "# Project Memory\n\n- See {} for deploy notes.\n",
            abs.display()
        )
    );
    // The Gemini note went into the section; the tombstone had nothing to remove.
    let gemini_md = fs::read_to_string(home.path().join(".gemini/GEMINI.md")).unwrap();
    assert_eq!(
        gemini_md,
        "## Gemini Added Memories\n- The user prefers tabs over spaces in Makefiles.\n"
    );

    // A tombstone for the project note removes the file and its pointer.
    let store = MemoryStore::new();
    let deploy_origin = state
        .memory
        .as_ref()
        .unwrap()
        .iter()
        .find(|n| n.path.as_str() == "shop/deploy.md")
        .unwrap()
        .origin
        .clone();
    let tomb = State {
        memory: Some(vec![note("shop/deploy.md", deploy_origin, None, &store)]),
        ..State::default()
    };
    write(home.path(), &tomb, &store, false);
    assert!(!memdir.join("deploy.md").exists());
    assert_eq!(
        fs::read_to_string(memdir.join("MEMORY.md")).unwrap(),
        "# Project Memory\n\n"
    );
}

#[test]
fn settings_tools_and_instructions_merge_without_disturbing_what_is_there() {
    let home = tmp();
    let g = home.path().join(".gemini");
    fs::create_dir_all(&g).unwrap();
    fs::copy(
        sample_home().join(".gemini/settings.json"),
        g.join("settings.json"),
    )
    .unwrap();
    fs::copy(sample_home().join(".gemini/GEMINI.md"), g.join("GEMINI.md")).unwrap();
    let store = MemoryStore::new();
    let mut settings = asp_format::state::Settings::new();
    settings.insert(
        "model".into(),
        SettingValue::Select("gemini-3.1-pro-preview".into()),
    );
    settings.insert("mode".into(), SettingValue::Select("plan".into()));
    settings.insert("effort".into(), SettingValue::Select("high".into()));
    let tools: Vec<McpServer> = serde_json::from_value(json!([
        {"type": "http", "name": "docs", "url": "https://elsewhere.example.com/mcp", "headers": []},
        {"name": "github", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": [{"name": "GITHUB_PERSONAL_ACCESS_TOKEN", "value": "${GITHUB_TOKEN}"}]},
        {"type": "sse", "name": "metrics", "url": "http://localhost:8931/sse", "headers": [], "_meta": {"gemini": {"urlField": "url", "type": "sse", "excludeTools": ["delete_dashboard"], "trust": false}}}
    ]))
    .unwrap();
    let instructions = asp_format::state::Instructions {
        text: store.put(b"# Team rules\n\n- Be kind.\n").unwrap(),
    };
    let state = State {
        settings: Some(settings),
        tools: Some(tools),
        instructions: Some(instructions),
        ..State::default()
    };
    let (answer, _) = write(home.path(), &state, &store, false);
    assert_eq!(
        answer.taken,
        KindSet::EMPTY
            .with(StateKind::Instructions)
            .with(StateKind::Tools)
            .with(StateKind::Settings)
    );
    let reasons: Vec<(StateKind, &str)> = answer
        .not_taken
        .iter()
        .map(|n| (n.kind, n.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|(k, r)| *k == StateKind::Tools && r.contains("\"docs\""))
    );
    assert!(
        reasons
            .iter()
            .any(|(k, r)| *k == StateKind::Settings && r.contains("effort"))
    );

    let before: Value =
        serde_json::from_slice(&fs::read(sample_home().join(".gemini/settings.json")).unwrap())
            .unwrap();
    let after: Value = serde_json::from_slice(&fs::read(g.join("settings.json")).unwrap()).unwrap();
    for untouched in ["ui", "privacy", "security"] {
        assert_eq!(after[untouched], before[untouched]);
    }
    assert_eq!(
        after["general"]["sessionRetention"],
        before["general"]["sessionRetention"]
    );
    assert_eq!(after["general"]["defaultApprovalMode"], "plan");
    assert_eq!(after["model"]["name"], "gemini-3.1-pro-preview");
    assert_eq!(
        after["mcpServers"]["docs"], before["mcpServers"]["docs"],
        "a different server of that name is left alone"
    );
    assert_eq!(
        after["mcpServers"]["metrics"],
        before["mcpServers"]["metrics"]
    );
    assert_eq!(
        after["mcpServers"]["github"],
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}})
    );
    let gemini_md = fs::read_to_string(g.join("GEMINI.md")).unwrap();
    let original = fs::read_to_string(sample_home().join(".gemini/GEMINI.md")).unwrap();
    assert_eq!(
        gemini_md,
        format!("{original}\n# Team rules\n\n- Be kind.\n")
    );
}

// ---------------------------------------------------------------------------------------
// Through the binaries

#[test]
fn the_binaries_pack_a_gemini_home_and_restore_it_byte_for_byte() {
    let work = tmp();
    let bundle = work.path().join("gemini.aspstate");
    pack_home("gemini", sample_home(), &bundle)
        .assert()
        .success();
    let home = new_home(work.path().join("home"));
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "gemini", "--json", "--home"])
        .arg(&home)
        .assert()
        .code(0);
    let answer: ImportAnswer = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(answer.sessions.len(), 6);
    everything_but_the_trust_of_issues(&answer);
    assert_eq!(chat_files(&home), chat_files(&sample_home()));
    let script = home.join(".gemini/skills/release-notes/scripts/changelog.sh");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }
    assert!(script.is_file());
    assert!(home.join(".agents/skills/pr-review/SKILL.md").is_file());
}

#[test]
fn the_binaries_report_damaged_lines_and_still_pack() {
    let work = tmp();
    let bundle = work.path().join("damaged.aspstate");
    let out = pack_home("gemini", fixture("non-json-line"), &bundle)
        .assert()
        .code(0);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("session-2026-11-26T08-30-2c7e5a19.jsonl:5: not JSON"),
        "{stderr}"
    );
    assert!(bundle.is_file());
}

#[test]
fn an_unpack_dry_run_writes_nothing() {
    let home = tmp();
    let dry = asp_unpack()
        .arg(samples().join("state.aspstate"))
        .args(["--to", "gemini", "--dry-run", "--json", "--home"])
        .arg(home.path())
        .assert()
        .code(0);
    assert!(crate::support::nothing_in(home.path()));
    let real = asp_unpack()
        .arg(samples().join("state.aspstate"))
        .args(["--to", "gemini", "--json", "--home"])
        .arg(home.path())
        .assert()
        .code(0);
    let json = |out: &[u8]| serde_json::from_slice::<serde_json::Value>(out).unwrap();
    assert_eq!(
        crate::support::as_written(json(&dry.get_output().stdout)),
        json(&real.get_output().stdout)
    );
    let answer: ImportAnswer = serde_json::from_slice(&real.get_output().stdout).unwrap();
    assert_eq!(answer.sessions["telegram:42"], name_uuid("telegram:42"));
}

#[test]
fn map_path_files_sessions_under_the_new_project_roots() {
    let work = tmp();
    let bundle = work.path().join("gemini.aspstate");
    asp_pack()
        .args(["--from", "gemini", "-q", "--home"])
        .arg(sample_home())
        .arg("-o")
        .arg(&bundle)
        .assert()
        .success();
    let home = new_home(work.path().join("home"));
    asp_unpack()
        .arg(&bundle)
        .args([
            "--to",
            "gemini",
            "-q",
            "--map-path",
            "/home/dev=/Users/dev",
            "--home",
        ])
        .arg(&home)
        .assert()
        .code(0); // everything but the trust of the `issues` MCP server
    let registry: Value =
        serde_json::from_slice(&fs::read(home.join(".gemini/projects.json")).unwrap()).unwrap();
    assert_eq!(
        registry["projects"],
        json!({"/Users/dev/code/dotfiles": "dotfiles", "/Users/dev/code/shop": "shop", "/Users/dev/work/Shop": "shop-1"})
    );
    let chat = fs::read_to_string(
        home.join(".gemini/tmp/shop/chats/session-2026-11-23T09-14-fed50604.jsonl"),
    )
    .unwrap();
    assert!(chat.contains("\"filePath\":\"/Users/dev/code/shop/cart.py\""));
    let legacy = home.join(format!(
        ".gemini/tmp/{}/chats/session-2026-11-20T16-05-3b9e1f0a.json",
        crate::support::sha256_hex(b"/Users/dev/code/dotfiles")
    ));
    assert!(legacy.is_file(), "an old hash directory follows its root");
    let back = read_home(&home);
    assert_eq!(
        back.session(S1).cwd.as_deref(),
        Some("/Users/dev/code/shop")
    );
    assert_eq!(
        back.session(S5).cwd.as_deref(),
        Some("/Users/dev/code/dotfiles")
    );
}

// ---------------------------------------------------------------------------------------
// Migration: other harnesses' samples into Gemini and back

/// Reads `samples/<name>` with its converter, carries it into an empty Gemini home, reads
/// that back, carries it into an empty home of the first harness again, and checks every
/// conversation survives both trips.
#[cfg(any(feature = "claude-code", feature = "codex"))]
fn migrate(name: &str) {
    let sessions = KindSet::EMPTY.with(StateKind::Sessions);
    let read_with = |h: &str, home: &Path| {
        let r = crate::support::read_home(h, home, sessions, ReadOptions::default());
        (r.state, r.store)
    };
    let (original, store) = read_with(name, &samples().join(name));
    let gemini_home = tmp();
    let (answer, _) = write(gemini_home.path(), &original, &store, false);
    let (in_gemini, back_store) = read_with(HARNESS, gemini_home.path());
    for s in original.sessions.as_ref().unwrap() {
        let Some(new) = answer.sessions.get(s.id.as_str()) else {
            continue;
        };
        let (title, src) = title_of(&original, &store, s.id.as_str());
        let (btitle, got) = title_of(&in_gemini, &back_store, new);
        assert_eq!(btitle, title, "{name} {}: title", s.id);
        assert_survives(&format!("{name} {} in Gemini", s.id), &src, &got);
    }

    let home_again = tmp();
    let both = asp_format::blob::Overlay::new(vec![&back_store as &dyn BlobSource, &store]);
    let (again, _) = crate::support::write_home(
        name,
        home_again.path(),
        &in_gemini,
        &both,
        false,
        &PathMap::default(),
    );
    let (final_state, final_store) = read_with(name, home_again.path());
    for s in original.sessions.as_ref().unwrap() {
        let Some(gid) = answer.sessions.get(s.id.as_str()) else {
            continue;
        };
        let Some(last) = again.sessions.get(gid) else {
            continue;
        };
        let (_, src) = title_of(&original, &store, s.id.as_str());
        let (_, got) = title_of(&final_state, &final_store, last);
        assert_survives(&format!("{name} {} and back", s.id), &src, &got);
    }
}

/// A skill carried into a Gemini home that has a different skill of that name in the other
/// root is refused: `.agents/skills` wins over `.gemini/skills`, so writing it would hide the
/// user's own skill (or be hidden by it).
#[cfg(feature = "qwen")]
#[test]
fn a_skill_that_would_hide_one_of_the_same_name_is_not_taken() {
    let work = tmp();
    let bundle = work.path().join("qwen.aspstate");
    pack_home("qwen", samples().join("qwen"), &bundle)
        .assert()
        .success();
    let home = work.path().join("home");
    support_copy(&sample_home(), &home);
    let own = home.join(".gemini/skills/release-notes/SKILL.md");
    let before = fs::read(&own).unwrap();
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "gemini", "--kinds", "skills", "--json", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reasons: Vec<&str> = answer["notTaken"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.starts_with(
            "skill release-notes: a different skill named release-notes is already in"
        ) && r
            .contains(".gemini/skills/release-notes, a folder Gemini also reads skills from")),
        "{answer}"
    );
    assert!(!home.join(".agents/skills/release-notes").exists());
    assert_eq!(fs::read(&own).unwrap(), before);
}

#[cfg(feature = "claude-code")]
#[test]
fn the_claude_code_sample_survives_a_trip_through_gemini_and_back() {
    migrate("claude-code");
}

#[cfg(feature = "codex")]
#[test]
fn the_codex_sample_survives_a_trip_through_gemini_and_back() {
    migrate("codex");
}

#[test]
fn the_same_session_in_several_files_is_carried_once_with_all_its_files() {
    let home = tmp();
    let g = home.path().join(".gemini");
    support_copy(&sample_home().join(".gemini"), &g);
    // What the CLI leaves behind: the hash directory copied into the slug directory it
    // registers, and a startup-only file (metadata and context, nothing to resume) from a
    // resume, with a later lastUpdated.
    let hash_chat = "tmp/bc5f1c2c9a96f2e8cf162c935903922001bb85f184a5af37abbf70283f1aed9c/chats/session-2026-11-20T16-05-3b9e1f0a.json";
    fs::create_dir_all(g.join("tmp/dotfiles/chats")).unwrap();
    fs::copy(
        g.join(hash_chat),
        g.join("tmp/dotfiles/chats/session-2026-11-20T16-05-3b9e1f0a.json"),
    )
    .unwrap();
    fs::write(
        g.join("tmp/dotfiles/.project_root"),
        "/home/dev/code/dotfiles",
    )
    .unwrap();
    let stray = g.join("tmp/shop/chats/session-2026-11-30T08-00-fed50604.jsonl");
    fs::write(
        &stray,
        format!(
            "{{\"sessionId\":\"{S1}\",\"projectHash\":\"52efbb073673fe2ab6aef99e8132e361c0d5e245fdc6ce54f5682353f3246bee\",\"startTime\":\"2026-11-30T08:00:00.000Z\",\"lastUpdated\":\"2026-11-30T08:00:00.000Z\",\"kind\":\"main\"}}\n"
        ),
    )
    .unwrap();

    let r = read_home(home.path());
    assert_eq!(r.state.sessions.as_ref().unwrap().len(), 6);
    let legacy = r.session(S5);
    assert_eq!(legacy.native.as_ref().unwrap().files.len(), 2);
    assert_eq!(legacy.cwd.as_deref(), Some("/home/dev/code/dotfiles"));
    let s1 = r.session(S1);
    assert_eq!(
        s1.title, "Fix discount codes in checkout total",
        "the listable file wins"
    );
    assert_eq!(count(&r.updates(S1), "tool_call"), 8);
    let files: Vec<&str> = s1
        .native
        .as_ref()
        .unwrap()
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        files,
        [
            ".gemini/tmp/shop/chats/session-2026-11-23T09-14-fed50604.jsonl",
            ".gemini/tmp/shop/chats/session-2026-11-30T08-00-fed50604.jsonl"
        ]
    );

    // A restore gives every file back.
    let target = tmp();
    let (answer, _) = write(target.path(), &r.state, &r.store, false);
    everything_but_the_trust_of_issues(&answer);
    assert_eq!(chat_files(target.path()), chat_files(home.path()));
}

fn support_copy(src: &Path, dst: &Path) {
    for f in crate::support::files_under(src) {
        let to = dst.join(f.strip_prefix(src).unwrap());
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&f, &to).unwrap();
    }
}

#[test]
fn rebuilt_sessions_meet_their_restored_versions_and_go_beside_them() {
    let r = read_home(&sample_home());
    let home = tmp();
    write(home.path(), &r.state, &r.store, false);
    let mut rebuilt = r.state.clone();
    rebuilt.retain_kinds(KindSet::EMPTY.with(StateKind::Sessions));
    for s in rebuilt.sessions.as_mut().unwrap() {
        s.native = None;
    }
    let (answer, _) = write(home.path(), &rebuilt, &r.store, false);
    for s in rebuilt.sessions.as_ref().unwrap() {
        let id = s.id.as_str();
        assert_eq!(
            answer.sessions[id],
            name_uuid(&format!("{id}~gemini")),
            "{id}"
        );
    }
    // The legacy chat's restored version is in the old hash directory, the rebuilt one in the
    // slug directory the CLI reads now: still the same session, so still kept beside.
    let g = home.path().join(".gemini/tmp");
    let restored = "chats/session-2026-11-20T16-05-3b9e1f0a.json";
    assert_eq!(
        fs::read(g.join("dotfiles").join(restored)).unwrap(),
        fs::read(
            g.join("bc5f1c2c9a96f2e8cf162c935903922001bb85f184a5af37abbf70283f1aed9c")
                .join(restored)
        )
        .unwrap(),
        "before the slug directory got its first chat, the old hash directory was copied into it, \
         as the CLI's start-up migration does, so the restored chat stays visible"
    );
    let copy = name_uuid(&format!("{S5}~gemini"));
    assert!(
        home.path()
            .join(format!(
                ".gemini/tmp/dotfiles/chats/session-2026-11-20T16-05-{}.jsonl",
                &copy[..8]
            ))
            .is_file()
    );
}

// ---------------------------------------------------------------------------------------
// What a read gives when something is missing or damaged, and what a write never does

/// A state with one session from another harness, as a bundle or an import hands it over.
fn foreign_session(
    id: &str,
    updated_at: Option<&str>,
    updates: Vec<Value>,
) -> (State, MemoryStore) {
    let mut session =
        json!({"id": id, "title": "T", "harness": "opencode", "cwd": "/tmp/x", "updates": updates});
    if let Some(t) = updated_at {
        session["updatedAt"] = json!(t);
    }
    let store = MemoryStore::new();
    let export: asp_format::export::ExportState =
        serde_json::from_value(json!({"sessions": [session]})).unwrap();
    (export.into_state(&store).unwrap(), store)
}

fn said(id: &str, kind: &str, text: &str, meta: Option<Value>) -> Value {
    let mut update = json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    if let Some(m) = meta {
        update["_meta"] = m;
    }
    json!({"sessionId": id, "update": update})
}

/// The metadata line of the one chat under `home`.
fn only_chat(home: &Path) -> (String, Value) {
    let chats = chat_files(home);
    assert_eq!(chats.len(), 1, "{:?}", chats.keys());
    let (path, bytes) = chats.into_iter().next().unwrap();
    let first = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    (path, serde_json::from_str(&first).unwrap())
}

#[test]
fn a_session_without_updated_at_is_dated_by_its_content_so_carrying_it_again_is_already_there() {
    let plain = |id: &str| {
        vec![
            said(id, "user_message_chunk", "hello", None),
            said(id, "agent_message_chunk", "hi", None),
        ]
    };
    // Nothing in it carries a time: the epoch, never the time of the import.
    let (state, store) = foreign_session("telegram:42", None, plain("telegram:42"));
    let home = tmp();
    let (first, diagnostics) = write(home.path(), &state, &store, false);
    let before = crate::support::files_in(home.path());
    let (path, meta) = only_chat(home.path());
    assert_eq!(
        path,
        format!(
            "x/chats/session-1970-01-01T00-00-{}.jsonl",
            &name_uuid("telegram:42")[..8]
        )
    );
    assert_eq!(
        (meta["startTime"].as_str(), meta["lastUpdated"].as_str()),
        (
            Some("1970-01-01T00:00:00.000Z"),
            Some("1970-01-01T00:00:00.000Z")
        )
    );
    assert!(
        diagnostics.iter().any(|d| d.message.contains(
            "session telegram:42: it has no updatedAt, so its chat is dated 1970-01-01T00:00:00.000Z"
        ) && d.message.contains("general.sessionRetention")),
        "{diagnostics:?}"
    );
    let (mut again, _) = write(home.path(), &state, &store, false);
    assert_eq!(again.already_there.len(), 1, "{again:?}");
    again.already_there.clear();
    assert_eq!(again, first, "already there: the same id, nothing refused");
    assert_eq!(
        crate::support::files_in(home.path()),
        before,
        "no new file, no ~opencode copy"
    );

    // The first time its updates carry, else the time in a time-based id.
    let stamped = vec![
        said("s", "user_message_chunk", "hello", None),
        said(
            "s",
            "agent_message_chunk",
            "hi",
            Some(json!({"other": {"timestamp": "2026-03-04T05:06:07.089Z"}})),
        ),
    ];
    let (state, store) = foreign_session("s", None, stamped);
    let home = tmp();
    write(home.path(), &state, &store, false);
    assert_eq!(
        only_chat(home.path()).1["startTime"],
        "2026-03-04T05:06:07.089Z"
    );
    let v7 = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
    let (state, store) = foreign_session(v7, Some("not a time"), plain(v7));
    let home = tmp();
    let (_, diagnostics) = write(home.path(), &state, &store, false);
    assert_eq!(
        only_chat(home.path()).1["lastUpdated"],
        "2022-02-22T19:22:22.000Z"
    );
    assert!(
        diagnostics.iter().any(|d| d
            .message
            .contains("its updatedAt \"not a time\" is not a time")),
        "{diagnostics:?}"
    );
}

#[test]
fn a_settings_file_that_is_not_json_leaves_tools_and_settings_out_and_says_where() {
    let home = tmp();
    let g = home.path().join(".gemini");
    fs::create_dir_all(&g).unwrap();
    fs::write(g.join("settings.json"), "{\n  \"model\": { not json\n}\n").unwrap();
    let r = read_home(home.path());
    assert_eq!(r.state.tools, None, "not given: \"none\" is not known");
    assert_eq!(r.state.settings, None);
    assert_eq!(
        r.state.sessions, None,
        "the other kinds are read as usual (and a store without sessions gives none)"
    );
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.file() == Some(g.join("settings.json").as_path()))
        .expect("reported");
    assert_eq!(d.severity, Severity::Lost);
    assert_eq!(d.line, Some(2));
    assert!(
        d.message
            .starts_with("column 14: is not JSON (key must be a string)"),
        "{}",
        d.message
    );
    assert!(
        d.message
            .contains("MCP servers (tools) and settings were not read"),
        "{}",
        d.message
    );

    // `mcpServers` that is not an object costs the tools alone.
    fs::write(
        g.join("settings.json"),
        r#"{"mcpServers": ["x"], "model": {"name": "gemini-2.5-pro"}}"#,
    )
    .unwrap();
    let r = read_home(home.path());
    assert_eq!(r.state.tools, None);
    assert_eq!(
        r.state.settings.unwrap()["model"],
        SettingValue::Select("gemini-2.5-pro".into())
    );
    assert!(r.diagnostics.iter().any(
        |d| d.severity.is_not_carried() && d.message.contains("`mcpServers` is not an object")
    ));
}

#[test]
fn a_bundle_never_makes_an_mcp_server_trusted_or_hands_it_google_credentials() {
    let tools: Vec<McpServer> = serde_json::from_value(json!([
        {"name": "issues", "command": "python3", "args": ["server.py"], "env": [],
         "_meta": {"gemini": {"trust": true, "includeTools": ["get_issue"], "timeout": 30000}}},
        {"type": "http", "name": "cloud", "url": "https://mcp.example.com/mcp", "headers": [],
         "_meta": {"gemini": {"urlField": "url", "authProviderType": "google_credentials", "targetAudience": "x"}}},
        {"name": "quiet", "command": "q", "args": [], "env": [], "_meta": {"gemini": {"trust": false}}}
    ]))
    .unwrap();
    let state = State {
        tools: Some(tools),
        ..State::default()
    };
    let store = MemoryStore::new();
    let home = tmp();
    let (answer, _) = write(home.path(), &state, &store, false);
    assert_eq!(answer.taken, KindSet::EMPTY.with(StateKind::Tools));
    // Servers are written in the state's canonical order (by name).
    let reasons: Vec<&str> = answer.not_taken.iter().map(|n| n.reason.as_str()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].starts_with("MCP server \"cloud\": authProviderType \"google_credentials\""),
        "{}",
        reasons[0]
    );
    assert!(
        reasons[1].starts_with("MCP server \"issues\": trust: true"),
        "{}",
        reasons[1]
    );
    let settings_path = home.path().join(".gemini/settings.json");
    let settings: Value = serde_json::from_slice(&fs::read(&settings_path).unwrap()).unwrap();
    assert_eq!(
        settings["mcpServers"],
        json!({
            "issues": {"command": "python3", "args": ["server.py"], "includeTools": ["get_issue"], "timeout": 30000},
            "cloud": {"url": "https://mcp.example.com/mcp"},
            "quiet": {"command": "q", "trust": false}
        }),
        "configured, without what widens them; what narrows them is kept"
    );
    // Carried again: the same servers, the grants still not given (and said so).
    let (again, _) = write(home.path(), &state, &store, false);
    assert_eq!(again, answer);

    // A home that trusts the server itself keeps it so: nothing is widened.
    let mut own = settings.clone();
    own["mcpServers"]["issues"]["trust"] = json!(true);
    fs::write(&settings_path, serde_json::to_string_pretty(&own).unwrap()).unwrap();
    let (answer, _) = write(home.path(), &state, &store, false);
    assert_eq!(answer.not_taken.len(), 1, "{answer:?}");
    assert!(answer.not_taken[0].reason.contains("\"cloud\""));
    let after: Value = serde_json::from_slice(&fs::read(&settings_path).unwrap()).unwrap();
    assert_eq!(after, own);
}

// ---------------------------------------------------------------------------------------
// The validator: what Gemini CLI needs of a home to list and resume its sessions

/// The checks Gemini CLI makes (spec/harnesses/gemini.md §3, §4): a main chat is
/// `tmp/<project dir>/chats/session-<time>-<first 8 of its id>.jsonl` whose first line is its
/// metadata (`sessionId`, `projectHash`); its project directory is found (registry, marker or
/// a hash directory) and `projectHash` is the sha256 of that root; every line is JSON;
/// `settings.json` is a JSON object.
pub(crate) fn validate(home: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let gemini = home.join(".gemini");
    let registry: Value = fs::read(gemini.join("projects.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let root_of = |dir: &str| -> Option<String> {
        if let Some(m) = registry["projects"].as_object()
            && let Some((root, _)) = m.iter().find(|(_, d)| d.as_str() == Some(dir))
        {
            return Some(root.clone());
        }
        fs::read_to_string(gemini.join("tmp").join(dir).join(".project_root")).ok()
    };
    for d in fs::read_dir(gemini.join("tmp"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = d.file_name().to_string_lossy().into_owned();
        let chats = d.path().join("chats");
        if !chats.is_dir() {
            continue;
        }
        let hash_dir = dir.len() == 64 && dir.bytes().all(|b| b.is_ascii_hexdigit());
        let root = root_of(&dir);
        if root.is_none() && !hash_dir {
            problems.push(format!("tmp/{dir}: no project root names it"));
        }
        for f in fs::read_dir(&chats).into_iter().flatten().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if !f.path().is_file() || !name.ends_with(".jsonl") {
                continue;
            }
            let at = format!("tmp/{dir}/chats/{name}");
            let text = fs::read_to_string(f.path()).unwrap();
            let mut lines = text.lines().enumerate();
            let meta = lines
                .next()
                .and_then(|(_, l)| serde_json::from_str::<Value>(l).ok())
                .unwrap_or(Value::Null);
            let id = meta["sessionId"].as_str().unwrap_or("");
            let short: String = id.chars().take(8).collect();
            if !asp_convert::kit::uuid::is_uuid(id)
                || !name.starts_with("session-")
                || !name.ends_with(&format!("-{short}.jsonl"))
            {
                problems.push(format!("{at}: not named for its session {id:?}"));
            }
            let hash = meta["projectHash"].as_str().unwrap_or("");
            let expected = root
                .as_deref()
                .map(|r| crate::support::sha256_hex(r.as_bytes()));
            match expected {
                Some(e) if e != hash => {
                    problems.push(format!("{at}: projectHash is not its root's"))
                }
                None if hash != dir => problems.push(format!("{at}: projectHash is not its dir")),
                _ => {}
            }
            for (i, line) in lines {
                if serde_json::from_str::<Value>(line).is_err() {
                    problems.push(format!("{at}:{}: not JSON", i + 1));
                }
            }
        }
    }
    if let Ok(bytes) = fs::read(gemini.join("settings.json"))
        && !serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v.is_object())
    {
        problems.push("settings.json: not a JSON object".to_owned());
    }
    problems
}

/// A Gemini backup keeps the CLI's own configuration: settings, folder trust, policy rules,
/// commands, subagents, extension settings and the MCP servers `gemini mcp disable` switched
/// off; never the account, the machine's id or the TUI's counters, nor a project's files
/// under `tmp/`.
#[test]
fn the_own_configuration_is_the_settings_trust_policies_commands_and_agents() {
    let home = tmp();
    crate::support::copy_dir(&samples().join("gemini"), home.path());
    let kept = crate::support::config_kept(
        "gemini",
        home.path(),
        ".gemini",
        &[
            "commands/review.toml",
            "agents/tester.md",
            "mcp-server-enablement.json",
            "oauth_creds.json",
            "tmp/shop/checkpoint-before-refactor.json",
            "tmp/shop/shell_history",
            "tmp/shop/checkpoint-notes.txt",
        ],
    );
    assert_eq!(
        kept,
        [
            ".gemini/agents/tester.md",
            ".gemini/commands/review.toml",
            ".gemini/mcp-server-enablement.json",
            ".gemini/policies/guardrails.toml",
            ".gemini/settings.json",
            ".gemini/trustedFolders.json",
        ]
    );
}

/// A session found in two files (a copy Gemini went on writing to, here only a later
/// `lastUpdated`) is read from the one Gemini resumes, and only that one is its stream's
/// base: the other copy's stream is the same bytes, and were its file a base too, the bundle
/// could compress the stream against it, which the state (`_meta.gemini.file`) does not name,
/// so the directory form would pack to other bytes (spec/aspstate.md §4, §11).
#[test]
fn a_session_in_two_files_derives_its_stream_from_the_one_it_is_read_from_only() {
    let t = tmp();
    let home = t.path().join("home");
    crate::support::copy_dir(&sample_home(), &home);
    let chats = home.join(".gemini/tmp/shop/chats");
    let original = fs::read(chats.join("session-2026-11-23T09-14-fed50604.jsonl")).unwrap();
    // The copy that is read holds one more `$set`; pick its time so that its digest is the
    // greater one: a store choosing among both files by digest would take the other.
    let digest = |b: &[u8]| crate::support::sha256_hex(b);
    let copy = (0..60)
        .map(|s| {
            let mut c = original.clone();
            c.extend_from_slice(
                format!("{{\"$set\":{{\"lastUpdated\":\"2026-11-30T10:00:{s:02}.000Z\"}}}}\n")
                    .as_bytes(),
            );
            c
        })
        .find(|c| digest(c) > digest(&original))
        .expect("one of 60 digests is greater");
    let read_from = ".gemini/tmp/shop/chats/session-2026-11-30T10-00-fed50604.jsonl";
    fs::write(home.join(read_from), &copy).unwrap();
    let bundle = t.path().join("home.aspstate");
    pack_home(HARNESS, &home, &bundle).assert().success();
    let b = Bundle::open(&bundle).unwrap();
    let s = b
        .manifest()
        .state
        .sessions
        .iter()
        .flatten()
        .find(|s| s.id.as_str() == S1)
        .unwrap();
    assert_eq!(s.meta.as_ref().unwrap()["gemini"]["file"], read_from);
    let files = &s.native.as_ref().unwrap().files;
    assert_eq!(files.len(), 2, "both files are kept with the session");
    let base = files.iter().find(|f| f.path.as_str() == read_from).unwrap();
    let (_, dictionary) = b.layer_of(&s.updates.digest).unwrap();
    assert_eq!(dictionary, Some(base.content.digest));
    crate::support::assert_packs_back_from_dir(&bundle, &t.path().join("dir"));
}

/// Settings and MCP servers merged into a settings.json that was there (through the shared
/// `kit::settings_json::write_merged`, as for Qwen Code and OpenCode) are each said, and the
/// user's own keys are kept.
#[test]
fn settings_and_servers_added_to_a_settings_file_that_was_there_are_said() {
    let t = tmp();
    let bundle = t.path().join("g.aspstate");
    pack_home("gemini", sample_home(), &bundle)
        .assert()
        .success();
    let home = new_home(t.path().join("h"));
    let settings = home.join(".gemini/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    fs::write(&settings, "{\"ui\": {\"theme\": \"Default\"}}\n").unwrap();
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "gemini", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "settings: added to {}, a file that was there: general = \
             {{\"defaultApprovalMode\":\"auto_edit\"}}, model = {{\"name\":\"gemini-2.5-pro\"}}",
            settings.display()
        )),
        "{said}"
    );
    // The MCP servers added are named, and only named: their entries can hold credentials.
    assert!(
        said.contains(&format!(
            "tools: added to {}, a file that was there: MCP server \"docs\", MCP server \
             \"issues\", MCP server \"metrics\"\n",
            settings.display()
        )),
        "{said}"
    );
    let now: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(now["ui"]["theme"], "Default");
    // Unpacked again, nothing is added, and nothing is said to be.
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "gemini", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("added to"), "{said}");
}

/// Each Gemini CLI message carries its time into the stream (`_meta.gemini.timestamp` on its
/// first update), so a conversation carried into Codex is dated to its last turn, not to its
/// last tool call.
#[cfg(feature = "codex")]
#[test]
fn a_chat_carried_into_codex_keeps_the_time_of_its_last_message() {
    const ID: &str = "5f877e48-22f2-49ab-8055-0194661aee73";
    let chat =
        samples().join("gemini/.gemini/tmp/shop/chats/session-2026-11-25T16-40-5f877e48.jsonl");
    let times = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["timestamp"].as_str().map(str::to_owned))
            .collect()
    };
    let last_message = times(&fs::read_to_string(&chat).unwrap())
        .into_iter()
        .max()
        .unwrap();
    let packed = crate::support::read_home(
        "gemini",
        &samples().join("gemini"),
        asp_format::KindSet::EMPTY.with(asp_format::StateKind::Sessions),
        ReadOptions::default(),
    );
    let home = tmp();
    packed.write_into("codex", home.path());
    let rollout = crate::support::files_under(home.path())
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(&format!("{ID}.jsonl")))
        .unwrap();
    let last_line = times(&fs::read_to_string(&rollout).unwrap())
        .into_iter()
        .max()
        .unwrap();
    assert_eq!(last_line, last_message);
}

/// A server named in `mcp.excluded` is configured but not started: read, it says so
/// (`_meta.gemini.excluded`); written back into Gemini CLI it is excluded again; into Claude
/// Code, which would start it, it is left out and said.
#[test]
fn a_server_in_mcp_excluded_stays_switched_off() {
    let home = tmp();
    let gemini = home.path().join(".gemini");
    fs::create_dir_all(&gemini).unwrap();
    fs::write(
        gemini.join("settings.json"),
        r#"{"mcpServers": {"docs": {"command": "docs-mcp"}, "old": {"command": "old-mcp"}}, "mcp": {"excluded": ["old"]}}"#,
    )
    .unwrap();
    let read =
        crate::support::read_home("gemini", home.path(), KindSet::ALL, ReadOptions::default());
    let tools = serde_json::to_value(read.state.tools.as_ref().unwrap()).unwrap();
    assert_eq!(tools[0]["name"], "docs");
    assert!(tools[0].get("_meta").is_none(), "{tools}");
    assert_eq!(tools[1]["_meta"]["gemini"]["excluded"], true, "{tools}");
    let only = State {
        tools: read.state.tools.clone(),
        ..State::default()
    };
    let again = tmp();
    crate::support::write_home(
        "gemini",
        again.path(),
        &only,
        &read.store,
        false,
        &PathMap::default(),
    );
    let written: Value =
        serde_json::from_slice(&fs::read(again.path().join(".gemini/settings.json")).unwrap())
            .unwrap();
    assert_eq!(written["mcp"]["excluded"], json!(["old"]), "{written}");
    assert!(written["mcpServers"]["old"].is_object(), "{written}");
    let claude = tmp();
    let (answer, _) = crate::support::write_home(
        "claude-code",
        claude.path(),
        &only,
        &read.store,
        false,
        &PathMap::default(),
    );
    assert!(
        answer.not_taken.iter().any(|n| n.reason.starts_with(
            "MCP server old is switched off in Gemini CLI (`mcp.excluded`, left out of \
             `mcp.allowed`, or `gemini mcp disable`), and claude-code cannot keep"
        )),
        "{answer:?}"
    );
}

/// Gemini CLI 0.61 starts a configured server only when `mcp.allowed` (if there) names it,
/// `mcp.excluded` does not, and `gemini mcp disable` has not switched it off in
/// `mcp-server-enablement.json`; names match trimmed and in any case. Each of the others is
/// read switched off, so it stays off where it is carried.
#[test]
fn a_server_gemini_cli_does_not_start_is_read_switched_off() {
    let home = tmp();
    let gemini = home.path().join(".gemini");
    fs::create_dir_all(&gemini).unwrap();
    fs::write(
        gemini.join("settings.json"),
        r#"{"mcpServers": {"docs": {"command": "docs-mcp"}, "old": {"command": "old-mcp"},
            "paused": {"command": "paused-mcp"}, "Blocked": {"command": "b-mcp"}},
            "mcp": {"allowed": [" DOCS", "paused", "blocked"], "excluded": ["BLOCKED"]}}"#,
    )
    .unwrap();
    fs::write(
        gemini.join("mcp-server-enablement.json"),
        r#"{"paused": {"enabled": false}, "docs": {"enabled": true}}"#,
    )
    .unwrap();
    let read =
        crate::support::read_home("gemini", home.path(), KindSet::ALL, ReadOptions::default());
    assert_eq!(
        crate::support::servers_off(&read, "gemini"),
        [
            ("Blocked".to_owned(), true),
            ("docs".to_owned(), false),
            ("old".to_owned(), true),
            ("paused".to_owned(), true)
        ]
    );
    // An enablement file Gemini CLI cannot read switches nothing off, and says so.
    fs::write(gemini.join("mcp-server-enablement.json"), "{not json").unwrap();
    let read =
        crate::support::read_home("gemini", home.path(), KindSet::ALL, ReadOptions::default());
    assert_eq!(
        crate::support::servers_off(&read, "gemini")[3],
        ("paused".to_owned(), false)
    );
    assert!(
        read.diagnostics.iter().any(|d| d
            .file()
            .is_some_and(|f| f.ends_with("mcp-server-enablement.json"))
            && d.message.contains("starts every MCP server")),
        "{:?}",
        read.diagnostics
    );
}

/// A server carried switched on into a Gemini CLI home whose `mcp.allowed` does not name it
/// is written (the lists are the user's to change) and the answer says it will not start.
#[test]
fn a_server_written_past_mcp_allowed_is_said_not_to_start() {
    let from = tmp();
    fs::create_dir_all(from.path().join(".gemini")).unwrap();
    fs::write(
        from.path().join(".gemini/settings.json"),
        r#"{"mcpServers": {"docs": {"command": "docs-mcp"}}}"#,
    )
    .unwrap();
    let read =
        crate::support::read_home("gemini", from.path(), KindSet::ALL, ReadOptions::default());
    let only = State {
        tools: read.state.tools.clone(),
        ..State::default()
    };
    let to = tmp();
    fs::create_dir_all(to.path().join(".gemini")).unwrap();
    fs::write(
        to.path().join(".gemini/settings.json"),
        r#"{"mcp": {"allowed": ["search"]}}"#,
    )
    .unwrap();
    let (answer, diagnostics) = crate::support::write_home(
        "gemini",
        to.path(),
        &only,
        &read.store,
        false,
        &PathMap::default(),
    );
    let written: Value =
        serde_json::from_slice(&fs::read(to.path().join(".gemini/settings.json")).unwrap())
            .unwrap();
    assert!(written["mcpServers"]["docs"].is_object(), "{written}");
    assert_eq!(written["mcp"]["allowed"], json!(["search"]), "{written}");
    let said = format!("{answer:?} {diagnostics:?}");
    assert!(
        said.contains(
            "but `mcp.allowed` does not name it there, so Gemini will not start it until that \
             changes"
        ),
        "{said}"
    );
}

/// Pi's ids are time-ordered (UUID v7): sessions begun within about a minute of each other
/// share their first 8 characters, by which Gemini CLI names a chat and groups chats (its
/// cleanup deletes a group together; a resume first writes a file with the resumed id's
/// ending). The second of two such sessions is given an id of its own, said in a note, with
/// its title as it was: it is not "a different version" of the first kept beside it with a
/// marked title, as it was called before (found by a new user's trial). The dry run answers
/// the same, and a second import finds every one already there.
#[test]
fn sessions_whose_ids_begin_alike_are_kept_apart_by_their_ending() {
    let pi = crate::support::read_home(
        "pi",
        &samples().join("pi"),
        KindSet::EMPTY.with(StateKind::Sessions),
        ReadOptions::default(),
    );
    let ids: Vec<&str> = pi
        .state
        .sessions
        .iter()
        .flatten()
        .map(|s| s.id.as_str())
        .collect();
    let home = tmp();
    let write = |dry_run: bool| {
        crate::support::write_home(
            "gemini",
            home.path(),
            &pi.state,
            &pi.store,
            dry_run,
            &PathMap::default(),
        )
    };
    let (planned, _) = write(true);
    let (answer, diagnostics) = write(false);
    assert_eq!(planned.sessions, answer.sessions);
    // In each project's chats, every chat has an ending of its own.
    for project in fs::read_dir(home.path().join(".gemini/tmp")).unwrap() {
        let chats = project.unwrap().path().join("chats");
        let names: Vec<String> = fs::read_dir(&chats)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("session-"))
            .collect();
        let endings: std::collections::BTreeSet<&str> = names
            .iter()
            .map(|n| &n[n.len() - 14..n.len() - 6])
            .collect();
        assert_eq!(endings.len(), names.len(), "{}: {names:?}", chats.display());
    }
    let apart: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|i| answer.sessions[*i] != *i)
        .collect();
    assert!(
        !apart.is_empty(),
        "the sample has ids beginning alike: {ids:?}"
    );
    for id in &apart {
        assert!(
            diagnostics.iter().any(|d| d.severity == Severity::Note
                && d.message
                    .contains(&format!("session {id} was given the id "))),
            "{id}: {diagnostics:#?}"
        );
    }
    assert!(
        diagnostics
            .iter()
            .all(|d| !d.message.contains("different version")),
        "{diagnostics:#?}"
    );
    let problems = validate(home.path());
    assert!(problems.is_empty(), "{problems:#?}");
    let back = read_home(home.path());
    for s in pi.state.sessions.iter().flatten() {
        let title = &back.session(&answer.sessions[s.id.as_str()]).title;
        // (An untitled one is titled by its first prompt, as Gemini CLI lists it.)
        if !s.title.is_empty() {
            assert_eq!(title, &s.title, "{}", s.id);
        }
        assert!(!title.ends_with("~pi"), "{}: {title}", s.id);
    }
    let (again, _) = write(false);
    assert_eq!(again.sessions, answer.sessions);
    assert_eq!(again.already_there.len(), ids.len(), "{again:?}");
}
