//! natOutgoing on the node: traffic from a `natOutgoing` subnet to an address outside
//! every cluster subnet leaves the node masqueraded, the effect of Kube-OVN's
//! `pkg/daemon/gateway_linux.go`:
//!
//! ```text
//! -A POSTROUTING -m comment --comment "kube-ovn postrouting rules" -j OVN-POSTROUTING
//! -A OVN-POSTROUTING -m set --match-set ovn40subnets-nat src -m set ! --match-set ovn40subnets dst -j MASQUERADE
//! ```
//!
//! This machine (and any node with iptables-nft but no `ipset` tool) cannot make the
//! ipsets, and no permissively licensed crate speaks nftables over netlink (rustables is
//! GPL, nftnl needs libnftnl's development files). The sets become rules in the same
//! `OVN-POSTROUTING` chain, with the same effect: first one `RETURN` per cluster subnet
//! CIDR (`! --match-set ovn40subnets dst`), then one `MASQUERADE` per natOutgoing CIDR
//! (`--match-set ovn40subnets-nat src`). IPv6 CIDRs go the same way through ip6tables.
//!
//! [`sync`] rewrites the chain only when it differs from the wanted rules, atomically
//! through `iptables-restore --noflush` (declaring the chain flushes it, so a removed
//! subnet loses its rule), and adds the `POSTROUTING` jump once. [`remove`] takes both
//! away. The commands run in the caller's network namespace (the host's, in the daemon);
//! they block briefly, so async callers use `spawn_blocking`. [`run`] repeats [`sync`]
//! from the Subnet list, as Kube-OVN's `runGateway` does every 3 s.

use std::future::Future;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use ipnet::IpNet;
use kube::{Api, Client};

use super::HostNamespace;
use kube_ovn_api::crd::Subnet;
use kube_ovn_api::crd::{parse_cidr, SubnetInvalid};

/// Kube-OVN's chain.
pub const CHAIN: &str = "OVN-POSTROUTING";
/// The comment on the `POSTROUTING` jump, as Kube-OVN writes it.
pub const JUMP_COMMENT: &str = "kube-ovn postrouting rules";
/// The default VPC, whose subnets the node gateway serves.
pub const DEFAULT_VPC: &str = "ovn-cluster";

/// One subnet as natOutgoing sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatSubnet {
    /// The Subnet's name (for errors and logs).
    pub name: String,
    /// Its CIDRs, host bits cleared.
    pub cidrs: Vec<IpNet>,
    /// `spec.natOutgoing`.
    pub nat_outgoing: bool,
}

impl NatSubnet {
    /// A Subnet of the default VPC (others are NATed by their VPC's gateway, not here);
    /// `None` for another VPC. An unparsable CIDR block is an error naming the subnet.
    pub fn from_subnet(subnet: &Subnet) -> Result<Option<NatSubnet>, NatError> {
        let name = kube::ResourceExt::name_any(subnet);
        let vpc = subnet.spec.vpc.as_deref().unwrap_or_default();
        if !(vpc.is_empty() || vpc == DEFAULT_VPC) {
            return Ok(None);
        }
        let cidr = parse_cidr(subnet).map_err(|source| NatError::InvalidSubnet {
            subnet: name.clone(),
            source: Box::new(source),
        })?;
        Ok(Some(NatSubnet {
            name,
            cidrs: cidr.nets(),
            nat_outgoing: subnet.spec.nat_outgoing.unwrap_or(false),
        }))
    }
}

/// IPv4 (`iptables`) or IPv6 (`ip6tables`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `iptables`.
    V4,
    /// `ip6tables`.
    V6,
}

impl Family {
    fn tool(self) -> &'static str {
        match self {
            Family::V4 => "iptables",
            Family::V6 => "ip6tables",
        }
    }

    fn restore(self) -> &'static str {
        match self {
            Family::V4 => "iptables-restore",
            Family::V6 => "ip6tables-restore",
        }
    }

    fn holds(self, net: &IpNet) -> bool {
        matches!(
            (self, net),
            (Family::V4, IpNet::V4(_)) | (Family::V6, IpNet::V6(_))
        )
    }
}

