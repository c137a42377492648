//! Per-sandbox egress on workspaces (docs/interop.md §13.5, @namzu/sandbox 28.0.0): the egress
//! profile and per-sandbox labels on a workspace's pod template, and which per-sandbox
//! CiliumNetworkPolicies select it — the one its Sandbox owns, and any left by an earlier
//! workspace of the same name (foreign), which a resume must not wake into.

use super::annotations::PER_SANDBOX_POLICY_PREFIX;
use super::drift::OverlayFlags;
use super::naming::is_path_safe_name;
use super::object::{name, owner_refs, str_at, uid};
use serde_json::Value;
use std::collections::HashMap;

/// What reading the CiliumNetworkPolicies of a namespace gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PolicyRead<T> {
    Known(T),
    /// Not allowed to list them.
    Forbidden,
    /// `cilium.io/v2` is not served: no such policy can exist (and none is enforced).
    NotServed,
}

impl<T> PolicyRead<T> {
    pub fn as_ref(&self) -> PolicyRead<&T> {
        self.map(|t| t)
    }

    pub fn map<'a, U>(&'a self, f: impl FnOnce(&'a T) -> U) -> PolicyRead<U> {
        match self {
            PolicyRead::Known(t) => PolicyRead::Known(f(t)),
            PolicyRead::Forbidden => PolicyRead::Forbidden,
            PolicyRead::NotServed => PolicyRead::NotServed,
        }
    }

    pub(crate) fn known(&self) -> Option<&T> {
        match self {
            PolicyRead::Known(t) => Some(t),
            _ => None,
        }
    }
}

/// The values a policy's endpoint selector requires of `key`: `spec.endpointSelector` and each
/// of `specs[].endpointSelector`, under the key as given or with Cilium's `k8s:` source prefix.
fn selected_values<'a>(policy: &'a Value, key: &str) -> Vec<&'a str> {
    let prefixed = format!("k8s:{key}");
    let mut selectors: Vec<&Value> = policy.pointer("/spec/endpointSelector").into_iter().collect();
    if let Some(specs) = policy.pointer("/specs").and_then(Value::as_array) {
        selectors.extend(specs.iter().filter_map(|s| s.get("endpointSelector")));
    }
    selectors
        .into_iter()
        .filter_map(|s| s.get("matchLabels"))
        .flat_map(|m| [m.get(key), m.get(&prefixed)])
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The Sandbox names a per-sandbox policy selects (none for any other policy).
pub(crate) fn selected_sandboxes<'a>(policy: &'a Value, key: &str) -> Vec<&'a str> {
    if !name(policy).starts_with(PER_SANDBOX_POLICY_PREFIX) {
        return Vec::new();
    }
    let mut values = selected_values(policy, key);
    values.sort();
    values.dedup();
    values
}

/// The per-sandbox policies of one namespace by the Sandbox name their selector names, built
/// once so a pass over n workspaces stays O(n): `namzu-sbx-*` policies whose endpoint selector
/// requires `<key>: <value>`.
#[derive(Debug, Default)]
pub struct PolicyIndex<'a> {
    by_selected: HashMap<&'a str, Vec<&'a Value>>,
}

impl<'a> PolicyIndex<'a> {
    pub fn new(policies: &'a [Value], key: &str) -> PolicyIndex<'a> {
        let mut by_selected: HashMap<&'a str, Vec<&'a Value>> = HashMap::new();
        for p in policies
            .iter()
            .filter(|p| name(p).starts_with(PER_SANDBOX_POLICY_PREFIX))
        {
            let mut values = selected_values(p, key);
            values.dedup();
            for v in values {
                by_selected.entry(v).or_default().push(p);
            }
        }
        PolicyIndex { by_selected }
    }

    /// The per-sandbox policies whose selector names `sandbox_name`.
    pub(crate) fn selecting(&self, sandbox_name: &str) -> &[&'a Value] {
        self.by_selected.get(sandbox_name).map_or(&[], Vec::as_slice)
    }
}

/// One per-sandbox policy that selects a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerSandboxPolicy {
    pub name: String,
    /// Owned by this Sandbox: an ownerReferences entry of kind `Sandbox` with its name and its
    /// current uid. Otherwise foreign.
    pub owned: bool,
    /// Its owners as `Kind name (uid U)`.
    pub owners: Vec<String>,
}

