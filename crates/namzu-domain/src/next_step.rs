//! The next step for every diagnosis (issue 30 §4): what to do about it in words, the exact
//! command where there is one (with the workspace's own id, namespace and, in a fleet, context),
//! and the TUI key that does it. Pure: everything comes from the derived [`Workspace`].

use super::annotations::HOLDER_EPOCH;
use super::diagnosis::{Diagnosis, DiagnosisKind};
use super::drift::DriftState;
use super::egress::delete_command;
use super::naming::is_path_safe_name;
use super::patch::Mode;
use super::shell::word;
use super::workspace::{Observed, Workspace};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextStep {
    /// What to do and why, in one paragraph.
    pub text: String,
    /// The exact command, ready to paste; `None` where there is none to give.
    pub command: Option<String>,
    /// The TUI key that does the step (or its first part) on the row.
    pub key: Option<char>,
}

/// The next step for the workspace's diagnosis; `None` when it has none.
pub fn next_step(w: &Workspace) -> Option<NextStep> {
    let d = w.diagnosis.as_ref()?;
    let step = match d.kind {
        DiagnosisKind::StuckDeleting => step(
            format!(
                "Sandbox {} was asked to be deleted and {} {} not let it go: the controller that owns {} has not finished its clean-up. The workspace's timeline says since when and what happened; find that controller and read its log. Remove a finalizer only once its clean-up is known done: removing it skips that clean-up.",
                w.sandbox_name,
                w.finalizers.join(", "),
                if w.finalizers.len() == 1 { "has" } else { "have" },
                if w.finalizers.len() == 1 { "it" } else { "them" },
            ),
            Some(namzu(w, "history", &[])),
            Some('h'),
        ),
        DiagnosisKind::Expired if d.reason == "NotReaped" => step(
            "The workspace is past its shutdownTime under shutdownPolicy Delete, so agent-sandbox should have deleted it, and has not: its timeline says when it expired and what the controller did; if the controller runs, its log says why. Its disks are still there until the Sandbox goes.".into(),
            Some(namzu(w, "history", &[])),
            Some('h'),
        ),
        DiagnosisKind::Expired => step(
            format!(
                "The workspace expired and is kept on purpose (shutdownPolicy {}): agent-sandbox deleted its pod and keeps the Sandbox and its disks, so nothing is lost and nothing needs cleaning up. Its timeline says when it expired. To run it again, whoever set spec.shutdownTime sets a later one; to let it go, `{}` (its disks go with it).",
                w.shutdown_policy.as_deref().unwrap_or("Retain, the default"),
                namzu(w, "delete", &[])
            ),
            Some(namzu(w, "history", &[])),
            Some('h'),
        ),
        DiagnosisKind::PodStateUnknown => step(
            format!(
                "agent-sandbox cannot tell what the pod does: {} The pod's node has most likely stopped reporting (a node down or partitioned, a kubelet stopped); its timeline and the pod's node say more. Nothing is written until the state is known again: a suspend now would wait on a pod no one can see.",
                sentence(&d.message)
            ),
            Some(namzu(w, "history", &[])),
            Some('h'),
        ),
        DiagnosisKind::ForeignEgressPolicy => foreign_egress_policy(w, d),
        DiagnosisKind::ForeignDisk => foreign_disk(w, d),
        DiagnosisKind::Unschedulable => step(
            format!(
                "The scheduler cannot place the pod: {} Capacity shows what else is pending and what the warm pools and claims hold; free room on the nodes or lower the template's requests.",
                sentence(&d.message)
            ),
            Some(namzu_plain(w, "capacity")),
            None,
        ),
        DiagnosisKind::ImagePull => image_pull(w, d),
        DiagnosisKind::CrashLoop => crash_loop(w, d),
        DiagnosisKind::DiskMissing => disk_missing(w, d),
        DiagnosisKind::DiskPending => disk_pending(w, d),
        DiagnosisKind::ForeignPod => foreign_pod(w, d),
        DiagnosisKind::StuckTerminating => stuck_terminating(w, d),
        DiagnosisKind::SuspendUnconfirmed => suspend_unconfirmed(w, d),
        DiagnosisKind::PodTerminated => pod_terminated(w, d),
        DiagnosisKind::ControllerError | DiagnosisKind::ControllerReason => step(
            format!(
                "The controller reports {}: {} Its events and the workspace's timeline say since when and what it tried; the Sandbox's own conditions are in `{}`.",
                d.reason,
                sentence(&d.message),
                kubectl(w, &["describe", "sandbox", &w.sandbox_name])
            ),
            Some(namzu(w, "history", &[])),
            Some('h'),
        ),
        DiagnosisKind::StaleStatus => step(
            "The controller has not caught up with the Sandbox's latest change yet: wait a moment. If it stays behind, the agent-sandbox controller is not reconciling: check that it runs and read its log.".into(),
            Some(namzu(w, "history", &[])),
            Some('h'),
        ),
        DiagnosisKind::NoLivePod => step(
            format!(
                "The Sandbox says Ready but no live pod {} stands under it: the controller recreates it, so wait. If none comes, suspend and resume the workspace for a new pod (its disk is kept).",
                w.sandbox_name
            ),
            Some(format!("{} && {}", namzu(w, "suspend", &["--wait"]), namzu(w, "resume", &[]))),
            Some('S'),
        ),
        DiagnosisKind::UnreadableEpoch => unreadable_epoch(w),
    };
    Some(fenced_first(w, step))
}

