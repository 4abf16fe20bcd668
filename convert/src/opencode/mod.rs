//! OpenCode (`opencode-ai`, ACP through `opencode acp`): the SQLite database
//! `$XDG_DATA_HOME/opencode/opencode.db` (`$OPENCODE_DB`).
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | tables `session`, `message`, `part`, `todo` ... of `opencode.db` | [`survey`], [`read`] → [`replay`]; [`write`](mod@write) |
//!
//! A session's native layer is its rows, as row documents ([`rows`], spec/aspstate.md §8.1),
//! so a restore into OpenCode is row-exact; other harnesses' sessions are composed into rows.
//! The database is read in place with its WAL (the main file alone may hold none of the
//! latest rows) and written one transaction per session. Credentials (`auth.json`,
//! `mcp-auth.json`, the `account`, `control_account`, `credential` and `session_share`
//! tables) are never read. Where things are: [`layout`]; ids: [`ids`]. The facts behind every
//! rule are in `spec/harnesses/opencode.md` (verified against OpenCode 1.18.33).

mod ids;
mod layout;
mod read;
mod replay;
mod rows;
mod survey;
mod write;

use asp_format::answer::ImportAnswer;
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::HarnessName;
use asp_format::state::{Session, State};

use crate::error::ConvertError;
use crate::harness::{
    Capabilities, Harness, ReadContext, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext,
};
use crate::kit::accepted::{Accepts, Runs};
use crate::kit::placement::Tally;
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "opencode";

/// What OpenCode takes as session settings: a model as `provider/model` of whichever provider
/// the user configured, and an agent (`build`, `plan`) as its mode.
pub static ACCEPTS: Accepts = Accepts {
    harness: "OpenCode",
    runs: Runs::ProviderSlashModel,
    model_aliases: &[],
    modes: &["build", "plan"],
};

/// The OpenCode converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenCode;

fn kinds() -> KindSet {
    KindSet::EMPTY.with(StateKind::Sessions)
}

impl Harness for OpenCode {
    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn store_paths(&self, home: &crate::Home) -> Vec<std::path::PathBuf> {
        let l = Layout::of(home);
        vec![l.db, l.data]
    }

    fn accepts(&self) -> &'static Accepts {
        &ACCEPTS
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: kinds(),
            import: kinds(),
        }
    }

    /// OpenCode 1.18.33's `-s, --session <id>` continues a session (`opencode --help`); run in the session's project directory.
    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("opencode --session {id}"),
        ))
    }

    fn survey(&self, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
        survey::survey(&Layout::of(ctx.home), ctx)
    }

    fn read_session(
        &self,
        ctx: &SessionContext<'_>,
        entry: &Surveyed,
    ) -> Result<Vec<Session>, ConvertError> {
        read::read_session(&Layout::of(ctx.home), ctx, entry)
    }

    fn read_kinds(&self, _ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        Ok(State::default())
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut answer = ImportAnswer::default();
        if let Some(list) = &ctx.state.sessions {
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            write::write_all(&layout, ctx, list, &mut tally)?;
            tally.finish();
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests;
