//! DDL: databases, CREATE TABLE (with LIKE), DROP TABLE, TRUNCATE,
//! CREATE INDEX, and SHOW CREATE TABLE's text, which recreates the table.

use std::sync::Arc;

use schema::distribution::TableOptions;
use schema::{Collation, ColumnDef, ColumnId, ColumnType, IndexDef, TableDef, Value};
use shoal_client::{ClientError, Cluster, ExecuteEnd, LockMode};
use sqlparser::ast::{self, DataType, Expr, Statement};

use crate::catalog::{
    self, ColumnDefault, ColumnMetadata, IndexKind, PRIMARY_INDEX_NAME, SqlMetadata, SqlTable,
};
use crate::convert;
use crate::error::SqlError;
use crate::expression::{Environment, WarningLevel};
use crate::outcome::Outcome;
use crate::parse::Partitioning;
use crate::session::{Session, StatementResult};
use crate::value::SqlValue;

/// Rows copied per round trip when a table is rebuilt (CREATE INDEX).
const COPY_BATCH_ROWS: usize = 256;

pub fn run(
    session: &mut Session,
    statement: &Statement,
    partitioning: Option<&Partitioning>,
) -> StatementResult {
    match statement {
        Statement::CreateDatabase {
            db_name,
            if_not_exists,
            ..
        } => {
            session.server.count_command("create_db");
            create_database(session, &last_part(db_name), *if_not_exists)
        }
        Statement::CreateSchema {
            schema_name,
            if_not_exists,
            ..
        } => {
            session.server.count_command("create_db");
            create_database(
                session,
                schema_name.to_string().trim_matches('`'),
                *if_not_exists,
            )
        }
        Statement::CreateTable(create) => {
            session.server.count_command("create_table");
            create_table(session, create, partitioning)
        }
        Statement::CreateIndex(index) => {
            session.server.count_command("create_index");
            create_index(session, index)
        }
        Statement::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => match object_type {
            ast::ObjectType::Table => {
                session.server.count_command("drop_table");
                drop_tables(session, names, *if_exists)
            }
            ast::ObjectType::Database | ast::ObjectType::Schema => {
                session.server.count_command("drop_db");
                let name = names.first().map(last_part).unwrap_or_default();
                drop_database(session, &name, *if_exists)
            }
            other => Err(SqlError::unsupported(format!("DROP {other}"))),
        },
        Statement::Truncate(truncate) => {
            session.server.count_command("truncate");
            for target in &truncate.table_names {
                truncate_table(session, &target.name)?;
            }
            Ok(Outcome::done(0))
        }
        Statement::AlterTable(alter) => alter_table(session, alter),
        Statement::RenameTable(renames) => {
            for rename in renames {
                rename_table(session, &rename.old_name, &rename.new_name)?;
            }
            Ok(Outcome::done(0))
        }
        other => Err(SqlError::unsupported(other.to_string())),
    }
}

fn last_part(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident().map(|i| i.value.clone()))
        .unwrap_or_else(|| name.to_string())
}

fn cluster(session: &Session) -> Cluster {
    session.native.cluster().clone()
}

// ---- Databases ----

/// Whether database `name` exists.
pub fn database_exists(session: &mut Session, name: &str) -> Result<bool, SqlError> {
    if name == catalog::SYSTEM_DATABASE || catalog::VIRTUAL_DATABASES.contains(&name) {
        return Ok(true);
    }
    let route = session
        .native
        .table(catalog::SCHEMATA_TABLE)
        .map_err(crate::session::cluster_error)?;
    let key = [(0, Value::Bytes(name.as_bytes().to_vec()))];
    let read = crate::session::single_operation(&mut session.native, |t| {
        t.read(&route, &key, &[0], LockMode::Committed)
    })?;
    match read {
        Ok(()) => Ok(true),
        Err(e) if e.ndb_code == 626 => Ok(false),
        Err(e) => Err(crate::session::cluster_error(e)),
    }
}

