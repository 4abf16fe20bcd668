//! JSON written the way the seed writes its examples (`{"a": 1, "b": [1, 2]}`), so tests can
//! compare the typed forms with the seed's text byte for byte.

use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};

struct SeedFormatter;

impl Formatter for SeedFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `value` as the seed would print it.
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    value
        .serialize(&mut Serializer::with_formatter(&mut out, SeedFormatter))
        .expect("serialises");
    String::from_utf8(out).expect("JSON is UTF-8")
}
