//! A record on disk: its payload's length (u32, little-endian), the payload's CRC-32 (u32,
//! little-endian), then the payload. A frame that is cut short or whose checksum does not match
//! ends what is read of its segment: a torn tail (a recorder killed mid-write, a full disk) is
//! detected, never taken for data, and cut when a recorder next opens the store.
//!
//! A payload is one record's compact JSON (it starts with `{`), or that JSON zlib-compressed (a
//! keyframe, tens of MB for a large fleet: its stream starts with zlib's header, never `{`).

use std::borrow::Cow;
use std::io::{self, Read};

/// The bytes that start every segment file.
pub(crate) const MAGIC: &[u8; 8] = b"NZREC01\n";
/// Length and checksum.
pub(crate) const HEADER: usize = 8;
/// The largest payload a frame may claim (a keyframe of a very large fleet fits): a length past
/// it is a torn or foreign header, not an allocation.
pub(crate) const MAX_PAYLOAD: usize = 1 << 30;

/// `payload` framed.
pub(crate) fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&header(payload.len(), crc32fast::hash(payload)));
    out.extend_from_slice(payload);
    out
}

/// A payload's record as JSON: itself, or inflated when it was compressed (at most
/// [`MAX_PAYLOAD`] bytes: a longer stream is not a record this tool wrote).
pub(crate) fn plain(payload: &[u8]) -> io::Result<Cow<'_, [u8]>> {
    if payload.first() == Some(&b'{') {
        return Ok(Cow::Borrowed(payload));
    }
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(payload)
        .take(MAX_PAYLOAD as u64 + 1)
        .read_to_end(&mut out)?;
    if out.len() > MAX_PAYLOAD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a compressed record past 1 GiB",
        ));
    }
    Ok(Cow::Owned(out))
}

/// The header of a payload of `len` bytes whose CRC-32 is `crc`.
pub(crate) fn header(len: usize, crc: u32) -> [u8; HEADER] {
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    let mut out = [0u8; HEADER];
    out[..4].copy_from_slice(&len.to_le_bytes());
    out[4..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// How reading a segment's frames ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// At the end of the file, on a frame boundary.
    Clean,
    /// At `valid` bytes a frame was torn or corrupt: what follows is not read.
    Torn { valid: u64 },
}

/// Read frames from `r` (positioned after the magic, at byte `start`), each payload handed to
/// `each`; `each` returning `false` stops early (a clean end). Torn or corrupt bytes end it.
pub(crate) fn read_all(mut r: impl Read, start: u64, mut each: impl FnMut(&[u8]) -> bool) -> io::Result<End> {
    let mut at = start;
    let mut header = [0u8; HEADER];
    let mut payload = Vec::new();
    loop {
        match fill(&mut r, &mut header)? {
            0 => return Ok(End::Clean),
            n if n < HEADER => return Ok(End::Torn { valid: at }),
            _ => {}
        }
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if len > MAX_PAYLOAD {
            return Ok(End::Torn { valid: at });
        }
        payload.resize(len, 0);
        if fill(&mut r, &mut payload)? < len || crc32fast::hash(&payload) != crc {
            return Ok(End::Torn { valid: at });
        }
        at += (HEADER + len) as u64;
        if !each(&payload) {
            return Ok(End::Clean);
        }
    }
}

/// Read until `buf` is full or the input ends; how many bytes came.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(bytes: &[u8]) -> (Vec<Vec<u8>>, End) {
        let mut out = Vec::new();
        let end = read_all(bytes, 0, |p| {
            out.push(p.to_vec());
            true
        })
        .unwrap();
        (out, end)
    }

    #[test]
    fn frames_read_back_and_a_torn_or_corrupt_tail_ends_them() {
        let mut bytes = encode(b"one");
        bytes.extend(encode(b""));
        bytes.extend(encode(b"three"));
        let whole = bytes.len() as u64;
        assert_eq!(
            frames(&bytes),
            (vec![b"one".to_vec(), vec![], b"three".to_vec()], End::Clean)
        );
        // every cut inside the last frame is a torn tail after the second
        let second_end = (encode(b"one").len() + encode(b"").len()) as u64;
        for cut in second_end + 1..whole {
            let (got, end) = frames(&bytes[..cut as usize]);
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(end, End::Torn { valid: second_end });
        }
        // a flipped byte in the payload fails its checksum
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x20;
        assert_eq!(frames(&flipped).1, End::Torn { valid: second_end });
        // garbage after a clean end
        let mut garbage = bytes.clone();
        garbage.extend_from_slice(&[0xff; 13]);
        assert_eq!(frames(&garbage).1, End::Torn { valid: whole });
    }
}
