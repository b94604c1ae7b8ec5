//! Starting and stopping one pod: namespace, CNI ADD/DEL, responder.

use super::*;

impl NodeAgent {
    /// The attachment containerd would make for this pod.
    fn attachment(&self, pod: &Pod, netns_path: &std::path::Path) -> RuntimeConf {
        let (ns, name) = key_of(pod);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        // The sandbox container's id: 64 hex digits, like containerd's.
        let container_id = format!("{}{}", uid.replace('-', ""), "0".repeat(32));
        let mut rt = RuntimeConf::new(
            &container_id[..64.min(container_id.len())],
            netns_path,
            "eth0",
        );
        rt.args = CniArgs::from_pairs([
            ("IgnoreUnknown", "1"),
            ("K8S_POD_NAMESPACE", ns.as_str()),
            ("K8S_POD_NAME", name.as_str()),
            ("K8S_POD_INFRA_CONTAINER_ID", rt.container_id.as_str()),
            ("K8S_POD_UID", uid.as_str()),
        ]);
        rt
    }

    /// Runs CNI ADD (`add`) or DEL in the node's namespace.
    async fn cni(
        &self,
        pod_id: &str,
        add: bool,
        rt: &RuntimeConf,
    ) -> Result<Vec<String>, AgentError> {
        let (cni, list, rt) = (self.cni.clone(), self.list.clone(), rt.clone());
        let ran = run_in(self.config.node_netns.as_deref(), move || {
            if add {
                cni.add_network_list(&list, &rt)
                    .map(|r| result_ips(&r.to_value()))
            } else {
                cni.del_network_list(&list, &rt).map(|()| Vec::new())
            }
        })
        .await
        .map_err(|source| AgentError::Netns {
            pod: pod_id.to_string(),
            source,
        })?;
        ran.map_err(|source| AgentError::Cni {
            pod: pod_id.to_string(),
            source,
        })
    }

    /// Namespace, CNI ADD, responder: the pod runs once this returns. Takes `&self`, so
    /// that many pods start at once; the caller keeps the [`RunningPod`].
    pub(super) async fn start(&self, pod: &Pod) -> Result<RunningPod, AgentError> {
        let key = key_of(pod);
        let pod_id = format!("{}/{}", key.0, key.1);
        self.hold(pod).await?;
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let netns_name = format!("{}{}", self.config.netns_prefix, uid);
        let netns_err = |source| AgentError::Netns {
            pod: pod_id.clone(),
            source,
        };
        let path = netns::create(&netns_name).await.map_err(netns_err)?;
        let attachment = self.attachment(pod, &path);
        let ips = match self.cni(&pod_id, true, &attachment).await {
            Ok(ips) => ips,
            Err(e) => {
                let _ = self.cni(&pod_id, false, &attachment).await;
                let _ = netns::delete(&netns_name).await;
                return Err(e);
            }
        };
        let log = PodLog::default();
        let responder =
            match Responder::start(&path, &key.1, &declared_ports(pod), log.clone()).await {
                Ok(r) => r,
                Err(source) => {
                    let _ = self.cni(&pod_id, false, &attachment).await;
                    let _ = netns::delete(&netns_name).await;
                    return Err(AgentError::Netns {
                        pod: pod_id,
                        source,
                    });
                }
            };
        self.directory
            .insert(&key.0, &key.1, PodEntry { netns: path, log });
        tracing::info!(pod = %pod_id, ?ips, node = %self.config.node, "pod running");
        Ok(RunningPod {
            uid,
            netns_name,
            attachment,
            responder,
            ips,
            started: now(),
            reported: None,
        })
    }

    /// Writes a just started pod's Running status; a failed write is made again by the
    /// next pass's readiness report.
    pub(super) async fn report_started(&self, pod: &Pod, running: &mut RunningPod) {
        let key = key_of(pod);
        let reported = (true, readiness_gates_pass(pod));
        let status = running_status(
            pod,
            &self.config.host_ip,
            &running.ips,
            true,
            &running.started,
        );
        match self.patch_status(&key, &status).await {
            Ok(()) => running.reported = Some(reported),
            Err(e) => tracing::warn!(error = %e, "pod status write failed"),
        }
    }

    /// CNI DEL, responder stopped, namespace removed (each step tried even
    /// if an earlier one failed: nothing may be left behind).
    pub(super) async fn stop(&mut self, key: &(String, String), mut running: RunningPod) {
        let pod_id = format!("{}/{}", key.0, key.1);
        if let Err(e) = self.cni(&pod_id, false, &running.attachment).await {
            tracing::warn!(error = %e, "CNI DEL failed");
        }
        running.responder.stop();
        self.directory.remove(&key.0, &key.1);
        if let Err(e) = netns::delete(&running.netns_name).await {
            tracing::warn!(pod = %pod_id, error = %e, "namespace removal failed");
        }
        tracing::info!(pod = %pod_id, node = %self.config.node, "pod stopped");
    }
}

/// The addresses (without prefix length) of a CNI result.
fn result_ips(result: &serde_json::Value) -> Vec<String> {
    result["ips"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|ip| ip["address"].as_str())
        .filter_map(|a| a.split('/').next().map(str::to_string))
        .collect()
}
