//! The Agent State Protocol on the Agent Client Protocol's Rust SDK.
//!
//! ASP extends ACP with two independent layers, both written as ACP's own extensions:
//!
//! - **steering** ([`busy`]): what a prompt arriving while a turn of its session runs does,
//!   as the prompt's `_meta.asp.busy` says (`steer`, `queue`, `interrupt`);
//! - **agent state** ([`methods`]): `_asp/state/describe`, `_asp/state/export` and
//!   `_asp/state/import`, carrying the portable state of [`asp_format`] between harnesses.
//!
//! An agent advertises what it speaks under `agentCapabilities._meta.asp` of its initialize
//! answer ([`capabilities`]); refusals have their own codes ([`errors`]).
//!
//! These are the typed forms only, for any agent or client that speaks ASP: no converter and no
//! harness is behind them. `asp hub` (crate `asp-hub`) is built on them.

pub mod busy;
pub mod capabilities;
pub mod errors;
pub mod meta;
pub mod methods;

#[cfg(test)]
mod seed_json;

pub use asp_format::{KindSet, StateKind};
pub use busy::BusyMode;
pub use capabilities::{AgentStateCapability, AspCapabilities, SteeringCapability};
pub use errors::AspError;
pub use methods::{
    DescribeRequest, DescribeResponse, ExportRequest, ExportResponse, ImportRequest, ImportResponse,
};
