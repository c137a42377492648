//! LIST: pages, continue tokens, `resourceVersion`/`resourceVersionMatch`, and a list encoded
//! straight from the store's objects.

use super::super::resources::Resource;
use super::super::selector::Selector;
use super::super::status::{self, ApiError};
use super::super::store::meta;
use super::super::wire::Req;
use super::super::{SimState, table};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::sync::Arc;

/// One page of a LIST, taken under the server's lock: the objects (shared with the store, not
/// copied) and the list's metadata; encoded by [`Page::encode`] once the lock is released.
pub(super) struct Page {
    r: Resource,
    items: Vec<Arc<Value>>,
    meta: Value,
    /// Asked as a Table (kubectl's `get` without `-o`): `includeObject` and the time its ages
    /// are counted from.
    table: Option<(String, DateTime<Utc>)>,
}

impl Page {
    pub(super) fn take(
        st: &SimState,
        req: &Req,
        r: &Resource,
        ns: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Page, ApiError> {
        let labels = Selector::parse(req.param("labelSelector").unwrap_or("")).map_err(|m| status::bad_request(&m))?;
        let fields = Selector::parse(req.param("fieldSelector").unwrap_or("")).map_err(|m| status::bad_request(&m))?;
        let limit = req
            .param("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|l| *l > 0);
        let after = req
            .param("continue")
            .filter(|c| !c.is_empty())
            .map(decode_continue)
            .transpose()?;
        list_version(st, req)?;
        // the page after the continue key, in key order
        let after_key = after.as_deref().map(|k| k.split_once('\u{0}').unwrap_or((k, "")));
        let mut matching = st
            .store
            .shared_after(r, ns, after_key)
            .filter(|o| labels.matches_labels(o) && fields.matches_fields(o))
            .cloned();
        let items: Vec<Arc<Value>> = match limit {
            Some(l) => matching.by_ref().take(l).collect(),
            None => matching.by_ref().collect(),
        };
        // as the API server: the count of what is left only without a selector (with one, finding
        // it would mean filtering everything left); with one, only whether anything is
        let selected = req.param("labelSelector").is_some_and(|s| !s.is_empty())
            || req.param("fieldSelector").is_some_and(|s| !s.is_empty());
        let remaining = if selected {
            usize::from(matching.next().is_some())
        } else {
            matching.count()
        };
        let rv = st.store.resource_version().to_string();
        let mut meta = json!({"resourceVersion": rv});
        // a custom resource's list always has `continue` (empty when nothing follows)
        if r.is_custom() {
            meta["continue"] = json!("");
        }
        if remaining > 0
            && let Some(last) = items.last()
        {
            meta["continue"] = json!(encode_continue(&object_key(last)));
            if !selected {
                meta["remainingItemCount"] = json!(remaining);
            }
        }
        let table = req.accept.contains("as=Table").then(|| {
            let include = req.param("includeObject").unwrap_or("Metadata").to_string();
            (include, now)
        });
        Ok(Page {
            r: *r,
            items,
            meta,
            table,
        })
    }

    /// Hand out `token` as this page's continue token (a fault's list that never ends).
    pub(super) fn set_continue(&mut self, token: String) {
        self.meta["continue"] = Value::String(token);
    }

    /// The answer's body: a Table, or the list as JSON written from the objects as they are.
    pub(super) fn encode(mut self) -> Vec<u8> {
        let r = &self.r;
        if let Some((include, now)) = &self.table {
            // a Table's metadata has no empty continue (a list of custom resources does)
            if self.meta["continue"] == ""
                && let Some(m) = self.meta.as_object_mut()
            {
                m.remove("continue");
            }
            let table = table::table(r, &self.items, &self.meta, include, *now);
            return serde_json::to_vec(&table).expect("json");
        }
        let body = ListBody {
            kind: format!("{}List", r.kind),
            api_version: r.api_version(),
            metadata: &self.meta,
            // the core API omits kind and apiVersion on list items
            items: self
                .items
                .iter()
                .map(|object| ListItem {
                    object,
                    core: r.group.is_empty(),
                })
                .collect(),
        };
        serde_json::to_vec(&body).expect("json")
    }
}

#[derive(serde::Serialize)]
struct ListBody<'a> {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: String,
    metadata: &'a Value,
    items: Vec<ListItem<'a>>,
}

struct ListItem<'a> {
    object: &'a Value,
    /// Drop kind and apiVersion, as the core API does in lists.
    core: bool,
}

impl serde::Serialize for ListItem<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.core, self.object.as_object()) {
            (true, Some(fields)) => s.collect_map(fields.iter().filter(|(k, _)| *k != "kind" && *k != "apiVersion")),
            _ => self.object.serialize(s),
        }
    }
}

pub(super) fn object_key(o: &Value) -> String {
    format!("{}\u{0}{}", meta(o, "namespace"), meta(o, "name"))
}

pub(super) fn encode_continue(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

/// A LIST's `resourceVersion` and `resourceVersionMatch`, as the API server validates and
/// honours them: the sim keeps no old snapshots, so any version it can serve is the newest.
pub(super) fn list_version(st: &SimState, req: &Req) -> Result<(), ApiError> {
    let rv = req.param("resourceVersion").unwrap_or("");
    let list_options = |m: &str| {
        status::status(
            422,
            "Invalid",
            &format!("ListOptions.meta.k8s.io \"\" is invalid: {m}"),
            json!({"group": "meta.k8s.io", "kind": "ListOptions"}),
        )
    };
    let rvm = req.param("resourceVersionMatch").unwrap_or("");
    match rvm {
        "" | "NotOlderThan" | "Exact" => {}
        other => {
            return Err(list_options(&format!(
                "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            )));
        }
    }
    if !rvm.is_empty() && rv.is_empty() {
        return Err(list_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if rvm == "Exact" && rv == "0" {
        return Err(list_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    if rv.is_empty() || rv == "0" {
        return Ok(());
    }
    let asked: u64 = rv.parse().map_err(|_| {
        status::bad_request(&format!(
            "invalid resource version: strconv.ParseUint: parsing \"{rv}\": invalid syntax"
        ))
    })?;
    let current = st.store.resource_version();
    if asked > current {
        // the API server waits up to 3 s for its cache to catch up, then gives up
        let mut e = status::status(
            504,
            "Timeout",
            &format!("Too large resource version: {asked}, current: {current}"),
            json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
        );
        e.retry_after = Some(1);
        return Err(e);
    }
    if rvm == "Exact" && asked < current {
        // a snapshot of the past: the sim has none, so it is as good as compacted
        return Err(status::status(
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
            json!({}),
        ));
    }
    Ok(())
}

/// A continue token that does not decode: 400 (an expired one would be 410; the sim's never expire).
pub(super) fn decode_continue(token: &str) -> Result<String, ApiError> {
    let bad = || status::bad_request(&format!("continue key is not valid: illegal continue token: {token:?}"));
    if !token.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes: Result<Vec<u8>, _> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
        .collect();
    bytes.ok().and_then(|b| String::from_utf8(b).ok()).ok_or_else(bad)
}
