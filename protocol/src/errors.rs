//! The JSON-RPC errors ASP defines, with their codes.
//!
//! JSON-RPC reserves -32768..-32000 and ACP -32899..-32800 for themselves, so ASP's own codes
//! sit at -31001..-31099. Where JSON-RPC already has the right answer, ASP uses it:
//! a method not offered is -32601 (Method not found), malformed params are -32602 (Invalid
//! params), an `_asp/*` request before `initialize` was answered is -32600 (Invalid Request).

use serde_json::{Value, json};

use crate::busy::BusyMode;

/// ASP's error codes.
pub mod code {
    /// The prompt asked for a busy mode that is not in `steering.busy`.
    pub const BUSY_MODE_NOT_OFFERED: i32 = -31001;
    /// The method needs no turn running (export, import), and one is.
    pub const TURN_RUNNING: i32 = -31002;
    /// The agent behind did not take a steering prompt.
    pub const STEERING_FAILED: i32 = -31003;
    /// The state could not be read or written.
    pub const STATE_FAILED: i32 = -31004;
    /// JSON-RPC's Method not found, for an `_asp/*` method not offered.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// JSON-RPC's Invalid params: params that do not parse, or a state that is not valid.
    pub const INVALID_PARAMS: i32 = -32602;
    /// JSON-RPC's Invalid Request, for an `_asp/*` request before `initialize` was answered.
    pub const INVALID_REQUEST: i32 = -32600;
}

/// An ASP refusal. Converts into the SDK's error: its message is this error's text, its code
/// [`AspError::code`], its data [`AspError::data`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AspError {
    #[error(
        "this prompt asks for busy mode {asked}, which is not offered here; offered: {}",
        list(offered)
    )]
    BusyModeNotOffered {
        asked: Value,
        offered: Vec<BusyMode>,
    },
    #[error("{method} needs no turn running, and a turn is running in {}", sessions.join(", "))]
    TurnRunning {
        method: String,
        sessions: Vec<String>,
    },
    #[error("{method} is not offered here: {reason}")]
    NotOffered { method: String, reason: String },
    #[error("the agent did not take the steering prompt: {detail}")]
    SteeringFailed { detail: String, outcome: Value },
    #[error("{message}")]
    StateFailed { message: String, data: Value },
    /// The params (or the state in them) are not what the method takes. `path` is a JSON
    /// Pointer (RFC 6901) into the params, `""` for the params as a whole. The params are
    /// never echoed back: an import's params are a whole state.
    #[error("invalid params{}: {error}", at(path))]
    InvalidParams { path: String, error: String },
    #[error("{method} before initialize: {reason}")]
    NotInitialized { method: String, reason: String },
}

fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

fn list(modes: &[BusyMode]) -> String {
    if modes.is_empty() {
        return "none".to_owned();
    }
    modes
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl AspError {
    pub fn code(&self) -> i32 {
        match self {
            AspError::BusyModeNotOffered { .. } => code::BUSY_MODE_NOT_OFFERED,
            AspError::TurnRunning { .. } => code::TURN_RUNNING,
            AspError::NotOffered { .. } => code::METHOD_NOT_FOUND,
            AspError::SteeringFailed { .. } => code::STEERING_FAILED,
            AspError::StateFailed { .. } => code::STATE_FAILED,
            AspError::InvalidParams { .. } => code::INVALID_PARAMS,
            AspError::NotInitialized { .. } => code::INVALID_REQUEST,
        }
    }

    /// The error's `data`: what a program needs to react without parsing the message.
    pub fn data(&self) -> Value {
        match self {
            AspError::BusyModeNotOffered { asked, offered } => {
                json!({"busy": asked, "offered": offered})
            }
            AspError::TurnRunning { method, sessions } => {
                json!({"method": method, "sessions": sessions})
            }
            AspError::NotOffered { method, reason } => json!({"method": method, "reason": reason}),
            AspError::SteeringFailed { outcome, .. } => {
                json!({"busy": "steer", "outcome": outcome})
            }
            AspError::StateFailed { data, .. } => data.clone(),
            AspError::InvalidParams { path, error } => json!({"error": error, "path": path}),
            AspError::NotInitialized { method, reason } => {
                json!({"method": method, "reason": reason})
            }
        }
    }
}

impl From<AspError> for agent_client_protocol::Error {
    fn from(e: AspError) -> Self {
        agent_client_protocol::Error::new(e.code(), e.to_string()).data(e.data())
    }
}

impl asp_format::Classify for AspError {
    /// A request the peer should not have sent (or not now) is a usage error; a state method
    /// that failed, or an agent that did not take a prompt, is the source's.
    fn class(&self) -> asp_format::ErrorClass {
        use asp_format::ErrorClass;
        match self {
            AspError::BusyModeNotOffered { .. }
            | AspError::TurnRunning { .. }
            | AspError::NotOffered { .. }
            | AspError::InvalidParams { .. }
            | AspError::NotInitialized { .. } => ErrorClass::Usage,
            AspError::SteeringFailed { .. } | AspError::StateFailed { .. } => ErrorClass::Source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_mode_names_the_mode_and_the_modes_on_offer() {
        let e: agent_client_protocol::Error = AspError::BusyModeNotOffered {
            asked: json!("steer"),
            offered: vec![BusyMode::Queue, BusyMode::Interrupt],
        }
        .into();
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({
                "code": -31001,
                "message": "this prompt asks for busy mode \"steer\", which is not offered here; offered: queue, interrupt",
                "data": {"busy": "steer", "offered": ["queue", "interrupt"]}
            })
        );
    }

    #[test]
    fn a_method_not_offered_is_method_not_found() {
        let e: agent_client_protocol::Error = AspError::NotOffered {
            method: "_asp/state/import".into(),
            reason: "no harness converter".into(),
        }
        .into();
        assert_eq!(i32::from(e.code), -32601);
        assert_eq!(e.data.unwrap()["method"], "_asp/state/import");
    }

    #[test]
    fn invalid_params_say_what_is_wrong_and_where_not_what_was_sent() {
        let e: agent_client_protocol::Error = AspError::InvalidParams {
            path: "/state/sessions/0/id".into(),
            error: "session id \"\" is not allowed: it is empty".into(),
        }
        .into();
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({
                "code": -32602,
                "message": "invalid params at /state/sessions/0/id: session id \"\" is not allowed: it is empty",
                "data": {"error": "session id \"\" is not allowed: it is empty", "path": "/state/sessions/0/id"}
            })
        );
        let whole: agent_client_protocol::Error = AspError::InvalidParams {
            path: String::new(),
            error: "missing field `kinds`".into(),
        }
        .into();
        assert_eq!(whole.message, "invalid params: missing field `kinds`");
    }
}
