//! Refusals, through the real binary on the demo: `-o name` (which drops the namespace and the
//! context) refused under `-A` or across contexts, and the words of refusals saying what happened.

use crate::support::*;

/// `-o name` drops the namespace and the context: under `-A` or across contexts it is refused
/// with the form that carries both, and that form reaches exactly the workspace listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o_name_never_names_a_workspace_of_another_namespace() {
    let t = start_demo().await;
    for args in [
        vec!["list", "-A", "-o", "name"],
        vec!["list", "-A", "--suspended-for", "1d", "-o", "name"],
        vec!["drift", "-A", "-o", "name"],
    ] {
        let o = namzu(&t, &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(out(&o).is_empty(), "nothing a pipe could read: {}", out(&o));
        assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
        assert!(
            err(&o).contains("-o name drops the namespace")
                && err(&o).contains("-o custom-columns=NAMESPACE:.namespace,ID:.id --no-headers"),
            "{}",
            err(&o)
        );
    }
    // one namespace: names as before
    let o = namzu(&t, &["list", "-o", "name"]).await;
    assert!(
        o.status.success() && out(&o).starts_with("sandbox.agents.x-k8s.io/namzu-ws-"),
        "{}",
        err(&o)
    );
    // the form given: each row's namespace with its id, so the verb acts there
    let o = namzu(
        &t,
        &[
            "list",
            "-A",
            "-o",
            "custom-columns=NAMESPACE:.namespace,ID:.id",
            "--no-headers",
        ],
    )
    .await;
    let rows: Vec<(String, String)> = out(&o)
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            (w.next().unwrap().to_string(), w.next().unwrap().to_string())
        })
        .collect();
    assert!(rows.iter().any(|(ns, _)| ns != "agents"), "{rows:?}");
    let (ns, id) = rows.iter().find(|(ns, _)| ns != "agents").unwrap();
    let o = namzu(&t, &["-n", ns, "delete", "--dry-run", "--yes", id]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains(&format!("/namespaces/{ns}/")), "{}", out(&o));
}

/// The words of refusals say what happened: leaked objects are counted as objects, a DELETE sent
/// and refused by its preconditions is not "nothing sent", and a huge template is not echoed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_what_happened() {
    let t = start_demo().await;
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n  - context: '*'\n    maxBulk: 1\n").unwrap();
    let config = rules.display().to_string();
    let o = namzu(&t, &["--config", &config, "leaks", "-A", "--delete", "--yes"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        // (the ghost's disk, keep's detached disk, wren's policy)
        err(&o).contains(": 2 objects selected, more than its maxBulk of 1"),
        "{}",
        err(&o)
    );
    // a DELETE sent and refused by the server (409): nothing deleted, but not "nothing sent"
    t.sim.add_fault(namzu_sim::faults::Fault::status(
        Some("DELETE"),
        "workspace-disk-namzu-ws-ghost",
        409,
        "the object has been modified",
    ));
    let o = namzu(&t, &["leaks", "-A", "--delete", "--yes"]).await;
    assert!(!o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(
        err(&o).contains("1 of 2 deletes were refused: nothing deleted by them"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("nothing sent"), "{}", err(&o));
    // a 192 KB template nested too deep: one short line, not the template
    let deep = "{range .items[*]}".repeat(12_000);
    let file = t.dir.path().join("deep.jsonpath");
    std::fs::write(&file, &deep).unwrap();
    let o = namzu(&t, &["list", "-o", &format!("jsonpath-file={}", file.display())]).await;
    assert!(!o.status.success());
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
    assert!(
        err(&o).len() < 600,
        "{} bytes: {}",
        err(&o).len(),
        &err(&o)[..600.min(err(&o).len())]
    );
    assert!(err(&o).contains("more bytes)"), "{}", err(&o));
}
