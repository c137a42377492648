use super::*;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;

fn t(minutes: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-01T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
        + Duration::minutes(minutes)
}

fn sandbox(name: &str, replicas: u64) -> Value {
    json!({"kind": "Sandbox", "metadata": {"name": name, "namespace": "agents", "resourceVersion": format!("{replicas}")}, "spec": {"replicas": replicas}})
}

fn names(state: &BTreeMap<Key, Value>) -> Vec<String> {
    state
        .iter()
        .map(|(k, v)| format!("{}={}", k.name, v["spec"]["replicas"]))
        .collect()
}

fn begin(store: &Store, at: DateTime<Utc>, limits: Limits) -> Writer {
    let lock = store.lock(false).unwrap();
    Writer::begin(store, lock, limits, "s", "-A", at, BTreeMap::new()).unwrap()
}

#[test]
fn the_state_at_any_recorded_instant_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "ctx/one");
    let mut w = begin(&store, t(0), Limits::default());
    w.put(t(1), "Sandbox", sandbox("a", 1)).unwrap();
    w.put(t(2), "Sandbox", sandbox("b", 1)).unwrap();
    w.put(t(3), "Sandbox", sandbox("a", 0)).unwrap();
    // the same object again (a re-list) writes nothing
    let before = store.segments().unwrap()[0].bytes;
    w.put(t(3), "Sandbox", sandbox("a", 0)).unwrap();
    assert_eq!(store.segments().unwrap()[0].bytes, before);
    w.delete(t(4), &Key::of("Sandbox", &sandbox("b", 1))).unwrap();
    w.stop(t(5)).unwrap();
    let at = |m| names(&store.replay(t(m)).unwrap().state);
    assert_eq!(at(0), Vec::<String>::new());
    assert_eq!(at(1), ["a=1"]);
    assert_eq!(at(2), ["a=1", "b=1"]);
    assert_eq!(at(3), ["a=0", "b=1"]);
    assert_eq!(at(5), ["a=0"]);
    // the scrubber's steps: each change once, not the head, the stop or the re-list
    assert_eq!(store.change_times().unwrap(), [t(1), t(2), t(3), t(4)]);
    let spans = store.spans().unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(
        (spans[0].from, spans[0].to, spans[0].cut_short),
        (t(0), Some(t(5)), false)
    );
    assert!(matches!(store.replay(t(6)), Err(ReplayError::Outside { .. })));
    assert!(matches!(store.replay(t(-1)), Err(ReplayError::Outside { .. })));
    assert!(matches!(
        Store::open(dir.path(), "other").replay(t(1)),
        Err(ReplayError::Empty)
    ));
}

#[test]
fn a_torn_tail_is_never_fatal_and_is_cut_when_a_recorder_opens_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "c");
    let mut w = begin(&store, t(0), Limits::default());
    w.put(t(1), "Sandbox", sandbox("a", 1)).unwrap();
    w.put(t(2), "Sandbox", sandbox("a", 0)).unwrap();
    drop(w);
    // a recorder killed mid-write: half a frame, then garbage
    let path = store.segments().unwrap()[0].path.clone();
    let whole = std::fs::metadata(&path).unwrap().len();
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&[40, 0, 0, 0, 1, 2, 3, 4, b'{', b'"']).unwrap();
    f.write_all(b"garbage garbage").unwrap();
    drop(f);
    let spans = store.spans().unwrap();
    assert_eq!((spans[0].to, spans[0].cut_short), (Some(t(2)), true));
    assert_eq!(names(&store.replay(t(2)).unwrap().state), ["a=0"]);
    // the next recorder cuts the tail, and starts its own session after the gap
    let w = begin(&store, t(10), Limits::default());
    assert_eq!(w.repaired, 25);
    // the old session's segment, its tail cut, is sealed: compressed, and read back the same
    let sealed = &store.segments().unwrap()[0];
    assert!(sealed.sealed && !path.exists(), "{sealed:?}");
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::ZlibDecoder::new(std::fs::File::open(&sealed.path).unwrap()),
        &mut inflated,
    )
    .unwrap();
    assert_eq!(inflated.len() as u64, whole);
    w.stop(t(11)).unwrap();
    let spans = store.spans().unwrap();
    assert_eq!(spans.len(), 2);
    let r = store.replay(t(10)).unwrap();
    assert_eq!(r.before.unwrap().to, Some(t(2)));
    assert!(matches!(store.replay(t(5)), Err(ReplayError::Outside { .. })));
}

