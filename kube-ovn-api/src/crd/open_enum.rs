//! String enums with an escape hatch, and the error that names a field holding an unknown value.
//!
//! Kube-OVN stores enum-like fields (`protocol`, `gatewayType`, ACL actions, ...) as plain
//! strings. We type them, but a value we do not know must not make the whole object fail to
//! decode: one such Subnet would otherwise break every list and watch of Subnets, and the
//! controller could not even report the problem on it. So each enum keeps unknown values in
//! an `Other(String)` variant (as netlink-packet-route's `Other(u8)` does), serializes them back
//! verbatim, and each spec's `validate` turns them into an [`InvalidField`] naming the field,
//! which the reconciler reports as a condition.
//!
//! The generated schema says `type: string` without an `enum`, so the API server stores the
//! object and the controller is the one place that judges it.

/// A field holds a value Kube-OVN does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: unknown value {value:?}, expected one of: {}", expected.join(", "))]
pub struct InvalidField {
    /// Where the value is, as a path from the object root, e.g. `spec.acls[1].action`.
    pub field: String,
    /// The value as the user wrote it.
    pub value: String,
    /// The values Kube-OVN defines for this field.
    pub expected: &'static [&'static str],
}

/// Defines a string enum with known wire values and an `Other(String)` escape hatch, with
/// serde (as the wire string), `JsonSchema` (`type: string`), `Display` and `From<&str>`.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value Kube-OVN does not define, kept verbatim so the object still decodes;
            /// the spec's `validate` reports it.
            Other(String),
        }

        impl $name {
            /// The wire values Kube-OVN defines, in its order.
            pub const KNOWN: &'static [&'static str] = &[$($wire),+];

            /// The value as written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)+
                    Self::Other(other) => other,
                }
            }

            /// Whether this is one of [`Self::KNOWN`].
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }

            /// `Ok` for a known value, else an [`InvalidField`] naming `field`.
            pub fn check(&self, field: impl Into<String>) -> Result<(), $crate::crd::InvalidField> {
                match self {
                    Self::Other(value) => Err($crate::crd::InvalidField {
                        field: field.into(),
                        value: value.clone(),
                        expected: Self::KNOWN,
                    }),
                    _ => Ok(()),
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $($wire => Self::$variant,)+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Ok(Self::from(value.as_ref()))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let description = format!("One of: {}.", Self::KNOWN.join(", "));
                schemars::json_schema!({ "type": "string", "description": description })
            }
        }
    };
}

pub(crate) use open_enum;
