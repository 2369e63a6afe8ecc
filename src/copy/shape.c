/*-------------------------------------------------------------------------
 *
 * shape.c
 *	  What a job copies: the downstream's columns, each copied from a column
 *	  of the upstream or computed from its row, and the row filter.
 *
 * create_job's "columns" entries are column names, taken as they are, or
 * "expression AS name" for a computed column; its "filter" is a boolean
 * expression.  Each expression is parsed as the caller's SQL (under the
 * caller's search_path), analyzed against the upstream alone, and must be
 * immutable: what a row becomes downstream, and whether it is there at all,
 * must depend on the row alone, since a chunk, a barrier's forwarding and
 * the apply trigger compute it from the same row at different times.
 * Subqueries, aggregates, window and set-returning functions, system
 * columns and whole-row references are refused.  The key columns are copied
 * as they are: a job's positions, vnodes and downstream key are the
 * upstream's key.
 *
 * What the catalog keeps is each expression deparsed under a search_path of
 * pg_catalog alone, which qualifies every name found elsewhere, and checked
 * to mean the same tree when parsed again under the job's own search_path
 * (privilege.c), under which the job's statements run.  Column references
 * are left unqualified: wherever the job's SQL puts an expression, the
 * upstream, alias u, is the only relation in scope at that level.
 *
 * The text a user gives is read under the caller's settings, as any of its
 * SQL: a literal's backslashes as standard_conforming_strings says, a date
 * as DateStyle orders it.  The text stored is written under settings of its
 * own, as pg_dump pins them (backfill_pin_deparse_settings):
 * standard_conforming_strings on, DateStyle ISO, IntervalStyle postgres,
 * TimeZone UTC, extra_float_digits 3; and every later reading of it (the
 * barriers, the capture and apply triggers, verify_job, recreate_job,
 * estimate_job, the checks of DDL on the upstream) is under the first three
 * (backfill_pin_parse_settings), the ones that decide how a text is read:
 * a time zone and float digits change only how a value is written, and a
 * constant written in ISO style carries its offset.  So an expression means
 * what its creator meant, whoever reads it later with whatever settings.
 *
 * Why text, and not the analyzed tree (nodeToString, as PostgreSQL keeps a
 * column's default)?  A stored tree names functions, operators and types by
 * OID: it would need pg_depend entries to keep them from being dropped or
 * replaced under the job, and pg_dump would have to recreate it from a text
 * anyway.  The text is what backfill.job shows, what a dump restores and
 * what the job's SQL is built from; pinned settings and qualified names are
 * enough to make it mean one thing.
 *
 * Jobs made before version 1.3 keep the text they were stored with, written
 * under their creator's settings: the upgrade cannot know those settings, so
 * the text is not rewritten, and is now read under the pinned ones, as a
 * session with the default settings read it before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/bitmapset.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"

#include "backfill.h"
#include "copy/copy.h"
#include "lib/lib.h"

/* the search_path stored expressions are deparsed under, and parsed again */
#define SHAPE_DEPARSE_PATH "pg_catalog"

/* what an error's context line says was being read */
static void
shape_error_context(void *arg)
{
	errcontext("%s", (const char *) arg);
}

/* the prefix parse_expression() puts before the text it parses */
#define SHAPE_PARSE_PREFIX "SELECT "

/*
 * A syntax error's position is in the text parsed, not in the statement the
 * caller runs: report it as an internal query's, the text without the
 * prefix, as typeStringToTypeName() does for a type name.
 */
static void
parse_error_context(void *arg)
{
	const char *text = arg;
	int			pos = geterrposition();

	if (pos > (int) strlen(SHAPE_PARSE_PREFIX))
	{
		errposition(0);
		internalerrposition(pos - strlen(SHAPE_PARSE_PREFIX));
		internalerrquery(text);
	}
}

