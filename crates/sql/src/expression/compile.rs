//! From sqlparser's AST to the typed tree: name resolution, literals,
//! operators, and MySQL's static result types.

use super::cast;
use super::functions;
use super::{
    ArithmeticOperator, BitOperator, CONNECTION_COLLATION, Coercibility, ComparisonOperator,
    Expression, LogicalOperator, Node, NumericClass, Scope,
};
use crate::convert::error;
use crate::error::SqlError;
use crate::temporal::{self, IntervalUnit};
use crate::value::{
    Conversion, DECIMAL_SCALE_MAX, DIV_PRECISION_INCREMENT, Decimal, NOT_FIXED_DECIMALS, SqlType,
    SqlValue,
};
use mysql_protocol::FieldType;
use schema::Collation;
use sqlparser::ast::{self, BinaryOperator, DateTimeField, Expr, UnaryOperator, Value};

/// MySQL's longest integer display (a sign and 20 digits).
const INTEGER_LENGTH_MAX: u32 = 21;
/// MySQL's largest DECIMAL precision.
const DECIMAL_PRECISION_MAX: u32 = 65;
/// Nesting deeper than this is refused (1436-like) rather than risking the stack.
const NESTING_DEPTH_MAX: usize = 200;

/// Compiles one expression; holds the scope and the count of bare `?`.
pub(crate) struct Compiler<'a> {
    pub(crate) scope: &'a dyn Scope,
    bare_placeholders: usize,
    depth: usize,
}

impl<'a> Compiler<'a> {
    pub(crate) fn new(scope: &'a dyn Scope) -> Compiler<'a> {
        Compiler {
            scope,
            bare_placeholders: 0,
            depth: 0,
        }
    }

    pub(crate) fn compile(&mut self, expr: &Expr) -> Result<Expression, SqlError> {
        self.depth += 1;
        if self.depth > NESTING_DEPTH_MAX {
            self.depth -= 1;
            return Err(error(
                1436,
                "Thread stack overrun: the expression is nested too deeply",
            ));
        }
        let result = self.compile_inner(expr);
        self.depth -= 1;
        result
    }

    fn compile_inner(&mut self, expr: &Expr) -> Result<Expression, SqlError> {
        match expr {
            Expr::Nested(inner) => self.compile(inner),
            Expr::Value(value) => self.value(&value.value),
            Expr::Identifier(ident) => self.identifier(ident),
            Expr::CompoundIdentifier(parts) => self.compound_identifier(parts),
            Expr::Prefixed { prefix, value } => introducer(&prefix.value, value),
            Expr::TypedString(typed) => typed_literal(&typed.data_type, &typed.value.value),
            Expr::UnaryOp { op, expr } => self.unary(*op, expr),
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right),
            Expr::IsNull(operand) => self.is_null(operand, false),
            Expr::IsNotNull(operand) => self.is_null(operand, true),
            Expr::IsUnknown(operand) => self.is_null(operand, false),
            Expr::IsNotUnknown(operand) => self.is_null(operand, true),
            Expr::IsTrue(operand) => self.is_boolean(operand, true, false),
            Expr::IsNotTrue(operand) => self.is_boolean(operand, true, true),
            Expr::IsFalse(operand) => self.is_boolean(operand, false, false),
            Expr::IsNotFalse(operand) => self.is_boolean(operand, false, true),
            Expr::IsDistinctFrom(left, right) => {
                let equal = self.comparison(left, ComparisonOperator::NullSafeEqual, right)?;
                Ok(not(equal))
            }
            Expr::IsNotDistinctFrom(left, right) => {
                self.comparison(left, ComparisonOperator::NullSafeEqual, right)
            }
            Expr::In {
                expr,
                target,
                negated,
                ..
            } => match target {
                ast::InTarget::List(list) => self.in_list(expr, list, *negated),
                _ => Err(SqlError::unsupported("subqueries in IN in this context")),
            },
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => self.between(expr, low, high, *negated),
            Expr::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => self.like(expr, pattern, escape_char.as_deref(), *negated),
            Expr::RLike {
                negated,
                expr,
                pattern,
                ..
            } => self.regexp(expr, pattern, *negated),
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(operand.as_deref(), conditions, else_result.as_deref()),
            Expr::Cast {
                kind: ast::CastKind::Cast,
                expr: operand,
                data_type,
                format: None,
            } => {
                let operand = self.compile(operand)?;
                let text = format!("cast({} as {})", expr_text(expr_of_cast(expr)), data_type)
                    .to_ascii_lowercase();
                cast::compile_cast(operand, data_type, text)
            }
            Expr::Convert {
                is_try: false,
                expr: operand,
                data_type,
                charset,
                styles,
                ..
            } if styles.is_empty() => {
                let compiled = self.compile(operand)?;
                match (data_type, charset) {
                    (Some(data_type), None) => {
                        let text = format!("cast({} as {})", expr_text(operand), data_type)
                            .to_ascii_lowercase();
                        cast::compile_cast(compiled, data_type, text)
                    }
                    (None, Some(charset)) => {
                        cast::compile_convert_using(compiled, &charset.to_string())
                    }
                    (Some(data_type), Some(charset)) => {
                        let text = format!(
                            "cast({} as {} charset {})",
                            expr_text(operand),
                            data_type,
                            charset
                        )
                        .to_ascii_lowercase();
                        cast::compile_cast_with_charset(
                            compiled,
                            data_type,
                            &charset.to_string(),
                            text,
                        )
                    }
                    _ => Err(SqlError::syntax(format!("near '{expr}'"))),
                }
            }
            Expr::Collate { expr, collation } => {
                let mut compiled = self.compile(expr)?;
                let name = collation.to_string();
                let name = name.trim_matches(|character| matches!(character, '`' | '\'' | '"'));
                let Some(collation) = collation_named(name) else {
                    return Err(error(1273, format!("Unknown collation: '{name}'")));
                };
                if compiled.sql_type.is_string_type() || compiled.dynamic {
                    if compiled.sql_type.collation.charset_name() != collation.charset_name()
                        && compiled.sql_type.collation != Collation::Binary
                    {
                        return Err(error(
                            1253,
                            format!(
                                "COLLATION '{}' is not valid for CHARACTER SET '{}'",
                                collation.name(),
                                compiled.sql_type.collation.charset_name()
                            ),
                        ));
                    }
                } else {
                    // A number or date under COLLATE is its text in that collation.
                    compiled = cast::to_string_expression(compiled, collation);
                }
                compiled.sql_type.collation = collation;
                compiled.coercibility = Coercibility::Explicit;
                Ok(compiled)
            }
            Expr::Extract { field, expr, .. } => {
                let unit = interval_unit(field)?;
                let operand = self.compile(expr)?;
                functions::compile_extract(unit, operand)
            }
            Expr::Ceil { expr, field } => self.ceil_or_floor(expr, field, "CEILING"),
            Expr::Floor { expr, field } => self.ceil_or_floor(expr, field, "FLOOR"),
            Expr::Position { expr, r#in } => {
                let needle = self.compile(expr)?;
                let haystack = self.compile(r#in)?;
                functions::compile_named(self, "LOCATE", vec![needle, haystack])
            }
            Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut arguments = vec![self.compile(expr)?];
                match substring_from {
                    Some(from) => arguments.push(self.compile(from)?),
                    None => arguments.push(literal_int(1)),
                }
                if let Some(length) = substring_for {
                    arguments.push(self.compile(length)?);
                }
                functions::compile_named(self, "SUBSTRING", arguments)
            }
            Expr::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => {
                let operand = self.compile(expr)?;
                let remove = trim_what
                    .as_deref()
                    .map(|what| self.compile(what))
                    .transpose()?;
                functions::compile_trim(*trim_where, operand, remove)
            }
            Expr::Function(call) => self.function(call),
            Expr::Interval(_) => Err(SqlError::syntax(format!(
                "near '{expr}': INTERVAL is allowed only with + and - and in DATE_ADD()"
            ))),
            Expr::Tuple(items) if items.len() == 1 => self.compile(&items[0]),
            Expr::Tuple(_) => Err(error(1241, "Operand should contain 1 column(s)")),
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::AnyOp { .. } | Expr::AllOp { .. } => {
                Err(SqlError::unsupported("subqueries in this context"))
            }
            Expr::Wildcard(_) | Expr::QualifiedWildcard(..) => Err(SqlError::syntax(
                "near '*': a wildcard is not an expression",
            )),
            other => Err(SqlError::unsupported(format!("the expression '{other}'"))),
        }
    }

