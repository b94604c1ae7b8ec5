//! IPAM benchmarks against the goals and against Debian's
//! `host-local` CNI IPAM plugin.
//!
//! * `ipam/alloc_release/*`: one automatic allocation (with a generated
//!   MAC) plus its release on 10.0.0.0/8, fd00::/104 and both (dual stack).
//!   Kube-OVN's published Go figures for the same subnets are about 18.8 µs
//!   per IPv4 allocation and 18.4 µs per release.
//! * `ipam/static_release/*`: allocation of a requested (pseudo-random)
//!   address plus its release.
//! * Each of those twice: by subnet name (`Ipam::allocate`), and through a
//!   `SubnetHandle` resolved once (`.../handle`), as a worker busy with one
//!   subnet would call it.
//! * `ipam/rebuild_100k`: rebuilding a /8 from 100,000 existing allocations.
//! * A one-shot report printed first: heap bytes held by a /8 and a /24
//!   subnet after the same allocations (counting global allocator), and the
//!   cost of 10,000 allocations through `/usr/lib/cni/host-local` (measured
//!   over 1,000 real ADD calls, extrapolated) against this crate, as a ratio.
//!
//! Run: `cargo bench -p kube-ovn-benches --bench ipam`.

use std::hint::black_box;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use ipam::{AllocationRequest, ExistingAllocation, Ipam, Mac, MacRequest, Owner, SubnetSpec};

/// A global allocator that counts live heap bytes, to show that memory
/// follows allocations, not subnet size.
mod counting {
    #![allow(unsafe_code)]

    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicIsize, Ordering};

    pub struct Counting;

    static LIVE: AtomicIsize = AtomicIsize::new(0);

    // SAFETY: every call forwards to `System` with the caller's arguments
    // unchanged; the counter only observes sizes.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            // SAFETY: `ptr` came from `System.alloc` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
            // SAFETY: same contract as the caller's.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// Live heap bytes of the whole process.
    pub fn live_bytes() -> isize {
        LIVE.load(Ordering::Relaxed)
    }
}

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

fn ipam_with(cidr: &str) -> Ipam {
    let ipam = Ipam::new();
    ipam.add_or_update_subnet("s", &SubnetSpec::new(cidr))
        .expect("valid subnet");
    ipam
}

fn owners(n: usize) -> Vec<Owner> {
    (0..n)
        .map(|i| Owner::new(format!("default/pod-{i}"), "ovn"))
        .collect()
}

fn bench_alloc_release(c: &mut Criterion) {
    let mut group = c.benchmark_group("ipam/alloc_release");
    let no_mac = AllocationRequest {
        mac: MacRequest::None,
        ..AllocationRequest::default()
    };
    let cases = [
        ("v4_slash8", "10.0.0.0/8", AllocationRequest::next_free()),
        ("v6_slash104", "fd00::/104", AllocationRequest::next_free()),
        (
            "dual",
            "10.0.0.0/8,fd00::/104",
            AllocationRequest::next_free(),
        ),
        ("v4_slash8_no_mac", "10.0.0.0/8", no_mac),
    ];
    for (name, cidr, req) in cases {
        let ipam = ipam_with(cidr);
        let owners = owners(1024);
        let mut i = 0usize;
        group.bench_function(name, |b| {
            b.iter(|| {
                let owner = &owners[i % owners.len()];
                i += 1;
                black_box(ipam.allocate("s", owner, &req).expect("allocate"));
                black_box(ipam.release("s", owner).expect("release"));
            })
        });
        let subnet = ipam.subnet("s").expect("subnet");
        group.bench_function(format!("{name}/handle"), |b| {
            b.iter(|| {
                let owner = &owners[i % owners.len()];
                i += 1;
                black_box(subnet.allocate(owner, &req).expect("allocate"));
                black_box(subnet.release(owner).expect("release"));
            })
        });
    }
    group.finish();
}

fn bench_static(c: &mut Criterion) {
    let mut group = c.benchmark_group("ipam/static_release");
    for (name, cidr, base, span) in [
        (
            "v4_slash8",
            "10.0.0.0/8",
            u128::from(0x0a00_0000u32),
            1u128 << 24,
        ),
        ("v6_slash104", "fd00::/104", 0xfd00u128 << 112, 1u128 << 24),
    ] {
        let ipam = ipam_with(cidr);
        let owners = owners(1024);
        // A fixed LCG walk over the subnet: scattered addresses fragment
        // the free sets, the worst case for interval sets.
        let requests: Vec<AllocationRequest> = (0..4096u128)
            .map(|k| {
                let offset = 2 + (k * 2_654_435_761) % (span - 4);
                let addr: IpAddr = if base >> 32 == 0 {
                    IpAddr::V4(Ipv4Addr::from((base + offset) as u32))
                } else {
                    IpAddr::V6((base + offset).into())
                };
                AllocationRequest::with_addresses([addr])
            })
            .collect();
        let mut i = 0usize;
        group.bench_function(name, |b| {
            b.iter(|| {
                let owner = &owners[i % owners.len()];
                let req = &requests[i % requests.len()];
                i += 1;
                black_box(ipam.allocate("s", owner, req).expect("allocate"));
                black_box(ipam.release("s", owner).expect("release"));
            })
        });
        let subnet = ipam.subnet("s").expect("subnet");
        group.bench_function(format!("{name}/handle"), |b| {
            b.iter(|| {
                let owner = &owners[i % owners.len()];
                let req = &requests[i % requests.len()];
                i += 1;
                black_box(subnet.allocate(owner, req).expect("allocate"));
                black_box(subnet.release(owner).expect("release"));
            })
        });
    }
    group.finish();
}