/* a context line for what follows, until pop_context() */
static void
push_context(ErrorContextCallback *errcb, const char *what, const char *text)
{
	errcb->previous = error_context_stack;
	errcb->callback = shape_error_context;
	errcb->arg = psprintf("%s \"%s\"", what, text);
	error_context_stack = errcb;
}

static void
pop_context(ErrorContextCallback *errcb)
{
	error_context_stack = errcb->previous;
}

/*
 * The one expression of "SELECT <text>", and its alias (NULL without one);
 * NULL if the text is anything else: several statements, a FROM clause...
 * A text that does not parse raises the parser's error.
 */
static Node *
parse_expression(const char *text, char **alias)
{
	ErrorContextCallback errcb = {error_context_stack, parse_error_context, (void *) text};
	List	   *raw;
	SelectStmt *s;
	ResTarget  *rt;

	error_context_stack = &errcb;
	raw = raw_parser(psprintf("%s%s", SHAPE_PARSE_PREFIX, text), RAW_PARSE_DEFAULT);
	error_context_stack = errcb.previous;
	*alias = NULL;
	if (list_length(raw) != 1 || !IsA(((RawStmt *) linitial(raw))->stmt, SelectStmt))
		return NULL;
	s = (SelectStmt *) ((RawStmt *) linitial(raw))->stmt;
	if (list_length(s->targetList) != 1 || s->distinctClause || s->intoClause ||
		s->fromClause || s->whereClause || s->groupClause || s->havingClause ||
		s->windowClause || s->valuesLists || s->sortClause || s->limitOffset ||
		s->limitCount || s->lockingClause || s->withClause || s->op != SETOP_NONE)
		return NULL;
	rt = linitial_node(ResTarget, s->targetList);
	*alias = rt->name;
	return rt->val;
}

/* the first function of node that is not immutable, into *found */
static bool
mutable_function(Oid func_id, void *context)
{
	if (func_volatile(func_id) == PROVOLATILE_IMMUTABLE)
		return false;
	*(Oid *) context = func_id;
	return true;
}

static bool
find_mutable_function(Node *node, Oid *found)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, mutable_function, found))
		return true;
	return expression_tree_walker(node, find_mutable_function, found);
}

/* a subquery, refused in what for what the user wrote */
static void
report_subquery(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s of a backfill job cannot use a subquery", what),
			 errdetail("Only the upstream row itself may decide what is copied.")));
}

/* whether a raw expression holds a subquery */
static bool
raw_has_sublink(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, SubLink))
		return true;
	return raw_expression_tree_walker(node, raw_has_sublink, context);
}

/*
 * What an analyzed expression may not hold: a subquery, a system column, a
 * whole-row reference, anything not immutable.
 */
static void
check_expression(Relation rel, Node *expr, const char *column)
{
	const char *what = column ? psprintf("computed column \"%s\"", column) : "the filter";
	Bitmapset  *attrs = NULL;
	Oid			func = InvalidOid;
	int			a = -1;

	if (checkExprHasSubLink(expr))
		report_subquery(what);
	pull_varattnos(expr, 1, &attrs);
	while ((a = bms_next_member(attrs, a)) >= 0)
	{
		AttrNumber	attnum = a + FirstLowInvalidHeapAttributeNumber;

		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s of a backfill job cannot use a whole-row reference of table \"%s\"",
							what, RelationGetRelationName(rel)),
					 errhint("Name the columns it needs.")));
		if (attnum < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s of a backfill job cannot use system column \"%s\"",
							what, get_attname(RelationGetRelid(rel), attnum, false))));
	}
	if (find_mutable_function(expr, &func))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of a backfill job cannot use function %s, which is not immutable",
						what, format_procedure(func)),
				 errdetail("The filter and the computed columns may use immutable functions only, so that what is copied of a row depends on the row alone."),
				 errhint("Remove the call, or use an immutable function.")));
	if (contain_mutable_functions(expr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of a backfill job is not immutable", what),
				 errdetail("The filter and the computed columns may use immutable functions only, so that what is copied of a row depends on the row alone.")));
}

