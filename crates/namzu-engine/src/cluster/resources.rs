//! The API resources the tool reads and writes, and typed-free access to them.

use super::connect::{Connection, ListBounds};
use super::error::{ApiCall, ClusterError};
pub use super::kinds::{
    ApiKind, CILIUM_POLICIES, CLAIMS, EVENTS, NAMESPACES, PODS, PVCS, SANDBOXES, TEMPLATES, WARM_POOLS,
};
use kube::api::{DynamicObject, ListParams};
use namzu_domain::naming::{is_path_safe_name, validate_namespace};
use namzu_domain::projection::{self, Keep};
use serde_json::Value;

/// LIST one resource in a namespace (or everywhere), optionally by label selector.
pub async fn list(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<Value>, ClusterError> {
    let op = ApiCall::new("list", kind, namespace, "");
    let params = match selector {
        Some(s) => ListParams::default().labels(s),
        None => ListParams::default(),
    };
    raw_list(conn, kind, namespace, &params, &op).await
}

/// A LIST and the resourceVersion it was read at, for a watch to start from.
pub(crate) async fn list_versioned<C: ListItems>(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<(C, String), ClusterError> {
    let op = ApiCall::new("list", kind, namespace, "");
    let params = match selector {
        Some(s) => ListParams::default().labels(s),
        None => ListParams::default(),
    };
    raw_list_versioned(conn, kind, namespace, &params, &op, C::default()).await
}

/// LIST one resource like [`list_as`], its items pushed into `items` (a collection that knows
/// something of how to hold them).
pub(crate) async fn list_into<C: ListItems>(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    selector: Option<&str>,
    items: C,
) -> Result<C, ClusterError> {
    let op = ApiCall::new("list", kind, namespace, "");
    let params = match selector {
        Some(s) => ListParams::default().labels(s),
        None => ListParams::default(),
    };
    Ok(raw_list_versioned(conn, kind, namespace, &params, &op, items).await?.0)
}

async fn raw_list(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    params: &ListParams,
    op: &ApiCall,
) -> Result<Vec<Value>, ClusterError> {
    Ok(raw_list_versioned(conn, kind, namespace, params, op, Vec::new())
        .await?
        .0)
}

/// Where a LIST's items go as each page is parsed.
pub(crate) trait ListItems: Default {
    fn push(&mut self, item: Value);

    /// An empty collection like this one: a list that starts over starts with it.
    fn emptied(&self) -> Self {
        Self::default()
    }
}

impl ListItems for Vec<Value> {
    fn push(&mut self, item: Value) {
        Vec::push(self, item);
    }
}

/// A watch's first state is held as compact text until the mirror takes it, one object parsed
/// at a time (`mirror::Listed`).
impl ListItems for Vec<namzu_domain::mirror::Listed> {
    fn push(&mut self, item: Value) {
        Vec::push(self, namzu_domain::mirror::Listed::of(&item));
    }
}

/// A LIST, page by page as kubectl reads it: `limit` = the connection's chunk size, then
/// `continue` until the server says it is done; a continue token that expired (410) restarts as
/// one full list, as client-go's pager does. Each item is pruned to the kind's projection as it
/// is parsed, and must be an object of the namespace listed.
///
/// Every paged read of the tool is this one loop, and it ends: a continue token handed out
/// before in the same list (a cycle: A, B, A, …) is an error, and so are more pages than the
/// connection's [`ListBounds`] allow or a list longer than their time, all pages together.
async fn raw_list_versioned<C: ListItems>(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    params: &ListParams,
    op: &ApiCall,
    items: C,
) -> Result<(C, String), ClusterError> {
    check_path(op, namespace, "")?;
    let bounds = conn.list_bounds;
    match tokio::time::timeout(bounds.max_time, paged(conn, kind, namespace, params, op, items, bounds)).await {
        Ok(listed) => listed,
        Err(_) => Err(ClusterError::Other(format!(
            "{op}: the list did not end within {} (all its pages together): stopped",
            said(bounds.max_time)
        ))),
    }
}

/// A bound as words: `5m`, or `300ms` under a second.
fn said(d: std::time::Duration) -> String {
    match i64::try_from(d.as_secs()) {
        Ok(0) => format!("{}ms", d.as_millis()),
        Ok(s) => namzu_domain::age::human_duration(s),
        Err(_) => format!("{d:?}"),
    }
}

/// The continue tokens one list was handed, hashed: a token seen again is a cycle.
#[derive(Default)]
struct SeenTokens(std::collections::HashSet<u64>);

impl SeenTokens {
    /// Whether `token` is new to this list (and now seen).
    fn first_time(&mut self, token: &str) -> bool {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        token.hash(&mut h);
        self.0.insert(h.finish())
    }
}

/// The pages of [`raw_list_versioned`], bounded by pages and by tokens never seen before.
async fn paged<C: ListItems>(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    params: &ListParams,
    op: &ApiCall,
    mut items: C,
    bounds: ListBounds,
) -> Result<(C, String), ClusterError> {
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), namespace);
    let mut count = 0usize;
    let mut token: Option<String> = None;
    let mut limit = conn.chunk_size;
    let mut relisted = false;
    let mut version = String::new();
    let api_version = kind.api_resource().api_version;
    // the next page is about as long as the last
    let mut page_size = 0;
    let mut seen = SeenTokens::default();
    let mut pages = 0usize;
    loop {
        if pages >= bounds.max_pages {
            return Err(ClusterError::Other(format!(
                "{op}: the list did not end after {} pages (the API server kept handing out continue tokens): stopped",
                bounds.max_pages
            )));
        }
        pages += 1;
        let mut page_params = params.clone();
        if limit > 0 {
            page_params = page_params.limit(limit);
        }
        if let Some(t) = &token {
            page_params = page_params.continue_token(t);
        }
        let request = kube::core::Request::new(&url)
            .list(&page_params)
            .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
        let text = match read_capped(conn, op, request, page_size).await {
            // once: a server that expires the full list's pages too is an error, not a loop
            Err(ClusterError::Api { code: 410, .. }) if token.is_some() && !relisted => {
                (items, count, token, limit, relisted, version) = (items.emptied(), 0, None, 0, true, String::new());
                seen = SeenTokens::default();
                continue;
            }
            answer => answer?,
        };
        page_size = text.len() + text.len() / 16 + 4096;
        // each item checked and handed on as it is parsed: a page's objects are never all
        // parsed at once
        let mut misfit = None;
        let parsed = parse_page(&text, kind.keep, &mut |mut v| {
            if !fits(&v, kind, &api_version, namespace) {
                misfit = Some(ClusterError::Other(format!(
                    "{op}: the API server answered a list whose item {} is not a {} of this kind, apiVersion and namespace: {}",
                    count,
                    kind.kind,
                    namzu_domain::object::brief(&v)
                )));
                return false;
            }
            fill_kind(&mut v, kind);
            items.push(v);
            count += 1;
            true
        });
        if let Some(e) = misfit {
            return Err(e);
        }
        let page =
            parsed.map_err(|e| ClusterError::Other(format!("{op}: the API server's answer is not a list: {e}")))?;
        if version.is_empty() {
            version = page.resource_version.unwrap_or_default();
        }
        match page.continue_token {
            // a token handed out before in this list (the same one again, or a cycle) would page
            // forever
            Some(t) if !t.is_empty() && !seen.first_time(&t) => {
                return Err(ClusterError::Other(format!(
                    "{op}: the API server handed out a continue token it had handed out before in this list (page {pages}): the list would never end; stopped"
                )));
            }
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok((items, version)),
        }
    }
}

