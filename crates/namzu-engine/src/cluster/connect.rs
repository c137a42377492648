//! Loading the kubeconfig the way kubectl does (KUBECONFIG merge, --context/--cluster/--user,
//! the context's namespace) and building the one kube::Client every call goes through.

use super::error::{ApiCall, ClusterError};
use super::verbose::LogLayer;
use http::HeaderValue;
use kube::client::ClientBuilder;
use kube::config::{ExecInteractiveMode, KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use namzu_clock::Clock;
use namzu_domain::naming::validate_namespace;
use namzu_domain::safety::{ContextRules, Overrides, SafetyConfig};
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// kubectl's default `--chunk-size`.
pub const DEFAULT_CHUNK_SIZE: u32 = 500;

/// The most pages one paged LIST may take: a server that never stops handing out continue
/// tokens (each one new) is an error, not a read without end.
pub const MAX_LIST_PAGES: usize = 10_000;

/// The longest one paged LIST may take, all its pages together (each page is bounded by the
/// request timeout too).
pub const MAX_LIST_TIME: Duration = Duration::from_secs(5 * 60);

/// What bounds one paged LIST (`cluster/resources.rs`): its pages and its time, all pages
/// together. A continue token handed out twice in one list is refused whatever these say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListBounds {
    pub max_pages: usize,
    pub max_time: Duration,
}

impl Default for ListBounds {
    fn default() -> ListBounds {
        ListBounds {
            max_pages: MAX_LIST_PAGES,
            max_time: MAX_LIST_TIME,
        }
    }
}

/// What the simulated cluster's `/version` `gitVersion` carries (`crates/namzu-sim/src/discovery.rs`).
pub const SIM_VERSION_MARK: &str = "-namzu-sim";

pub const USER_AGENT: &str = concat!("kubectl-namzu/", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub namespace: Option<String>,
    /// Bound on each call; `None` = unbounded.
    pub request_timeout: Option<Duration>,
    pub verbose: bool,
    /// Exec credential plugins may prompt (false while a full-screen UI is up).
    pub interactive_exec: bool,
    /// Where "now" comes from; `None` = the system clock, or `$KUBECTL_NAMZU_NOW` when set.
    pub clock: Option<Clock>,
    /// Objects per LIST page (kubectl's `--chunk-size`); `None` = 500, `Some(0)` = one request.
    pub chunk_size: Option<u32>,
    /// The safety rules file and the flags over it: the connection's [`Connection::rules`] are
    /// decided from them at open (`None`: no rules).
    pub safety: Option<std::sync::Arc<(SafetyConfig, Overrides)>>,
}

/// `$KUBECONFIG` as kubectl reads it: the files of the list merged in order, a missing file
/// skipped (an empty list is an error); else `~/.kube/config`.
fn read_default_kubeconfig() -> Result<Kubeconfig, ClusterError> {
    let hint = "(set KUBECONFIG, pass --kubeconfig, or run `kubectl config view` to check; `kubectl namzu demo` needs no cluster)";
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if listed.is_empty() {
        // no kubeconfig at all: say which file was looked for, and what works without one
        if let Some(default) = default_kubeconfig_path().filter(|p| !p.exists()) {
            return Err(ClusterError::Config(format!(
                "{} does not exist (set KUBECONFIG or pass --kubeconfig; or try `kubectl namzu demo`, which needs no cluster)",
                default.display()
            )));
        }
        return Kubeconfig::read().map_err(|e| ClusterError::Config(format!("{e} {hint}")));
    }
    let mut merged: Option<Kubeconfig> = None;
    for path in listed.iter().filter(|p| p.exists()) {
        let next = Kubeconfig::read_from(path).map_err(|e| ClusterError::Config(format!("{}: {e}", path.display())))?;
        merged = Some(match merged {
            None => next,
            Some(m) => m
                .merge(next)
                .map_err(|e| ClusterError::Config(format!("{}: {e}", path.display())))?,
        });
    }
    merged.ok_or_else(|| {
        ClusterError::Config(format!(
            "none of the files in KUBECONFIG exists ({}) {hint}",
            std::env::join_paths(&listed).map_or(String::new(), |p| p.to_string_lossy().into_owned())
        ))
    })
}

