//! Safety, round 4 (the front-ends' part): `-o name` pipes that cannot reach another
//! workspace, the shell's parked UI bounded, the leaks clean-up holding on 429, and the words
//! of refusals.

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
