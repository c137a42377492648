//! The next step of every diagnosis (issue 30 §4) in `list -o json` and `inspect`, and the
//! workspace references every verb takes (issue 32 §1): id, Sandbox name and `-o name` forms.

use crate::support::*;
use namzu_clock::NOW_ENV;
use namzu_domain::diagnosis::DiagnosisKind;
use namzu_sim::write_fleet_kubeconfig;
use serde_json::Value;
use std::process::Output;

fn items(o: &Output) -> Vec<Value> {
    listed(o)
}

/// Run kubectl (installed here, as for `sim_kubectl.rs`) with these words on a kubeconfig.
async fn kubectl(kubeconfig: &std::path::Path, words: Vec<String>) -> Output {
    let mut full = vec!["--kubeconfig".to_string(), kubeconfig.display().to_string()];
    full.extend(words);
    tokio::task::spawn_blocking(move || std::process::Command::new("kubectl").args(&full).output())
        .await
        .expect("join")
        .expect("kubectl runs")
}

/// A shell line run as the user would paste it, with `kubectl-namzu` and `kubectl` on PATH
/// and the kubeconfig in `KUBECONFIG`.
async fn shell(t: &TestSim, kubeconfig: &std::path::Path, line: &str) -> Output {
    let bin_dir = std::path::Path::new(BIN)
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let (kubeconfig, line) = (kubeconfig.to_path_buf(), line.to_string());
    let (home, now, audit) = (t.home(), now_env(t), audit_env(t));
    tokio::task::spawn_blocking(move || {
        isolate(&mut std::process::Command::new("sh"), &home)
            .args(["-c", &line])
            .env("PATH", path)
            .env("KUBECONFIG", kubeconfig)
            .env(NOW_ENV, now.1)
            .env(audit.0, audit.1)
            .output()
            .expect("sh runs")
    })
    .await
    .expect("join")
}

