//! The float codecs, for arrays of floats (tensors): `planes` (byte planes, adaptive rANS and
//! invariant bit packing), the layers for dequantized and structured arrays built on it
//! (`scaled`, `recent`, `repeated`, `copies`), and `tensor_header` for a tensor file's header;
//! `bytes` for one-byte values (fp8, int8), `swapped` for big-endian arrays and `delta` against
//! a base file; with the primitives they share (adaptive tables, invariant bit packing,
//! rounding, the element types in `dtype`).

mod adaptive;
pub mod bytes;
mod carry;
pub mod copies;
pub mod delta;
pub mod distinct;
mod dtype;
mod fill;
pub mod ibp;
mod planes;
pub mod recent;
pub mod repeated;
pub mod rounding;
pub mod scaled;
pub mod swapped;
pub mod tensor_header;

pub use dtype::{swap_order, DType};
use planes::decode_as as decode_append;
pub use planes::{decode, encode, encode_append, encode_into, Planes};
