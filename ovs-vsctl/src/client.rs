//! [`VsClient`]: the local `Open_vSwitch` database, replicated.

use std::time::Duration;

use ovsdb::client::{Client, ClientOptions, Error as ClientError};
use ovsdb::typed::{name_index, DbError, Stored, TypedClient, TypedStore};

use crate::{generated, Bridge, Interface, Port, VsError, VsTxn};

/// The `Open_vSwitch` database with typed transactions.
#[derive(Debug)]
pub struct VsClient {
    db: TypedClient,
}

impl VsClient {
    /// Connects to `remote` (e.g. `unix:/run/openvswitch/db.sock`).
    pub async fn connect(remote: &str) -> Result<VsClient, VsError> {
        let options =
            ClientOptions::new([remote]).map_err(|e| DbError::from(ClientError::from(e)))?;
        VsClient::connect_with(options).await
    }

    /// Connects with explicit options. Unless `options` name a database already, the
    /// server is checked through `_Server` for `Open_vSwitch` (it must serve it).
    pub async fn connect_with(mut options: ClientOptions) -> Result<VsClient, VsError> {
        if options.database.is_none() {
            options = options.with_database(generated::DATABASE);
        }
        let client = Client::connect_with(options).await.map_err(DbError::from)?;
        VsClient::with_client(client).await
    }

    /// Uses an already connected client (whose options decide which servers qualify).
    pub async fn with_client(client: Client) -> Result<VsClient, VsError> {
        let indexes = vec![
            name_index::<Bridge>(),
            name_index::<Port>(),
            name_index::<Interface>(),
        ];
        let db = TypedClient::connect(
            client,
            generated::DATABASE,
            generated::SCHEMA_JSON,
            generated::TABLES,
            indexes,
        )
        .await?;
        Ok(VsClient { db })
    }

    /// A new transaction reading this client's replica.
    pub fn txn(&self) -> VsTxn<'_> {
        VsTxn::new(self.db.store())
    }

    /// Commits a transaction; when this returns, the replica shows it. A row it
    /// writes to that another client deleted meanwhile fails it with
    /// [`VsError::RowGone`], a bridge or port name another client took meanwhile
    /// with [`VsError::AlreadyExists`] (nothing committed either way).
    pub async fn commit(&self, txn: VsTxn<'_>) -> Result<(), VsError> {
        let (ops, guards) = txn.into_parts();
        self.db
            .transact(ops)
            .await
            .map_err(|error| guards.explain(error))?;
        Ok(())
    }

    /// The replica.
    pub fn store(&self) -> &TypedStore {
        self.db.store()
    }

    /// The typed database handle.
    pub fn db(&self) -> &TypedClient {
        &self.db
    }

    /// Names of the ports of bridge `br`, without the bridge's own internal
    /// port (as `ovs-vsctl list-ports` prints them).
    pub fn list_ports(&self, br: &str) -> Result<Vec<String>, VsError> {
        let bridge = self
            .store()
            .by_name::<Bridge>(br)?
            .into_iter()
            .next()
            .ok_or_else(|| VsError::NotFound {
                table: "Bridge",
                name: br.to_string(),
            })?;
        let mut names = Vec::new();
        for id in &bridge.ports {
            if let Some(port) = self.store().get(*id)?.filter(|p| p.name != br) {
                names.push(port.name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Resolves when interface `iface` has `external_ids:ovn-installed=true`
    /// (set by ovn-controller once the port's flows are in place), or fails
    /// with a timeout error after `timeout`.
    pub async fn wait_ovn_installed(
        &self,
        iface: &str,
        timeout: Duration,
    ) -> Result<Stored<Interface>, VsError> {
        let what = format!("Interface {iface} external_ids:ovn-installed=true");
        Ok(self
            .db
            .wait_for::<Interface>(&what, timeout, |i| {
                i.name == iface
                    && i.external_ids.get("ovn-installed").map(String::as_str) == Some("true")
            })
            .await?)
    }
}
