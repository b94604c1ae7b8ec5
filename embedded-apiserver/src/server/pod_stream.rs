//! `pods/exec` (the websocket channel protocol kubectl speaks) and
//! `pods/log` (a chunked text stream), both served by the registered
//! [`PodRuntime`](crate::pod_runtime::PodRuntime).
//!
//! Channel protocol (`k8s.io/apimachinery/pkg/util/httpstream/wsstream`):
//! every binary message starts with a channel byte: 0 stdin, 1 stdout,
//! 2 stderr, 3 error (one `Status` JSON document: the exit code), 4 resize.
//! `v5.channel.k8s.io` adds channel 255: `[255, 0]` from the client closes
//! its stdin. The server ends the session by closing the websocket after
//! the status, which is how the client learns every stream is done.

use super::response::{error_response, Body};
use super::route::{percent_decode, ResourcePath};
use super::Shared;
use crate::error::{ApiError, Reason};
use crate::pod_runtime::{ExecIo, ExecRequest, LogRequest, PodRuntime, PodRuntimeError};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{header, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const CLOSE: u8 = 255;

/// The channel protocols served, most preferred first.
const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// Whether the path is a pod subresource this module serves.
pub fn serves(path: &ResourcePath) -> bool {
    path.group.is_empty()
        && path.plural == "pods"
        && path.namespace.is_some()
        && path.name.is_some()
        && matches!(path.sub.as_deref(), Some("exec" | "log"))
}

/// Serves `pods/exec` or `pods/log` (`serves(path)` holds).
pub async fn handle(shared: &Shared, path: &ResourcePath, req: Request<()>) -> Response<Body> {
    let result = match path.sub.as_deref() {
        Some("exec") => exec(shared, path, req),
        _ => logs(shared, path, &req).await,
    };
    result.unwrap_or_else(|err| error_response(&err))
}

/// The stored pod and the registered runtime, or the error the client gets.
fn pod_and_runtime(
    shared: &Shared,
    path: &ResourcePath,
) -> Result<(Value, Arc<dyn PodRuntime>), ApiError> {
    let ns = path.namespace.as_deref().unwrap_or_default();
    let name = path.name.as_deref().unwrap_or_default();
    let pod = {
        let state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
        let rt = state
            .registry()
            .find("", "v1", "pods")
            .cloned()
            .ok_or_else(|| ApiError::new(Reason::NotFound, "the server has no pods resource"))?;
        state.get(&rt, Some(ns), name)?
    };
    let runtime = shared
        .pod_runtime
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .ok_or_else(|| {
            ApiError::new(
                Reason::BadRequest,
                format!("pod {ns}/{name}: no pod runtime is registered with this server"),
            )
        })?;
    Ok((pod, runtime))
}

/// Every value of a repeated query parameter (`command=a&command=b`).
fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .filter(|(k, _)| percent_decode(k, true) == key)
        .map(|(_, v)| percent_decode(v, true))
        .collect()
}

fn query_flag(query: Option<&str>, key: &str) -> bool {
    matches!(
        query_values(query, key).last().map(String::as_str),
        Some("true" | "1")
    )
}

fn exec_request(path: &ResourcePath, query: Option<&str>) -> Result<ExecRequest, ApiError> {
    let req = ExecRequest {
        namespace: path.namespace.clone().unwrap_or_default(),
        pod: path.name.clone().unwrap_or_default(),
        container: query_values(query, "container")
            .pop()
            .filter(|c| !c.is_empty()),
        command: query_values(query, "command"),
        stdin: query_flag(query, "stdin"),
        stdout: query_flag(query, "stdout"),
        stderr: query_flag(query, "stderr"),
        tty: query_flag(query, "tty"),
    };
    if req.command.is_empty() {
        return Err(ApiError::new(
            Reason::BadRequest,
            format!(
                "exec in pod {}/{}: no command given",
                req.namespace, req.pod
            ),
        ));
    }
    if !(req.stdin || req.stdout || req.stderr) {
        return Err(ApiError::new(
            Reason::BadRequest,
            "you must specify at least 1 of stdin, stdout, stderr",
        ));
    }
    Ok(req)
}

/// The protocol to answer with: the first of ours the client offers.
fn choose_protocol(req: &Request<()>) -> Option<&'static str> {
    let offered: Vec<String> = req
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|p| p.trim().to_string()))
        .collect();
    PROTOCOLS
        .into_iter()
        .find(|ours| offered.iter().any(|o| o == ours))
}

fn exec(
    shared: &Shared,
    path: &ResourcePath,
    mut req: Request<()>,
) -> Result<Response<Body>, ApiError> {
    let exec_req = exec_request(path, req.uri().query())?;
    let (pod, runtime) = pod_and_runtime(shared, path)?;
    let key = req
        .headers()
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| derive_accept_key(k.as_bytes()))
        .ok_or_else(|| {
            ApiError::new(
                Reason::BadRequest,
                format!(
                    "exec in pod {}/{}: only the websocket protocol is served (no SPDY upgrade)",
                    exec_req.namespace, exec_req.pod
                ),
            )
        })?;
    let protocol = choose_protocol(&req).ok_or_else(|| {
        ApiError::new(
            Reason::BadRequest,
            format!("exec: none of the offered subprotocols is served (want one of {PROTOCOLS:?})"),
        )
    })?;
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                let ws =
                    WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None)
                        .await;
                run_exec(ws, pod, runtime, exec_req).await;
            }
            Err(e) => tracing::debug!(error = %e, "exec upgrade failed"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_ACCEPT, key)
        .header(header::SEC_WEBSOCKET_PROTOCOL, protocol)
        .body(Full::new(Bytes::new()).boxed())
        .map_err(|e| ApiError::new(Reason::BadRequest, format!("exec: {e}")))
}

