//! Kube-OVN's own Deployment args, Go-style flag forms, defaults, and bad values.

use std::net::IpAddr;

use super::*;

const DEPLOYMENT_ARGS: &str = include_str!("../../tests/data/kube-ovn-controller-args.txt");

/// What start-controller.sh runs: the program, the two NB/SB flags it prepends, then
/// the Deployment's args.
fn deployment_command_line(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "kube-ovn-controller".to_string(),
        "--ovn-nb-addr=tcp:[192.168.0.2]:6641,tcp:[192.168.0.3]:6641".to_string(),
        "--ovn-sb-addr=tcp:[192.168.0.2]:6642,tcp:[192.168.0.3]:6642".to_string(),
    ];
    args.extend(
        DEPLOYMENT_ARGS
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from),
    );
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn parse(args: &[&str]) -> Result<ControllerConfig, ConfigError> {
    let mut all = vec![
        "kube-ovn-controller",
        "--ovn-nb-addr=unix:/run/ovn/ovnnb_db.sock",
    ];
    all.extend_from_slice(args);
    ControllerConfig::parse_from(all)
}

#[test]
fn kube_ovn_deployment_args_parse_with_unimplemented_flags_ignored() {
    let config = ControllerConfig::parse_from(deployment_command_line(&[])).unwrap();
    assert_eq!(config.ovn_nb_addr.len(), 2);
    assert_eq!(config.ovn_nb_addr[0].to_string(), "tcp:192.168.0.2:6641");
    assert_eq!(config.default_subnet.name, "ovn-default");
    assert_eq!(
        config.default_subnet.cidr.v4,
        Some("10.16.0.0/16".parse().unwrap())
    );
    assert_eq!(
        config.default_subnet.gateway.v4,
        Some("10.16.0.1".parse().unwrap())
    );
    // an empty --default-exclude-ips means "the gateway", as in Kube-OVN
    assert_eq!(
        config.default_subnet.exclude_ips,
        vec![ExcludeIp::Addr("10.16.0.1".parse().unwrap())]
    );
    assert_eq!(
        config.node_switch.gateway.v4,
        Some("100.64.0.1".parse().unwrap())
    );
    assert!(config.enable_lb && config.enable_np && !config.enable_ovn_lb_prefer_local);
    assert_eq!(config.gc_interval, Some(Duration::from_secs(360)));
    let ignored: Vec<&str> = config.ignored.iter().map(|f| f.name).collect();
    for name in [
        "network-type",
        "logtostderr",
        "log_file",
        "image",
        "ovsdb-con-timeout",
    ] {
        assert!(
            ignored.contains(&name),
            "{name} not reported as ignored: {ignored:?}"
        );
    }
    let log_file = config
        .ignored
        .iter()
        .find(|f| f.name == "log_file")
        .unwrap();
    assert_eq!(log_file.value, "/var/log/kube-ovn/kube-ovn-controller.log");
}

#[test]
fn dual_stack_deployment_args_give_both_families() {
    let dual: Vec<String> = deployment_command_line(&[])
        .into_iter()
        .map(|a| match a.as_str() {
            "--default-cidr=10.16.0.0/16" => "--default-cidr=10.16.0.0/16,fd00:10:16::/112".into(),
            "--default-gateway=10.16.0.1" => "--default-gateway=10.16.0.1,fd00:10:16::1".into(),
            "--node-switch-cidr=100.64.0.0/16" => {
                "--node-switch-cidr=100.64.0.0/16,fd00:100:64::/112".into()
            }
            "--service-cluster-ip-range=10.96.0.0/12" => {
                "--service-cluster-ip-range=10.96.0.0/12,fd00:10:96::/108".into()
            }
            _ => a,
        })
        .collect();
    let config = ControllerConfig::parse_from(dual).unwrap();
    assert_eq!(
        config.node_switch.gateway.addrs(),
        vec![
            "100.64.0.1".parse::<IpAddr>().unwrap(),
            "fd00:100:64::1".parse().unwrap()
        ]
    );
    assert_eq!(config.default_subnet.exclude_ips.len(), 2);
}

#[test]
fn defaults_are_kube_ovns() {
    let config = parse(&[]).unwrap();
    assert_eq!(config.default_subnet.name, "ovn-default");
    assert_eq!(
        config.default_subnet.cidr.nets(),
        vec!["10.16.0.0/16".parse::<IpNet>().unwrap()]
    );
    assert_eq!(config.cluster_router, "ovn-cluster");
    assert_eq!(config.node_switch.name, "join");
    assert_eq!(
        config.node_switch.cidr.nets(),
        vec!["100.64.0.0/16".parse::<IpNet>().unwrap()]
    );
    assert_eq!(
        config.service_cluster_ip_range.nets(),
        vec!["10.96.0.0/12".parse::<IpNet>().unwrap()]
    );
    assert_eq!(config.worker_num, 3);
    assert!(config.enable_lb && config.enable_np);
    assert_eq!(
        config.load_balancers.sctp_session,
        "cluster-sctp-session-loadbalancer"
    );
    assert!(config.ignored.is_empty());
}

