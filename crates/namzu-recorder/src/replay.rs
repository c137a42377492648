//! Reading a store back: the sessions it holds (from, to, and the gaps between), the state at an
//! instant (the keyframe at or before it and the changes up to it), and every record in order.

use crate::frame::{self, End};
use crate::patch;
use crate::record::{Key, Record, at_of};
use crate::store::{Head, Store, read_segment};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io;

/// A stretch of time the store holds completely: one recorder session (or what retention left
/// of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub from: DateTime<Utc>,
    /// `None`: a recorder is writing it now.
    pub to: Option<DateTime<Utc>>,
    /// What it records: `-A`, or a namespace.
    pub scope: String,
    /// It ended without its stop record (a recorder killed, a machine gone): complete up to its
    /// last record.
    pub cut_short: bool,
}

impl Span {
    pub fn holds(&self, at: DateTime<Utc>) -> bool {
        self.from <= at && self.to.is_none_or(|to| at <= to)
    }
}

/// The state at an instant.
#[derive(Debug)]
pub struct Replayed {
    pub at: DateTime<Utc>,
    pub state: BTreeMap<Key, Value>,
    /// The span the instant is in, and the one before it (the gap is between them).
    pub span: Span,
    pub before: Option<Span>,
}

#[derive(Debug)]
pub enum ReplayError {
    /// Nothing is recorded for this context in this store.
    Empty,
    /// The instant is in no span.
    Outside {
        at: DateTime<Utc>,
        spans: Vec<Span>,
    },
    Io(io::Error),
}

impl From<io::Error> for ReplayError {
    fn from(e: io::Error) -> Self {
        ReplayError::Io(e)
    }
}

impl Store {
    /// The spans the store holds, oldest first.
    pub fn spans(&self) -> io::Result<Vec<Span>> {
        let heads = self.heads()?;
        let live = self.recording_now();
        let mut spans: Vec<Span> = Vec::new();
        let mut i = 0;
        while i < heads.len() {
            let first = &heads[i];
            let mut last = i;
            while last + 1 < heads.len() && heads[last + 1].session == first.session && !heads[last + 1].fresh {
                last += 1;
            }
            let newest = last + 1 == heads.len();
            let (end, stopped) = end_of(&heads[last])?;
            spans.push(Span {
                from: first.at,
                to: if newest && live && !stopped { None } else { Some(end) },
                scope: first.scope.clone(),
                cut_short: !(stopped || newest && live),
            });
            i = last + 1;
        }
        Ok(spans)
    }

    /// The recorded state at `at`.
    pub fn replay(&self, at: DateTime<Utc>) -> Result<Replayed, ReplayError> {
        self.replay_kinds(at, &|_| true)
    }

    /// The recorded state at `at` of the kinds `wanted` keeps (and the pseudo-kind `Readable`
    /// when it keeps it): the others' objects are skipped unparsed (a fleet's Events are most of
    /// a keyframe, and a `list` reads none).
    pub fn replay_kinds(&self, at: DateTime<Utc>, wanted: &dyn Fn(&str) -> bool) -> Result<Replayed, ReplayError> {
        let spans = self.spans()?;
        if spans.is_empty() {
            return Err(ReplayError::Empty);
        }
        let Some(n) = spans.iter().position(|s| s.holds(at)) else {
            return Err(ReplayError::Outside { at, spans });
        };
        let span = spans[n].clone();
        let heads = self.heads()?;
        // the newest segment of the span starting at or before `at` whose keyframe is whole
        let candidates = heads.iter().rev().filter(|h| h.at <= at && h.at >= span.from);
        for head in candidates {
            if let Some(state) = state_at(head, at, wanted)? {
                return Ok(Replayed {
                    at,
                    state,
                    span,
                    before: n.checked_sub(1).map(|p| spans[p].clone()),
                });
            }
        }
        Err(ReplayError::Outside { at, spans })
    }

