//! JSON-RPC 1.0 messages, as ovsdb-server accepts and sends them.
//!
//! A message is one JSON object whose only members may be `method`, `params`,
//! `result`, `error` and `id` (RFC 7047 §4, `lib/jsonrpc.c` in Open vSwitch). JSON
//! `null` counts as absent. ovsdb-server is strict about what it receives:
//!
//! - any other member (such as JSON-RPC 2.0's `"jsonrpc": "2.0"`) makes it log
//!   `message has unexpected member` and **close the connection**;
//! - a request or notification without `params`, or with `"params": null`, is fatal too:
//!   `params` is always an array, `[]` when empty;
//! - a notification is a request with `"id": null`.
//!
//! It classifies what it reads the same way this module does ([`Message::from_slice`]):
//! a message is a *reply* if `result` is non-null, else an *error* if `error` is
//! non-null, else a *request* if `id` is non-null, else a *notification*.
//!
//! Successful replies come as `{"id":…,"result":…,"error":null}`. Error replies carry
//! either a bare string (`{"id":16,"error":"unknown method"}`) or an object
//! `{"error":…,"details":…,"syntax":…}`, and Debian's 3.1 server omits `result` in them.
//! Failures of single operations inside `transact` are not RPC errors: they live in the
//! (successful) result array; see [`crate::operation`].

use std::fmt;
use std::io;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// One JSON-RPC 1.0 message.
///
/// `params` and `result` are kept as raw JSON text ([`RawValue`]) so that large
/// payloads (a 7 MB monitor reply) are parsed once, straight into their typed form,
/// rather than first into a `serde_json::Value` tree. `params` is always a JSON array.
#[derive(Debug, Clone)]
pub enum Message {
    /// A call that expects a reply with the same `id`.
    Request {
        /// Any JSON value but `null`; echoed in the reply.
        id: Value,
        /// Method name, e.g. `transact`.
        method: String,
        /// Positional parameters: a JSON array.
        params: Box<RawValue>,
    },
    /// A call that expects no reply (`"id": null`), e.g. `update2` or `cancel`.
    Notification {
        /// Method name.
        method: String,
        /// Positional parameters: a JSON array.
        params: Box<RawValue>,
    },
    /// A successful reply: `result` is never `null`.
    Reply {
        /// The request's id.
        id: Value,
        /// The method's result (never JSON `null`).
        result: Box<RawValue>,
    },
    /// An error reply.
    Error {
        /// The request's id (`null` if the server could not tell which).
        id: Value,
        /// What went wrong.
        error: RpcError,
    },
}

/// The `error` member of an error reply.
///
/// On the wire it is either a bare string or `{"error", "details"?, "syntax"?}`; a
/// value without details or syntax is written back as the bare string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// Short error name, e.g. `unknown database`, `canceled`, `not owner`.
    pub error: String,
    /// Human-readable explanation.
    pub details: Option<String>,
    /// The offending JSON, as text.
    pub syntax: Option<String>,
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error)?;
        if let Some(details) = &self.details {
            write!(f, ": {details}")?;
        }
        if let Some(syntax) = &self.syntax {
            write!(f, " (in {syntax})")?;
        }
        Ok(())
    }
}

impl std::error::Error for RpcError {}

/// A frame that is not a valid JSON-RPC 1.0 message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// Not JSON, or not a JSON object.
    #[error("message is not a valid JSON object")]
    Json(#[from] serde_json::Error),
    /// A member other than method/params/result/error/id.
    #[error("message has unexpected member {member:?}")]
    UnexpectedMember {
        /// The member's name.
        member: String,
    },
    /// A member that this kind of message needs is absent or null.
    #[error("{kind} message lacks member {member:?}")]
    MissingMember {
        /// request, notification or reply.
        kind: &'static str,
        /// The missing member.
        member: &'static str,
    },
    /// A member has the wrong JSON type.
    #[error("member {member:?} of message must be {expected}, got {got}")]
    WrongType {
        /// The member.
        member: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it was, as JSON text (shortened).
        got: String,
    },
    /// Both `result` and `error` are non-null.
    #[error("reply has both a result and an error")]
    ResultAndError,
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        use Message::*;
        match (self, other) {
            (
                Request {
                    id: a,
                    method: m,
                    params: p,
                },
                Request {
                    id: b,
                    method: n,
                    params: q,
                },
            ) => a == b && m == n && p.get() == q.get(),
            (
                Notification {
                    method: m,
                    params: p,
                },
                Notification {
                    method: n,
                    params: q,
                },
            ) => m == n && p.get() == q.get(),
            (Reply { id: a, result: r }, Reply { id: b, result: s }) => {
                a == b && r.get() == s.get()
            }
            (Error { id: a, error: e }, Error { id: b, error: f }) => a == b && e == f,
            _ => false,
        }
    }
}

