//! Carrier tracking numbers, as the server's modules name them: the pure code (check digits,
//! formats, recognising a number) lives in `seqvend-blocks` so the server and the Python
//! package share one implementation; this module re-exports it where its callers look.

pub use seqvend_blocks::carriers::{
    normalise, recognise, Format, FormatError, Layout, NumberError, Origin, Recognition, KINDS,
    MAX_LEN,
};
