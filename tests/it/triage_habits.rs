//! Triage habits of the CLI: "every broken one" — `--problems`, `--diagnosis any`, prefixes, the
//! diagnosis sort and its JSONPath key, and a JSONPath existence filter that skips nulls.

use crate::support::*;
use serde_json::Value;

fn items(o: &std::process::Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", err(o)));
    v.as_array()
        .cloned()
        .unwrap_or_else(|| v["items"].as_array().cloned().unwrap_or_default())
}

fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| format!("{}/{}", i["namespace"].as_str().unwrap(), i["id"].as_str().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_can_say_every_broken_one() {
    let t = start_demo().await;
    let all = items(&namzu(&t, &["list", "-A", "-o", "json"]).await);
    let diagnosed: Vec<Value> = all.iter().filter(|i| !i["diagnosis"].is_null()).cloned().collect();
    let problems: Vec<Value> = all
        .iter()
        .filter(|i| {
            !i["diagnosis"].is_null()
                || ["drifted", "no-template"].contains(&i["drift"]["state"].as_str().unwrap_or(""))
                || i["holderEpoch"]["readable"] == false
        })
        .cloned()
        .collect();
    assert!(!diagnosed.is_empty() && problems.len() > diagnosed.len());
    // --diagnosis any (and *), --problems
    for any in ["any", "*"] {
        let o = namzu(&t, &["list", "-A", "--diagnosis", any, "-o", "json"]).await;
        assert!(o.status.success(), "{}", err(&o));
        assert_eq!(ids(&items(&o)), ids(&diagnosed), "--diagnosis {any}");
    }
    let o = namzu(&t, &["list", "-A", "--problems", "-o", "json"]).await;
    assert_eq!(ids(&items(&o)), ids(&problems));
    // a prefix
    let stuck: Vec<Value> = diagnosed
        .iter()
        .filter(|i| i["diagnosis"]["kind"].as_str().unwrap().starts_with("stuck-"))
        .cloned()
        .collect();
    assert!(!stuck.is_empty());
    let o = namzu(&t, &["list", "-A", "--diagnosis", "stuck-*", "-o", "json"]).await;
    assert_eq!(ids(&items(&o)), ids(&stuck));
    let o = namzu(&t, &["list", "-A", "--diagnosis", "nope-*"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no diagnosis starts with \"nope-\""), "{}", err(&o));
    // sorted by severity, by name or by kubectl's JSONPath form alike
    let by_name = items(
        &namzu(
            &t,
            &["list", "-A", "--problems", "--sort-by", "diagnosis", "-o", "json"],
        )
        .await,
    );
    let by_path = items(
        &namzu(
            &t,
            &[
                "list",
                "-A",
                "--problems",
                "--sort-by",
                "{.diagnosis.kind}",
                "-o",
                "json",
            ],
        )
        .await,
    );
    assert_eq!(ids(&by_name), ids(&by_path));
    assert_ne!(ids(&by_name), ids(&problems), "not the name order");
    // the rows with a diagnosis first, the drifted-only after
    let first_plain = by_name
        .iter()
        .position(|i| i["diagnosis"].is_null())
        .unwrap_or(by_name.len());
    assert!(by_name[first_plain..].iter().all(|i| i["diagnosis"].is_null()));
    // a JSONPath existence filter keeps the rows that have a diagnosis, not every row
    let o = namzu(
        &t,
        &[
            "list",
            "-A",
            "-o",
            "jsonpath={range .items[?(@.diagnosis)]}{.namespace}/{.id}{\"\\n\"}{end}",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let listed: Vec<String> = out(&o).lines().map(str::to_string).collect();
    assert_eq!(listed, ids(&diagnosed));
}
