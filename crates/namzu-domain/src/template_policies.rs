//! A SandboxTemplate's own policies (agent-sandbox v1.0.3, pure): `networkPolicyManagement`
//! (`Managed` default | `Unmanaged`), `envVarsInjectionPolicy` and `volumeClaimTemplatesPolicy`
//! (`Disallowed` default | `Allowed` | `Overrides`), and what they explain: a Ready=False
//! `EnvVarsInjectionRejected` or `VolumeClaimTemplatesError` on the Sandbox (or its claim), or an
//! Event of that reason — the controller refused a claim's `env` or `volumeClaimTemplates`
//! because the template's policy does not let them in.

use serde_json::{Value, json};

/// One policy as read: its value, and whether the template left it to the CRD's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub key: &'static str,
    pub value: String,
    pub defaulted: bool,
}

impl Policy {
    /// `envVarsInjectionPolicy Disallowed (default)`.
    pub fn shown(&self) -> String {
        if self.defaulted {
            format!("{} {} (default)", self.key, self.value)
        } else {
            format!("{} {}", self.key, self.value)
        }
    }

    pub fn json(&self) -> Value {
        json!({"value": self.value, "defaulted": self.defaulted})
    }
}

pub(crate) const NETWORK: &str = "networkPolicyManagement";
pub(crate) const ENV_VARS: &str = "envVarsInjectionPolicy";
pub(crate) const VOLUME_CLAIM_TEMPLATES: &str = "volumeClaimTemplatesPolicy";

/// The three policies of `template`, defaults said as such.
pub fn policies(template: &Value) -> [Policy; 3] {
    let read = |key: &'static str, default: &str| {
        let v = template.pointer(&format!("/spec/{key}")).and_then(Value::as_str);
        Policy {
            key,
            value: v.unwrap_or(default).to_string(),
            defaulted: v.is_none(),
        }
    };
    [
        read(NETWORK, "Managed"),
        read(ENV_VARS, "Disallowed"),
        read(VOLUME_CLAIM_TEMPLATES, "Disallowed"),
    ]
}

/// A refusal the template's policy explains, with where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `EnvVarsInjectionRejected` or `VolumeClaimTemplatesError`.
    pub reason: String,
    /// Where it was read: `Sandbox condition Ready=False`, `Event (Warning)`.
    pub source: String,
    pub message: String,
    /// The policy that explains it, as read from the template (`None`: the template was not read).
    pub policy: Option<Policy>,
}

impl Refusal {
    /// The diagnosis in words, the policy named as its evidence, and the next step.
    pub fn explain(&self) -> String {
        let what = if self.reason == "EnvVarsInjectionRejected" {
            "the claim's env"
        } else {
            "the claim's volumeClaimTemplates"
        };
        let message = if self.message.is_empty() {
            String::new()
        } else {
            format!(": {}", self.message)
        };
        let because = match &self.policy {
            Some(p) if p.value == "Disallowed" => format!(
                "; the template's {} refuses {what}: set it to Allowed or Overrides on the SandboxTemplate, or drop them from the claim",
                p.shown()
            ),
            Some(p) => format!(
                "; the template's {} lets {what} in, so the refusal is about the values themselves (kubectl describe the claim)",
                p.shown()
            ),
            None => "; the template's policy could not be read: unknown whether it refuses them".into(),
        };
        format!("{} ({}){message}{because}", self.reason, self.source)
    }
}

const REASONS: [(&str, &str); 2] = [
    ("EnvVarsInjectionRejected", ENV_VARS),
    ("VolumeClaimTemplatesError", VOLUME_CLAIM_TEMPLATES),
];

/// The refusals found on the conditions of `object` (a Sandbox, or the SandboxClaim that owns
/// it) and in `events` (its own; `None`: not read), each explained by `template`'s policy when
/// the template was read.
pub fn refusals(object: &Value, events: Option<&[Value]>, template: Option<&Value>) -> Vec<Refusal> {
    let policy = |key: &str| template.and_then(|t| policies(t).into_iter().find(|p| p.key == key));
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("Sandbox");
    let sandbox = object;
    let mut out = Vec::new();
    for c in sandbox
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
        if let Some((r, key)) = REASONS.iter().find(|(r, _)| *r == reason) {
            out.push(Refusal {
                reason: r.to_string(),
                source: format!(
                    "{kind} condition {}={}",
                    c.get("type").and_then(Value::as_str).unwrap_or("?"),
                    c.get("status").and_then(Value::as_str).unwrap_or("?")
                ),
                message: c.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
                policy: policy(key),
            });
        }
    }
    for e in events.unwrap_or(&[]) {
        let reason = e.get("reason").and_then(Value::as_str).unwrap_or_default();
        if let Some((r, key)) = REASONS.iter().find(|(r, _)| *r == reason) {
            if out.iter().any(|o| o.reason == *r) {
                continue;
            }
            out.push(Refusal {
                reason: r.to_string(),
                source: format!("Event ({})", e.get("type").and_then(Value::as_str).unwrap_or("Normal")),
                message: e
                    .get("message")
                    .or_else(|| e.get("note"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                policy: policy(key),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_policy_that_explains_it() {
        let template = json!({"spec": {"envVarsInjectionPolicy": "Allowed"}});
        let [net, env, vct] = policies(&template);
        assert_eq!(net.shown(), "networkPolicyManagement Managed (default)");
        assert_eq!(env.shown(), "envVarsInjectionPolicy Allowed");
        assert!(vct.defaulted);
        let sbx = json!({"status": {"conditions": [{"type": "Ready", "status": "False",
            "reason": "VolumeClaimTemplatesError", "message": "not allowed"}]}});
        let ev = [json!({"reason": "VolumeClaimTemplatesError", "type": "Warning", "message": "x"})];
        let found = refusals(&sbx, Some(&ev), Some(&template));
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].explain(),
            "VolumeClaimTemplatesError (Sandbox condition Ready=False): not allowed; the template's volumeClaimTemplatesPolicy Disallowed (default) refuses the claim's volumeClaimTemplates: set it to Allowed or Overrides on the SandboxTemplate, or drop them from the claim"
        );
        assert!(refusals(&sbx, None, None)[0].explain().contains("could not be read"));
    }
}
