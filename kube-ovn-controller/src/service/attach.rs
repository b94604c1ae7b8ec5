//! The cluster load balancers on the switches of the default VPC's subnets
//! (Kube-OVN's `handleAddOrUpdateSubnet`: `LogicalSwitchUpdateLoadBalancers` with
//! the VPC's six balancers when `enableLb`, not on the join switch), called from the
//! Subnet reconciler's apply.

use std::collections::BTreeSet;

use ovn_nb::{LoadBalancer, LogicalSwitch, NbError};

use super::desired::all_balancers;
use crate::subnet::{SubnetError, ValidSubnet};
use crate::Context;
use kube_ovn_api::crd::Subnet;

/// Whether `subnet`'s switch should carry the cluster balancers: `--enable-lb`, the
/// default VPC, not the join switch, and the Subnet's own `enableLb` not false.
pub fn wants_cluster_lbs(ctx: &Context, subnet: &Subnet, valid: &ValidSubnet) -> bool {
    let config = &ctx.config;
    config.enable_lb
        && valid.vpc == config.cluster_router
        && valid.name != config.node_switch.name
        && subnet.spec.enable_lb != Some(false)
}

/// Attaches (or, with `enableLb: false`, detaches) the cluster balancers to the
/// subnet's switch; operations sent (0 when it already looks right). Does nothing
/// without `--enable-lb`, as the balancers do not exist then.
pub async fn attach_cluster_lbs(
    ctx: &Context,
    subnet: &Subnet,
    valid: &ValidSubnet,
) -> Result<usize, SubnetError> {
    if !ctx.config.enable_lb || valid.vpc != ctx.config.cluster_router {
        return Ok(0);
    }
    let nb_err = |source| SubnetError::Nb {
        subnet: valid.name.clone(),
        source,
    };
    let wanted = wants_cluster_lbs(ctx, subnet, valid);
    let Some(switch) = ctx
        .nb
        .by_name::<LogicalSwitch>(&valid.name)
        .map_err(nb_err)?
    else {
        return Ok(0);
    };
    let attached: BTreeSet<_> = switch.row.load_balancer.iter().copied().collect();
    let mut txn = ctx.nb.txn();
    for lb in all_balancers(&ctx.config.load_balancers) {
        let Some(id) = ctx
            .nb
            .store()
            .ids_by::<LoadBalancer>("name", lb)
            .into_iter()
            .next()
        else {
            if wanted {
                return Err(nb_err(NbError::NotFound {
                    table: "Load_Balancer",
                    name: lb.to_string(),
                }));
            }
            continue;
        };
        match (wanted, attached.contains(&id)) {
            (true, false) => txn.ls_lb_add(&valid.name, lb).map_err(nb_err)?,
            (false, true) => txn.ls_lb_del(&valid.name, lb).map_err(nb_err)?,
            _ => {}
        }
    }
    let ops = txn.ops().len();
    if ops > 0 {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    Ok(ops)
}
