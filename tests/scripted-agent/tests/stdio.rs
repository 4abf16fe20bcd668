//! The scripted agent speaks ACP over its stdio, as a real agent subprocess does. (This test
//! also makes `cargo test` build the agent's binary, which the CLI's end-to-end tests run.)

use agent_client_protocol::AcpAgent;
use asp_scripted_agent::client::drive;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_binary_speaks_acp_over_stdio() {
    let agent = AcpAgent::from_args([
        env!("CARGO_BIN_EXE_asp-scripted-agent"),
        "--steering",
        "session-steering",
    ])
    .unwrap();
    drive(agent, async |c| {
        let init = c.initialize().await;
        assert_eq!(init["_meta"], json!({"steering": {"supported": true}}));
        let sid = c.new_session().await;
        c.release("A");
        assert_eq!(
            c.prompt(&sid, "hold A", None).await?["stopReason"],
            "end_turn"
        );
        let before = c.seen.len();
        c.request(
            "session/load",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await?;
        assert_eq!(
            c.seen.len() - before,
            3,
            "the prompt, `A started`, `A done`, replayed"
        );
        Ok(())
    })
    .await;
}
