//! The `Examples:` section of each verb's `--help`, in kubectl's style: the common cases,
//! copy-pasteable. (`list`, `logs`, `exec` and `history` keep theirs beside their flags.)

pub(crate) const INSPECT: &str = "Examples:
  # Everything about one workspace, like kubectl describe
  kubectl namzu inspect alpha
  # The same as JSON, or one field of it
  kubectl namzu inspect alpha -o json
  kubectl namzu inspect alpha -o jsonpath='{.holderEpoch.value}'
  # What `list -o name` prints is taken too
  kubectl namzu describe sandbox.agents.x-k8s.io/namzu-ws-alpha";

pub(crate) const DRIFT: &str = "Examples:
  # Every drifted workspace, field by field
  kubectl namzu drift
  # One workspace
  kubectl namzu drift alpha -o json";

pub(crate) const CAPACITY: &str = "Examples:
  # Warm pools, pending pods and workspace counts by state
  kubectl namzu capacity
  kubectl namzu capacity -A -o json";

pub(crate) const RECONCILE: &str = "Examples:
  # Is the workspace the host retained (by Sandbox uid) still there?
  kubectl namzu reconcile alpha --uid 2f0c1d9e-6b1a-4c3e-9d7f-0a1b2c3d4e5f
  # Exit codes: 0 live or suspended, 4 absent, 6 replaced";

pub(crate) const SUSPEND: &str = "Examples:
  # Suspend one workspace (pod deleted, disk kept) and wait until its pod is gone
  kubectl namzu suspend alpha --wait
  # What would be sent, without sending; then let the API server validate it (dryRun=All)
  kubectl namzu suspend alpha --dry-run
  kubectl namzu suspend alpha --dry-run=server
  # Take over from the current holder (epoch + 1)
  kubectl namzu suspend alpha --take-over
  # Everything Running for more than 12 hours, or what list selected
  kubectl namzu suspend --running-for 12h
  kubectl namzu list --state Running -o name | xargs kubectl namzu suspend";

pub(crate) const RESUME: &str = "Examples:
  # Resume one workspace and wait until it is Ready with a new pod
  kubectl namzu resume alpha --wait
  # Resume onto the SandboxTemplate as it is now
  kubectl namzu resume alpha --refresh-template
  # Check with the API server first, changing nothing
  kubectl namzu resume alpha --dry-run=server";

pub(crate) const DELETE: &str = "Examples:
  # Delete a workspace and its disks (asks for the id typed on a terminal)
  kubectl namzu delete alpha
  # Without asking; workspaces suspended for more than 90 days
  kubectl namzu delete alpha --yes
  kubectl namzu delete --suspended-for 90d --yes --dry-run";

pub(crate) const CONFIG: &str = "Examples:
  # The safety rules in force for each context
  kubectl namzu config view
  kubectl namzu config view -o yaml";

pub(crate) const AUDIT: &str = "Examples:
  # The writes this machine sent, the last 20
  kubectl namzu audit --tail 20
  kubectl namzu audit -o json";

pub(crate) const TEMPLATE_HASH: &str = "Examples:
  # The pod-template hash a workspace created from this SandboxTemplate would carry
  kubectl namzu template-hash -f template.yaml";

pub(crate) const DEMO: &str = "Examples:
  # Try everything against a built-in simulated cluster (no cluster needed)
  kubectl namzu demo
  # Serve it, and point kubectl (and this tool) at it from another shell
  kubectl namzu demo --serve --kubeconfig-out /tmp/demo.kubeconfig";

pub(crate) const DOCTOR: &str = "Examples:
  # Check the kubeconfig, the cluster, agent-sandbox and your permissions
  kubectl namzu doctor
  kubectl namzu doctor --all-contexts";

pub(crate) const RBAC: &str = "Examples:
  # The minimal Role (and a RoleBinding to fill in), applied
  kubectl namzu rbac | kubectl apply -n agents -f -
  kubectl namzu rbac --read-only";

pub(crate) const TUI: &str = "Examples:
  # The full-screen inventory (also `kubectl namzu` alone on a terminal)
  kubectl namzu tui
  kubectl namzu tui -A --refresh-interval 5s";

pub(crate) const COMPLETION: &str = "Examples:
  # bash, for this shell
  source <(kubectl-namzu completion bash)
  # kubectl's own completion of `kubectl namzu …` (kubectl 1.26+): a shim on PATH
  printf '#!/bin/sh\\nexec kubectl-namzu __complete \"$@\"\\n' > ~/bin/kubectl_complete-namzu
  chmod +x ~/bin/kubectl_complete-namzu";

pub(crate) const VERSION: &str = "Examples:
  kubectl namzu version";