fn framed(channel: u8, data: &[u8]) -> Message {
    let mut bytes = Vec::with_capacity(data.len() + 1);
    bytes.push(channel);
    bytes.extend_from_slice(data);
    Message::Binary(bytes.into())
}

/// The `Status` kubelet writes on the error channel for an exit code.
fn exit_status(code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: exit status {code}"),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
    })
}

fn start_failure(err: &PodRuntimeError) -> Value {
    json!({
        "metadata": {},
        "status": "Failure",
        "message": err.to_string(),
        "reason": "InternalError",
        "code": 500,
    })
}

type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

async fn run_exec(ws: Ws, pod: Value, runtime: Arc<dyn PodRuntime>, req: ExecRequest) {
    let (mut sink, mut incoming) = ws.split();
    let (stdout_tx, mut stdout) = mpsc::channel::<Bytes>(16);
    let (stderr_tx, mut stderr) = mpsc::channel::<Bytes>(16);
    let (mut stdin_tx, stdin_rx) = if req.stdin {
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let io = ExecIo {
        stdin: stdin_rx,
        stdout: stdout_tx,
        stderr: stderr_tx,
    };
    let command = tokio::spawn(async move { runtime.exec(&pod, req, io).await });
    let (mut out_open, mut err_open, mut client_open) = (true, true, true);
    while out_open || err_open {
        let sent = tokio::select! {
            data = stdout.recv(), if out_open => match data {
                Some(d) => sink.send(framed(STDOUT, &d)).await,
                None => { out_open = false; Ok(()) }
            },
            data = stderr.recv(), if err_open => match data {
                Some(d) => sink.send(framed(STDERR, &d)).await,
                None => { err_open = false; Ok(()) }
            },
            msg = incoming.next(), if client_open => {
                client_open = from_client(msg, &mut stdin_tx).await;
                Ok(())
            }
        };
        if sent.is_err() || !client_open {
            // The client went away (kubectl interrupted): nobody reads the
            // output or the exit code, so the command is stopped (the
            // runtime's process is killed when its future is dropped).
            command.abort();
            return;
        }
    }
    drop(stdin_tx);
    let status = match command.await {
        Ok(Ok(code)) => exit_status(code),
        Ok(Err(e)) => start_failure(&e),
        Err(e) => json!({"metadata": {}, "status": "Failure", "message": e.to_string()}),
    };
    let doc = serde_json::to_vec(&status).unwrap_or_default();
    let _ = sink.send(framed(ERROR, &doc)).await;
    // A normal closure is the client's end of every stream (a close frame
    // without a code reads as an error there).
    let normal = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    let _ = sink.send(Message::Close(Some(normal))).await;
    let _ = sink.close().await;
}

/// Handles one client message; false once the client closed its side.
async fn from_client(
    msg: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    stdin: &mut Option<mpsc::Sender<Bytes>>,
) -> bool {
    let data = match msg {
        Some(Ok(Message::Binary(d))) => d,
        Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
            stdin.take();
            return false;
        }
        Some(Ok(_)) => return true,
    };
    match data.first() {
        Some(&STDIN) => {
            if let Some(tx) = stdin {
                if tx.send(data.slice(1..)).await.is_err() {
                    stdin.take(); // the command stopped reading
                }
            }
        }
        Some(&CLOSE) if data.get(1) == Some(&STDIN) => {
            stdin.take();
        }
        _ => {} // resize and unknown channels: nothing to do without a terminal
    }
    true
}

async fn logs(
    shared: &Shared,
    path: &ResourcePath,
    req: &Request<()>,
) -> Result<Response<Body>, ApiError> {
    let query = req.uri().query();
    let tail = query_values(query, "tailLines").pop();
    let tail_lines = match tail {
        None => None,
        Some(t) => Some(t.parse::<usize>().map_err(|_| {
            ApiError::new(
                Reason::BadRequest,
                format!("tailLines: {t:?} is not a non-negative integer"),
            )
        })?),
    };
    let log_req = LogRequest {
        namespace: path.namespace.clone().unwrap_or_default(),
        pod: path.name.clone().unwrap_or_default(),
        container: query_values(query, "container")
            .pop()
            .filter(|c| !c.is_empty()),
        follow: query_flag(query, "follow"),
        tail_lines,
    };
    let (pod, runtime) = pod_and_runtime(shared, path)?;
    let stream = runtime
        .logs(&pod, log_req)
        .await
        .map_err(|e| ApiError::new(Reason::BadRequest, e.to_string()))?;
    // The response body must be Sync, a runtime's stream need not be:
    // a task forwards it (and ends when the client goes away).
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut stream = stream;
        while let Some(chunk) = stream.next().await {
            if tx.send(chunk).await.is_err() {
                break;
            }
        }
    });
    let chunks = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let body = StreamBody::new(chunks.map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b))));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(BodyExt::boxed(body))
        .map_err(|e| ApiError::new(Reason::BadRequest, format!("logs: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_command_parameters_keep_their_order() {
        let q = Some("command=sh&command=-c&command=echo+a%20b&stdout=true&tty=false");
        assert_eq!(query_values(q, "command"), ["sh", "-c", "echo a b"]);
        assert!(query_flag(q, "stdout"));
        assert!(!query_flag(q, "tty"));
        assert!(!query_flag(q, "stdin"));
    }

    #[test]
    fn exit_codes_travel_as_kubelet_statuses() {
        assert_eq!(exit_status(0)["status"], "Success");
        let failed = exit_status(3);
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"][0]["message"], "3");
    }
}