fn existing_allocations(n: u32) -> Vec<ExistingAllocation> {
    (0..n)
        .map(|i| ExistingAllocation {
            owner: Owner::new(format!("ns-{}/pod-{i}", i % 100), "ovn"),
            // Every third address, so the free space is fragmented.
            addresses: vec![IpAddr::V4(Ipv4Addr::from(0x0a00_0002 + i * 3))],
            mac: Some(Mac([
                0x0a,
                0x58,
                (i >> 24) as u8,
                (i >> 16) as u8,
                (i >> 8) as u8,
                i as u8,
            ])),
        })
        .collect()
}

fn bench_rebuild(c: &mut Criterion) {
    let mut group = c.benchmark_group("ipam");
    group.sample_size(10);
    let entries = existing_allocations(100_000);
    let ipam = ipam_with("10.0.0.0/8");
    group.bench_function("rebuild_100k", |b| {
        b.iter_batched(
            || entries.clone(),
            |entries| {
                let report = ipam.rebuild("s", entries).expect("rebuild");
                assert_eq!(report.loaded, 100_000);
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// Heap bytes held by one subnet after `n` allocations, half released.
fn subnet_heap_bytes(cidr: &str, n: usize) -> isize {
    let before = counting::live_bytes();
    let ipam = ipam_with(cidr);
    let owners = owners(n);
    for owner in &owners {
        ipam.allocate("s", owner, &AllocationRequest::next_free())
            .expect("allocate");
    }
    for owner in owners.iter().step_by(2) {
        ipam.release("s", owner).expect("release");
    }
    let held = counting::live_bytes() - before;
    // `owners` (the caller's copies) are counted too; subtract them.
    let owner_bytes: isize = owners
        .iter()
        .map(|o| (o.pod.len() + o.nic.len() + 2 * 16 + std::mem::size_of::<Owner>()) as isize)
        .sum();
    drop(ipam);
    held - owner_bytes
}

fn memory_report(n: usize) {
    let slash8 = subnet_heap_bytes("10.0.0.0/8", n);
    let slash24 = subnet_heap_bytes("10.0.0.0/24", n);
    let v6 = subnet_heap_bytes("fd00::/64", n);
    println!(
        "ipam memory after {n} allocations (every other one released): \
         10.0.0.0/8 {slash8} B, 10.0.0.0/24 {slash24} B, fd00::/64 {v6} B"
    );
}

/// Seconds per `host-local` ADD, over `calls` real invocations.
fn host_local_per_call(calls: usize) -> Option<Duration> {
    let plugin = "/usr/lib/cni/host-local";
    if !std::path::Path::new(plugin).exists() {
        println!("host-local comparison skipped: {plugin} not installed");
        return None;
    }
    let data = tempfile::tempdir().expect("temp dir");
    let config = serde_json::json!({
        "cniVersion": "0.4.0", "name": "bench", "type": "host-local",
        "ipam": {"type": "host-local", "subnet": "10.0.0.0/8",
                 "dataDir": data.path().to_str().expect("utf-8 temp path")}
    })
    .to_string();
    let start = Instant::now();
    for i in 0..calls {
        // IPAM-only ADD never enters the netns; CNI_NETNS only has to be set.
        let mut child = Command::new(plugin)
            .env("CNI_COMMAND", "ADD")
            .env("CNI_CONTAINERID", format!("bench-{i}"))
            .env("CNI_NETNS", "/var/run/netns/unused")
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn host-local");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(config.as_bytes())
            .expect("write config");
        let out = child.wait_with_output().expect("host-local output");
        assert!(out.status.success(), "host-local ADD failed: {out:?}");
    }
    Some(start.elapsed() / calls as u32)
}

fn host_local_comparison(calls: usize) {
    const TOTAL: u32 = 10_000;
    let Some(per_call) = host_local_per_call(calls) else {
        return;
    };
    let ipam = ipam_with("10.0.0.0/8");
    let owners = owners(TOTAL as usize);
    let start = Instant::now();
    for owner in &owners {
        black_box(
            ipam.allocate("s", owner, &AllocationRequest::next_free())
                .expect("allocate"),
        );
    }
    let ours = start.elapsed();
    let theirs = per_call * TOTAL;
    println!(
        "10,000 allocations: host-local {:.2} s (extrapolated from {calls} calls, {:.0} µs/call), \
         ipam {:.3} ms; ratio {:.0}x",
        theirs.as_secs_f64(),
        per_call.as_secs_f64() * 1e6,
        ours.as_secs_f64() * 1e3,
        theirs.as_secs_f64() / ours.as_secs_f64()
    );
}

fn main() {
    // Under `cargo bench` criterion gets `--bench`; otherwise (cargo test
    // --benches) keep the one-shot report small.
    let full = std::env::args().any(|a| a == "--bench");
    memory_report(if full { 200 } else { 50 });
    host_local_comparison(if full { 1000 } else { 20 });
    let mut c = Criterion::default().configure_from_args();
    bench_alloc_release(&mut c);
    bench_static(&mut c);
    bench_rebuild(&mut c);
    c.final_summary();
}
