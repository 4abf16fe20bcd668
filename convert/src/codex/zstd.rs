//! Reading `.jsonl.zst` rollouts with `ruzstd`, a maintained pure-Rust decoder (no C library to
//! build, and the decoder is all Codex's compressed rollouts need).
//!
//! A zstd file may hold several frames back to back (and skippable frames); `ruzstd`'s own
//! streaming reader stops after the first, so this one starts a new frame until the input ends.

use std::io::{self, BufRead, Read};

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

/// Decompresses every frame of a zstd stream.
pub struct Frames<R: BufRead> {
    source: R,
    decoder: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> std::fmt::Debug for Frames<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames")
            .field("in_frame", &self.in_frame)
            .finish_non_exhaustive()
    }
}

impl<R: BufRead> Frames<R> {
    pub fn new(source: R) -> Self {
        Frames {
            source,
            decoder: FrameDecoder::new(),
            in_frame: false,
        }
    }
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}"))
}

impl<R: BufRead> Read for Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                while self.decoder.can_collect() == 0 && !self.decoder.is_finished() {
                    self.decoder
                        .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(invalid)?;
                }
                let n = self.decoder.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.in_frame = false;
                continue;
            }
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            match self.decoder.reset(&mut self.source) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped = io::copy(
                        &mut (&mut self.source).take(u64::from(length)),
                        &mut io::sink(),
                    )?;
                    if skipped < u64::from(length) {
                        return Err(invalid("a skippable frame is cut off"));
                    }
                }
                Err(e) => return Err(invalid(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenated_frames_decode_whole() {
        let one = ruzstd::encoding::compress_to_vec(
            &b"{\"a\":1}\n"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let two = ruzstd::encoding::compress_to_vec(
            &b"{\"b\":2}\n"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        // A skippable frame (magic 0x184D2A50, 4-byte length, payload) between them.
        let mut all = one.clone();
        all.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 9, 9, 9]);
        all.extend_from_slice(&two);
        let mut out = String::new();
        Frames::new(&all[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, "{\"a\":1}\n{\"b\":2}\n");
        let mut bad = one;
        bad.truncate(bad.len() - 3);
        assert!(
            Frames::new(&bad[..])
                .read_to_string(&mut String::new())
                .is_err()
        );
    }
}