/*
 * Analyze a raw expression against the upstream alone: a filter as a
 * boolean condition, a computed column as a column's value (an unknown
 * literal becomes text).
 */
static Node *
analyze_expression(Relation rel, Node *raw, const char *column)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *nsitem;
	Node	   *expr;

	/*
	 * A computed column is analyzed as a generated column's expression,
	 * whose own refusal of a subquery would speak of column generation:
	 * refuse it first, naming what the user wrote.
	 */
	if (column != NULL && raw_has_sublink(raw, NULL))
		report_subquery(psprintf("computed column \"%s\"", column));
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock, NULL, false, false);
	addNSItemToQuery(pstate, nsitem, false, true, true);
	expr = transformExpr(pstate, raw, column ? EXPR_KIND_GENERATED_COLUMN : EXPR_KIND_WHERE);
	if (column == NULL)
		expr = coerce_to_boolean(pstate, expr, "filter");
	else if (exprType(expr) == UNKNOWNOID)
		expr = coerce_type(pstate, expr, UNKNOWNOID, TEXTOID, -1, COERCION_IMPLICIT,
						   COERCE_IMPLICIT_CAST, -1);
	assign_expr_collations(pstate, expr);
	free_parsestate(pstate);
	check_expression(rel, expr, column);
	return expr;
}

/* parse and analyze a stored expression under a search_path and the pinned settings */
static Node *
expression_under(Relation rel, const char *text, const char *column, const char *path)
{
	int			level = NewGUCNestLevel();
	char	   *alias;
	Node	   *raw;
	Node	   *expr;

	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	backfill_pin_parse_settings();
	raw = parse_expression(text, &alias);
	if (raw == NULL)
		elog(ERROR, "stored expression \"%s\" is not one expression", text);
	expr = analyze_expression(rel, raw, column);
	AtEOXact_GUC(true, level);
	return expr;
}

/*
 * The text to store for an analyzed expression: deparsed under
 * SHAPE_DEPARSE_PATH and the pinned settings, and meaning the same under
 * the job's search_path and those settings.
 */
static char *
store_expression(Relation rel, Node *expr, const char *column, const char *search_path)
{
	int			level = NewGUCNestLevel();
	char	   *text;

	(void) set_config_option("search_path", SHAPE_DEPARSE_PATH, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	backfill_pin_deparse_settings();
	text = deparse_expression(expr, deparse_context_for(RelationGetRelationName(rel),
														RelationGetRelid(rel)),
							  false, false);
	AtEOXact_GUC(true, level);
	if (!equal(expr, expression_under(rel, text, column, search_path)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot store %s of a backfill job",
						column ? psprintf("computed column \"%s\"", column) : "the filter"),
				 errdetail("Written as \"%s\", it would mean something else under the job's search_path \"%s\".",
						   text, search_path),
				 errhint("Qualify the functions and operators it uses with their schemas.")));
	return text;
}

/*
 * backfill_shape_expression
 *		A stored expression of a job (a computed column's, or the filter when
 *		column is NULL) analyzed against the upstream as it is now, checked
 *		as create_job checks it.
 */
Node *
backfill_shape_expression(Relation upstream, const char *text, bool is_filter,
						  const char *column)
{
	ErrorContextCallback errcb;
	Node	   *expr;

	push_context(&errcb, is_filter ? "filter" : psprintf("computed column \"%s\" as", column),
				 text);
	expr = expression_under(upstream, text, is_filter ? NULL : column, SHAPE_DEPARSE_PATH);
	pop_context(&errcb);
	return expr;
}

/*
 * One entry of create_job's "columns": a column's name, or "expression AS
 * name".  Fills col; computed columns' expressions are analyzed into *expr.
 */
