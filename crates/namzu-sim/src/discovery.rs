//! Discovery documents: /version, /api, /apis, and each group version's resource list.

use super::resources::{CORE, EXTENSIONS, Resource, SANDBOXES, SANDBOXES_V1ALPHA1};
use serde_json::{Value, json};

/// What agent-sandbox the sim poses as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentSandbox {
    /// v1.0: v1beta1 sandboxes and extensions only (v1alpha1 is gone from the CRDs).
    #[default]
    Current,
    /// v0.5.x: v1beta1 as the stored version, the deprecated v1alpha1 of Sandbox still served.
    V05,
    /// ≤ v0.4: v1alpha1 only.
    TooOld,
    /// The CRDs are not installed.
    Missing,
}

impl AgentSandbox {
    /// Every resource served, by group version.
    pub fn served(self) -> Vec<Resource> {
        let mut out = CORE.to_vec();
        match self {
            AgentSandbox::Current => {
                out.push(SANDBOXES);
                out.extend(EXTENSIONS);
            }
            AgentSandbox::V05 => {
                out.push(SANDBOXES);
                out.push(SANDBOXES_V1ALPHA1);
                out.extend(EXTENSIONS);
            }
            AgentSandbox::TooOld => out.push(SANDBOXES_V1ALPHA1),
            AgentSandbox::Missing => {}
        }
        out
    }
}

/// The Kubernetes minor version served unless a test or scenario sets another.
pub(crate) const DEFAULT_MINOR: u32 = 33;

/// `/version`. The `-namzu-sim` mark stays whatever the version: the tool relies on it.
pub(crate) fn version(minor: u32) -> Value {
    json!({"major":"1","minor":minor.to_string(),"gitVersion":format!("v1.{minor}.0-namzu-sim"),"gitCommit":"sim","gitTreeState":"clean",
        "buildDate":"2026-11-01T00:00:00Z","goVersion":"go1.24","compiler":"gc","platform":"linux/amd64"})
}

pub(crate) fn core_versions() -> Value {
    json!({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]})
}

fn groups_of(served: &[Resource]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = vec![("authorization.k8s.io".into(), vec!["v1".into()])];
    for r in served.iter().filter(|r| !r.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| g == r.group) {
            Some((_, vs)) if !vs.iter().any(|v| v == r.version) => vs.push(r.version.into()),
            Some(_) => {}
            None => groups.push((r.group.into(), vec![r.version.into()])),
        }
    }
    groups
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion":format!("{name}/{v}"),"version":v}))
        .collect();
    json!({"name":name,"versions":vs,"preferredVersion":vs[0]})
}

pub(crate) fn group_list(served: &[Resource]) -> Value {
    let groups: Vec<Value> = groups_of(served).iter().map(|(g, vs)| group_doc(g, vs)).collect();
    json!({"kind":"APIGroupList","apiVersion":"v1","groups":groups})
}

pub(crate) fn group(served: &[Resource], name: &str) -> Option<Value> {
    let groups = groups_of(served);
    let (g, vs) = groups.iter().find(|(g, _)| g == name)?;
    let mut doc = group_doc(g, vs);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

const VERBS: [&str; 7] = ["create", "delete", "get", "list", "patch", "update", "watch"];

/// `APIResourceList` of one group version; `None` when not served.
pub(crate) fn resources(served: &[Resource], group: &str, version: &str) -> Option<Value> {
    if group == "authorization.k8s.io" && version == "v1" {
        return Some(
            json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"authorization.k8s.io/v1",
            "resources":[{"name":"selfsubjectaccessreviews","singularName":"selfsubjectaccessreview","namespaced":false,"kind":"SelfSubjectAccessReview","verbs":["create"]}]}),
        );
    }
    let list: Vec<Value> = served
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .flat_map(|r| {
            // a real server puts no PersistentVolume in `kubectl get all`
            let categories: &[&str] = if r.plural == "persistentvolumes" { &[] } else { &["all"] };
            let mut main = json!({"name":r.plural,"singularName":r.kind.to_lowercase(),"namespaced":r.namespaced,
                "kind":r.kind,"verbs":VERBS,"shortNames":r.short_names,"categories":categories});
            if categories.is_empty()
                && let Some(m) = main.as_object_mut()
            {
                m.remove("categories");
            }
            let status = json!({"name":format!("{}/status", r.plural),"singularName":"","namespaced":r.namespaced,
                "kind":r.kind,"verbs":["get","patch","update"]});
            if r.has_status { vec![main, status] } else { vec![main] }
        })
        .collect();
    if list.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":gv,"resources":list}))
}

/// `/openapi/v3`: one document per served group-version, as a real server lists them.
pub(crate) fn openapi_index(served: &[Resource]) -> Value {
    let mut paths = serde_json::Map::new();
    for r in served {
        let gv = gv_path(r.group, r.version);
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash=namzu-sim")}),
        );
    }
    json!({ "paths": paths })
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// One group-version's OpenAPI v3 document: each kind's schema (fields beyond apiVersion, kind
/// and metadata are preserved, as a CRD without a structural schema for them) and its write
/// operations, which accept `fieldValidation` — so kubectl validates server-side, as against a
/// real server, instead of refusing to create without a schema.
pub(crate) fn openapi(served: &[Resource], group: &str, version: &str, minor: u32) -> Option<Value> {
    let kinds: Vec<&Resource> = served
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for r in kinds {
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let schema_name = format!(
            "{}.{}.{}",
            if r.group.is_empty() { "io.k8s.api.core" } else { r.group },
            r.version,
            r.kind
        );
        let reference = json!({"$ref": format!("#/components/schemas/{schema_name}")});
        let op = |verb: &str| {
            json!({"operationId": format!("{verb}{}", r.kind), "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
                "requestBody": {"content": {"application/json": {"schema": reference}}},
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}}})
        };
        let base = format!("/{}", gv_path(r.group, r.version));
        let collection = if r.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{base}/{}", r.plural)
        };
        paths.insert(collection.clone(), json!({"post": op("post")}));
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({"put": op("put"), "patch": op("patch")}),
        );
        schemas.insert(
            schema_name,
            json!({"type": "object", "x-kubernetes-group-version-kind": [gvk],
                "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "x-kubernetes-preserve-unknown-fields": true}),
        );
    }
    Some(
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": format!("v1.{minor}.0-namzu-sim")},
        "paths": paths, "components": {"schemas": schemas}}),
    )
}

/// `/openapi/v2`, as clients ask for it: protobuf (client-go's `OpenAPISchema` asks for nothing
/// else), else JSON. kubectl's client-side validation reads it (a `kind: List` is validated item
/// by item against it; a kind it does not describe is not validated), so a document without
/// definitions is enough: it has the swagger version and the server's title and version.
pub(crate) fn openapi_v2(minor: u32, protobuf: bool) -> (Vec<u8>, &'static str) {
    let version = format!("v1.{minor}.0-namzu-sim");
    if protobuf {
        // openapi_v2.Document { swagger = 1; info = 2 { title = 1; version = 2 } }
        let field = |tag: u8, bytes: &[u8]| {
            let mut out = vec![tag, u8::try_from(bytes.len()).unwrap_or(u8::MAX)];
            out.extend_from_slice(bytes);
            out
        };
        let info = [field(0x0a, b"Kubernetes"), field(0x12, version.as_bytes())].concat();
        let doc = [field(0x0a, b"2.0"), field(0x12, &info)].concat();
        return (doc, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    }
    let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version},
        "paths": {}, "definitions": {}});
    (serde_json::to_vec(&doc).unwrap_or_default(), "application/json")
}