/// `~/.kube/config`, where kubectl looks when KUBECONFIG is unset.
fn default_kubeconfig_path() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".kube").join("config"))
}

/// The kubeconfig `opts` names (`--kubeconfig`), else the default one, merged as kubectl merges it.
pub fn load_kubeconfig(opts: &ConnectOptions) -> Result<Kubeconfig, ClusterError> {
    let kubeconfig = match &opts.kubeconfig {
        Some(path) if !path.exists() => {
            return Err(ClusterError::Config(format!(
                "{} (--kubeconfig) does not exist (or try `kubectl namzu demo`, which needs no cluster)",
                path.display()
            )));
        }
        Some(path) => {
            Kubeconfig::read_from(path).map_err(|e| ClusterError::Config(format!("{}: {e}", path.display())))?
        }
        None => read_default_kubeconfig()?,
    };
    refuse_duplicates(&kubeconfig)?;
    Ok(kubeconfig)
}

/// A file naming a context, cluster or user twice is refused, as kubectl refuses it (merging
/// files keeps the first of each name; within one file there is no telling which was meant).
fn refuse_duplicates(kubeconfig: &Kubeconfig) -> Result<(), ClusterError> {
    fn twice<'a>(names: impl Iterator<Item = &'a String>) -> Option<&'a String> {
        let mut seen = std::collections::HashSet::new();
        names.into_iter().find(|n| !seen.insert(*n))
    }
    let found = [
        ("context", twice(kubeconfig.contexts.iter().map(|c| &c.name))),
        ("cluster", twice(kubeconfig.clusters.iter().map(|c| &c.name))),
        ("user", twice(kubeconfig.auth_infos.iter().map(|a| &a.name))),
    ];
    match found.into_iter().find_map(|(what, name)| Some((what, name?))) {
        Some((what, name)) => Err(ClusterError::Config(format!(
            "the kubeconfig names {what} \"{name}\" twice: kubectl refuses such a file (rename or remove one)"
        ))),
        None => Ok(()),
    }
}

/// kube's client stack (base URI, credentials, headers; rustls for https) over a connector that
/// sets TCP_NODELAY: kube's own leaves it off, and Nagle's algorithm with delayed ACKs costs
/// ~40 ms on every new TLS connection to a real API server (its handshake's small writes).
/// Connecting is bounded by the config's connect timeout; every call is bounded by ours.
fn nodelay_builder(
    config: Config,
) -> Result<
    ClientBuilder<
        impl tower::Service<
            http::Request<kube::client::Body>,
            Response = http::Response<hyper::body::Incoming>,
            Error = tower::BoxError,
            Future = impl Send,
        > + Send
        + use<>,
    >,
    kube::Error,
> {
    use kube::client::ConfigExt;
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let https = config.rustls_https_connector_with_connector(http)?;
    let client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(https);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(client);
    Ok(ClientBuilder::new(service, config.default_namespace.clone()))
}

/// A client plus what the user asked for by default.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    pub namespace: String,
    pub context: String,
    pub server: String,
    pub timeout: Option<Duration>,
    /// Every age, filter and stamp this connection's commands compute reads this clock.
    pub clock: Clock,
    /// Objects per LIST page; 0 = one request.
    pub chunk_size: u32,
    /// How many pages and how long one paged LIST may take.
    pub list_bounds: ListBounds,
    /// `-v`: say on stderr what a pass read beyond its LISTs.
    pub verbose: bool,
    /// The kubectl flags that reach the same cluster as this connection (`--kubeconfig`,
    /// `--context`, `--cluster`, `--user`), for what the tool runs kubectl for (`exec`).
    pub kubectl_flags: Vec<String>,
    /// The safety rules every write over this connection is under, decided once at open by
    /// [`SafetyConfig::for_connection`] (and enforced by the write path, whatever the front-end).
    pub rules: ContextRules,
    /// Whether the server is the simulated cluster (its `/version`), asked once: writes under a
    /// pinned clock reach only the sim.
    pub simulated: std::sync::Arc<tokio::sync::OnceCell<bool>>,
}

