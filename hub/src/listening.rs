//! A client that stops listening is a client that left: what the hub still had to say to it
//! is dropped, and the run ends as [`Ended::ClientLeft`], not as a failed connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_client_protocol::{
    Agent, Channel, Client, ConnectTo, ConnectionDriver, Lines, TransportFrame,
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
        let (rx, tx) = (client.rx, client.tx);
        // Hands each frame on in order; once one finds nobody to take it, drops the rest. At
        // the end (`None`) it lets go of the transport's sending half, which closes it.
        let mut tx = Some(tx);
        let mut unheard = 0usize;
        let mut hand_on = move |frame: Option<TransportFrame>| match frame {
            Some(frame) => {
                let sent = tx
                    .as_ref()
                    .is_some_and(|tx| tx.unbounded_send(frame).is_ok());
                if unheard > 0 || !sent {
                    unheard += 1;
                }
            }
            None => {
                tx = None;
                if unheard > 0 {
                    log.debug(|| {
                        format!("{unheard} message(s) to the client after it stopped listening")
                    });
                }
            }
        };
        let Some(mut inner) = driver else {
            // An in-process client: a task of its own, so the endpoint keeps the transport's
            // own lifetime: it ends when the hub drops its sending half, which closes the
            // client's in turn, after every frame was handed over or found nobody to take it.
            tokio::spawn(async move {
                while let Some(frame) = from_hub.next().await {
                    hand_on(Some(frame));
                }
                hand_on(None);
            });
            return (Channel::new(rx, to_client), None);
        };
        // A transport with a driver (stdio): the forwarding is part of the driver, and asked
        // to finish it first hands on every frame the hub gave it, then asks the transport to
        // finish. Finishing the transport at once would close it with the hub's last frames
        // (answers to prompts the agent left waiting, say) still queued here.
        let (finish_tx, finish_rx) = futures::channel::oneshot::channel::<()>();
        let work = async move {
            let mut finish_rx = finish_rx;
            let mut finishing = false;
            let mut forwarding = true;
            loop {
                tokio::select! {
                    result = &mut inner => return result,
                    frame = from_hub.next(), if forwarding => {
                        let end = frame.is_none();
                        hand_on(frame);
                        if end {
                            forwarding = false;
                            // An opaque transport ends when its sending half closes.
                            let _ = inner.request_finish();
                        }
                    }
                    asked = &mut finish_rx, if !finishing => {
                        finishing = true;
                        // A lost hook is not a request to finish.
                        if asked.is_ok() && forwarding {
                            from_hub.close();
                            while let Some(frame) = from_hub.next().await {
                                hand_on(Some(frame));
                            }
                            hand_on(None);
                            forwarding = false;
                            // An opaque transport ends when its sending half closes.
                            let _ = inner.request_finish();
                        }
                    }
                }
            }
        };
        let driver = ConnectionDriver::with_finish(work, move || {
            let _ = finish_tx.send(());
        });
        (Channel::new(rx, to_client), Some(driver))
    }
}

/// The hub's stdio as its client's transport, as the SDK's `Stdio` has it, except that a
/// closed stdout (`EPIPE`: the client closed its reading end before the hub's stdin ended) is
/// the client having stopped listening, not a failure (see [`MayStopListening`]), and a line
/// that is not UTF-8 is read lossily, not the end of the connection ([`crate::wire`]).
pub(crate) fn stdio() -> impl ConnectTo<Agent> {
    let out = UntilClosed {
        out: blocking::Unblock::new(io::stdout()),
        closed: false,
    };
    let outgoing = futures::sink::unfold(out, |mut out, line: String| async move {
        use futures::AsyncWriteExt as _;
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        out.write_all(&bytes).await?;
        out.flush().await?;
        Ok::<_, io::Error>(out)
    });
    Lines::new(
        Box::pin(outgoing),
        Box::pin(crate::wire::lossy_lines(
            blocking::Unblock::new(io::stdin()),
            "the client",
        )),
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
        if matches!(result, Poll::Ready(Ok(0))) && !buf.is_empty() {
            // `blocking::Unblock` takes no more once its thread's write failed and tells why
            // only from a flush: a broken pipe there is the reader gone.
            let flushed = Pin::new(&mut self.out).poll_flush(cx);
            return match self.unless_closed(flushed, ()) {
                Poll::Ready(Ok(())) if self.closed => Poll::Ready(Ok(buf.len())),
                Poll::Ready(Ok(())) => Poll::Ready(Ok(0)),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
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
