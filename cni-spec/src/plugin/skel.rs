//! Dispatch: validate the invocation as the reference `skel` does, call the plugin, print.

use std::io::{Read, Write};
use std::process::ExitCode;

use serde::Deserialize;

use super::env::{CmdArgs, Command};
use super::Plugin;
use crate::config::PluginConfig;
use crate::error::{CniError, ErrorCode};
use crate::validate::{validate_container_id, validate_interface_name, validate_network_name};
use crate::version::{CniVersion, VersionInfo};

/// Runs `plugin` on this process's environment, stdin and stdout.
pub fn run(plugin: &dyn Plugin) -> ExitCode {
    let code = run_with(
        plugin,
        |name| std::env::var(name).ok(),
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
    );
    ExitCode::from(code)
}

/// Runs `plugin` on the given environment, stdin and stdout; returns the exit status
/// (0 on success, 1 after printing an error object).
pub fn run_with(
    plugin: &dyn Plugin,
    lookup: impl Fn(&str) -> Option<String>,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
) -> u8 {
    let answer = CmdArgs::from_env(lookup, stdin).and_then(|args| dispatch(plugin, &args));
    let (text, code) = match answer {
        Ok(Some(text)) => (text, 0),
        Ok(None) => return 0,
        Err(err) => {
            tracing::debug!(%err, "plugin failed");
            (err.to_json(), 1)
        }
    };
    if writeln!(stdout, "{text}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return 1;
    }
    code
}

/// The output for one invocation (`None` prints nothing).
fn dispatch(plugin: &dyn Plugin, args: &CmdArgs) -> Result<Option<String>, CniError> {
    let supported = plugin.supported_versions();
    if args.command == Command::Version {
        let info = VersionInfo::new(&supported);
        return Ok(Some(serde_json::to_string(&info).expect("serializes")));
    }
    // The reference's order: CHECK/STATUS/GC first check the version floor; then the
    // configuration (6, 7), the container ID and interface name (3, 4), and last whether
    // the plugin supports the configuration's version (1).
    let probed = decode_version(&args.stdin);
    let tag = |e: CniError| match &probed {
        Ok(v) => e.with_version(v.clone()),
        Err(_) => e,
    };
    if matches!(args.command, Command::Check | Command::Status | Command::Gc) {
        let version = probed.clone()?;
        check_floor(args.command, &version).map_err(tag)?;
    }
    let config = decode_config(&args.stdin).map_err(tag)?;
    if matches!(args.command, Command::Add | Command::Del | Command::Check) {
        validate_container_id(&args.container_id).map_err(|e| tag(e.to_cni_error()))?;
        validate_interface_name(&args.ifname).map_err(|e| tag(e.to_cni_error()))?;
    }
    let config_version = check_supported(&config.cni_version, &supported).map_err(tag)?;
    let output = match args.command {
        Command::Add => {
            let result = plugin.add(args, &config).map_err(tag)?;
            let converted = result
                .convert_to(config_version)
                .map_err(|e| tag(CniError::new(ErrorCode::INTERNAL, e.to_string())))?;
            Some(converted.to_json())
        }
        Command::Del => plugin.del(args, &config).map(|()| None).map_err(tag)?,
        Command::Check => plugin.check(args, &config).map(|()| None).map_err(tag)?,
        Command::Status => plugin.status(args, &config).map(|()| None).map_err(tag)?,
        Command::Gc => plugin.gc(args, &config).map(|()| None).map_err(tag)?,
        Command::Version => unreachable!("answered above"),
    };
    Ok(output)
}

/// Reads only `cniVersion`, as the reference's version decoder: broken JSON is error 6.
fn decode_version(stdin: &[u8]) -> Result<String, CniError> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "cniVersion", default)]
        cni_version: String,
    }
    serde_json::from_slice::<Probe>(stdin)
        .map(|p| p.cni_version)
        .map_err(|e| {
            CniError::new(
                ErrorCode::DecodingFailure,
                format!("decoding version from network config: {e}"),
            )
        })
}

/// CHECK needs 0.4.0, STATUS and GC 1.1.0 (error 1). Unknown versions are left to
/// [`check_supported`].
fn check_floor(command: Command, version: &str) -> Result<(), CniError> {
    let floor = match command {
        Command::Check => CniVersion::V0_4_0,
        Command::Status | Command::Gc => CniVersion::V1_1_0,
        _ => return Ok(()),
    };
    match CniVersion::parse(version) {
        Ok(v) if v < floor => Err(CniError::new(
            ErrorCode::IncompatibleCniVersion,
            format!("config version does not allow {}", command.as_str()),
        )),
        _ => Ok(()),
    }
}

/// The configuration's version must be one the plugin lists, exactly (error 1).
fn check_supported(version: &str, supported: &[CniVersion]) -> Result<CniVersion, CniError> {
    match CniVersion::parse(version) {
        Ok(v) if supported.contains(&v) => Ok(v),
        _ => {
            let list: Vec<String> = supported.iter().map(|v| format!("\"{v}\"")).collect();
            Err(CniError::new(
                ErrorCode::IncompatibleCniVersion,
                "incompatible CNI versions",
            )
            .with_details(format!(
                "config is \"{version}\", plugin supports [{}]",
                list.join(" ")
            )))
        }
    }
}

/// Decodes the whole configuration and checks the network name (error 7).
fn decode_config(stdin: &[u8]) -> Result<PluginConfig, CniError> {
    let config = PluginConfig::from_slice(stdin).map_err(|e| {
        CniError::new(
            ErrorCode::DecodingFailure,
            format!("error unmarshalling network config: {e}"),
        )
    })?;
    validate_network_name(&config.name).map_err(|e| e.to_cni_error())?;
    Ok(config)
}