    fn value(&mut self, value: &Value) -> Result<Expression, SqlError> {
        match value {
            Value::Number(text, _) => number_literal(text),
            Value::SingleQuotedString(text)
            | Value::DoubleQuotedString(text)
            | Value::NationalStringLiteral(text)
            | Value::EscapedStringLiteral(text) => Ok(string_literal(
                text.as_bytes().to_vec(),
                self.scope.connection_collation(),
            )),
            Value::HexStringLiteral(digits) => hex_literal(digits),
            Value::SingleQuotedByteStringLiteral(bits)
            | Value::DoubleQuotedByteStringLiteral(bits) => bit_literal(bits),
            Value::Boolean(value) => Ok(literal_int(i64::from(*value))),
            Value::Null => Ok(null_literal()),
            Value::Placeholder(text)
                if text.starts_with(crate::statement_cache::LITERAL_MARKER) =>
            {
                // A literal the statement cache took out: compiled as the
                // literal itself.
                crate::statement_cache::with_literal(text, |literal| self.value(literal))
                    .ok_or_else(|| SqlError::syntax(format!("near '{text}'")))?
            }
            Value::Placeholder(text) => self.placeholder(text),
            other => Err(SqlError::syntax(format!("near '{other}'"))),
        }
    }

    fn placeholder(&mut self, text: &str) -> Result<Expression, SqlError> {
        let number = text.get(1..).filter(|digits| !digits.is_empty());
        let index = match number {
            None if text == "?" => {
                self.bare_placeholders += 1;
                self.bare_placeholders - 1
            }
            Some(digits) if digits.bytes().all(|byte| byte.is_ascii_digit()) => {
                match digits.parse::<usize>() {
                    Ok(number) if number >= 1 => number - 1,
                    _ => return Err(SqlError::syntax(format!("near '{text}'"))),
                }
            }
            _ => return Err(SqlError::syntax(format!("near '{text}'"))),
        };
        Ok(Expression {
            node: Node::Parameter(index),
            sql_type: SqlType::string(0, CONNECTION_COLLATION),
            constant: false,
            coercibility: Coercibility::Coercible,
            dynamic: true,
            hex_literal: false,
            enum_members: None,
        })
    }

    fn identifier(&mut self, ident: &ast::Ident) -> Result<Expression, SqlError> {
        let name = ident.value.as_str();
        if ident.quote_style.is_none() {
            if let Some(variable) = name.strip_prefix("@@") {
                return Ok(system_variable(variable, false));
            }
            if let Some(variable) = name.strip_prefix('@') {
                return Ok(user_variable(variable));
            }
            if let Some(function) = keyword_function(name) {
                return functions::compile_named(self, function, Vec::new());
            }
        }
        let (slot, sql_type) = self.scope.column(None, name)?;
        Ok(column_expression(slot, sql_type, self.scope))
    }