/// Whether `policy` is owned by the Sandbox named `sandbox_name` whose uid is now `sandbox_uid`.
pub(crate) fn owned_by_sandbox(policy: &Value, sandbox_name: &str, sandbox_uid: Option<&str>) -> bool {
    let Some(sandbox_uid) = sandbox_uid else {
        return false;
    };
    owner_refs(policy).iter().any(|r| {
        str_at(r, &["kind"]) == Some("Sandbox")
            && str_at(r, &["name"]) == Some(sandbox_name)
            && str_at(r, &["uid"]) == Some(sandbox_uid)
    })
}

/// An owner reference in words: `Sandbox namzu-ws-a (uid 1234)`.
pub(crate) fn owner_words(r: &Value) -> String {
    format!(
        "{} {} (uid {})",
        str_at(r, &["kind"]).unwrap_or("?"),
        str_at(r, &["name"]).unwrap_or("?"),
        str_at(r, &["uid"]).unwrap_or("-")
    )
}

/// The per-sandbox policies that select `sandbox`, each classified own or foreign by the uid
/// the Sandbox has now.
pub(crate) fn policies_of(sandbox: &Value, index: &PolicyIndex<'_>) -> Vec<PerSandboxPolicy> {
    let (sandbox_name, sandbox_uid) = (name(sandbox), uid(sandbox));
    let mut out: Vec<PerSandboxPolicy> = index
        .selecting(sandbox_name)
        .iter()
        .map(|p| PerSandboxPolicy {
            name: name(p).to_string(),
            owned: owned_by_sandbox(p, sandbox_name, sandbox_uid),
            owners: owner_refs(p).iter().map(owner_words).collect(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A label's value on a Sandbox's pod template, where @namzu/sandbox puts the egress profile and
/// the per-sandbox label (present: the workspace asks for per-sandbox egress).
pub fn pod_label<'a>(sandbox: &'a Value, key: &str) -> Option<&'a str> {
    str_at(sandbox, &["spec", "podTemplate", "metadata", "labels", key])
}

/// A workspace's egress as its pod template and the namespace's policies say.
#[derive(Debug, Clone, PartialEq)]
pub struct Egress {
    /// The egress profile label's value on the pod template.
    pub profile: Option<String>,
    /// The per-sandbox label's value on the pod template: per-sandbox egress is on.
    pub per_sandbox: Option<String>,
    /// The per-sandbox policies that select the workspace.
    pub policies: PolicyRead<Vec<PerSandboxPolicy>>,
}

impl Egress {
    /// Read from the Sandbox's pod template and the namespace's policies.
    pub fn of(sandbox: &Value, flags: &OverlayFlags, policies: PolicyRead<&PolicyIndex<'_>>) -> Egress {
        let label = |key: &str| pod_label(sandbox, key).map(str::to_string);
        Egress {
            profile: label(flags.profile_key()),
            per_sandbox: label(flags.per_sandbox_key()),
            policies: match policies {
                PolicyRead::Known(index) => PolicyRead::Known(policies_of(sandbox, index)),
                PolicyRead::Forbidden => PolicyRead::Forbidden,
                PolicyRead::NotServed => PolicyRead::NotServed,
            },
        }
    }

    /// The policies that select the workspace and that its Sandbox does not own — only for a
    /// workspace whose pod template carries the per-sandbox label: no per-sandbox policy can
    /// select a pod without it, and the library reads none for it (the POLICY column still
    /// notes one that names the Sandbox).
    pub(crate) fn foreign(&self) -> Vec<&PerSandboxPolicy> {
        if self.per_sandbox.is_none() {
            return Vec::new();
        }
        self.policies
            .known()
            .map(|list| list.iter().filter(|p| !p.owned).collect())
            .unwrap_or_default()
    }

    /// The POLICY column: `-` none selects it, `own`, `foreign` (any foreign), `?` unreadable
    /// (forbidden; or not served while the workspace asks for per-sandbox egress, which then
    /// nothing enforces).
    pub fn policy_cell(&self) -> &'static str {
        match &self.policies {
            PolicyRead::Forbidden => "?",
            PolicyRead::NotServed if self.per_sandbox.is_some() => "?",
            PolicyRead::NotServed => "-",
            PolicyRead::Known(list) if list.is_empty() => "-",
            PolicyRead::Known(list) if list.iter().any(|p| !p.owned) => "foreign",
            PolicyRead::Known(_) => "own",
        }
    }
}

/// Why a resume must not wake this workspace (docs/interop.md §13.5), or `None`: a per-sandbox
/// policy that selects it and that its Sandbox — at the uid it has now — does not own would grant
/// it what an earlier workspace of the same name was admitted for. Where the policies may not be
/// read, a workspace that asks for per-sandbox egress is refused too (nothing can be verified);
/// where Cilium is not served, no such policy can exist.
pub fn resume_refusal(sandbox: &Value, flags: &OverlayFlags, policies: PolicyRead<&PolicyIndex<'_>>) -> Option<String> {
    let egress = Egress::of(sandbox, flags, policies);
    let ns = super::object::namespace(sandbox);
    if egress.policies == PolicyRead::Forbidden {
        return egress.per_sandbox.as_ref().map(|_| {
            format!(
                "this workspace has per-sandbox egress ({}) but you may not list ciliumnetworkpolicies.cilium.io in namespace {ns}, so a policy left by an earlier workspace of the same name cannot be ruled out: nothing sent (needs RBAC list on ciliumnetworkpolicies)",
                flags.per_sandbox_key()
            )
        });
    }
    let foreign = egress.foreign();
    let first = foreign.first()?;
    let names: Vec<&str> = foreign.iter().map(|p| p.name.as_str()).collect();
    let commands: Vec<String> = foreign.iter().map(|p| delete_command(ns, &p.name)).collect();
    Some(format!(
        "CiliumNetworkPolicy {} selects this workspace ({}={}) but is not owned by its Sandbox (uid {}; owner {}): it belongs to an earlier workspace of the same name, and waking this one would grant it what that one was admitted for. Nothing sent. Remove it, then resume: {}",
        names.join(", "),
        flags.per_sandbox_key(),
        name(sandbox),
        uid(sandbox).unwrap_or("-"),
        if first.owners.is_empty() {
            "none".to_string()
        } else {
            first.owners.join(", ")
        },
        commands.join("; ")
    ))
}

/// The command that removes a foreign policy (only for a name that is a valid object name, so
/// the line is safe to paste).
pub fn delete_command(namespace: &str, policy: &str) -> String {
    if is_path_safe_name(policy) {
        format!("kubectl delete ciliumnetworkpolicy {policy} -n {namespace}")
    } else {
        format!("(the policy's name {policy:?} is not a valid object name; remove it by hand)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(name: &str, selector: Value, owners: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "ownerReferences": owners},
            "spec": {"endpointSelector": {"matchLabels": selector}}})
    }

    #[test]
    fn own_foreign_and_unrelated_policies() {
        let key = "sandbox.namzu.ai/per-sandbox-egress";
        let sbx = json!({"metadata": {"name": "namzu-ws-a", "uid": "new"},
            "spec": {"podTemplate": {"metadata": {"labels": {key: "namzu-ws-a"}}}}});
        let policies = vec![
            policy(
                "namzu-sbx-new",
                json!({key: "namzu-ws-a"}),
                json!([{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "new"}]),
            ),
            policy(
                "namzu-sbx-old",
                json!({format!("k8s:{key}"): "namzu-ws-a"}),
                json!([{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "old"}]),
            ),
            // not a per-sandbox policy by name, another workspace's, no selector
            policy("operator-egress", json!({key: "namzu-ws-a"}), json!([])),
            policy("namzu-sbx-b", json!({key: "namzu-ws-b"}), json!([])),
            json!({"metadata": {"name": "namzu-sbx-x"}, "spec": {}}),
        ];
        let index = PolicyIndex::new(&policies, key);
        let found = policies_of(&sbx, &index);
        assert_eq!(
            found.iter().map(|p| (p.name.as_str(), p.owned)).collect::<Vec<_>>(),
            [("namzu-sbx-new", true), ("namzu-sbx-old", false)]
        );
        let egress = Egress::of(&sbx, &OverlayFlags::default(), PolicyRead::Known(&index));
        assert_eq!(egress.per_sandbox.as_deref(), Some("namzu-ws-a"));
        assert_eq!(egress.foreign()[0].name, "namzu-sbx-old");
        assert_eq!(egress.policy_cell(), "foreign");
        // an owner of the right uid but another kind or name is not this Sandbox
        let wrong_kind = policy(
            "namzu-sbx-new",
            json!({key: "namzu-ws-a"}),
            json!([{"kind": "SandboxClaim", "name": "namzu-ws-a", "uid": "new"}]),
        );
        assert!(!owned_by_sandbox(&wrong_kind, "namzu-ws-a", Some("new")));
        assert_eq!(
            Egress::of(&sbx, &OverlayFlags::default(), PolicyRead::NotServed).policy_cell(),
            "?"
        );
        assert_eq!(
            delete_command("ns", "namzu-sbx-old"),
            "kubectl delete ciliumnetworkpolicy namzu-sbx-old -n ns"
        );
    }
}