/// The context to open, checked against the kubeconfig as kubectl checks it, and whether
/// `--cluster`/`--user` override the context's own (its name and rules then do not describe
/// what the connection reaches).
fn context_of(kubeconfig: &Kubeconfig, opts: &ConnectOptions) -> Result<(String, bool), ClusterError> {
    let context = opts
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| ClusterError::Config("no current-context is set; pass --context".into()))?;
    if !kubeconfig.contexts.iter().any(|c| c.name == context) {
        return Err(ClusterError::Config(format!("context \"{context}\" not found")));
    }
    // kube would fall back to no cluster or no credentials at all; kubectl refuses
    if let Some(user) = opts
        .user
        .as_ref()
        .filter(|u| !kubeconfig.auth_infos.iter().any(|a| &a.name == *u))
    {
        return Err(ClusterError::Config(format!("auth info \"{user}\" does not exist")));
    }
    if let Some(cluster) = opts
        .cluster
        .as_ref()
        .filter(|c| !kubeconfig.clusters.iter().any(|k| &k.name == *c))
    {
        return Err(ClusterError::Config(format!("cluster \"{cluster}\" does not exist")));
    }
    // `--cluster`/`--user` naming another cluster or user than the context's own: the
    // connection reaches something the context's name (and its rules) does not describe
    let own = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref());
    let overridden = opts
        .cluster
        .as_ref()
        .is_some_and(|c| own.is_none_or(|o| &o.cluster != c))
        || opts
            .user
            .as_ref()
            .is_some_and(|u| own.is_none_or(|o| o.user.as_ref() != Some(u)));
    Ok((context, overridden))
}

impl Connection {
    pub async fn open(opts: &ConnectOptions) -> Result<Connection, ClusterError> {
        Connection::open_with(load_kubeconfig(opts)?, opts).await
    }

