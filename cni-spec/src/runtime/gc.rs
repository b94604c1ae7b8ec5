//! STATUS and GC (spec 1.1.0).

use std::collections::BTreeSet;

use super::{CniRuntime, RuntimeConf, RuntimeError};
use crate::args::CniArgs;
use crate::config::{
    AttachmentRef, NetworkConfigList, LEGACY_ATTACHMENTS_KEY, VALID_ATTACHMENTS_KEY,
};
use crate::plugin::Command;

impl CniRuntime {
    /// STATUS: asks each plugin whether it is ready; the first error is returned (error 50
    /// or 51 from a plugin means "not available"). Lists older than 1.1.0 have no STATUS
    /// and are reported ready, as libcni does.
    pub fn status_network_list(&self, list: &NetworkConfigList) -> Result<(), RuntimeError> {
        let version = list.version()?;
        if !version.supports_status_and_gc() {
            return Ok(());
        }
        for (index, plugin) in list.plugins.iter().enumerate() {
            let mut config = plugin.clone();
            config.cni_version = version.to_string();
            config.name = list.name.clone();
            config.capabilities.clear();
            self.exec(
                list,
                index,
                Command::Status,
                &RuntimeConf::default(),
                &config,
            )?;
        }
        Ok(())
    }

    /// GC: DELs every cached attachment of this network that is not in `valid`, then sends
    /// GC with the valid set to each plugin (1.1.0+). Continues past failures and returns
    /// them all. Does nothing when the list sets `disableGC`.
    pub fn gc_network_list(
        &self,
        list: &NetworkConfigList,
        valid: &[AttachmentRef],
    ) -> Result<(), RuntimeError> {
        let version = list.version()?;
        if list.disable_gc {
            return Ok(());
        }
        let keep: BTreeSet<&AttachmentRef> = valid.iter().collect();
        let mut errors = Vec::new();
        for cached in self.cache.list(&list.name)? {
            let key = AttachmentRef {
                container_id: cached.container_id.clone(),
                ifname: cached.ifname.clone(),
            };
            if keep.contains(&key) {
                continue;
            }
            tracing::info!(network = %list.name, container = %key.container_id, ifname = %key.ifname,
                "GC: deleting stale attachment");
            let rt = RuntimeConf {
                container_id: cached.container_id,
                netns: cached.netns,
                ifname: cached.ifname,
                args: CniArgs::from_pairs(cached.cni_args),
                capability_args: cached.capability_args,
            };
            if let Err(e) = self.del_network_list(list, &rt) {
                errors.push(e);
            }
        }
        if version.supports_status_and_gc() {
            let valid_json = serde_json::to_value(valid).expect("attachments serialize");
            for (index, plugin) in list.plugins.iter().enumerate() {
                let mut config = plugin.clone();
                config.cni_version = version.to_string();
                config.name = list.name.clone();
                config.capabilities.clear();
                // Both keys, as libcni: the 1.1.0 text named it `cni.dev/attachments`.
                for key in [VALID_ATTACHMENTS_KEY, LEGACY_ATTACHMENTS_KEY] {
                    config.extra.insert(key.to_owned(), valid_json.clone());
                }
                let rt = RuntimeConf::default();
                if let Err(e) = self.exec(list, index, Command::Gc, &rt, &config) {
                    errors.push(e);
                }
            }
        }
        match errors.len() {
            0 => Ok(()),
            _ => Err(RuntimeError::Gc {
                network: list.name.clone(),
                errors,
            }),
        }
    }
}
