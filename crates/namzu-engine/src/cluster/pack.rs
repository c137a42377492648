//! Listed objects held compactly while a pass waits to derive them: a JSON value written as
//! bytes (a tag per value, lengths as varints), object keys and short repeated strings written
//! once per [`Pack`] and referred to by number after. A Sandbox or pod takes about a third of
//! its compact JSON text this way, and comes back as the same `Value` (same keys in the same
//! order, same numbers) without a JSON parse.

use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Strings kept in the table: object keys always; values only while it is small, only short
/// ones, and only once they were seen again (the same node, image, reason, status or timestamp
/// across thousands of objects; never a uid).
const MAX_TABLE: usize = 16384;
const MAX_SHARED_LEN: usize = 64;
/// Slots of the filter of values seen once: a hash per slot, the newest wins.
const SEEN_SLOTS: usize = 8192;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const POS_INT: u8 = 3;
const NEG_INT: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const SHARED: u8 = 7;
const ARRAY: u8 = 8;
const OBJECT: u8 = 9;

/// The shared strings of a set of packed objects: each object's bytes are read with the pack
/// that wrote them.
#[derive(Debug, Default)]
pub struct Pack {
    strings: Vec<Arc<str>>,
    numbers: HashMap<Arc<str>, u32>,
    /// Hashes of values seen once lately (empty until the first value).
    seen: Vec<u64>,
}

/// One object's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

impl Packed {}

impl Pack {
    pub fn pack(&mut self, v: &Value) -> Packed {
        let mut out = Vec::with_capacity(256);
        self.write(v, &mut out);
        Packed(out.into_boxed_slice())
    }

    /// The value `pack` was given. `None` only for bytes another pack wrote (a bug).
    pub fn unpack(&self, p: &Packed) -> Option<Value> {
        let mut at = 0;
        let v = self.read(&p.0, &mut at)?;
        (at == p.0.len()).then_some(v)
    }

    /// The table's number for `s`, where it is (or may now be) in the table.
    fn shared(&mut self, s: &str, key: bool) -> Option<u32> {
        if let Some(n) = self.numbers.get(s) {
            return Some(*n);
        }
        if !key {
            if self.strings.len() >= MAX_TABLE || s.len() > MAX_SHARED_LEN {
                return None;
            }
            // a value joins the table the second time it comes (a hash collision only adds one
            // that need not be there)
            if self.seen.is_empty() {
                self.seen = vec![0; SEEN_SLOTS];
            }
            let h = hash(s);
            let slot = &mut self.seen[(h % SEEN_SLOTS as u64) as usize];
            if *slot != h {
                *slot = h;
                return None;
            }
        }
        let n = u32::try_from(self.strings.len()).ok()?;
        let s: Arc<str> = s.into();
        self.strings.push(s.clone());
        self.numbers.insert(s, n);
        Some(n)
    }