/// A container that keeps crashing: its last run's output says why.
fn crash_loop(w: &Workspace, d: &Diagnosis) -> NextStep {
    let container = d.container.as_deref();
    let mut args = Vec::new();
    if let Some(c) = container {
        args.extend(["-c", c]);
    }
    args.push("--previous");
    step(
        format!(
            "Container {} keeps crashing and restarting: read the output of its last run, which says why it exited.",
            container.unwrap_or("?")
        ),
        Some(namzu(w, "logs", &args)),
        Some('l'),
    )
}

/// The disk the controller has not created.
fn disk_missing(w: &Workspace, d: &Diagnosis) -> NextStep {
    let pvc = d.object.as_deref().unwrap_or("?");
    step(
        format!(
            "PersistentVolumeClaim {pvc} does not exist: the controller creates it from the Sandbox's volumeClaimTemplates, so its events say why it has not (a deleted disk's data is gone)."
        ),
        Some(kubectl(w, &["describe", "sandbox", &w.sandbox_name])),
        None,
    )
}

/// A disk not Bound yet.
fn disk_pending(w: &Workspace, d: &Diagnosis) -> NextStep {
    let pvc = d.object.as_deref().unwrap_or("?");
    step(
        format!(
            "PersistentVolumeClaim {pvc} is {}, not Bound: its events say what the provisioner is waiting for (a storage class, a volume, a zone).",
            d.reason
        ),
        Some(kubectl(w, &["describe", "pvc", pvc])),
        None,
    )
}

/// A pod under the Sandbox's name that is not its own.
fn foreign_pod(w: &Workspace, d: &Diagnosis) -> NextStep {
    let pod = d.object.as_deref().unwrap_or(&w.sandbox_name);
    step(
        format!(
            "Pod {pod} stands under the Sandbox's name but is not this Sandbox's: the controller neither adopts nor deletes it. Find who made it (Controlled By) before removing it."
        ),
        Some(kubectl(w, &["describe", "pod", pod])),
        None,
    )
}

/// A pod past its grace period.
fn stuck_terminating(w: &Workspace, d: &Diagnosis) -> NextStep {
    let pod = d.object.as_deref().unwrap_or(&w.sandbox_name);
    let node = match &w.pod {
        Observed::Known(Some(p)) => p.node.clone(),
        _ => None,
    };
    step(
        format!(
            "Pod {pod} is past its grace period and still terminating: check its finalizers and node {} first. Warning: a forced delete does not wait for the kubelet; on a live node the containers may keep running and the disk stay attached.",
            node.as_deref().unwrap_or("?")
        ),
        Some(kubectl(w, &["delete", "pod", pod, "--grace-period=0", "--force"])),
        None,
    )
}

/// A suspend whose pod is still there.
fn suspend_unconfirmed(w: &Workspace, d: &Diagnosis) -> NextStep {
    let pod = d.object.as_deref().unwrap_or(&w.sandbox_name);
    step(
        format!(
            "The mode is Suspended and pod {pod} is still there: the controller deletes it, within its grace period. Wait for it; if it stays, the Sandbox's and the pod's events say what holds it."
        ),
        Some(kubectl(w, &["describe", "pod", pod])),
        None,
    )
}