/// A list item or watched object is an object of the namespace read.
/// Its kind and apiVersion, where it carries them (the core API leaves them out of list items),
/// are the kind's.
fn fits(v: &Value, kind: &ApiKind, api_version: &str, namespace: Option<&str>) -> bool {
    let at = |key: &str| v.get(key).filter(|x| !x.is_null());
    v.is_object()
        && namespace.is_none_or(|ns| namzu_domain::object::str_at(v, &["metadata", "namespace"]) == Some(ns))
        && at("kind").is_none_or(|k| k.as_str() == Some(kind.kind))
        && at("apiVersion").is_none_or(|a| a.as_str() == Some(api_version))
}

/// One change a watch reported, its object pruned to the kind's projection.
#[derive(Debug)]
pub(crate) enum Watched {
    /// An object and the resourceVersion it was sent at.
    Applied(Value, String),
    Deleted(Value, String),
    /// The newest resourceVersion; `initial_events_end` closes a streaming list's first state.
    Bookmark {
        resource_version: String,
        initial_events_end: bool,
    },
}

/// Open a watch (`allowWatchBookmarks`; `from` a resourceVersion, or a streaming list when
/// `initial_events`). Opening is bounded by the connection's timeout; the stream ends when the
/// server closes it. A 410 inside the stream comes out as `ClusterError::Api { code: 410 }`.
pub(crate) async fn watch(
    conn: &Connection,
    kind: &ApiKind,
    namespace: Option<&str>,
    selector: Option<&str>,
    from: &str,
    initial_events: bool,
    timeout_seconds: u32,
) -> Result<impl futures::Stream<Item = Result<Watched, ClusterError>> + use<>, ClusterError> {
    use futures::StreamExt;
    let op = ApiCall::new("watch", kind, namespace, "");
    check_path(&op, namespace, "")?;
    let mut params = if initial_events {
        kube::api::WatchParams::streaming_lists()
    } else {
        kube::api::WatchParams::default()
    }
    .timeout(timeout_seconds);
    if let Some(s) = selector {
        params = params.labels(s);
    }
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), namespace);
    let request = kube::core::Request::new(&url)
        .watch(&params, from)
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    let body = conn.bounded(&op, conn.client.request_stream(request)).await?;
    let (kind, namespace, server) = (*kind, namespace.map(str::to_string), conn.server.clone());
    Ok(capped_lines(body).filter_map(move |line| {
        let out = match line {
            Ok(line) if line.iter().all(u8::is_ascii_whitespace) => None,
            Ok(line) => Some(match std::str::from_utf8(&line) {
                Ok(line) => watched(line, &kind, namespace.as_deref(), &op, &server),
                Err(e) => Err(ClusterError::Other(format!(
                    "{op}: the watch sent a line that is not UTF-8: {e}"
                ))),
            }),
            Err(why) => Some(Err(ClusterError::Other(format!("{op}: {why}")))),
        };
        futures::future::ready(out)
    }))
}

