//! The CNI binary's side of the daemon's API: one JSON-RPC 2.0 call as an HTTP/1.1 POST
//! on the daemon's unix socket, blocking and bounded (the binary is short-lived and
//! synchronous; a runtime cannot wait forever for it).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The socket could not be reached (daemon down, wrong path).
    #[error("cannot connect to the kube-ovn daemon at {socket}")]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Sending or reading failed (daemon slow: the timeout passed, or it went away).
    #[error("{method} on {socket}: no answer")]
    Io {
        /// The method.
        method: String,
        /// The socket.
        socket: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The answer is not an HTTP response with a JSON-RPC body.
    #[error("{method} on {socket}: malformed answer: {reason}")]
    Malformed {
        /// The method.
        method: String,
        /// The socket.
        socket: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The daemon answered with an error.
    #[error("{message}")]
    Rpc {
        /// The JSON-RPC error code (see `daemon::api::codes`).
        code: i32,
        /// The daemon's message (the whole cause chain).
        message: String,
    },
}

#[derive(Deserialize)]
struct RpcError {
    code: i32,
    message: String,
}

#[derive(Deserialize)]
struct RpcResponse<R> {
    #[serde(default = "Option::default")]
    result: Option<R>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Calls `method` with one positional parameter (or none) on the daemon at `socket`;
/// connecting, sending and each read are bounded by `timeout`.
pub fn call<P: Serialize, R: DeserializeOwned>(
    socket: &Path,
    method: &str,
    param: Option<&P>,
    timeout: Duration,
) -> Result<R, CallError> {
    let params = match param {
        Some(p) => serde_json::json!([p]),
        None => serde_json::json!([]),
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        .to_string();
    let io = |source| CallError::Io {
        method: method.to_string(),
        socket: socket.to_path_buf(),
        source,
    };
    let mut stream = UnixStream::connect(socket).map_err(|source| CallError::Connect {
        socket: socket.to_path_buf(),
        source,
    })?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: kube-ovn-daemon\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(io)?;
    let malformed = |reason: String| CallError::Malformed {
        method: method.to_string(),
        socket: socket.to_path_buf(),
        reason,
    };
    let body = http_body(&raw).map_err(malformed)?;
    let answer: RpcResponse<R> = serde_json::from_slice(&body)
        .map_err(|e| malformed(format!("not a JSON-RPC response: {e}")))?;
    match (answer.result, answer.error) {
        (_, Some(error)) => Err(CallError::Rpc {
            code: error.code,
            message: error.message,
        }),
        (Some(result), None) => Ok(result),
        (None, None) => serde_json::from_value(serde_json::Value::Null)
            .map_err(|_| malformed("neither result nor error".into())),
    }
}

/// The body of an HTTP/1.1 response (`Content-Length`, chunked, or up to the close).
fn http_body(raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let start = match response.parse(raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("truncated HTTP header".into()),
        Err(e) => return Err(format!("bad HTTP header: {e}")),
    };
    let status = response.code.unwrap_or(0);
    let chunked = response.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            && String::from_utf8_lossy(h.value).contains("chunked")
    });
    let rest = &raw[start..];
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    if status != 200 {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
    }
    Ok(body)
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let (size, after) = match httparse::parse_chunk_size(rest) {
            Ok(httparse::Status::Complete((n, size))) => (size as usize, n),
            _ => return Err("bad chunked body".into()),
        };
        if size == 0 {
            return Ok(out);
        }
        let data = rest
            .get(after..after + size)
            .ok_or_else(|| "truncated chunk".to_string())?;
        out.extend_from_slice(data);
        rest = rest.get(after + size + 2..).unwrap_or_default();
    }
}
