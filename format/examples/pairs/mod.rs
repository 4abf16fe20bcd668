//! What the measuring examples share: a bundle's update streams, each with the native
//! transcript it is compressed against.

use std::collections::HashMap;
use std::io::Read;

use asp_format::Descriptor;
use asp_format::blob::BlobSource;
use asp_format::bundle::Bundle;

pub type Error = Box<dyn std::error::Error>;

/// An update stream and the transcript it is compressed against.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Every update stream of `bundle` compressed against a native transcript whose size `keep`
/// takes, with that transcript: `(stream, transcript)`, in the state's order.
pub fn stream_pairs(bundle: &Bundle, keep: impl Fn(u64) -> bool) -> Result<Vec<Pair>, Error> {
    let state = &bundle.manifest().state;
    let natives: HashMap<_, Descriptor> = state
        .sessions
        .iter()
        .flatten()
        .flat_map(|s| s.native.iter().flat_map(|n| &n.files))
        .map(|f| (f.content.digest, f.content))
        .collect();
    let read = |d: &Descriptor| -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(d.size as usize);
        bundle.open(d)?.read_to_end(&mut out)?;
        Ok(out)
    };
    let mut pairs = Vec::new();
    for s in state.sessions.iter().flatten() {
        let Some((_, Some(base))) = bundle.layer_of(&s.updates.digest) else {
            continue;
        };
        let Some(transcript) = natives.get(&base) else {
            continue;
        };
        if keep(transcript.size) {
            pairs.push((read(&s.updates)?, read(transcript)?));
        }
    }
    Ok(pairs)
}