fn step_of(items: &[Value], kind: DiagnosisKind) -> (&Value, &str, &str) {
    let w = items
        .iter()
        .find(|w| w["diagnosis"]["kind"] == kind.as_str())
        .unwrap_or_else(|| panic!("no demo workspace has diagnosis {}", kind.as_str()));
    let step = &w["nextStep"];
    assert_eq!(
        step.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["text".to_string(), "command".to_string()]),
        "{step}"
    );
    (
        w,
        step["text"].as_str().expect("text"),
        step["command"].as_str().expect("every demo diagnosis has a command"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_diagnosis_has_its_next_step_in_list_json_and_inspect() {
    let t = start_demo().await;
    let all = items(&namzu(&t, &["list", "-A", "-o", "json"]).await);
    for w in &all {
        if w["diagnosis"].is_null() {
            assert_eq!(w["nextStep"], Value::Null, "{}", w["id"]);
        }
    }
    let ns = |cmd: &str| cmd.ends_with(" -n agents") || cmd.contains(" -n agents ");
    for kind in DiagnosisKind::ALL {
        let (w, text, command) = step_of(&all, kind);
        let id = w["id"].as_str().unwrap();
        assert!(ns(command), "{command}");
        match kind {
            DiagnosisKind::ForeignEgressPolicy => {
                let policy = w["egress"]["policies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["owned"] == false)
                    .unwrap()["name"]
                    .as_str()
                    .unwrap();
                assert_eq!(
                    command,
                    format!("kubectl delete ciliumnetworkpolicy {policy} -n agents")
                );
                assert!(text.contains("earlier workspace"), "{text}");
            }
            DiagnosisKind::ForeignDisk => {
                let pvc = format!("workspace-disk-namzu-ws-{id}");
                assert_eq!(command, format!("kubectl describe pvc {pvc} -n agents"));
                let owner = w["pvcs"][0]["owners"][0].clone();
                assert!(
                    text.contains(&format!(
                        "owned by an earlier Sandbox {} (uid {}, not this one's {})",
                        owner["name"].as_str().unwrap(),
                        owner["uid"].as_str().unwrap(),
                        w["uid"].as_str().unwrap()
                    )),
                    "{text}"
                );
                assert!(text.contains(&format!("kubectl delete pvc {pvc} -n agents")), "{text}");
            }
            DiagnosisKind::PodStateUnknown => {
                assert_eq!(command, format!("kubectl namzu history {id} -n agents"));
                assert!(text.contains("stopped reporting"), "{text}");
            }
            DiagnosisKind::Unschedulable => {
                assert_eq!(command, "kubectl namzu capacity -n agents");
                assert!(text.contains("Insufficient memory"), "{text}");
            }
            DiagnosisKind::ImagePull => {
                // golf runs the coder-rc image the registry does not have; the template moved on
                assert_eq!(
                    command,
                    format!(
                        "kubectl namzu suspend {id} -n agents --wait && kubectl namzu resume {id} -n agents --refresh-template"
                    )
                );
                assert!(
                    text.contains("Image ghcr.io/namzu/agent:1.5.0-rc.1 of container agent cannot be pulled")
                        && text.contains("SandboxTemplate coder now names ghcr.io/namzu/agent:1.4.2"),
                    "{text}"
                );
            }
            DiagnosisKind::CrashLoop => {
                assert_eq!(
                    command,
                    format!("kubectl namzu logs {id} -n agents -c agent --previous")
                );
            }
            DiagnosisKind::DiskMissing => {
                assert_eq!(command, format!("kubectl describe sandbox namzu-ws-{id} -n agents"));
                assert!(
                    text.contains(&format!("workspace-disk-namzu-ws-{id} does not exist")),
                    "{text}"
                );
            }
            DiagnosisKind::DiskPending => {
                assert_eq!(
                    command,
                    format!("kubectl describe pvc workspace-disk-namzu-ws-{id} -n agents")
                );
                assert!(text.contains("is Pending"), "{text}");
            }
            DiagnosisKind::ForeignPod | DiagnosisKind::SuspendUnconfirmed => {
                assert_eq!(command, format!("kubectl describe pod namzu-ws-{id} -n agents"));
            }
            DiagnosisKind::StuckTerminating => {
                assert_eq!(
                    command,
                    format!("kubectl delete pod namzu-ws-{id} --grace-period=0 --force -n agents")
                );
                assert!(text.contains("Warning: a forced delete"), "{text}");
            }
            DiagnosisKind::PodTerminated => {
                assert_eq!(command, format!("kubectl namzu logs {id} -n agents"));
            }
            DiagnosisKind::ControllerError | DiagnosisKind::ControllerReason => {
                assert_eq!(command, format!("kubectl namzu history {id} -n agents"));
                assert!(
                    text.contains(&format!("kubectl describe sandbox namzu-ws-{id} -n agents")),
                    "{text}"
                );
            }
            DiagnosisKind::StaleStatus | DiagnosisKind::StuckDeleting | DiagnosisKind::Expired => {
                assert_eq!(command, format!("kubectl namzu history {id} -n agents"))
            }
            DiagnosisKind::NoLivePod => assert_eq!(
                command,
                format!("kubectl namzu suspend {id} -n agents --wait && kubectl namzu resume {id} -n agents")
            ),
            DiagnosisKind::UnreadableEpoch => {
                assert!(
                    command.starts_with(&format!(
                        "kubectl annotate sandbox namzu-ws-{id} sandbox.namzu.ai/holder-epoch- --resource-version="
                    )),
                    "{command}"
                );
                assert!(text.contains("reads \"latest\""), "{text}");
            }
        }
        // inspect says the same, under the diagnosis
        let o = namzu(&t, &["inspect", "-n", "agents", id]).await;
        assert!(o.status.success(), "{}", err(&o));
        let described = out(&o);
        assert!(
            described.contains(&format!("\nNext step:       {text}\n  Command:       {command}\n")),
            "{}: {described}",
            kind.as_str()
        );
        let inspected: Value =
            serde_json::from_str(&out(&namzu(&t, &["inspect", "-n", "agents", id, "-o", "json"]).await)).unwrap();
        assert_eq!(inspected["nextStep"], w["nextStep"], "{id}");
    }
    assert_eq!(
        all.iter()
            .filter(|w| w["diagnosis"]["kind"] == "unreadable-epoch")
            .count(),
        1,
        "one demo workspace has an unreadable epoch"
    );
    let sierra = items(&namzu(&t, &["list", "-A", "--diagnosis", "unreadable-epoch", "-o", "json"]).await);
    assert_eq!(sierra.len(), 1);
    assert_eq!(sierra[0]["id"], "sierra");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unreadable_epochs_step_repairs_it_with_kubectl_and_only_from_the_version_read() {
    // kubectl annotate sends a merge patch, which strict mode (the tool's own writes) refuses
    let t = start_with(namzu_sim::scenario::DEMO, |c| {
        c.namespace = "agents".into();
        c.strict = false;
    })
    .await;
    let list = items(&namzu(&t, &["list", "-o", "json", "--diagnosis", "unreadable-epoch"]).await);
    let command = list[0]["nextStep"]["command"].as_str().unwrap().to_string();
    let refused = namzu(&t, &["resume", "sierra", "--yes"]).await;
    assert_eq!(refused.status.code(), Some(3), "{}", err(&refused));
    // the step, pasted: kubectl removes the annotation, conditional on the resourceVersion read
    let words: Vec<String> = command.split_whitespace().skip(1).map(str::to_string).collect();
    let o = kubectl(t.sim.kubeconfig(), words.clone()).await;
    assert!(o.status.success(), "{}", err(&o));
    let after = items(&namzu(&t, &["list", "-o", "json"]).await);
    let sierra = after.iter().find(|w| w["id"] == "sierra").unwrap();
    assert_eq!(sierra["diagnosis"], Value::Null);
    assert_eq!(sierra["holderEpoch"]["value"], 0);
    // the same line again: the version it names is gone, so it fails instead of writing
    let again = kubectl(t.sim.kubeconfig(), words).await;
    assert!(!again.status.success());
    assert!(
        err(&again).contains("Conflict") || err(&again).contains("modified"),
        "{}",
        err(&again)
    );
    let resumed = namzu(&t, &["resume", "sierra", "--yes"]).await;
    assert!(resumed.status.success(), "{}", err(&resumed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_fleet_each_command_names_its_context_quoted_for_the_shell() {
    let scenario = r#"
namespaces: [agents]
workspaces:
  - namespace: agents
    id: loop
    podTemplate: &pt
      metadata: {labels: {sandbox.namzu.ai/template: coder}}
      spec: {containers: [{name: agent, image: "ghcr.io/x/agent:1.2"}]}
    knobs: {crashLoop: true}
  - {namespace: agents, id: odd, podTemplate: *pt, mode: Suspended, epoch: latest}
"#;
    let lenient = |c: &mut namzu_sim::SimConfig| {
        c.namespace = "agents".into();
        c.strict = false;
    };
    let a = start_with(scenario, lenient).await;
    let b = start_with(scenario, lenient).await;
    let kubeconfig = a.dir.path().join("fleet.kubeconfig");
    write_fleet_kubeconfig(&kubeconfig, &[("prod-eu", &a.sim), ("ops lab", &b.sim)]).unwrap();
    let o = namzu_env(
        vec![
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "list".into(),
            "--all-contexts".into(),
            "-o".into(),
            "json".into(),
        ],
        vec![now_env(&a)],
    )
    .await;
    let rows = items(&o);
    let command = |context: &str, id: &str| {
        rows.iter()
            .find(|w| w["context"] == context && w["id"] == id)
            .unwrap_or_else(|| panic!("{context}/{id}"))["nextStep"]["command"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        command("prod-eu", "loop"),
        "kubectl namzu logs loop -n agents -c agent --previous --context prod-eu"
    );
    assert_eq!(
        command("ops lab", "loop"),
        "kubectl namzu logs loop -n agents -c agent --previous --context 'ops lab'"
    );
    // pasted into a shell, the quoted context reaches the right cluster
    let repair = command("ops lab", "odd");
    assert!(repair.ends_with(" -n agents --context 'ops lab'"), "{repair}");
    let o = shell(&b, &kubeconfig, &repair).await;
    assert!(o.status.success(), "{}", err(&o));
    let after = items(
        &namzu_env(
            vec![
                "--kubeconfig".into(),
                kubeconfig.display().to_string(),
                "list".into(),
                "--all-contexts".into(),
                "-o".into(),
                "json".into(),
            ],
            vec![now_env(&a)],
        )
        .await,
    );
    let odd = |context: &str| {
        after
            .iter()
            .find(|w| w["context"] == context && w["id"] == "odd")
            .unwrap()["diagnosis"]["kind"]
            .clone()
    };
    assert_eq!(odd("ops lab"), Value::Null, "repaired where the command said");
    assert_eq!(odd("prod-eu"), "unreadable-epoch", "the other cluster untouched");
    // inspect in a context named on the command line names it too
    let o = namzu_env(
        vec![
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--context".into(),
            "prod-eu".into(),
            "inspect".into(),
            "loop".into(),
        ],
        vec![now_env(&a)],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("  Command:       kubectl namzu logs loop -n agents -c agent --previous --context prod-eu\n"),
        "{}",
        out(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_o_name_piped_to_xargs_suspend_suspends_exactly_the_running_ones() {
    let t = start_demo().await;
    let running: Vec<String> = items(&namzu(&t, &["list", "-n", "research", "-o", "json"]).await)
        .iter()
        .filter(|w| w["state"] == "Running")
        .map(|w| w["id"].as_str().unwrap().to_string())
        .collect();
    assert!(running.len() >= 2, "{running:?}");
    let o = shell(
        &t,
        t.sim.kubeconfig(),
        "kubectl-namzu list -n research --state Running -o name | xargs kubectl-namzu suspend -n research --yes",
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let after = items(&namzu(&t, &["list", "-n", "research", "-o", "json"]).await);
    for id in &running {
        let w = after.iter().find(|w| &w["id"] == id).unwrap();
        assert_eq!(w["mode"], "Suspended", "{id}");
    }
    let mut patched: Vec<String> = t
        .sim
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH")
        .map(|r| r.path.rsplit('/').next().unwrap().to_string())
        .collect();
    patched.sort();
    let want: Vec<String> = running.iter().map(|id| format!("namzu-ws-{id}")).collect();
    assert_eq!(patched, want, "one fenced PATCH per Running workspace, nothing else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_takes_the_id_the_sandbox_name_and_the_o_name_forms() {
    let t = start_demo().await;
    for form in [
        "hotel",
        "namzu-ws-hotel",
        "sandbox.agents.x-k8s.io/namzu-ws-hotel",
        "sandboxes/namzu-ws-hotel",
        "sandbox/namzu-ws-hotel",
        "sandboxes.agents.x-k8s.io/namzu-ws-hotel",
    ] {
        let o = namzu(&t, &["inspect", "-n", "agents", form, "-o", "name"]).await;
        assert!(o.status.success(), "{form}: {}", err(&o));
        assert_eq!(out(&o), "sandbox.agents.x-k8s.io/namzu-ws-hotel\n", "{form}");
        let o = namzu(&t, &["drift", "-n", "agents", form, "-o", "name"]).await;
        assert!(o.status.success(), "{form}: {}", err(&o));
    }
    // a write takes the -o name form too, and still goes through its one fenced read-check-write
    let o = namzu(
        &t,
        &[
            "suspend",
            "-n",
            "agents",
            "sandbox.agents.x-k8s.io/namzu-ws-alpha",
            "--dry-run",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("alpha"), "{}", out(&o));

    let before = t.sim.requests().len();
    for args in [
        ["inspect", "sandbox.agents.x-k8s.io/other", "-oname"],
        ["suspend", "sandboxes/other", "--yes"],
        ["delete", "sandbox/other", "--yes"],
    ] {
        let (verb, form) = (args[0], args[1]);
        let o = namzu(&t, &[&["-n", "agents"], &args[..]].concat()).await;
        assert_eq!(o.status.code(), Some(2), "{verb} {form}");
        assert_eq!(
            err(&o),
            "error: not a workspace: Sandbox other has no namzu-ws- prefix\n",
            "{verb} {form}"
        );
    }
    let o = namzu(&t, &["inspect", "-n", "agents", "pod/namzu-ws-hotel"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    assert!(err(&o).contains("names a pod, not a Sandbox"), "{}", err(&o));
    for bad in [
        "sandbox/namzu-ws-Bad",
        "sandboxes/namzu-ws-a/b",
        "sandboxes/namzu-ws-a?x=",
    ] {
        let o = namzu(&t, &["inspect", "-n", "agents", bad]).await;
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(err(&o).contains("cannot name a Sandbox"), "{bad}: {}", err(&o));
    }
    let o = namzu(&t, &["inspect", "-n", "agents", "namzu-ws-a/b"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("names a namzu-ws-a, not a Sandbox"), "{}", err(&o));
    assert_eq!(t.sim.requests().len(), before, "nothing invalid reached the server");
}