    fn compound_identifier(&mut self, parts: &[ast::Ident]) -> Result<Expression, SqlError> {
        let first = parts.first().map(|part| part.value.as_str()).unwrap_or("");
        if parts.first().is_some_and(|part| part.quote_style.is_none()) && first.starts_with('@') {
            if parts.len() == 2 && first.starts_with("@@") {
                let global = match first[2..].to_ascii_lowercase().as_str() {
                    "global" => true,
                    "session" | "local" => false,
                    _ => {
                        return Err(SqlError::unsupported(format!(
                            "structured system variable '{first}.{}'",
                            parts[1].value
                        )));
                    }
                };
                return Ok(system_variable(&parts[1].value, global));
            }
            return Err(SqlError::syntax(format!("near '{first}'")));
        }
        match parts {
            [table, column] => {
                let (slot, sql_type) = self.scope.column(Some(&table.value), &column.value)?;
                Ok(column_expression(slot, sql_type, self.scope))
            }
            [database, table, column] => {
                let qualifier = format!("{}.{}", database.value, table.value);
                let (slot, sql_type) = self.scope.column(Some(&qualifier), &column.value)?;
                Ok(column_expression(slot, sql_type, self.scope))
            }
            _ => {
                let text = parts
                    .iter()
                    .map(|part| part.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                Err(error(
                    1054,
                    format!("Unknown column '{text}' in 'field list'"),
                ))
            }
        }
    }

    fn unary(&mut self, operator: UnaryOperator, operand: &Expr) -> Result<Expression, SqlError> {
        match operator {
            UnaryOperator::Minus => {
                if let Expr::Value(value) = operand
                    && let Value::Number(text, _) = &value.value
                {
                    return negative_number_literal(text);
                }
                let compiled = numeric_operand(self.compile(operand)?);
                Ok(negate(compiled, format!("-{}", expr_text(operand))))
            }
            UnaryOperator::Plus => self.compile(operand),
            UnaryOperator::Not | UnaryOperator::BangNot => Ok(not(self.compile(operand)?)),
            UnaryOperator::BitwiseNot => {
                let compiled = numeric_operand(self.compile(operand)?);
                let not_null = !compiled.sql_type.is_nullable();
                let sql_type = SqlType::integer(INTEGER_LENGTH_MAX, true).with_not_null(not_null);
                Ok(derived(
                    Node::BitNot(Box::new(compiled.clone())),
                    sql_type,
                    &[&compiled],
                ))
            }
            other => Err(SqlError::unsupported(format!("the operator '{other}'"))),
        }
    }

    fn binary(
        &mut self,
        left: &Expr,
        operator: &BinaryOperator,
        right: &Expr,
    ) -> Result<Expression, SqlError> {
        use BinaryOperator as B;
        match operator {
            B::Plus | B::Minus => {
                if let Expr::Interval(interval) = right {
                    let operand = self.compile(left)?;
                    return self.date_add(operand, interval, *operator == B::Minus);
                }
                if let Expr::Interval(interval) = left {
                    if *operator == B::Minus {
                        return Err(SqlError::syntax(format!("near '{right}'")));
                    }
                    let operand = self.compile(right)?;
                    return self.date_add(operand, interval, false);
                }
                let operator = if *operator == B::Plus {
                    ArithmeticOperator::Add
                } else {
                    ArithmeticOperator::Subtract
                };
                self.arithmetic(left, operator, right)
            }
            B::Multiply => self.arithmetic(left, ArithmeticOperator::Multiply, right),
            B::Divide => self.arithmetic(left, ArithmeticOperator::Divide, right),
            B::Modulo => self.arithmetic(left, ArithmeticOperator::Modulo, right),
            B::MyIntegerDivide | B::DuckIntegerDivide => {
                self.arithmetic(left, ArithmeticOperator::IntegerDivide, right)
            }
            B::Eq => self.comparison(left, ComparisonOperator::Equal, right),
            B::Spaceship => self.comparison(left, ComparisonOperator::NullSafeEqual, right),
            B::NotEq => self.comparison(left, ComparisonOperator::NotEqual, right),
            B::Lt => self.comparison(left, ComparisonOperator::Less, right),
            B::LtEq => self.comparison(left, ComparisonOperator::LessOrEqual, right),
            B::Gt => self.comparison(left, ComparisonOperator::Greater, right),
            B::GtEq => self.comparison(left, ComparisonOperator::GreaterOrEqual, right),
            B::And => self.logical(left, LogicalOperator::And, right),
            // `||` is OR under MySQL's default sql_mode (no PIPES_AS_CONCAT).
            B::Or | B::StringConcat => self.logical(left, LogicalOperator::Or, right),
            B::Xor => self.logical(left, LogicalOperator::Xor, right),
            B::BitwiseAnd => self.bitwise(left, BitOperator::And, right),
            B::BitwiseOr => self.bitwise(left, BitOperator::Or, right),
            B::BitwiseXor | B::PGBitwiseXor => self.bitwise(left, BitOperator::Xor, right),
            B::PGBitwiseShiftLeft => self.bitwise(left, BitOperator::ShiftLeft, right),
            B::PGBitwiseShiftRight => self.bitwise(left, BitOperator::ShiftRight, right),
            B::Regexp => self.regexp(left, right, false),
            B::Assignment => self.assignment(left, right),
            other => Err(SqlError::unsupported(format!("the operator '{other}'"))),
        }
    }

    /// `@name := value`: the value's type; never a constant, since it
    /// changes the session.
    fn assignment(&mut self, target: &Expr, value: &Expr) -> Result<Expression, SqlError> {
        let name = match target {
            Expr::Identifier(ident) if ident.quote_style.is_none() => ident
                .value
                .strip_prefix('@')
                .filter(|name| !name.starts_with('@') && !name.is_empty()),
            _ => None,
        };
        let Some(name) = name else {
            return Err(SqlError::syntax(format!("near ':= {value}'")));
        };
        let name = name
            .trim_matches(|character| matches!(character, '`' | '\'' | '"'))
            .to_ascii_lowercase();
        let value = self.compile(value)?;
        let mut expression = value.clone();
        expression.node = Node::AssignUserVariable {
            name,
            value: Box::new(value),
        };
        expression.constant = false;
        expression.hex_literal = false;
        Ok(expression)
    }

    fn arithmetic(
        &mut self,
        left_expr: &Expr,
        operator: ArithmeticOperator,
        right_expr: &Expr,
    ) -> Result<Expression, SqlError> {
        let left = numeric_operand(self.compile(left_expr)?);
        let right = numeric_operand(self.compile(right_expr)?);
        let symbol = match operator {
            ArithmeticOperator::Add => "+",
            ArithmeticOperator::Subtract => "-",
            ArithmeticOperator::Multiply => "*",
            ArithmeticOperator::Divide => "/",
            ArithmeticOperator::IntegerDivide => "DIV",
            ArithmeticOperator::Modulo => "%",
        };
        let text = format!(
            "({} {symbol} {})",
            expr_text(left_expr),
            expr_text(right_expr)
        );
        Ok(arithmetic_expression(operator, left, right, text))
    }

    fn bitwise(
        &mut self,
        left: &Expr,
        operator: BitOperator,
        right: &Expr,
    ) -> Result<Expression, SqlError> {
        let left = numeric_operand(self.compile(left)?);
        let right = numeric_operand(self.compile(right)?);
        let not_null = !left.sql_type.is_nullable() && !right.sql_type.is_nullable();
        let sql_type = SqlType::integer(INTEGER_LENGTH_MAX, true).with_not_null(not_null);
        let children = [&left, &right];
        let node = Node::Bitwise {
            operator,
            left: Box::new(left.clone()),
            right: Box::new(right.clone()),
        };
        Ok(derived(node, sql_type, &children))
    }

    pub(crate) fn comparison(
        &mut self,
        left: &Expr,
        operator: ComparisonOperator,
        right: &Expr,
    ) -> Result<Expression, SqlError> {
        let left = self.compile(left)?;
        let right = self.compile(right)?;
        check_collation_mix(&[&left, &right], comparison_symbol(operator))?;
        Ok(comparison_expression(left, operator, right))
    }

    fn logical(
        &mut self,
        left: &Expr,
        operator: LogicalOperator,
        right: &Expr,
    ) -> Result<Expression, SqlError> {
        let left = condition_operand(self.compile(left)?);
        let right = condition_operand(self.compile(right)?);
        let not_null = !left.sql_type.is_nullable() && !right.sql_type.is_nullable();
        let sql_type = boolean_type(not_null);
        let children = [&left, &right];
        let node = Node::Logical {
            operator,
            left: Box::new(left.clone()),
            right: Box::new(right.clone()),
        };
        Ok(derived(node, sql_type, &children))
    }

    fn is_null(&mut self, operand: &Expr, negated: bool) -> Result<Expression, SqlError> {
        let operand = self.compile(operand)?;
        let children = [&operand];
        let node = Node::IsNull {
            operand: Box::new(operand.clone()),
            negated,
        };
        Ok(derived(node, boolean_type(true), &children))
    }

    fn is_boolean(
        &mut self,
        operand: &Expr,
        value: bool,
        negated: bool,
    ) -> Result<Expression, SqlError> {
        let operand = condition_operand(self.compile(operand)?);
        let children = [&operand];
        let node = Node::IsBoolean {
            operand: Box::new(operand.clone()),
            value,
            negated,
        };
        Ok(derived(node, boolean_type(true), &children))
    }

    fn in_list(
        &mut self,
        operand: &Expr,
        list: &[Expr],
        negated: bool,
    ) -> Result<Expression, SqlError> {
        let mut operand = self.compile(operand)?;
        let mut items = list
            .iter()
            .map(|item| self.compile(item))
            .collect::<Result<Vec<_>, _>>()?;
        if is_numeric_typed(&operand) {
            items = items.into_iter().map(numeric_operand).collect();
        } else if items.iter().all(is_numeric_typed) && !items.is_empty() {
            operand = numeric_operand(operand);
        }
        let mut collation_sources: Vec<&Expression> = vec![&operand];
        collation_sources.extend(items.iter());
        check_collation_mix(&collation_sources, "IN")?;
        let collation = aggregate_collation(&collation_sources);
        let not_null = !operand.sql_type.is_nullable()
            && items.iter().all(|item| !item.sql_type.is_nullable());
        let children: Vec<&Expression> = collation_sources;
        let constant = children.iter().all(|child| child.constant);
        let node = Node::In {
            operand: Box::new(operand.clone()),
            list: items.clone(),
            negated,
            collation,
        };
        let mut expression = derived(node, boolean_type(not_null), &[]);
        expression.constant = constant;
        Ok(expression)
    }

    fn between(
        &mut self,
        operand: &Expr,
        low: &Expr,
        high: &Expr,
        negated: bool,
    ) -> Result<Expression, SqlError> {
        let mut operand = self.compile(operand)?;
        let mut low = self.compile(low)?;
        let mut high = self.compile(high)?;
        if is_numeric_typed(&operand) {
            low = numeric_operand(low);
            high = numeric_operand(high);
        } else if is_numeric_typed(&low) && is_numeric_typed(&high) {
            operand = numeric_operand(operand);
        }
        check_collation_mix(&[&operand, &low, &high], "between")?;
        let collation = aggregate_collation(&[&operand, &low, &high]);
        let not_null = [&operand, &low, &high]
            .iter()
            .all(|child| !child.sql_type.is_nullable());
        let children = [&operand, &low, &high];
        let node = Node::Between {
            operand: Box::new(operand.clone()),
            low: Box::new(low.clone()),
            high: Box::new(high.clone()),
            negated,
            collation,
        };
        Ok(derived(node, boolean_type(not_null), &children))
    }

    fn like(
        &mut self,
        operand: &Expr,
        pattern: &Expr,
        escape: Option<&Expr>,
        negated: bool,
    ) -> Result<Expression, SqlError> {
        let operand = self.compile(operand)?;
        let pattern = self.compile(pattern)?;
        let escape = escape.map(|escape| self.compile(escape)).transpose()?;
        check_collation_mix(&[&operand, &pattern], "like")?;
        let collation = aggregate_collation(&[&operand, &pattern]);
        let not_null = !operand.sql_type.is_nullable() && !pattern.sql_type.is_nullable();
        let mut children = vec![&operand, &pattern];
        if let Some(escape) = &escape {
            children.push(escape);
        }
        let node = Node::Like {
            operand: Box::new(operand.clone()),
            pattern: Box::new(pattern.clone()),
            escape: escape.clone().map(Box::new),
            negated,
            collation,
        };
        Ok(derived(node, boolean_type(not_null), &children))
    }

    fn regexp(
        &mut self,
        operand: &Expr,
        pattern: &Expr,
        negated: bool,
    ) -> Result<Expression, SqlError> {
        let operand = self.compile(operand)?;
        let pattern = self.compile(pattern)?;
        let collation = aggregate_collation(&[&operand, &pattern]);
        let not_null = !operand.sql_type.is_nullable() && !pattern.sql_type.is_nullable();
        let children = [&operand, &pattern];
        // A literal pattern is compiled now, so a bad one fails at once.
        let compiled = match pattern.literal() {
            Some(SqlValue::String(text)) => Some(Box::new(super::regexp::Regex::new(text)?)),
            _ => None,
        };
        let node = Node::Regexp {
            operand: Box::new(operand.clone()),
            pattern: Box::new(pattern.clone()),
            compiled,
            negated,
            case_insensitive: collation.is_case_insensitive(),
        };
        Ok(derived(node, boolean_type(not_null), &children))
    }

    fn case(
        &mut self,
        operand: Option<&Expr>,
        conditions: &[ast::CaseWhen],
        otherwise: Option<&Expr>,
    ) -> Result<Expression, SqlError> {
        let operand = operand.map(|operand| self.compile(operand)).transpose()?;
        let mut branches = Vec::with_capacity(conditions.len());
        for when in conditions {
            let condition = self.compile(&when.condition)?;
            // A searched CASE tests truth; a simple one compares values.
            let condition = if operand.is_none() {
                condition_operand(condition)
            } else {
                condition
            };
            let result = self.compile(&when.result)?;
            branches.push((condition, result));
        }
        let otherwise = otherwise
            .map(|otherwise| self.compile(otherwise))
            .transpose()?;
        let mut results: Vec<&Expression> = branches.iter().map(|(_, result)| result).collect();
        if let Some(otherwise) = &otherwise {
            results.push(otherwise);
        }
        let mut sql_type = aggregate_type(&results);
        let not_null =
            otherwise.is_some() && results.iter().all(|result| !result.sql_type.is_nullable());
        sql_type = sql_type.with_not_null(not_null);
        let collation = match &operand {
            Some(operand) => {
                let mut sources = vec![operand];
                sources.extend(branches.iter().map(|(condition, _)| condition));
                aggregate_collation(&sources)
            }
            None => Collation::Binary,
        };
        let mut children: Vec<&Expression> = Vec::new();
        if let Some(operand) = &operand {
            children.push(operand);
        }
        for (condition, result) in &branches {
            children.push(condition);
            children.push(result);
        }
        if let Some(otherwise) = &otherwise {
            children.push(otherwise);
        }
        let constant = children.iter().all(|child| child.constant);
        let coercibility = results
            .iter()
            .map(|result| result.coercibility)
            .min()
            .unwrap_or(Coercibility::Numeric);
        let node = Node::Case {
            operand: operand.clone().map(Box::new),
            branches: branches.clone(),
            otherwise: otherwise.clone().map(Box::new),
            collation,
        };
        let mut expression = derived(node, sql_type, &[]);
        expression.constant = constant;
        expression.coercibility = coercibility;
        Ok(expression)
    }

    fn ceil_or_floor(
        &mut self,
        operand: &Expr,
        field: &ast::CeilFloorKind,
        name: &str,
    ) -> Result<Expression, SqlError> {
        if !matches!(
            field,
            ast::CeilFloorKind::DateTimeField(DateTimeField::NoDateTime)
        ) {
            return Err(SqlError::syntax(format!("near '{operand}'")));
        }
        let operand = self.compile(operand)?;
        functions::compile_named(self, name, vec![operand])
    }

    pub(crate) fn date_add(
        &mut self,
        operand: Expression,
        interval: &ast::Interval,
        subtract: bool,
    ) -> Result<Expression, SqlError> {
        let unit = interval_unit_of(interval)?;
        let amount = self.compile(&interval.value)?;
        Ok(date_add_expression(operand, amount, unit, subtract))
    }

    fn function(&mut self, call: &ast::Function) -> Result<Expression, SqlError> {
        if call.over.is_some() {
            return Err(SqlError::unsupported("window functions"));
        }
        if call.filter.is_some() || !call.within_group.is_empty() || call.null_treatment.is_some() {
            return Err(SqlError::syntax(format!("near '{call}'")));
        }
        if super::aggregate::is_aggregate(call) {
            return match self.scope.aggregate(call) {
                Some((slot, sql_type)) => Ok(Expression {
                    node: Node::Aggregate(slot),
                    sql_type,
                    constant: false,
                    coercibility: Coercibility::Implicit,
                    dynamic: false,
                    hex_literal: false,
                    enum_members: None,
                }),
                None => Err(error(1111, "Invalid use of group function")),
            };
        }
        let name = match call.name.0.as_slice() {
            [ast::ObjectNamePart::Identifier(ident)] => ident.value.clone(),
            _ => {
                return Err(error(
                    1305,
                    format!("FUNCTION {} does not exist", call.name),
                ));
            }
        };
        let arguments: &[ast::FunctionArg] = match &call.args {
            ast::FunctionArguments::None => &[],
            ast::FunctionArguments::List(list) => {
                if list.duplicate_treatment.is_some() {
                    return Err(SqlError::syntax(format!("near '{call}'")));
                }
                if let Some(clause) = list.clauses.first() {
                    return Err(SqlError::syntax(format!("near '{clause}'")));
                }
                &list.args
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("subqueries in this context"));
            }
        };
        functions::compile_call(self, &name, arguments)
    }
}

