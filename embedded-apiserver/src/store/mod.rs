//! The object store: every object of every kind as JSON, one global
//! resourceVersion counter (like etcd's revision), a bounded history of
//! changes for watches, and the registered watchers.
//!
//! All operations are synchronous methods on [`State`], run under one mutex
//! by the HTTP layer; this makes "one monotonically increasing
//! resourceVersion, every watcher sees every change once, in order" a
//! property of the data structure rather than of the async code.

mod defaults;
mod persist;
mod service_ip;
pub use service_ip::ServiceRange;
pub mod watch;
mod write;

pub use write::{DeleteOptions, Part, WriteOptions};

use crate::error::{ApiError, Reason};
use crate::registry::{Registry, ResourceType};
use crate::selector::{FieldSelector, LabelSelector};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;
use watch::{Change, EventType, WatchFilter, WatchMsg, WatchStream, Watcher};

/// Where an object lives: group, plural resource, namespace ("" for
/// cluster-scoped kinds) and name. Objects are stored once per group and
/// resource, whatever version they are read through.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// API group.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Namespace, or "" for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl ObjectKey {
    /// The key of `name` in `namespace` of type `rt`.
    pub fn new(rt: &ResourceType, namespace: Option<&str>, name: &str) -> Self {
        ObjectKey {
            group: rt.group.clone(),
            resource: rt.plural.clone(),
            namespace: namespace.unwrap_or_default().to_string(),
            name: name.to_string(),
        }
    }
}

/// Options of a list request.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit` (0: no limit).
    pub limit: usize,
    /// `continue` token from a previous page.
    pub continue_token: Option<String>,
}

/// Options of a watch request.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// What to watch.
    pub filter: WatchFilter,
    /// `resourceVersion`: None or 0 means "current state, then changes".
    pub resource_version: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `sendInitialEvents`: synthetic ADDED events then a bookmark.
    pub send_initial_events: bool,
}

/// Default number of changes kept for resuming watches.
pub const DEFAULT_HISTORY: usize = 20_000;

/// The whole state of the server.
#[derive(Debug)]
pub struct State {
    pub(crate) registry: Registry,
    objects: BTreeMap<ObjectKey, Arc<Value>>,
    resource_version: u64,
    history: VecDeque<Arc<Change>>,
    /// Watches from a resourceVersion below this get 410 Expired.
    oldest_watchable: u64,
    history_limit: usize,
    watchers: Vec<Watcher>,
    dirty: bool,
    /// Whether ordinary writes get `operation: Update` managedFields entries.
    track_update_managers: bool,
    /// Capacity of each watcher's live channel.
    watch_buffer: usize,
    /// Where committed changes are logged, when the state is persistent.
    journal: Option<persist::Journal>,
    /// Where new Services' ClusterIPs come from.
    service_range: ServiceRange,
}

impl State {
    /// An empty store with the built-in kinds and default namespaces.
    pub fn new(history_limit: usize) -> Self {
        let mut state = State {
            registry: Registry::builtin(),
            objects: BTreeMap::new(),
            resource_version: 0,
            history: VecDeque::new(),
            oldest_watchable: 0,
            history_limit: history_limit.max(1),
            watchers: Vec::new(),
            dirty: false,
            track_update_managers: true,
            watch_buffer: watch::DEFAULT_WATCH_BUFFER,
            journal: None,
            service_range: ServiceRange::DEFAULT,
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let rt = state.registry.find("", "v1", "namespaces").cloned();
            if let Some(rt) = rt {
                let opts = WriteOptions::manager("embedded-apiserver");
                // Built-in names are valid, so this cannot fail.
                let _ = state.create(&rt, None, body, &opts);
            }
        }
        state
    }

    /// Turns `operation: Update` managedFields entries on or off (on by
    /// default, as in kube-apiserver). Their `fieldsV1` trees take more
    /// memory than the objects themselves (about 9 of 17.5 KB for a small
    /// pod); a large benchmark that never server-side-applies over other
    /// writers can switch them off. Server-side apply entries are kept.
    pub fn set_track_update_managers(&mut self, on: bool) {
        self.track_update_managers = on;
    }

