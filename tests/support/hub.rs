//! The scripted agent's test client ([`asp_scripted_agent::client`]) driving a hub in this
//! process.

use std::time::Duration;

use agent_client_protocol::{Client, ConnectTo, Error};
use asp_hub::{Hub, HubOptions};
pub use asp_scripted_agent::client::*;

/// Runs `test` as a client of a hub in front of `agent`, all in this process.
pub async fn with_hub<A: ConnectTo<Client> + 'static>(
    options: HubOptions,
    agent: A,
    test: impl AsyncFnOnce(TestClient) -> Result<(), Error>,
) {
    drive(Hub::new(options, agent), test).await;
}

/// The hub's options for tests: a short replay quiet time (the scripted agent replays at once
/// unless told to be late, and then the test says how long to wait).
pub fn options() -> HubOptions {
    HubOptions {
        replay_quiet: Duration::from_millis(50),
        ..HubOptions::default()
    }
}