/// Every database, sorted.
pub fn databases(session: &mut Session) -> Result<Vec<String>, SqlError> {
    let route = session
        .native
        .table(catalog::SCHEMATA_TABLE)
        .map_err(crate::session::cluster_error)?;
    let mut transaction = session
        .native
        .start_transaction(None)
        .map_err(crate::session::cluster_error)?;
    let scan = session
        .native
        .scan(
            &mut transaction,
            &route,
            &shoal_client::ScanOptions::default(),
        )
        .map_err(crate::session::cluster_error)?;
    let mut names: Vec<String> = catalog::VIRTUAL_DATABASES
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.push(catalog::SYSTEM_DATABASE.to_string());
    while let Some(row) = session
        .native
        .next_row(&scan)
        .map_err(crate::session::cluster_error)?
    {
        if let Some(Value::Bytes(name)) = row.get(0) {
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    session
        .native
        .close_scan(scan)
        .map_err(crate::session::cluster_error)?;
    session
        .native
        .execute(&mut transaction, ExecuteEnd::Commit)
        .map_err(crate::session::cluster_error)?;
    names.sort();
    names.dedup();
    Ok(names)
}

fn create_database(session: &mut Session, name: &str, if_not_exists: bool) -> StatementResult {
    catalog::check_identifier(name, "database")?;
    if database_exists(session, name)? {
        let message = format!("Can't create database '{name}'; database exists");
        if if_not_exists {
            session.warn(WarningLevel::Note, 1007, message);
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::new(1007, message));
    }
    let route = session
        .native
        .table(catalog::SCHEMATA_TABLE)
        .map_err(crate::session::cluster_error)?;
    let mut transaction = session
        .native
        .start_transaction(None)
        .map_err(crate::session::cluster_error)?;
    transaction
        .insert(
            &route,
            &[
                (0, Value::Bytes(name.as_bytes().to_vec())),
                (1, Value::Bytes(b"utf8mb4_0900_ai_ci".to_vec())),
            ],
        )
        .map_err(crate::session::cluster_error)?;
    match session.native.execute(&mut transaction, ExecuteEnd::Commit) {
        Ok(()) => Ok(Outcome::done(1)),
        Err(e) if e.mysql_code == 1062 => {
            if if_not_exists {
                return Ok(Outcome::done(0));
            }
            Err(SqlError::new(
                1007,
                format!("Can't create database '{name}'; database exists"),
            ))
        }
        Err(e) => Err(crate::session::cluster_error(e)),
    }
}

/// The SQL tables of `database`, sorted by name.
pub fn tables_of(session: &Session, database: &str) -> Vec<String> {
    let routing = session.native.cluster().routing();
    let mut names: Vec<String> = routing
        .tables()
        .filter(|t| t.base_table.is_none() && t.sequence_of.is_none())
        .filter_map(|t| {
            catalog::split_dictionary_name(&t.name)
                .filter(|(d, _)| *d == database)
                .map(|(_, name)| name.to_string())
        })
        .collect();
    names.sort();
    names
}

fn drop_database(session: &mut Session, name: &str, if_exists: bool) -> StatementResult {
    if name == catalog::SYSTEM_DATABASE || catalog::VIRTUAL_DATABASES.contains(&name) {
        return Err(SqlError::new(
            1044,
            format!(
                "Access denied for user '{}'@'{}' to database '{name}'",
                session.user, session.host
            ),
        ));
    }
    if let Err(e) = session.native.cluster().refresh_dictionary() {
        return Err(crate::session::cluster_error(e));
    }
    if !database_exists(session, name)? {
        let message = format!("Can't drop database '{name}'; database doesn't exist");
        if if_exists {
            session.warn(WarningLevel::Note, 1008, message);
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::new(1008, message));
    }
    let tables = tables_of(session, name);
    let cluster = cluster(session);
    for table in &tables {
        match cluster.drop_table(&catalog::dictionary_name(name, table)) {
            Ok(_) => {}
            Err(e) if e.mysql_code == 1146 => {}
            Err(e) => return Err(crate::session::cluster_error(e)),
        }
    }
    let route = session
        .native
        .table(catalog::SCHEMATA_TABLE)
        .map_err(crate::session::cluster_error)?;
    let key = [(0, Value::Bytes(name.as_bytes().to_vec()))];
    match crate::session::single_operation(&mut session.native, |t| t.delete(&route, &key))? {
        // Another SQL node dropped it meanwhile: it is gone either way.
        Ok(()) => {}
        Err(e) if e.ndb_code == 626 => {}
        Err(e) => return Err(crate::session::cluster_error(e)),
    }
    session.forget_tables();
    if session.database.as_deref() == Some(name) {
        session.database = None;
    }
    Ok(Outcome::done(tables.len() as u64))
}

/// Creates the system tables and the initial rows (the `mysql` database's
/// tables and `root@localhost` without a password, as `mysqld
/// --initialize-insecure`) when they are missing. Safe when several SQL
/// nodes start at once: a table or row another created first is fine.
pub fn ensure_system_tables(
    cluster: &Cluster,
    session: &mut shoal_client::Session,
) -> Result<(), ClientError> {
    for (def, metadata) in [catalog::schemata_table(), catalog::user_table()] {
        if cluster.routing().table_by_name(&def.name).is_some() {
            continue;
        }
        let options = TableOptions {
            sql_metadata: metadata.encode(),
            ..TableOptions::default()
        };
        match cluster.create_table(&def, &options) {
            Ok(_) => {}
            Err(e) if e.mysql_code == 1050 => cluster.refresh_dictionary()?,
            Err(e) => return Err(e),
        }
    }
    let users = session.table(catalog::USER_TABLE)?;
    let mut transaction = session.start_transaction(None)?;
    let root = crate::users::user_row("localhost", "root", "");
    let insert = transaction.insert(&users, &root)?;
    transaction.ignore_error(insert)?;
    session.execute(&mut transaction, ExecuteEnd::Commit)?;
    match transaction.result(insert) {
        Ok(()) => Ok(()),
        Err(e) if e.ndb_code == 630 => Ok(()),
        Err(e) => Err(e),
    }
}

// ---- CREATE TABLE ----

/// A column's type from its SQL data type and character set options.
fn column_type(
    data_type: &DataType,
    collation: Collation,
    column: &str,
) -> Result<(ColumnType, bool), SqlError> {
    use DataType as D;
    let length = |n: &Option<ast::CharacterLength>, default: u64| -> Result<u64, SqlError> {
        match n {
            None => Ok(default),
            Some(ast::CharacterLength::IntegerLength { length, .. }) => Ok(*length),
            Some(ast::CharacterLength::Max) => Err(SqlError::syntax("MAX is not a MySQL length")),
        }
    };
    let too_long = |max: u64, kind: &str| {
        SqlError::new(
            1074,
            format!(
                "Column length too big for column '{column}' (max = {max}); use BLOB or TEXT instead ({kind})"
            ),
        )
    };
    let fsp = |p: &Option<u64>| -> Result<u8, SqlError> {
        match p {
            None => Ok(0),
            Some(p) if *p <= 6 => Ok(*p as u8),
            Some(p) => Err(SqlError::new(
                1426,
                format!("Too-big precision {p} specified for '{column}'. Maximum is 6."),
            )),
        }
    };
    let decimal = |info: &ast::ExactNumberInfo| -> Result<ColumnType, SqlError> {
        let (precision, scale) = match info {
            ast::ExactNumberInfo::None => (10, 0),
            ast::ExactNumberInfo::Precision(p) => (*p, 0),
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s as u64),
        };
        if precision > 65 {
            return Err(SqlError::new(
                1426,
                format!("Too-big precision {precision} specified for '{column}'. Maximum is 65."),
            ));
        }
        if scale > 30 {
            return Err(SqlError::new(
                1425,
                format!("Too big scale {scale} specified for column '{column}'. Maximum is 30."),
            ));
        }
        if scale > precision {
            return Err(SqlError::new(
                1427,
                format!(
                    "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{column}')."
                ),
            ));
        }
        Ok(ColumnType::Decimal {
            precision: precision as u8,
            scale: scale as u8,
        })
    };
    let string_length = |n: u64| -> Result<u16, SqlError> {
        let bytes = n * u64::from(collation.bytes_per_char_max());
        if bytes > 65_535 {
            return Err(too_long(
                65_535 / u64::from(collation.bytes_per_char_max()),
                "VARCHAR",
            ));
        }
        Ok(n as u16)
    };
    let (column_type, unsigned_only) = match data_type {
        D::Bool | D::Boolean => (ColumnType::TinyInt { unsigned: false }, false),
        D::TinyInt(_) => (ColumnType::TinyInt { unsigned: false }, false),
        D::TinyIntUnsigned(_) | D::UTinyInt => (ColumnType::TinyInt { unsigned: true }, false),
        D::SmallInt(_) | D::Int2(_) => (ColumnType::SmallInt { unsigned: false }, false),
        D::SmallIntUnsigned(_) | D::Int2Unsigned(_) | D::USmallInt => {
            (ColumnType::SmallInt { unsigned: true }, false)
        }
        D::MediumInt(_) => (ColumnType::MediumInt { unsigned: false }, false),
        D::MediumIntUnsigned(_) => (ColumnType::MediumInt { unsigned: true }, false),
        D::Int(_) | D::Integer(_) | D::Int4(_) => (ColumnType::Int { unsigned: false }, false),
        D::IntUnsigned(_) | D::IntegerUnsigned(_) | D::Int4Unsigned(_) => {
            (ColumnType::Int { unsigned: true }, false)
        }
        D::BigInt(_) | D::Int8(_) => (ColumnType::BigInt { unsigned: false }, false),
        D::BigIntUnsigned(_) | D::Int8Unsigned(_) | D::UBigInt => {
            (ColumnType::BigInt { unsigned: true }, false)
        }
        D::Decimal(info) | D::Numeric(info) | D::Dec(info) => (decimal(info)?, false),
        D::DecimalUnsigned(info) | D::DecUnsigned(info) => (decimal(info)?, true),
        D::Float(info) => match info {
            ast::ExactNumberInfo::Precision(p) | ast::ExactNumberInfo::PrecisionAndScale(p, _)
                if *p > 24 =>
            {
                (ColumnType::Double, false)
            }
            _ => (ColumnType::Float, false),
        },
        D::FloatUnsigned(_) => (ColumnType::Float, true),
        D::Real | D::Double(_) | D::DoublePrecision | D::Float8 | D::Float64 => {
            (ColumnType::Double, false)
        }
        D::RealUnsigned | D::DoubleUnsigned(_) | D::DoublePrecisionUnsigned => {
            (ColumnType::Double, true)
        }
        D::Char(n) | D::Character(n) => {
            let n = length(n, 1)?;
            if n > 255 {
                return Err(too_long(255, "CHAR"));
            }
            (
                ColumnType::Char {
                    length: n as u16,
                    collation,
                },
                false,
            )
        }
        D::Varchar(n) | D::CharVarying(n) | D::CharacterVarying(n) | D::Nvarchar(n) => {
            if n.is_none() {
                return Err(SqlError::syntax(format!(
                    "VARCHAR of column '{column}' needs a length"
                )));
            }
            (
                ColumnType::Varchar {
                    length: string_length(length(n, 0)?)?,
                    collation,
                },
                false,
            )
        }
        D::Binary(n) => {
            let n = n.unwrap_or(1);
            if n > 255 {
                return Err(too_long(255, "BINARY"));
            }
            (ColumnType::Binary { length: n as u16 }, false)
        }
        D::Varbinary(n) => match n {
            Some(ast::BinaryLength::IntegerLength { length }) if *length <= 65_535 => (
                ColumnType::Varbinary {
                    length: *length as u16,
                },
                false,
            ),
            Some(ast::BinaryLength::IntegerLength { .. }) => {
                return Err(too_long(65_535, "VARBINARY"));
            }
            _ => {
                return Err(SqlError::syntax(format!(
                    "VARBINARY of column '{column}' needs a length"
                )));
            }
        },
        D::Date => (ColumnType::Date, false),
        D::Datetime(p) => (ColumnType::Datetime { fsp: fsp(p)? }, false),
        D::Timestamp(p, _) => (ColumnType::Timestamp { fsp: fsp(p)? }, false),
        D::Time(p, _) => (ColumnType::Time { fsp: fsp(p)? }, false),
        D::Bit(n) => {
            let n = n.unwrap_or(1);
            if n == 0 || n > 64 {
                return Err(SqlError::new(
                    1439,
                    format!("Display width out of range for column '{column}' (max = 64)"),
                ));
            }
            (ColumnType::Bit { width: n as u8 }, false)
        }
        D::Enum(members, _) => {
            let variants = members
                .iter()
                .map(|m| match m {
                    ast::EnumMember::Name(name) => name.clone(),
                    ast::EnumMember::NamedValue(name, _) => name.clone(),
                })
                .collect();
            (ColumnType::Enum { variants }, false)
        }
        D::TinyBlob => (ColumnType::Blob { length_max: 255 }, false),
        D::Blob(n) => (
            ColumnType::Blob {
                length_max: n.map_or(65_535, |n| n.min(u64::from(u32::MAX)) as u32),
            },
            false,
        ),
        D::MediumBlob => (
            ColumnType::Blob {
                length_max: 16_777_215,
            },
            false,
        ),
        D::LongBlob => (
            ColumnType::Blob {
                length_max: u32::MAX,
            },
            false,
        ),
        D::TinyText => (
            ColumnType::Text {
                length_max: 255,
                collation,
            },
            false,
        ),
        D::Text => (
            ColumnType::Text {
                length_max: 65_535,
                collation,
            },
            false,
        ),
        D::MediumText => (
            ColumnType::Text {
                length_max: 16_777_215,
                collation,
            },
            false,
        ),
        D::LongText => (
            ColumnType::Text {
                length_max: u32::MAX,
                collation,
            },
            false,
        ),
        D::Custom(name, _) if name.to_string().eq_ignore_ascii_case("YEAR") => {
            (ColumnType::Year, false)
        }
        D::Zerofill(inner) => {
            let (inner, _) = column_type(inner, collation, column)?;
            (inner, true)
        }
        other => return Err(SqlError::unsupported(format!("column type {other}"))),
    };
    Ok((column_type, unsigned_only))
}

/// The collation a charset and/or collation name mean, or 1115/1273.
pub fn collation_of(
    charset: Option<&str>,
    collation: Option<&str>,
    default: Collation,
) -> Result<Collation, SqlError> {
    if let Some(name) = collation {
        let lower = name.to_ascii_lowercase();
        if let Some(c) = Collation::from_name(&lower) {
            return Ok(c);
        }
        // MySQL 5.7-era utf8mb4 collations compare much like MySQL 8.0's
        // default; they are stored as it.
        return match lower.as_str() {
            "utf8mb4_general_ci"
            | "utf8mb4_unicode_ci"
            | "utf8mb4_unicode_520_ci"
            | "utf8mb4_0900_as_ci"
            | "utf8_general_ci"
            | "utf8mb3_general_ci"
            | "utf8_unicode_ci" => Ok(Collation::Utf8mb4AiCi),
            "utf8_bin" | "utf8mb3_bin" => Ok(Collation::Utf8mb4Bin),
            "latin1_general_ci" => Ok(Collation::Latin1Ci),
            "binary" => Ok(Collation::Binary),
            _ => Err(SqlError::new(1273, format!("Unknown collation: '{name}'"))),
        };
    }
    match charset.map(|c| c.to_ascii_lowercase()) {
        None => Ok(default),
        Some(c) if c == "utf8mb4" || c == "utf8" || c == "utf8mb3" => Ok(
            if matches!(default, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi) {
                default
            } else {
                Collation::Utf8mb4AiCi
            },
        ),
        Some(c) if c == "latin1" => Ok(
            if matches!(default, Collation::Latin1Bin | Collation::Latin1Ci) {
                default
            } else {
                Collation::Latin1Ci
            },
        ),
        Some(c) if c == "binary" => Ok(Collation::Binary),
        Some(c) if c == "ascii" => Ok(Collation::Latin1Ci),
        Some(c) => Err(SqlError::new(1115, format!("Unknown character set: '{c}'"))),
    }
}

fn index_columns(
    def_columns: &[ColumnDef],
    columns: &[ast::IndexColumn],
) -> Result<Vec<ColumnId>, SqlError> {
    let mut ids = Vec::with_capacity(columns.len());
    for column in columns {
        let name = match &column.column.expr {
            Expr::Identifier(ident) => ident.value.clone(),
            Expr::Function(f) => {
                // `KEY (c(10))`: a prefix index; the whole column is indexed.
                f.name.to_string()
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "index on expression {other}"
                )));
            }
        };
        let id = def_columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(&name))
            .ok_or_else(|| {
                SqlError::new(1072, format!("Key column '{name}' doesn't exist in table"))
            })?;
        ids.push(id as ColumnId);
    }
    Ok(ids)
}

