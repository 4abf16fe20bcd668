//! Windowed layers (layout 5, spec/aspstate.md §4.2): a body compressed in frames of
//! [`FRAME`] bytes, each against only the stretch of its dictionary body around the same
//! offsets, [`MARGIN`] bytes either side.
//!
//! An update stream repeats its transcript's text in about the same order and at about the
//! same offsets, so that stretch holds what the frame repeats. Compressed as one frame against
//! the whole transcript (§4), a 34 MB session needs its transcript, its stream and a 64 MiB
//! window at once, to write and to read: memory then follows the largest session. In windows
//! a frame needs at most `FRAME + 2 * MARGIN + FRAME` bytes whatever the session, and the
//! layers are no larger (§13.3: 2 % smaller on the 1 GiB bench store's large sessions).
//!
//! Where each frame's window lies follows from the frame's place and the dictionary's size
//! alone, so the layer holds nothing but zstd frames and a reader needs no table of windows.

use std::io::{self, BufRead, BufReader, Read};
use std::ops::Range;
use std::sync::Arc;

use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer};

use crate::bundle::layers::{DICT_MAGIC, compress_frame, window_log};
use crate::digest::IntegrityError;

/// Bytes of the body in each frame; the last frame holds the rest (1 to `FRAME` bytes).
pub const FRAME: usize = 1 << 22;
/// Bytes of the dictionary body before and after a frame's own offsets that it may repeat.
pub const MARGIN: usize = 1 << 21;
/// The reference writer stores a derived body in windows when its dictionary body is larger
/// than this: below it, one frame against the whole of it needs no more memory than a window.
pub const WINDOWED_BASE: u64 = 8 << 20;

/// The part of a dictionary body of `base` bytes that the frame of body bytes
/// `start..start + len` is compressed against (empty once the body runs past it).
pub fn window(base: usize, start: usize, len: usize) -> Range<usize> {
    let to = start.saturating_add(len).saturating_add(MARGIN).min(base);
    let from = start.saturating_sub(MARGIN).min(to);
    from..to
}

/// Whether no window of `base` starts with zstd's dictionary magic, whatever the length of
/// the body compressed in its windows: a window starts where a frame starts, less the margin.
/// (A writer that compresses a body in windows as it is written checks this first, so it
/// never has to write the body some other way; [`compress`] checks the windows it uses.)
pub fn clear(base: &[u8]) -> bool {
    starts(base.len()).all(|from| !base[from..].starts_with(&DICT_MAGIC))
}

/// Where in a base of `len` bytes a window of a frame can start (those inside it).
pub fn starts(len: usize) -> impl Iterator<Item = usize> {
    (0..len.saturating_add(MARGIN))
        .step_by(FRAME)
        .map(|start| start.saturating_sub(MARGIN))
        .filter(move |&from| from < len)
}

/// The frames of a body of `size` bytes: where each starts and how long it is.
fn frames(size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..size)
        .step_by(FRAME)
        .map(move |start| (start, FRAME.min(size - start)))
}

/// Compresses `src` in windows of `base`, at `level`, with the parameters of any layer against
/// a dictionary. `None` when a window starts with zstd's dictionary magic (a reader would take
/// it for a formatted dictionary): the body is then compressed some other way.
pub fn compress(src: &[u8], base: &[u8], level: i32) -> io::Result<Option<Vec<u8>>> {
    let windows: Vec<Range<usize>> = frames(src.len())
        .map(|(start, len)| window(base.len(), start, len))
        .collect();
    if windows
        .iter()
        .any(|w| base[w.clone()].starts_with(&DICT_MAGIC))
    {
        return Ok(None);
    }
    let mut out = Vec::new();
    for ((start, len), w) in frames(src.len()).zip(windows) {
        out.extend_from_slice(&compress_frame(&src[start..start + len], &base[w], level)?);
    }
    Ok(Some(out))
}

/// Decodes a whole windowed layer (`src`) against `base` into its body of `size` bytes.
pub fn decompress(src: &[u8], base: &Arc<Vec<u8>>, size: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    Windowed::new(
        Box::new(io::Cursor::new(src.to_vec())),
        Arc::clone(base),
        size,
    )?
    .read_to_end(&mut out)?;
    Ok(out)
}

/// A layer's dictionary body as a reader has it: borrowed for a layer decoded at once, or
/// shared, so a windowed layer read as a stream keeps the bytes it reads its windows from
/// without a copy of a transcript of tens of megabytes.
#[derive(Debug, Clone)]
pub enum Base<'a> {
    Borrowed(&'a [u8]),
    Shared(Arc<Vec<u8>>),
}

