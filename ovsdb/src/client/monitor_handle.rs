//! [`Monitor`]: a live monitor and the replica it feeds.

use tokio::sync::oneshot;

use super::driver::Command;
use super::error::Error;
use super::handle::Client;
use super::monitor::{MonitorMethod, MonitorRequest};
use crate::cache::{Store, Writer};
use crate::value::Uuid;

/// A monitor registered with a [`Client`]. Its replica ([`Monitor::store`]) is kept
/// current by the client's background task and resumed after reconnects until the
/// monitor is canceled or dropped.
#[derive(Debug)]
pub struct Monitor {
    client: Client,
    key: u64,
    store: Store,
    canceled: bool,
}

impl Client {
    /// Monitors `requests` on `database` with `monitor_cond_since` into a fresh replica
    /// (the schema's unique indexes only). Returns once the initial rows are in it.
    pub async fn monitor(
        &self,
        database: &str,
        requests: Vec<MonitorRequest>,
    ) -> Result<Monitor, Error> {
        let schema = self.get_schema(database).await?;
        self.monitor_with(
            database,
            requests,
            MonitorMethod::CondSince,
            Writer::new(schema),
        )
        .await
    }

    /// Monitors into a replica the caller prepared (for example with client-side indexes
    /// declared through [`Writer::add_index`]), with the given method.
    pub async fn monitor_with(
        &self,
        database: &str,
        requests: Vec<MonitorRequest>,
        method: MonitorMethod,
        writer: Writer,
    ) -> Result<Monitor, Error> {
        let key = self.next_id();
        let store = writer.store();
        self.inner
            .monitors
            .register(key, database, method, requests, writer);
        let (reply, rx) = oneshot::channel();
        self.send(Command::StartMonitor {
            monitor: key,
            reply,
        })?;
        match rx.await {
            Ok(Ok(())) => Ok(Monitor {
                client: self.clone(),
                key,
                store,
                canceled: false,
            }),
            Ok(Err(error)) => {
                self.inner.monitors.forget(key);
                Err(error)
            }
            Err(_) => Err(Error::Closed),
        }
    }
}

impl Monitor {
    /// A read handle on the replica this monitor feeds.
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// The monitor id currently used on the wire.
    pub fn id(&self) -> Result<String, Error> {
        self.client
            .inner
            .monitors
            .current_id(self.key)
            .ok_or_else(|| self.gone())
    }

    /// The last transaction id received (`monitor_cond_since` only; the nil uuid on a
    /// standalone server).
    pub fn last_txn_id(&self) -> Option<Uuid> {
        self.client.inner.monitors.last_txn_id(self.key)
    }

    /// How many times the server sent this monitor the full contents: once at the start,
    /// and again after each reconnect that could not resume from the last transaction id
    /// (always on standalone servers; on clustered servers only if the history is gone).
    pub fn full_loads(&self) -> u64 {
        self.client.inner.monitors.full_loads(self.key)
    }

    fn gone(&self) -> Error {
        Error::MonitorGone {
            monitor: format!("m{}", self.key),
        }
    }

    /// `monitor_cond_change`: replaces the conditions of the listed tables (columns cannot
    /// change). The resulting inserts and deletes are in the replica when this returns.
    pub async fn change_conditions(&self, requests: Vec<MonitorRequest>) -> Result<(), Error> {
        let monitors = &self.client.inner.monitors;
        let new_key = self.client.next_id();
        let (new_id, params) = monitors
            .begin_change(self.key, new_key, &requests)
            .ok_or_else(|| self.gone())?;
        let outcome = self.client.request("monitor_cond_change", &params).await;
        monitors.end_change(self.key, &new_id, outcome.is_ok().then_some(requests));
        outcome.map(drop)
    }

    /// `monitor_cancel`: stops the monitor; the replica keeps its last contents.
    pub async fn cancel(mut self) -> Result<(), Error> {
        let id = self.id()?;
        self.canceled = true;
        self.client.inner.monitors.forget(self.key);
        self.client.request("monitor_cancel", &[id]).await.map(drop)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if !self.canceled {
            let _ = self
                .client
                .send(Command::ForgetMonitor { monitor: self.key });
        }
    }
}