/// A pod that ended and is not recreated.
fn pod_terminated(w: &Workspace, d: &Diagnosis) -> NextStep {
    match d.object.as_deref() {
        Some(pod) => step(
            format!(
                "Pod {pod} ended ({}) and agent-sandbox does not recreate it: read why it ended, then suspend and resume the workspace for a new pod (its disk is kept).",
                d.reason
            ),
            Some(namzu(w, "logs", &[])),
            Some('l'),
        ),
        None => step(
            format!(
                "The pod ended ({}) and agent-sandbox does not recreate it: suspend and resume the workspace for a new pod (its disk is kept).",
                d.reason
            ),
            Some(format!(
                "{} && {}",
                namzu(w, "suspend", &["--wait"]),
                namzu(w, "resume", &[])
            )),
            Some('S'),
        ),
    }
}

fn step(text: String, command: Option<String>, key: Option<char>) -> NextStep {
    NextStep { text, command, key }
}

/// A write through the fence is refused while the holder epoch is unreadable: such a step says
/// to repair it first.
fn fenced_first(w: &Workspace, mut s: NextStep) -> NextStep {
    let writes = [
        "kubectl namzu suspend ",
        "kubectl namzu resume ",
        "kubectl namzu delete ",
    ];
    let fenced = s
        .command
        .as_deref()
        .is_some_and(|c| writes.iter().any(|v| c.contains(v)));
    if fenced && w.epoch.epoch.is_none() && w.diagnosis.as_ref().map(|d| d.kind) != Some(DiagnosisKind::UnreadableEpoch)
    {
        s.text.push_str(&format!(
            " First repair the holder epoch: its annotation reads {:?}, so every write is refused.",
            w.epoch.annotation.as_deref().unwrap_or("")
        ));
    }
    s
}

/// A message as a sentence: ending in a full stop.
fn sentence(message: &str) -> String {
    let m = message.trim();
    if m.is_empty() || m.ends_with(['.', '!', '?']) {
        m.to_string()
    } else {
        format!("{m}.")
    }
}

fn foreign_egress_policy(w: &Workspace, d: &Diagnosis) -> NextStep {
    let policy = d.object.as_deref().unwrap_or("?");
    let command = is_path_safe_name(policy).then(|| with_context(w, delete_command(&w.namespace, policy)));
    step(
        format!(
            "CiliumNetworkPolicy {policy} selects this workspace and belongs to an earlier workspace of the same name, not yet collected: a resume would wake into that workspace's egress grant, so this tool refuses to resume. The library deletes it before its own resume; to resume from here, delete it (with the host's consent)."
        ),
        command,
        None,
    )
}

fn foreign_disk(w: &Workspace, d: &Diagnosis) -> NextStep {
    let pvc = d.object.as_deref().unwrap_or("?");
    let owners: Vec<_> = match &w.pvcs {
        Observed::Known(list) => list
            .iter()
            .filter(|p| p.name == pvc)
            .flat_map(|p| p.owners.iter())
            .collect(),
        Observed::Forbidden => Vec::new(),
    };
    let earlier = owners
        .iter()
        .find(|o| o.kind == "Sandbox" && o.name == w.sandbox_name && Some(&o.uid) != w.uid.as_ref());
    let who = match earlier {
        Some(o) => format!(
            "an earlier Sandbox {} (uid {}, not this one's {}), never collected: that workspace's data",
            o.name,
            o.uid,
            w.uid.as_deref().unwrap_or("-")
        ),
        None if owners.is_empty() => "another object".to_string(),
        None => owners.iter().map(|o| o.words()).collect::<Vec<_>>().join(", "),
    };
    step(
        format!(
            "PersistentVolumeClaim {pvc} is owned by {who}. Do not resume onto it or delete it before you know whose data it is: see who uses it, save what is needed, then `{}` lets the controller create this workspace's own disk.",
            kubectl(w, &["delete", "pvc", pvc])
        ),
        Some(kubectl(w, &["describe", "pvc", pvc])),
        None,
    )
}