/// Serializes positional parameters into the raw array a message carries.
pub fn params_to_raw<T: Serialize + ?Sized>(params: &T) -> Box<RawValue> {
    // Serializing plain data into a string cannot fail (no maps with non-string keys are
    // used here); fall back to an empty array rather than panic.
    serde_json::value::to_raw_value(params)
        .unwrap_or_else(|_| RawValue::from_string("[]".to_owned()).expect("valid JSON"))
}

/// Writes the request `{"id":<id>,"method":<method>,"params":<params>}` straight into
/// `out`, without building a [`Message`] or a `serde_json::Value` tree first. `params`
/// must serialize to a JSON array; if it cannot be serialized, `[]` is written instead
/// (as [`params_to_raw`] does).
pub fn encode_request<T: Serialize + ?Sized>(out: &mut Vec<u8>, id: u64, method: &str, params: &T) {
    use std::io::Write as _;
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{{\"id\":{id},\"method\":");
    let _ = serde_json::to_writer(&mut *out, method);
    out.extend_from_slice(b",\"params\":");
    let mark = out.len();
    if serde_json::to_writer(&mut *out, params).is_err() {
        out.truncate(mark);
        out.extend_from_slice(b"[]");
    }
    out.push(b'}');
}

impl Message {
    /// A request with the given id.
    pub fn request(id: impl Into<Value>, method: impl Into<String>, params: Vec<Value>) -> Self {
        Message::Request {
            id: id.into(),
            method: method.into(),
            params: params_to_raw(&params),
        }
    }

    /// A notification (no reply expected).
    pub fn notification(method: impl Into<String>, params: Vec<Value>) -> Self {
        Message::Notification {
            method: method.into(),
            params: params_to_raw(&params),
        }
    }

    /// A successful reply carrying `result` (which must not be `null`).
    pub fn reply(id: Value, result: &Value) -> Self {
        Message::Reply {
            id,
            result: params_to_raw(result),
        }
    }

    /// The params of a request or notification, parsed into values.
    pub fn params(&self) -> Option<Vec<Value>> {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                serde_json::from_str(params.get()).ok()
            }
            _ => None,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The id of a request or reply; `None` for notifications.
    pub fn id(&self) -> Option<&Value> {
        match self {
            Message::Request { id, .. } | Message::Reply { id, .. } | Message::Error { id, .. } => {
                Some(id)
            }
            Message::Notification { .. } => None,
        }
    }

    /// Parses one message (one JSON object).
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        let raw: RawMessage = serde_json::from_slice(bytes)?;
        raw.classify()
    }

    /// Serializes as compact JSON.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        // Writing a Value tree into a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Serializes as compact JSON into `writer`.
    pub fn write_to<W: io::Write>(&self, writer: W) -> io::Result<()> {
        serde_json::to_writer(writer, self).map_err(io::Error::from)
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_vec()))
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        match self {
            Message::Request { id, method, params } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("method", method)?;
                map.serialize_entry("params", params)?;
            }
            Message::Notification { method, params } => {
                map.serialize_entry("id", &Value::Null)?;
                map.serialize_entry("method", method)?;
                map.serialize_entry("params", params)?;
            }
            Message::Reply { id, result } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("result", result)?;
                map.serialize_entry("error", &Value::Null)?;
            }
            Message::Error { id, error } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("result", &Value::Null)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}

impl Serialize for RpcError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.details.is_none() && self.syntax.is_none() {
            return serializer.serialize_str(&self.error);
        }
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("error", &self.error)?;
        if let Some(details) = &self.details {
            map.serialize_entry("details", details)?;
        }
        if let Some(syntax) = &self.syntax {
            map.serialize_entry("syntax", syntax)?;
        }
        map.end()
    }
}

