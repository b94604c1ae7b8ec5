//! Watch fan-out.
//!
//! Every committed change is offered, while the store lock is still held, to
//! every registered watcher. So a watcher sees changes in resourceVersion
//! order, and a watch that starts from a resourceVersion gets the history
//! after it and then the live changes with no gap and no duplicate (both
//! happen under the same lock).
//!
//! The initial events (history or current state) are handed over as a
//! queue; live changes go through a bounded channel. A watcher whose channel
//! is full is closed, as kube-apiserver closes a `cacheWatcher` that falls
//! behind: its client resumes from the last resourceVersion it saw (or
//! relists on 410), instead of the server buffering without bound.
//!
//! Selectors are applied per watcher the way kube-apiserver's watch cache
//! does: an object that starts matching arrives as `ADDED`, one that stops
//! matching leaves as `DELETED` carrying its previous state stamped with the
//! event's resourceVersion.

use super::ObjectKey;
use crate::error::ApiError;
use crate::selector::{FieldSelector, LabelSelector};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Default capacity of a watcher's live-event channel.
pub const DEFAULT_WATCH_BUFFER: usize = 1024;

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
    /// The `ERROR` event that ends a watch: 410 Expired from a compacted
    /// resourceVersion, 504 Timeout from one the store never reached.
    Error(ApiError),
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
                let before = change.old.as_deref().filter(|o| self.matches(o));
                match (before, now) {
                    (Some(_), true) => EventType::Modified,
                    (None, true) => EventType::Added,
                    (Some(old), false) => {
                        // What the watcher last saw left its view: it gets
                        // that object, at the resourceVersion of the change.
                        let mut old = old.clone();
                        old["metadata"]["resourceVersion"] = json!(change.rv.to_string());
                        return Some(WatchMsg::Event(EventType::Deleted, Arc::new(old)));
                    }
                    (None, false) => return None,
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
    /// Where its live events go.
    pub tx: mpsc::Sender<WatchMsg>,
}

impl Watcher {
    /// Offers a change; false if the watch has gone away or fell behind
    /// (its channel is full) and must be dropped.
    pub fn offer(&self, change: &Change) -> bool {
        match self.filter.translate(change) {
            Some(msg) => self.tx.try_send(msg).is_ok(),
            None => !self.tx.is_closed(),
        }
    }

    /// Offers a bookmark; a full channel skips it (bookmarks are best
    /// effort), a closed one drops the watcher.
    pub fn offer_bookmark(&self, rv: u64) -> bool {
        let msg = WatchMsg::Bookmark {
            rv,
            initial_events_end: false,
        };
        !matches!(
            self.tx.try_send(msg),
            Err(mpsc::error::TrySendError::Closed(_))
        )
    }
}

/// What a watch delivers: the initial events, then the live ones. The
/// stream ends when the store drops the watcher (compaction, shutdown, or
/// the watcher fell behind).
#[derive(Debug)]
pub struct WatchStream {
    /// Events queued when the watch started.
    pub initial: VecDeque<WatchMsg>,
    /// Live events (None for a watch that ends after its initial events).
    pub live: Option<mpsc::Receiver<WatchMsg>>,
}

impl WatchStream {
    /// The next message, waiting for live ones.
    pub async fn next(&mut self) -> Option<WatchMsg> {
        if let Some(msg) = self.initial.pop_front() {
            return Some(msg);
        }
        self.live.as_mut()?.recv().await
    }

    /// The next message if one is ready (tests, draining).
    pub fn try_next(&mut self) -> Option<WatchMsg> {
        if let Some(msg) = self.initial.pop_front() {
            return Some(msg);
        }
        self.live.as_mut()?.try_recv().ok()
    }

    /// A stream of one `ERROR` event.
    pub fn error(err: ApiError) -> Self {
        WatchStream {
            initial: VecDeque::from([WatchMsg::Error(err)]),
            live: None,
        }
    }
}
