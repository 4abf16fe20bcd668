//! Arguments shared by several commands.

use asp_format::KindSet;
use clap::Args;

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Print the result as one JSON object on stdout
    #[arg(long, global = true)]
    pub json: bool,

    /// No progress bar
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// Parses `--kinds sessions,skills`.
pub fn parse_kinds(s: &str) -> Result<KindSet, String> {
    let set = KindSet::parse_list(s).map_err(|e| e.to_string())?;
    if set.is_empty() {
        return Err("name at least one kind".to_owned());
    }
    Ok(set)
}

/// Parses a harness name against the converters this build has.
pub fn parse_harness(s: &str) -> Result<String, String> {
    let known: Vec<String> = asp_convert::harnesses()
        .iter()
        .map(|h| h.name().to_string())
        .collect();
    if known.iter().any(|k| k == s) {
        Ok(s.to_owned())
    } else if known.is_empty() {
        Err(format!(
            "unknown harness {s:?}: this build has no harness converters"
        ))
    } else {
        Err(format!(
            "unknown harness {s:?} (this build knows: {})",
            known.join(", ")
        ))
    }
}

/// The list of harness names for help texts.
pub fn harness_list() -> String {
    let names: Vec<String> = asp_convert::harnesses()
        .iter()
        .map(|h| h.name().to_string())
        .collect();
    if names.is_empty() {
        "none in this build".to_owned()
    } else {
        names.join(", ")
    }
}
