//! Prints `dist/crds.yaml`: `cargo run -p kube-ovn --bin kube-ovn-crdgen > dist/crds.yaml`.

fn main() -> anyhow::Result<()> {
    print!("{}", kube_ovn::crd::crds_yaml()?);
    Ok(())
}