/// The most one LIST page or one watch line may hold (32 MiB): a server sending more is refused
/// on that read, never buffered whole.
pub(crate) const MAX_READ: usize = 32 << 20;

/// The cap as words: "32 MiB".
fn cap() -> String {
    format!("{} MiB", MAX_READ >> 20)
}

/// One request's whole answer as text, at most [`MAX_READ`] bytes of it; the request timeout
/// bounds the reading too.
/// `size` is the room made first (the last page's size: a buffer grown by doubling holds up to
/// twice its text).
async fn read_capped(
    conn: &Connection,
    op: &ApiCall,
    request: http::Request<Vec<u8>>,
    size: usize,
) -> Result<String, ClusterError> {
    use futures::AsyncReadExt;
    let read = async {
        let body = conn.client.request_stream(request).await?;
        let mut buf = Vec::with_capacity(size.min(MAX_READ));
        Box::pin(body)
            .take(MAX_READ as u64 + 1)
            .read_to_end(&mut buf)
            .await
            .map_err(kube::Error::ReadEvents)?;
        Ok(buf)
    };
    let buf = conn.bounded(op, read).await?;
    if buf.len() > MAX_READ {
        return Err(ClusterError::Other(format!(
            "{op}: the API server's answer is larger than the {} one page may be: not read (a smaller --chunk-size asks for smaller pages)",
            cap()
        )));
    }
    String::from_utf8(buf).map_err(|e| ClusterError::Other(format!("{op}: the API server's answer is not UTF-8: {e}")))
}

/// A watch body's lines (without their `\n`), each at most [`MAX_READ`] bytes: a longer one ends
/// the stream with one error naming the cap; a broken body ends it with its error.
fn capped_lines(
    body: impl futures::AsyncBufRead + Send + 'static,
) -> impl futures::Stream<Item = Result<Vec<u8>, String>> + Send + 'static {
    use futures::AsyncBufReadExt;
    futures::stream::unfold((Box::pin(body), false), |(mut body, done)| async move {
        if done {
            return None;
        }
        let mut line = Vec::new();
        loop {
            let chunk = match body.fill_buf().await {
                Ok(chunk) => chunk,
                Err(e) => return Some((Err(format!("the watch broke off: {e}")), (body, true))),
            };
            if chunk.is_empty() {
                return (!line.is_empty()).then_some((Ok(line), (body, true)));
            }
            match chunk.iter().position(|b| *b == b'\n') {
                Some(end) if line.len() + end <= MAX_READ => {
                    line.extend_from_slice(&chunk[..end]);
                    body.as_mut().consume(end + 1);
                    return Some((Ok(line), (body, false)));
                }
                _ if line.len() + chunk.len() > MAX_READ => {
                    let why = format!(
                        "the API server's watch sent a line longer than the {} one event may be: not read",
                        cap()
                    );
                    return Some((Err(why), (body, true)));
                }
                _ => {
                    let n = chunk.len();
                    line.extend_from_slice(chunk);
                    body.as_mut().consume(n);
                }
            }
        }
    })
}

