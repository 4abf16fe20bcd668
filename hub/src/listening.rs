//! A client that stops listening is a client that left: what the hub still had to say to it
//! is dropped, and the run ends as [`Ended::ClientLeft`], not as a failed connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_client_protocol::{
    Agent, ByteStreams, Channel, Client, ConnectTo, ConnectionDriver, TransportFrame,
};
use futures::{AsyncWrite, StreamExt as _};

use super::log::Log;
#[cfg(doc)]
use super::shared::Ended;

/// The client's transport, with the hub's output to a client that has stopped listening
/// dropped instead of failing the run.
///
/// A client leaves by closing both directions at about the same moment (an editor that quits
/// closes the hub's stdin and stdout; an in-process client drops its channel). The hub sees
/// that its input ended only after the messages before the end are dispatched, and what they
/// cause (an answer the hub gives at once, a `$/cancel_request` the client's dropped requests
/// sent, an update the agent was already sending) can reach the transport after the client
/// stopped reading. The SDK fails the whole connection on the first frame it cannot hand over,
/// so without this the hub ended with "send failed because receiver is gone" instead of
/// [`Ended::ClientLeft`], depending on which came first.
pub(crate) struct MayStopListening<C> {
    pub client: C,
    pub log: Log,
}

impl<C: ConnectTo<Agent>> ConnectTo<Agent> for MayStopListening<C> {
    async fn connect_to(
        self,
        hub: impl ConnectTo<Client>,
    ) -> Result<(), agent_client_protocol::Error> {
        let (channel, driver) = self.into_channel_and_future();
        match driver {
            None => ConnectTo::<Agent>::connect_to(channel, hub).await,
            Some(driver) => {
                let (linked, driven) =
                    futures::future::join(ConnectTo::<Agent>::connect_to(channel, hub), driver)
                        .await;
                linked.and(driven)
            }
        }
    }

    fn into_channel_and_future(self) -> (Channel, Option<ConnectionDriver>) {
        let (client, driver) = self.client.into_channel_and_future();
        let (to_client, mut from_hub) = futures::channel::mpsc::unbounded::<TransportFrame>();
        let log = self.log;
        // A task of its own, so the endpoint keeps the transport's own lifetime: it ends when
        // the hub drops its sending half, which closes the client's in turn, in order, after
        // every frame was handed over or found nobody to take it.
        tokio::spawn(async move {
            let mut unheard = 0usize;
            while let Some(frame) = from_hub.next().await {
                if unheard > 0 || client.tx.unbounded_send(frame).is_err() {
                    unheard += 1;
                }
            }
            if unheard > 0 {
                log.debug(|| {
                    format!("{unheard} message(s) to the client after it stopped listening")
                });
            }
        });
        (Channel::new(client.rx, to_client), driver)
    }
}

/// The hub's stdio as its client's transport, as the SDK's `Stdio` has it, except that a
/// closed stdout (`EPIPE`: the client closed its reading end before the hub's stdin ended) is
/// the client having stopped listening, not a failure: see [`MayStopListening`].
pub(crate) fn stdio() -> impl ConnectTo<Agent> {
    ByteStreams::new(
        UntilClosed {
            out: blocking::Unblock::new(io::stdout()),
            closed: false,
        },
        blocking::Unblock::new(io::stdin()),
    )
}

/// A writer that takes everything once its reader has gone (`BrokenPipe`), and drops it.
struct UntilClosed<W> {
    out: W,
    closed: bool,
}

impl<W: AsyncWrite + Unpin> UntilClosed<W> {
    /// `result` as it is, or as done when it says the reader has gone.
    fn unless_closed<T>(&mut self, result: Poll<io::Result<T>>, done: T) -> Poll<io::Result<T>> {
        match result {
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Poll::Ready(Ok(done))
            }
            other => other,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for UntilClosed<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.closed {
            return Poll::Ready(Ok(buf.len()));
        }
        let result = Pin::new(&mut self.out).poll_write(cx, buf);
        self.unless_closed(result, buf.len())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.closed {
            return Poll::Ready(Ok(()));
        }
        let result = Pin::new(&mut self.out).poll_flush(cx);
        self.unless_closed(result, ())
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.closed {
            return Poll::Ready(Ok(()));
        }
        let result = Pin::new(&mut self.out).poll_close(cx);
        self.unless_closed(result, ())
    }
}
