//! CNI DEL on the node (Kube-OVN's `handleDel` and `deleteNic`): the port leaves
//! `br-int`, its QoS and Queue rows are destroyed, the veth is deleted. Nothing needs to
//! exist: a second DEL, a DEL with an empty netns (the runtime's RemovePodSandbox) and a
//! DEL for a container the daemon never saw all succeed.

use std::collections::BTreeSet;

use datapath::PodInterface;
use ovs_vsctl::ovsdb::typed;
use ovs_vsctl::{Interface, Port, QoS, Queue, RowId};

use super::handler::{CniDaemon, CniFailure};
use kube_ovn_cni::api::CniRequest;

impl CniDaemon {
    /// CNI DEL for one pod NIC. Never refused for the pod's node: DEL only removes this
    /// node's state of one container, and a StatefulSet pod recreated on another node
    /// under the same name must not keep its old container's port here.
    pub async fn del(&self, req: CniRequest) -> Result<(), CniFailure> {
        for (field, value) in [
            ("container_id", &req.container_id),
            ("if_name", &req.if_name),
        ] {
            if value.is_empty() {
                return Err(CniFailure::InvalidRequest {
                    field,
                    reason: "empty".into(),
                });
            }
        }
        let _guard = self.lock(&req.container_id).await;
        self.remove_attachment(&req.container_id, &req.if_name, &req.net_ns)
            .await
    }

    /// Removes what ADD made for one container NIC, whatever of it exists.
    pub(crate) async fn remove_attachment(
        &self,
        container_id: &str,
        if_name: &str,
        netns: &str,
    ) -> Result<(), CniFailure> {
        let netns = if netns.is_empty() { "/" } else { netns };
        let pod = PodInterface::new(container_id, netns, if_name).map_err(|e| {
            CniFailure::InvalidRequest {
                field: "container_id/if_name",
                reason: e.to_string(),
            }
        })?;
        self.remove_port(&pod.host.name).await?;
        self.settings
            .host_netns
            .run(move || async move { datapath::teardown(&pod).await })
            .await?
            .map_err(CniFailure::datapath(container_id))?;
        Ok(())
    }

    /// `ovs-vsctl --if-exists del-port <port>`, and the QoS and Queue rows of the port
    /// (the one it references and those tagged with its `iface-id`).
    pub(crate) async fn remove_port(&self, name: &str) -> Result<(), CniFailure> {
        let store = self.vs.store();
        let decode = |e: ovs_vsctl::DecodeError| CniFailure::ovs(name)(e.into());
        let ports = store.by_name::<Port>(name).map_err(decode)?;
        let Some(port) = ports.into_iter().next() else {
            return Ok(());
        };
        let iface_ids: BTreeSet<String> = store
            .rows::<Interface>()
            .map_err(decode)?
            .into_iter()
            .filter(|i| port.interfaces.contains(&i.id))
            .filter_map(|i| i.external_ids.get("iface-id").cloned())
            .collect();
        let tagged = |ids: &std::collections::BTreeMap<String, String>| {
            ids.get("iface-id").is_some_and(|id| iface_ids.contains(id))
        };
        let mut qos: BTreeSet<RowId<QoS>> = port.qos.into_iter().collect();
        let all_qos = store.rows::<QoS>().map_err(decode)?;
        qos.extend(
            all_qos
                .iter()
                .filter(|q| tagged(&q.external_ids))
                .map(|q| q.id),
        );
        let mut queues: BTreeSet<RowId<Queue>> = all_qos
            .iter()
            .filter(|q| qos.contains(&q.id))
            .flat_map(|q| q.queues.values().copied())
            .collect();
        let all_queues = store.rows::<Queue>().map_err(decode)?;
        queues.extend(
            all_queues
                .iter()
                .filter(|q| tagged(&q.external_ids))
                .map(|q| q.id),
        );
        let mut txn = self.vs.txn();
        if !qos.is_empty() {
            // the reference goes first: the server checks references before it collects
            // the port the bridge no longer holds
            txn.set(port.id, Port::QOS, None);
        }
        txn.if_exists()
            .del_port(name)
            .map_err(CniFailure::ovs(name))?;
        for id in qos {
            txn.push(typed::delete(QoS::ROW_UUID.eq(id)));
        }
        for id in queues {
            txn.push(typed::delete(Queue::ROW_UUID.eq(id)));
        }
        self.vs.commit(txn).await.map_err(CniFailure::ovs(name))
    }
}