// ---------------------------------------------------------------------------
// Small builders

/// An expression whose constancy and coercibility follow its children.
pub(crate) fn derived(node: Node, sql_type: SqlType, children: &[&Expression]) -> Expression {
    let constant = children.iter().all(|child| child.constant);
    let coercibility = if sql_type.is_string_type() {
        children
            .iter()
            .filter(|child| child.sql_type.is_string_type() || child.dynamic)
            .map(|child| child.coercibility)
            .min()
            .unwrap_or(Coercibility::Coercible)
    } else {
        Coercibility::Numeric
    };
    Expression {
        node,
        sql_type,
        constant,
        coercibility,
        dynamic: false,
        hex_literal: false,
        enum_members: None,
    }
}

pub(crate) fn literal(value: SqlValue, sql_type: SqlType) -> Expression {
    let coercibility = if sql_type.is_string_type() {
        Coercibility::Coercible
    } else {
        Coercibility::Numeric
    };
    Expression {
        node: Node::Literal(value),
        sql_type,
        constant: true,
        coercibility,
        dynamic: false,
        hex_literal: false,
        enum_members: None,
    }
}

pub(crate) fn literal_int(value: i64) -> Expression {
    let length = value.to_string().len() as u32;
    literal(
        SqlValue::Int(value),
        SqlType::integer(length, false).with_not_null(true),
    )
}

pub(crate) fn null_literal() -> Expression {
    let mut expression = literal(SqlValue::Null, SqlType::null());
    expression.coercibility = Coercibility::Numeric;
    expression
}

pub(crate) fn string_literal(bytes: Vec<u8>, collation: Collation) -> Expression {
    let characters = if collation.bytes_per_char_max() > 1 {
        schema::value::utf8_character_count(&bytes) as u32
    } else {
        bytes.len() as u32
    };
    literal(
        SqlValue::String(bytes),
        SqlType::string(characters, collation).with_not_null(true),
    )
}

fn column_expression(slot: usize, sql_type: SqlType, scope: &dyn Scope) -> Expression {
    let enum_members = if sql_type.flags & mysql_protocol::column::flags::ENUM != 0 {
        scope.enum_members(slot)
    } else {
        None
    };
    Expression {
        node: Node::Column(slot),
        sql_type,
        constant: false,
        coercibility: Coercibility::Implicit,
        dynamic: false,
        hex_literal: false,
        enum_members,
    }
}

/// MySQL's display length of an ENUM's index (at most 65535 members).
const ENUM_INDEX_LENGTH: u32 = 5;

/// An ENUM column in numeric context: its member's 1-based index (0 for
/// the empty string an invalid value is stored as).
fn enum_index_expression(column: Expression, members: std::sync::Arc<[String]>) -> Expression {
    let not_null = !column.sql_type.is_nullable();
    let sql_type = SqlType::integer(ENUM_INDEX_LENGTH, true).with_not_null(not_null);
    let children = [&column];
    derived(
        Node::EnumIndex {
            operand: Box::new(column.clone()),
            members,
        },
        sql_type,
        &children,
    )
}

fn system_variable(name: &str, global: bool) -> Expression {
    let lower = name.to_ascii_lowercase();
    let sql_type = match crate::variables::find(&lower).map(|variable| variable.default) {
        Some(SqlValue::Int(_) | SqlValue::UInt(_)) => SqlType::integer(INTEGER_LENGTH_MAX, false),
        Some(SqlValue::Double(_)) => SqlType::double(),
        Some(SqlValue::Decimal(value)) => SqlType::decimal(value.digit_count(), value.scale, false),
        _ => SqlType::string(1024, CONNECTION_COLLATION),
    };
    Expression {
        node: Node::SystemVariable {
            name: lower,
            global,
        },
        sql_type,
        constant: false,
        coercibility: Coercibility::SystemConstant,
        dynamic: false,
        hex_literal: false,
        enum_members: None,
    }
}

