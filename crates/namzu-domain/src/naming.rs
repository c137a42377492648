//! Workspace naming (docs/interop.md §1): `namzu-ws-<id>`, ids refused — never sanitised.

use super::annotations::TEMPLATE_LABEL;
use super::object::non_empty;
use serde_json::Value;

pub(crate) const SANDBOX_PREFIX: &str = "namzu-ws-";
/// 63 (a DNS label) minus the prefix.
pub(crate) const MAX_ID_LEN: usize = 63 - SANDBOX_PREFIX.len();

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "workspace id {id:?} cannot name a Sandbox: an id is 1-{MAX_ID_LEN} characters of lowercase letters, digits and '-', starting and ending with a letter or digit (^[a-z0-9]([a-z0-9-]*[a-z0-9])?$)"
)]
pub struct InvalidWorkspaceId {
    pub id: String,
}

/// A DNS-1123 label of at most `max` characters: lowercase letters, digits and '-', starting and
/// ending with a letter or digit.
fn is_dns_label(text: &str, max: usize) -> bool {
    let b = text.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=max).contains(&b.len()) && alnum(&b[0]) && alnum(&b[b.len() - 1]) && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// Accepts exactly the ids @namzu/sandbox accepts.
pub(crate) fn validate_id(id: &str) -> Result<(), InvalidWorkspaceId> {
    if is_dns_label(id, MAX_ID_LEN) {
        Ok(())
    } else {
        Err(InvalidWorkspaceId { id: id.to_string() })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid namespace {namespace:?}: a namespace is a DNS-1123 label, 1-63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit"
)]
pub struct InvalidNamespace {
    pub namespace: String,
}

/// A namespace as Kubernetes accepts it (a DNS-1123 label): nothing else may reach a URL path,
/// where `a/sandboxes/b?x=` would name another object.
pub fn validate_namespace(namespace: &str) -> Result<(), InvalidNamespace> {
    if is_dns_label(namespace, 63) {
        Ok(())
    } else {
        Err(InvalidNamespace {
            namespace: namespace.to_string(),
        })
    }
}

/// An object name the tool puts in a URL path: a DNS-1123 subdomain (what every kind it reads
/// by name uses), so a name can never add a path segment or a query.
pub fn is_path_safe_name(name: &str) -> bool {
    (1..=253).contains(&name.len()) && name.split('.').all(|label| is_dns_label(label, 63))
}

/// A workspace id that @namzu/sandbox accepts: parsed once at the edge (a flag, a row, a
/// completion), then carried; its Sandbox name needs no further check.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspaceId(String);

impl WorkspaceId {
    pub fn parse(id: &str) -> Result<WorkspaceId, InvalidWorkspaceId> {
        validate_id(id)?;
        Ok(WorkspaceId(id.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `namzu-ws-<id>`.
    pub fn sandbox_name(&self) -> String {
        format!("{SANDBOX_PREFIX}{}", self.0)
    }
}

impl std::fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which workspace: the one key every layer names a workspace by — the TUI's rows, marks and
/// notes, a write's targets, reports and stop line, a watched row's removal, `list -w`'s rows.
///
/// `context` is the kubeconfig context the workspace is in, where one is named: two clusters may
/// each have `agents/alpha`. The TUI names it on every row (a session may switch context, and a
/// fleet keys rows by it) and says it only across several contexts; the CLI names it only across
/// several (`None` with one, so nothing it prints changes) — as [`Workspace::context`] does,
/// which a row's key is made from. `Id` is a checked [`WorkspaceId`] where a write is sent, the
/// id as listed elsewhere (a Sandbox named `namzu-ws-<not an id>` is listed, never written).
///
/// [`Workspace::context`]: super::workspace::Workspace::context
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspaceKey<Id = String> {
    pub context: Option<String>,
    pub namespace: String,
    pub id: Id,
}

impl WorkspaceKey {
    /// A listed workspace's key.
    pub fn new(context: Option<&str>, namespace: &str, id: &str) -> WorkspaceKey {
        WorkspaceKey {
            context: context.map(str::to_string),
            namespace: namespace.into(),
            id: id.into(),
        }
    }
}

impl<Id: std::fmt::Display> WorkspaceKey<Id> {
    /// The context's name; empty where none is named.
    pub fn context_name(&self) -> &str {
        self.context.as_deref().unwrap_or_default()
    }

    /// The context as said: across several contexts, where one is named.
    fn said(&self, several_contexts: bool) -> Option<&str> {
        self.context.as_deref().filter(|_| several_contexts)
    }

    /// The workspace as a status or result line names it: its id, after its context across
    /// several (`prod/alpha`).
    pub fn who(&self, several_contexts: bool) -> String {
        match self.said(several_contexts) {
            Some(c) => format!("{c}/{}", self.id),
            None => self.id.to_string(),
        }
    }

    /// Where it is, as a dialog says it: the namespace, after its context across several
    /// (`prod/agents`).
    pub fn place(&self, several_contexts: bool) -> String {
        match self.said(several_contexts) {
            Some(c) => format!("{c}/{}", self.namespace),
            None => self.namespace.clone(),
        }
    }

    /// `namespace/id`, as a context's own audit entry lists it.
    pub fn in_namespace(&self) -> String {
        format!("{}/{}", self.namespace, self.id)
    }

    /// The workspace as the stop line names it: `namespace/id`, after its context across
    /// several (`prod:agents/alpha`).
    pub fn qualified(&self, several_contexts: bool) -> String {
        match self.said(several_contexts) {
            Some(c) => format!("{c}:{}", self.in_namespace()),
            None => self.in_namespace(),
        }
    }
}

/// Where a workspace is taken on the command line: its id, its Sandbox name, or what
/// `list -o name` prints (issue 32 §1).
impl std::str::FromStr for WorkspaceId {
    type Err = BadReference;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_reference(s)
    }
}

/// Why a text given for a workspace names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReference {
    #[error(transparent)]
    Id(#[from] InvalidWorkspaceId),
    #[error("not a workspace: Sandbox {name} has no {SANDBOX_PREFIX} prefix")]
    NoPrefix { name: String },
    #[error(
        "not a workspace: {text:?} names a {resource}, not a Sandbox (give ID, {SANDBOX_PREFIX}ID or sandbox.agents.x-k8s.io/{SANDBOX_PREFIX}ID)"
    )]
    NotASandbox { text: String, resource: String },
}

