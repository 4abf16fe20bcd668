//! The agent behind `asp hub`, as a subprocess: its stdin and stdout are the ACP transport,
//! its stderr is shown as `[agent] ...` lines, and how it ended (its exit status, or the
//! signal that killed it) is kept, for the hub to say wherever it says the agent has exited.
//!
//! The hub runs the process itself rather than through the SDK's `AcpAgent`, which reports
//! only an exit that failed, as words inside an error, and nothing of one that succeeded.
//! It runs it the way `AcpAgent` does: in a process group of its own on Unix (agents are often
//! started through a launcher, `npx` or `uvx`, whose child is the real agent), and at the end
//! of the run with its stdin closed, then, if it has not exited within a second, `SIGTERM` to
//! the group, then `SIGKILL` two seconds later.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::{AcpAgent, Agent, Channel, Client, ConnectTo, ConnectionDriver, Lines};
use futures::{AsyncWriteExt as _, StreamExt as _};
use tokio::sync::{Notify, watch};

use super::HubError;

/// How long an agent gets to exit on its own once its connection is over.
const EXIT_GRACE: Duration = Duration::from_secs(1);
/// How long an agent asked to end (`SIGTERM`) gets before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// How the agent process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    /// Its exit status, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did (Unix).
    pub signal: Option<i32>,
    /// It closed its side of the connection without exiting, and the hub ended it.
    pub ended_by_hub: bool,
}

impl AgentExit {
    fn of(status: ExitStatus, ended_by_hub: bool) -> AgentExit {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        AgentExit {
            code: status.code(),
            signal,
            ended_by_hub,
        }
    }

    /// For programs: `{"code": 3}`, `{"signal": 9}`, with `"endedByHub": true` when the hub
    /// ended it.
    pub fn to_json(&self) -> serde_json::Value {
        let mut exit = serde_json::Map::new();
        if let Some(code) = self.code {
            exit.insert("code".into(), code.into());
        }
        if let Some(signal) = self.signal {
            exit.insert("signal".into(), signal.into());
        }
        if self.ended_by_hub {
            exit.insert("endedByHub".into(), true.into());
        }
        exit.into()
    }
}

impl std::fmt::Display for AgentExit {
    /// `exit status 3`, `killed by signal 9`; when the hub ended it, said first.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ended_by_hub {
            f.write_str("it closed its connection without exiting, and the hub ended it: ")?;
        }
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit status {code}"),
            (None, Some(signal)) => write!(f, "killed by signal {signal}"),
            (None, None) => f.write_str("no exit status"),
        }
    }
}

/// The running agent's end: waits for how it ended, and ends it when asked.
#[derive(Clone)]
pub(crate) struct AgentEnd {
    exit: watch::Receiver<Option<AgentExit>>,
    terminate: Arc<Notify>,
}

impl AgentEnd {
    /// How the agent ended. An agent whose connection is over but that has not exited within
    /// [`EXIT_GRACE`] is ended (`SIGTERM` to its group, `SIGKILL` after [`TERM_GRACE`]).
    pub(crate) async fn exited(&self) -> AgentExit {
        let mut exit = self.exit.clone();
        if let Ok(Ok(done)) = tokio::time::timeout(EXIT_GRACE, exit.wait_for(Option::is_some)).await
            && let Some(done) = done.clone()
        {
            return done;
        }
        self.terminate.notify_one();
        match exit.wait_for(Option::is_some).await {
            Ok(done) => done.clone().unwrap_or(AgentExit {
                code: None,
                signal: None,
                ended_by_hub: true,
            }),
            // The watcher is gone without a word: nothing is known.
            Err(_) => AgentExit {
                code: None,
                signal: None,
                ended_by_hub: true,
            },
        }
    }
}

/// The agent's stdio as an ACP transport. When the connection is over (the hub's run ends),
/// the agent's stdin is closed and the agent is waited for, and ended if it does not exit.
pub(crate) struct AgentTransport {
    lines: Lines<ToAgent, FromAgent>,
    end: AgentEnd,
}

/// The lines the hub writes to the agent's stdin.
type ToAgent = std::pin::Pin<Box<dyn futures::Sink<String, Error = io::Error> + Send>>;
/// The lines the agent writes to its stdout.
type FromAgent = std::pin::Pin<Box<dyn futures::Stream<Item = io::Result<String>> + Send>>;

impl ConnectTo<Client> for AgentTransport {
    async fn connect_to(
        self,
        client: impl ConnectTo<Agent>,
    ) -> Result<(), agent_client_protocol::Error> {
        // Ends when the hub's side of the connection does; the agent's stdin closes with it.
        let connected = ConnectTo::<Client>::connect_to(self.lines, client).await;
        self.end.exited().await;
        connected
    }

    /// The line transport's own driver, which the connection asks to finish when the hub's
    /// run ends (its last messages written, the agent's stdin closed), followed by the wait
    /// for the agent to exit, ending it if it does not: the run ends when the agent has.
    fn into_channel_and_future(self) -> (Channel, Option<ConnectionDriver>) {
        let end = self.end;
        let (channel, driver) = ConnectTo::<Client>::into_channel_and_future(self.lines);
        let driver = driver.map(|driver| {
            driver.map_future(|work| async move {
                let connected = work.await;
                end.exited().await;
                connected
            })
        });
        (channel, driver)
    }
}

