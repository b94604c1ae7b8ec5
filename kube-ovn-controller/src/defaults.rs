//! The two Subnets Kube-OVN's controller creates from its flags when absent
//! (`initDefaultLogicalSwitch` and `initNodeSwitch` in `pkg/controller/init.go`): the
//! default subnet (`--default-ls`, `default=true`, `natOutgoing=true`, distributed
//! gateway) and the join subnet (`--node-switch`, `disableInterConnection=true`). An
//! existing object is never changed: the user may have edited it.

use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;

use crate::config::{ControllerConfig, SubnetFlags};
use kube_ovn_api::annotations::AnnotationValue;
use kube_ovn_api::crd::{GatewayType, Protocol, Subnet, SubnetSpec};

fn protocol(flags: &SubnetFlags) -> Protocol {
    match (flags.cidr.v4, flags.cidr.v6) {
        (Some(_), Some(_)) => Protocol::Dual,
        (None, Some(_)) => Protocol::IPv6,
        _ => Protocol::IPv4,
    }
}

fn base_spec(config: &ControllerConfig, flags: &SubnetFlags) -> SubnetSpec {
    SubnetSpec {
        vpc: Some(config.cluster_router.clone()),
        provider: Some("ovn".to_string()),
        protocol: Some(protocol(flags)),
        cidr_block: Some(flags.cidr.render()),
        gateway: Some(flags.gateway.render()),
        exclude_ips: flags.exclude_ips.iter().map(ToString::to_string).collect(),
        ..Default::default()
    }
}

/// The default subnet as Kube-OVN creates it.
pub fn default_subnet(config: &ControllerConfig) -> Subnet {
    let flags = &config.default_subnet;
    let spec = SubnetSpec {
        default: Some(true),
        gateway_type: Some(GatewayType::Distributed),
        nat_outgoing: Some(true),
        ..base_spec(config, flags)
    };
    named(&flags.name, spec)
}

/// The join subnet as Kube-OVN creates it.
pub fn join_subnet(config: &ControllerConfig) -> Subnet {
    let flags = &config.node_switch;
    let spec = SubnetSpec {
        default: Some(false),
        disable_inter_connection: Some(true),
        ..base_spec(config, flags)
    };
    named(&flags.name, spec)
}

fn named(name: &str, spec: SubnetSpec) -> Subnet {
    Subnet {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

/// Creates the default and join Subnets if absent; returns the names created.
pub async fn ensure_default_subnets(
    client: &Client,
    config: &ControllerConfig,
) -> Result<Vec<String>, kube::Error> {
    let api: Api<Subnet> = Api::all(client.clone());
    let mut created = Vec::new();
    for subnet in [default_subnet(config), join_subnet(config)] {
        let name = subnet.metadata.name.clone().unwrap_or_default();
        if api.get_opt(&name).await?.is_some() {
            continue;
        }
        match api.create(&PostParams::default(), &subnet).await {
            Ok(_) => created.push(name),
            // another controller replica created it meanwhile
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(created)
}
