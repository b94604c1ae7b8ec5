//! Logical switches and their ports (`ls-*`, `lsp-*`).

use std::collections::{BTreeMap, BTreeSet};

use ovsdb::typed::{RowId, Table};

use super::NbTxn;
use crate::{LogicalSwitch, LogicalSwitchPort, Mirror, MirrorFilter, MirrorType, NbError};

impl NbTxn<'_> {
    /// `ls-add NAME`: creates a logical switch.
    pub fn ls_add(&mut self, name: &str) -> Result<RowId<LogicalSwitch>, NbError> {
        let may_exist = self.take_may_exist();
        if let Some(id) = self.lookup::<LogicalSwitch>(name)? {
            Self::exists(LogicalSwitch::TABLE_NAME, name, may_exist)?;
            return Ok(id);
        }
        self.guard_name_free(LogicalSwitch::NAME, name);
        Ok(self.insert_named(
            name,
            &LogicalSwitch {
                name: name.to_string(),
                ..Default::default()
            },
        ))
    }

    /// `ls-del NAME`: deletes a switch (its ports go with it).
    pub fn ls_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        match self.lookup::<LogicalSwitch>(name)? {
            Some(id) => {
                self.delete_row(id);
                Ok(())
            }
            None => Self::missing(LogicalSwitch::TABLE_NAME, name, if_exists),
        }
    }

    /// Sets `other_config` keys of a switch (e.g. `subnet`, `exclude_ips`, or
    /// `mac_only=true` to turn dynamic address allocation off).
    pub fn ls_set_other_config(
        &mut self,
        ls: &str,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), NbError> {
        let id = self.require::<LogicalSwitch>(ls)?;
        self.set_keys(id, LogicalSwitch::OTHER_CONFIG, pairs);
        Ok(())
    }

    /// The switch that holds port `lsp` (through the `ports` index).
    fn switch_of(&self, lsp: RowId<LogicalSwitchPort>) -> Option<RowId<LogicalSwitch>> {
        self.store
            .ids_referencing::<LogicalSwitch>("ports", lsp.uuid())
            .into_iter()
            .find(|id| !self.deleted.contains(&id.uuid()))
    }

    /// The name of a replicated switch, for messages.
    fn switch_name(&self, id: RowId<LogicalSwitch>) -> String {
        self.row(id)
            .ok()
            .flatten()
            .map_or_else(|| id.to_string(), |ls| ls.name)
    }

    /// `lsp-add SWITCH PORT`: creates a port on a switch.
    pub fn lsp_add(&mut self, ls: &str, name: &str) -> Result<RowId<LogicalSwitchPort>, NbError> {
        self.lsp_add_row(
            ls,
            LogicalSwitchPort {
                name: name.to_string(),
                ..Default::default()
            },
        )
    }

    /// Creates a port with all its columns set from `port` (its `name` names it).
    pub fn lsp_add_row(
        &mut self,
        ls: &str,
        port: LogicalSwitchPort,
    ) -> Result<RowId<LogicalSwitchPort>, NbError> {
        let may_exist = self.take_may_exist();
        let ls_id = self.require::<LogicalSwitch>(ls)?;
        if let Some(id) = self.lookup::<LogicalSwitchPort>(&port.name)? {
            let owner = self.switch_of(id);
            if owner.is_some() && owner != Some(ls_id) {
                return Err(NbError::WrongOwner {
                    kind: "logical switch port",
                    port: port.name.clone(),
                    owner: owner.map(|o| self.switch_name(o)).unwrap_or_default(),
                    wanted: ls.to_string(),
                });
            }
            Self::exists(LogicalSwitchPort::TABLE_NAME, &port.name, may_exist)?;
            return Ok(id);
        }
        let id = self.insert_named(&port.name.clone(), &port);
        self.mutate(ls_id, LogicalSwitch::PORTS.insert([id]));
        Ok(id)
    }

    /// `lsp-del PORT`: removes a port from its switch (the row is then
    /// garbage-collected by the server).
    pub fn lsp_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        let Some(id) = self.lookup::<LogicalSwitchPort>(name)? else {
            return Self::missing(LogicalSwitchPort::TABLE_NAME, name, if_exists);
        };
        match self.switch_of(id) {
            Some(ls) => self.mutate(ls, LogicalSwitch::PORTS.delete([id])),
            None => {
                self.push(ovsdb::typed::delete(LogicalSwitchPort::ROW_UUID.eq(id)));
            }
        }
        self.deleted.insert(id.uuid());
        self.created.retain(|_, uuid| *uuid != id.uuid());
        Ok(())
    }

    fn port(&self, name: &str) -> Result<RowId<LogicalSwitchPort>, NbError> {
        self.require::<LogicalSwitchPort>(name)
    }

    /// `lsp-set-addresses PORT [ADDRESS]...` (e.g. `"00:00:00:00:00:01 10.0.0.2"`,
    /// `router`, `unknown`; a static address keeps dynamic allocation off).
    pub fn lsp_set_addresses<S: Into<String>>(
        &mut self,
        name: &str,
        addresses: impl IntoIterator<Item = S>,
    ) -> Result<(), NbError> {
        let id = self.port(name)?;
        let set: BTreeSet<String> = addresses.into_iter().map(Into::into).collect();
        self.set(id, LogicalSwitchPort::ADDRESSES, set);
        Ok(())
    }

    /// `lsp-set-port-security PORT [ADDRESS]...`.
    pub fn lsp_set_port_security<S: Into<String>>(
        &mut self,
        name: &str,
        addresses: impl IntoIterator<Item = S>,
    ) -> Result<(), NbError> {
        let id = self.port(name)?;
        let set: BTreeSet<String> = addresses.into_iter().map(Into::into).collect();
        self.set(id, LogicalSwitchPort::PORT_SECURITY, set);
        Ok(())
    }

    /// `lsp-set-type PORT TYPE` (`""`, `router`, `localnet`, `localport`, `virtual`, ...).
    pub fn lsp_set_type(&mut self, name: &str, port_type: &str) -> Result<(), NbError> {
        let id = self.port(name)?;
        self.set(id, LogicalSwitchPort::TYPE, port_type.to_string());
        Ok(())
    }

    /// `lsp-set-options PORT KEY=VALUE...`: replaces all options.
    pub fn lsp_set_options(
        &mut self,
        name: &str,
        options: BTreeMap<String, String>,
    ) -> Result<(), NbError> {
        let id = self.port(name)?;
        self.set(id, LogicalSwitchPort::OPTIONS, options);
        Ok(())
    }

    /// Sets `external_ids` keys of a port, keeping the others.
    pub fn lsp_set_external_ids(
        &mut self,
        name: &str,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), NbError> {
        let id = self.port(name)?;
        self.set_keys(id, LogicalSwitchPort::EXTERNAL_IDS, pairs);
        Ok(())
    }

    /// `lsp-set-dhcpv4-options PORT UUID` (None clears).
    pub fn lsp_set_dhcpv4_options(
        &mut self,
        name: &str,
        options: Option<RowId<crate::DhcpOptions>>,
    ) -> Result<(), NbError> {
        let id = self.port(name)?;
        self.set(id, LogicalSwitchPort::DHCPV4_OPTIONS, options);
        Ok(())
    }

    /// `mirror-add NAME TYPE INDEX FILTER SINK`: a port mirror (`gre`/`erspan`
    /// tunnel to `sink`, `index` is the tunnel key / ERSPAN index).
    pub fn mirror_add(
        &mut self,
        name: &str,
        mirror_type: MirrorType,
        filter: MirrorFilter,
        sink: &str,
        index: i64,
    ) -> Result<RowId<Mirror>, NbError> {
        let may_exist = self.take_may_exist();
        if let Some(id) = self.lookup::<Mirror>(name)? {
            Self::exists(Mirror::TABLE_NAME, name, may_exist)?;
            return Ok(id);
        }
        let row = Mirror {
            name: name.to_string(),
            r#type: mirror_type,
            filter,
            sink: sink.to_string(),
            index,
            ..Default::default()
        };
        Ok(self.insert_named(name, &row))
    }

    /// `lsp-attach-mirror PORT MIRROR`.
    pub fn lsp_attach_mirror(&mut self, port: &str, mirror: &str) -> Result<(), NbError> {
        let (port, mirror) = (self.port(port)?, self.require::<Mirror>(mirror)?);
        self.mutate(port, LogicalSwitchPort::MIRROR_RULES.insert([mirror]));
        Ok(())
    }

    /// `mirror-del NAME`.
    pub fn mirror_del(&mut self, name: &str) -> Result<(), NbError> {
        let if_exists = self.take_if_exists();
        match self.lookup::<Mirror>(name)? {
            Some(id) => {
                self.delete_row(id);
                Ok(())
            }
            None => Self::missing(Mirror::TABLE_NAME, name, if_exists),
        }
    }
}
