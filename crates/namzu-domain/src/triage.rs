//! Which pod and container `logs`, `exec` (and the TUI's `l` and `s`) act on, and why there is
//! none: the workspace's own pod by identity — the pod the Sandbox names, owned by the Sandbox's
//! uid — never a pod found by guessing a name. Kubectl's container rules: `-c` names one of the
//! pod's containers (init containers too); without it, the pod's
//! `kubectl.kubernetes.io/default-container` annotation, else the first container.

use super::object::{annotation, at, name, str_at, uid};
use super::patch::Mode;
use super::pod::owned_by;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The annotation kubectl reads for the container a command defaults to.
pub(crate) const DEFAULT_CONTAINER_ANNOTATION: &str = "kubectl.kubernetes.io/default-container";

/// What the command does in the container: reading logs needs an instance that ran; a shell
/// needs one running now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Logs { previous: bool },
    Exec,
}

/// Why there is no pod or container to act on. Each is one line for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The workspace is Suspended: its pod was deleted, its disk kept.
    Suspended { id: String },
    /// A Sandbox under the workspace prefix without the library's template label: not a workspace.
    NotAWorkspace { sandbox: String },
    /// Running, but no pod stands under it yet (being created, or never created).
    NotCreated { id: String },
    /// A pod stands under the workspace's name that the Sandbox does not own.
    Foreign { pod: String, owner: String },
    /// The pod is not Running (exec only).
    PodNotRunning { pod: String, phase: String },
    /// The pod is being deleted (exec only): the library never binds it, a command there dies
    /// with it; `suspended`: its workspace is Suspended (the pod is on its way out).
    Terminating { pod: String, id: String, suspended: bool },
    /// `-c` names no container of the pod.
    NoSuchContainer {
        asked: String,
        pod: String,
        containers: Vec<String>,
    },
    /// The container has never started (still waiting: `reason`).
    NeverStarted { container: String, reason: String },
    /// The container is not running now (exec only).
    NotRunning { container: String, state: String },
    /// `--previous`, but no earlier instance of the container terminated.
    NoPrevious { container: String },
}

impl Unavailable {
    /// The line the user reads: what is missing and what to do instead.
    pub fn message(&self) -> String {
        match self {
            Unavailable::Suspended { id } => format!(
                "workspace {id} is Suspended: its pod was deleted (the disk is kept); resume it first: kubectl namzu resume {id}"
            ),
            Unavailable::NotAWorkspace { sandbox } => format!(
                "{sandbox} is not a workspace (no {} label on its pod template)",
                super::annotations::TEMPLATE_LABEL
            ),
            Unavailable::NotCreated { id } => format!(
                "workspace {id} has no pod yet (it is being created, or cannot be: see kubectl namzu inspect {id})"
            ),
            Unavailable::Foreign { pod, owner } => format!(
                "pod {pod} is not this workspace's: it is owned by {owner}, not by the Sandbox (kubectl namzu inspect says more)"
            ),
            Unavailable::Terminating {
                pod,
                id,
                suspended: true,
            } => format!(
                "workspace {id} is Suspended: its pod {pod} is on its way out and runs no command; resume it first: kubectl namzu resume {id}"
            ),
            Unavailable::Terminating {
                pod,
                id,
                suspended: false,
            } => format!(
                "pod {pod} is being deleted: a command there dies with it, and the library never binds it; wait for the workspace's next pod (kubectl namzu inspect {id})"
            ),
            Unavailable::PodNotRunning { pod, phase } => {
                format!("pod {pod} is {phase}, not Running: nothing runs in it")
            }
            Unavailable::NoSuchContainer { asked, pod, containers } => format!(
                "container {asked:?} is not in pod {pod}: choose one of: {}",
                containers.join(", ")
            ),
            Unavailable::NeverStarted { container, reason } => {
                format!("container {container} has not started yet (waiting: {reason}): no logs yet")
            }
            Unavailable::NotRunning { container, state } => {
                format!("container {container} is not running ({state}): nothing to run a command in")
            }
            Unavailable::NoPrevious { container } => format!(
                "container {container} has no earlier instance that terminated: --previous has nothing to show (it has not restarted)"
            ),
        }
    }
}

