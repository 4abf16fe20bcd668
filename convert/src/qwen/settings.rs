//! Settings: what Qwen Code would take as session settings.
//!
//! Qwen Code keeps its model in `settings.json` `model.name` and its mode in
//! `tools.approvalMode` (`spec/harnesses/qwen.md` §settings). This converter does not carry
//! settings yet (the capabilities leave the kind out), but the table of what Qwen Code accepts
//! is declared like every harness's, so the one rule ([`crate::kit::accepted`]) already holds
//! for it: Qwen models only, and the approval modes of 0.24.

use crate::kit::accepted::{Accepts, Provider, Runs};

/// What Qwen Code 0.24 accepts: Qwen models, and its approval modes.
pub const ACCEPTS: Accepts = Accepts {
    harness: "Qwen Code",
    runs: Runs::One(Provider::Alibaba),
    model_aliases: &[],
    modes: &["plan", "default", "auto-edit", "auto", "yolo"],
};
