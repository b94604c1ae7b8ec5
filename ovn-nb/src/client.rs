//! [`NbClient`]: the northbound database, replicated, with typed transactions.

use std::time::Duration;

use ovsdb::client::{Client, ClientOptions, Error as ClientError};
use ovsdb::typed::{name_index, DbError, Stored, Table, TypedClient, TypedStore};

use crate::txn::NbTxn;
use crate::{
    generated, AddressSet, GatewayChassis, LoadBalancer, LogicalRouter, LogicalRouterPort,
    LogicalSwitch, LogicalSwitchPort, NbError, PortGroup,
};

/// The `OVN_Northbound` database: a replica of every table (lookups by name
/// through client-side indexes) and transactions built with [`NbTxn`].
///
/// ```no_run
/// # async fn demo() -> Result<(), ovn_nb::NbError> {
/// let nb = ovn_nb::NbClient::connect("unix:/run/ovn/ovnnb_db.sock").await?;
/// let mut txn = nb.txn();
/// txn.may_exist().ls_add("ls1")?;
/// txn.may_exist().lsp_add("ls1", "pod1")?;
/// txn.lsp_set_addresses("pod1", ["00:00:00:00:00:01 10.0.0.2"])?;
/// nb.commit(txn).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct NbClient {
    db: TypedClient,
}

/// The client-side indexes the northbound operations look rows up with.
fn indexes() -> Vec<ovsdb::cache::IndexSpec> {
    vec![
        name_index::<LogicalSwitch>(),
        name_index::<LogicalSwitchPort>(),
        name_index::<LogicalRouter>(),
        name_index::<LogicalRouterPort>(),
        name_index::<PortGroup>(),
        name_index::<AddressSet>(),
        name_index::<LoadBalancer>(),
        name_index::<GatewayChassis>(),
        name_index::<crate::Mirror>(),
    ]
}

impl NbClient {
    /// Connects to `remotes` (comma-separated `unix:`/`tcp:`, or the passive
    /// `punix:`/`ptcp:`), checks the schema and replicates the database. Only a server
    /// that is the leader of a connected cluster (or a standalone server) is used; see
    /// [`NbClient::connect_with`]. `ssl:` and `pssl:` need a key and certificates: pass
    /// options built with [`ovsdb::ClientOptions::with_tls`] to [`NbClient::connect_with`].
    pub async fn connect(remotes: &str) -> Result<NbClient, NbError> {
        let options =
            ClientOptions::new([remotes]).map_err(|e| DbError::from(ClientError::from(e)))?;
        NbClient::connect_with(options).await
    }

    /// Connects with explicit options. Unless `options` name a database already, servers
    /// are checked through `_Server` for `OVN_Northbound`: a cluster member is used only
    /// while it is connected to a majority, its Raft index has not gone back, and (with
    /// [`ClientOptions::leader_only`], the default) it is the leader.
    pub async fn connect_with(mut options: ClientOptions) -> Result<NbClient, NbError> {
        if options.database.is_none() {
            options = options.with_database(generated::DATABASE);
        }
        let client = Client::connect_with(options).await.map_err(DbError::from)?;
        NbClient::with_client(client).await
    }

    /// Uses an already connected client (whose options decide which servers qualify).
    pub async fn with_client(client: Client) -> Result<NbClient, NbError> {
        let db = TypedClient::connect(
            client,
            generated::DATABASE,
            generated::SCHEMA_JSON,
            generated::TABLES,
            indexes(),
        )
        .await?;
        Ok(NbClient { db })
    }

    /// A new transaction reading this client's replica.
    pub fn txn(&self) -> NbTxn<'_> {
        NbTxn::new(self.db.store())
    }

    /// Commits a transaction; when this returns, the replica shows its effects.
    /// A row it writes to that another client deleted meanwhile fails it with
    /// [`NbError::RowGone`], a name another client took meanwhile with
    /// [`NbError::AlreadyExists`] (nothing committed either way).
    pub async fn commit(
        &self,
        txn: NbTxn<'_>,
    ) -> Result<Vec<ovsdb::operation::OperationResult>, NbError> {
        let (ops, guards) = txn.into_parts();
        self.db
            .transact(ops)
            .await
            .map_err(|error| guards.explain(error))
    }

    /// The replica.
    pub fn store(&self) -> &TypedStore {
        self.db.store()
    }

    /// The typed database handle (schema compatibility, raw transactions).
    pub fn db(&self) -> &TypedClient {
        &self.db
    }

    /// The row of `T` named `name`, if any (through the name index).
    pub fn by_name<T: Table>(&self, name: &str) -> Result<Option<Stored<T>>, NbError> {
        Ok(self.store().by_name::<T>(name)?.into_iter().next())
    }

    /// The ports of switch `ls`.
    pub fn ls_ports(&self, ls: &str) -> Result<Vec<Stored<LogicalSwitchPort>>, NbError> {
        let sw = self
            .by_name::<LogicalSwitch>(ls)?
            .ok_or_else(|| NbError::NotFound {
                table: LogicalSwitch::TABLE_NAME,
                name: ls.to_string(),
            })?;
        let mut out = Vec::new();
        for id in &sw.ports {
            if let Some(row) = self.store().get(*id)? {
                out.push(Stored { id: *id, row });
            }
        }
        Ok(out)
    }

    /// Waits until a row of `T` satisfies `predicate`, up to `timeout`.
    pub async fn wait_for<T: Table>(
        &self,
        what: &str,
        timeout: Duration,
        predicate: impl FnMut(&T) -> bool,
    ) -> Result<Stored<T>, NbError> {
        Ok(self.db.wait_for(what, timeout, predicate).await?)
    }

    /// Waits until no row of `T` satisfies `predicate` (e.g. a deleted port is gone from
    /// the replica), up to `timeout`.
    pub async fn wait_gone<T: Table>(
        &self,
        what: &str,
        timeout: Duration,
        predicate: impl FnMut(&T) -> bool,
    ) -> Result<(), NbError> {
        Ok(self.db.wait_gone(what, timeout, predicate).await?)
    }
}
