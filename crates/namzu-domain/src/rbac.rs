//! What each of the tool's verbs needs from RBAC (docs/interop.md §11 plus the inventory's reads),
//! for `kubectl namzu rbac` and `kubectl namzu doctor`.

/// One permission: API group, resource, verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub group: &'static str,
    pub resource: &'static str,
    pub verb: &'static str,
}

/// Subresources that run code in a pod or open a connection into it. Any verb on them is a
/// write: an API server before 1.35 authorizes an exec or attach WebSocket upgrade with `get`
/// alone, so a read-only role grants none of them.
pub(crate) const INTO_A_POD: [&str; 4] = ["pods/exec", "pods/attach", "pods/portforward", "pods/proxy"];

impl Need {
    /// Whether this permission lets its holder change anything: a write verb, or any verb on a
    /// subresource that reaches into a pod ([`INTO_A_POD`]).
    pub(crate) fn writes(&self) -> bool {
        ["patch", "delete", "create", "update", "deletecollection"].contains(&self.verb)
            || INTO_A_POD.contains(&self.resource)
    }
}

const fn need(group: &'static str, resource: &'static str, verb: &'static str) -> Need {
    Need { group, resource, verb }
}

pub(crate) const SANDBOXES: &str = "agents.x-k8s.io";
pub(crate) const EXTENSIONS: &str = "extensions.agents.x-k8s.io";
/// Cilium's group: per-sandbox egress policies (read only; without it POLICY shows `?` and a
/// resume of a workspace with per-sandbox egress is refused).
pub(crate) const CILIUM: &str = "cilium.io";

/// Per tool verb, what it needs; the first entry is the one it cannot work without.
pub const VERBS: [(&str, &[Need]); 16] = [
    (
        "list",
        &[
            need(SANDBOXES, "sandboxes", "list"),
            need("", "pods", "list"),
            need("", "persistentvolumeclaims", "list"),
            need(EXTENSIONS, "sandboxtemplates", "get"),
            need(CILIUM, "ciliumnetworkpolicies", "list"),
        ],
    ),
    (
        // the TUI and `list -w`; without watch they re-list (docs/ARCHITECTURE.md, "Live inventory")
        "watch",
        &[
            need(SANDBOXES, "sandboxes", "list"),
            need(SANDBOXES, "sandboxes", "watch"),
            need("", "pods", "watch"),
            need("", "persistentvolumeclaims", "watch"),
            need(EXTENSIONS, "sandboxtemplates", "list"),
            need(EXTENSIONS, "sandboxtemplates", "watch"),
            need(CILIUM, "ciliumnetworkpolicies", "watch"),
        ],
    ),
    (
        "inspect",
        &[
            need(SANDBOXES, "sandboxes", "get"),
            need("", "pods", "list"),
            need("", "persistentvolumeclaims", "get"),
            need("", "events", "list"),
            need(EXTENSIONS, "sandboxtemplates", "get"),
            need(CILIUM, "ciliumnetworkpolicies", "list"),
            // the owning claim's lifecycle
            need(EXTENSIONS, "sandboxclaims", "get"),
        ],
    ),
    (
        "reconcile",
        &[
            need(SANDBOXES, "sandboxes", "get"),
            need("", "persistentvolumeclaims", "get"),
            need("", "pods", "get"),
        ],
    ),
    (
        "drift",
        &[
            need(SANDBOXES, "sandboxes", "get"),
            need(EXTENSIONS, "sandboxtemplates", "get"),
            // the refusals a template's policy explains: the Sandbox's Events, its claim's conditions
            need("", "events", "list"),
            need(EXTENSIONS, "sandboxclaims", "get"),
        ],
    ),
    (
        "capacity",
        &[
            need(EXTENSIONS, "sandboxwarmpools", "list"),
            need(EXTENSIONS, "sandboxclaims", "list"),
            // a pool's members and its progress Events (pools have no conditions)
            need(SANDBOXES, "sandboxes", "list"),
            need("", "events", "list"),
        ],
    ),
    (
        "suspend/resume",
        &[
            need(SANDBOXES, "sandboxes", "patch"),
            need(SANDBOXES, "sandboxes", "get"),
            // --wait reads the pod
            need("", "pods", "get"),
            need("", "pods", "list"),
            // a resume refuses to wake a workspace into a foreign per-sandbox egress policy
            need(CILIUM, "ciliumnetworkpolicies", "list"),
        ],
    ),
    (
        // the library's refresh: the SandboxTemplate is read before the patch
        "resume --refresh-template",
        &[
            need(SANDBOXES, "sandboxes", "patch"),
            need(SANDBOXES, "sandboxes", "get"),
            need(EXTENSIONS, "sandboxtemplates", "get"),
            need("", "pods", "get"),
            need("", "pods", "list"),
            need(CILIUM, "ciliumnetworkpolicies", "list"),
        ],
    ),
    (
        "delete",
        &[
            need(SANDBOXES, "sandboxes", "delete"),
            need(SANDBOXES, "sandboxes", "get"),
        ],
    ),
    (
        // `logs` and the TUI's `l`: the workspace's own pod, then its log
        "logs",
        &[
            need("", "pods/log", "get"),
            need(SANDBOXES, "sandboxes", "get"),
            need("", "pods", "get"),
        ],
    ),
    (
        // `exec` and the TUI's `s` (kubectl exec: create, and get for the upgrade)
        "exec",
        &[
            need("", "pods/exec", "create"),
            need("", "pods/exec", "get"),
            need(SANDBOXES, "sandboxes", "get"),
            need("", "pods", "get"),
        ],
    ),
    (
        // `port-forward`: the WebSocket upgrade is a GET (`get` before 1.35, `create` too from
        // 1.35), each connection re-reads the workspace's own pod
        "port-forward",
        &[
            need("", "pods/portforward", "create"),
            need("", "pods/portforward", "get"),
            need(SANDBOXES, "sandboxes", "get"),
            need("", "pods", "get"),
        ],
    ),
    (
        // `history` and the TUI's `h`: events of either API, the claim and disks by name
        "history",
        &[
            need("", "events", "list"),
            need(SANDBOXES, "sandboxes", "get"),
            need("", "pods", "get"),
            need("", "persistentvolumeclaims", "get"),
            need(EXTENSIONS, "sandboxclaims", "get"),
            need("events.k8s.io", "events", "list"),
        ],
    ),
    (
        // `leaks` and the TUI's `:leaks` (crates/namzu-engine/src/cluster/leaks.rs): one LIST per kind, the disks by label
        "leaks",
        &[
            need(SANDBOXES, "sandboxes", "list"),
            need("", "persistentvolumeclaims", "list"),
            need(CILIUM, "ciliumnetworkpolicies", "list"),
            need(EXTENSIONS, "sandboxclaims", "list"),
            need(EXTENSIONS, "sandboxwarmpools", "list"),
            need("", "events", "list"),
            // only where a disk looks left behind: a pod that mounts it makes it in use
            need("", "pods", "list"),
        ],
    ),
    (
        // each DELETE is preceded by a GET (the preconditions are checked against it) and every
        // tie read again; --quarantine patches two annotations. The disk's PersistentVolume is set
        // to Retain where a ClusterRole allows `get`/`patch` on persistentvolumes (cluster-scoped,
        // so no Role here can grant it: without it the data goes with the disk, and says so)
        "leaks --delete",
        &[
            need("", "persistentvolumeclaims", "delete"),
            need("", "persistentvolumeclaims", "get"),
            need("", "persistentvolumeclaims", "patch"),
            need(CILIUM, "ciliumnetworkpolicies", "delete"),
            need(CILIUM, "ciliumnetworkpolicies", "get"),
            need(CILIUM, "ciliumnetworkpolicies", "patch"),
            need(SANDBOXES, "sandboxes", "list"),
            need(EXTENSIONS, "sandboxclaims", "list"),
            need(EXTENSIONS, "sandboxwarmpools", "list"),
            need("", "pods", "list"),
        ],
    ),
    (
        // re-creates the object kept in its tombstone (a GET first: a taken name is refused)
        "restore",
        &[
            need("", "persistentvolumeclaims", "create"),
            need("", "persistentvolumeclaims", "get"),
            need(CILIUM, "ciliumnetworkpolicies", "create"),
            need(CILIUM, "ciliumnetworkpolicies", "get"),
        ],
    ),
];

