//! What writing one item came to, and how a kind's items add up in the import answer.
//!
//! Every converter answers the same four ways for every item it is handed (a session, a skill,
//! an MCP server, a note, a setting): written new, already there with the same content, kept
//! beside a different version, or refused with a reason a person understands. A [`Tally`]
//! turns those into the `_asp/state/import` answer the same way for every kind: a kind is
//! taken when it was given empty or when at least one item of it was placed, and every
//! refusal is one `notTaken` entry.

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;

/// What writing one item came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Written (or, in a dry run, it would be).
    New,
    /// Written, and it grants something the owner should know was given on this machine (a
    /// folder trusted, tools allowed without asking): says what.
    Granted(String),
    /// The same item, with the same content, is there already; nothing was written.
    AlreadyThere,
    /// A different version is there, kept as it is; the carried one was written beside it.
    Beside,
    /// The version there is the start of the carried one (which holds every line of it and
    /// more after them: the session went on elsewhere), and was replaced by it, under the same
    /// id; nothing of what was there is lost.
    Updated,
    /// Not written; the reason is for the owner.
    Refused(String),
}

/// What a write does with an instructions file that is there and holds other instructions
/// (for the harnesses whose one instructions file has no way to include another: Codex's
/// `AGENTS.md`, Gemini CLI's and Qwen Code's with their memory sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DifferentInstructions {
    /// Instructions carried from another agent: added after what is there, once, so the
    /// harness reads both, and said.
    AddAfter,
    /// The harness's own backup restored: the file there is the person's newer version, kept
    /// as it is; the backed-up instructions are written beside it as `<file>.asp-restored`
    /// ([`crate::kit::config::restored_beside`]), as a configuration file's are. Adding an
    /// older version of the same file after it would double most of it.
    KeepBeside,
}

impl DifferentInstructions {
    /// [`DifferentInstructions::KeepBeside`] done: `text` written beside `file`, which holds
    /// other instructions; the reason the instructions were not taken, for the owner.
    pub fn keep_beside(
        file: &std::path::Path,
        text: &[u8],
        writer: &crate::kit::fsops::Writer,
    ) -> String {
        let beside = crate::kit::config::restored_beside(
            file,
            text,
            crate::kit::fsops::Mode::New { executable: false },
            writer,
        );
        format!("{} holds other instructions: {beside}", file.display())
    }
}

impl Placement {
    /// Whether the item is in the destination now (or would be, in a dry run).
    pub fn is_placed(&self) -> bool {
        !matches!(self, Placement::Refused(_))
    }

    /// Whether something was written for it (or would be, in a dry run): new, or granted.
    pub fn is_written(&self) -> bool {
        matches!(
            self,
            Placement::New | Placement::Granted(_) | Placement::Updated
        )
    }
}

/// Whether a restore carries the folder trust and approvals a harness's configuration holds by
/// a folder's path: Claude Code's trust of a folder, the tools it runs there without asking
/// and the `.mcp.json` servers approved there; Gemini CLI's and Qwen Code's
/// `trustedFolders.json`; the projects Codex's `config.toml` trusts. On another machine
/// another repository may sit at that path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Grants {
    /// Carried, and each said ([`Placement::Granted`]).
    #[default]
    Carry,
    /// Left out, and each said (`asp restore --no-grants`).
    Leave,
}

/// Where one session went: its id in the destination, and how it got there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPlaced {
    /// The session's id in the destination (empty when refused).
    pub id: String,
    pub placement: Placement,
}

impl SessionPlaced {
    pub fn new(id: impl Into<String>) -> Self {
        SessionPlaced {
            id: id.into(),
            placement: Placement::New,
        }
    }

    pub fn already_there(id: impl Into<String>) -> Self {
        SessionPlaced {
            id: id.into(),
            placement: Placement::AlreadyThere,
        }
    }

    /// Brought up to date under its own `id` ([`Placement::Updated`]).
    pub fn updated(id: impl Into<String>) -> Self {
        SessionPlaced {
            id: id.into(),
            placement: Placement::Updated,
        }
    }

    /// Kept beside a different version, under `id`.
    pub fn beside(id: impl Into<String>) -> Self {
        SessionPlaced {
            id: id.into(),
            placement: Placement::Beside,
        }
    }

    pub fn refused(reason: impl Into<String>) -> Self {
        SessionPlaced {
            id: String::new(),
            placement: Placement::Refused(reason.into()),
        }
    }
}

