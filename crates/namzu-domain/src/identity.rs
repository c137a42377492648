//! What "the same workspace" means (docs/interop.md §13.2–§13.3, @namzu/sandbox 28.0.0
//! `workspace-observe`): the Sandbox's uid, each volume claim's uid, who owns each claim, the live
//! pod's uid — and the closure answer a host that restarted gets: live, suspended, absent or
//! replaced. Ownership is decided by uids only; a moved resourceVersion, a flipped Ready or a
//! condition of an older generation is the controller working, never a change of owner.

use super::object::{owner_refs, str_at, uid};
use super::patch::Mode;
use super::pod;
use serde_json::Value;
use std::collections::BTreeMap;

/// One owner reference of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub kind: String,
    pub name: String,
    pub uid: String,
}

impl Owner {
    pub fn words(&self) -> String {
        format!("{} {} (uid {})", self.kind, self.name, self.uid)
    }
}

pub(crate) fn owners(obj: &Value) -> Vec<Owner> {
    owner_refs(obj)
        .iter()
        .map(|r| {
            let f = |k| str_at(r, &[k]).unwrap_or("").to_string();
            Owner {
                kind: f("kind"),
                name: f("name"),
                uid: f("uid"),
            }
        })
        .collect()
}

/// A claim is foreign ("owned by another Sandbox") when the Sandbox has a uid and the claim's
/// owner list is non-empty and names no owner with that uid. An empty or absent owner list is
/// not foreign: a cluster may simply not report owners.
pub(crate) fn claim_is_foreign(claim: &Value, sandbox_uid: Option<&str>) -> bool {
    let Some(sandbox_uid) = sandbox_uid else {
        return false;
    };
    let refs = owner_refs(claim);
    !refs.is_empty() && !refs.iter().any(|r| str_at(r, &["uid"]) == Some(sandbox_uid))
}

/// One `volumeClaimTemplates` entry and what stands under its PVC name.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub entry: String,
    pub pvc: String,
    /// The PVC's uid; `None` when there is no PVC (or one without a uid: the library counts it
    /// missing too).
    pub uid: Option<String>,
    pub owners: Vec<Owner>,
    pub foreign: bool,
    /// The PVC's phase, when it exists.
    pub phase: Option<String>,
}

/// The Sandbox's claims, given a way to find a PVC by name.
pub fn claims<'a>(sandbox: &Value, find: impl Fn(&str) -> Option<&'a Value>) -> Vec<Claim> {
    let sandbox_uid = uid(sandbox);
    pod::claims(sandbox)
        .into_iter()
        .map(|(entry, pvc)| {
            let found = find(&pvc);
            Claim {
                uid: found.and_then(uid).map(str::to_string),
                owners: found.map(owners).unwrap_or_default(),
                foreign: found.is_some_and(|p| claim_is_foreign(p, sandbox_uid)),
                phase: found.map(|p| str_at(p, &["status", "phase"]).unwrap_or("Unknown").to_string()),
                entry,
                pvc,
            }
        })
        .collect()
}

/// The workspace's identity as the cluster reports it now (`KubernetesWorkspaceIdentity`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    pub sandbox_uid: Option<String>,
    /// The claims that exist, by `volumeClaimTemplates` entry.
    pub volume_claim_uids: crate::workspace::StrMap,
    /// The live pod's uid; `None` for a suspended workspace.
    pub pod_uid: Option<String>,
}

/// The identity from a Sandbox, its claims and its live pod.
pub(crate) fn identity(sandbox: &Value, claims: &[Claim], live_pod: Option<&Value>) -> Identity {
    Identity {
        sandbox_uid: uid(sandbox).map(str::to_string),
        volume_claim_uids: crate::workspace::str_map(
            claims.iter().filter_map(|c| Some((c.entry.clone(), c.uid.clone()?))),
        ),
        pod_uid: match Mode::of_sandbox(sandbox) {
            Mode::Suspended => None,
            Mode::Running => live_pod.and_then(uid).map(str::to_string),
        },
    }
}

/// The entries whose PVC does not exist (`missingVolumeClaims`).
pub(crate) fn missing(claims: &[Claim]) -> Vec<String> {
    claims
        .iter()
        .filter(|c| c.uid.is_none())
        .map(|c| c.entry.clone())
        .collect()
}

/// What a host retained of a workspace: the Sandbox uid (required) and claim uids it trusts.
#[derive(Debug, Clone, PartialEq)]
pub struct Retained {
    pub sandbox_uid: String,
    pub claims: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchKind {
    SandboxUid,
    VolumeClaimUid,
    VolumeClaimOwner,
}

impl MismatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MismatchKind::SandboxUid => "sandbox-uid",
            MismatchKind::VolumeClaimUid => "volume-claim-uid",
            MismatchKind::VolumeClaimOwner => "volume-claim-owner",
        }
    }
}

/// The first way what stands there is not the retained workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub kind: MismatchKind,
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// The claim entry, for a claim mismatch.
    pub claim: Option<String>,
}

