//! HTTP response bodies: whole JSON documents, `Status` errors, and the
//! chunked watch stream (one JSON `{"type", "object"}` document per line).

use crate::error::ApiError;
use crate::registry::ResourceType;
use crate::store::watch::{WatchMsg, WatchStream};
use crate::table::IncludeObject;
use bytes::Bytes;
use futures::StreamExt;
use http::{header, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::time::Duration;

/// The body type of every response.
pub type Body = BoxBody<Bytes, Infallible>;

/// A JSON document with the given status code.
pub fn json_response(code: u16, value: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(bytes)).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

/// A protobuf body (`k8s\0` envelope already applied).
pub fn protobuf_response(code: u16, body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, crate::protobuf::MEDIA_TYPE)
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

/// A Kubernetes `Status` error.
pub fn error_response(err: &ApiError) -> Response<Body> {
    tracing::debug!(reason = err.reason.as_str(), message = %err.message, "request failed");
    json_response(err.code(), &err.to_status())
}

/// A plain-text answer (health checks).
pub fn text_response(code: u16, text: &'static str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::OK))
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

/// Encodes one watch message as a line of the watch stream; with `table`,
/// objects travel as one-row Tables (column definitions in the first only,
/// as kube-apiserver sends them).
pub fn watch_line(
    rt: &ResourceType,
    msg: &WatchMsg,
    table: Option<IncludeObject>,
    first: bool,
) -> Bytes {
    let doc = match msg {
        WatchMsg::Event(kind, object) => {
            let mut object = object.as_ref().clone();
            object["apiVersion"] = json!(rt.api_version());
            if let Some(include) = table {
                let metadata = json!({"resourceVersion": object["metadata"]["resourceVersion"]});
                object = crate::table::table(rt, &[object], metadata, include, first);
            }
            json!({"type": kind.as_str(), "object": object})
        }
        WatchMsg::Bookmark {
            rv,
            initial_events_end,
        } => {
            let mut metadata = json!({"resourceVersion": rv.to_string()});
            if *initial_events_end {
                metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            json!({"type": "BOOKMARK", "object": {
                "kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata}})
        }
        WatchMsg::Error(err) => json!({"type": "ERROR", "object": err.to_status()}),
    };
    let mut bytes = serde_json::to_vec(&doc).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// A watch that ends with one `ERROR` event (HTTP 200, as kube-apiserver
/// answers a watch it accepted but cannot serve).
pub fn watch_error_response(err: ApiError) -> Response<Body> {
    let doc = json!({"type": "ERROR", "object": err.to_status()});
    let mut bytes = serde_json::to_vec(&doc).unwrap_or_default();
    bytes.push(b'\n');
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(bytes)).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

/// The streaming response of a watch: runs until the store drops the
/// watcher, the client goes away, or `timeout` passes.
pub fn watch_response(
    rt: ResourceType,
    events: WatchStream,
    timeout: Duration,
    table: Option<IncludeObject>,
) -> Response<Body> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut first = true;
    let stream = futures::stream::unfold((events, false), move |(mut events, done)| async move {
        if done {
            return None;
        }
        let msg = tokio::time::timeout_at(deadline, events.next())
            .await
            .ok()??;
        let last = matches!(msg, WatchMsg::Error(_));
        Some((msg, (events, last)))
    })
    .map(move |msg| {
        let line = watch_line(&rt, &msg, table, first);
        first &= !matches!(msg, WatchMsg::Event(..));
        Ok::<_, Infallible>(Frame::data(line))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}
