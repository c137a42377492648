//! The kubeconfig a sim (or a fleet of sims) writes for its clients.

use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;

/// A context of a kubeconfig: the sim at `addr`, as `token` (none: anonymous), in `namespace`.
pub(super) struct Access<'a> {
    pub(super) context: &'a str,
    pub(super) addr: SocketAddr,
    pub(super) token: Option<&'a str>,
    pub(super) namespace: &'a str,
}

/// A kubeconfig of these contexts, the first current; a context's cluster is named as it is,
/// its user `<context>-user`.
pub(super) fn write_kubeconfig(path: &Path, contexts: &[Access<'_>]) -> std::io::Result<()> {
    let user_of = |a: &Access<'_>| format!("{}-user", a.context);
    let clusters: Vec<Value> = contexts
        .iter()
        .map(|a| json!({"name": a.context, "cluster": {"server": format!("http://{}", a.addr)}}))
        .collect();
    let users: Vec<Value> = contexts
        .iter()
        .map(|a| {
            let user = match a.token {
                Some(t) => json!({"token": t}),
                None => json!({}),
            };
            json!({"name": user_of(a), "user": user})
        })
        .collect();
    let named: Vec<Value> = contexts
        .iter()
        .map(|a| json!({"name": a.context, "context": {"cluster": a.context, "user": user_of(a), "namespace": a.namespace}}))
        .collect();
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": named,
        "current-context": contexts.first().map_or("", |a| a.context),
        "preferences": {}
    });
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    // a kubeconfig holds a token: readable by its owner only, as kubectl writes one
    let text = serde_saphyr::to_string(&doc).map_err(std::io::Error::other)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
}

/// One kubeconfig for several sims (a fleet): a cluster, a user and a context per member,
/// named after it; the first is the current context. Each reaches its sim as the sim's own
/// kubeconfig does (its token, its namespace).
pub fn write_fleet_kubeconfig(path: &Path, members: &[(&str, &super::Sim)]) -> std::io::Result<()> {
    let contexts: Vec<Access<'_>> = members
        .iter()
        .map(|(context, sim)| Access {
            context,
            addr: sim.addr,
            token: sim.token.as_deref(),
            namespace: &sim.namespace,
        })
        .collect();
    write_kubeconfig(path, &contexts)
}
