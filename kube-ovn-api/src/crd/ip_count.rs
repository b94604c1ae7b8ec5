//! `IpCount`: Kube-OVN's `internal.BigInt` address counts (`v4availableIPs`, `v6usingIPs`, ...).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number of addresses. IPv6 subnets hold more than `u64::MAX`, so Kube-OVN's Go type is a
/// big integer written as a bare JSON number; we keep it as `u128` and write it back as
/// digits. We read integers, floats (what a JSON reader without big-number support turns
/// long integers into; truncated toward zero) and decimal strings.
///
/// Counts beyond `u64::MAX` serialize as `u128`, which `serde_json::to_vec`/`to_string` (what
/// kube's `Patch::Merge(&typed)` uses) write exactly but `serde_json::to_value` and `json!`
/// reject (`Value` holds no such number): build status patches from the typed struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpCount(pub u128);

impl fmt::Display for IpCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for IpCount {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // u64 where it fits: not every serializer (YAML, serde_json::Value) takes u128.
        match u64::try_from(self.0) {
            Ok(small) => serializer.serialize_u64(small),
            Err(_) => serializer.serialize_u128(self.0),
        }
    }
}

struct IpCountVisitor;

impl Visitor<'_> for IpCountVisitor {
    type Value = IpCount;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative number of addresses")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<IpCount, E> {
        Ok(IpCount(v.into()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<IpCount, E> {
        Ok(IpCount(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<IpCount, E> {
        u128::try_from(v)
            .map(IpCount)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<IpCount, E> {
        if v.is_finite() && v >= 0.0 {
            // `as` saturates at u128::MAX, which is what a count this large means.
            Ok(IpCount(v as u128))
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<IpCount, E> {
        v.parse()
            .map(IpCount)
            .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

impl<'de> Deserialize<'de> for IpCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IpCountVisitor)
    }
}

impl schemars::JsonSchema for IpCount {
    fn schema_name() -> Cow<'static, str> {
        "IpCount".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Kube-OVN's CRD says `number`; `integer` would reject counts written as floats.
        schemars::json_schema!({ "type": "number" })
    }
}