/// The pod and container a command acts on — one rule for `logs`, `exec` and the TUI's `l` and
/// `s`: the workspace's own pod; for a command (`Purpose::Exec`) never the pod of a Suspended
/// workspace, nor one being deleted ([`choose_container`]).
pub fn command_target<'a>(
    id: &str,
    sandbox: &Value,
    pod: Option<&'a Value>,
    asked: Option<&str>,
    purpose: Purpose,
) -> Result<(&'a Value, Chosen), Unavailable> {
    let pod = own_pod(id, sandbox, pod)?;
    if purpose == Purpose::Exec && Mode::of_sandbox(sandbox) == Mode::Suspended {
        return Err(Unavailable::Terminating {
            pod: name(pod).to_string(),
            id: id.to_string(),
            suspended: true,
        });
    }
    Ok((pod, choose_container(pod, asked, purpose)?))
}

/// The workspace's own pod, if `pod` (the one standing under the Sandbox's pod name, or its
/// selector's) is it.
pub(crate) fn own_pod<'a>(id: &str, sandbox: &Value, pod: Option<&'a Value>) -> Result<&'a Value, Unavailable> {
    if !super::naming::is_workspace(sandbox) {
        return Err(Unavailable::NotAWorkspace {
            sandbox: name(sandbox).to_string(),
        });
    }
    let Some(pod) = pod else {
        return Err(match Mode::of_sandbox(sandbox) {
            Mode::Suspended => Unavailable::Suspended { id: id.to_string() },
            Mode::Running => Unavailable::NotCreated { id: id.to_string() },
        });
    };
    match uid(sandbox) {
        Some(owner) if owned_by(pod, owner) => Ok(pod),
        _ => Err(Unavailable::Foreign {
            pod: name(pod).to_string(),
            owner: owner_words(pod),
        }),
    }
}

fn owner_words(pod: &Value) -> String {
    let owners: Vec<String> = super::object::owner_refs(pod)
        .iter()
        .map(|r| {
            format!(
                "{} {} (uid {})",
                str_at(r, &["kind"]).unwrap_or("?"),
                str_at(r, &["name"]).unwrap_or("?"),
                str_at(r, &["uid"]).unwrap_or("?")
            )
        })
        .collect();
    if owners.is_empty() {
        "nothing (no owner)".into()
    } else {
        owners.join(", ")
    }
}

/// The container a command acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub container: String,
    /// Chosen without `-c` among several: kubectl then says "Defaulted container X out of: …".
    pub defaulted_among: Option<Vec<String>>,
}

