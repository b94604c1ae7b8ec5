#!/usr/bin/env python3
"""Generates embedded-apiserver/src/protobuf/generated.rs: `ToJson` impls
mapping k8s-pb's prost structs to the JSON the API server stores.

Field names come from k8s-openapi's serde code (so `cluster_ip` becomes
`clusterIP`, not `clusterIp`); the structs come from k8s-pb. Only the types
reachable from ROOTS are generated. The output is passed through rustfmt, so
it is byte for byte what `cargo fmt` keeps. Run from the workspace root:
    python3 scripts/gen-pb-json.py ~/.cargo/registry/src/*/k8s-pb-0.9.0 \
        ~/.cargo/registry/src/*/k8s-openapi-0.29.0/src/v1_35 [OUTFILE]
embedded-apiserver/tests/pb_generated_current.rs runs this into a temporary
file and fails when the checked-in file differs.
"""
import os, re, subprocess, sys

PB, OPENAPI = sys.argv[1], sys.argv[2]
ROOTS = [
    "api::core::v1::Namespace", "api::core::v1::ConfigMap", "api::core::v1::Secret",
    "api::core::v1::ServiceAccount", "api::core::v1::Service", "api::core::v1::Pod",
    "api::core::v1::Node", "api::core::v1::Endpoints", "api::core::v1::Event",
    "api::apps::v1::Deployment", "api::apps::v1::ReplicaSet", "api::apps::v1::DaemonSet",
    "api::apps::v1::StatefulSet", "api::discovery::v1::EndpointSlice",
    "api::networking::v1::NetworkPolicy", "api::coordination::v1::Lease",
    "apimachinery::pkg::apis::meta::v1::DeleteOptions",
    "apimachinery::pkg::apis::meta::v1::Status",
]
# Lists of the roots, for protobuf answers.
ROOTS += [r + "List" for r in ROOTS[:16]]
# Types whose JSON form is not their proto structure: written by hand.
SPECIAL = {
    "apimachinery::pkg::apis::meta::v1::Time", "apimachinery::pkg::apis::meta::v1::MicroTime",
    "apimachinery::pkg::api::resource::Quantity", "apimachinery::pkg::util::intstr::IntOrString",
    "apimachinery::pkg::runtime::RawExtension", "apimachinery::pkg::apis::meta::v1::FieldsV1",
}

# Go structs embedded in their parent: a nested message in proto, inlined
# fields in JSON.
INLINE = {"local_object_reference", "ephemeral_container_common", "handler", "volume_source"}
# JSON names of fields of types k8s-openapi has no file for.
OVERRIDES = {"downward_api": "downwardAPI", "scale_io": "scaleIO", "target_ww_ns": "targetWWNs",
             "pod_cid_rs": "podCIDRs"}

def split_top(s, sep=","):
    depth, out, cur = 0, [], ""
    for ch in s:
        if ch == "<": depth += 1
        if ch == ">": depth -= 1
        if ch == sep and depth == 0:
            out.append(cur); cur = ""
        else:
            cur += ch
    out.append(cur)
    return out

structs = {}  # "api::core::v1::Pod" -> [(rust, attr, type)]
for root, _, files in os.walk(os.path.join(PB, "src")):
    if "mod.rs" not in files: continue
    mod = os.path.relpath(root, os.path.join(PB, "src")).replace(os.sep, "::")
    text = open(os.path.join(root, "mod.rs")).read()
    for m in re.finditer(r"pub struct (\w+) \{(.*?)\n\}", text, re.S):
        body = re.sub(r"^\s*///.*$", "", m.group(2), flags=re.M)
        fields = []
        for f in re.finditer(r"#\[prost\(([^\]]*)\)\]\s*pub (r#)?(\w+):\s*", body):
            rest = body[f.end():]
            ty = split_top(rest)[0].strip()
            fields.append((f.group(3), f.group(1), re.sub(r"\s+", "", ty)))
        structs[mod + "::" + m.group(1)] = fields

def snake(name):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)).lower()

def json_names(path):
    mod, name = path.rsplit("::", 1)
    f = os.path.join(OPENAPI, mod.replace("::", "/"), snake(name) + ".rs")
    if not os.path.exists(f): return {}
    return {k.rstrip("_"): j for j, k in re.findall(r'"([^"]+)" => Field::Key_(\w+),', open(f).read())}

