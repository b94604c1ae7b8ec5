//! Per-namespace sysctls. `/proc/sys/net` shows the network namespace of
//! the thread that opens the file, so these are written from the worker
//! thread after it entered the pod's namespace.

use std::path::PathBuf;

use crate::error::{Error, Step};

/// What Kube-OVN's CNI sets before configuring a pod (`cmd/cni/sysctl.go`):
/// IPv6 on, router advertisements ignored (OVN hands out routes itself).
/// `IFNAME` stands for the pod interface.
pub const POD_SYSCTLS: &[(&str, &str)] = &[
    ("net.ipv6.conf.all.disable_ipv6", "0"),
    ("net.ipv6.conf.default.disable_ipv6", "0"),
    ("net.ipv6.conf.IFNAME.disable_ipv6", "0"),
    ("net.ipv6.conf.all.accept_ra", "0"),
    ("net.ipv6.conf.default.accept_ra", "0"),
    ("net.ipv6.conf.IFNAME.accept_ra", "0"),
];

/// `net.ipv6.conf.IFNAME.accept_ra` → `/proc/sys/net/ipv6/conf/eth0/accept_ra`.
/// The interface name is substituted after the dots become slashes, so a
/// name like `eth0.100` stays one path component.
pub(crate) fn path(name: &str, ifname: &str) -> PathBuf {
    let mut path = PathBuf::from("/proc/sys");
    for part in name.split('.') {
        path.push(if part == "IFNAME" { ifname } else { part });
    }
    path
}

pub(crate) fn write(name: &str, value: &str, ifname: &str, namespace: &str) -> Result<(), Error> {
    let file = path(name, ifname);
    tracing::trace!(path = %file.display(), value, "sysctl");
    std::fs::write(&file, value).map_err(|e| {
        Error::step(
            Step::Sysctl,
            format!("{ifname} ({})", file.display()),
            namespace,
            e,
        )
    })
}

/// `addr_gen_mode` 1 (none): the interface gets no IPv6 link-local address when it
/// comes up; written before it does.
pub const NO_LINK_LOCAL: (&str, &str) = ("net.ipv6.conf.IFNAME.addr_gen_mode", "1");

/// Apply [`POD_SYSCTLS`] (when the kernel has IPv6, or must have it), [`NO_LINK_LOCAL`]
/// unless `link_local`, and the caller's extras.
pub(crate) fn apply(
    extra: &[(String, String)],
    ifname: &str,
    namespace: &str,
    needs_ipv6: bool,
    link_local: bool,
) -> Result<(), Error> {
    let has_ipv6 = std::path::Path::new("/proc/sys/net/ipv6").exists();
    if has_ipv6 || needs_ipv6 {
        for (name, value) in POD_SYSCTLS {
            write(name, value, ifname, namespace)?;
        }
        if !link_local {
            let (name, value) = NO_LINK_LOCAL;
            write(name, value, ifname, namespace)?;
        }
    }
    for (name, value) in extra {
        write(name, value, ifname, namespace)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn path_keeps_dotted_ifname_whole() {
        assert_eq!(
            super::path("net.ipv6.conf.IFNAME.accept_ra", "eth0.100"),
            std::path::PathBuf::from("/proc/sys/net/ipv6/conf/eth0.100/accept_ra")
        );
    }
}
