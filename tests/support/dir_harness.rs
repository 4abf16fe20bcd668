//! A harness converter whose capabilities a test chooses, for the hub's converter path: its
//! native store is a plain state directory (`asp_convert::dir`) at `<home>/.dirstate`.
//!
//! It reads the directory, and writes into it the way a converter must: without clobbering a
//! session. A session already there with the same updates is left as it is (same id); one with
//! different updates is kept beside it as `<id>~dirstate`, its updates re-addressed to that id.

use asp_convert::dir;
use asp_convert::harness::{
    ReadContext, SessionContext, Survey, SurveyContext, Surveyed, WriteContext,
};
use asp_convert::{Capabilities, ConvertError, Harness};
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource, MemoryStore};
use asp_format::name::{HarnessName, SessionId};
use asp_format::progress::Quiet;
use asp_format::state::{Session, State};
use asp_format::update::{UpdateLines, UpdateWriter};
use asp_format::{KindSet, StateKind};
use serde_json::Value;

pub const NAME: &str = "dirstate";
pub const STORE: &str = ".dirstate";

#[derive(Debug, Clone, Copy)]
pub struct DirHarness {
    pub export: KindSet,
    pub import: KindSet,
}

impl Harness for DirHarness {
    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).unwrap()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: self.export,
            import: self.import,
        }
    }

    fn accepts(&self) -> &'static asp_convert::kit::accepted::Accepts {
        &asp_convert::kit::accepted::Accepts {
            harness: "dirstate",
            runs: asp_convert::kit::accepted::Runs::One(
                asp_convert::kit::accepted::Provider::Anthropic,
            ),
            model_aliases: &[],
            modes: &[],
        }
    }

    fn resume_command(&self, _id: &str, _cwd: Option<&str>) -> Option<String> {
        None
    }

    fn store_paths(&self, home: &asp_convert::Home) -> Vec<std::path::PathBuf> {
        vec![home.join(STORE)]
    }

    fn survey(&self, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
        dir::survey(&ctx.home.join(STORE))
    }

    fn read_session(
        &self,
        ctx: &SessionContext<'_>,
        entry: &Surveyed,
    ) -> Result<Vec<Session>, ConvertError> {
        dir::read_session(entry, ctx.blobs)
    }

    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        dir::read_kinds(
            &ctx.home.join(STORE),
            ctx.kinds.intersection(self.export),
            ctx.blobs,
        )
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let root = ctx.home.join(STORE);
        let store = MemoryStore::new();
        let mut merged = if root.is_dir() {
            dir::read(&root, KindSet::ALL, &store, &Quiet)?
        } else {
            State::default()
        };
        let mut answer = ImportAnswer::default();
        let given = ctx.state.kinds().intersection(self.import);
        for kind in ctx
            .state
            .kinds()
            .iter()
            .filter(|k| !self.import.contains(*k))
        {
            answer.refuse(kind, format!("{NAME} does not take {kind}"));
        }
        if let Some(incoming) = ctx
            .state
            .sessions
            .as_ref()
            .filter(|_| given.contains(StateKind::Sessions))
        {
            let sessions = merged.sessions.get_or_insert_with(Vec::new);
            for s in incoming {
                let old = s.id.as_str().to_owned();
                match sessions.iter().find(|e| e.id == s.id) {
                    Some(existing) if existing.updates.digest == s.updates.digest => {
                        answer.sessions.insert(old.clone(), old);
                    }
                    Some(_) => {
                        let id = SessionId::new(&format!("{old}~{NAME}")).unwrap();
                        let updates = readdressed(ctx.blobs, s, &id, &store)?;
                        sessions.push(Session {
                            id: id.clone(),
                            updates,
                            native: None,
                            ..s.clone()
                        });
                        answer.sessions.insert(old, id.as_str().to_owned());
                    }
                    None => {
                        let updates = store.put(&ctx.blobs.read_all(&s.updates)?)?;
                        sessions.push(Session {
                            updates,
                            native: None,
                            ..s.clone()
                        });
                        answer.sessions.insert(old.clone(), old);
                    }
                }
            }
            answer.take(StateKind::Sessions);
        }
        if let Some(i) = ctx
            .state
            .instructions
            .as_ref()
            .filter(|_| given.contains(StateKind::Instructions))
        {
            let text = store.put(&ctx.blobs.read_all(&i.text)?)?;
            merged.instructions = Some(asp_format::state::Instructions { text });
            answer.take(StateKind::Instructions);
        }
        if let Some(s) = ctx
            .state
            .settings
            .as_ref()
            .filter(|_| given.contains(StateKind::Settings))
        {
            merged
                .settings
                .get_or_insert_with(Default::default)
                .extend(s.clone());
            answer.take(StateKind::Settings);
        }
        if !ctx.writer.is_dry_run() {
            dir::write(&root, &merged, &store, true, &Quiet)?;
        }
        Ok(answer)
    }
}

/// The session's updates with every line's `sessionId` set to `id`.
fn readdressed(
    blobs: &dyn BlobSource,
    s: &Session,
    id: &SessionId,
    sink: &dyn BlobSink,
) -> Result<asp_format::Descriptor, ConvertError> {
    let mut lines = UpdateLines::open(blobs, &s.updates)?;
    let mut out = UpdateWriter::new(sink)?;
    while let Some((_, line)) = lines
        .next_line()
        .map_err(|(_, e)| ConvertError::carried("an update line", e))?
    {
        let mut v: Value = serde_json::from_str(line)
            .map_err(|e| ConvertError::carried("an update line", e.into()))?;
        v["sessionId"] = Value::String(id.as_str().to_owned());
        out.push(&v)?;
    }
    Ok(out.finish()?)
}