/// What of `kind` was written into `path`, a file the owner already had: `added`, each in
/// words. `dry_run`: it would be.
pub fn written_into(
    kind: StateKind,
    path: &std::path::Path,
    added: &[String],
    dry_run: bool,
) -> asp_format::answer::WrittenInto {
    changed_in(kind, path, "added to", added, dry_run)
}

/// What of `kind` was taken out of `path`, a file the owner already had (a line of an index
/// whose note the carried state deletes): `removed`, each in words. `dry_run`: it would be.
pub fn removed_from(
    kind: StateKind,
    path: &std::path::Path,
    removed: &[String],
    dry_run: bool,
) -> asp_format::answer::WrittenInto {
    changed_in(kind, path, "removed from", removed, dry_run)
}

/// `items` `done` `path` ("added to", "removed from"), or in a dry run would be.
fn changed_in(
    kind: StateKind,
    path: &std::path::Path,
    done: &str,
    items: &[String],
    dry_run: bool,
) -> asp_format::answer::WrittenInto {
    asp_format::answer::WrittenInto {
        kind,
        file: path.to_path_buf(),
        what: format!(
            "{}{done} {}, a file that was there: {}",
            if dry_run { "would be " } else { "" },
            path.display(),
            items.join(", ")
        ),
    }
}

/// The answer for one kind, item by item.
#[derive(Debug)]
pub struct Tally<'a> {
    answer: &'a mut ImportAnswer,
    kind: StateKind,
    taken: bool,
}

impl<'a> Tally<'a> {
    /// Starts the tally of `kind`, given with `given` items (a kind given empty is taken: there
    /// is nothing of it to refuse).
    pub fn new(answer: &'a mut ImportAnswer, kind: StateKind, given: usize) -> Self {
        Tally {
            answer,
            kind,
            taken: given == 0,
        }
    }

    /// Counts one item.
    pub fn place(&mut self, placement: Placement) {
        match placement {
            Placement::Refused(reason) => self.answer.refuse(self.kind, reason),
            _ => self.taken = true,
        }
    }

    /// Counts one session, `from` its id in the state: the answer maps it to its id in the
    /// destination, or says why it was refused.
    pub fn session(&mut self, from: &str, placed: SessionPlaced) {
        match placed.placement {
            // A session that could not be written is a loss, whatever the reason.
            Placement::Refused(reason) => self.answer.lose(self.kind, reason),
            p => {
                if p == Placement::AlreadyThere {
                    self.answer.already_there.insert(from.to_owned());
                }
                if p == Placement::Beside {
                    self.answer.beside.insert(from.to_owned());
                }
                if p == Placement::Updated {
                    self.answer.updated.insert(from.to_owned());
                }
                self.answer.sessions.insert(from.to_owned(), placed.id);
                self.place(p);
            }
        }
    }

    /// The kind was taken in part, whatever its items came to (a file merged as a whole).
    pub fn taken(&mut self) {
        self.taken = true;
    }

    /// Says what of the kind was written into `path`, a file the owner already had, as a
    /// JSON object went from `before` to `after`: each value added or changed, by its dotted
    /// key (nothing when they are the same). `dry_run`: it would be.
    pub fn wrote_into_json(
        &mut self,
        path: &std::path::Path,
        before: &serde_json::Map<String, serde_json::Value>,
        after: &serde_json::Map<String, serde_json::Value>,
        dry_run: bool,
    ) {
        let mut added = Vec::new();
        json_additions("", before, after, &mut added);
        self.wrote_into(path, &added, dry_run);
    }

    /// Says what of the kind was written into `path`, a file the owner already had: `added`,
    /// each value as `key = value` (nothing when it is empty). `dry_run`: it would be.
    pub fn wrote_into(&mut self, path: &std::path::Path, added: &[String], dry_run: bool) {
        if added.is_empty() {
            return;
        }
        self.answer
            .written_into
            .push(written_into(self.kind, path, added, dry_run));
    }

    /// Says what of the kind was taken out of `path`, a file the owner already had
    /// (nothing when `removed` is empty). `dry_run`: it would be.
    pub fn removed_from(&mut self, path: &std::path::Path, removed: &[String], dry_run: bool) {
        if removed.is_empty() {
            return;
        }
        self.answer
            .written_into
            .push(removed_from(self.kind, path, removed, dry_run));
    }