/// One line of a watch: `{"type": …, "object": …}`, the object parsed straight into the kind's
/// projection (a watch of thousands of objects never holds their managedFields), checked to be
/// an object of the namespace watched.
fn watched(
    line: &str,
    kind: &ApiKind,
    namespace: Option<&str>,
    op: &ApiCall,
    server: &str,
) -> Result<Watched, ClusterError> {
    use serde::de::DeserializeSeed;
    let bad = |what: String| ClusterError::Other(format!("{op}: the API server's watch sent {what}"));
    let mut de = serde_json::Deserializer::from_str(line);
    let (event, object) = WatchLineSeed(kind.keep)
        .deserialize(&mut de)
        .map_err(|e| bad(format!("a line that is not a watch event: {e}")))?;
    let mut object = object.ok_or_else(|| bad("an event without an object".into()))?;
    let meta = |v: &Value, key: &str| v.pointer(&format!("/metadata/{key}")).cloned();
    match event.as_str() {
        "ADDED" | "MODIFIED" | "DELETED" => {
            if !fits(&object, kind, &kind.api_resource().api_version, namespace) {
                return Err(bad(format!(
                    "something that is not a {} of this kind, apiVersion and namespace: {}",
                    kind.kind,
                    namzu_domain::object::brief(&object)
                )));
            }
            let at = meta(&object, "resourceVersion")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            projection::project(&mut object, kind.keep);
            fill_kind(&mut object, kind);
            Ok(if event == "DELETED" {
                Watched::Deleted(object, at)
            } else {
                Watched::Applied(object, at)
            })
        }
        "BOOKMARK" => Ok(Watched::Bookmark {
            resource_version: meta(&object, "resourceVersion")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            initial_events_end: object
                .pointer("/metadata/annotations/k8s.io~1initial-events-end")
                .and_then(Value::as_str)
                == Some("true"),
        }),
        "ERROR" => {
            let status: kube::core::Status =
                serde_json::from_value(object).map_err(|e| bad(format!("an error that is not a Status: {e}")))?;
            Err(ClusterError::from_kube(kube::Error::Api(Box::new(status)), op, server))
        }
        other => Err(bad(format!("an event of unknown type {other:?}"))),
    }
}

/// A watch line's type and object; the object projected as parsed when the type came first (as
/// the API server writes it), else whole (and projected after).
struct WatchLineSeed(Keep);

impl<'de> serde::de::DeserializeSeed<'de> for WatchLineSeed {
    type Value = (String, Option<Value>);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for WatchLineSeed {
    type Value = (String, Option<Value>);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a watch event")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut event, mut object) = (String::new(), None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => event = map.next_value()?,
                "object" if matches!(event.as_str(), "ADDED" | "MODIFIED" | "DELETED") => {
                    object = Some(map.next_value_seed(projection::Projected(self.0))?);
                }
                "object" => object = Some(map.next_value()?),
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok((event, object))
    }
}

/// One page of a LIST once its items have been handed on: the token for the next page.
#[derive(Default)]
struct Page {
    continue_token: Option<String>,
    resource_version: Option<String>,
}

/// Parse one page, each item pruned as parsed and handed to `item` at once; `item` answering
/// false stops the parse with an error.
fn parse_page(text: &str, keep: Keep, item: &mut dyn FnMut(Value) -> bool) -> Result<Page, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    let page = PageSeed(keep, item).deserialize(&mut de)?;
    de.end()?;
    Ok(page)
}

struct PageSeed<'s>(Keep, &'s mut dyn FnMut(Value) -> bool);

impl<'de> serde::de::DeserializeSeed<'de> for PageSeed<'_> {
    type Value = Page;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Page, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for PageSeed<'_> {
    type Value = Page;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Kubernetes list object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Page, A::Error> {
        let mut page = Page::default();
        let PageSeed(keep, item) = self;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "items" => map.next_value_seed(ItemsSeed(keep, &mut *item))?,
                "metadata" => {
                    let meta: Value = map.next_value()?;
                    page.continue_token = meta.get("continue").and_then(Value::as_str).map(str::to_string);
                    page.resource_version = meta.get("resourceVersion").and_then(Value::as_str).map(str::to_string);
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

/// The items array, each item parsed straight into its projection and handed on.
struct ItemsSeed<'s>(Keep, &'s mut dyn FnMut(Value) -> bool);

impl<'de> serde::de::DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ItemsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of objects")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ItemsSeed(keep, item) = self;
        while let Some(v) = seq.next_element_seed(projection::Projected(keep))? {
            if !item(v) {
                return Err(serde::de::Error::custom("an item that does not fit"));
            }
        }
        Ok(())
    }
}

