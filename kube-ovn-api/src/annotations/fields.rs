//! Reading and writing one annotation: the [`AnnotationValue`] conversion of each value
//! type, and the [`annotation_struct!`] macro that spells each key once, next to its field.

use super::{AnnotationError, AnnotationMap};

/// A type an annotation value converts to and from, in Kube-OVN's exact text format.
pub trait AnnotationValue: Sized {
    /// Parses the value; the error says what is wrong (the caller adds key and value).
    fn parse(text: &str) -> Result<Self, String>;
    /// The value as Kube-OVN writes it.
    fn render(&self) -> String;
}

/// Reads the keys under one prefix (`ovn.kubernetes.io/`, `net1.default.ovn.kubernetes.io/`,
/// `<pn>.provider-network.kubernetes.io/`).
pub(crate) struct Reader<'a> {
    pub(crate) map: &'a AnnotationMap,
    pub(crate) prefix: &'a str,
}

impl Reader<'_> {
    /// The parsed value of `<prefix><name>`, `None` when the key is absent.
    pub(crate) fn get<T: AnnotationValue>(&self, name: &str) -> Result<Option<T>, AnnotationError> {
        let key = format!("{}{name}", self.prefix);
        let Some(text) = self.map.get(&key) else {
            return Ok(None);
        };
        T::parse(text)
            .map(Some)
            .map_err(|reason| AnnotationError::Malformed {
                key,
                value: text.clone(),
                reason,
            })
    }
}

/// Writes the keys under one prefix; other keys of the map are never touched.
pub(crate) struct Writer<'a> {
    pub(crate) map: &'a mut AnnotationMap,
    pub(crate) prefix: &'a str,
}

impl Writer<'_> {
    /// Sets `<prefix><name>` to the value, or removes it for `None`.
    pub(crate) fn put<T: AnnotationValue>(&mut self, name: &str, value: Option<&T>) {
        let key = format!("{}{name}", self.prefix);
        match value {
            Some(value) => {
                self.map.insert(key, value.render());
            }
            None => {
                self.map.remove(&key);
            }
        }
    }
}

/// Declares a struct of optional annotation fields, each with the key name (after the
/// prefix) it is read from and written to, plus `read`/`write`/`KEY_NAMES`.
macro_rules! annotation_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty => $key:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* #[doc = concat!("\n\nKey: `<prefix>", $key, "`.")] pub $field: Option<$ty>, )*
        }

        impl $name {
            /// The key names (after the prefix) this struct owns.
            pub const KEY_NAMES: &'static [&'static str] = &[$($key),*];

            fn read(
                reader: &$crate::annotations::fields::Reader<'_>,
            ) -> Result<Self, $crate::annotations::AnnotationError> {
                match Self::read_lenient(reader) {
                    (value, errors) if errors.is_empty() => Ok(value),
                    (_, mut errors) => Err(errors.swap_remove(0)),
                }
            }

            /// Every well-formed key, and an error for each malformed one (left unset).
            fn read_lenient(
                reader: &$crate::annotations::fields::Reader<'_>,
            ) -> (Self, Vec<$crate::annotations::AnnotationError>) {
                let mut errors = Vec::new();
                let value = Self {
                    $( $field: reader.get($key).unwrap_or_else(|e| {
                        errors.push(e);
                        None
                    }), )*
                };
                (value, errors)
            }

            fn write(&self, writer: &mut $crate::annotations::fields::Writer<'_>) {
                $( writer.put($key, self.$field.as_ref()); )*
            }
        }
    };
}

pub(crate) use annotation_struct;
