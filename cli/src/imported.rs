//! What an import says, the same for `asp-unpack` and `asp restore`: the findings on stderr,
//! one summary, the sessions renamed and how to resume them, the `--json` answer and the exit
//! code, all counted from the same two sources (the import answer and the diagnostics).

use std::collections::BTreeMap;

use asp_convert::kit::report::{Diagnostic, Diagnostics};
use asp_format::answer::ImportAnswer;
use serde_json::{Value, json};

use crate::exit::Exit;
use crate::human;
use crate::progress::Bar;

/// How many resume commands the human answer shows.
pub const RESUME_SHOWN: usize = 10;

/// An import's answer, resume commands and findings.
#[derive(Debug)]
pub struct Imported {
    pub answer: ImportAnswer,
    /// Each new id's resume command (`_meta.asp.resume`).
    pub resume: BTreeMap<String, String>,
    findings: Vec<Diagnostic>,
}

impl Imported {
    pub fn new(
        answer: ImportAnswer,
        resume: BTreeMap<String, String>,
        diagnostics: &Diagnostics,
    ) -> Self {
        Imported {
            answer,
            resume,
            findings: diagnostics.items(),
        }
    }

    /// Every finding and every `notTaken` on stderr, labelled by what it cost; with `quiet`
    /// (`-q`) the findings only what was lost, as `asp backup -q` says them. What the
    /// destination did not take (`notTaken`, each a kind's refusal with its reason: a file
    /// there kept and the carried one written beside it) and what was written into a file
    /// there are what was done: said either way.
    pub fn print_findings(&self, bar: &Bar, quiet: bool) {
        let shown = self
            .findings
            .iter()
            .filter(|d| !quiet || d.severity.is_loss());
        for line in human::finding_lines(shown) {
            bar.println(line);
        }
        for n in &self.answer.not_taken {
            let what = if n.lost { "lost" } else { "not taken" };
            bar.println(format!("{what}: {}: {}", n.kind, n.reason));
        }
        for w in &self.answer.written_into {
            bar.println(format!("{}: {}", w.kind, w.what));
        }
    }

    fn lost(&self) -> usize {
        self.answer.not_taken.iter().filter(|n| n.lost).count()
            + self
                .findings
                .iter()
                .filter(|d| d.severity.is_loss())
                .count()
    }

    fn left_out(&self) -> usize {
        self.answer.not_taken.iter().filter(|n| !n.lost).count()
            + self
                .findings
                .iter()
                .filter(|d| d.severity.is_not_carried() && !d.severity.is_loss())
                .count()
    }

    /// The `--json` answer: the protocol's, and under `_meta.asp` the resume commands, the
    /// sessions that were there already, what was written into files that were there, and
    /// every finding (what `--strict` counts besides
    /// `notTaken`), so a script sees all the human output says; `dryRun: true` when nothing
    /// was written (`dry_run`), since the answer is otherwise the one a write would give.
    pub fn json(&self, dry_run: bool) -> Value {
        let mut out = serde_json::to_value(&self.answer).expect("an answer serialises");
        let mut asp = serde_json::Map::new();
        if dry_run {
            asp.insert("dryRun".into(), Value::Bool(true));
        }
        if !self.resume.is_empty() {
            asp.insert("resume".into(), json!(self.resume));
        }
        if !self.answer.already_there.is_empty() {
            asp.insert("alreadyThere".into(), json!(self.answer.already_there));
        }
        if !self.answer.updated.is_empty() {
            asp.insert("updated".into(), json!(self.answer.updated));
        }
        if !self.answer.written_into.is_empty() {
            asp.insert("writtenInto".into(), json!(self.answer.written_into));
        }
        if !self.findings.is_empty() {
            let findings: Vec<Value> = self.findings.iter().map(human::finding_json).collect();
            asp.insert("findings".into(), Value::Array(findings));
        }
        if !asp.is_empty() {
            out["_meta"] = json!({ "asp": asp });
        }
        out
    }

    /// What the summary line adds: how many sessions, and of each kind (new, there already
    /// the same, or a different version the carried one is kept beside), so a dry run into an
    /// empty home says what it would write too; then what was not carried. (A session there
    /// whose missing files were written back counts as there; a finding says what was
    /// written.)
    pub fn summary_tail(&self, quiet: bool) -> String {
        let mut tail = String::new();
        let there = self.answer.already_there.len();
        let beside = self.answer.beside.len();
        let updated = self.answer.updated.len();
        let total = self.answer.sessions.len();
        if total > 0 {
            let new = total.saturating_sub(there + beside + updated);
            let mut parts = Vec::new();
            if new > 0 {
                parts.push(format!("{new} new"));
            }
            if updated > 0 {
                parts.push(format!("{updated} brought up to date"));
            }
            if beside > 0 {
                parts.push(format!("{beside} kept beside a different version"));
            }
            if there > 0 {
                parts.push(format!("{there} already there"));
            }
            tail.push_str(&format!(
                "; {}: {}",
                human::count(total as u64, "session", "sessions"),
                parts.join(", ")
            ));
        }
        tail.push_str(&human::not_carried(self.left_out(), self.lost(), quiet));
        tail
    }

