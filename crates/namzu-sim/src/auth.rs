//! Bearer tokens, RBAC rules (verb × group × resource × namespace) and SelfSubjectAccessReview.

use serde::Deserialize;

/// One rule; `*` matches anything, an empty `namespaces` list means every namespace and the
/// cluster scope (a ClusterRoleBinding), otherwise only the named namespaces (RoleBindings).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub verbs: Vec<String>,
    #[serde(default = "any")]
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    #[serde(default)]
    pub namespaces: Vec<String>,
}

fn any() -> Vec<String> {
    vec!["*".into()]
}

impl Rule {
    pub fn new(verbs: &[&str], api_groups: &[&str], resources: &[&str], namespaces: &[&str]) -> Rule {
        let own = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        Rule {
            verbs: own(verbs),
            api_groups: own(api_groups),
            resources: own(resources),
            namespaces: own(namespaces),
        }
    }

    fn allows(&self, verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> bool {
        let has = |xs: &[String], x: &str| xs.iter().any(|v| v == "*" || v == x);
        // as RBAC: `pods` does not grant `pods/log`; `*` and `*/log` do
        let resource_ok = self.resources.iter().any(|v| {
            v == "*"
                || v == resource
                || v.strip_prefix("*/")
                    .is_some_and(|sub| resource.split_once('/').is_some_and(|(_, s)| s == sub))
        });
        has(&self.verbs, verb)
            && has(&self.api_groups, group)
            && resource_ok
            && (self.namespaces.is_empty() || namespace.is_some_and(|ns| has(&self.namespaces, ns)))
    }
}

/// A user the sim knows by token. `rules: None` is cluster-admin.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct User {
    pub name: String,
    pub token: String,
    #[serde(default)]
    pub rules: Option<Vec<Rule>>,
    /// Requests that carry no token are this user (kubectl sends no token over plain http).
    #[serde(default)]
    pub anonymous: bool,
}

impl User {
    pub fn admin(name: &str, token: &str) -> User {
        User {
            name: name.into(),
            token: token.into(),
            rules: None,
            anonymous: false,
        }
    }

    pub fn with_rules(name: &str, token: &str, rules: Vec<Rule>) -> User {
        User {
            name: name.into(),
            token: token.into(),
            rules: Some(rules),
            anonymous: false,
        }
    }

    pub fn can(&self, verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> bool {
        self.rules
            .as_ref()
            .is_none_or(|rules| rules.iter().any(|r| r.allows(verb, group, resource, namespace)))
    }
}

/// No known bearer token came with the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unauthenticated;

/// Who a request is: with no users configured, everyone is an anonymous admin.
pub(crate) fn authenticate<'a>(
    users: &'a [User],
    authorization: Option<&str>,
) -> Result<Option<&'a User>, Unauthenticated> {
    if users.is_empty() {
        return Ok(None);
    }
    let token = authorization.and_then(|h| h.strip_prefix("Bearer ")).map(str::trim);
    let user = match token {
        Some(t) => users.iter().find(|u| u.token == t),
        None => users.iter().find(|u| u.anonymous),
    };
    user.map(Some).ok_or(Unauthenticated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_scoped_rules() {
        let u = User::with_rules(
            "dev",
            "t",
            vec![Rule::new(
                &["get", "list"],
                &["agents.x-k8s.io"],
                &["sandboxes"],
                &["agents"],
            )],
        );
        assert!(u.can("list", "agents.x-k8s.io", "sandboxes", Some("agents")));
        assert!(!u.can("list", "agents.x-k8s.io", "sandboxes", None));
        assert!(!u.can("patch", "agents.x-k8s.io", "sandboxes", Some("agents")));
        assert!(!u.can("list", "", "pods", Some("agents")));
        assert!(User::admin("a", "t").can("delete", "", "pods", None));
        let reader = User::with_rules("r", "t", vec![Rule::new(&["get"], &[""], &["pods", "*/log"], &[])]);
        assert!(reader.can("get", "", "pods/log", Some("agents")));
        assert!(!reader.can("get", "", "pods/exec", Some("agents")));
    }
}
