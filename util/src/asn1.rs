//! The little DER (ITU-T X.690 §10) the key and certificate files need:
//! reading one element at a time with every length checked against what is
//! left, and writing a tag–length–value.

/// `INTEGER`.
pub const INTEGER: u8 = 0x02;
/// `BIT STRING`.
pub const BIT_STRING: u8 = 0x03;
/// `OCTET STRING`.
pub const OCTET_STRING: u8 = 0x04;
/// `OBJECT IDENTIFIER`.
pub const OID: u8 = 0x06;
/// `SEQUENCE` (constructed).
pub const SEQUENCE: u8 = 0x30;
/// `[0]` constructed, context-specific.
pub const CONTEXT_0: u8 = 0xa0;

/// One element: its contents and the whole encoding.
#[derive(Clone, Copy, Debug)]
pub struct Element<'a> {
    /// The contents octets.
    pub body: &'a [u8],
    /// Identifier, length and contents.
    pub whole: &'a [u8],
}

/// Reads the elements of a byte string one after another.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The tag of the next element, if any.
    pub fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// The next element, whatever its tag.
    pub fn any(&mut self) -> Option<Element<'a>> {
        let (&tag, after) = self.rest.split_first()?;
        if tag & 0x1f == 0x1f {
            return None; // multi-byte tags appear in none of these formats
        }
        let (&first, mut after) = after.split_first()?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || after.len() < n {
                return None;
            }
            let mut len = 0usize;
            for &b in &after[..n] {
                len = (len << 8) | usize::from(b);
            }
            after = &after[n..];
            len
        };
        if len > after.len() {
            return None;
        }
        let header = self.rest.len() - after.len();
        let whole = &self.rest[..header + len];
        let body = &after[..len];
        self.rest = &after[len..];
        Some(Element { body, whole })
    }

    /// The next element, which must have tag `tag`.
    pub fn expect(&mut self, tag: u8) -> Option<Element<'a>> {
        if self.peek_tag()? != tag {
            return None;
        }
        self.any()
    }

    /// The next element if it has tag `tag`; nothing is consumed otherwise.
    pub fn optional(&mut self, tag: u8) -> Option<Element<'a>> {
        if self.peek_tag() == Some(tag) {
            self.any()
        } else {
            None
        }
    }
}

/// The only element of `bytes`, which must have tag `tag` and fill them.
pub fn single(bytes: &[u8], tag: u8) -> Option<Element<'_>> {
    let mut r = Reader::new(bytes);
    let e = r.expect(tag)?;
    r.is_empty().then_some(e)
}

/// A tag–length–value with `body` as contents.
pub fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes_and_refuses_overlong_lengths() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let body = vec![7u8; len];
            let enc = tlv(OCTET_STRING, &body);
            let e = single(&enc, OCTET_STRING).unwrap();
            assert_eq!(e.body, &body[..]);
            assert_eq!(e.whole, &enc[..]);
        }
        // Length past the end, a zero-length long form, a multi-byte tag.
        assert!(Reader::new(&[0x04, 0x05, 1, 2]).any().is_none());
        assert!(Reader::new(&[0x04, 0x80]).any().is_none());
        assert!(Reader::new(&[0x1f, 0x01, 0x00]).any().is_none());
        assert!(
            Reader::new(&[0x04, 0x85, 0xff, 0xff, 0xff, 0xff, 0xff])
                .any()
                .is_none()
        );
        // Trailing bytes after the single element.
        assert!(single(&[0x04, 0x00, 0x00], OCTET_STRING).is_none());
        assert!(single(&[0x02, 0x00], OCTET_STRING).is_none());
    }
}