impl Base<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Base::Borrowed(b) => b,
            Base::Shared(b) => b,
        }
    }

    /// The bytes, shared (a borrowed base is copied).
    pub fn into_shared(self) -> Arc<Vec<u8>> {
        match self {
            Base::Borrowed(b) => Arc::new(b.to_vec()),
            Base::Shared(b) => b,
        }
    }
}

fn bad(message: String) -> io::Error {
    IntegrityError(message).into_io()
}

fn zstd_bad(code: usize) -> io::Error {
    bad(format!(
        "the windowed layer does not decode (zstd: {})",
        zstd::zstd_safe::get_error_name(code)
    ))
}

/// A windowed layer's body as it decodes, frame by frame: each frame must decode to exactly
/// its share of `size`, and nothing may follow the last (the rest of the layer is read to
/// its end, so a zip entry's CRC-32 is checked too).
pub(crate) struct Windowed {
    raw: BufReader<Box<dyn Read + Send>>,
    base: Arc<Vec<u8>>,
    dctx: DCtx<'static>,
    size: usize,
    /// Where the frame being decoded starts in the body, and its length.
    frame: Option<(usize, usize)>,
    /// Bytes of the body given so far.
    at: usize,
    done: bool,
}

impl Windowed {
    /// `base` is the dictionary body's bytes; `size` the body's.
    pub(crate) fn new(
        raw: Box<dyn Read + Send>,
        base: Arc<Vec<u8>>,
        size: u64,
    ) -> io::Result<Windowed> {
        let size = usize::try_from(size)
            .map_err(|_| bad(format!("a windowed body of {size} bytes is too large")))?;
        if size == 0 {
            // Writers store small bodies as they are (§4).
            return Err(bad(
                "a windowed layer holds at least one frame, and this body is empty".to_owned(),
            ));
        }
        Ok(Windowed {
            raw: BufReader::with_capacity(128 * 1024, raw),
            base,
            dctx: DCtx::try_create().ok_or_else(|| io::Error::other("zstd: out of memory"))?,
            size,
            frame: None,
            at: 0,
            done: false,
        })
    }

    /// Readies the context for the frame that starts at `self.at`.
    fn begin_frame(&mut self) -> io::Result<(usize, usize)> {
        let len = FRAME.min(self.size - self.at);
        let w = window(self.base.len(), self.at, len);
        self.dctx
            .reset(zstd::zstd_safe::ResetDirective::SessionOnly)
            .map_err(zstd_bad)?;
        let limit = window_log(w.len(), len).max(10);
        self.dctx
            .set_parameter(DParameter::WindowLogMax(limit))
            .map_err(zstd_bad)?;
        self.dctx.load_dictionary(&self.base[w]).map_err(zstd_bad)?;
        Ok((self.at, len))
    }

    /// After the last frame: the layer must end.
    fn end(&mut self) -> io::Result<()> {
        self.done = true;
        let rest = io::copy(&mut self.raw, &mut io::sink())?;
        if rest > 0 {
            return Err(bad(format!(
                "{rest} bytes follow the windowed layer's last frame"
            )));
        }
        Ok(())
    }
}