    /// Says which MCP servers were added to `path`, a file the owner already had: by name
    /// only, since their entries often hold credentials. `dry_run`: they would be.
    pub fn servers_into(&mut self, path: &std::path::Path, names: &[String], dry_run: bool) {
        let added: Vec<String> = names.iter().map(|n| format!("MCP server {n:?}")).collect();
        self.wrote_into(path, &added, dry_run);
    }

    /// Something of the kind was not carried, without being one item of it (a part of an
    /// item, a value a target cannot hold).
    pub fn refuse(&mut self, reason: impl Into<String>) {
        self.answer.refuse(self.kind, reason);
    }

    /// Ends the tally: the kind is taken when anything of it was.
    pub fn finish(self) {
        if self.taken {
            self.answer.take(self.kind);
        }
    }
}

/// Each value of `after` that `before` does not hold, as `key = value` (`key = value (was
/// old)` where it held another), objects followed key by key under a dotted prefix.
fn json_additions(
    prefix: &str,
    before: &serde_json::Map<String, serde_json::Value>,
    after: &serde_json::Map<String, serde_json::Value>,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    for (k, v) in after {
        let key = format!("{prefix}{k}");
        match (before.get(k), v) {
            (Some(old), _) if old == v => {}
            (Some(Value::Object(old)), Value::Object(new)) => {
                json_additions(&format!("{key}."), old, new, out);
            }
            (Some(old), _) => out.push(format!("{key} = {v} (was {old})")),
            (None, _) => out.push(format!("{key} = {v}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_written_into_a_file_there_is_said_key_by_key() {
        let before = serde_json::json!({"theme": "light", "model": "sonnet", "permissions": {"allow": ["Bash(ls)"]}});
        let after = serde_json::json!({"theme": "light", "model": "opus", "permissions": {"allow": ["Bash(ls)"], "defaultMode": "acceptEdits"}, "effortLevel": "high"});
        let mut answer = ImportAnswer::default();
        let mut t = Tally::new(&mut answer, StateKind::Settings, 3);
        let (b, a) = (before.as_object().unwrap(), after.as_object().unwrap());
        t.wrote_into_json(std::path::Path::new("h/settings.json"), b, a, false);
        t.wrote_into_json(std::path::Path::new("h/settings.json"), b, b, true);
        t.finish();
        assert_eq!(
            answer.written_into.len(),
            1,
            "nothing is said of a file left as it was"
        );
        assert_eq!(answer.written_into[0].kind, StateKind::Settings);
        assert_eq!(
            answer.written_into[0].what,
            "added to h/settings.json, a file that was there: model = \"opus\" (was \"sonnet\"), \
             permissions.defaultMode = \"acceptEdits\", effortLevel = \"high\""
        );
    }

    #[test]
    fn a_kind_is_taken_when_anything_of_it_is_and_every_refusal_is_said() {
        let mut answer = ImportAnswer::default();
        let mut t = Tally::new(&mut answer, StateKind::Skills, 2);
        t.place(Placement::Refused("a different skill is there".into()));
        t.place(Placement::AlreadyThere);
        t.finish();
        let mut t = Tally::new(&mut answer, StateKind::Memory, 1);
        t.place(Placement::Refused("no project".into()));
        t.finish();
        Tally::new(&mut answer, StateKind::Tools, 0).finish();
        let mut t = Tally::new(&mut answer, StateKind::Sessions, 1);
        t.session("a", SessionPlaced::beside("b"));
        t.finish();
        assert_eq!(
            answer.taken.to_string(),
            "sessions,skills,tools",
            "memory: nothing of it was placed"
        );
        assert_eq!(answer.not_taken.len(), 2);
        assert!(!answer.any_lost(), "nothing refused here is a session");
        let mut t = Tally::new(&mut answer, StateKind::Sessions, 1);
        t.session("c", SessionPlaced::refused("in the way"));
        t.finish();
        assert!(answer.any_lost(), "a session not written is lost");
        assert_eq!(answer.sessions["a"], "b");
        let mut t = Tally::new(&mut answer, StateKind::Sessions, 1);
        t.session("d", SessionPlaced::already_there("d"));
        t.finish();
        assert_eq!(answer.sessions["d"], "d");
        assert_eq!(
            answer.already_there.iter().collect::<Vec<_>>(),
            ["d"],
            "only d was there already"
        );
    }
}
