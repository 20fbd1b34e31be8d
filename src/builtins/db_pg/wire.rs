//! The stream under the PostgreSQL client: every byte the server sends passes the
//! message-size guard (`Guarded`), which counts it and refuses a message longer than
//! `PG_MAX_MESSAGE` as its header arrives; and TLS (`PgTls`), rustls over that guard.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{Io, PG_MAX_MESSAGE};

/// A stream whose incoming bytes are PostgreSQL protocol messages: counts them, and
/// refuses a message longer than `PG_MAX_MESSAGE` as soon as its header arrives.
pub(super) struct Guarded<S> {
    inner: S,
    io: Arc<Io>,
    hdr: [u8; 5],
    hdr_len: usize,
    body_left: u64,
}

impl<S> Guarded<S> {
    pub(super) fn new(inner: S, io: Arc<Io>) -> Self {
        Guarded { inner, io, hdr: [0; 5], hdr_len: 0, body_left: 0 }
    }

    fn scan(&mut self, mut b: &[u8]) -> std::io::Result<()> {
        while !b.is_empty() {
            if self.body_left > 0 {
                let n = (self.body_left.min(b.len() as u64)) as usize;
                self.body_left -= n as u64;
                b = &b[n..];
                continue;
            }
            self.hdr[self.hdr_len] = b[0];
            self.hdr_len += 1;
            b = &b[1..];
            if self.hdr_len == 5 {
                self.hdr_len = 0;
                let len = u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]]) as u64;
                if len < 4 {
                    return Err(std::io::Error::other("a malformed message from the server"));
                }
                if len - 4 > PG_MAX_MESSAGE {
                    self.io.too_big.store(len - 4, Relaxed);
                    return Err(std::io::Error::other(format!(
                        "a message of {} bytes from the server (more than {PG_MAX_MESSAGE})",
                        len - 4
                    )));
                }
                self.body_left = len - 4;
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let got = &buf.filled()[before..];
                this.io.received.fetch_add(got.len() as u64, Relaxed);
                let got = got.to_vec();
                Poll::Ready(this.scan(&got))
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for Guarded<S> {
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        tokio_postgres::tls::ChannelBinding::none()
    }
}

/// TLS for one connection: rustls with the run's trust (`--tls-ca-file` or the built-in
/// roots), the peer's chain and name always verified.
pub(super) struct PgTls {
    pub(super) cfg: Arc<rustls::ClientConfig>,
    pub(super) name: rustls::pki_types::ServerName<'static>,
    pub(super) io: Arc<Io>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> tokio_postgres::tls::TlsConnect<S> for PgTls {
    type Stream = Guarded<tokio_rustls::client::TlsStream<S>>;
    type Error = std::io::Error;
    type Future = BoxFuture<std::io::Result<Self::Stream>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let s = tokio_rustls::TlsConnector::from(self.cfg).connect(self.name, stream).await?;
            Ok(Guarded::new(s, self.io))
        })
    }
}