    /// The lines after the summary: each session written under a new id and, unless nothing
    /// was written (a dry run), how to resume the first [`RESUME_SHOWN`] of them; the rest
    /// are counted (a whole store's unpack would print a line per session), and `--json`
    /// gives each under `_meta.asp.resume`.
    pub fn detail_lines(&self, dry_run: bool) -> Vec<String> {
        let mut lines: Vec<String> = self
            .answer
            .sessions
            .iter()
            .filter(|(old, new)| old != new)
            .map(|(old, new)| format!("  session {old} → {new}"))
            .collect();
        if !dry_run && !self.resume.is_empty() {
            lines.push("to continue:".to_owned());
            lines.extend(
                self.resume
                    .values()
                    .take(RESUME_SHOWN)
                    .map(|cmd| format!("  {cmd}")),
            );
            let more = self.resume.len().saturating_sub(RESUME_SHOWN);
            if more > 0 {
                lines.push(format!(
                    "  and {more} more {} (`--json` gives each as _meta.asp.resume)",
                    if more == 1 { "session" } else { "sessions" }
                ));
            }
        }
        lines
    }

    /// 3 when something was lost, or with `--strict` when anything was not carried.
    pub fn exit(&self, strict: bool) -> Exit {
        crate::exit::carried(self.lost() > 0, self.left_out() > 0, strict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_convert::kit::report::Severity;
    use asp_format::StateKind;

    #[test]
    fn a_long_resume_list_shows_the_first_ten_and_counts_the_rest() {
        let resume: BTreeMap<String, String> = (0..12)
            .map(|i| (format!("s{i:02}"), format!("claude --resume s{i:02}")))
            .collect();
        let imported = Imported::new(ImportAnswer::default(), resume, &Diagnostics::new());
        let lines = imported.detail_lines(false);
        assert_eq!(lines[0], "to continue:");
        assert_eq!(lines[1], "  claude --resume s00");
        assert_eq!(lines[10], "  claude --resume s09");
        assert_eq!(
            lines[11],
            "  and 2 more sessions (`--json` gives each as _meta.asp.resume)"
        );
        assert_eq!(lines.len(), 12);
    }

    #[test]
    fn json_says_what_the_summary_says() {
        let mut answer = ImportAnswer::default();
        answer.take(StateKind::Sessions);
        answer.sessions.insert("a".into(), "a".into());
        answer.sessions.insert("b".into(), "c".into());
        answer.already_there.insert("a".into());
        answer.refuse(StateKind::Memory, "no memory here");
        let diagnostics = Diagnostics::new();
        diagnostics.push(Diagnostic {
            severity: Severity::LeftOut,
            subject: None,
            line: None,
            message: "usage_update updates have no place here".into(),
        });
        let imported = Imported::new(answer, BTreeMap::new(), &diagnostics);
        let v = imported.json(false);
        assert_eq!(v["_meta"]["asp"]["alreadyThere"], json!(["a"]));
        assert!(v["_meta"]["asp"].get("dryRun").is_none());
        assert_eq!(imported.json(true)["_meta"]["asp"]["dryRun"], true);
        assert_eq!(v["_meta"]["asp"]["findings"][0]["severity"], "left out");
        assert_eq!(v["notTaken"][0]["kind"], "memory");
        let tail = imported.summary_tail(false);
        // b → c is new under an id of the destination's (not "kept beside": only the
        // answer's `beside` says that).
        assert!(
            tail.starts_with("; 2 sessions: 1 new, 1 already there; 2 not taken"),
            "{tail}"
        );
        assert_eq!(imported.exit(false), Exit::Ok);
        assert_eq!(imported.exit(true), Exit::Incomplete);
        assert_eq!(imported.detail_lines(true), ["  session b → c"]);
    }

    /// Sessions all new (a dry run into an empty home) are counted too: the summary says what
    /// the write would bring.
    #[test]
    fn sessions_all_new_are_counted() {
        let mut answer = ImportAnswer::default();
        answer.take(StateKind::Sessions);
        for id in ["a", "b", "c"] {
            answer.sessions.insert(id.into(), id.into());
        }
        let imported = Imported::new(answer, BTreeMap::new(), &Diagnostics::new());
        assert_eq!(imported.summary_tail(false), "; 3 sessions: 3 new");
    }
}
