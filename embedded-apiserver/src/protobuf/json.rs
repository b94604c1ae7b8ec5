//! The `ToJson` conversion the generated impls build on, and the k8s-pb
//! types whose JSON form differs from their proto structure (times,
//! quantities, int-or-string, raw JSON).

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A protobuf message as the JSON kube-apiserver would store for it.
/// Absent fields are `Null` and left out by [`put`], as Go's `omitempty`
/// leaves them out.
pub trait ToJson {
    /// The JSON form.
    fn to_json(&self) -> Value;
}

/// Sets `key` unless the value is absent. An empty string counts as
/// absent: gogo-protobuf writes Go's non-pointer strings even when empty,
/// where the JSON encoding's `omitempty` leaves them out (and defaulting,
/// like a Secret's `type: Opaque`, looks for them being unset).
pub fn put(m: &mut Map<String, Value>, key: &str, value: Value) {
    if !(value.is_null() || value == "") {
        m.insert(key.to_string(), value);
    }
}

/// Merges the fields of an embedded Go struct into its parent.
pub fn inline(m: &mut Map<String, Value>, value: Value) {
    if let Value::Object(fields) = value {
        m.extend(fields);
    }
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `map<string, bytes>` (Secret and ConfigMap data).
pub fn bytes_map(map: &BTreeMap<String, Vec<u8>>) -> Value {
    if map.is_empty() {
        return Value::Null;
    }
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), json!(base64(v))))
            .collect(),
    )
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl ToJson for $t {
            fn to_json(&self) -> Value {
                json!(self)
            }
        }
    )*};
}
scalar!(String, bool, i32, i64, f64);

impl<T: ToJson> ToJson for Option<T> {
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToJson::to_json)
    }
}

impl<T: ToJson> ToJson for Box<T> {
    fn to_json(&self) -> Value {
        self.as_ref().to_json()
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn to_json(&self) -> Value {
        if self.is_empty() {
            return Value::Null;
        }
        Value::Array(self.iter().map(ToJson::to_json).collect())
    }
}

impl<T: ToJson> ToJson for BTreeMap<String, T> {
    fn to_json(&self) -> Value {
        if self.is_empty() {
            return Value::Null;
        }
        Value::Object(self.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
    }
}

/// A `Time` or `MicroTime`. Go marshals the zero time as an empty message (both fields
/// absent) and reads it back as the zero time, which its JSON writes as `null`: such
/// a template's `creationTimestamp` stays unset, not 1970-01-01.
fn timestamp(seconds: Option<i64>, nanos: Option<i32>, micros: bool) -> Value {
    if seconds.is_none() && nanos.is_none() {
        return Value::Null;
    }
    let Ok(t) = jiff::Timestamp::new(seconds.unwrap_or(0), nanos.unwrap_or(0)) else {
        return Value::Null;
    };
    if micros {
        json!(format!("{}", t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ")))
    } else {
        json!(format!("{}", t.strftime("%Y-%m-%dT%H:%M:%SZ")))
    }
}

impl ToJson for Time {
    fn to_json(&self) -> Value {
        timestamp(self.seconds, self.nanos, false)
    }
}

impl ToJson for MicroTime {
    fn to_json(&self) -> Value {
        timestamp(self.seconds, self.nanos, true)
    }
}

impl ToJson for Quantity {
    fn to_json(&self) -> Value {
        self.string.to_json()
    }
}

impl ToJson for IntOrString {
    fn to_json(&self) -> Value {
        match self.r#type {
            Some(1) => self.str_val.to_json(),
            _ => json!(self.int_val.unwrap_or(0)),
        }
    }
}

fn raw_json(raw: Option<&[u8]>) -> Value {
    raw.and_then(|r| serde_json::from_slice(r).ok())
        .unwrap_or(Value::Null)
}

impl ToJson for RawExtension {
    fn to_json(&self) -> Value {
        raw_json(self.raw.as_deref())
    }
}

impl ToJson for FieldsV1 {
    fn to_json(&self) -> Value {
        raw_json(self.raw.as_deref())
    }
}

/// The other way: the JSON the store keeps as a k8s-pb message, for
/// clients that ask for protobuf answers. Absent (or mistyped) fields are
/// left unset.
pub trait FromJson: Sized {
    /// The message for a JSON value.
    fn from_json(v: &Value) -> Self;
}

impl FromJson for String {
    fn from_json(v: &Value) -> Self {
        v.as_str().unwrap_or_default().to_string()
    }
}

impl FromJson for bool {
    fn from_json(v: &Value) -> Self {
        v.as_bool().unwrap_or_default()
    }
}

impl FromJson for i64 {
    fn from_json(v: &Value) -> Self {
        v.as_i64().unwrap_or_default()
    }
}

impl FromJson for i32 {
    fn from_json(v: &Value) -> Self {
        v.as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or_default()
    }
}

impl FromJson for f64 {
    fn from_json(v: &Value) -> Self {
        v.as_f64().unwrap_or_default()
    }
}

impl<T: FromJson> FromJson for Option<T> {
    fn from_json(v: &Value) -> Self {
        (!v.is_null()).then(|| T::from_json(v))
    }
}

impl<T: FromJson> FromJson for Box<T> {
    fn from_json(v: &Value) -> Self {
        Box::new(T::from_json(v))
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(v: &Value) -> Self {
        v.as_array()
            .map(|a| a.iter().map(T::from_json).collect())
            .unwrap_or_default()
    }
}

impl<T: FromJson> FromJson for BTreeMap<String, T> {
    fn from_json(v: &Value) -> Self {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), T::from_json(v)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn unbase64(v: &Value) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str()?)
        .ok()
}

/// `map<string, bytes>`.
pub fn bytes_map_from(v: &Value) -> BTreeMap<String, Vec<u8>> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), unbase64(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn seconds_nanos(v: &Value) -> (Option<i64>, Option<i32>) {
    match v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok()) {
        Some(t) => (Some(t.as_second()), Some(t.subsec_nanosecond())),
        None => (None, None),
    }
}

impl FromJson for Time {
    fn from_json(v: &Value) -> Self {
        let (seconds, nanos) = seconds_nanos(v);
        Time { seconds, nanos }
    }
}

impl FromJson for MicroTime {
    fn from_json(v: &Value) -> Self {
        let (seconds, nanos) = seconds_nanos(v);
        MicroTime { seconds, nanos }
    }
}

impl FromJson for Quantity {
    fn from_json(v: &Value) -> Self {
        let string = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Quantity {
            string: Some(string),
        }
    }
}

impl FromJson for IntOrString {
    fn from_json(v: &Value) -> Self {
        match v.as_str() {
            Some(s) => IntOrString {
                r#type: Some(1),
                int_val: None,
                str_val: Some(s.to_string()),
            },
            None => IntOrString {
                r#type: Some(0),
                int_val: Some(i32::from_json(v)),
                str_val: None,
            },
        }
    }
}

impl FromJson for RawExtension {
    fn from_json(v: &Value) -> Self {
        RawExtension {
            raw: serde_json::to_vec(v).ok(),
        }
    }
}

impl FromJson for FieldsV1 {
    fn from_json(v: &Value) -> Self {
        FieldsV1 {
            raw: serde_json::to_vec(v).ok(),
        }
    }
}
