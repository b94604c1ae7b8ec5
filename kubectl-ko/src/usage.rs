//! `kubectl ko subnet-usage`: each Subnet's IPAM figures from its status (available
//! and used addresses per family), as Kube-OVN's controller publishes them.

use kube::api::{Api, ListParams};

use kube_ovn_api::crd::Subnet;

use super::{Ko, KoError};

/// One line per Subnet: `NAME CIDR V4-USED V4-AVAILABLE V6-USED V6-AVAILABLE`.
pub async fn subnet_usage(ko: &Ko) -> Result<String, KoError> {
    let client = ko.client().await?;
    let api: Api<Subnet> = Api::all(client);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| KoError::Kube {
            context: "list subnets.kubeovn.io".to_string(),
            source,
        })?;
    Ok(render(&list.items))
}

/// The table.
pub fn render(subnets: &[Subnet]) -> String {
    let mut out = format!(
        "{:<20} {:<24} {:>8} {:>12} {:>8} {:>12}\n",
        "NAME", "CIDR", "V4USED", "V4AVAILABLE", "V6USED", "V6AVAILABLE"
    );
    for s in subnets {
        let status = s.status.clone().unwrap_or_default();
        let show =
            |v: Option<kube_ovn_api::crd::IpCount>| v.map_or("-".to_string(), |c| c.to_string());
        out.push_str(&format!(
            "{:<20} {:<24} {:>8} {:>12} {:>8} {:>12}\n",
            s.metadata.name.as_deref().unwrap_or(""),
            s.spec.cidr_block.as_deref().unwrap_or("-"),
            show(status.v4_using_ips),
            show(status.v4_available_ips),
            show(status.v6_using_ips),
            show(status.v6_available_ips),
        ));
    }
    out
}