    /// How many live events a watcher may have pending before it is closed
    /// as too slow (kube-apiserver closes such watchers too; clients resume
    /// from the last resourceVersion they saw). Applies to new watches.
    pub fn set_watch_buffer(&mut self, capacity: usize) {
        self.watch_buffer = capacity.max(1);
    }

    /// The current (latest committed) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The resource registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Whether something changed since the last [`State::take_dirty`].
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Commits a change: next resourceVersion, store, history, fan-out.
    fn commit(&mut self, key: ObjectKey, event: EventType, mut object: Value) -> Arc<Value> {
        self.resource_version += 1;
        let rv = self.resource_version;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let object = Arc::new(object);
        let old = match event {
            EventType::Deleted => self.objects.remove(&key),
            _ => self.objects.insert(key.clone(), object.clone()),
        };
        self.after_commit(&key, event, &object);
        let change = Arc::new(Change {
            rv,
            key,
            event,
            old,
            object: object.clone(),
        });
        self.journal_change(&change);
        self.watchers.retain(|w| w.offer(&change));
        self.history.push_back(change);
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.oldest_watchable = dropped.rv;
            }
        }
        self.dirty = true;
        object
    }

    /// Side effects of some kinds: CRDs (un)register their types.
    fn after_commit(&mut self, key: &ObjectKey, event: EventType, object: &Value) {
        if key.group == "apiextensions.k8s.io" && key.resource == "customresourcedefinitions" {
            match event {
                EventType::Deleted => {
                    let group = object["spec"]["group"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let plural = object["spec"]["names"]["plural"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    self.registry.unregister(&group, &plural);
                }
                _ => self.registry.register_crd(object),
            }
        }
    }

    /// An object as served through `rt` (its version may differ from the
    /// one it was written through).
    fn present(rt: &ResourceType, object: &Value) -> Value {
        let mut out = object.clone();
        out["apiVersion"] = json!(rt.api_version());
        out
    }

    /// GET of one object.
    pub fn get(&self, rt: &ResourceType, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let key = ObjectKey::new(rt, ns, name);
        match self.objects.get(&key) {
            Some(o) => Ok(Self::present(rt, o)),
            None => Err(ApiError::not_found(&rt.group, &rt.plural, name)),
        }
    }

    /// The objects of `rt` in `ns` (all namespaces if None), in key order.
    fn scan<'a>(
        &'a self,
        rt: &'a ResourceType,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Value>)> + 'a {
        let start = ObjectKey::new(rt, ns, "");
        self.objects.range(start..).take_while(move |(k, _)| {
            k.group == rt.group && k.resource == rt.plural && ns.is_none_or(|n| k.namespace == n)
        })
    }

    /// LIST, with selectors and `limit`/`continue` paging.
    ///
    /// The continue token is `<rv>:<namespace>/<name>`: the resourceVersion
    /// of the first page and the last key returned. Every page reports that
    /// first resourceVersion, as kube-apiserver does, so a watch started from
    /// the last page replays whatever changed while the pages were read
    /// (nothing is lost; at worst an object shows up twice). A token older
    /// than the watch history is 410 Expired.
    pub fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        let (list_rv, after) = match opts.continue_token.as_deref() {
            Some(token) => {
                let (rv, ns_name) = parse_continue(token)?;
                if rv < self.oldest_watchable {
                    return Err(ApiError::new(
                        Reason::Expired,
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ));
                }
                (rv, Some(ns_name))
            }
            None => (self.resource_version, None),
        };
        let mut items: Vec<(&ObjectKey, Value)> = Vec::new();
        let mut more = false;
        for (key, object) in self.scan(rt, ns) {
            if let Some((ans, aname)) = &after {
                if (key.namespace.as_str(), key.name.as_str()) <= (ans.as_str(), aname.as_str()) {
                    continue;
                }
            }
            if !(opts.labels.matches(object) && opts.fields.matches(object)) {
                continue;
            }
            if opts.limit > 0 && items.len() == opts.limit {
                more = true;
                break;
            }
            items.push((key, Self::present(rt, object)));
        }
        let mut metadata = json!({"resourceVersion": list_rv.to_string()});
        if let (true, Some((last, _))) = (more, items.last()) {
            metadata["continue"] = json!(format!("{list_rv}:{}/{}", last.namespace, last.name));
        }
        Ok(json!({
            "kind": format!("{}List", rt.kind),
            "apiVersion": rt.api_version(),
            "metadata": metadata,
            "items": items.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
        }))
    }

    /// Starts a watch. Initial or historical events are queued in the
    /// returned stream before any live change can be.
    ///
    /// A resourceVersion older than the history gives a stream of one 410
    /// `ERROR` event; one newer than the store's is 504 "Too large resource
    /// version" (the caller may wait and retry, as kube-apiserver's watch
    /// cache waits up to 3 s for its store to catch up).
    pub fn watch(&mut self, opts: WatchOptions) -> Result<WatchStream, ApiError> {
        let filter = opts.filter;
        let mut initial = VecDeque::new();
        match opts.resource_version {
            Some(rv) if rv > self.resource_version => {
                return Err(ApiError::too_large_resource_version(
                    rv,
                    self.resource_version,
                ));
            }
            Some(rv) if rv > 0 && !opts.send_initial_events => {
                if rv < self.oldest_watchable {
                    return Ok(WatchStream::error(ApiError::new(
                        Reason::Expired,
                        format!("too old resource version: {rv} ({})", self.oldest_watchable),
                    )));
                }
                initial.extend(
                    self.history
                        .iter()
                        .filter(|c| c.rv > rv)
                        .filter_map(|change| filter.translate(change)),
                );
            }
            _ => {
                let ns = filter.namespace.clone();
                let rt = self
                    .registry
                    .find_any_version(&filter.group, &filter.resource)
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(&filter.group, &filter.resource, ""))?;
                for (_, object) in self.scan(&rt, ns.as_deref()) {
                    if filter.matches(object) {
                        initial.push_back(WatchMsg::Event(EventType::Added, object.clone()));
                    }
                }
                if opts.send_initial_events {
                    initial.push_back(WatchMsg::Bookmark {
                        rv: self.resource_version,
                        initial_events_end: true,
                    });
                }
            }
        }
        let (tx, rx) = mpsc::channel(self.watch_buffer);
        self.watchers.push(Watcher {
            filter,
            bookmarks: opts.bookmarks,
            tx,
        });
        Ok(WatchStream {
            initial,
            live: Some(rx),
        })
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watcher that
    /// asked for bookmarks (they have seen every change up to it).
    pub fn send_bookmarks(&mut self) {
        let rv = self.resource_version;
        self.watchers.retain(|w| {
            if w.bookmarks {
                w.offer_bookmark(rv)
            } else {
                !w.tx.is_closed()
            }
        });
    }

    /// Forgets the change history and ends every watch, so that clients
    /// resuming from any resourceVersion they know get 410 Gone and relist.
    /// (The counter moves on by one so a fresh list is watchable again.)
    pub fn compact_history(&mut self) {
        self.resource_version += 1;
        self.oldest_watchable = self.resource_version;
        self.history.clear();
        self.watchers.clear();
    }

    /// Ends every watch (server shutdown).
    pub fn close_watches(&mut self) {
        self.watchers.clear();
    }

    /// Number of open watches.
    pub fn watcher_count(&self) -> usize {
        self.watchers.len()
    }
}

fn parse_continue(token: &str) -> Result<(u64, (String, String)), ApiError> {
    let invalid = || ApiError::bad_request(format!("continue key is not valid: {token:?}"));
    let (rv, key) = token.split_once(':').ok_or_else(invalid)?;
    let rv = rv.parse().map_err(|_| invalid())?;
    let (ns, name) = key.split_once('/').ok_or_else(invalid)?;
    Ok((rv, (ns.to_string(), name.to_string())))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;