fn image_pull(w: &Workspace, d: &Diagnosis) -> NextStep {
    let container = d.container.as_deref().unwrap_or("?");
    let image = d.image.as_deref().unwrap_or("?");
    let template = w.template.as_deref().unwrap_or("?");
    let head = format!(
        "Image {image} of container {container} cannot be pulled ({}).",
        d.reason
    );
    let today = w
        .template_images
        .as_ref()
        .and_then(|m| m.get(container))
        .filter(|_| d.container.is_some());
    match today {
        Some(current) if Some(current.as_str()) != d.image.as_deref() => {
            let drift = if w.drift.state == DriftState::Drifted {
                " (the workspace has drifted from it)"
            } else {
                ""
            };
            let refresh = namzu(w, "resume", &["--refresh-template"]);
            let (how, command, key) = if w.mode == Mode::Suspended {
                ("resume it onto the template as it is now (F)".to_string(), refresh, 'F')
            } else {
                (
                    "suspend it (S), then resume it onto the template as it is now (F)".to_string(),
                    format!("{} && {refresh}", namzu(w, "suspend", &["--wait"])),
                    'S',
                )
            };
            step(
                format!("{head} SandboxTemplate {template} now names {current}{drift}: {how}."),
                Some(command),
                Some(key),
            )
        }
        Some(_) => step(
            format!(
                "{head} SandboxTemplate {template} names the same image, so a refresh does not help: fix the image (its name, tag, or the registry's pull credentials) in the template, then suspend and resume onto it (F)."
            ),
            Some(kubectl(w, &["edit", "sandboxtemplate", template])),
            None,
        ),
        None => {
            let pod = d.object.as_deref().unwrap_or(&w.sandbox_name);
            step(
                format!(
                    "{head} The template's image today is not known (the SandboxTemplate could not be read): the pod's events say what the registry answered."
                ),
                Some(kubectl(w, &["describe", "pod", pod])),
                None,
            )
        }
    }
}

fn unreadable_epoch(w: &Workspace) -> NextStep {
    let raw = w.epoch.annotation.as_deref().unwrap_or("");
    let mut words = vec!["annotate", "sandbox", w.sandbox_name.as_str()];
    let remove = format!("{HOLDER_EPOCH}-");
    words.push(&remove);
    let rv = w
        .epoch
        .resource_version
        .as_deref()
        .map(|rv| format!("--resource-version={rv}"));
    if let Some(rv) = &rv {
        words.push(rv);
    }
    step(
        format!(
            "The holder-epoch annotation reads {raw:?}, not a decimal integer: every write is refused, and --take-over cannot add 1 to it. A host that holds the workspace writes its epoch back (`{}`); if none does, remove the annotation (the epoch starts again at 0). The command applies only to the version read: a change since makes it fail.",
            kubectl(
                w,
                &[
                    "annotate",
                    "sandbox",
                    &w.sandbox_name,
                    &format!("{HOLDER_EPOCH}=N"),
                    "--overwrite"
                ]
            )
        ),
        Some(kubectl(w, &words)),
        None,
    )
}

/// `kubectl namzu VERB ID -n NS ARGS… [--context C]`: the id after the verb, flags after it, as
/// `--help` shows them.
fn namzu(w: &Workspace, verb: &str, args: &[&str]) -> String {
    let mut text = format!("kubectl namzu {} {} -n {}", word(verb), word(&w.id), word(&w.namespace));
    for a in args {
        text.push(' ');
        text.push_str(&word(a));
    }
    with_context(w, text)
}

/// `kubectl namzu VERB -n NS [--context C]`, for a verb that takes no id.
fn namzu_plain(w: &Workspace, verb: &str) -> String {
    with_context(w, format!("kubectl namzu {} -n {}", word(verb), word(&w.namespace)))
}

/// `kubectl WORDS… -n NS [--context C]`.
fn kubectl(w: &Workspace, words: &[&str]) -> String {
    with_context(w, format!("kubectl {} -n {}", join(words), word(&w.namespace)))
}

fn with_context(w: &Workspace, command: String) -> String {
    match &w.context {
        Some(c) => format!("{command} --context {}", word(c)),
        None => command,
    }
}

