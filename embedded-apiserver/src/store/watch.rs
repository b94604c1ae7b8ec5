//! Watch fan-out.
//!
//! Every committed change is offered, while the store lock is still held, to
//! every registered watcher; each watcher has its own unbounded channel. So a
//! watcher sees changes in resourceVersion order, and a watch that starts
//! from a resourceVersion gets the history after it and then the live
//! changes with no gap and no duplicate (both happen under the same lock).
//!
//! Selectors are applied per watcher the way kube-apiserver's watch cache
//! does: an object that starts matching arrives as `ADDED`, one that stops
//! matching leaves as `DELETED`.

use super::ObjectKey;
use crate::selector::{FieldSelector, LabelSelector};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The type of a watch event, as spelled on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventType {
    /// `ADDED`
    #[serde(rename = "ADDED")]
    Added,
    /// `MODIFIED`
    #[serde(rename = "MODIFIED")]
    Modified,
    /// `DELETED`
    #[serde(rename = "DELETED")]
    Deleted,
}

impl EventType {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change, kept in the bounded history for watches that
/// resume from an older resourceVersion.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resourceVersion the change committed at.
    pub rv: u64,
    /// Which object.
    pub key: ObjectKey,
    /// Added, modified or deleted.
    pub event: EventType,
    /// The object before (modifications only).
    pub old: Option<Arc<Value>>,
    /// The object after (for deletions: its last state, at `rv`).
    pub object: Arc<Value>,
}

/// A message on a watch stream.
#[derive(Debug, Clone)]
pub enum WatchMsg {
    /// An object event.
    Event(EventType, Arc<Value>),
    /// A `BOOKMARK` at a resourceVersion; `initial_events_end` marks the end
    /// of the initial events of a `sendInitialEvents=true` watch.
    Bookmark {
        /// The resourceVersion reached.
        rv: u64,
        /// Whether this bookmark ends the initial events.
        initial_events_end: bool,
    },
    /// The `ERROR` event (410 Expired) that ends a watch from a compacted
    /// resourceVersion.
    Expired(String),
}

/// What a watcher is interested in.
#[derive(Debug, Clone)]
pub struct WatchFilter {
    /// API group.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Only this namespace (None: all).
    pub namespace: Option<String>,
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
}

impl WatchFilter {
    fn wants_key(&self, key: &ObjectKey) -> bool {
        key.group == self.group
            && key.resource == self.resource
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
    }

    /// Whether an object passes the selectors.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    /// The event this watcher sees for a change, if any.
    pub fn translate(&self, change: &Change) -> Option<WatchMsg> {
        if !self.wants_key(&change.key) {
            return None;
        }
        let now = self.matches(&change.object);
        let event = match change.event {
            EventType::Added | EventType::Deleted => now.then_some(change.event)?,
            EventType::Modified => {
                let before = change.old.as_deref().is_some_and(|o| self.matches(o));
                match (before, now) {
                    (true, true) => EventType::Modified,
                    (false, true) => EventType::Added,
                    (true, false) => EventType::Deleted,
                    (false, false) => return None,
                }
            }
        };
        Some(WatchMsg::Event(event, change.object.clone()))
    }
}

/// A registered watch.
#[derive(Debug)]
pub struct Watcher {
    /// What it wants.
    pub filter: WatchFilter,
    /// Whether it asked for bookmarks.
    pub bookmarks: bool,
    /// Where its events go.
    pub tx: mpsc::UnboundedSender<WatchMsg>,
}

impl Watcher {
    /// Offers a change; false if the watch has gone away.
    pub fn offer(&self, change: &Change) -> bool {
        match self.filter.translate(change) {
            Some(msg) => self.tx.send(msg).is_ok(),
            None => !self.tx.is_closed(),
        }
    }
}