/// `firstMismatch`, in the library's order: the Sandbox uid; then each existing claim in the
/// template's order — a uid other than the one trusted, then an owner that is not this Sandbox.
/// A claim that is not there is not a mismatch.
pub(crate) fn first_mismatch(retained: &Retained, sandbox_uid: Option<&str>, claims: &[Claim]) -> Option<Mismatch> {
    if sandbox_uid != Some(retained.sandbox_uid.as_str()) {
        return Some(Mismatch {
            kind: MismatchKind::SandboxUid,
            expected: Some(retained.sandbox_uid.clone()),
            actual: sandbox_uid.map(str::to_string),
            claim: None,
        });
    }
    for c in claims {
        let Some(actual) = &c.uid else { continue };
        if let Some(trusted) = retained.claims.get(&c.entry).filter(|t| *t != actual) {
            return Some(Mismatch {
                kind: MismatchKind::VolumeClaimUid,
                expected: Some(trusted.clone()),
                actual: Some(actual.clone()),
                claim: Some(c.entry.clone()),
            });
        }
        if c.foreign {
            return Some(Mismatch {
                kind: MismatchKind::VolumeClaimOwner,
                expected: Some(retained.sandbox_uid.clone()),
                actual: Some(actual.clone()),
                claim: Some(c.entry.clone()),
            });
        }
    }
    None
}

/// `reconcileKubernetesWorkspace`'s answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Closure {
    /// The same Sandbox, Running.
    Live(Identity),
    /// The same Sandbox, Suspended; its disk is intact.
    Suspended(Identity),
    /// No Sandbox stands under the name.
    Absent,
    /// Another Sandbox or claim stands there: the stranger's identity, and why.
    Replaced(Identity, Mismatch),
}

impl Closure {
    pub fn state(&self) -> &'static str {
        match self {
            Closure::Live(_) => "live",
            Closure::Suspended(_) => "suspended",
            Closure::Absent => "absent",
            Closure::Replaced(..) => "replaced",
        }
    }
}

/// One GET pass, classified: `observed` is the Sandbox read (`None`: not found), its claims and
/// the pod named after it. Identity is checked before anything else.
pub fn reconcile(retained: &Retained, observed: Option<(&Value, &[Claim], Option<&Value>)>) -> Closure {
    let Some((sandbox, claims, pod)) = observed else {
        return Closure::Absent;
    };
    let view = pod.map(pod::PodView::Present);
    let live = super::state::live_pod(sandbox, view.as_ref());
    let seen = identity(sandbox, claims, live);
    if let Some(m) = first_mismatch(retained, uid(sandbox), claims) {
        return Closure::Replaced(seen, m);
    }
    match Mode::of_sandbox(sandbox) {
        Mode::Suspended => Closure::Suspended(seen),
        Mode::Running => Closure::Live(seen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sbx(uid: &str, mode: &str) -> Value {
        json!({"metadata": {"name": "namzu-ws-a", "uid": uid}, "spec": {"operatingMode": mode,
            "volumeClaimTemplates": [{"metadata": {"name": "disk"}}, {"metadata": {"name": "cache"}}]}})
    }

    fn pvc(name: &str, uid: &str, owner: Option<&str>) -> Value {
        let owners = owner.map_or(
            json!([]),
            |o| json!([{"kind": "Sandbox", "name": "namzu-ws-a", "uid": o}]),
        );
        json!({"metadata": {"name": name, "uid": uid, "ownerReferences": owners}, "status": {"phase": "Bound"}})
    }

    fn retained(uid: &str, claims: &[(&str, &str)]) -> Retained {
        Retained {
            sandbox_uid: uid.into(),
            claims: claims.iter().map(|(e, u)| (e.to_string(), u.to_string())).collect(),
        }
    }

    #[test]
    fn closure_states_in_the_library_order() {
        let s = sbx("s1", "Running");
        let pvcs = [
            pvc("disk-namzu-ws-a", "d1", Some("s1")),
            pvc("cache-namzu-ws-a", "c1", None),
        ];
        let find = |n: &str| pvcs.iter().find(|p| p["metadata"]["name"] == n);
        let cs = claims(&s, find);
        let pod = json!({"metadata": {"name": "namzu-ws-a", "uid": "p1"}, "status": {"phase": "Running"}});
        let live = reconcile(&retained("s1", &[("disk", "d1")]), Some((&s, &cs, Some(&pod))));
        let Closure::Live(id) = &live else { panic!("{live:?}") };
        assert_eq!(id.pod_uid.as_deref(), Some("p1"));
        assert_eq!(id.volume_claim_uids.len(), 2, "an owner-less claim is not foreign");
        assert_eq!(reconcile(&retained("s1", &[]), None), Closure::Absent);
        let Closure::Replaced(id, m) = reconcile(&retained("s0", &[("disk", "other")]), Some((&s, &cs, None))) else {
            panic!()
        };
        assert_eq!(
            (m.kind, id.sandbox_uid.as_deref()),
            (MismatchKind::SandboxUid, Some("s1"))
        );
        let Closure::Replaced(_, m) = reconcile(&retained("s1", &[("disk", "d0")]), Some((&s, &cs, None))) else {
            panic!()
        };
        assert_eq!(
            (m.kind, m.claim.as_deref()),
            (MismatchKind::VolumeClaimUid, Some("disk"))
        );
        // a claim owned by an earlier Sandbox of the same name
        let stranger = [pvc("disk-namzu-ws-a", "d1", Some("s0"))];
        let cs = claims(&s, |n| stranger.iter().find(|p| p["metadata"]["name"] == n));
        assert_eq!(missing(&cs), ["cache"]);
        let Closure::Replaced(_, m) = reconcile(&retained("s1", &[]), Some((&s, &cs, None))) else {
            panic!()
        };
        assert_eq!(m.kind, MismatchKind::VolumeClaimOwner);
        let suspended = sbx("s1", "Suspended");
        let Closure::Suspended(id) = reconcile(&retained("s1", &[]), Some((&suspended, &[], Some(&pod)))) else {
            panic!()
        };
        assert_eq!(id.pod_uid, None, "no pod uid for a suspended workspace");
    }
}