/// A table's definition and metadata under construction.
struct NewTable {
    columns: Vec<ColumnDef>,
    metadata: Vec<ColumnMetadata>,
    primary_key: Option<Vec<ColumnId>>,
    indexes: Vec<(IndexDef, IndexKind)>,
}

fn add_index(
    table: &mut NewTable,
    name: Option<String>,
    columns: Vec<ColumnId>,
    unique: bool,
) -> Result<(), SqlError> {
    let name = match name {
        Some(name) => name,
        None => {
            // MySQL names an unnamed index after its first column, then
            // `_2`, `_3`... when taken.
            let base = table.columns[columns[0] as usize].name.clone();
            let mut candidate = base.clone();
            let mut n = 2;
            while table
                .indexes
                .iter()
                .any(|(i, _)| i.name.eq_ignore_ascii_case(&candidate))
            {
                candidate = format!("{base}_{n}");
                n += 1;
            }
            candidate
        }
    };
    if name.eq_ignore_ascii_case(PRIMARY_INDEX_NAME)
        || table
            .indexes
            .iter()
            .any(|(i, _)| i.name.eq_ignore_ascii_case(&name))
    {
        return Err(SqlError::new(1061, format!("Duplicate key name '{name}'")));
    }
    table.indexes.push((
        IndexDef {
            name,
            columns,
            unique,
        },
        if unique {
            IndexKind::Unique
        } else {
            IndexKind::Key
        },
    ));
    Ok(())
}