/// Why a natOutgoing sync stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatError {
    /// A Subnet's CIDR block does not parse; nothing was written.
    #[error("subnet {subnet} has an invalid CIDR block")]
    InvalidSubnet {
        /// The Subnet.
        subnet: String,
        /// Why.
        #[source]
        source: Box<SubnetInvalid>,
    },
    /// A tool could not be started.
    #[error("cannot run {program}")]
    Spawn {
        /// The program.
        program: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A tool failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard error.
        stderr: String,
    },
}

/// The `OVN-POSTROUTING` rules for `family`, as `iptables -S` prints them.
pub fn wanted_rules(subnets: &[NatSubnet], family: Family) -> Vec<String> {
    let mut cluster: Vec<IpNet> = subnets
        .iter()
        .flat_map(|s| s.cidrs.iter().copied())
        .filter(|n| family.holds(n))
        .collect();
    cluster.sort();
    cluster.dedup();
    let mut nat: Vec<IpNet> = subnets
        .iter()
        .filter(|s| s.nat_outgoing)
        .flat_map(|s| s.cidrs.iter().copied())
        .filter(|n| family.holds(n))
        .collect();
    nat.sort();
    nat.dedup();
    let mut rules: Vec<String> = cluster
        .iter()
        .map(|net| format!("-A {CHAIN} -d {net} -j RETURN"))
        .collect();
    rules.extend(
        nat.iter()
            .map(|net| format!("-A {CHAIN} -s {net} -j MASQUERADE")),
    );
    rules
}