fn user_variable(name: &str) -> Expression {
    let name =
        name.trim_matches(|character| character == '`' || character == '\'' || character == '"');
    Expression {
        node: Node::UserVariable(name.to_ascii_lowercase()),
        sql_type: SqlType::long_string(CONNECTION_COLLATION),
        constant: false,
        coercibility: Coercibility::Implicit,
        dynamic: true,
        hex_literal: false,
        enum_members: None,
    }
}

/// MySQL keywords that call a function without parentheses.
fn keyword_function(name: &str) -> Option<&'static str> {
    const KEYWORDS: [&str; 8] = [
        "CURRENT_USER",
        "CURRENT_DATE",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "UTC_DATE",
        "UTC_TIMESTAMP",
    ];
    KEYWORDS
        .iter()
        .find(|keyword| keyword.eq_ignore_ascii_case(name))
        .copied()
}

pub(crate) fn boolean_type(not_null: bool) -> SqlType {
    SqlType::integer(1, false).with_not_null(not_null)
}

pub(crate) fn not(operand: Expression) -> Expression {
    let operand = condition_operand(operand);
    let not_null = !operand.sql_type.is_nullable();
    let children = [&operand];
    derived(
        Node::Not(Box::new(operand.clone())),
        boolean_type(not_null),
        &children,
    )
}

/// The text MySQL puts in messages about an expression (its SQL, lower-case keywords aside).
pub(crate) fn expr_text(expr: &Expr) -> String {
    expr.to_string()
}

fn expr_of_cast(expr: &Expr) -> &Expr {
    match expr {
        Expr::Cast { expr, .. } => expr,
        other => other,
    }
}

/// A number in numeric context: a hex or bit literal becomes its
/// unsigned integer (MySQL reads `0x41 + 0` as 65).
pub(crate) fn numeric_operand(mut expression: Expression) -> Expression {
    if let Some(members) = expression.enum_members.take() {
        return enum_index_expression(expression, members);
    }
    if !expression.hex_literal {
        return expression;
    }
    let Node::Literal(SqlValue::String(bytes)) = &expression.node else {
        return expression;
    };
    let significant = &bytes[bytes.iter().take_while(|&&byte| byte == 0).count()..];
    if significant.len() > 8 {
        let value = significant
            .iter()
            .fold(0f64, |value, &byte| value * 256.0 + f64::from(byte));
        return literal(
            SqlValue::Double(value),
            SqlType::double().with_not_null(true),
        );
    }
    let value = significant
        .iter()
        .fold(0u64, |value, &byte| value << 8 | u64::from(byte));
    literal(
        SqlValue::UInt(value),
        SqlType::integer(value.to_string().len() as u32, true).with_not_null(true),
    )
}

/// An operand whose truth is tested: an ENUM column is true by its
/// index (every member is), not by its text.
pub(crate) fn condition_operand(expression: Expression) -> Expression {
    if expression.enum_members.is_some() {
        numeric_operand(expression)
    } else {
        expression
    }
}

fn is_numeric_typed(expression: &Expression) -> bool {
    !expression.dynamic && !expression.hex_literal && expression.sql_type.is_numeric_type()
}

// ---------------------------------------------------------------------------
// Literals

fn digits_length(text: &str) -> u32 {
    text.len() as u32
}

pub(crate) fn number_literal(text: &str) -> Result<Expression, SqlError> {
    if text.contains(['e', 'E']) {
        let value: f64 = text
            .parse()
            .map_err(|_| SqlError::syntax(format!("near '{text}'")))?;
        if !value.is_finite() {
            return Err(error(
                1367,
                format!("Illegal double '{text}' value found during parsing"),
            ));
        }
        let mut sql_type = SqlType::double().with_not_null(true);
        sql_type.length = digits_length(text);
        return Ok(literal(SqlValue::Double(value), sql_type));
    }
    if text.contains('.') {
        return decimal_literal(text, false);
    }
    if let Ok(value) = text.parse::<i64>() {
        return Ok(literal(
            SqlValue::Int(value),
            SqlType::integer(digits_length(text), false).with_not_null(true),
        ));
    }
    if let Ok(value) = text.parse::<u64>() {
        return Ok(literal(
            SqlValue::UInt(value),
            SqlType::integer(digits_length(text), true).with_not_null(true),
        ));
    }
    decimal_literal(text, false)
}

fn decimal_literal(text: &str, negative: bool) -> Result<Expression, SqlError> {
    match Decimal::parse(text.as_bytes()) {
        Some((decimal, Conversion::Exact)) => {
            let decimal = if negative { decimal.negated() } else { decimal };
            let scale = decimal.scale;
            let precision = decimal.integer_digit_count() + u32::from(scale);
            Ok(literal(
                SqlValue::Decimal(decimal),
                SqlType::decimal(precision.max(1), scale, false).with_not_null(true),
            ))
        }
        // Beyond 38 digits (MySQL: 65): an approximate DOUBLE.
        _ => {
            let value: f64 = text
                .parse()
                .map_err(|_| SqlError::syntax(format!("near '{text}'")))?;
            let value = if negative { -value } else { value };
            Ok(literal(
                SqlValue::Double(value),
                SqlType::double().with_not_null(true),
            ))
        }
    }
}

fn negative_number_literal(text: &str) -> Result<Expression, SqlError> {
    if text.contains(['e', 'E']) {
        let mut expression = number_literal(text)?;
        if let Node::Literal(SqlValue::Double(value)) = &mut expression.node {
            *value = -*value;
        }
        expression.sql_type.length += 1;
        return Ok(expression);
    }
    if text.contains('.') {
        let mut expression = decimal_literal(text, true)?;
        expression.sql_type.length = expression.sql_type.length.max(2);
        return Ok(expression);
    }
    let length = digits_length(text) + 1;
    if let Ok(value) = text.parse::<u64>()
        && value <= i64::MIN.unsigned_abs()
    {
        let negative = (value as i64).wrapping_neg();
        return Ok(literal(
            SqlValue::Int(negative),
            SqlType::integer(length, false).with_not_null(true),
        ));
    }
    decimal_literal(text, true)
}

fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

fn hex_bytes(digits: &str) -> Result<Vec<u8>, SqlError> {
    let digits = digits.as_bytes();
    let mut bytes = Vec::with_capacity(digits.len().div_ceil(2));
    // An odd count is padded with a leading zero, as MySQL reads 0xABC.
    let mut rest = digits;
    if digits.len() % 2 == 1 {
        let first = hex_digit(digits[0]).ok_or_else(|| {
            SqlError::syntax(format!("near 'X'{}''", String::from_utf8_lossy(digits)))
        })?;
        bytes.push(first);
        rest = &digits[1..];
    }
    for pair in rest.chunks(2) {
        let high = hex_digit(pair[0]);
        let low = pair.get(1).and_then(|&digit| hex_digit(digit));
        match (high, low) {
            (Some(high), Some(low)) => bytes.push(high << 4 | low),
            _ => {
                return Err(SqlError::syntax(format!(
                    "near 'X'{}''",
                    String::from_utf8_lossy(digits)
                )));
            }
        }
    }
    Ok(bytes)
}

fn hex_literal(digits: &str) -> Result<Expression, SqlError> {
    let mut expression = string_literal(hex_bytes(digits)?, Collation::Binary);
    expression.hex_literal = true;
    Ok(expression)
}

fn bit_literal(bits: &str) -> Result<Expression, SqlError> {
    if !bits.bytes().all(|bit| bit == b'0' || bit == b'1') {
        return Err(SqlError::syntax(format!("near 'b'{bits}''")));
    }
    let bits = bits.as_bytes();
    let mut bytes = Vec::with_capacity(bits.len().div_ceil(8));
    let leading = bits.len() % 8;
    let mut chunks: Vec<&[u8]> = Vec::new();
    if leading > 0 {
        chunks.push(&bits[..leading]);
    }
    chunks.extend(bits[leading..].chunks(8));
    for chunk in chunks {
        bytes.push(
            chunk
                .iter()
                .fold(0u8, |byte, &bit| byte << 1 | (bit - b'0')),
        );
    }
    let mut expression = string_literal(bytes, Collation::Binary);
    expression.hex_literal = true;
    Ok(expression)
}