/// LIST by field selector (`metadata.name=…`, `involvedObject.name=…`) in one namespace.
pub(crate) async fn list_fields(
    conn: &Connection,
    kind: &ApiKind,
    namespace: &str,
    fields: &str,
) -> Result<Vec<Value>, ClusterError> {
    let op = ApiCall::new("list", kind, Some(namespace), "");
    raw_list(conn, kind, Some(namespace), &ListParams::default().fields(fields), &op).await
}

/// LIST by field selector like [`list_fields`], the items pushed into `items` as they are parsed.
pub(crate) async fn list_fields_into<C: ListItems>(
    conn: &Connection,
    kind: &ApiKind,
    namespace: &str,
    fields: &str,
    items: C,
) -> Result<C, ClusterError> {
    let op = ApiCall::new("list", kind, Some(namespace), "");
    let params = ListParams::default().fields(fields);
    Ok(raw_list_versioned(conn, kind, Some(namespace), &params, &op, items)
        .await?
        .0)
}

/// A history's events are held as they are read: each object's newest only.
impl ListItems for namzu_domain::timeline::NewestEvents {
    fn push(&mut self, item: Value) {
        namzu_domain::timeline::NewestEvents::keep(self, item);
    }

    fn emptied(&self) -> Self {
        namzu_domain::timeline::NewestEvents::empty_like(self)
    }
}

/// GET one object; `Ok(None)` when it does not exist. The answer must be the object asked for.
pub async fn get(
    conn: &Connection,
    kind: &ApiKind,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, ClusterError> {
    let op = ApiCall::new("get", kind, Some(namespace), name);
    // no object can have a name that is not one (a template label such as `Coder_X`): not found,
    // without a request that could carry it into a URL
    if !is_path_safe_name(name) {
        return Ok(None);
    }
    check_path(&op, Some(namespace), name)?;
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), Some(namespace));
    let request = kube::core::Request::new(url)
        .get(name, &Default::default())
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    match conn.bounded(&op, conn.client.request::<Value>(request)).await {
        Ok(mut o) => {
            fill_kind(&mut o, kind);
            check_identity(&o, kind, namespace, name).map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
            Ok(Some(o))
        }
        // a 410 on a GET means gone, as a 404 does (the library reads both as "already gone")
        Err(ClusterError::Api { code: 404 | 410, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Only valid names reach a URL path: a namespace or name that could add a segment or a query
/// (`a/sandboxes/b?x=`) is refused before any request.
fn check_path(op: &ApiCall, namespace: Option<&str>, name: &str) -> Result<(), ClusterError> {
    if let Some(ns) = namespace {
        validate_namespace(ns).map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    }
    if !name.is_empty() && !is_path_safe_name(name) {
        return Err(ClusterError::Other(format!("{op}: invalid name {name:?}")));
    }
    Ok(())
}

/// The core API leaves kind and apiVersion out of list items; fill them in where absent.
fn fill_kind(v: &mut Value, kind: &ApiKind) {
    if let Some(obj) = v.as_object_mut()
        && obj.get("kind").is_none_or(Value::is_null)
    {
        obj.insert("kind".into(), Value::String(kind.kind.into()));
        obj.insert("apiVersion".into(), Value::String(kind.api_resource().api_version));
    }
}

/// An answer is the object asked for: its kind, apiVersion, namespace and name, or an error
/// saying what came instead (a proxy or a hostile server can answer with anything).
pub(crate) fn check_identity(v: &Value, kind: &ApiKind, namespace: &str, name: &str) -> Result<(), ClusterError> {
    let field = |path: &[&str]| namzu_domain::object::str_at(v, path).unwrap_or("-").to_string();
    let api_version = kind.api_resource().api_version;
    let (k, av, ns, n) = (
        field(&["kind"]),
        field(&["apiVersion"]),
        field(&["metadata", "namespace"]),
        field(&["metadata", "name"]),
    );
    if k == kind.kind && av == api_version && ns == namespace && n == name {
        Ok(())
    } else {
        Err(ClusterError::Other(format!(
            "the API server answered with {k} {av} {ns}/{n} where {} {api_version} {namespace}/{name} was asked for",
            kind.kind
        )))
    }
}
