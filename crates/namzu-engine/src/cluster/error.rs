//! What can go wrong talking to a cluster, each as one clear line.

use super::kinds::ApiKind;
use std::fmt;
use std::time::Duration;

/// The request an error belongs to, for messages that name verb, resource and namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiCall {
    pub verb: &'static str,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ApiCall {
    pub(crate) fn new(verb: &'static str, kind: &ApiKind, namespace: Option<&str>, name: &str) -> ApiCall {
        ApiCall {
            verb,
            resource: kind.qualified(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }
}

impl fmt::Display for ApiCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.name.is_empty() {
            write!(f, " {}", self.name)?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in namespace {ns}"),
            // only a list or watch spans namespaces; `/version`, discovery and cluster-scoped
            // requests are in none
            None if matches!(self.verb, "list" | "watch") => write!(f, " in all namespaces"),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterError {
    /// The kubeconfig could not be read or names something that is not there.
    Config(String),
    Unreachable {
        server: String,
        cause: String,
    },
    Tls {
        server: String,
        cause: String,
    },
    Unauthorized {
        server: String,
    },
    /// Getting credentials failed (exec plugin, token file).
    Auth(String),
    Forbidden {
        op: Box<ApiCall>,
        message: String,
    },
    /// Any other API status.
    Api {
        code: u16,
        reason: String,
        message: String,
        op: Box<ApiCall>,
        /// What a 429 (or 503) asked the client to wait, from the Status's details.
        retry_after: Option<u32>,
    },
    NotInstalled,
    TooOld {
        served: Vec<String>,
    },
    Timeout {
        op: Box<ApiCall>,
        after: Duration,
    },
    Other(String),
    /// `--at`: the recording does not hold the instant asked for (one line saying what it holds).
    NotRecorded(String),
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Config(m) => write!(f, "kubeconfig: {m}"),
            ClusterError::Unreachable { server, cause } => {
                write!(f, "cannot reach the Kubernetes API server at {server}: {cause}")
            }
            ClusterError::Tls { server, cause } => {
                write!(f, "TLS with the API server at {server} failed: {cause}")
            }
            ClusterError::Unauthorized { server } => write!(
                f,
                "the API server at {server} rejected the credentials (401 Unauthorized): re-authenticate (for example run `kubectl get ns`) or check the kubeconfig user"
            ),
            ClusterError::Auth(m) => write!(f, "could not get credentials for the API server: {m}"),
            ClusterError::Forbidden { op, message } => {
                write!(f, "forbidden: you may not {op} ({message})")
            }
            ClusterError::Api {
                code,
                reason,
                message,
                op,
                ..
            } => write!(f, "{op}: {code} {reason}: {message}"),
            ClusterError::NotInstalled => write!(
                f,
                "agent-sandbox is not installed on this cluster: the API group agents.x-k8s.io is not served (install agent-sandbox v0.5.0 or later)"
            ),
            ClusterError::TooOld { served } => write!(
                f,
                "agent-sandbox too old (needs ≥ v0.5.0): the cluster serves agents.x-k8s.io {} but not v1beta1",
                served.join(", ")
            ),
            ClusterError::Timeout { op, after } => {
                write!(f, "request timed out after {}s: {op}", after.as_secs_f64())
            }
            ClusterError::Other(m) | ClusterError::NotRecorded(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ClusterError {}

/// The innermost cause of an error chain, where transports put the useful words.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

impl ClusterError {
    pub(crate) fn from_kube(e: kube::Error, op: &ApiCall, server: &str) -> ClusterError {
        match e {
            kube::Error::Api(s) => match s.code {
                401 => ClusterError::Unauthorized { server: server.into() },
                403 => ClusterError::Forbidden {
                    op: Box::new(op.clone()),
                    message: s.message,
                },
                code => ClusterError::Api {
                    code,
                    retry_after: s.details.as_ref().map(|d| d.retry_after_seconds).filter(|s| *s > 0),
                    reason: s.reason,
                    message: s.message,
                    op: Box::new(op.clone()),
                },
            },
            kube::Error::Auth(a) => ClusterError::credentials(&a),
            e @ (kube::Error::HyperError(_) | kube::Error::Service(_)) => {
                let chain = format!("{e:?}").to_lowercase();
                let cause = root_cause(&e);
                // rustls names what went wrong; a plain-http server answering TLS is a "corrupt message"
                let tls = [
                    "certificate",
                    "tls",
                    "handshake",
                    "corrupt message",
                    "invalidcontenttype",
                    "unknownissuer",
                    "alert",
                ];
                if tls.iter().any(|t| chain.contains(t)) {
                    ClusterError::Tls {
                        server: server.into(),
                        cause,
                    }
                } else {
                    ClusterError::Unreachable {
                        server: server.into(),
                        cause,
                    }
                }
            }
            other => ClusterError::Other(format!("{op}: {other}")),
        }
    }

    /// An exec credential plugin that failed says so in its stderr: keep that, drop the rest.
    pub(crate) fn credentials(e: &kube::client::AuthError) -> ClusterError {
        use kube::client::AuthError;
        let message = match e {
            AuthError::AuthExecRun { cmd, out } => {
                let program = cmd
                    .split_whitespace()
                    .find(|w| !w.contains('='))
                    .unwrap_or(cmd)
                    .trim_matches('"');
                let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
                format!("exec plugin {program} failed ({}): {said}", out.status)
            }
            AuthError::AuthExecStart(io) => {
                format!("exec plugin could not be started (is it on PATH?): {io}")
            }
            other => format!("{other}: {}", root_cause(other)),
        };
        ClusterError::Auth(message)
    }

    pub fn is_forbidden(&self) -> bool {
        matches!(self, ClusterError::Forbidden { .. })
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ClusterError::Api { code: 404, .. })
    }
}

/// A read that RBAC refused is an observation (shown as `?`), not an error; every other error
/// stays one.
pub(crate) fn observed<T>(read: Result<T, ClusterError>) -> Result<namzu_domain::workspace::Observed<T>, ClusterError> {
    use namzu_domain::workspace::Observed;
    match read {
        Ok(v) => Ok(Observed::Known(v)),
        Err(e) if e.is_forbidden() => Ok(Observed::Forbidden),
        Err(e) => Err(e),
    }
}
