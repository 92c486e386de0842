//! The SQL node's logic, sans-IO apart from the native API it calls:
//! parsing (`sqlparser`, MySQL dialect, behind a plan cache), the catalog
//! (SQL tables over the dictionary's tables), expressions with MySQL's
//! semantics, planning and execution on `shoal_client` sessions.

pub mod catalog;
pub mod convert;
pub mod ddl;
pub mod error;
pub mod expression;
pub mod outcome;
pub mod parse;
pub mod plan;
pub mod select;
pub mod server;
pub mod session;
pub mod show;
pub mod statement_cache;
pub mod temporal;
pub mod users;
pub mod value;
pub mod variables;
pub mod write;

pub use error::SqlError;
pub use value::{SqlType, SqlValue};