/// Names of the pod's containers, then its init containers.
pub fn container_names(pod: &Value) -> Vec<String> {
    let names = |key: &str| -> Vec<String> {
        at(pod, &["spec", key])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    let mut all = names("containers");
    all.extend(names("initContainers"));
    all
}

/// The container's status entry, among the pod's container and init-container statuses.
pub fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .filter_map(|k| at(pod, &["status", k]).and_then(Value::as_array))
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

/// The container a command acts on in `pod`, checked against what the command needs of it.
pub(crate) fn choose_container(pod: &Value, asked: Option<&str>, purpose: Purpose) -> Result<Chosen, Unavailable> {
    let all = container_names(pod);
    let main: Vec<String> = at(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let chosen = match asked {
        Some(a) if all.iter().any(|c| c == a) => Chosen {
            container: a.to_string(),
            defaulted_among: None,
        },
        Some(a) => {
            return Err(Unavailable::NoSuchContainer {
                asked: a.to_string(),
                pod: name(pod).to_string(),
                containers: all,
            });
        }
        None => {
            let preferred = annotation(pod, DEFAULT_CONTAINER_ANNOTATION).filter(|d| main.iter().any(|c| c == d));
            let Some(first) = preferred.map(str::to_string).or_else(|| main.first().cloned()) else {
                return Err(Unavailable::NoSuchContainer {
                    asked: String::new(),
                    pod: name(pod).to_string(),
                    containers: all,
                });
            };
            Chosen {
                defaulted_among: (main.len() > 1).then(|| main.clone()),
                container: first,
            }
        }
    };
    let status = container_status(pod, &chosen.container);
    let state = |k: &str| status.and_then(|s| at(s, &["state", k]));
    let restarted = status
        .and_then(|s| s.get("restartCount"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        > 0;
    let previous_ran = status.and_then(|s| at(s, &["lastState", "terminated"])).is_some();
    match purpose {
        Purpose::Logs { previous: true } if !previous_ran => Err(Unavailable::NoPrevious {
            container: chosen.container,
        }),
        Purpose::Logs { previous: false } => match state("waiting") {
            Some(w) if !restarted && !previous_ran => Err(Unavailable::NeverStarted {
                reason: str_at(w, &["reason"]).unwrap_or("ContainerCreating").to_string(),
                container: chosen.container,
            }),
            _ if status.is_none() => Err(Unavailable::NeverStarted {
                container: chosen.container,
                reason: "no status yet".into(),
            }),
            _ => Ok(chosen),
        },
        Purpose::Logs { previous: true } => Ok(chosen),
        Purpose::Exec => {
            if pod.pointer("/metadata/deletionTimestamp").is_some() {
                return Err(Unavailable::Terminating {
                    pod: name(pod).to_string(),
                    id: super::naming::id_of(name(pod)).unwrap_or(name(pod)).to_string(),
                    suspended: false,
                });
            }
            let phase = str_at(pod, &["status", "phase"]).unwrap_or("Unknown");
            if phase != "Running" {
                return Err(Unavailable::PodNotRunning {
                    pod: name(pod).to_string(),
                    phase: phase.to_string(),
                });
            }
            if state("running").is_some() {
                return Ok(chosen);
            }
            Err(Unavailable::NotRunning {
                state: state_words(pod, &chosen.container),
                container: chosen.container,
            })
        }
    }
}

/// A container's state in a few words: `running`, `waiting: CrashLoopBackOff`, `terminated: Error`.
pub fn state_words(pod: &Value, container: &str) -> String {
    let state = |k: &str| container_status(pod, container).and_then(|s| at(s, &["state", k]));
    match (state("running"), state("waiting"), state("terminated")) {
        (Some(_), _, _) => "running".into(),
        (_, Some(w), _) => format!("waiting: {}", str_at(w, &["reason"]).unwrap_or("?")),
        (_, _, Some(t)) => format!("terminated: {}", str_at(t, &["reason"]).unwrap_or("?")),
        _ => "no status yet".into(),
    }
}

/// Whether a container that is not running will start again: not an init container that
/// finished, not one the pod's restart policy leaves (`Never`; `OnFailure` after exit code 0).
pub fn will_restart(pod: &Value, container: &str) -> bool {
    let init = at(pod, &["spec", "initContainers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("name").and_then(Value::as_str) == Some(container));
    let terminated = container_status(pod, container).and_then(|s| at(s, &["state", "terminated"]));
    let Some(t) = terminated else {
        // waiting (a crash loop's back-off) or starting: it will run
        return true;
    };
    let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
    match str_at(pod, &["spec", "restartPolicy"]).unwrap_or("Always") {
        _ if init && code == 0 => false,
        "Never" => false,
        "OnFailure" => code != 0,
        _ => true,
    }
}

/// The instance of a container a follow is reading: a restart (a new container id or a higher
/// restart count) means its stream ended and the next instance's begins.
pub fn instance(pod: &Value, container: &str) -> (i64, String) {
    let status = container_status(pod, container);
    (
        status
            .and_then(|s| s.get("restartCount"))
            .and_then(Value::as_i64)
            .unwrap_or(0),
        status
            .and_then(|s| s.get("containerID"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    )
}

/// What a shell opens with in a workspace's pod (the TUI's `s`): `sh`, which every image with a
/// shell has.
pub const SHELL: &str = "sh";

/// The `kubectl exec` command line for a command in the workspace's pod: the connection's
/// kubectl flags (its kubeconfig, context, cluster, user), the namespace, the pod and container
/// by name — the ones [`own_pod`] and [`choose_container`] checked just before.
pub fn kubectl_exec_args(
    kubectl_flags: &[String],
    namespace: &str,
    pod: &str,
    container: &str,
    stdin: bool,
    tty: bool,
    command: &[String],
) -> Vec<String> {
    let mut args: Vec<String> = kubectl_flags.to_vec();
    args.extend(["exec".to_string(), format!("--namespace={namespace}"), pod.to_string()]);
    args.push(format!("--container={container}"));
    if stdin {
        args.push("--stdin".into());
    }
    if tty {
        args.push("--tty".into());
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    args
}

/// Where a follow stands: the last instant printed and how many lines carried it, and after a
/// reconnect (which asks from that second on) how many of the replayed lines to skip.
#[derive(Debug, Default)]
pub struct Resume {
    printed: Option<(DateTime<Utc>, usize)>,
    skip: Option<(DateTime<Utc>, usize)>,
}

impl Resume {
    /// After a reconnect: the lines up to the last printed are replayed, and skipped.
    pub fn reconnected(&mut self) {
        self.skip = self.printed;
    }

    /// A new instance's log starts afresh.
    pub fn restarted(&mut self) {
        *self = Resume::default();
    }

    pub fn since(&self) -> Option<DateTime<Utc>> {
        self.printed.map(|(t, _)| t)
    }

    /// The line to print, unless it was printed before the reconnect; the timestamp the follow
    /// asked for is stripped when the user did not ask for it.
    pub fn line(&mut self, line: &str, keep_stamp: bool) -> Option<String> {
        let (stamp, text) = line.split_once(' ').unwrap_or((line, ""));
        let Some(t) = super::timefmt::parse(stamp) else {
            return Some(line.to_string());
        };
        if let Some((seen, n)) = &mut self.skip {
            if t < *seen || (t == *seen && *n > 0) {
                if t == *seen {
                    *n -= 1;
                }
                return None;
            }
            self.skip = None;
        }
        self.printed = match self.printed {
            Some((p, n)) if p == t => Some((t, n + 1)),
            _ => Some((t, 1)),
        };
        Some(if keep_stamp { line.to_string() } else { text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sandbox(mode: &str) -> Value {
        json!({"metadata": {"name": "namzu-ws-a", "uid": "sb-1"}, "spec": {"operatingMode": mode,
            "podTemplate": {"metadata": {"labels": {"sandbox.namzu.ai/template": "coder"}}}}})
    }

    fn pod(statuses: Value) -> Value {
        json!({
            "metadata": {"name": "namzu-ws-a", "ownerReferences": [{"kind": "Sandbox", "name": "namzu-ws-a", "uid": "sb-1"}]},
            "spec": {"containers": [{"name": "agent"}, {"name": "sidecar"}], "initContainers": [{"name": "init"}]},
            "status": {"phase": "Running", "containerStatuses": statuses}
        })
    }

    #[test]
    fn the_pod_is_the_sandboxs_own_or_none() {
        let p = pod(json!([]));
        assert!(own_pod("a", &sandbox("Running"), Some(&p)).is_ok());
        assert_eq!(
            own_pod("a", &sandbox("Suspended"), None),
            Err(Unavailable::Suspended { id: "a".into() })
        );
        assert_eq!(
            own_pod("a", &sandbox("Running"), None),
            Err(Unavailable::NotCreated { id: "a".into() })
        );
        let mut stranger = p.clone();
        stranger["metadata"]["ownerReferences"][0]["uid"] = json!("sb-0");
        let e = own_pod("a", &sandbox("Running"), Some(&stranger)).unwrap_err();
        assert!(e.message().contains("uid sb-0"), "{}", e.message());
    }

    #[test]
    fn containers_as_kubectl_chooses_them() {
        let running = json!([{"name": "agent", "restartCount": 0, "state": {"running": {}}},
                             {"name": "sidecar", "restartCount": 0, "state": {"running": {}}}]);
        let p = pod(running);
        let c = choose_container(&p, None, Purpose::Logs { previous: false }).unwrap();
        assert_eq!(c.container, "agent");
        assert_eq!(c.defaulted_among, Some(vec!["agent".into(), "sidecar".into()]));
        let mut annotated = p.clone();
        annotated["metadata"]["annotations"] = json!({DEFAULT_CONTAINER_ANNOTATION: "sidecar"});
        assert_eq!(
            choose_container(&annotated, None, Purpose::Exec).unwrap().container,
            "sidecar"
        );
        let e = choose_container(&p, Some("nope"), Purpose::Exec).unwrap_err();
        assert_eq!(
            e.message(),
            "container \"nope\" is not in pod namzu-ws-a: choose one of: agent, sidecar, init"
        );
        assert!(choose_container(&p, Some("init"), Purpose::Logs { previous: false }).is_err());
    }

    #[test]
    fn exec_runs_kubectl_against_the_same_cluster_and_pod() {
        let args = kubectl_exec_args(
            &["--kubeconfig=/k".into(), "--context=prod".into()],
            "agents",
            "namzu-ws-a",
            "agent",
            true,
            false,
            &["ls".into(), "-l".into()],
        );
        assert_eq!(
            args.join(" "),
            "--kubeconfig=/k --context=prod exec --namespace=agents namzu-ws-a --container=agent --stdin -- ls -l"
        );
    }

    #[test]
    fn logs_need_an_instance_that_ran() {
        let waiting =
            pod(json!([{"name": "agent", "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]));
        let e = choose_container(&waiting, Some("agent"), Purpose::Logs { previous: false }).unwrap_err();
        assert!(e.message().contains("ImagePullBackOff"));
        let e = choose_container(&waiting, Some("agent"), Purpose::Logs { previous: true }).unwrap_err();
        assert_eq!(
            e,
            Unavailable::NoPrevious {
                container: "agent".into()
            }
        );
        let crashing = pod(json!([{"name": "agent", "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1}}}]));
        assert!(choose_container(&crashing, Some("agent"), Purpose::Logs { previous: true }).is_ok());
        assert!(choose_container(&crashing, Some("agent"), Purpose::Logs { previous: false }).is_ok());
        let e = choose_container(&crashing, Some("agent"), Purpose::Exec).unwrap_err();
        assert!(e.message().contains("waiting: CrashLoopBackOff"), "{}", e.message());
    }

    #[test]
    fn a_container_that_ended_for_good_is_not_waited_for() {
        let mut p = pod(json!([{"name": "agent", "state": {"terminated": {"exitCode": 0}}},
                                {"name": "init", "state": {"terminated": {"exitCode": 0}}}]));
        p["status"]["initContainerStatuses"] = p["status"]["containerStatuses"].clone();
        assert!(!will_restart(&p, "init"), "an init container that succeeded is done");
        assert!(will_restart(&p, "agent"), "Always restarts");
        p["spec"]["restartPolicy"] = json!("OnFailure");
        assert!(!will_restart(&p, "agent"));
        p["spec"]["restartPolicy"] = json!("Never");
        assert!(!will_restart(&p, "agent"));
        let waiting = pod(json!([{"name": "agent", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]));
        assert!(will_restart(&waiting, "agent"));
    }

    #[test]
    fn a_reconnect_prints_no_line_twice() {
        let mut r = Resume::default();
        let a = "2026-12-01T10:00:00.100Z one";
        let b = "2026-12-01T10:00:00.200Z two";
        let b2 = "2026-12-01T10:00:00.200Z two again";
        assert_eq!(r.line(a, false).as_deref(), Some("one"));
        assert_eq!(r.line(b, true).as_deref(), Some(b));
        r.reconnected();
        // the server replays from the second: a, b, then what is new (a line at b's instant too)
        assert_eq!(r.line(a, false), None);
        assert_eq!(r.line(b, false), None);
        assert_eq!(r.line(b2, false).as_deref(), Some("two again"));
        assert_eq!(
            r.since().map(super::super::timefmt::js_iso).as_deref(),
            Some("2026-12-01T10:00:00.200Z")
        );
        r.restarted();
        assert_eq!(r.line(a, false).as_deref(), Some("one"));
        assert_eq!(r.line("no stamp", false).as_deref(), Some("no stamp"));
    }
}
