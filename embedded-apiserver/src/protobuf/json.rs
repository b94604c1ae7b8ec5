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

fn timestamp(seconds: Option<i64>, nanos: Option<i32>, micros: bool) -> Value {
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
