//! [`SbClient`]: the southbound database, replicated, with typed reads.

use std::time::Duration;

use ovsdb::cache::IndexSpec;
use ovsdb::client::{Client, ClientOptions, Error as ClientError};
use ovsdb::typed::{
    column_index, index_name, name_index, DbError, DecodeError, RowId, Stored, Table, TypedClient,
    TypedStore,
};

use crate::{
    generated, Chassis, DatapathBinding, Encap, LogicalDpGroup, LogicalFlow, MacBinding,
    PortBinding,
};

/// Why a southbound read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SbError {
    /// A replicated row does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The database call failed (schema, connection, timeout).
    #[error(transparent)]
    Db(#[from] DbError),
}

impl SbError {
    /// Whether the connection dropped after a transaction was sent, so it may or may
    /// not have committed: read the database back before retrying.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, SbError::Db(db) if db.is_outcome_unknown())
    }
}

impl From<ovsdb::ClientError> for SbError {
    fn from(error: ovsdb::ClientError) -> Self {
        SbError::Db(DbError::Client(error))
    }
}

/// The `OVN_Southbound` database, replicated.
#[derive(Debug)]
pub struct SbClient {
    db: TypedClient,
}

fn indexes() -> Vec<IndexSpec> {
    vec![
        name_index::<Chassis>(),
        column_index::<Encap>("chassis_name"),
        column_index::<PortBinding>("logical_port"),
        column_index::<LogicalFlow>("logical_datapath"),
        column_index::<LogicalFlow>("logical_dp_group"),
        column_index::<LogicalDpGroup>("datapaths"),
        column_index::<MacBinding>("logical_port"),
        IndexSpec::map_key(
            index_name(DatapathBinding::TABLE_NAME, "external_ids:name"),
            DatapathBinding::TABLE_NAME,
            "external_ids",
            "name",
        ),
    ]
}

impl SbClient {
    /// Connects to `remotes`, checks the schema and replicates the database. Only a
    /// server that is the leader of a connected cluster (or a standalone server) is used;
    /// see [`SbClient::connect_with`].
    pub async fn connect(remotes: &str) -> Result<SbClient, SbError> {
        let options =
            ClientOptions::new([remotes]).map_err(|e| DbError::from(ClientError::from(e)))?;
        SbClient::connect_with(options).await
    }

    /// Connects with explicit options. Unless `options` name a database already, servers
    /// are checked through `_Server` for `OVN_Southbound`: a cluster member is used only
    /// while it is connected to a majority, its Raft index has not gone back, and (with
    /// [`ClientOptions::leader_only`], the default) it is the leader.
    pub async fn connect_with(mut options: ClientOptions) -> Result<SbClient, SbError> {
        if options.database.is_none() {
            options = options.with_database(generated::DATABASE);
        }
        let client = Client::connect_with(options).await.map_err(DbError::from)?;
        SbClient::with_client(client).await
    }

    /// Uses an already connected client (whose options decide which servers qualify).
    pub async fn with_client(client: Client) -> Result<SbClient, SbError> {
        let db = TypedClient::connect(
            client,
            generated::DATABASE,
            generated::SCHEMA_JSON,
            generated::TABLES,
            indexes(),
        )
        .await?;
        Ok(SbClient { db })
    }

    /// The replica.
    pub fn store(&self) -> &TypedStore {
        self.db.store()
    }

    /// The typed database handle.
    pub fn db(&self) -> &TypedClient {
        &self.db
    }

    fn one<T: Table>(&self, column: &str, key: &str) -> Result<Option<Stored<T>>, SbError> {
        Ok(self.store().find_by::<T>(column, key)?.into_iter().next())
    }

    /// The chassis named `name` (its `system-id`).
    pub fn chassis(&self, name: &str) -> Result<Option<Stored<Chassis>>, SbError> {
        self.one("name", name)
    }

    /// The encapsulations of chassis `name`.
    pub fn encaps(&self, chassis: &str) -> Result<Vec<Stored<Encap>>, SbError> {
        Ok(self.store().find_by::<Encap>("chassis_name", chassis)?)
    }

    /// The binding of logical port `logical_port`.
    pub fn port_binding(&self, logical_port: &str) -> Result<Option<Stored<PortBinding>>, SbError> {
        self.one("logical_port", logical_port)
    }

    /// The name of the chassis `logical_port` is bound to, if any.
    pub fn bound_chassis(&self, logical_port: &str) -> Result<Option<String>, SbError> {
        let Some(binding) = self.port_binding(logical_port)? else {
            return Ok(None);
        };
        let Some(chassis) = binding.chassis else {
            return Ok(None);
        };
        Ok(self.store().get(chassis)?.map(|c| c.name))
    }

    /// The datapath of the logical switch or router named `name`
    /// (`external_ids:name`, set by ovn-northd).
    pub fn datapath(&self, name: &str) -> Result<Option<Stored<DatapathBinding>>, SbError> {
        self.one("external_ids:name", name)
    }

    /// Logical flows of `datapath`, directly or through a datapath group.
    pub fn logical_flows(
        &self,
        datapath: RowId<DatapathBinding>,
    ) -> Result<Vec<Stored<LogicalFlow>>, SbError> {
        let store = self.store();
        let mut flows = store.find_by::<LogicalFlow>("logical_datapath", datapath.uuid())?;
        for group in store.ids_by::<LogicalDpGroup>("datapaths", datapath.uuid()) {
            flows.extend(store.find_by::<LogicalFlow>("logical_dp_group", group.uuid())?);
        }
        Ok(flows)
    }

    /// MAC bindings learned on `logical_port`.
    pub fn mac_bindings(&self, logical_port: &str) -> Result<Vec<Stored<MacBinding>>, SbError> {
        Ok(self
            .store()
            .find_by::<MacBinding>("logical_port", logical_port)?)
    }

    /// Waits until `logical_port` has a binding (ovn-northd created it), up to `timeout`.
    pub async fn wait_port_binding(
        &self,
        logical_port: &str,
        timeout: Duration,
    ) -> Result<Stored<PortBinding>, SbError> {
        let what = format!("Port_Binding {logical_port}");
        Ok(self
            .db
            .wait_for::<PortBinding>(&what, timeout, |b| b.logical_port == logical_port)
            .await?)
    }
}