/// The collation a character set introducer (`_utf8mb4'x'`) names.
pub(crate) fn charset_collation(charset: &str) -> Option<Collation> {
    match charset.to_ascii_lowercase().as_str() {
        "utf8mb4" | "utf8" | "utf8mb3" => Some(Collation::Utf8mb4AiCi),
        "latin1" => Some(Collation::Latin1Ci),
        "binary" => Some(Collation::Binary),
        _ => None,
    }
}

fn introducer(prefix: &str, value: &Expr) -> Result<Expression, SqlError> {
    let charset = prefix.strip_prefix('_').unwrap_or(prefix);
    let Some(collation) = charset_collation(charset) else {
        return Err(error(1115, format!("Unknown character set: '{charset}'")));
    };
    let bytes = match value {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => {
                text.as_bytes().to_vec()
            }
            Value::HexStringLiteral(digits) => hex_bytes(digits)?,
            Value::SingleQuotedByteStringLiteral(bits) => {
                let expression = bit_literal(bits)?;
                match expression.node {
                    Node::Literal(SqlValue::String(bytes)) => bytes,
                    _ => Vec::new(),
                }
            }
            other => return Err(SqlError::syntax(format!("near '{prefix}{other}'"))),
        },
        other => return Err(SqlError::syntax(format!("near '{prefix} {other}'"))),
    };
    Ok(string_literal(bytes, collation))
}

fn typed_literal(data_type: &ast::DataType, value: &Value) -> Result<Expression, SqlError> {
    let text = match value {
        Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => text.as_bytes(),
        other => return Err(SqlError::syntax(format!("near '{data_type} {other}'"))),
    };
    let shown = String::from_utf8_lossy(text);
    match data_type {
        ast::DataType::Date => {
            let parsed = temporal::parse_datetime(text)
                .filter(|parsed| parsed.conversion == Conversion::Exact && !parsed.has_time);
            match parsed {
                Some(parsed) => Ok(literal(
                    SqlValue::Date(parsed.value.date),
                    SqlType::date().with_not_null(true),
                )),
                None => Err(error(1525, format!("Incorrect DATE value: '{shown}'"))),
            }
        }
        ast::DataType::Time(..) => match temporal::parse_time(text) {
            Some((time, Conversion::Exact)) => {
                let fsp = fraction_digits(text);
                Ok(literal(
                    SqlValue::Time(time),
                    SqlType::time(fsp).with_not_null(true),
                ))
            }
            _ => Err(error(1525, format!("Incorrect TIME value: '{shown}'"))),
        },
        ast::DataType::Timestamp(..) | ast::DataType::Datetime(..) => {
            match temporal::parse_datetime(text) {
                Some(parsed) if parsed.conversion == Conversion::Exact => Ok(literal(
                    SqlValue::Datetime(parsed.value),
                    SqlType::datetime(parsed.fraction_digits).with_not_null(true),
                )),
                _ => Err(error(1525, format!("Incorrect DATETIME value: '{shown}'"))),
            }
        }
        other => Err(SqlError::syntax(format!("near '{other} '{shown}''"))),
    }
}