#[test]
fn one_recorder_at_a_time_holds_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "c");
    let w = begin(&store, t(0), Limits::default());
    assert!(store.recording_now());
    assert!(matches!(store.lock(false), Err(LockError::Busy)));
    assert_eq!(store.spans().unwrap()[0].to, None);
    w.stop(t(1)).unwrap();
    assert!(!store.recording_now());
    assert!(store.lock(false).is_ok());
}

/// A list recorded at the instant it began can follow a later change of another watch in the
/// file: a replay between the two still has the list's objects.
#[test]
fn a_record_stamped_earlier_than_the_one_before_it_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "c");
    let mut w = begin(&store, t(0), Limits::default());
    w.put(t(5), "Pod", sandbox("later", 1)).unwrap();
    w.put(t(3), "Sandbox", sandbox("listed", 1)).unwrap();
    w.beat(t(6)).unwrap();
    assert_eq!(names(&store.replay(t(4)).unwrap().state), ["listed=1"]);
    assert_eq!(names(&store.replay(t(5)).unwrap().state), ["later=1", "listed=1"]);
}

/// A keyframe larger than a segment may be (the fleet outgrew the cap's eighth) still takes
/// changes: a segment per change, each with the whole keyframe, would fill the disk.
#[test]
fn a_keyframe_over_the_segment_size_does_not_start_a_segment_per_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "c");
    // segments of at most 1 MB; a keyframe of ~1.5 MB
    let limits = Limits {
        retention_days: 1,
        max_mb: 8,
    };
    // hex noise: a keyframe compresses to about half, still past the segment size on disk
    let mut noise = 0x9E37_79B9_7F4A_7C15u64;
    let mut pad = || {
        (0..320)
            .map(|_| {
                noise ^= noise << 13;
                noise ^= noise >> 7;
                noise ^= noise << 17;
                format!("{noise:016x}")
            })
            .collect::<String>()
    };
    let state: BTreeMap<Key, Packed> = (0..500u64)
        .map(|i| {
            let mut s = sandbox(&format!("k{i}"), i);
            s["spec"]["pad"] = json!(pad());
            (Key::of("Sandbox", &s), pack(&s).unwrap())
        })
        .collect();
    let lock = store.lock(false).unwrap();
    let mut w = Writer::begin(&store, lock, limits, "s", "-A", t(0), state).unwrap();
    assert!(
        store.segments().unwrap()[0].bytes > 1_000_000,
        "the keyframe alone is past a segment's size"
    );
    for i in 0..200u64 {
        w.put(t(1 + i as i64), "Sandbox", sandbox(&format!("w{}", i % 7), i))
            .unwrap();
    }
    assert_eq!(store.segments().unwrap().len(), 1, "200 small changes, one segment");
    assert_eq!(store.replay(t(200)).unwrap().state.len(), 507);
}