/// The Role rules: every need of every verb (writes left out for read-only), grouped by
/// (group, resource), verbs sorted.
pub fn rules(read_only: bool) -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let mut out: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for (_, needs) in VERBS {
        for n in needs.iter().filter(|n| !(read_only && n.writes())) {
            match out.iter_mut().find(|(g, r, _)| *g == n.group && *r == n.resource) {
                Some((_, _, verbs)) if !verbs.contains(&n.verb) => verbs.push(n.verb),
                Some(_) => {}
                None => out.push((n.group, n.resource, vec![n.verb])),
            }
        }
    }
    for (_, _, verbs) in &mut out {
        verbs.sort();
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_has_no_write_verbs() {
        let all = rules(false);
        let ro = rules(true);
        fn verbs(r: &[(&'static str, &'static str, Vec<&'static str>)]) -> Vec<&'static str> {
            r.iter().flat_map(|(_, _, v)| v.clone()).collect()
        }
        assert!(verbs(&all).contains(&"patch") && verbs(&all).contains(&"delete"));
        assert!(!verbs(&ro).contains(&"patch") && !verbs(&ro).contains(&"delete"));
        let sandboxes = all
            .iter()
            .find(|(g, r, _)| *g == SANDBOXES && *r == "sandboxes")
            .unwrap();
        assert_eq!(sandboxes.2, ["delete", "get", "list", "patch", "watch"]);
        let read_only_sandboxes = ro
            .iter()
            .find(|(g, r, _)| *g == SANDBOXES && *r == "sandboxes")
            .unwrap();
        assert_eq!(
            read_only_sandboxes.2,
            ["get", "list", "watch"],
            "a read-only Role may watch"
        );
        // no verb at all on what runs code in a pod or connects into it
        assert!(ro.iter().all(|(_, r, _)| !INTO_A_POD.contains(r)), "{ro:?}");
        assert!(all.iter().any(|(_, r, _)| *r == "pods/exec"));
    }
}
