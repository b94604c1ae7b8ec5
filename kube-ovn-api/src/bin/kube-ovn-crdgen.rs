//! Prints `dist/crds.yaml`: `cargo run -p kube-ovn-api --bin kube-ovn-crdgen > dist/crds.yaml`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    print!("{}", kube_ovn_api::crd::crds_yaml()?);
    Ok(())
}