    /// Open `opts.context` (else the current context) of a kubeconfig already read: a fleet
    /// reads the file once for all its contexts.
    pub(crate) async fn open_with(kubeconfig: Kubeconfig, opts: &ConnectOptions) -> Result<Connection, ClusterError> {
        let clock = match &opts.clock {
            Some(c) => c.clone(),
            None => Clock::from_env().map_err(ClusterError::Config)?,
        };
        let (context, overridden) = context_of(&kubeconfig, opts)?;
        let rules = match &opts.safety {
            Some(safety) => safety.0.for_connection(&context, overridden, &safety.1),
            None => ContextRules::default(),
        };
        let kc_opts = KubeConfigOptions {
            context: Some(context.clone()),
            cluster: opts.cluster.clone(),
            user: opts.user.clone(),
        };
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &kc_opts)
            .await
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        config
            .headers
            .push((http::header::USER_AGENT, HeaderValue::from_static(USER_AGENT)));
        // kube's own retry of 429/503/504 (uncapped, below the tool's throttle, deaf to Ctrl-C)
        // is off: the write path's throttle is the only retry (`cluster/write.rs`)
        config.default_retry = false;
        if !opts.interactive_exec
            && let Some(exec) = config.auth_info.exec.as_mut()
        {
            exec.interactive_mode = Some(ExecInteractiveMode::Never);
        }
        // a context without a namespace (or with an empty one) means `default`, as in kubectl
        let namespace = opts
            .namespace
            .clone()
            .unwrap_or_else(|| match config.default_namespace.as_str() {
                "" => "default".into(),
                ns => ns.to_string(),
            });
        // the namespace goes into every URL path: only a valid one, wherever it came from
        validate_namespace(&namespace).map_err(|e| match &opts.namespace {
            Some(_) => ClusterError::Config(e.to_string()),
            None => ClusterError::Config(format!("context \"{context}\": {e}")),
        })?;
        let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
        let built = |e: kube::Error| match e {
            kube::Error::Auth(a) => ClusterError::credentials(&a),
            other => ClusterError::Config(other.to_string()),
        };
        // through a proxy kube's own stack (its tunnel), else ours: the same layers over a
        // connector with TCP_NODELAY
        let client = if config.proxy_url.is_some() {
            let builder = ClientBuilder::try_from(config).map_err(built)?;
            if opts.verbose {
                builder.with_layer(&LogLayer).build()
            } else {
                builder.build()
            }
        } else {
            let builder = nodelay_builder(config).map_err(built)?;
            if opts.verbose {
                builder.with_layer(&LogLayer).build()
            } else {
                builder.build()
            }
        };
        let mut kubectl_flags = Vec::new();
        if let Some(path) = &opts.kubeconfig {
            kubectl_flags.push(format!("--kubeconfig={}", path.display()));
        }
        kubectl_flags.push(format!("--context={context}"));
        for (flag, value) in [("--cluster", &opts.cluster), ("--user", &opts.user)] {
            if let Some(v) = value {
                kubectl_flags.push(format!("{flag}={v}"));
            }
        }
        Ok(Connection {
            kubectl_flags,
            client,
            namespace,
            context,
            server,
            timeout: opts.request_timeout,
            clock,
            chunk_size: opts.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE),
            list_bounds: ListBounds::default(),
            verbose: opts.verbose,
            rules,
            simulated: Default::default(),
        })
    }

    /// Run one API call under the request timeout, mapping its error to one clear line.
    pub(crate) async fn bounded<T>(
        &self,
        op: &ApiCall,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        let result = match self.timeout {
            Some(after) => tokio::time::timeout(after, call)
                .await
                .map_err(|_| ClusterError::Timeout {
                    op: Box::new(op.clone()),
                    after,
                })?,
            None => call.await,
        };
        result.map_err(|e| ClusterError::from_kube(e, op, &self.server))
    }

    /// `GET /version`: the cheapest request there is (a login check, the live probe).
    pub async fn version(&self) -> Result<k8s_openapi::apimachinery::pkg::version::Info, ClusterError> {
        let op = ApiCall {
            verb: "get",
            resource: "/version".into(),
            namespace: None,
            name: String::new(),
        };
        self.bounded(&op, self.client.apiserver_version()).await
    }

    /// Whether the server is this tool's simulated cluster (`gitVersion` `…-namzu-sim`); a server
    /// that cannot say is not.
    pub(crate) async fn is_simulated(&self) -> bool {
        *self
            .simulated
            .get_or_init(|| async {
                self.version()
                    .await
                    .is_ok_and(|v| v.git_version.contains(SIM_VERSION_MARK))
            })
            .await
    }

    /// The versions the cluster serves of an API group (empty when the group is not served).
    pub async fn served_versions(&self, group: &str) -> Result<Vec<String>, ClusterError> {
        let op = ApiCall {
            verb: "discover",
            resource: "API groups".into(),
            namespace: None,
            name: String::new(),
        };
        let groups = self.bounded(&op, self.client.list_api_groups()).await?;
        Ok(groups
            .groups
            .iter()
            .filter(|g| g.name == group)
            .flat_map(|g| g.versions.iter().map(|v| v.version.clone()))
            .collect())
    }

    /// Which agent-sandbox API the cluster serves: `Ok` only with agents.x-k8s.io/v1beta1.
    pub(crate) async fn check_agent_sandbox(&self) -> Result<(), ClusterError> {
        let served = self.served_versions("agents.x-k8s.io").await?;
        if served.is_empty() {
            return Err(ClusterError::NotInstalled);
        }
        if served.iter().any(|v| v == "v1beta1") {
            Ok(())
        } else {
            Err(ClusterError::TooOld { served })
        }
    }
}