fn run(program: &'static str, args: &[&str], stdin: Option<&str>) -> Result<String, NatError> {
    let spawn = |source| NatError::Spawn { program, source };
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn)?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(spawn)?;
    }
    let out = child.wait_with_output().map_err(spawn)?;
    if !out.status.success() {
        return Err(NatError::Command {
            command: format!("{program} {}", args.join(" ")),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The chain's rules now (`None`: no chain).
fn current_rules(family: Family) -> Result<Option<Vec<String>>, NatError> {
    match run(family.tool(), &["-w", "-t", "nat", "-S", CHAIN], None) {
        Ok(out) => Ok(Some(
            out.lines()
                .filter(|l| l.starts_with("-A "))
                .map(str::to_string)
                .collect(),
        )),
        // iptables exits 1 when the chain does not exist
        Err(NatError::Command { status, .. }) if status.contains("exit status: 1") => Ok(None),
        Err(e) => Err(e),
    }
}

fn jump_args(op: &'static str) -> [&'static str; 10] {
    [
        "-w",
        "-t",
        "nat",
        op,
        "POSTROUTING",
        "-m",
        "comment",
        "--comment",
        JUMP_COMMENT,
        "-j",
    ]
}

fn jump(family: Family, op: &'static str) -> Result<(), NatError> {
    let mut args = jump_args(op).to_vec();
    args.push(CHAIN);
    run(family.tool(), &args, None).map(|_| ())
}

/// Makes `OVN-POSTROUTING` and the `POSTROUTING` jump match `subnets` for both
/// families; returns whether anything was written.
pub fn sync(subnets: &[NatSubnet]) -> Result<bool, NatError> {
    let mut changed = false;
    for family in [Family::V4, Family::V6] {
        let wanted = wanted_rules(subnets, family);
        let current = current_rules(family)?;
        if current.is_none() && wanted.is_empty() {
            continue;
        }
        if current.as_ref() != Some(&wanted) {
            let mut script = format!("*nat\n:{CHAIN} - [0:0]\n");
            for rule in &wanted {
                script.push_str(rule);
                script.push('\n');
            }
            script.push_str("COMMIT\n");
            run(family.restore(), &["-w", "--noflush"], Some(&script))?;
            changed = true;
        }
        if jump(family, "-C").is_err() {
            jump(family, "-A")?;
            changed = true;
        }
    }
    if changed {
        tracing::info!(?subnets, "natOutgoing rules synced");
    }
    Ok(changed)
}

/// Removes the jump and the chain from both families; returns whether anything was.
pub fn remove() -> Result<bool, NatError> {
    let mut changed = false;
    for family in [Family::V4, Family::V6] {
        while jump(family, "-C").is_ok() {
            jump(family, "-D")?;
            changed = true;
        }
        if current_rules(family)?.is_some() {
            run(family.tool(), &["-w", "-t", "nat", "-F", CHAIN], None)?;
            run(family.tool(), &["-w", "-t", "nat", "-X", CHAIN], None)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// Lists the Subnets every `period` and [`sync`]s in the `host` namespace until
/// `shutdown` resolves. A Subnet with an invalid CIDR block is left out (the Subnet
/// reconciler reports it).
pub async fn run_loop(
    client: Client,
    host: &HostNamespace,
    period: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let api: Api<Subnet> = Api::all(client);
    super::every(period, shutdown, || sync_round(&api, host)).await
}

/// One round of [`run_loop`]: the Subnets listed, their rules synced.
async fn sync_round(api: &Api<Subnet>, host: &HostNamespace) {
    let list = match api.list(&Default::default()).await {
        Ok(list) => list,
        Err(error) => {
            tracing::warn!(%error, "listing Subnets for natOutgoing failed");
            return;
        }
    };
    let subnets: Vec<NatSubnet> = list
        .items
        .iter()
        .filter_map(|s| match NatSubnet::from_subnet(s) {
            Ok(nat) => nat,
            Err(error) => {
                tracing::warn!(error = %super::error_chain(&error), "subnet left out of natOutgoing");
                None
            }
        })
        .collect();
    // iptables runs in the host namespace: children inherit the spawning thread's
    let synced = match host {
        HostNamespace::Current => tokio::task::spawn_blocking(move || sync(&subnets))
            .await
            .map_err(|e| e.to_string()),
        HostNamespace::Path(_) => host
            .run(move || async move { sync(&subnets) })
            .await
            .map_err(|e| super::error_chain(&e)),
    };
    match synced {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::warn!(error = %super::error_chain(&error), "natOutgoing sync failed")
        }
        Err(error) => tracing::warn!(%error, "natOutgoing sync did not run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(name: &str, cidrs: &[&str], nat: bool) -> NatSubnet {
        NatSubnet {
            name: name.into(),
            cidrs: cidrs.iter().map(|c| c.parse().unwrap()).collect(),
            nat_outgoing: nat,
        }
    }

    #[test]
    fn only_default_vpc_subnets_count_and_nat_outgoing_defaults_to_off() {
        use kube_ovn_api::crd::SubnetSpec;
        let make = |vpc: Option<&str>, nat: Option<bool>| {
            Subnet::new(
                "s1",
                SubnetSpec {
                    vpc: vpc.map(str::to_string),
                    cidr_block: Some("10.16.0.9/16".into()),
                    nat_outgoing: nat,
                    ..Default::default()
                },
            )
        };
        let default = NatSubnet::from_subnet(&make(None, Some(true)))
            .unwrap()
            .unwrap();
        assert_eq!(default.cidrs, ["10.16.0.0/16".parse::<IpNet>().unwrap()]);
        assert!(default.nat_outgoing);
        let named = NatSubnet::from_subnet(&make(Some(DEFAULT_VPC), None))
            .unwrap()
            .unwrap();
        assert!(!named.nat_outgoing);
        assert_eq!(
            NatSubnet::from_subnet(&make(Some("vpc-a"), Some(true))).unwrap(),
            None
        );
    }

    #[test]
    fn cluster_cidrs_return_before_nat_cidrs_masquerade_per_family() {
        let subnets = [
            subnet("ovn-default", &["10.16.0.0/16", "fd00:10:16::/112"], true),
            subnet("join", &["100.64.0.0/16"], false),
            subnet("other", &["10.17.0.0/16"], false),
        ];
        assert_eq!(
            wanted_rules(&subnets, Family::V4),
            [
                "-A OVN-POSTROUTING -d 10.16.0.0/16 -j RETURN",
                "-A OVN-POSTROUTING -d 10.17.0.0/16 -j RETURN",
                "-A OVN-POSTROUTING -d 100.64.0.0/16 -j RETURN",
                "-A OVN-POSTROUTING -s 10.16.0.0/16 -j MASQUERADE",
            ]
        );
        assert_eq!(
            wanted_rules(&subnets, Family::V6),
            [
                "-A OVN-POSTROUTING -d fd00:10:16::/112 -j RETURN",
                "-A OVN-POSTROUTING -s fd00:10:16::/112 -j MASQUERADE",
            ]
        );
    }
}
