//! Errors.
//!
//! Two families, split by who sees them:
//!
//! * [`ApiError`] is what a *client* of the server gets: it becomes a
//!   Kubernetes `Status` object (`kind: Status`, `status: Failure`, with a
//!   `reason` and an HTTP `code`), exactly the shape kube-rs decodes into
//!   `kube::core::ErrorResponse` and kubectl prints as `Error from server (...)`.
//! * [`StartError`] is what the *embedder* gets when the server cannot start
//!   (bind failure, unreadable state file, ...).

use serde_json::{json, Value};
use std::path::PathBuf;

/// The `reason` field of a Kubernetes `Status` (a subset of
/// `metav1.StatusReason`, the ones this server produces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// 404: the object or the resource type does not exist.
    NotFound,
    /// 409: create of a name that is taken.
    AlreadyExists,
    /// 409: stale resourceVersion, or a server-side apply field conflict.
    Conflict,
    /// 422: the object fails validation (names, immutable fields, patches).
    Invalid,
    /// 400: the request itself is malformed.
    BadRequest,
    /// 410: the requested resourceVersion was compacted away.
    Expired,
    /// 405: the verb is not served on this path.
    MethodNotAllowed,
    /// 415: unknown patch content type.
    UnsupportedMediaType,
    /// 406: the client accepts no media type this server can produce.
    NotAcceptable,
    /// 504: the request could not be served in time (a watch from a
    /// resourceVersion the store has not reached).
    Timeout,
}

impl Reason {
    /// The wire spelling of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::BadRequest => "BadRequest",
            Reason::Expired => "Expired",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::Timeout => "Timeout",
        }
    }

    /// The HTTP status code the reason travels with.
    pub fn code(self) -> u16 {
        match self {
            Reason::NotFound => 404,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::Invalid => 422,
            Reason::BadRequest => 400,
            Reason::Expired => 410,
            Reason::MethodNotAllowed => 405,
            Reason::UnsupportedMediaType => 415,
            Reason::NotAcceptable => 406,
            Reason::Timeout => 504,
        }
    }
}

/// An error answered to an API client as a Kubernetes `Status` object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason:?}: {message}")]
pub struct ApiError {
    /// Machine-readable reason.
    pub reason: Reason,
    /// Human-readable message, worded like kube-apiserver's.
    pub message: String,
    /// `details` (name, group, kind, causes), if any.
    pub details: Option<Value>,
}

impl ApiError {
    /// A bare error with a reason and message.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// `<resource> "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        ApiError::new(Reason::NotFound, format!("{gr} \"{name}\" not found"))
            .with_details(group, resource, name)
    }

    /// `<resource> "<name>" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        ApiError::new(
            Reason::AlreadyExists,
            format!("{gr} \"{name}\" already exists"),
        )
        .with_details(group, resource, name)
    }

    /// The optimistic-concurrency conflict message kube-apiserver uses.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        ApiError::new(
            Reason::Conflict,
            format!(
                "Operation cannot be fulfilled on {gr} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
        )
        .with_details(group, resource, name)
    }

    /// 422 with one field cause, like `metav1.StatusCause`.
    pub fn invalid(kind: &str, name: &str, field: &str, message: impl Into<String>) -> Self {
        Self::field_cause(kind, name, field, "FieldValueInvalid", message.into())
    }

    /// 422 with a `FieldValueForbidden` cause (`field.Forbidden`).
    pub fn forbidden_field(
        kind: &str,
        name: &str,
        field: &str,
        message: impl Into<String>,
    ) -> Self {
        let message = format!("Forbidden: {}", message.into());
        Self::field_cause(kind, name, field, "FieldValueForbidden", message)
    }

    fn field_cause(kind: &str, name: &str, field: &str, cause: &str, message: String) -> Self {
        ApiError {
            reason: Reason::Invalid,
            message: format!("{kind} \"{name}\" is invalid: {field}: {message}"),
            details: Some(json!({
                "name": name,
                "kind": kind,
                "causes": [{"reason": cause, "message": message, "field": field}],
            })),
        }
    }

    /// kube-apiserver's `NewTooLargeResourceVersionError`: 504 Timeout with a
    /// `ResourceVersionTooLarge` cause, which client-go's reflector answers
    /// by listing again after `retryAfterSeconds`.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        ApiError {
            reason: Reason::Timeout,
            message: format!(
                "Timeout: Too large resource version: {requested}, current: {current}"
            ),
            details: Some(json!({
                "causes": [{"reason": "ResourceVersionTooLarge",
                            "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            })),
        }
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(Reason::BadRequest, message)
    }

    fn with_details(mut self, group: &str, resource: &str, name: &str) -> Self {
        let mut details = json!({"name": name, "kind": resource});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        self.details = Some(details);
        self
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.reason.code()
    }

    /// The `Status` object sent on the wire.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code(),
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The listen address could not be bound.
    #[error("failed to bind the API server to {addr}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The state file exists but could not be read or parsed.
    #[error("failed to load API server state from {path}")]
    LoadState {
        /// The state file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// Why a kubeconfig could not be written or a client built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Writing the kubeconfig file failed.
    #[error("failed to write kubeconfig {path}")]
    WriteKubeconfig {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The server URL does not parse as a URI.
    #[error("invalid API server URL {url}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// kube-rs rejected the generated client configuration.
    #[cfg(feature = "kube-client")]
    #[error("failed to build a kube client for {url}")]
    Client {
        /// The server URL.
        url: String,
        /// kube-rs's error.
        #[source]
        source: kube::Error,
    },
}