fn join(words: &[&str]) -> String {
    words.iter().map(|w| word(w)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drift::{OverlayFlags, TemplateRead};
    use crate::egress::PolicyRead;
    use crate::pod::Index;
    use crate::workspace::{Inputs, derive};
    use chrono::{TimeZone, Utc};
    use serde_json::{Value, json};

    fn sandbox(mode: &str, epoch: &str) -> Value {
        json!({"metadata":{"name":"namzu-ws-a","namespace":"ns","uid":"sbx","generation":1,"resourceVersion":"41",
                "annotations":{"sandbox.namzu.ai/holder-epoch":epoch}},
            "spec":{"operatingMode":mode,"podTemplate":{"metadata":{"labels":{"sandbox.namzu.ai/template":"t"}},
                "spec":{"containers":[{"name":"agent","image":"img:old"}]}}}})
    }

    fn pulling() -> Value {
        json!({"metadata":{"name":"namzu-ws-a","uid":"pod","ownerReferences":[{"uid":"sbx"}]},
            "spec":{"containers":[{"name":"agent","image":"img:old"}]},
            "status":{"phase":"Pending","containerStatuses":[{"name":"agent","state":{"waiting":{"reason":"ErrImagePull"}}}]}})
    }

    fn template(image: &str) -> Value {
        json!({"spec":{"podTemplate":{"spec":{"containers":[{"name":"agent","image":image}]}}}})
    }

    fn view(sbx: &Value, pods: &[Value], template: TemplateRead<'_>) -> Workspace {
        derive(&Inputs {
            sandbox: sbx,
            pods: Observed::Known(&Index::new(pods)),
            pvcs: Observed::Known(&Index::new(&[])),
            policies: PolicyRead::NotServed,
            template,
            flags: &OverlayFlags::default(),
            now: Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap(),
        })
    }

    #[test]
    fn image_pull_names_both_images_and_refreshes_when_the_template_moved_on() {
        let new = template("img:new");
        let suspended = view(&sandbox("Suspended", "3"), &[pulling()], TemplateRead::Found(&new));
        let s = next_step(&suspended).unwrap();
        assert_eq!(
            s.command.as_deref(),
            Some("kubectl namzu resume a -n ns --refresh-template")
        );
        assert_eq!(s.key, Some('F'));
        assert!(s.text.contains("Image img:old of container agent") && s.text.contains("now names img:new"));

        let running = view(&sandbox("Running", "3"), &[pulling()], TemplateRead::Found(&new));
        let s = next_step(&running).unwrap();
        assert_eq!(
            s.command.as_deref(),
            Some("kubectl namzu suspend a -n ns --wait && kubectl namzu resume a -n ns --refresh-template")
        );

        let same = template("img:old");
        let s = next_step(&view(
            &sandbox("Running", "3"),
            &[pulling()],
            TemplateRead::Found(&same),
        ))
        .unwrap();
        assert_eq!(s.command.as_deref(), Some("kubectl edit sandboxtemplate t -n ns"));
        assert!(s.text.contains("names the same image"), "{}", s.text);

        let s = next_step(&view(&sandbox("Running", "3"), &[pulling()], TemplateRead::Unreadable)).unwrap();
        assert_eq!(s.command.as_deref(), Some("kubectl describe pod namzu-ws-a -n ns"));
    }

    #[test]
    fn a_write_step_says_to_repair_an_unreadable_epoch_first() {
        let new = template("img:new");
        let w = view(&sandbox("Suspended", "latest"), &[pulling()], TemplateRead::Found(&new));
        assert_eq!(
            w.diagnosis.as_ref().map(|d| d.kind),
            Some(DiagnosisKind::ImagePull),
            "the workload's finding first"
        );
        let s = next_step(&w).unwrap();
        assert!(
            s.text.ends_with(
                "First repair the holder epoch: its annotation reads \"latest\", so every write is refused."
            )
        );

        let alone = view(&sandbox("Suspended", "007"), &[], TemplateRead::Found(&new));
        let s = next_step(&alone).unwrap();
        assert_eq!(
            s.command.as_deref(),
            Some("kubectl annotate sandbox namzu-ws-a sandbox.namzu.ai/holder-epoch- --resource-version=41 -n ns")
        );
        assert!(
            s.text.contains("sandbox.namzu.ai/holder-epoch=N --overwrite"),
            "{}",
            s.text
        );
        assert_eq!(
            next_step(&view(&sandbox("Suspended", "7"), &[], TemplateRead::Found(&new))),
            None
        );
    }

    #[test]
    fn commands_carry_the_context_as_one_shell_word() {
        let mut w = view(&sandbox("Suspended", "x"), &[], TemplateRead::NotFound);
        w.context = Some("ops lab's".into());
        let s = next_step(&w).unwrap();
        assert!(
            s.command.unwrap().ends_with(" -n ns --context 'ops lab'\\''s'"),
            "quoted as sh reads it"
        );
        assert_eq!(
            word("arn:aws:eks:eu-1:42:cluster/prod"),
            "arn:aws:eks:eu-1:42:cluster/prod"
        );
        assert_eq!(word(""), "''");
    }
}