#[test]
fn go_style_flag_forms_all_work() {
    let config = parse(&[
        "--default-cidr",
        "10.20.0.0/16",
        "--worker-num=5",
        "--enable-lb=false",
    ])
    .unwrap();
    assert_eq!(
        config.default_subnet.cidr.v4,
        Some("10.20.0.0/16".parse().unwrap())
    );
    assert_eq!(config.worker_num, 5);
    assert!(!config.enable_lb);
    // bare boolean, and strconv.ParseBool spellings
    assert!(
        parse(&["--enable-lb=false", "--enable-lb"])
            .unwrap()
            .enable_lb
    );
    assert!(!parse(&["--enable-np=F"]).unwrap().enable_np);
    assert!(
        parse(&["--enable-ovn-lb-prefer-local=TRUE"])
            .unwrap()
            .enable_ovn_lb_prefer_local
    );
    // last one wins, as with pflag
    assert_eq!(
        parse(&["--worker-num=2", "--worker-num=7"])
            .unwrap()
            .worker_num,
        7
    );
    // ignored flags in both forms, bare ignored boolean
    let config = parse(&["--v", "3", "--enable-metrics", "--network-type=vlan"]).unwrap();
    let got: Vec<(&str, &str)> = config
        .ignored
        .iter()
        .map(|f| (f.name, f.value.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("network-type", "vlan"),
            ("enable-metrics", "true"),
            ("v", "3")
        ]
    );
}

#[test]
fn a_boolean_takes_its_value_only_after_equals_as_pflag_does() {
    // pflag reads `--enable-lb false` as a bare `--enable-lb` plus a stray argument
    assert!(matches!(
        parse(&["--enable-lb", "false"]),
        Err(ConfigError::Usage(_))
    ));
    assert!(matches!(
        parse(&["--enable-lb=maybe"]),
        Err(ConfigError::Usage(e)) if e.to_string().contains("maybe")
    ));
}

#[test]
fn unknown_flags_are_errors_naming_the_flag() {
    match parse(&["--enable-everything=true"]) {
        Err(ConfigError::UnknownFlag { flag }) => assert_eq!(flag, "--enable-everything"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_addresses_name_their_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["--default-cidr=10.16.0.0/33"], "default-cidr"),
        (
            &["--default-cidr=10.16.0.0/16,10.17.0.0/16"],
            "default-cidr",
        ),
        (&["--default-cidr="], "default-cidr"),
        (&["--default-gateway=10.17.0.1"], "default-gateway"),
        (&["--default-gateway=10.16.0.1,fd00::1"], "default-gateway"),
        (
            &["--default-exclude-ips=10.16.0.9..10.16.0.1"],
            "default-exclude-ips",
        ),
        (&["--node-switch-cidr=100.64.0"], "node-switch-cidr"),
        (&["--node-switch-gateway=10.16.0.1"], "node-switch-gateway"),
        (
            &["--service-cluster-ip-range=fd00::/300"],
            "service-cluster-ip-range",
        ),
        (
            &["--node-local-dns-ip=169.254.20.10,nodelocal"],
            "node-local-dns-ip",
        ),
        (
            &["--skip-conntrack-dst-cidrs=10.0.0.0/8,10.1.0.0"],
            "skip-conntrack-dst-cidrs",
        ),
        (&["--ovn-sb-addr=ssl:[10.0.0.1]:6642"], "ovn-sb-addr"),
        (&["--ovn-sb-addr=tcp:10.0.0.1"], "ovn-sb-addr"),
        (&["--worker-num=0"], "worker-num"),
        (&["--default-ls="], "default-ls"),
    ];
    for (args, flag) in cases {
        match parse(args) {
            Err(ConfigError::InvalidFlag { flag: f, .. })
            | Err(ConfigError::MissingFlag { flag: f }) => {
                assert_eq!(f, *flag, "{args:?}")
            }
            other => panic!("{args:?} gave {other:?}"),
        }
    }
    let missing_nb = ControllerConfig::parse_from(["kube-ovn-controller"]);
    assert!(matches!(
        missing_nb,
        Err(ConfigError::MissingFlag {
            flag: "ovn-nb-addr"
        })
    ));
}

#[test]
fn overlapping_system_cidrs_are_rejected_naming_both_flags() {
    match parse(&["--default-cidr=10.96.0.0/16"]) {
        Err(ConfigError::OverlappingCidrs {
            flag, other_flag, ..
        }) => {
            assert_eq!(
                (flag, other_flag),
                ("default-cidr", "service-cluster-ip-range")
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn host_bits_are_normalized_and_the_gateway_follows() {
    let config = parse(&["--default-cidr=10.16.3.4/16"]).unwrap();
    assert_eq!(
        config.default_subnet.cidr.v4,
        Some("10.16.0.0/16".parse().unwrap())
    );
    assert_eq!(
        config.default_subnet.gateway.v4,
        Some("10.16.0.1".parse().unwrap())
    );
}
