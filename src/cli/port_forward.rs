//! `kubectl namzu port-forward ID [LOCAL:]REMOTE`: a local port that follows its workspace. Each
//! accepted connection reaches the workspace's own pod, read again for every connection
//! (`ops::port_forward`), so the forward outlives container restarts, a replaced pod and a
//! suspend/resume; every new target and every wait is said on stderr. Like kubectl, the address
//! listened on is printed on stdout (`Forwarding from 127.0.0.1:8080 -> 8080`). A port forwarded
//! into a pod is a write for the context's safety rules, as exec is (`rules::port_forward_gate`).
//! Ctrl-C ends it (exit 0).

use super::exit::{self, Failure};
use super::globals::Globals;
use namzu_domain::naming::WorkspaceId;
use namzu_engine::console::printable;

use namzu_engine::ops::port_forward::{self, Forward, Resolved};
use namzu_engine::ops::write::rules;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  # the workspace's port 8080 on localhost:8080, across restarts and suspend/resume
  kubectl namzu port-forward alpha 8080

  # local port 18080 to the pod's 8080
  kubectl namzu port-forward alpha 18080:8080

  # a free local port (printed on stdout)
  kubectl namzu port-forward alpha :8080")]
pub struct Args {
    /// The workspace id (the Sandbox is namzu-ws-<id>).
    pub id: WorkspaceId,
    /// The port: REMOTE, LOCAL:REMOTE, or :REMOTE (a free local port).
    #[arg(value_name = "[LOCAL:]REMOTE")]
    pub port: String,
    /// The local address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,
    /// Forward without asking for the workspace id typed where the context's rules ask
    /// (`confirm: typed`): a port into a pod is a write for the safety rules.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// `[LOCAL:]REMOTE` as kubectl reads it: `8080` is 8080 on both sides, `:8080` a free local port.
pub(crate) fn parse_ports(spec: &str) -> Result<(u16, u16), String> {
    let port = |s: &str, what: &str| -> Result<u16, String> {
        s.parse::<u16>()
            .map_err(|_| format!("{what} port {s:?} is not a port number (0-65535)"))
    };
    let (local, remote) = match spec.split_once(':') {
        Some(("", r)) => (0, port(r, "remote")?),
        Some((l, r)) => (port(l, "local")?, port(r, "remote")?),
        None => {
            let p = port(spec, "remote")?;
            (p, p)
        }
    };
    if remote == 0 {
        return Err(format!("{spec:?}: the remote port must be 1-65535"));
    }
    Ok((local, remote))
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    globals.one_namespace_for_names()?;
    globals.one_context("port-forward")?;
    let (local, remote) = parse_ports(&args.port)
        .map_err(|e| Failure::usage(format!("{e}: give [LOCAL:]REMOTE, e.g. 8080 or 18080:8080")))?;
    if args.address.parse::<std::net::IpAddr>().is_err() && args.address != "localhost" {
        return Err(Failure::usage(format!(
            "--address {:?}: give an IP address (127.0.0.1, ::1, 0.0.0.0) or localhost",
            printable(&args.address)
        )));
    }
    let question = format!("Forward port {remote} of workspace {}", args.id);
    let asked = super::exec::Asked {
        id: &args.id,
        yes: args.yes,
        question: &question,
        verb: "forward",
        refused: "not confirmed: nothing forwarded",
    };
    let conn = super::exec::gated(globals, rules::port_forward_gate, &asked).await?;
    // what can never be forwarded is refused before anything listens
    match port_forward::resolve(&conn, &conn.namespace, &args.id).await? {
        Resolved::Absent => return Err(exit::absent(&conn, &args.id).await),
        Resolved::Refused(u) => return Err(super::logs::unavailable(&u)),
        Resolved::Pod { .. } | Resolved::Wait(_) => {}
    }
    let address = if args.address == "localhost" {
        "127.0.0.1"
    } else {
        args.address.as_str()
    };
    let listener = port_forward::listen(address, local).await.map_err(Failure::error)?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::error(format!("cannot read the address listened on: {e}")))?;
    // Ctrl-C is heard from before the address is printed: a script that stops it then gets 0
    let termination = namzu_engine::signals::Termination::listen();
    namzu_engine::outln!("Forwarding from {bound} -> {remote}");
    let namespace = conn.namespace.clone();
    let forward = Arc::new(Forward::new(conn, namespace, args.id, remote, bound.to_string()));
    let say: port_forward::Say = Arc::new(|line: String| namzu_engine::errln!("{line}"));
    tokio::select! {
        () = port_forward::serve(listener, forward, say) => {}
        () = termination.received() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_ports;

    #[test]
    fn ports_are_read_as_kubectl_reads_them() {
        assert_eq!(parse_ports("8080"), Ok((8080, 8080)));
        assert_eq!(parse_ports("18080:8080"), Ok((18080, 8080)));
        assert_eq!(parse_ports(":8080"), Ok((0, 8080)));
        assert!(parse_ports("0").is_err());
        assert!(parse_ports("http").is_err());
        assert!(parse_ports("1:99999").is_err());
    }
}
