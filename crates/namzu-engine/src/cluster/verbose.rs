//! `-v`: one line per request on stderr (method, path, status, time), as a tower layer.

use http::{Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use tower::{Layer, Service};

#[derive(Clone, Copy)]
pub(super) struct LogLayer;

impl<S> Layer<S> for LogLayer {
    type Service = Log<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Log { inner }
    }
}

#[derive(Clone)]
pub(super) struct Log<S> {
    inner: S,
}

impl<S, B, R> Service<Request<B>> for Log<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let line = format!("{} {}", req.method(), req.uri());
        let start = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let out = fut.await;
            let ms = start.elapsed().as_millis();
            match &out {
                Ok(resp) => crate::errln!("I {line} {} in {ms}ms", resp.status().as_u16()),
                Err(e) => crate::errln!("I {line} failed in {ms}ms: {e}"),
            }
            out
        })
    }
}
