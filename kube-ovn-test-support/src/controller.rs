//! One controller test environment: a real OVN central, the embedded API server with our
//! CRDs, and a [`Context`] on them, as `kube-ovn-controller` builds its own at start-up.
//!
//! ```ignore
//! let Some(env) = ControllerEnv::builder().default_subnets().start().await else {
//!     return; // no OVN tools outside CI
//! };
//! subnet::apply(&env.ctx, &some_subnet).await?;
//! ```

use std::sync::Arc;

use embedded_apiserver::Handle;
use kube::api::Api;
use kube::Client;
use kube_ovn_api::crd::Subnet;
use kube_ovn_controller::config::ControllerConfig;
use kube_ovn_controller::{bootstrap, ensure_default_subnets, subnet, Context};
use ovn_harness::OvnCentral;
use ovn_nb::NbClient;
use ovn_sb::SbClient;

/// A started environment. Its parts are fields, so a test may move one out (the API
/// server's [`Handle::shutdown`] takes it by value).
pub struct ControllerEnv {
    /// NB, SB and ovn-northd; stopped when dropped.
    pub central: OvnCentral,
    /// The embedded API server.
    pub server: Handle,
    /// A client of [`ControllerEnv::server`].
    pub client: Client,
    /// The central's NB remote (`tcp:127.0.0.1:<port>`), for `ovn-nbctl`.
    pub nb_remote: String,
    /// The central's SB remote, for `ovn-sbctl` (given to the controller only with
    /// [`ControllerEnvBuilder::with_sb`]).
    pub sb_remote: String,
    /// The controller's context: the client, an NB client, the config from the flags.
    pub ctx: Arc<Context>,
}

impl ControllerEnv {
    /// An environment with the start-up NB rows, no Subnets and no SB client.
    pub fn builder() -> ControllerEnvBuilder {
        ControllerEnvBuilder {
            bootstrap: true,
            sb: false,
            default_subnets: false,
            applied: Vec::new(),
        }
    }

    /// The context's NB client.
    pub fn nb(&self) -> &NbClient {
        &self.ctx.nb
    }

    /// The context's config.
    pub fn config(&self) -> &ControllerConfig {
        &self.ctx.config
    }
}

impl std::fmt::Debug for ControllerEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerEnv")
            .field("nb_remote", &self.nb_remote)
            .field("sb_remote", &self.sb_remote)
            .finish_non_exhaustive()
    }
}

/// The options the controller's tests differ by; [`ControllerEnvBuilder::start`] makes
/// the environment.
#[derive(Debug)]
#[must_use]
pub struct ControllerEnvBuilder {
    bootstrap: bool,
    sb: bool,
    default_subnets: bool,
    applied: Vec<String>,
}

impl ControllerEnvBuilder {
    /// Leaves NB empty: no start-up rows (the cluster router, the join switch, ...)
    /// before the test, or the controller binary it runs, writes them.
    pub fn without_bootstrap(mut self) -> Self {
        self.bootstrap = false;
        self
    }

    /// Gives the controller `--ovn-sb-addr` and the context an SB client.
    pub fn with_sb(mut self) -> Self {
        self.sb = true;
        self
    }

    /// Creates the default Subnets (`ovn-default`, `join`) in the API server, as the
    /// controller does at start-up.
    pub fn default_subnets(mut self) -> Self {
        self.default_subnets = true;
        self
    }

    /// Runs the Subnet reconciler once on the stored Subnet `name` (its switch, its
    /// range in the IPAM) once the context is made.
    pub fn apply_subnet(mut self, name: &str) -> Self {
        self.applied.push(name.into());
        self
    }

    /// Starts the central and the API server and builds the context; `None` outside
    /// CI when the OVN tools are missing.
    pub async fn start(self) -> Option<ControllerEnv> {
        let central = crate::central()?;
        let (nb_remote, sb_remote) = (central.nb_remote(), central.sb_remote());
        let mut flags = vec!["kube-ovn-controller".to_string()];
        flags.push(format!("--ovn-nb-addr={nb_remote}"));
        if self.sb {
            flags.push(format!("--ovn-sb-addr={sb_remote}"));
        }
        let config = ControllerConfig::parse_from(flags).expect("flags");
        let nb = NbClient::connect(&nb_remote).await.expect("NB");
        let sb = match self.sb {
            true => Some(SbClient::connect(&sb_remote).await.expect("SB")),
            false => None,
        };
        if self.bootstrap {
            bootstrap(&nb, &config).await.expect("start-up");
        }
        let (server, client) = crate::api_server_with_crds().await;
        if self.default_subnets {
            ensure_default_subnets(&client, &config).await.unwrap();
        }
        let mut ctx = Context::new(client.clone(), Arc::new(nb), Arc::new(config));
        if let Some(sb) = sb {
            ctx = ctx.with_sb(Arc::new(sb));
        }
        let ctx = Arc::new(ctx);
        for name in &self.applied {
            let stored = Api::<Subnet>::all(client.clone()).get(name).await.unwrap();
            subnet::apply(&ctx, &stored)
                .await
                .unwrap_or_else(|e| panic!("the {name} subnet: {e}"));
        }
        Some(ControllerEnv {
            central,
            server,
            client,
            nb_remote,
            sb_remote,
            ctx,
        })
    }
}
