//! A little-endian reader over the file's bytes that never reads past them: every read checks
//! the bytes left first, and every length is compared with them before anything is sliced or
//! allocated.

use super::error::GgufError;

/// A position in the file's bytes.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0 }
    }

    /// The byte offset of the next read.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// The bytes not yet read.
    pub fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `need` bytes; `what` names them in the error when the file ends first.
    pub fn take(&mut self, need: u64, what: impl FnOnce() -> String) -> Result<&'a [u8], GgufError> {
        let left = self.left();
        match usize::try_from(need) {
            Ok(n) if n <= left => {
                let s = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                Ok(s)
            }
            _ => Err(GgufError::Truncated { what: what(), offset: self.pos, need, left }),
        }
    }

    pub fn u8(&mut self, what: impl FnOnce() -> String) -> Result<u8, GgufError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u32(&mut self, what: impl FnOnce() -> String) -> Result<u32, GgufError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: impl FnOnce() -> String) -> Result<u64, GgufError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// A GGUF string: a u64 length, then that many bytes of UTF-8.
    pub fn string(&mut self, what: impl Fn() -> String) -> Result<&'a str, GgufError> {
        let len = self.u64(|| format!("the length of {}", what()))?;
        let offset = self.pos;
        let bytes = self.take(len, &what)?;
        std::str::from_utf8(bytes).map_err(|_| GgufError::Utf8 { what: what(), offset })
    }

    /// Refuses a count of items of at least `min_bytes` each that the bytes left cannot hold,
    /// so that nothing is allocated for it; `at` is the offset the count was read from.
    pub fn bound(&self, count: u64, min_bytes: u64, at: usize, what: impl FnOnce() -> String) -> Result<(), GgufError> {
        let left = self.left();
        let most = left as u64 / min_bytes;
        if count > most {
            return Err(GgufError::Count { what: what(), offset: at, count, left, most });
        }
        Ok(())
    }
}