#[test]
fn segments_compact_with_a_keyframe_and_old_ones_are_dropped_by_age_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "c");
    let limits = Limits {
        retention_days: 1,
        max_mb: 8,
    };
    let mut w = begin(&store, t(0), limits);
    let pad = "x".repeat(2000);
    // ~2 KB per change: past 1 MB of changes a segment is compacted
    for i in 0..3000u64 {
        let mut s = sandbox(&format!("w{}", i % 50), i);
        s["spec"]["pad"] = json!(format!("{pad}{i}"));
        w.put(t(i as i64), "Sandbox", s).unwrap();
    }
    let segments = store.segments().unwrap();
    assert!(segments.len() >= 4, "{segments:?}");
    // every segment but the one written is sealed (compressed), and read back all the same
    let (written, done) = segments.split_last().unwrap();
    assert!(done.iter().all(|s| s.sealed) && !written.sealed, "{segments:?}");
    assert!(
        done.iter().all(|s| s.bytes < 200_000),
        "the padding compresses: {segments:?}"
    );
    let oldest = &store.heads().unwrap()[0];
    assert!(oldest.segment.sealed);
    // a reader that listed a segment before it was sealed reads the sealed file
    let listed_before = oldest.segment.path.with_extension("seg");
    let mut records = 0;
    store::read_segment(&listed_before, |_| {
        records += 1;
        true
    })
    .unwrap();
    assert!(records >= 2, "the head and the keyframe at least: {records}");
    assert_eq!(store.replay(oldest.at).unwrap().state.len(), 50);
    let total: u64 = segments.iter().map(|s| s.bytes).sum();
    assert!(total <= 8_000_000 + 2_000_000, "{total}");
    // every instant still held replays to the objects' latest versions up to it
    let r = store.replay(t(2999)).unwrap();
    assert_eq!(r.state.len(), 50);
    assert_eq!(
        r.state[&Key::of("Sandbox", &sandbox("w49", 0))]["spec"]["replicas"],
        2999
    );
    // three days on, a day's retention keeps only the newest segments
    w.put(t(3 * 24 * 60), "Sandbox", sandbox("late", 1)).unwrap();
    w.beat(t(3 * 24 * 60)).unwrap();
    drop(w);
    let spans = store.spans().unwrap();
    // every segment that ended before the horizon (a day before the late change) is gone: each
    // one left but the one written ends (where the next begins) after it
    let horizon = t(2 * 24 * 60);
    let heads = store.heads().unwrap();
    assert!(heads.windows(2).all(|h| h[1].at > horizon), "{spans:?}");
    // and the one that spans the horizon is kept
    assert!(heads[0].at <= horizon, "{spans:?}");
    assert_eq!(spans[0].to, Some(t(3 * 24 * 60)));
    assert!(matches!(store.replay(t(1)), Err(ReplayError::Outside { .. })));
}

/// A keyframe is written compressed, a session's last segment is sealed when it stops, and a
/// replay of some kinds leaves the others out.
#[test]
fn keyframes_are_compressed_a_stopped_session_sealed_and_a_replay_reads_the_kinds_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), "c");
    let state: BTreeMap<Key, Packed> = (0..2000u64)
        .map(|i| {
            let s = sandbox(&format!("k{i}"), i);
            (Key::of("Sandbox", &s), pack(&s).unwrap())
        })
        .collect();
    let plain: usize = state.values().map(|v| v.len()).sum();
    let lock = store.lock(false).unwrap();
    let mut w = Writer::begin(&store, lock, Limits::default(), "s", "-A", t(0), state).unwrap();
    let on_disk = store.segments().unwrap()[0].bytes as usize;
    assert!(on_disk * 5 < plain, "keyframe {on_disk} bytes for {plain} of JSON");
    w.put(t(1), "Event", json!({"metadata": {"name": "e", "namespace": "agents"}}))
        .unwrap();
    w.put(t(2), "Sandbox", sandbox("k1", 7)).unwrap();
    let sandboxes_only = |at| store.replay_kinds(at, &|kind| kind == "Sandbox").unwrap().state;
    assert_eq!(sandboxes_only(t(2)).len(), 2000);
    assert_eq!(
        sandboxes_only(t(2))[&Key::of("Sandbox", &sandbox("k1", 7))]["spec"]["replicas"],
        7
    );
    assert_eq!(store.replay(t(2)).unwrap().state.len(), 2001);
    w.stop(t(3)).unwrap();
    let segments = store.segments().unwrap();
    assert!(segments.iter().all(|s| s.sealed), "{segments:?}");
    assert_eq!(store.replay(t(3)).unwrap().state.len(), 2001);
    assert_eq!(store.spans().unwrap()[0].to, Some(t(3)));
}