fn create_table(
    session: &mut Session,
    create: &ast::CreateTable,
    partitioning: Option<&Partitioning>,
) -> StatementResult {
    let (database, name) = session.resolve_name(&create.name)?;
    catalog::check_identifier(&name, "table")?;
    if let Some(word) = unquoted_reserved(&create.name) {
        return Err(SqlError::syntax(format!(
            "check the manual that corresponds to your MySQL server version for the right syntax to use near '{word}'"
        )));
    }
    if create.query.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE ... SELECT"));
    }
    if create.temporary {
        return Err(SqlError::unsupported("CREATE TEMPORARY TABLE"));
    }
    if !database_exists(session, &database)? {
        return Err(SqlError::new(
            1049,
            format!("Unknown database '{database}'"),
        ));
    }
    // An existing table is reported before anything about the new
    // definition, as MySQL does.
    if session
        .native
        .cluster()
        .routing()
        .table_by_name(&catalog::dictionary_name(&database, &name))
        .is_some()
    {
        let message = format!("Table '{name}' already exists");
        if create.if_not_exists {
            session.warn(WarningLevel::Note, 1050, message);
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::new(1050, message));
    }
    for (i, column) in create.columns.iter().enumerate() {
        if create.columns[..i]
            .iter()
            .any(|c| c.name.value.eq_ignore_ascii_case(&column.name.value))
        {
            return Err(SqlError::new(
                1060,
                format!("Duplicate column name '{}'", column.name.value),
            ));
        }
        if column.name.quote_style.is_none() && is_reserved(&column.name.value) {
            return Err(SqlError::syntax(format!(
                "check the manual that corresponds to your MySQL server version for the right syntax to use near '{}'",
                column.name.value
            )));
        }
    }
    if let Some(like) = &create.like {
        let source = match like {
            ast::CreateTableLikeKind::Parenthesized(like)
            | ast::CreateTableLikeKind::Plain(like) => &like.name,
        };
        let source = session.table_by_object_name(source)?;
        let mut def = source.def().clone();
        def.name = catalog::dictionary_name(&database, &name);
        let options = source.route.options.clone();
        return finish_create(
            session,
            &database,
            &name,
            def,
            options,
            create.if_not_exists,
            None,
        );
    }
    // Table options: engine, comment, default character set and collation.
    let mut engine = "ndbcluster".to_string();
    let mut comment = String::new();
    let mut charset = None;
    let mut collation_name = None;
    let mut auto_increment_start = None;
    let options_list: &[ast::SqlOption] = match &create.table_options {
        ast::CreateTableOptions::None => &[],
        ast::CreateTableOptions::With(o)
        | ast::CreateTableOptions::Options(o)
        | ast::CreateTableOptions::Plain(o)
        | ast::CreateTableOptions::TableProperties(o) => o,
    };
    for option in options_list {
        match option {
            ast::SqlOption::NamedParenthesizedList(list)
                if list.key.value.eq_ignore_ascii_case("ENGINE") =>
            {
                if let Some(name) = &list.name {
                    engine = name.value.clone();
                }
            }
            ast::SqlOption::Comment(
                ast::CommentDef::WithEq(text) | ast::CommentDef::WithoutEq(text),
            ) => {
                comment = text.clone();
            }
            ast::SqlOption::KeyValue { key, value } => {
                let key = key.to_string().to_ascii_uppercase();
                let value_text = match value {
                    Expr::Identifier(i) => i.value.clone(),
                    Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    other => other.to_string(),
                };
                match key.as_str() {
                    "DEFAULT CHARSET" | "CHARSET" | "CHARACTER SET" | "DEFAULT CHARACTER SET" => {
                        charset = Some(value_text)
                    }
                    "COLLATE" | "DEFAULT COLLATE" => collation_name = Some(value_text),
                    "AUTO_INCREMENT" => auto_increment_start = value_text.parse::<u64>().ok(),
                    "ENGINE" => engine = value_text,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if let Some(ast::CommentDef::WithEq(text) | ast::CommentDef::WithoutEq(text)) = &create.comment
    {
        comment = text.clone();
    }
    let ndb = engine.eq_ignore_ascii_case("ndb") || engine.eq_ignore_ascii_case("ndbcluster");
    if !ndb {
        // Every table lives in the cluster: another engine is substituted,
        // with MySQL's warning, whatever NO_ENGINE_SUBSTITUTION says.
        session.warn(
            WarningLevel::Warning,
            1266,
            format!("Using storage engine ndbcluster for table '{name}'"),
        );
    }
    let table_collation = collation_of(
        charset.as_deref(),
        collation_name.as_deref(),
        Collation::Utf8mb4AiCi,
    )?;
    let mut table = NewTable {
        columns: Vec::with_capacity(create.columns.len()),
        metadata: Vec::with_capacity(create.columns.len()),
        primary_key: None,
        indexes: Vec::new(),
    };
    let mut column_unique: Vec<(usize, Option<String>)> = Vec::new();
    for (position, column) in create.columns.iter().enumerate() {
        let name = column.name.value.clone();
        catalog::check_identifier(&name, "column")?;
        if name.eq_ignore_ascii_case(catalog::HIDDEN_PRIMARY_KEY) {
            // The name of NDB's hidden primary key.
            return Err(SqlError::new(
                1166,
                format!("Incorrect column name '{name}'"),
            ));
        }
        let mut charset = None;
        let mut collation = None;
        let mut data_type = &column.data_type;
        if let DataType::Collate(inner, name) = data_type {
            collation = Some(name.to_string());
            data_type = inner;
        }
        for option in &column.options {
            match &option.option {
                ast::ColumnOption::CharacterSet(name) => charset = Some(name.to_string()),
                ast::ColumnOption::Collation(name) => collation = Some(name.to_string()),
                _ => {}
            }
        }
        let collation = collation_of(charset.as_deref(), collation.as_deref(), table_collation)?;
        let (column_type, unsigned) = column_type(data_type, collation, &name)?;
        let binary_type = matches!(data_type, DataType::Binary(_) | DataType::Varbinary(_));
        let _ = binary_type;
        let mut nullable = true;
        let mut metadata = ColumnMetadata {
            boolean: matches!(
                data_type,
                DataType::Bool | DataType::Boolean | DataType::TinyInt(Some(1))
            ),
            unsigned: unsigned
                && matches!(
                    column_type,
                    ColumnType::Decimal { .. } | ColumnType::Float | ColumnType::Double
                ),
            ..ColumnMetadata::default()
        };
        let mut default_expr = None;
        for option in &column.options {
            match &option.option {
                ast::ColumnOption::Null => nullable = true,
                ast::ColumnOption::NotNull => nullable = false,
                ast::ColumnOption::Default(expr) => default_expr = Some(expr.clone()),
                ast::ColumnOption::PrimaryKey(_) => {
                    if table.primary_key.is_some() {
                        return Err(SqlError::new(1068, "Multiple primary key defined"));
                    }
                    table.primary_key = Some(vec![position as ColumnId]);
                }
                ast::ColumnOption::Unique(_) => column_unique.push((position, None)),
                ast::ColumnOption::Comment(text) => metadata.comment = text.clone(),
                ast::ColumnOption::OnUpdate(expr) => {
                    if is_current_timestamp(expr) {
                        metadata.on_update_current_timestamp = true;
                    } else {
                        return Err(SqlError::new(
                            1294,
                            format!("Invalid ON UPDATE clause for '{name}' column"),
                        ));
                    }
                }
                ast::ColumnOption::DialectSpecific(tokens)
                    if tokens
                        .iter()
                        .any(|t| t.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")) =>
                {
                    metadata.auto_increment = true;
                }
                ast::ColumnOption::CharacterSet(_) | ast::ColumnOption::Collation(_) => {}
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        if metadata.auto_increment
            && !matches!(
                column_type,
                ColumnType::TinyInt { .. }
                    | ColumnType::SmallInt { .. }
                    | ColumnType::MediumInt { .. }
                    | ColumnType::Int { .. }
                    | ColumnType::BigInt { .. }
            )
        {
            return Err(SqlError::new(
                1063,
                format!("Incorrect column specifier for column '{name}'"),
            ));
        }
        table
            .columns
            .push(ColumnDef::new(&name, column_type, nullable));
        if let Some(expr) = default_expr {
            metadata.default = column_default(session, &table.columns[position], &expr)?;
        }
        table.metadata.push(metadata);
    }
    for constraint in &create.constraints {
        match constraint {
            ast::TableConstraint::PrimaryKey(primary) => {
                if table.primary_key.is_some() {
                    return Err(SqlError::new(1068, "Multiple primary key defined"));
                }
                table.primary_key = Some(index_columns(&table.columns, &primary.columns)?);
            }
            ast::TableConstraint::Unique(unique) => {
                let columns = index_columns(&table.columns, &unique.columns)?;
                let name = unique
                    .index_name
                    .as_ref()
                    .or(unique.name.as_ref())
                    .map(|i| i.value.clone());
                add_index(&mut table, name, columns, true)?;
            }
            ast::TableConstraint::Index(index) => {
                let columns = index_columns(&table.columns, &index.columns)?;
                add_index(
                    &mut table,
                    index.name.as_ref().map(|i| i.value.clone()),
                    columns,
                    false,
                )?;
            }
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    for (position, name) in column_unique {
        add_index(&mut table, name, vec![position as ColumnId], true)?;
    }
    let auto_columns: Vec<usize> = table
        .metadata
        .iter()
        .enumerate()
        .filter(|(_, m)| m.auto_increment)
        .map(|(i, _)| i)
        .collect();
    let auto_is_keyed = |c: usize| {
        table.primary_key.as_ref().and_then(|k| k.first()) == Some(&(c as ColumnId))
            || table
                .indexes
                .iter()
                .any(|(i, _)| i.columns.first() == Some(&(c as ColumnId)))
    };
    if auto_columns.len() > 1 || auto_columns.first().is_some_and(|&c| !auto_is_keyed(c)) {
        return Err(SqlError::new(
            1075,
            "Incorrect table definition; there can be only one auto column and it must be defined as a key",
        ));
    }
    let primary_key = match table.primary_key.clone() {
        Some(primary_key) => primary_key,
        None => {
            // As NDB: a hidden BIGINT UNSIGNED key, last, filled from the
            // table's counter (`catalog::HIDDEN_PRIMARY_KEY`).
            let position = table.columns.len() as ColumnId;
            table.columns.push(ColumnDef {
                name: catalog::HIDDEN_PRIMARY_KEY.into(),
                column_type: ColumnType::BigInt { unsigned: true },
                nullable: false,
            });
            table.metadata.push(ColumnMetadata::default());
            vec![position]
        }
    };
    // Primary-key columns are NOT NULL, as MySQL makes them.
    for &column in &primary_key {
        table.columns[column as usize].nullable = false;
    }
    // The primary key's ordered index comes first, as NDB creates it.
    let mut ordered = vec![IndexDef {
        name: PRIMARY_INDEX_NAME.into(),
        columns: primary_key.clone(),
        unique: false,
    }];
    let mut kinds = vec![IndexKind::Primary];
    for (index, kind) in table.indexes {
        ordered.push(index);
        kinds.push(kind);
    }
    let def = TableDef::new(
        &catalog::dictionary_name(&database, &name),
        table.columns,
        primary_key,
        ordered,
    )
    .map_err(schema_error)?;
    let mut options = TableOptions::default();
    options
        .apply_ndb_table_comment(&comment)
        .map_err(schema_error)?;
    if let Some(partitioning) = partitioning {
        let mut key = Vec::with_capacity(partitioning.columns.len());
        for column in &partitioning.columns {
            let id = def
                .column_id(column)
                .ok_or_else(|| SqlError::new(1488, format!("Field in list of fields for partition function not found in table: '{column}'")))?;
            key.push(id);
        }
        // NDB hashes the listed columns in primary-key order, whatever
        // order PARTITION BY KEY lists them in.
        key.sort_by_key(|id| {
            def.primary_key
                .iter()
                .position(|k| k == id)
                .unwrap_or(usize::MAX)
        });
        options.distribution_key = key;
        options.partitions = partitioning.partitions;
    }
    let metadata = SqlMetadata {
        engine: if ndb { "ndbcluster".into() } else { engine },
        comment,
        columns: table.metadata,
        indexes: kinds,
    };
    let encoded = metadata.encode();
    if encoded.len() > schema::table_codec::SQL_METADATA_BYTES_MAX {
        return Err(SqlError::new(
            1117,
            "The table's defaults and comments are too long",
        ));
    }
    options.sql_metadata = encoded;
    finish_create(
        session,
        &database,
        &name,
        def,
        options,
        create.if_not_exists,
        auto_increment_start,
    )
}

fn finish_create(
    session: &mut Session,
    database: &str,
    name: &str,
    def: TableDef,
    options: TableOptions,
    if_not_exists: bool,
    auto_increment_start: Option<u64>,
) -> StatementResult {
    options.validate_for(&def).map_err(schema_error)?;
    let exists_message = format!("Table '{name}' already exists");
    if session
        .native
        .cluster()
        .routing()
        .table_by_name(&def.name)
        .is_some()
    {
        if if_not_exists {
            session.warn(WarningLevel::Note, 1050, exists_message);
            return Ok(Outcome::done(0));
        }
        return Err(SqlError::new(1050, exists_message));
    }
    match cluster(session).create_table(&def, &options) {
        Ok(_) => {}
        Err(e) if e.mysql_code == 1050 => {
            if if_not_exists {
                session.warn(WarningLevel::Note, 1050, exists_message);
                return Ok(Outcome::done(0));
            }
            return Err(SqlError::new(1050, exists_message));
        }
        Err(e) => return Err(crate::session::cluster_error(e)),
    }
    session.forget_tables();
    if let Some(start) = auto_increment_start.filter(|s| *s > 1) {
        let table = session.table(database, name)?;
        session
            .native
            .raise_auto_increment(&table.route, start - 1)
            .map_err(crate::session::cluster_error)?;
    }
    Ok(Outcome::done(0))
}

fn is_current_timestamp(expr: &Expr) -> bool {
    let text = expr.to_string().to_ascii_uppercase();
    let bare = text.split('(').next().unwrap_or("").trim().to_string();
    matches!(
        bare.as_str(),
        "CURRENT_TIMESTAMP" | "NOW" | "LOCALTIME" | "LOCALTIMESTAMP"
    )
}

fn column_default(
    session: &mut Session,
    column: &ColumnDef,
    expr: &Expr,
) -> Result<ColumnDefault, SqlError> {
    let invalid = || SqlError::new(1067, format!("Invalid default value for '{}'", column.name));
    if is_current_timestamp(expr) {
        if matches!(
            column.column_type,
            ColumnType::Timestamp { .. } | ColumnType::Datetime { .. }
        ) {
            return Ok(ColumnDefault::CurrentTimestamp);
        }
        return Err(invalid());
    }
    let value = crate::select::evaluate_constant(session, expr).map_err(|_| invalid())?;
    if matches!(value, SqlValue::Null) {
        if !column.nullable {
            return Err(invalid());
        }
        return Ok(ColumnDefault::Null);
    }
    if column.column_type.is_blob() {
        return Err(SqlError::new(
            1101,
            format!(
                "BLOB, TEXT, GEOMETRY or JSON column '{}' can't have a default value",
                column.name
            ),
        ));
    }
    let stored =
        convert::to_stored(&value, column, true, 1, &mut |_, _| {}).map_err(|_| invalid())?;
    let back = convert::from_stored(&stored, &column.column_type);
    let sql_type = convert::column_sql_type(column);
    let mut text = Vec::new();
    crate::value::write_text(&back, &sql_type, &mut text);
    Ok(ColumnDefault::Text(
        String::from_utf8_lossy(&text).into_owned(),
    ))
}

/// MySQL 8.0's reserved words that CREATE TABLE refuses as unquoted
/// names (1064); the common ones.
const RESERVED_WORDS: [&str; 96] = [
    "ADD",
    "ALL",
    "ALTER",
    "ANALYZE",
    "AND",
    "AS",
    "ASC",
    "BETWEEN",
    "BIGINT",
    "BINARY",
    "BLOB",
    "BOTH",
    "BY",
    "CALL",
    "CASCADE",
    "CASE",
    "CHANGE",
    "CHAR",
    "CHARACTER",
    "CHECK",
    "COLLATE",
    "COLUMN",
    "CONDITION",
    "CONSTRAINT",
    "CONTINUE",
    "CONVERT",
    "CREATE",
    "CROSS",
    "DATABASE",
    "DATABASES",
    "DEC",
    "DECIMAL",
    "DECLARE",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DESCRIBE",
    "DISTINCT",
    "DIV",
    "DOUBLE",
    "DROP",
    "DUAL",
    "ELSE",
    "EXISTS",
    "EXPLAIN",
    "FALSE",
    "FLOAT",
    "FOR",
    "FORCE",
    "FOREIGN",
    "FROM",
    "FUNCTION",
    "GRANT",
    "GROUP",
    "HAVING",
    "IF",
    "IGNORE",
    "IN",
    "INDEX",
    "INNER",
    "INSERT",
    "INT",
    "INTEGER",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "KEY",
    "KEYS",
    "KILL",
    "LEFT",
    "LIKE",
    "LIMIT",
    "LOCK",
    "NOT",
    "NULL",
    "ON",
    "OR",
    "ORDER",
    "OUTER",
    "PRIMARY",
    "REPLACE",
    "RIGHT",
    "SELECT",
    "SET",
    "SHOW",
    "TABLE",
    "THEN",
    "TO",
    "TRUE",
    "UNION",
    "UNIQUE",
    "UPDATE",
    "VALUES",
    "WHERE",
    "WITH",
];

fn is_reserved(word: &str) -> bool {
    RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// The table name's last part when it is an unquoted reserved word.
fn unquoted_reserved(name: &ast::ObjectName) -> Option<String> {
    let ident = name.0.last()?.as_ident()?;
    (ident.quote_style.is_none() && is_reserved(&ident.value)).then(|| ident.value.clone())
}

/// A schema-layer error as MySQL's.
pub fn schema_error(error: schema::Error) -> SqlError {
    SqlError::new(error.code.mysql_code(), error.detail.to_string())
}

// ---- DROP, TRUNCATE, CREATE INDEX ----

fn drop_tables(
    session: &mut Session,
    names: &[ast::ObjectName],
    if_exists: bool,
) -> StatementResult {
    let mut unknown = Vec::new();
    let cluster = cluster(session);
    for name in names {
        let (database, table) = session.resolve_name(name)?;
        match cluster.drop_table(&catalog::dictionary_name(&database, &table)) {
            Ok(_) => {}
            Err(e) if e.mysql_code == 1146 || e.ndb_code == 723 => {
                unknown.push(format!("{database}.{table}"))
            }
            Err(e) => return Err(crate::session::cluster_error(e)),
        }
    }
    session.forget_tables();
    if !unknown.is_empty() {
        let message = format!("Unknown table '{}'", unknown.join(","));
        if if_exists {
            session.warn(WarningLevel::Note, 1051, message);
        } else {
            return Err(SqlError::new(1051, message));
        }
    }
    Ok(Outcome::done(0))
}

fn truncate_table(session: &mut Session, name: &ast::ObjectName) -> Result<(), SqlError> {
    let table = session.table_by_object_name(name)?;
    let def = table.def().clone();
    let options = table.route.options.clone();
    let cluster = cluster(session);
    cluster
        .drop_table(&def.name)
        .map_err(crate::session::cluster_error)?;
    cluster
        .create_table(&def, &options)
        .map_err(crate::session::cluster_error)?;
    session.forget_tables();
    Ok(())
}

/// CREATE [UNIQUE] INDEX: the table is rebuilt with the index (rows
/// copied into a new table that then takes the old one's place). The
/// dictionary cannot add an index to a live table yet, so this is offline:
/// the table is unavailable while it is copied.
fn create_index(session: &mut Session, index: &ast::CreateIndex) -> StatementResult {
    let table = session.table_by_object_name(&index.table_name)?;
    let columns = index_columns(&table.def().columns, &index.columns)?;
    let name = index.name.as_ref().map(last_part);
    if let Some(name) = &name
        && table.ordered_index(name).is_some()
        && index.if_not_exists
    {
        session.warn(
            WarningLevel::Note,
            1061,
            format!("Duplicate key name '{name}'"),
        );
        return Ok(Outcome::done(0));
    }
    change_indexes(session, &table, &[(name, columns, index.unique)], &[])?;
    Ok(Outcome::done(0))
}

/// Rebuilds `table` with indexes `add` (name, columns, unique) added and
/// the indexes named in `drop` dropped.
fn change_indexes(
    session: &mut Session,
    table: &Arc<SqlTable>,
    add: &[(Option<String>, Vec<ColumnId>, bool)],
    drop: &[String],
) -> Result<(), SqlError> {
    let def = table.def();
    for name in drop {
        let known = def
            .ordered_indexes
            .iter()
            .zip(&table.metadata.indexes)
            .any(|(i, k)| *k != IndexKind::Primary && i.name.eq_ignore_ascii_case(name));
        if !known {
            return Err(SqlError::new(
                1091,
                format!("Can't DROP '{name}'; check that column/key exists"),
            ));
        }
    }
    let mut new_table = NewTable {
        columns: def.columns.clone(),
        metadata: table.metadata.columns.clone(),
        primary_key: Some(def.primary_key.clone()),
        indexes: def
            .ordered_indexes
            .iter()
            .zip(&table.metadata.indexes)
            .filter(|(i, kind)| {
                **kind != IndexKind::Primary
                    && !drop.iter().any(|d| d.eq_ignore_ascii_case(&i.name))
            })
            .map(|(i, k)| (i.clone(), *k))
            .collect(),
    };
    for (name, columns, unique) in add {
        add_index(&mut new_table, name.clone(), columns.clone(), *unique)?;
    }
    let mut ordered = vec![IndexDef {
        name: PRIMARY_INDEX_NAME.into(),
        columns: def.primary_key.clone(),
        unique: false,
    }];
    let mut kinds = vec![IndexKind::Primary];
    for (i, k) in new_table.indexes {
        ordered.push(i);
        kinds.push(k);
    }
    let new_def = TableDef::new(
        &def.name,
        def.columns.clone(),
        def.primary_key.clone(),
        ordered,
    )
    .map_err(schema_error)?;
    let mut options = table.route.options.clone();
    let mut metadata = table.metadata.clone();
    metadata.indexes = kinds;
    options.sql_metadata = metadata.encode();
    rebuild(session, table, new_def, options)
}

/// ALTER TABLE: RENAME, ADD INDEX/KEY/UNIQUE, DROP INDEX/KEY. Index
/// changes rebuild the table (see `rebuild`); other changes are refused.
fn alter_table(session: &mut Session, alter: &ast::AlterTable) -> StatementResult {
    let mut table = session.table_by_object_name(&alter.name)?;
    let mut add = Vec::new();
    let mut drop = Vec::new();
    let mut rename = None;
    for operation in &alter.operations {
        match operation {
            ast::AlterTableOperation::RenameTable { table_name } => {
                let (ast::RenameTableNameKind::As(name) | ast::RenameTableNameKind::To(name)) =
                    table_name;
                rename = Some(name.clone());
            }
            ast::AlterTableOperation::AddConstraint { constraint, .. } => match constraint {
                ast::TableConstraint::Index(index) => add.push((
                    index.name.as_ref().map(|i| i.value.clone()),
                    index_columns(&table.def().columns, &index.columns)?,
                    false,
                )),
                ast::TableConstraint::Unique(unique) => add.push((
                    unique
                        .index_name
                        .as_ref()
                        .or(unique.name.as_ref())
                        .map(|i| i.value.clone()),
                    index_columns(&table.def().columns, &unique.columns)?,
                    true,
                )),
                other => return Err(SqlError::unsupported(format!("ALTER TABLE ADD {other}"))),
            },
            ast::AlterTableOperation::DropIndex { name } => drop.push(name.value.clone()),
            other => return Err(SqlError::unsupported(format!("ALTER TABLE {other}"))),
        }
    }
    if !add.is_empty() || !drop.is_empty() {
        change_indexes(session, &table, &add, &drop)?;
        table = session.table_by_object_name(&alter.name)?;
    }
    if let Some(to) = rename {
        let from = ast::ObjectName::from(vec![
            ast::Ident::new(table.database.clone()),
            ast::Ident::new(table.name.clone()),
        ]);
        rename_table(session, &from, &to)?;
    }
    Ok(Outcome::done(0))
}

/// ALTER TABLE t PARTITION BY KEY (...) [PARTITIONS n]: the table is
/// rebuilt with the new distribution key (hashed in primary-key order, as
/// NDB does), its rows moving to their new partitions.
pub fn alter_partitioning(
    session: &mut Session,
    name: &ast::ObjectName,
    partitioning: &Partitioning,
) -> StatementResult {
    let table = session.table_by_object_name(name)?;
    let def = table.def().clone();
    let mut key = Vec::with_capacity(partitioning.columns.len());
    for column in &partitioning.columns {
        let id = def.column_id(column).ok_or_else(|| {
            SqlError::new(
                1488,
                format!(
                    "Field in list of fields for partition function not found in table: '{column}'"
                ),
            )
        })?;
        key.push(id);
    }
    key.sort_by_key(|id| {
        def.primary_key
            .iter()
            .position(|k| k == id)
            .unwrap_or(usize::MAX)
    });
    let mut options = table.route.options.clone();
    options.distribution_key = key;
    options.partitions = partitioning.partitions;
    options.validate_for(&def).map_err(schema_error)?;
    rebuild(session, &table, def, options)?;
    Ok(Outcome::done(0))
}

/// Replaces `table` by a table of `def` holding the same rows: they are
/// copied into a new table, the old table is dropped and the new one
/// takes its name.
fn rebuild(
    session: &mut Session,
    table: &Arc<SqlTable>,
    def: TableDef,
    options: TableOptions,
) -> Result<(), SqlError> {
    let cluster = cluster(session);
    let temporary_name = catalog::dictionary_name(
        &table.database,
        &format!("#sql-{}-{}", session.connection_id, table.route.id),
    );
    let mut temporary = def.clone();
    temporary.name = temporary_name.clone();
    cluster
        .create_table(&temporary, &options)
        .map_err(crate::session::cluster_error)?;
    let copied = (|| {
        let temporary_route = session
            .native
            .table(&temporary_name)
            .map_err(crate::session::cluster_error)?;
        copy_rows(session, &table.route, &temporary_route)?;
        // The counter continues where the old table's was.
        if table.auto_increment.is_some()
            && let Ok(next) = session.native.auto_increment(&table.route)
        {
            session
                .native
                .raise_auto_increment(&temporary_route, next.saturating_sub(1))
                .map_err(crate::session::cluster_error)?;
        }
        Ok::<_, SqlError>(())
    })();
    if let Err(error) = copied {
        // The old table is untouched; the half-filled copy goes.
        if let Err(e) = cluster.drop_table(&temporary_name) {
            session.note(
                WarningLevel::Warning,
                1296,
                format!("the copy {temporary_name} was left behind: {e}"),
            );
        }
        return Err(error);
    }
    cluster
        .drop_table(&table.route.name)
        .map_err(crate::session::cluster_error)?;
    cluster
        .rename_table(&temporary_name, &def.name)
        .map_err(crate::session::cluster_error)?;
    session.forget_tables();
    Ok(())
}

/// RENAME TABLE `from` TO `to` (across databases too).
fn rename_table(
    session: &mut Session,
    from: &ast::ObjectName,
    to: &ast::ObjectName,
) -> Result<(), SqlError> {
    let (from_database, from_table) = session.resolve_name(from)?;
    let (to_database, to_table) = session.resolve_name(to)?;
    catalog::check_identifier(&to_table, "table")?;
    if !database_exists(session, &to_database)? {
        return Err(SqlError::new(
            1049,
            format!("Unknown database '{to_database}'"),
        ));
    }
    let result = cluster(session).rename_table(
        &catalog::dictionary_name(&from_database, &from_table),
        &catalog::dictionary_name(&to_database, &to_table),
    );
    session.forget_tables();
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.mysql_code == 1146 => Err(SqlError::new(
            1146,
            format!("Table '{from_database}.{from_table}' doesn't exist"),
        )),
        Err(e) if e.mysql_code == 1050 => Err(SqlError::new(
            1050,
            format!("Table '{to_table}' already exists"),
        )),
        Err(e) => Err(crate::session::cluster_error(e)),
    }
}

fn copy_rows(
    session: &mut Session,
    from: &Arc<shoal_client::TableRoute>,
    to: &Arc<shoal_client::TableRoute>,
) -> Result<(), SqlError> {
    let mut reader = session
        .native
        .start_transaction(None)
        .map_err(crate::session::cluster_error)?;
    let scan = session
        .native
        .scan(&mut reader, from, &shoal_client::ScanOptions::default())
        .map_err(crate::session::cluster_error)?;
    let mut writer = session
        .native
        .start_transaction(None)
        .map_err(crate::session::cluster_error)?;
    let mut pending = 0;
    loop {
        let row = session
            .native
            .next_row(&scan)
            .map_err(crate::session::cluster_error)?;
        let Some(row) = row else {
            break;
        };
        writer
            .insert(to, &row.values)
            .map_err(crate::session::cluster_error)?;
        pending += 1;
        if pending == COPY_BATCH_ROWS {
            session
                .native
                .execute(&mut writer, ExecuteEnd::Commit)
                .map_err(crate::session::cluster_error)?;
            writer = session
                .native
                .start_transaction(None)
                .map_err(crate::session::cluster_error)?;
            pending = 0;
        }
    }
    session
        .native
        .close_scan(scan)
        .map_err(crate::session::cluster_error)?;
    session
        .native
        .execute(&mut reader, ExecuteEnd::Commit)
        .map_err(crate::session::cluster_error)?;
    if pending > 0 {
        session
            .native
            .execute(&mut writer, ExecuteEnd::Commit)
            .map_err(crate::session::cluster_error)?;
    }
    Ok(())
}

// ---- SHOW CREATE TABLE ----

/// MySQL 8.0's name of a column type (lower case, as SHOW CREATE TABLE).
pub fn type_text(column_type: &ColumnType) -> String {
    use ColumnType::*;
    let unsigned = |u: &bool| if *u { " unsigned" } else { "" };
    match column_type {
        TinyInt { unsigned: u } => format!("tinyint{}", unsigned(u)),
        SmallInt { unsigned: u } => format!("smallint{}", unsigned(u)),
        MediumInt { unsigned: u } => format!("mediumint{}", unsigned(u)),
        Int { unsigned: u } => format!("int{}", unsigned(u)),
        BigInt { unsigned: u } => format!("bigint{}", unsigned(u)),
        Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        Float => "float".into(),
        Double => "double".into(),
        Char { length, .. } => format!("char({length})"),
        Varchar { length, .. } => format!("varchar({length})"),
        Binary { length } => format!("binary({length})"),
        Varbinary { length } => format!("varbinary({length})"),
        Date => "date".into(),
        Datetime { fsp: 0 } => "datetime".into(),
        Datetime { fsp } => format!("datetime({fsp})"),
        Timestamp { fsp: 0 } => "timestamp".into(),
        Timestamp { fsp } => format!("timestamp({fsp})"),
        Time { fsp: 0 } => "time".into(),
        Time { fsp } => format!("time({fsp})"),
        Year => "year".into(),
        Bit { width } => format!("bit({width})"),
        Enum { variants } => format!(
            "enum({})",
            variants
                .iter()
                .map(|v| quote_string(v))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Blob { length_max } => match length_max {
            0..=255 => "tinyblob".into(),
            256..=65_535 => "blob".into(),
            65_536..=16_777_215 => "mediumblob".into(),
            _ => "longblob".into(),
        },
        Text { length_max, .. } => match length_max {
            0..=255 => "tinytext".into(),
            256..=65_535 => "text".into(),
            65_536..=16_777_215 => "mediumtext".into(),
            _ => "longtext".into(),
        },
    }
}

/// A string literal as MySQL prints one: single quotes, `'` doubled,
/// backslashes escaped.
pub fn quote_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// An identifier in backquotes, ` doubled.
pub fn quote_identifier(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The text of SHOW CREATE TABLE.
pub fn show_create_table(table: &SqlTable) -> String {
    let def = table.def();
    let table_collation = Collation::Utf8mb4AiCi;
    let mut lines = Vec::new();
    for (position, column) in table.visible() {
        let metadata = &table.metadata.columns[position];
        let type_name = if metadata.boolean {
            "tinyint(1)".to_string()
        } else if metadata.unsigned {
            format!("{} unsigned", type_text(&column.column_type))
        } else {
            type_text(&column.column_type)
        };
        let mut line = format!("  {} {type_name}", quote_identifier(&column.name));
        let collation = column.column_type.collation();
        if collation != Collation::Binary && collation != table_collation {
            if collation.charset_name() != table_collation.charset_name() {
                line.push_str(&format!(" CHARACTER SET {}", collation.charset_name()));
            }
            line.push_str(&format!(" COLLATE {}", collation.name()));
        }
        if !column.nullable {
            line.push_str(" NOT NULL");
        }
        match &metadata.default {
            ColumnDefault::Text(text) => {
                let numeric = matches!(
                    column.column_type,
                    ColumnType::TinyInt { .. }
                        | ColumnType::SmallInt { .. }
                        | ColumnType::MediumInt { .. }
                        | ColumnType::Int { .. }
                        | ColumnType::BigInt { .. }
                        | ColumnType::Decimal { .. }
                        | ColumnType::Float
                        | ColumnType::Double
                );
                let _ = numeric;
                line.push_str(&format!(" DEFAULT {}", quote_string(text)));
            }
            ColumnDefault::CurrentTimestamp => line.push_str(" DEFAULT CURRENT_TIMESTAMP"),
            ColumnDefault::Null => line.push_str(" DEFAULT NULL"),
            ColumnDefault::None if column.nullable && !column.column_type.is_blob() => {
                line.push_str(" DEFAULT NULL")
            }
            ColumnDefault::None => {}
        }
        if metadata.on_update_current_timestamp {
            line.push_str(" ON UPDATE CURRENT_TIMESTAMP");
        }
        if metadata.auto_increment {
            line.push_str(" AUTO_INCREMENT");
        }
        if !metadata.comment.is_empty() {
            line.push_str(&format!(" COMMENT {}", quote_string(&metadata.comment)));
        }
        lines.push(line);
    }
    let key_list = |columns: &[ColumnId]| {
        columns
            .iter()
            .map(|&c| quote_identifier(&def.columns[c as usize].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    if table.hidden_primary_key().is_none() {
        lines.push(format!("  PRIMARY KEY ({})", key_list(&def.primary_key)));
    }
    for (index, kind) in def.ordered_indexes.iter().zip(&table.metadata.indexes) {
        match kind {
            IndexKind::Primary => {}
            IndexKind::Unique => lines.push(format!(
                "  UNIQUE KEY {} ({})",
                quote_identifier(&index.name),
                key_list(&index.columns)
            )),
            IndexKind::Key => lines.push(format!(
                "  KEY {} ({})",
                quote_identifier(&index.name),
                key_list(&index.columns)
            )),
        }
    }
    let mut text = format!(
        "CREATE TABLE {} (\n{}\n) ENGINE=ndbcluster DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci",
        quote_identifier(&table.name),
        lines.join(",\n")
    );
    let options = &table.route.options;
    let default_options = TableOptions::default();
    let mut comment = table.metadata.comment.clone();
    let options_differ = options.read_backup != default_options.read_backup
        || options.fully_replicated
        || options.partition_balance != default_options.partition_balance
        || options.nologging;
    if options_differ && !comment.contains("NDB_TABLE=") {
        if !comment.is_empty() {
            comment.push(' ');
        }
        comment.push_str(&options.to_ndb_table_comment());
    }
    if !comment.is_empty() {
        text.push_str(&format!(" COMMENT={}", quote_string(&comment)));
    }
    if !options.distribution_key.is_empty() || options.partitions.is_some() {
        let columns = schema::distribution::distribution_key_columns(def, options);
        text.push_str(&format!(
            "\n/*!50100 PARTITION BY KEY ({})",
            key_list(columns)
        ));
        if let Some(n) = options.partitions {
            text.push_str(&format!("\nPARTITIONS {n}"));
        }
        text.push_str(" */");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collations_map_from_names() {
        assert_eq!(
            collation_of(None, None, Collation::Utf8mb4AiCi).unwrap(),
            Collation::Utf8mb4AiCi
        );
        assert_eq!(
            collation_of(Some("latin1"), None, Collation::Utf8mb4AiCi).unwrap(),
            Collation::Latin1Ci
        );
        assert_eq!(
            collation_of(None, Some("utf8mb4_bin"), Collation::Latin1Ci).unwrap(),
            Collation::Utf8mb4Bin
        );
        assert_eq!(
            collation_of(Some("klingon"), None, Collation::Utf8mb4AiCi)
                .unwrap_err()
                .code,
            1115
        );
        assert_eq!(
            collation_of(None, Some("nope_ci"), Collation::Utf8mb4AiCi)
                .unwrap_err()
                .code,
            1273
        );
    }

    #[test]
    fn strings_and_identifiers_are_quoted_as_mysql_prints_them() {
        assert_eq!(quote_string("it's a \\ test"), "'it''s a \\\\ test'");
        assert_eq!(quote_identifier("a`b"), "`a``b`");
    }
}
