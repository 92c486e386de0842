//! Shoal's table vocabulary: column types, values, character sets and
//! collations, the stored row format, and the key encodings that indexes and
//! partitioning are built on.
//!
//! This crate is sans-IO and allocation-conscious: the functions used on the
//! engine's primary-key and scan paths write into caller-owned buffers and
//! never allocate once those buffers are warm.
//!
//! Byte formats are part of the on-disk and on-wire contract: `row` documents
//! the stored row and the AttrInfo stream, `key` the sortable key encoding
//! and the key hash. Changing either changes where rows live and how they sort.

pub mod collation;
pub mod distribution;
pub mod error;
pub mod key;
pub mod row;
pub mod table;
pub mod table_codec;
pub mod types;
pub mod value;

pub use error::{Error, ErrorCode};
pub use row::{AttrInfoReader, AttrInfoWriter, RowView};
pub use table::{ColumnDef, ColumnId, IndexDef, Place, RowLayout, TableDef};
pub use types::{Collation, ColumnType, Storage};
pub use value::Value;