impl RpcError {
    /// Reads an `error` member: a string or an `{error, details, syntax}` object.
    pub fn from_value(value: Value) -> Result<RpcError, MessageError> {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        match value {
            Value::String(error) => Ok(RpcError {
                error,
                details: None,
                syntax: None,
            }),
            Value::Object(ref obj) if obj.get("error").is_some_and(Value::is_string) => {
                Ok(RpcError {
                    error: text(obj.get("error")).unwrap_or_default(),
                    details: text(obj.get("details")),
                    syntax: text(obj.get("syntax")),
                })
            }
            other => Err(wrong_type(
                "error",
                "a string or an object with an \"error\" string",
                &other,
            )),
        }
    }
}

fn wrong_type(member: &'static str, expected: &'static str, got: &Value) -> MessageError {
    let mut got = got.to_string();
    if got.len() > 80 {
        let mut cut = 77;
        while !got.is_char_boundary(cut) {
            cut -= 1;
        }
        got.truncate(cut);
        got.push_str("...");
    }
    MessageError::WrongType {
        member,
        expected,
        got,
    }
}

/// The members of a message before classification; `null` members are `None`.
#[derive(Default)]
struct RawMessage {
    method: Option<Value>,
    params: Option<Box<RawValue>>,
    result: Option<Box<RawValue>>,
    error: Option<Value>,
    id: Option<Value>,
    unexpected: Option<String>,
}

impl RawMessage {
    fn classify(self) -> Result<Message, MessageError> {
        if let Some(member) = self.unexpected {
            return Err(MessageError::UnexpectedMember { member });
        }
        if let Some(result) = self.result {
            if self.error.is_some() {
                return Err(MessageError::ResultAndError);
            }
            let id = self.id.ok_or(MessageError::MissingMember {
                kind: "reply",
                member: "id",
            })?;
            return Ok(Message::Reply { id, result });
        }
        if let Some(error) = self.error {
            let error = RpcError::from_value(error)?;
            return Ok(Message::Error {
                id: self.id.unwrap_or(Value::Null),
                error,
            });
        }
        let kind = if self.id.is_some() {
            "request"
        } else {
            "notification"
        };
        let method = match self.method {
            Some(Value::String(method)) => method,
            Some(other) => return Err(wrong_type("method", "a string", &other)),
            None => {
                return Err(MessageError::MissingMember {
                    kind,
                    member: "method",
                })
            }
        };
        let params = match self.params {
            Some(params) if params.get().starts_with('[') => params,
            Some(other) => {
                let other: Value = serde_json::from_str(other.get())?;
                return Err(wrong_type("params", "an array", &other));
            }
            None => {
                return Err(MessageError::MissingMember {
                    kind,
                    member: "params",
                })
            }
        };
        Ok(match self.id {
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        })
    }
}

impl<'de> Deserialize<'de> for RawMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RawMessageVisitor)
    }
}

struct RawMessageVisitor;

impl<'de> Visitor<'de> for RawMessageVisitor {
    type Value = RawMessage;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC 1.0 message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawMessage, A::Error> {
        let mut raw = RawMessage::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let duplicate = match key.as_ref() {
                "method" => fill(&mut raw.method, map.next_value::<Value>()?),
                "error" => fill(&mut raw.error, map.next_value::<Value>()?),
                "id" => fill(&mut raw.id, map.next_value::<Value>()?),
                "params" => fill_raw(&mut raw.params, map.next_value::<Box<RawValue>>()?),
                "result" => fill_raw(&mut raw.result, map.next_value::<Box<RawValue>>()?),
                _ => {
                    raw.unexpected
                        .get_or_insert_with(|| key.clone().into_owned());
                    map.next_value::<IgnoredAny>()?;
                    false
                }
            };
            if duplicate {
                return Err(de::Error::custom(format_args!("duplicate member {key:?}")));
            }
        }
        Ok(raw)
    }
}

/// Stores a member, treating JSON `null` as absent; true if it was already set.
fn fill(slot: &mut Option<Value>, value: Value) -> bool {
    let duplicate = slot.is_some();
    *slot = Some(value).filter(|v| !v.is_null());
    duplicate
}

fn fill_raw(slot: &mut Option<Box<RawValue>>, value: Box<RawValue>) -> bool {
    let duplicate = slot.is_some();
    *slot = Some(value).filter(|v| v.get() != "null");
    duplicate
}