fn fraction_digits(text: &[u8]) -> u8 {
    match text.iter().position(|&byte| byte == b'.') {
        Some(point) => text[point + 1..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count()
            .min(6) as u8,
        None => 0,
    }
}

// ---------------------------------------------------------------------------
// Intervals

pub(crate) fn interval_unit(field: &DateTimeField) -> Result<IntervalUnit, SqlError> {
    use DateTimeField as F;
    Ok(match field {
        F::Microsecond | F::Microseconds => IntervalUnit::Microsecond,
        F::Second | F::Seconds => IntervalUnit::Second,
        F::Minute | F::Minutes => IntervalUnit::Minute,
        F::Hour | F::Hours => IntervalUnit::Hour,
        F::Day | F::Days => IntervalUnit::Day,
        F::Week(_) | F::Weeks => IntervalUnit::Week,
        F::Month | F::Months => IntervalUnit::Month,
        F::Quarter => IntervalUnit::Quarter,
        F::Year | F::Years => IntervalUnit::Year,
        F::Custom(name) => IntervalUnit::from_name(&name.value)
            .ok_or_else(|| SqlError::syntax(format!("near '{}'", name.value)))?,
        other => return Err(SqlError::syntax(format!("near '{other}'"))),
    })
}

fn interval_unit_of(interval: &ast::Interval) -> Result<IntervalUnit, SqlError> {
    let Some(leading) = &interval.leading_field else {
        return Err(SqlError::syntax(format!(
            "near 'INTERVAL {}'",
            interval.value
        )));
    };
    let leading_unit = interval_unit(leading)?;
    let Some(last) = &interval.last_field else {
        return Ok(leading_unit);
    };
    // `HOUR TO MINUTE` is MySQL's HOUR_MINUTE, and so on.
    let last_unit = interval_unit(last)?;
    let name = format!("{leading_unit:?}_{last_unit:?}").to_ascii_uppercase();
    IntervalUnit::from_name(&name)
        .ok_or_else(|| SqlError::syntax(format!("near 'INTERVAL {}'", interval.value)))
}

pub(crate) fn date_add_expression(
    operand: Expression,
    amount: Expression,
    unit: IntervalUnit,
    subtract: bool,
) -> Expression {
    let sql_type = date_add_type(&operand, unit);
    let children = [&operand, &amount];
    let node = Node::DateAdd {
        operand: Box::new(operand.clone()),
        interval: Box::new(amount.clone()),
        unit,
        subtract,
    };
    derived(node, sql_type, &children)
}

/// MySQL's type of `DATE_ADD`: DATE stays DATE for day-or-larger units,
/// DATETIME/TIMESTAMP give DATETIME, TIME stays TIME for time units, and
/// strings give a string (the date or datetime's text).
fn date_add_type(operand: &Expression, unit: IntervalUnit) -> SqlType {
    let fsp = if matches!(
        unit,
        IntervalUnit::Microsecond
            | IntervalUnit::SecondMicrosecond
            | IntervalUnit::MinuteMicrosecond
            | IntervalUnit::HourMicrosecond
            | IntervalUnit::DayMicrosecond
    ) {
        6
    } else {
        0
    };
    let source = &operand.sql_type;
    match source.field_type {
        FieldType::Date if !unit.has_time_part() => SqlType::date(),
        FieldType::Date => SqlType::datetime(fsp),
        FieldType::DateTime | FieldType::Timestamp => {
            SqlType::datetime(source.decimals.min(6).max(fsp))
        }
        FieldType::Time if unit.has_time_part() && !unit.is_month_based() => {
            SqlType::time(source.decimals.min(6).max(fsp))
        }
        FieldType::Time => SqlType::datetime(source.decimals.min(6).max(fsp)),
        _ => SqlType::string(29, CONNECTION_COLLATION),
    }
}

// ---------------------------------------------------------------------------
// Types

/// How an operand computes in arithmetic (MySQL's result type of the operand).
pub(crate) fn numeric_class(expression: &Expression) -> NumericClass {
    if expression.dynamic {
        return NumericClass::Dynamic;
    }
    let sql_type = &expression.sql_type;
    match sql_type.field_type {
        FieldType::Tiny
        | FieldType::Short
        | FieldType::Long
        | FieldType::Int24
        | FieldType::LongLong
        | FieldType::Year => {
            if sql_type.is_unsigned() {
                NumericClass::Unsigned
            } else {
                NumericClass::Integer
            }
        }
        FieldType::Bit => NumericClass::Unsigned,
        FieldType::NewDecimal | FieldType::Decimal => NumericClass::Decimal,
        FieldType::Float | FieldType::Double => NumericClass::Double,
        FieldType::Null | FieldType::Date => NumericClass::Integer,
        FieldType::DateTime | FieldType::Timestamp | FieldType::Time => {
            if (1..=6).contains(&sql_type.decimals) {
                NumericClass::Decimal
            } else {
                NumericClass::Integer
            }
        }
        _ if expression.hex_literal => NumericClass::Unsigned,
        _ => NumericClass::Double,
    }
}

fn combine_classes(left: NumericClass, right: NumericClass) -> NumericClass {
    use NumericClass::*;
    match (left, right) {
        (Dynamic, Dynamic) => Dynamic,
        (Dynamic, other) | (other, Dynamic) => other,
        (Double, _) | (_, Double) => Double,
        (Decimal, _) | (_, Decimal) => Decimal,
        (Unsigned, _) | (_, Unsigned) => Unsigned,
        _ => Integer,
    }
}

/// Digits before the point and after it, as MySQL sizes a DECIMAL result.
pub(crate) fn decimal_shape(expression: &Expression) -> (u32, u8) {
    let sql_type = &expression.sql_type;
    match numeric_class(expression) {
        NumericClass::Integer | NumericClass::Unsigned => {
            let sign = u32::from(!sql_type.is_unsigned() && sql_type.length > 1);
            (sql_type.length.saturating_sub(sign).clamp(1, 20), 0)
        }
        NumericClass::Decimal if sql_type.is_decimal_type() => {
            let scale = sql_type.decimals.min(DECIMAL_SCALE_MAX);
            (
                sql_type
                    .decimal_precision()
                    .saturating_sub(u32::from(scale)),
                scale,
            )
        }
        NumericClass::Decimal => {
            // A temporal with a fraction: its number form.
            let integer = if sql_type.field_type == FieldType::Time {
                7
            } else {
                14
            };
            (integer, sql_type.decimals.min(6))
        }
        _ => (17, 0),
    }
}

pub(crate) fn arithmetic_expression(
    operator: ArithmeticOperator,
    left: Expression,
    right: Expression,
    text: String,
) -> Expression {
    let mut class = combine_classes(numeric_class(&left), numeric_class(&right));
    if operator == ArithmeticOperator::Divide
        && matches!(class, NumericClass::Integer | NumericClass::Unsigned)
    {
        class = NumericClass::Decimal;
    }
    let divides = matches!(
        operator,
        ArithmeticOperator::Divide | ArithmeticOperator::IntegerDivide | ArithmeticOperator::Modulo
    );
    let not_null = !divides && !left.sql_type.is_nullable() && !right.sql_type.is_nullable();
    let sql_type = arithmetic_type(operator, class, &left, &right).with_not_null(not_null);
    let children = [&left, &right];
    let node = Node::Arithmetic {
        operator,
        class,
        left: Box::new(left.clone()),
        right: Box::new(right.clone()),
        text: text.into_boxed_str(),
    };
    let mut expression = derived(node, sql_type, &children);
    expression.dynamic = class == NumericClass::Dynamic;
    expression
}

fn arithmetic_type(
    operator: ArithmeticOperator,
    class: NumericClass,
    left: &Expression,
    right: &Expression,
) -> SqlType {
    let (left_length, right_length) = (left.sql_type.length, right.sql_type.length);
    if operator == ArithmeticOperator::IntegerDivide {
        return SqlType::integer(
            left_length.clamp(1, INTEGER_LENGTH_MAX),
            class == NumericClass::Unsigned,
        );
    }
    match class {
        NumericClass::Integer | NumericClass::Unsigned => {
            let length = match operator {
                ArithmeticOperator::Multiply => left_length.saturating_add(right_length),
                ArithmeticOperator::Modulo => left_length.max(right_length),
                _ => left_length.max(right_length).saturating_add(1),
            };
            SqlType::integer(
                length.clamp(1, INTEGER_LENGTH_MAX),
                class == NumericClass::Unsigned,
            )
        }
        NumericClass::Decimal => {
            let (left_integer, left_scale) = decimal_shape(left);
            let (right_integer, right_scale) = decimal_shape(right);
            let (integer, scale) = match operator {
                ArithmeticOperator::Add | ArithmeticOperator::Subtract => (
                    left_integer.max(right_integer) + 1,
                    left_scale.max(right_scale),
                ),
                ArithmeticOperator::Multiply => (
                    left_integer + right_integer,
                    (left_scale + right_scale).min(DECIMAL_SCALE_MAX),
                ),
                ArithmeticOperator::Divide => (
                    left_integer + u32::from(right_scale),
                    (left_scale + DIV_PRECISION_INCREMENT).min(DECIMAL_SCALE_MAX),
                ),
                _ => (left_integer.max(right_integer), left_scale.max(right_scale)),
            };
            let precision = (integer + u32::from(scale)).clamp(1, DECIMAL_PRECISION_MAX);
            SqlType::decimal(precision, scale, false)
        }
        NumericClass::Double | NumericClass::Dynamic => {
            let mut sql_type = SqlType::double();
            let (left_decimals, right_decimals) = (left.sql_type.decimals, right.sql_type.decimals);
            if left_decimals < NOT_FIXED_DECIMALS
                && right_decimals < NOT_FIXED_DECIMALS
                && (left.sql_type.is_real_type() || right.sql_type.is_real_type())
            {
                sql_type.decimals = left_decimals.max(right_decimals);
            }
            sql_type
        }
    }
}

pub(crate) fn negate(operand: Expression, text: String) -> Expression {
    let class = numeric_class(&operand);
    let mut sql_type = match class {
        NumericClass::Integer | NumericClass::Unsigned => SqlType::integer(
            operand
                .sql_type
                .length
                .saturating_add(1)
                .min(INTEGER_LENGTH_MAX),
            false,
        ),
        NumericClass::Decimal => {
            let (integer, scale) = decimal_shape(&operand);
            SqlType::decimal(integer + u32::from(scale), scale, false)
        }
        _ => SqlType::double(),
    };
    sql_type = sql_type.with_not_null(!operand.sql_type.is_nullable());
    let children = [&operand];
    let mut expression = derived(
        Node::Negate {
            operand: Box::new(operand.clone()),
            text: text.into_boxed_str(),
        },
        sql_type,
        &children,
    );
    expression.dynamic = class == NumericClass::Dynamic;
    expression
}

pub(crate) fn comparison_expression(
    left: Expression,
    operator: ComparisonOperator,
    right: Expression,
) -> Expression {
    // A hex literal against a number is a number (0x41 = 65).
    let (left, right) = if is_numeric_typed(&left) {
        (left, numeric_operand(right))
    } else if is_numeric_typed(&right) {
        (numeric_operand(left), right)
    } else {
        (left, right)
    };
    let collation = aggregate_collation(&[&left, &right]);
    let not_null = operator == ComparisonOperator::NullSafeEqual
        || (!left.sql_type.is_nullable() && !right.sql_type.is_nullable());
    let children = [&left, &right];
    let node = Node::Comparison {
        operator,
        left: Box::new(left.clone()),
        right: Box::new(right.clone()),
        collation,
    };
    derived(node, boolean_type(not_null), &children)
}

/// The collation a name in `COLLATE name` stands for: Shoal's own, and
/// the other common MySQL names the way CREATE TABLE stores them (the
/// 5.7-era utf8mb4 collations as `utf8mb4_0900_ai_ci`, the `utf8`/`utf8mb3`
/// ones as their utf8mb4 counterparts).
pub(crate) fn collation_named(name: &str) -> Option<Collation> {
    if let Some(collation) = Collation::from_name(name) {
        return Some(collation);
    }
    match name.to_ascii_lowercase().as_str() {
        "utf8mb4_general_ci"
        | "utf8mb4_unicode_ci"
        | "utf8mb4_unicode_520_ci"
        | "utf8mb4_0900_as_ci"
        | "utf8_general_ci"
        | "utf8mb3_general_ci"
        | "utf8_unicode_ci"
        | "utf8mb3_unicode_ci" => Some(Collation::Utf8mb4AiCi),
        "utf8_bin" | "utf8mb3_bin" => Some(Collation::Utf8mb4Bin),
        "latin1_general_ci" => Some(Collation::Latin1Ci),
        _ => None,
    }
}

/// MySQL's name of a comparison in 1267 messages.
fn comparison_symbol(operator: ComparisonOperator) -> &'static str {
    match operator {
        ComparisonOperator::Equal => "=",
        ComparisonOperator::NullSafeEqual => "<=>",
        ComparisonOperator::NotEqual => "<>",
        ComparisonOperator::Less => "<",
        ComparisonOperator::LessOrEqual => "<=",
        ComparisonOperator::Greater => ">",
        ComparisonOperator::GreaterOrEqual => ">=",
    }
}