/// `sandbox`, `sandboxes`, either with `.agents.x-k8s.io` or `.VERSION.agents.x-k8s.io`, any
/// case (the resource forms kubectl takes, `-o name`'s among them).
fn is_sandbox_resource(resource: &str) -> bool {
    let r = resource.to_ascii_lowercase();
    let (plural, rest) = r.split_once('.').unwrap_or((&r, ""));
    if plural != "sandbox" && plural != "sandboxes" {
        return false;
    }
    let group = match rest.split_once('.') {
        // `v1beta1.agents.x-k8s.io`: a version, then the group
        Some((version, group)) if is_api_version(version) => group,
        _ => rest,
    };
    group.is_empty() || group == "agents.x-k8s.io"
}

/// `v1`, `v1beta1`, `v2alpha3`.
fn is_api_version(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('v') else {
        return false;
    };
    let major = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    if major.len() == rest.len() {
        return false;
    }
    let minor = major.strip_prefix("alpha").or_else(|| major.strip_prefix("beta"));
    match minor {
        None => major.is_empty(),
        Some(m) => !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// A workspace as the command line names it: `ID`, `namzu-ws-ID`, or `RESOURCE/namzu-ws-ID` with
/// a Sandbox resource (`sandbox.agents.x-k8s.io/…`, `sandboxes/…`, …). The id is validated as
/// [`WorkspaceId::parse`] does, so nothing else reaches a URL. A bare text starting with the
/// prefix is a Sandbox name: the workspace with id `namzu-ws-x` is `namzu-ws-namzu-ws-x`.
pub(crate) fn parse_reference(text: &str) -> Result<WorkspaceId, BadReference> {
    let (resource, name) = match text.split_once('/') {
        Some((resource, name)) => (Some(resource), name),
        None => (None, text),
    };
    if let Some(resource) = resource
        && !is_sandbox_resource(resource)
    {
        return Err(BadReference::NotASandbox {
            text: text.to_string(),
            resource: resource.to_string(),
        });
    }
    match (name.strip_prefix(SANDBOX_PREFIX), resource) {
        (Some(id), _) => Ok(WorkspaceId::parse(id)?),
        (None, Some(_)) => Err(BadReference::NoPrefix { name: name.to_string() }),
        (None, None) => Ok(WorkspaceId::parse(name)?),
    }
}

/// The id part of a Sandbox name, as the library's list strips it (not re-validated).
pub fn id_of(sandbox_name: &str) -> Option<&str> {
    sandbox_name.strip_prefix(SANDBOX_PREFIX)
}

/// The template label a workspace's pod template carries, if non-empty.
pub fn template_label(sandbox: &Value) -> Option<&str> {
    non_empty(sandbox, &["spec", "podTemplate", "metadata", "labels", TEMPLATE_LABEL])
}

/// A Sandbox is a workspace iff it has the prefix AND a non-empty template label.
pub fn is_workspace(sandbox: &Value) -> bool {
    let name = super::object::name(sandbox);
    name.starts_with(SANDBOX_PREFIX) && template_label(sandbox).is_some()
}

/// agent-sandbox's `NameHash`: FNV-1a 32 of a Sandbox's name, 8 lowercase hex digits — the value
/// of the `sandbox-name-hash` label the controller re-adopts an unowned disk by.
pub fn name_hash(sandbox: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in sandbox.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The Sandbox name of a (valid) workspace id.
    fn sandbox_name(id: &str) -> Result<String, InvalidWorkspaceId> {
        validate_id(id)?;
        Ok(format!("{SANDBOX_PREFIX}{id}"))
    }

    #[test]
    fn id_rule_edges() {
        for ok in ["a", "0", "a-b", "shared-desk", &"a".repeat(54), "9-9"] {
            assert!(validate_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "Not A Label", "a_b", "a.b", "é", &"a".repeat(55)] {
            let err = validate_id(bad).unwrap_err();
            assert!(err.to_string().contains("cannot name a Sandbox"), "{bad}");
        }
        assert_eq!(sandbox_name("x1").unwrap(), "namzu-ws-x1");
        assert_eq!(format!("namzu-ws-{}", "a".repeat(54)).len(), 63);
    }

    #[test]
    fn namespace_and_name_rules() {
        for ok in ["a", "agents", "team-1", &"a".repeat(63)] {
            assert!(validate_namespace(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "A",
            "a/b",
            "research/sandboxes/namzu-ws-tango?x=",
            "a.b",
            "..",
            "%2f",
            &"a".repeat(64),
        ] {
            assert!(validate_namespace(bad).is_err(), "{bad}");
        }
        for ok in ["namzu-ws-a", "coder", "a.b-c"] {
            assert!(is_path_safe_name(ok), "{ok}");
        }
        for bad in ["", "a/b", "a?b", "..", ".", "a..b", "A", "%2e"] {
            assert!(!is_path_safe_name(bad), "{bad}");
        }
    }

    #[test]
    fn references_name_a_workspace_or_say_why_not() {
        for ok in [
            "romeo",
            "namzu-ws-romeo",
            "sandbox.agents.x-k8s.io/namzu-ws-romeo",
            "sandboxes/namzu-ws-romeo",
            "sandbox/namzu-ws-romeo",
            "sandboxes.agents.x-k8s.io/namzu-ws-romeo",
            "Sandbox/namzu-ws-romeo",
            "sandboxes.v1beta1.agents.x-k8s.io/namzu-ws-romeo",
        ] {
            assert_eq!(parse_reference(ok).map(|i| i.to_string()), Ok("romeo".into()), "{ok}");
        }
        assert_eq!(
            parse_reference("namzu-ws-namzu-ws-x").map(|i| i.to_string()),
            Ok("namzu-ws-x".into())
        );
        assert_eq!(
            parse_reference("sandbox.agents.x-k8s.io/other")
                .unwrap_err()
                .to_string(),
            "not a workspace: Sandbox other has no namzu-ws- prefix"
        );
        for bad in [
            "pod/namzu-ws-romeo",
            "sandboxclaims/namzu-ws-romeo",
            "sandbox.example.com/namzu-ws-romeo",
            "sandbox.v1x.agents.x-k8s.io/namzu-ws-romeo",
            "/namzu-ws-romeo",
        ] {
            assert!(
                matches!(parse_reference(bad), Err(BadReference::NotASandbox { .. })),
                "{bad}"
            );
        }
        for bad in [
            "namzu-ws-",
            "namzu-ws-Bad",
            "sandbox/namzu-ws-a/b",
            "sandbox/namzu-ws-a?x=",
            "",
            "a b",
        ] {
            assert!(matches!(parse_reference(bad), Err(BadReference::Id(_))), "{bad}");
        }
    }

    #[test]
    fn workspace_needs_prefix_and_label() {
        let sbx = |name: &str, label: Option<&str>| {
            let labels = label.map_or(json!({}), |l| json!({ TEMPLATE_LABEL: l }));
            json!({"metadata":{"name":name},"spec":{"podTemplate":{"metadata":{"labels":labels}}}})
        };
        assert!(is_workspace(&sbx("namzu-ws-awake", Some("ws"))));
        assert!(!is_workspace(&sbx("sbx-7f3a", Some("ws"))));
        assert!(!is_workspace(&sbx("namzu-ws-stranger", None)));
        assert!(!is_workspace(&sbx("namzu-ws-empty", Some(""))));
        assert!(!is_workspace(&sbx("namzu-task-1", Some("ws"))));
        assert_eq!(id_of("namzu-ws-Odd_Id"), Some("Odd_Id"));
    }

    #[test]
    fn a_workspace_key_says_its_context_across_several_only() {
        let key = WorkspaceKey::new(Some("prod"), "agents", "alpha");
        assert_eq!(key.who(true), "prod/alpha");
        assert_eq!(key.who(false), "alpha");
        assert_eq!(key.place(true), "prod/agents");
        assert_eq!(key.place(false), "agents");
        assert_eq!(key.qualified(true), "prod:agents/alpha");
        assert_eq!(key.qualified(false), "agents/alpha");
        assert_eq!(key.in_namespace(), "agents/alpha");
        let unnamed = WorkspaceKey::new(None, "agents", "alpha");
        assert_eq!(unnamed.who(true), "alpha");
        assert_eq!(unnamed.qualified(true), "agents/alpha");
        assert_eq!(unnamed.context_name(), "");
    }
}