    /// The instants an object changed at (a put, a patch, a delete — not keyframes, beats or
    /// audit entries), oldest first, each once: the steps of a replay's scrubber. Read off each
    /// record's first bytes, never parsed whole.
    pub fn change_times(&self) -> io::Result<Vec<DateTime<Utc>>> {
        const CHANGES: [&[u8]; 3] = [br#"{"r":"put""#, br#"{"r":"patch""#, br#"{"r":"del""#];
        let mut times = std::collections::BTreeSet::new();
        for segment in self.segments()? {
            let read = read_segment(&segment.path, |payload| {
                if CHANGES.iter().any(|p| payload.starts_with(p))
                    && let Some(t) = at_of(payload)
                {
                    times.insert(t);
                }
                true
            });
            match read {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(times.into_iter().collect())
    }

    /// Every record the store holds, oldest first (a segment's torn tail left out).
    pub fn scan(&self, mut each: impl FnMut(Record)) -> io::Result<()> {
        for segment in self.segments()? {
            let read = read_segment(&segment.path, |payload| {
                if let Some(r) = frame::plain(payload).ok().and_then(|p| serde_json::from_slice(&p).ok()) {
                    each(r);
                }
                true
            });
            match read {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The time of a segment's last whole record, and whether that was its session's stop.
fn end_of(head: &Head) -> io::Result<(DateTime<Utc>, bool)> {
    let (mut end, mut stopped) = (head.at, false);
    let read = read_segment(&head.segment.path, |payload| {
        if let Some(t) = at_of(payload) {
            end = end.max(t);
        }
        stopped = payload.starts_with(br#"{"r":"stop""#);
        true
    });
    match read {
        Ok(_) => Ok((end, stopped)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((end, stopped)),
        Err(e) => Err(e),
    }
}

/// A record as a replay reads it: its objects left as text (borrowed from the payload) until
/// their kind is wanted, never buffered whole the way an internally tagged enum is. (Its short
/// strings are copied: serde borrows a `Cow` only outside an `Option`.)
#[derive(Deserialize)]
struct View<'a> {
    #[serde(borrow)]
    r: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    ns: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    obj: Option<&'a RawValue>,
    #[serde(default, borrow)]
    patch: Option<&'a RawValue>,
    #[serde(default, borrow)]
    objects: Vec<ObjectView<'a>>,
}

#[derive(Deserialize)]
struct ObjectView<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    obj: &'a RawValue,
}

/// A keyframe's objects of the kinds wanted, parsed on two threads: at 10,000 workspaces this
/// is a fifth of a `list --at`.
fn keyframe(objects: &[ObjectView<'_>], wanted: &dyn Fn(&str) -> bool) -> BTreeMap<Key, Value> {
    let objects: Vec<&ObjectView<'_>> = objects.iter().filter(|o| wanted(&o.kind)).collect();
    let parse = |part: &[&ObjectView<'_>]| -> Vec<(Key, Value)> {
        part.iter()
            .filter_map(|o| {
                let obj = parsed(Some(o.obj))?;
                Some((Key::of(&o.kind, &obj), obj))
            })
            .collect()
    };
    let (first, second) = objects.split_at(objects.len() / 2);
    let (mut out, rest) = std::thread::scope(|s| {
        // no second thread to be had (a pids limit): one parses both halves
        let other = std::thread::Builder::new().spawn_scoped(s, || parse(second)).ok();
        let mine = parse(first);
        let theirs = other.and_then(|t| t.join().ok());
        (mine, theirs.unwrap_or_else(|| parse(second)))
    });
    out.extend(rest);
    out.into_iter().collect()
}

fn parsed(raw: Option<&RawValue>) -> Option<Value> {
    serde_json::from_str(raw?.get()).ok()
}

/// The state at `at` from the segment `head` starts, of the kinds `wanted` keeps; `None` when
/// its keyframe is torn.
fn state_at(head: &Head, at: DateTime<Utc>, wanted: &dyn Fn(&str) -> bool) -> io::Result<Option<BTreeMap<Key, Value>>> {
    let mut state: Option<BTreeMap<Key, Value>> = None;
    let mut n = 0usize;
    let read = read_segment(&head.segment.path, |payload| {
        n += 1;
        if n == 1 {
            return true;
        }
        let Ok(payload) = frame::plain(payload) else {
            return state.is_some();
        };
        // skipped, not the end: a streaming list's objects carry the instant it began, so they
        // may follow another watch's later change in the file
        if at_of(&payload).is_some_and(|t| t > at) {
            return true;
        }
        let Ok(view) = serde_json::from_slice::<View>(&payload) else {
            return true;
        };
        let kind = view.kind.as_deref().unwrap_or("");
        match (view.r.as_ref(), &mut state) {
            ("key", None) => state = Some(keyframe(&view.objects, wanted)),
            (_, None) => return false,
            (_, Some(_)) if !wanted(kind) => {}
            ("put", Some(s)) => {
                if let Some(obj) = parsed(view.obj) {
                    s.insert(Key::of(kind, &obj), obj);
                }
            }
            ("patch", Some(s)) => {
                if let Some(p) = parsed(view.patch) {
                    let target = s.entry(view.key()).or_insert(Value::Null);
                    patch::apply(target, &p);
                }
            }
            ("del", Some(s)) => {
                s.remove(&view.key());
            }
            _ => {}
        }
        true
    });
    match read {
        Ok(End::Clean | End::Torn { .. }) => Ok(state),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl View<'_> {
    fn key(&self) -> Key {
        let text = |t: &Option<Cow<'_, str>>| t.as_deref().unwrap_or("").to_string();
        Key {
            kind: text(&self.kind),
            ns: text(&self.ns),
            name: text(&self.name),
        }
    }
}