static void
read_entry(Relation rel, const char *entry, ShapeColumn *col, Node **expr)
{
	Oid			relid = RelationGetRelid(rel);
	AttrNumber	attnum = get_attnum(relid, entry);
	ErrorContextCallback errcb;
	char	   *alias;
	Node	   *raw;

	memset(col, 0, sizeof(ShapeColumn));
	*expr = NULL;
	if (attnum == InvalidAttrNumber)
	{
		push_context(&errcb, "columns entry", entry);
		raw = parse_expression(entry, &alias);
		pop_context(&errcb);
		if (raw == NULL || alias == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							entry, RelationGetRelationName(rel)),
					 raw && !IsA(raw, ColumnRef) ?
					 errhint("A computed column needs a name: \"%s AS name\".", entry) : 0));
		push_context(&errcb, "columns entry", entry);
		*expr = analyze_expression(rel, raw, alias);
		pop_context(&errcb);
		col->name = pstrdup(alias);
		/* "a AS a" copies a */
		if (IsA(*expr, Var) && strcmp(get_attname(relid, ((Var *) *expr)->varattno, false),
									  alias) == 0)
		{
			attnum = ((Var *) *expr)->varattno;
			*expr = NULL;
		}
	}
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot backfill system column \"%s\"", entry)));
	if (*expr)
	{
		col->type = exprType(*expr);
		col->typmod = exprTypmod(*expr);
		col->collation = exprCollation(*expr);
		return;
	}
	col->attnum = attnum;
	col->name = get_attname(relid, attnum, false);
	get_atttypetypmodcoll(relid, attnum, &col->type, &col->typmod, &col->collation);
}

/* a copied column of the upstream */
static void
copied_column(Relation rel, AttrNumber attnum, ShapeColumn *col)
{
	memset(col, 0, sizeof(ShapeColumn));
	col->attnum = attnum;
	col->name = get_attname(RelationGetRelid(rel), attnum, false);
	get_atttypetypmodcoll(RelationGetRelid(rel), attnum, &col->type, &col->typmod,
						  &col->collation);
}

/*
 * The upstream's columns the shape reads, into shape->sources: the key in
 * key order, then the others in the table's order.
 */
static void
collect_sources(Relation rel, int npk, const AttrNumber *pk, Bitmapset *attrs,
				JobShape *shape)
{
	int			a = -1;

	shape->sources = palloc(sizeof(char *) * (npk + bms_num_members(attrs)));
	shape->nsources = 0;
	for (int k = 0; k < npk; k++)
	{
		shape->sources[shape->nsources++] = get_attname(RelationGetRelid(rel), pk[k], false);
		attrs = bms_del_member(attrs, pk[k] - FirstLowInvalidHeapAttributeNumber);
	}
	while ((a = bms_next_member(attrs, a)) >= 0)
		shape->sources[shape->nsources++] =
			get_attname(RelationGetRelid(rel), a + FirstLowInvalidHeapAttributeNumber, false);
}

/*
 * The requested columns, in their order, with the key columns that were
 * not requested put first; computed ones analyzed into exprs.
 */
