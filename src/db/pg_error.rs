//! A `tokio_postgres::Error` that says what went wrong. deadpool's `Connect` must fail with
//! one, and only tokio-postgres can make them; a host that never answered has none to give.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// tokio-postgres's own "error communicating with the server", caused by `cause`: the result
/// of a startup handshake over a stream that fails with it at once.
pub async fn from_io(cause: io::Error) -> tokio_postgres::Error {
    let mut config = tokio_postgres::Config::new();
    config.user("seqvend");
    match config
        .connect_raw(Failing(Some(cause)), tokio_postgres::NoTls)
        .await
    {
        Err(err) => err,
        Ok(_) => unreachable!("a stream that fails every read and write starts no session"),
    }
}

struct Failing(Option<io::Error>);

impl Failing {
    fn fail<T>(self: Pin<&mut Self>) -> Poll<io::Result<T>> {
        let cause = self.get_mut().0.take();
        Poll::Ready(Err(
            cause.unwrap_or_else(|| io::ErrorKind::BrokenPipe.into())
        ))
    }
}

impl AsyncRead for Failing {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.fail()
    }
}

impl AsyncWrite for Failing {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        self.fail()
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.fail()
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_cause_is_kept() {
        let err = from_io(io::Error::new(
            io::ErrorKind::TimedOut,
            "db1:5432 did not answer",
        ))
        .await;
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert_eq!(cause, "db1:5432 did not answer");
        assert!(err.code().is_none() && !err.is_closed());
    }
}
