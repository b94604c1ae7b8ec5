//! Reading the invocation: `CNI_*` variables and stdin.

use std::io::Read;
use std::path::PathBuf;

use crate::args::CniArgs;
use crate::error::{CniError, ErrorCode};
use crate::exec::split_path;

/// The operation requested by `CNI_COMMAND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Command {
    /// Attach.
    Add,
    /// Detach.
    Del,
    /// Verify (0.4.0+).
    Check,
    /// Readiness (1.1.0+).
    Status,
    /// Garbage collection (1.1.0+).
    Gc,
    /// Report supported versions.
    Version,
}

impl Command {
    /// The `CNI_COMMAND` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Status => "STATUS",
            Command::Gc => "GC",
            Command::Version => "VERSION",
        }
    }

    /// Parses a `CNI_COMMAND` value.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Command::Add,
            Command::Del,
            Command::Check,
            Command::Status,
            Command::Gc,
            Command::Version,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    /// Variables that must be non-empty for this command (as the reference `skel`, which
    /// also wants `CNI_PATH` for everything but VERSION).
    fn required(self) -> &'static [&'static str] {
        match self {
            Command::Add | Command::Check => {
                &["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"]
            }
            Command::Del => &["CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"],
            Command::Gc | Command::Status => &["CNI_PATH"],
            Command::Version => &[],
        }
    }
}

/// One invocation's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdArgs {
    /// `CNI_COMMAND`.
    pub command: Command,
    /// `CNI_CONTAINERID` (may be empty for STATUS, GC, VERSION).
    pub container_id: String,
    /// `CNI_NETNS`, if set.
    pub netns: Option<PathBuf>,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS`, parsed.
    pub args: CniArgs,
    /// `CNI_PATH`, split.
    pub path: Vec<PathBuf>,
    /// The raw configuration from stdin (empty for VERSION).
    pub stdin: Vec<u8>,
}

impl CmdArgs {
    /// Reads the parameters through `lookup` (normally `std::env::var`) and stdin.
    /// Missing variables give error 4 naming them; a stdin read failure gives error 5.
    pub fn from_env(
        lookup: impl Fn(&str) -> Option<String>,
        stdin: &mut dyn Read,
    ) -> Result<Self, CniError> {
        let get = |name: &str| lookup(name).unwrap_or_default();
        let raw_command = get("CNI_COMMAND");
        let command = match Command::parse(&raw_command) {
            Some(c) => c,
            None if raw_command.is_empty() => return Err(missing(&["CNI_COMMAND"])),
            None => {
                return Err(CniError::new(
                    ErrorCode::InvalidEnvironmentVariables,
                    format!("unknown CNI_COMMAND: {raw_command}"),
                ))
            }
        };
        let absent: Vec<&str> = command
            .required()
            .iter()
            .copied()
            .filter(|name| get(name).is_empty())
            .collect();
        if !absent.is_empty() {
            return Err(missing(&absent));
        }
        let args = CniArgs::parse(&get("CNI_ARGS")).map_err(|e| e.to_cni_error())?;
        let mut data = Vec::new();
        if command != Command::Version {
            stdin.read_to_end(&mut data).map_err(|e| {
                CniError::new(ErrorCode::IoFailure, "error reading from stdin")
                    .with_details(e.to_string())
            })?;
        }
        let netns = Some(get("CNI_NETNS"))
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        Ok(CmdArgs {
            command,
            container_id: get("CNI_CONTAINERID"),
            netns,
            ifname: get("CNI_IFNAME"),
            args,
            path: split_path(&get("CNI_PATH")),
            stdin: data,
        })
    }

    /// The `CNI_*` variables describing this invocation, for a plugin delegated to.
    pub fn to_env(&self, command: Command) -> Vec<(String, String)> {
        let mut env = vec![
            ("CNI_COMMAND".to_owned(), command.as_str().to_owned()),
            ("CNI_CONTAINERID".to_owned(), self.container_id.clone()),
            ("CNI_IFNAME".to_owned(), self.ifname.clone()),
            ("CNI_ARGS".to_owned(), self.args.to_string()),
        ];
        if let Some(netns) = &self.netns {
            env.push(("CNI_NETNS".to_owned(), netns.display().to_string()));
        }
        if let Ok(path) = std::env::join_paths(&self.path) {
            env.push(("CNI_PATH".to_owned(), path.to_string_lossy().into_owned()));
        }
        env
    }
}

fn missing(names: &[&str]) -> CniError {
    CniError::new(
        ErrorCode::InvalidEnvironmentVariables,
        format!("required env variables [{}] missing", names.join(",")),
    )
}