static void
read_columns(Relation rel, ArrayType *requested, int npk, const AttrNumber *pk,
			 JobShape *shape, Node ***exprs)
{
	Datum	   *names;
	bool	   *nulls;
	int			nnames;
	ShapeColumn *entries;
	Node	  **entry_exprs;

	if (ARR_NDIM(requested) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("argument \"columns\" must be a one-dimensional array")));
	deconstruct_array(requested, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &nnames);
	for (int i = 0; i < nnames; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"columns\" must not contain nulls")));
	entries = palloc(sizeof(ShapeColumn) * Max(nnames, 1));
	entry_exprs = palloc(sizeof(Node *) * Max(nnames, 1));
	shape->cols = palloc(sizeof(ShapeColumn) * (nnames + npk));
	*exprs = palloc0(sizeof(Node *) * (nnames + npk));
	shape->ncols = 0;
	for (int i = 0; i < nnames; i++)
		read_entry(rel, TextDatumGetCString(names[i]), &entries[i], &entry_exprs[i]);

	/* key columns that were not asked for come first; none is computed */
	for (int k = 0; k < npk; k++)
	{
		char	   *keyname = get_attname(RelationGetRelid(rel), pk[k], false);
		bool		found = false;

		for (int i = 0; i < nnames; i++)
		{
			if (strcmp(entries[i].name, keyname) != 0)
				continue;
			if (entry_exprs[i])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cannot compute key column \"%s\"", keyname),
						 errdetail("The key columns of the upstream are copied as they are."),
						 errhint("Give the computed column another name.")));
			found = true;
		}
		if (!found)
			copied_column(rel, pk[k], &shape->cols[shape->ncols++]);
	}
	for (int i = 0; i < nnames; i++)
	{
		for (int j = 0; j < shape->ncols; j++)
			if (strcmp(shape->cols[j].name, entries[i].name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" specified more than once", entries[i].name)));
		(*exprs)[shape->ncols] = entry_exprs[i];
		shape->cols[shape->ncols++] = entries[i];
	}
}

/*
 * backfill_shape_read
 *		Read and check create_job's columns (NULL: every column) and filter
 *		(NULL: none) against the upstream, whose key is pk; search_path is
 *		the job's.  Fills shape.
 */
void
backfill_shape_read(Relation upstream, ArrayType *columns, const char *filter,
					int npk, const AttrNumber *pk, const char *search_path, JobShape *shape)
{
	TupleDesc	desc = RelationGetDescr(upstream);
	Bitmapset  *attrs = NULL;
	Node	  **exprs;

	memset(shape, 0, sizeof(JobShape));
	if (columns == NULL)
	{
		shape->cols = palloc(sizeof(ShapeColumn) * Max(desc->natts, 1));
		exprs = palloc0(sizeof(Node *) * Max(desc->natts, 1));
		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				copied_column(upstream, TupleDescAttr(desc, i)->attnum,
							  &shape->cols[shape->ncols++]);
	}
	else
		read_columns(upstream, columns, npk, pk, shape, &exprs);

	for (int i = 0; i < shape->ncols; i++)
	{
		if (exprs[i] == NULL)
		{
			attrs = bms_add_member(attrs, shape->cols[i].attnum - FirstLowInvalidHeapAttributeNumber);
			continue;
		}
		pull_varattnos(exprs[i], 1, &attrs);
		shape->cols[i].expr = store_expression(upstream, exprs[i], shape->cols[i].name,
											   search_path);
		shape->computed = true;
	}

	if (filter != NULL)
	{
		ErrorContextCallback errcb;
		char	   *alias;
		Node	   *raw;
		Node	   *expr;

		push_context(&errcb, "filter", filter);
		raw = parse_expression(filter, &alias);
		if (raw == NULL || alias != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid filter \"%s\"", filter),
					 errdetail("A filter is one boolean expression over the columns of the upstream.")));
		expr = analyze_expression(upstream, raw, NULL);
		pop_context(&errcb);
		pull_varattnos(expr, 1, &attrs);
		shape->filter = store_expression(upstream, expr, NULL, search_path);
	}
	collect_sources(upstream, npk, pk, attrs, shape);
}

/*
 * backfill_shape_select_list
 *		The columns as a SELECT list over the upstream: "a, (b * 2) AS c".
 */
char *
backfill_shape_select_list(const JobShape *shape)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < shape->ncols; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		if (shape->cols[i].expr)
			appendStringInfo(&buf, "%s AS ", shape->cols[i].expr);
		appendStringInfoString(&buf, quote_identifier(shape->cols[i].name));
	}
	return buf.data;
}

/*
 * backfill_shape_names
 *		The columns' names, for a message: "(id, customer, note)".
 */
char *
backfill_shape_names(const JobShape *shape)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (int i = 0; i < shape->ncols; i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", quote_identifier(shape->cols[i].name));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}