fn coercibility_name(coercibility: Coercibility) -> &'static str {
    match coercibility {
        Coercibility::Explicit => "EXPLICIT",
        Coercibility::Implicit => "IMPLICIT",
        Coercibility::SystemConstant => "SYSCONST",
        Coercibility::Coercible => "COERCIBLE",
        Coercibility::Numeric => "NUMERIC",
    }
}

/// 1267 "Illegal mix of collations" where MySQL's collation aggregation
/// finds no winner among string operands of one character set: two
/// different explicit (`COLLATE`) collations, or two different columns'
/// collations of which none is a `_bin` one (which would win).
pub(crate) fn check_collation_mix(
    sources: &[&Expression],
    operation: &str,
) -> Result<(), SqlError> {
    let strings: Vec<&Expression> = sources
        .iter()
        .copied()
        .filter(|source| {
            source.sql_type.is_string_type()
                && !source.hex_literal
                && !source.dynamic
                && source.sql_type.collation != Collation::Binary
        })
        .collect();
    let Some(strongest) = strings.iter().map(|source| source.coercibility).min() else {
        return Ok(());
    };
    if !matches!(strongest, Coercibility::Explicit | Coercibility::Implicit) {
        return Ok(());
    }
    let contenders: Vec<&Expression> = strings
        .iter()
        .copied()
        .filter(|source| source.coercibility == strongest)
        .collect();
    let is_bin =
        |collation: Collation| matches!(collation, Collation::Utf8mb4Bin | Collation::Latin1Bin);
    for (index, first) in contenders.iter().enumerate() {
        for second in &contenders[index + 1..] {
            let (a, b) = (first.sql_type.collation, second.sql_type.collation);
            if a == b || a.charset_name() != b.charset_name() {
                continue;
            }
            if strongest == Coercibility::Implicit && (is_bin(a) || is_bin(b)) {
                continue;
            }
            return Err(error(
                1267,
                format!(
                    "Illegal mix of collations ({},{}) and ({},{}) for operation '{operation}'",
                    a.name(),
                    coercibility_name(first.coercibility),
                    b.name(),
                    coercibility_name(second.coercibility),
                ),
            ));
        }
    }
    Ok(())
}

/// The collation two or more string operands compare under: the most
/// binding coercibility wins (COLLATE, then columns, then literals);
/// `binary` wins over any character set; otherwise the first.
pub(crate) fn aggregate_collation(sources: &[&Expression]) -> Collation {
    let strings: Vec<&&Expression> = sources
        .iter()
        .filter(|source| source.sql_type.is_string_type() && !source.hex_literal)
        .collect();
    if strings.is_empty() {
        return sources
            .iter()
            .find(|source| source.sql_type.is_string_type())
            .map_or(CONNECTION_COLLATION, |source| source.sql_type.collation);
    }
    if strings
        .iter()
        .any(|source| source.sql_type.collation == Collation::Binary && !source.dynamic)
    {
        return Collation::Binary;
    }
    let strongest = strings
        .iter()
        .filter(|source| !source.dynamic)
        .min_by_key(|source| source.coercibility)
        .or_else(|| strings.first());
    let chosen = strongest.map_or(CONNECTION_COLLATION, |source| source.sql_type.collation);
    // Two columns of one charset, one of them _bin: MySQL picks the _bin one.
    if strings.iter().any(|source| {
        source.coercibility == Coercibility::Implicit
            && source.sql_type.collation.charset_name() == chosen.charset_name()
            && matches!(
                source.sql_type.collation,
                Collation::Utf8mb4Bin | Collation::Latin1Bin
            )
    }) && strongest.is_some_and(|source| source.coercibility == Coercibility::Implicit)
    {
        return strings
            .iter()
            .find(|source| {
                matches!(
                    source.sql_type.collation,
                    Collation::Utf8mb4Bin | Collation::Latin1Bin
                ) && source.coercibility == Coercibility::Implicit
            })
            .map_or(chosen, |source| source.sql_type.collation);
    }
    chosen
}

/// Characters needed to show a value of this type as text.
pub(crate) fn text_length(sql_type: &SqlType) -> u32 {
    if sql_type.is_string_type() {
        sql_type.character_length()
    } else {
        sql_type.length
    }
}

/// MySQL's result type of CASE, IF, IFNULL, COALESCE, GREATEST and LEAST:
/// numbers stay numbers (the widest kind), one temporal kind stays that
/// kind, anything else is a string; NULLs do not count.
pub(crate) fn aggregate_type(sources: &[&Expression]) -> SqlType {
    let typed: Vec<&Expression> = sources
        .iter()
        .copied()
        .filter(|source| source.sql_type.field_type != FieldType::Null && !source.dynamic)
        .collect();
    if typed.is_empty() {
        return if sources.iter().any(|source| source.dynamic) {
            SqlType::string(0, CONNECTION_COLLATION)
        } else {
            SqlType::null()
        };
    }
    if typed
        .iter()
        .all(|source| is_numeric_typed(source) || source.hex_literal)
    {
        let classes: Vec<NumericClass> = typed.iter().map(|source| numeric_class(source)).collect();
        if classes.contains(&NumericClass::Double) {
            let mut sql_type = SqlType::double();
            if typed
                .iter()
                .all(|source| source.sql_type.decimals < NOT_FIXED_DECIMALS)
            {
                sql_type.decimals = typed
                    .iter()
                    .map(|source| source.sql_type.decimals)
                    .max()
                    .unwrap_or(0);
            }
            return sql_type;
        }
        let unsigned = classes.iter().all(|class| *class == NumericClass::Unsigned);
        if classes.contains(&NumericClass::Decimal) {
            let integer = typed
                .iter()
                .map(|source| decimal_shape(source).0)
                .max()
                .unwrap_or(1);
            let scale = typed
                .iter()
                .map(|source| decimal_shape(source).1)
                .max()
                .unwrap_or(0);
            return SqlType::decimal(integer + u32::from(scale), scale, unsigned);
        }
        let length = typed
            .iter()
            .map(|source| source.sql_type.length)
            .max()
            .unwrap_or(1);
        return SqlType::integer(length.clamp(1, INTEGER_LENGTH_MAX), unsigned);
    }
    if typed
        .iter()
        .all(|source| source.sql_type.is_temporal_type())
    {
        let first = typed[0].sql_type.field_type;
        let decimals = typed
            .iter()
            .map(|source| source.sql_type.decimals.min(6))
            .max()
            .unwrap_or(0);
        if typed
            .iter()
            .all(|source| source.sql_type.field_type == first)
        {
            return match first {
                FieldType::Date => SqlType::date(),
                FieldType::Time => SqlType::time(decimals),
                _ => SqlType::datetime(decimals),
            };
        }
        if typed
            .iter()
            .all(|source| source.sql_type.field_type != FieldType::Time)
        {
            return SqlType::datetime(decimals);
        }
    }
    let collation = aggregate_collation(&typed);
    let length = typed
        .iter()
        .map(|source| text_length(&source.sql_type))
        .max()
        .unwrap_or(0);
    if length > 65_535 / collation.bytes_per_char_max().max(1)
        || typed.iter().any(|source| {
            matches!(
                source.sql_type.field_type,
                FieldType::Blob | FieldType::LongBlob | FieldType::MediumBlob
            )
        })
    {
        return SqlType::long_string(collation);
    }
    SqlType::string(length, collation)
}

/// The result type of a function of strings: a VARCHAR of `characters`
/// in the arguments' collation.
pub(crate) fn string_result(characters: u32, arguments: &[&Expression]) -> SqlType {
    let collation = if arguments.is_empty() {
        CONNECTION_COLLATION
    } else {
        aggregate_collation(arguments)
    };
    if characters > 65_535 / collation.bytes_per_char_max().max(1) {
        return SqlType::long_string(collation);
    }
    SqlType::string(characters, collation)
}

/// Whether every argument is NOT NULL.
pub(crate) fn all_not_null(arguments: &[&Expression]) -> bool {
    arguments
        .iter()
        .all(|argument| !argument.sql_type.is_nullable())
}

/// Marks a type nullable or not.
pub(crate) fn nullable_if(sql_type: SqlType, nullable: bool) -> SqlType {
    sql_type.with_not_null(!nullable)
}

/// The BIGINT type of an integer-valued function result.
pub(crate) fn integer_result(length: u32, unsigned: bool) -> SqlType {
    SqlType::integer(length.clamp(1, INTEGER_LENGTH_MAX), unsigned)
}