impl Read for Windowed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let (start, len) = match self.frame {
            Some(f) => f,
            None if self.at == self.size => {
                self.end()?;
                return Ok(0);
            }
            None => {
                let f = self.begin_frame()?;
                self.frame = Some(f);
                f
            }
        };
        let left = start + len - self.at;
        // With the frame's share given, one more byte of room shows whether the frame ends
        // there or holds more than its share.
        let mut spare = [0u8; 1];
        let room: &mut [u8] = if left == 0 {
            &mut spare
        } else {
            let n = buf.len().min(left);
            &mut buf[..n]
        };
        let mut out = OutBuffer::around(room);
        loop {
            let input = self.raw.fill_buf()?;
            let eof = input.is_empty();
            let mut inb = InBuffer::around(input);
            let code = self
                .dctx
                .decompress_stream(&mut out, &mut inb)
                .map_err(zstd_bad)?;
            let used = inb.pos();
            self.raw.consume(used);
            let produced = out.pos();
            if left == 0 && produced > 0 {
                return Err(bad(format!(
                    "the windowed layer's frame at byte {start} of the body decodes to more than \
                     {len} bytes"
                )));
            }
            if code == 0 {
                // The frame ended.
                if produced < left {
                    return Err(bad(format!(
                        "the windowed layer's frame at byte {start} of the body decodes to {} \
                         bytes, not {len}",
                        self.at + produced - start
                    )));
                }
                self.frame = None;
                self.at += produced;
                if produced > 0 {
                    return Ok(produced);
                }
                return self.read(buf);
            }
            if produced > 0 {
                self.at += produced;
                return Ok(produced);
            }
            if eof && used == 0 {
                return Err(bad(format!(
                    "the windowed layer ends inside its frame at byte {start} of the body"
                )));
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A transcript-like base of at least `n` bytes (lines of 2,000 random letters, as long
    /// as a tool's output) and a stream that repeats it in order, with its own text between.
    pub(crate) fn pair(n: usize) -> (Vec<u8>, Vec<u8>) {
        let mut base = Vec::new();
        let mut stream = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut i = 0;
        while base.len() < n {
            let mut text = String::new();
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                text.push(char::from(b'a' + (x % 26) as u8));
            }
            base.extend_from_slice(format!("{{\"n\":{i},\"text\":\"{text}\"}}\n").as_bytes());
            // Session `s1`'s update lines.
            stream.extend_from_slice(
                format!(
                    "{{\"sessionId\":\"s1\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\
                     \"content\":{{\"type\":\"text\",\"text\":\"{i} {text}\"}}}}}}\n"
                )
                .as_bytes(),
            );
            i += 1;
        }
        (base, stream)
    }

    #[test]
    fn windows_follow_the_frames_offsets_and_stay_inside_the_base() {
        assert_eq!(window(100 << 20, 0, FRAME), 0..FRAME + MARGIN);
        assert_eq!(
            window(100 << 20, 3 * FRAME, FRAME),
            3 * FRAME - MARGIN..4 * FRAME + MARGIN
        );
        // Near and past the base's end.
        assert_eq!(window(FRAME, FRAME, 10), FRAME - MARGIN..FRAME);
        assert_eq!(window(10, 4 * FRAME, 10), 10..10);
        let sizes: Vec<_> = frames(2 * FRAME + 5).collect();
        assert_eq!(sizes, [(0, FRAME), (FRAME, FRAME), (2 * FRAME, 5)]);
    }

    #[test]
    fn a_windowed_layer_decodes_to_its_body() {
        let (base, stream) = pair(3 * FRAME);
        let layer = compress(&stream, &base, 3).unwrap().unwrap();
        // As small as one frame against the whole base, and far smaller than the stream alone.
        let whole = crate::bundle::layers::compress(&stream, Some(&base), 3).unwrap();
        let alone = crate::bundle::layers::compress(&stream, None, 3).unwrap();
        assert!(
            layer.len() <= whole.len() + whole.len() / 50,
            "{} against {}",
            layer.len(),
            whole.len()
        );
        assert!(
            layer.len() < alone.len() / 20,
            "{} against {}",
            layer.len(),
            alone.len()
        );
        assert_eq!(
            decompress(&layer, &Arc::new(base.clone()), stream.len() as u64).unwrap(),
            stream
        );
        // Read in small pieces too.
        let mut r = Windowed::new(
            Box::new(io::Cursor::new(layer.clone())),
            Arc::new(base.clone()),
            stream.len() as u64,
        )
        .unwrap();
        let mut out = Vec::new();
        let mut piece = [0u8; 777];
        loop {
            let n = r.read(&mut piece).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&piece[..n]);
        }
        assert_eq!(out, stream);
    }

    #[test]
    fn a_damaged_or_misdescribed_windowed_layer_is_an_integrity_failure() {
        let (base, stream) = pair(2 * FRAME);
        let layer = compress(&stream, &base, 3).unwrap().unwrap();
        let size = stream.len() as u64;
        let base = Arc::new(base);
        let fails = |layer: &[u8], base: &Arc<Vec<u8>>, size: u64| {
            let e = decompress(layer, base, size).unwrap_err();
            assert!(crate::digest::is_integrity_error(&e), "{e}");
            e.to_string()
        };
        // Cut short, with bytes after it, a body said to be shorter or longer.
        assert!(fails(&layer[..layer.len() - 9], &base, size).contains("ends inside"));
        let mut more = layer.clone();
        more.extend_from_slice(b"tail");
        assert!(fails(&more, &base, size).contains("follow"));
        assert!(fails(&layer, &base, size - 1).contains("decodes to"));
        assert!(fails(&layer, &base, size + 1).contains("decodes to"));
        // Against another dictionary body the frames do not give the stream back.
        let mut other = (*base).clone();
        other.rotate_left(1000);
        let e = decompress(&layer, &Arc::new(other), size);
        assert!(e.map_or(true, |b| b != stream));
        // An empty layer for an empty body: a windowed layer holds at least one frame.
        assert!(fails(&[], &base, 0).contains("at least one frame"));
    }

    #[test]
    fn a_window_starting_with_zstds_dictionary_magic_is_not_written() {
        let (mut base, stream) = pair(2 * FRAME);
        // The second frame's window starts at FRAME - MARGIN.
        base[FRAME - MARGIN..FRAME - MARGIN + 4].copy_from_slice(&DICT_MAGIC);
        assert!(compress(&stream, &base, 3).unwrap().is_none());
    }
}