    fn write(&mut self, v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Null => out.push(NULL),
            Value::Bool(false) => out.push(FALSE),
            Value::Bool(true) => out.push(TRUE),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    out.push(POS_INT);
                    varint(u, out);
                } else if let Some(i) = n.as_i64() {
                    out.push(NEG_INT);
                    out.extend_from_slice(&i.to_le_bytes());
                } else {
                    out.push(FLOAT);
                    out.extend_from_slice(&n.as_f64().unwrap_or_default().to_bits().to_le_bytes());
                }
            }
            Value::String(s) => self.write_str(s, false, out),
            Value::Array(items) => {
                out.push(ARRAY);
                varint(items.len() as u64, out);
                for item in items {
                    self.write(item, out);
                }
            }
            Value::Object(fields) => {
                out.push(OBJECT);
                varint(fields.len() as u64, out);
                for (k, item) in fields {
                    self.write_str(k, true, out);
                    self.write(item, out);
                }
            }
        }
    }

    fn write_str(&mut self, s: &str, key: bool, out: &mut Vec<u8>) {
        match self.shared(s, key) {
            Some(n) => {
                out.push(SHARED);
                varint(u64::from(n), out);
            }
            None => {
                out.push(STRING);
                varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
        }
    }

    fn read_str(&self, b: &[u8], at: &mut usize) -> Option<String> {
        let tag = *b.get(*at)?;
        *at += 1;
        match tag {
            SHARED => {
                let n = usize::try_from(read_varint(b, at)?).ok()?;
                Some(self.strings.get(n)?.to_string())
            }
            STRING => {
                let len = usize::try_from(read_varint(b, at)?).ok()?;
                let bytes = b.get(*at..at.checked_add(len)?)?;
                *at += len;
                Some(std::str::from_utf8(bytes).ok()?.to_string())
            }
            _ => None,
        }
    }

    fn read(&self, b: &[u8], at: &mut usize) -> Option<Value> {
        let tag = *b.get(*at)?;
        Some(match tag {
            NULL | FALSE | TRUE => {
                *at += 1;
                match tag {
                    NULL => Value::Null,
                    FALSE => Value::Bool(false),
                    _ => Value::Bool(true),
                }
            }
            POS_INT => {
                *at += 1;
                Value::Number(read_varint(b, at)?.into())
            }
            NEG_INT | FLOAT => {
                *at += 1;
                let bytes: [u8; 8] = b.get(*at..*at + 8)?.try_into().ok()?;
                *at += 8;
                if tag == NEG_INT {
                    Value::Number(i64::from_le_bytes(bytes).into())
                } else {
                    Value::Number(Number::from_f64(f64::from_bits(u64::from_le_bytes(bytes)))?)
                }
            }
            STRING | SHARED => Value::String(self.read_str(b, at)?),
            ARRAY => {
                *at += 1;
                let len = usize::try_from(read_varint(b, at)?).ok()?;
                let mut items = Vec::with_capacity(len.min(b.len()));
                for _ in 0..len {
                    items.push(self.read(b, at)?);
                }
                Value::Array(items)
            }
            OBJECT => {
                *at += 1;
                let len = usize::try_from(read_varint(b, at)?).ok()?;
                let mut fields = Map::with_capacity(len.min(b.len()));
                for _ in 0..len {
                    let k = self.read_str(b, at)?;
                    let item = self.read(b, at)?;
                    fields.insert(k, item);
                }
                Value::Object(fields)
            }
            _ => return None,
        })
    }
}

fn hash(s: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    // nonzero: an empty slot never matches
    BuildHasherDefault::<DefaultHasher>::default().hash_one(s) | 1
}

fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut n: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn round_trip(v: &Value) {
        let mut pack = Pack::default();
        let p = pack.pack(v);
        let back = pack.unpack(&p).expect("unpacks");
        assert_eq!(&back, v);
        // the same text, keys in the same order, numbers written alike
        assert_eq!(back.to_string(), v.to_string());
    }

    #[test]
    fn values_come_back_as_they_went() {
        round_trip(&json!({
            "metadata": {"name": "namzu-ws-a", "namespace": "n", "labels": {"b": "1", "a": "2"}},
            "spec": {"n": 1.5, "neg": -7, "min": i64::MIN, "max": u64::MAX, "zero": 0, "negzero": -0.0,
                     "tiny": 5e-324, "big": 1.7976931348623157e308, "s": "\u{1b}x\"\\", "z": null,
                     "t": true, "f": false, "empty": {}, "none": [], "long": "x".repeat(300)},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "True"}]},
        }));
    }

    #[test]
    fn many_objects_share_one_pack_and_stay_apart() {
        let mut pack = Pack::default();
        let objects: Vec<Value> = (0..6000)
            .map(|i| json!({"name": format!("w{i}"), "node": "sim-node-1", "i": i, format!("k{}", i % 7): [i, "True"]}))
            .collect();
        let packed: Vec<Packed> = objects.iter().map(|o| pack.pack(o)).collect();
        for (o, p) in objects.iter().zip(&packed) {
            assert_eq!(pack.unpack(p).as_ref(), Some(o));
        }
        assert!(pack.strings.len() <= MAX_TABLE + 7 + 4, "the table stays bounded");
        assert!(pack.numbers.contains_key("sim-node-1"), "a repeated value is shared");
        assert!(!pack.numbers.contains_key("w17"), "a value seen once is not");
        assert!(packed[5999].0.len() < objects[5999].to_string().len());
    }

    #[test]
    fn bytes_of_another_pack_are_refused_not_misread() {
        let mut one = Pack::default();
        let p = one.pack(&json!({"a": 1}));
        assert_eq!(Pack::default().unpack(&p), None);
        assert_eq!(one.unpack(&Packed(Box::new([OBJECT, 5]))), None);
        assert_eq!(one.unpack(&Packed(Box::new([]))), None);
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(|n| json!(n)),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            ".{0,80}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((".{0,12}", inner), 0..8).prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_value_round_trips(v in arbitrary_json()) {
            round_trip(&v);
        }
    }
}