def resolve(cur_mod, ty):
    """The absolute path of a message type written relative to cur_mod."""
    parts = cur_mod.split("::")
    segs = ty.split("::")
    while segs and segs[0] == "super":
        parts = parts[:-1]; segs = segs[1:]
    return "::".join(parts + segs)

def inner(ty):
    m = re.match(r"(?:::core::option::Option|::prost::alloc::vec::Vec|::prost::alloc::boxed::Box)<(.*)>$", ty)
    return inner(m.group(1)) if m else ty

def camel(s):
    a = s.split("_"); return a[0] + "".join(w.title() for w in a[1:])

out, seen, queue = [], set(), list(ROOTS)
while queue:
    path = queue.pop()
    if path in seen or path in SPECIAL: continue
    seen.add(path)
    mod = path.rsplit("::", 1)[0]
    names = json_names(path)
    lines, back = [], []
    for rust, attr, ty in structs[path]:
        jname = names.get(rust, OVERRIDES.get(rust, camel(rust)))
        field = ("r#" if rust in ("type", "ref", "match", "continue") else "") + rust
        kind = attr.split(",")[0].strip()
        map_kind = re.match(r'btree_map = "string, (\w+)"', attr)
        if map_kind:
            value_kind = map_kind.group(1)
            if value_kind == "message":
                vt = split_top(ty[ty.index("<") + 1:-1])[1]
                queue.append(resolve(mod, inner(vt)))
                expr = f"self.{field}.to_json()"
            elif value_kind == "bytes":
                expr = f"bytes_map(&self.{field})"
            else:
                expr = f"self.{field}.to_json()"
        elif kind.startswith("bytes"):
            expr = f"bytes_json(self.{field}.as_deref())"
        else:
            if kind == "message":
                queue.append(resolve(mod, inner(ty)))
            expr = f"self.{field}.to_json()"
        if rust in INLINE:
            lines.append(f'        inline(&mut m, {expr});')
            src = "v"
        else:
            lines.append(f'        put(&mut m, "{jname}", {expr});')
            src = f'&v["{jname}"]'
        if map_kind and map_kind.group(1) == "bytes":
            back.append(f"            {field}: bytes_map_from({src}),")
        elif kind.startswith("bytes"):
            back.append(f"            {field}: bytes_from({src}),")
        else:
            back.append(f"            {field}: FromJson::from_json({src}),")
    pb_path = "k8s_pb::" + path
    out.append(f"impl ToJson for {pb_path} {{\n    fn to_json(&self) -> Value {{\n"
               f"        let mut m = Map::new();\n" + "\n".join(lines) +
               ("\n" if lines else "") + "        Value::Object(m)\n    }\n}\n"
               f"impl FromJson for {pb_path} {{\n    fn from_json(v: &Value) -> Self {{\n"
               + ("        let _ = v;\n" if not back else "")
               + f"        Self {{\n" + "\n".join(back) + ("\n" if back else "") + "        }\n    }\n}\n")

header = """// @generated by scripts/gen-pb-json.py from k8s-pb 0.9 and k8s-openapi 0.29
// (v1_35 field names). Do not edit by hand: regenerate.
//! `ToJson` and `FromJson` for the k8s-pb messages reachable from the
//! built-in kinds this server reads and writes in protobuf.
#![allow(clippy::all)]

use super::json::{IMPORTS};
use serde_json::{Map, Value};

"""
body = "\n".join(sorted(out))
used = [n for n in ("bytes_from", "bytes_json", "bytes_map", "bytes_map_from", "inline", "put")
        if n + "(" in body] + ["FromJson", "ToJson"]
target = sys.argv[3] if len(sys.argv) > 3 else "embedded-apiserver/src/protobuf/generated.rs"
with open(target, "w") as f:
    f.write(header.replace("IMPORTS", ", ".join(used)) + body)
# The workspace's edition, as `cargo fmt` formats the checked-in file.
subprocess.run(["rustfmt", "--edition", "2021", target], check=True)
print(len(out), "types", file=sys.stderr)