/// Starts `command` (leading `NAME=VALUE` words set its environment, as `AcpAgent` reads
/// them). `verbose` logs every line to and from the agent.
pub(crate) fn spawn(
    command: &[String],
    verbose: bool,
) -> Result<(AgentTransport, AgentEnd), HubError> {
    let spawn_failed = |source: agent_client_protocol::Error| HubError::Spawn {
        command: command.join(" "),
        source: Box::new(source),
    };
    let config = AcpAgent::from_args(command.iter())
        .map_err(spawn_failed)?
        .into_config();
    let mut std_command = std::process::Command::new(config.command());
    std_command
        .args(config.arguments())
        .envs(config.environment());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        // A group of its own, so ending it ends what a launcher started too.
        std_command.process_group(0);
    }
    // Its stdio is set here: the conversion from std's command does not carry it.
    let mut child = async_process::Command::from(std_command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| spawn_failed(agent_client_protocol::Error::into_internal_error(e)))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(spawn_failed(
            agent_client_protocol::Error::internal_error().data("the agent's stdio is not piped"),
        ));
    };

    // Its stderr stays visible, marked as the agent's, until it closes.
    let stderr = tokio::spawn(show_stderr(stderr));

    let incoming = crate::wire::lossy_lines(stdout, "the agent").inspect(move |line| {
        if let (true, Ok(line)) = (verbose, line) {
            crate::log::line(format_args!("asp hub: wire Stdout: {line}"));
        }
    });
    let outgoing = futures::sink::unfold(stdin, move |mut stdin, line: String| async move {
        if verbose {
            crate::log::line(format_args!("asp hub: wire Stdin: {line}"));
        }
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok::<_, io::Error>(stdin)
    });

    let (exit_tx, exit) = watch::channel(None);
    let terminate = Arc::new(Notify::new());
    tokio::spawn(watch_exit(child, stderr, exit_tx, terminate.clone()));
    let end = AgentEnd { exit, terminate };
    let transport = AgentTransport {
        lines: Lines::new(Box::pin(outgoing), Box::pin(incoming)),
        end: end.clone(),
    };
    Ok((transport, end))
}

/// Waits for the agent to exit and says how; when asked to end it, asks it to stop, then kills
/// it. Once the agent has exited, whatever is left of its group is killed, so a launcher's
/// child cannot keep the connection open after the agent proper is gone.
async fn watch_exit(
    mut child: async_process::Child,
    stderr: tokio::task::JoinHandle<()>,
    exit: watch::Sender<Option<AgentExit>>,
    terminate: Arc<Notify>,
) {
    let pid = child.id();
    // Dropped unfinished (the runtime shut down under it): `kill_on_drop` kills the agent,
    // this what it started.
    let group = GroupGuard(pid);
    let (status, ended_by_hub) = tokio::select! {
        status = child.status() => (status, false),
        () = terminate.notified() => {
            signal_group(pid, Signal::Term);
            #[cfg(not(unix))]
            let _ = child.kill();
            match tokio::time::timeout(TERM_GRACE, child.status()).await {
                Ok(status) => (status, true),
                Err(_) => {
                    signal_group(pid, Signal::Kill);
                    let _ = child.kill();
                    (child.status().await, true)
                }
            }
        }
    };
    drop(group);
    // Its last words (often why it failed) are shown before its exit is said, unless
    // something it started keeps its stderr open.
    let _ = tokio::time::timeout(STDERR_GRACE, stderr).await;
    let exited = match status {
        Ok(status) => AgentExit::of(status, ended_by_hub),
        Err(e) => {
            crate::log::line(format_args!(
                "asp hub: cannot tell how the agent ended: {e}"
            ));
            AgentExit {
                code: None,
                signal: None,
                ended_by_hub,
            }
        }
    };
    exit.send_replace(Some(exited));
}

/// How long the agent's stderr is read on after it exited, for its last lines.
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// The longest line of the agent's stderr shown as one: a longer one is shown in pieces, so
/// an agent that writes without newlines is not held in memory.
const STDERR_LINE: usize = 16 * 1024;

/// Shows the agent's stderr as `[agent] …` lines until it closes: bytes that are not UTF-8 as
/// U+FFFD (stopping at them left the pipe closed, and the agent's next write to it failed).
async fn show_stderr(stderr: async_process::ChildStderr) {
    use futures::AsyncReadExt as _;
    let mut stderr = stderr;
    let mut chunk = vec![0u8; 8 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let show = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line);
        crate::log::line(format_args!(
            "[agent] {}",
            text.trim_end_matches(['\n', '\r'])
        ));
        line.clear();
    };
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &chunk[..n] {
            line.push(b);
            if b == b'\n' || line.len() >= STDERR_LINE {
                show(&mut line);
            }
        }
    }
    if !line.is_empty() {
        show(&mut line);
    }
}

/// Kills the agent's process group when dropped.
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, Signal::Kill);
    }
}

enum Signal {
    Term,
    Kill,
}

/// Sends `signal` to the agent's process group (an error, such as none left, is nothing to
/// act on). Elsewhere than Unix there are no groups: the hub kills the process itself.
#[cfg(unix)]
fn signal_group(pid: u32, signal: Signal) {
    use rustix::process::{Pid, Signal as S, kill_process_group};
    let signal = match signal {
        Signal::Term => S::TERM,
        Signal::Kill => S::KILL,
    };
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, signal);
    }
}

#[cfg(not(unix))]
fn signal_group(_pid: u32, _signal: Signal) {}
