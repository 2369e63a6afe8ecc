/*-------------------------------------------------------------------------
 *
 * sql.c
 *	  SQL text and SPI: the helpers every layer above builds statements with.
 *
 * Names go into SQL text through quote_identifier() only, values only as
 * parameters.  The statements that make downstream rows equal to the
 * upstream's are built here, once, for every caller: a barrier forwarding
 * the keys a set of changes names, and the apply trigger for one key.  So
 * are the comparisons of keys, with their types' btree operators named
 * with their schemas, which every statement over a key uses.
 *
 * Plans kept across transactions belong to whoever made them, in a
 * KeptPlans of its own that it frees.  A run that fails cannot free them:
 * during the error's cleanup the failed statement may still hold one.  So a
 * KeptPlans stays registered until it is freed, and the next one made in
 * the backend frees those a failed run left, in a transaction that holds
 * none.  At most one run is active in a backend, so a registered KeptPlans
 * met there is always such a leftover.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "lib/lib.h"

/* "schema"."name" of a relation that must exist */
char *
backfill_relation_sql(Oid relid)
{
	char	   *relname = get_rel_name(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  relname);
}

/*
 * A relation's name as regclass prints it under the current search_path:
 * schema-qualified only where needed, as the SQL functions' messages and
 * statements named it with %s
 */
char *
backfill_regclass_text(Oid relid)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
}

/*
 * backfill_partition_renamed
 *		The name a partition named part takes when its table's name goes from
 *		before to after: after in place of before at its start, else after_part.
 *		Not cut to NAMEDATALEN: the caller decides what a name too long is.
 */
char *
backfill_partition_renamed(const char *part, const char *before, const char *after)
{
	size_t		len = strlen(before);

	if (strncmp(part, before, len) == 0)
		return psprintf("%s%s", after, part + len);
	return psprintf("%s_%s", after, part);
}

/*
 * backfill_upstream_scan
 *		The upstream in a FROM clause, aliased u: ONLY the table itself (its
 *		inheritance children are no part of it), or a partitioned table
 *		through its partitions.
 */
char *
backfill_upstream_scan(const char *upstream_sql, bool partitioned)
{
	return psprintf("%s%s u", partitioned ? "" : "ONLY ", upstream_sql);
}

char *
backfill_job_scan(BackfillJob *job)
{
	return backfill_upstream_scan(job->upstream_sql, job->partitioned);
}

/* " AND (filter)", the job's row filter on alias u, or "" */
char *
backfill_filter_and(BackfillJob *job)
{
	return job->filter ? psprintf(" AND (%s)", job->filter) : "";
}

/*
 * backfill_count_sql
 *		The rows a job copies, counted: the progress total.  leaf_sqls, when
 *		not NIL, are the partitions of a partitioned upstream to count one
 *		by one, the counts summed: postgres_fdw sends count(*) of a foreign
 *		table to its server, where through the partitioned table it would
 *		fetch every row of every server to count them here.
 */
char *
backfill_count_sql(const char *upstream_sql, bool partitioned, const char *filter,
				   List *leaf_sqls)
{
	const char *where = filter ? psprintf(" WHERE (%s)", filter) : "";
	StringInfoData sql;
	ListCell   *lc;

	if (leaf_sqls == NIL)
		return psprintf("SELECT pg_catalog.count(*) FROM %s%s",
						backfill_upstream_scan(upstream_sql, partitioned), where);
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM (");
	foreach(lc, leaf_sqls)
		appendStringInfo(&sql, "%sSELECT pg_catalog.count(*) AS n FROM %s%s",
						 lc == list_head(leaf_sqls) ? "" : " UNION ALL ",
						 backfill_upstream_scan(lfirst(lc), false), where);
	appendStringInfoString(&sql, ") c");
	return sql.data;
}

/*
 * backfill_pk_list
 *		"alias"."k1", "alias"."k2", ... (or without alias when NULL)
 */
char *
backfill_pk_list(BackfillJob *job, const char *alias)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
	{
		if (k > 0)
			appendStringInfoString(&buf, ", ");
		if (alias)
			appendStringInfo(&buf, "%s.", alias);
		appendStringInfoString(&buf, quote_identifier(job->pk_names[k]));
	}
	return buf.data;
}

/* "k1 DESC, k2 DESC" */
char *
backfill_pk_list_desc(BackfillJob *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%s%s DESC", k > 0 ? ", " : "",
						 quote_identifier(job->pk_names[k]));
	return buf.data;
}

/* "$first, $first+1, ..." for the key's parameters */
char *
backfill_pk_params(BackfillJob *job, int first)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%s$%d", k > 0 ? ", " : "", first + k);
	return buf.data;
}

/*
 * Comparing keys.
 *
 * A comparison of keys in generated SQL names the operators of the key
 * types' default btree operator classes, as OPERATOR(schema.name), looked
 * up by strategy: the order the primary key's index keeps, whatever the
 * operators are called (hstore's are #<#, #<=#, ...) and wherever they
 * live, so that the search_path has no say in what a comparison means.  A
 * key whose columns all compare with the same operator (the built-in types:
 * pg_catalog's <, <=, ...) is compared as a row, which the planner turns
 * into one index condition; other keys lexicographically, column by
 * column, led by a bound on the first column that the index can use.
 */

/* "OPERATOR(schema.name)": the operator of a strategy of a type's btree class */
static char *
key_operator(Oid type, int strategy)
{
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	Oid			intype;
	Oid			opr;
	HeapTuple	tup;
	Form_pg_operator form;
	char	   *result;

	if (!OidIsValid(opclass))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("data type %s has no default operator class for access method \"btree\"",
						format_type_be(type))));
	intype = get_opclass_input_type(opclass);
	opr = get_opfamily_member(get_opclass_family(opclass), intype, intype, strategy);
	if (!OidIsValid(opr))
		elog(ERROR, "missing operator %d(%u,%u) in btree operator class %u",
			 strategy, intype, intype, opclass);
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opr));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opr);
	form = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("OPERATOR(%s.%s)",
					  quote_identifier(get_namespace_name(form->oprnamespace)),
					  NameStr(form->oprname));
	ReleaseSysCache(tup);
	return result;
}

/* the operators of a strategy for each key column; whether they are all one */
static char **
key_operators(int npk, const Oid *types, int strategy, bool *same)
{
	char	  **ops = palloc(sizeof(char *) * npk);

	*same = true;
	for (int k = 0; k < npk; k++)
	{
		ops[k] = key_operator(types[k], strategy);
		*same &= strcmp(ops[k], ops[0]) == 0;
	}
	return ops;
}

/* "a, b, c" */
static char *
expr_list(int n, char **exprs)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < n; k++)
		appendStringInfo(&buf, "%s%s", k > 0 ? ", " : "", exprs[k]);
	return buf.data;
}

/*
 * backfill_key_compare_types
 *		The SQL of "left op right" for two keys of npk columns of the given
 *		types, each given as one expression per column, op the btree
 *		strategy (BTLessStrategyNumber ... BTGreaterStrategyNumber).
 */
char *
backfill_key_compare_types(int npk, const Oid *types, char **left, int strategy, char **right)
{
	bool		same;
	char	  **ops = key_operators(npk, types, strategy, &same);
	bool		below = strategy == BTLessStrategyNumber || strategy == BTLessEqualStrategyNumber;
	char	  **strict;
	char	  **eq;
	char	  **lead;
	StringInfoData buf;

	if (strategy == BTEqualStrategyNumber && !same)
	{
		initStringInfo(&buf);
		for (int k = 0; k < npk; k++)
			appendStringInfo(&buf, "%s%s %s %s", k > 0 ? " AND " : "(", left[k], ops[k], right[k]);
		appendStringInfoChar(&buf, ')');
		return buf.data;
	}
	if (same)
		return psprintf("(%s) %s (%s)", expr_list(npk, left), ops[0], expr_list(npk, right));

	/*
	 * (l1 op' r1 OR (l1 = r1 AND (l2 op' r2 OR (... AND ln op rn)))), op'
	 * the strict form of op, after l1 op'' r1 (op'' the lax one), which is
	 * implied and bounds an index scan.
	 */
	strict = key_operators(npk, types, below ? BTLessStrategyNumber : BTGreaterStrategyNumber, &same);
	eq = key_operators(npk, types, BTEqualStrategyNumber, &same);
	lead = key_operators(1, types, below ? BTLessEqualStrategyNumber : BTGreaterEqualStrategyNumber, &same);
	initStringInfo(&buf);
	appendStringInfo(&buf, "(%s %s %s AND ", left[0], lead[0], right[0]);
	for (int k = 0; k < npk - 1; k++)
		appendStringInfo(&buf, "(%s %s %s OR (%s %s %s AND ",
						 left[k], strict[k], right[k], left[k], eq[k], right[k]);
	appendStringInfo(&buf, "%s %s %s", left[npk - 1], ops[npk - 1], right[npk - 1]);
	for (int k = 0; k < npk - 1; k++)
		appendStringInfoString(&buf, "))");
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * backfill_key_in_types
 *		The SQL of "left IN (subquery)" for a key (one expression per
 *		column), the subquery returning keys of the same columns.
 */
char *
backfill_key_in_types(int npk, const Oid *types, char **left, const char *subquery)
{
	bool		same;
	char	  **eq = key_operators(npk, types, BTEqualStrategyNumber, &same);
	StringInfoData buf;

	if (same)
		return psprintf("(%s) %s ANY (%s)", expr_list(npk, left), eq[0], subquery);
	initStringInfo(&buf);
	appendStringInfo(&buf, "EXISTS (SELECT FROM (%s) AS m(", subquery);
	for (int k = 0; k < npk; k++)
		appendStringInfo(&buf, "%sm%d", k > 0 ? ", " : "", k);
	appendStringInfoString(&buf, ") WHERE ");
	for (int k = 0; k < npk; k++)
		appendStringInfo(&buf, "%s%s %s m.m%d", k > 0 ? " AND " : "", left[k], eq[k], k);
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* the job's key columns as expressions: "alias"."k1", ... (or bare when NULL) */
char **
backfill_pk_exprs(BackfillJob *job, const char *alias)
{
	char	  **exprs = palloc(sizeof(char *) * job->npk);

	for (int k = 0; k < job->npk; k++)
		exprs[k] = alias ? psprintf("%s.%s", alias, quote_identifier(job->pk_names[k])) :
			pstrdup(quote_identifier(job->pk_names[k]));
	return exprs;
}

/* the parameters $first, $first+1, ... as expressions */
char **
backfill_pk_param_exprs(BackfillJob *job, int first)
{
	char	  **exprs = palloc(sizeof(char *) * job->npk);

	for (int k = 0; k < job->npk; k++)
		exprs[k] = psprintf("$%d", first + k);
	return exprs;
}

/* "left op right" for two keys of the job (see backfill_key_compare_types) */
char *
backfill_key_compare(BackfillJob *job, char **left, int strategy, char **right)
{
	return backfill_key_compare_types(job->npk, job->pk_types, left, strategy, right);
}

/* "alias.key op $first, ..." */
char *
backfill_key_compare_params(BackfillJob *job, const char *alias, int strategy, int first)
{
	return backfill_key_compare(job, backfill_pk_exprs(job, alias), strategy,
								backfill_pk_param_exprs(job, first));
}

/* "alias.key IN (subquery)" */
char *
backfill_key_in(BackfillJob *job, const char *alias, const char *subquery)
{
	return backfill_key_in_types(job->npk, job->pk_types, backfill_pk_exprs(job, alias), subquery);
}

/* the relation exists, and the caller may read it or some of its columns */
static void
check_key_readable(Oid upstream)
{
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(upstream)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", upstream)));
	if (pg_class_aclcheck(upstream, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(upstream, GetUserId(), ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(upstream))));
}

/*
 * backfill_key_compare_columns
 *		The SQL of "left op right" for the key columns names (npk of them) of
 *		upstream under the aliases left and right, strategy a btree strategy
 *		number, as backfill_key_compare_types writes it with the columns'
 *		types.  The SQL names the key and its types: only for a caller who
 *		may read the table or those columns.
 */
char *
backfill_key_compare_columns(Oid upstream, int npk, char **names, const char *left,
							 int strategy, const char *right)
{
	Oid		   *types;
	char	  **l;
	char	  **r;

	check_key_readable(upstream);
	if (npk < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a key has at least one column")));
	types = palloc(sizeof(Oid) * npk);
	l = palloc(sizeof(char *) * npk);
	r = palloc(sizeof(char *) * npk);
	for (int k = 0; k < npk; k++)
	{
		AttrNumber	attnum = get_attnum(upstream, names[k]);

		if (attnum <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							names[k], get_rel_name(upstream))));
		if (pg_class_aclcheck(upstream, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
			pg_attribute_aclcheck(upstream, attnum, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for column \"%s\" of relation \"%s\"",
							names[k], get_rel_name(upstream))));
		types[k] = get_atttype(upstream, attnum);
		l[k] = psprintf("%s.%s", quote_identifier(left), quote_identifier(names[k]));
		r[k] = psprintf("%s.%s", quote_identifier(right), quote_identifier(names[k]));
	}
	return backfill_key_compare_types(npk, types, l, strategy, r);
}

PG_FUNCTION_INFO_V1(backfill_key_compare_sql);

/*
 * backfill._key_compare_sql(upstream regclass, pk_columns text[], left text,
 *							 op text, right text) RETURNS text
 *
 * The comparison of the key columns pk_columns of upstream under alias left
 * with those under alias right, op one of <, <=, =, >=, >, as
 * backfill_key_compare_columns writes it.
 */
Datum
backfill_key_compare_sql(PG_FUNCTION_ARGS)
{
	Oid			upstream = PG_GETARG_OID(0);
	char	  **names;
	int			npk;
	char	   *op = text_to_cstring(PG_GETARG_TEXT_PP(3));
	static const char *const ops[] = {"<", "<=", "=", ">=", ">"};
	int			strategy = 0;

	check_key_readable(upstream);
	(void) backfill_text_array_sql(PG_GETARG_DATUM(1), &names, &npk);
	for (int i = 0; i < lengthof(ops); i++)
		if (strcmp(op, ops[i]) == 0)
			strategy = i + 1;	/* BTLessStrategyNumber is 1, and so on */
	if (strategy == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid key comparison operator \"%s\"", op),
				 errhint("Use one of <, <=, =, >=, >.")));
	PG_RETURN_TEXT_P(cstring_to_text(backfill_key_compare_columns(upstream, npk, names,
																  text_to_cstring(PG_GETARG_TEXT_PP(2)),
																  strategy,
																  text_to_cstring(PG_GETARG_TEXT_PP(4)))));
}

/*
 * backfill_vnode_sql
 *		The vnode of the key columns keys (a list) in the job: its range
 *		mapping's, or the hash of backfill.vnode() for a job with hashed
 *		vnodes, which older catalogs have.
 */
char *
backfill_vnode_sql(BackfillJob *job, const char *keys)
{
	if (job->vnode_bounds)
		return psprintf("backfill.job_vnode(%lld::pg_catalog.int8, %s)",
						(long long) job->job_id, keys);
	return psprintf("backfill.vnode(%s)", keys);
}

/* ", k1 = EXCLUDED.k1, ...": an upsert's SET list for the key columns */
void
backfill_append_excluded_key(StringInfo sql, BackfillJob *job)
{
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(sql, ", %s = EXCLUDED.%s",
						 quote_identifier(job->pk_names[k]),
						 quote_identifier(job->pk_names[k]));
}

/*
 * backfill_text_array_sql
 *		The elements of a text[] as a list of quoted identifiers; the
 *		elements themselves into *elems and their number into *nelems, when
 *		asked for.
 */
char *
backfill_text_array_sql(Datum array, char ***elems, int *nelems)
{
	Datum	   *datums;
	bool	   *nulls;
	int			n;
	StringInfoData buf;
	ArrayType  *arr = DatumGetArrayTypeP(array);

	/* a list of names: one dimension, no NULL among them */
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a list of column names must be one-dimensional"),
				 errdetail("The array has %d dimensions.", ARR_NDIM(arr))));
	if (array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a list of column names must not contain nulls")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT,
					  &datums, &nulls, &n);
	initStringInfo(&buf);
	if (elems)
		*elems = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		char	   *s = TextDatumGetCString(datums[i]);

		if (elems)
			(*elems)[i] = s;
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", quote_identifier(s));
	}
	if (nelems)
		*nelems = n;
	return buf.data;
}

/*
 * How the downstream takes column i of the job: not at all when it is a
 * generated column there (it computes it itself), and not by UPDATE when it
 * is an identity GENERATED ALWAYS there.  The downstream of a job is its
 * own table, made without either; after a cutover it is the old table,
 * whose columns are as the user made them.
 */
static bool
downstream_takes(BackfillJob *job, int i, bool update)
{
	HeapTuple	tup = SearchSysCacheAttName(job->downstream, job->col_names[i]);
	Form_pg_attribute att;
	bool		takes;

	if (!HeapTupleIsValid(tup))
		return true;			/* the statement reports it */
	att = (Form_pg_attribute) GETSTRUCT(tup);
	takes = att->attgenerated == '\0' &&
		(!update || att->attidentity != ATTRIBUTE_IDENTITY_ALWAYS);
	ReleaseSysCache(tup);
	return takes;
}

/*
 * " OVERRIDING SYSTEM VALUE" when the downstream has an identity GENERATED
 * ALWAYS among the job's columns (a table the user made, filled with
 * into_existing, or the old table of a cutover): its rows keep the
 * upstream's values.
 */
static const char *
overriding_sql(BackfillJob *job)
{
	for (int i = 0; i < job->ncols; i++)
		if (downstream_takes(job, i, false) && !downstream_takes(job, i, true))
			return " OVERRIDING SYSTEM VALUE";
	return "";
}

/*
 * Making downstream rows equal to the upstream's.
 *
 * For a set of keys, the query "matching" (which returns keys): delete their
 * downstream rows, then insert the upstream's rows of those keys that pass
 * the job's filter, projected, as the statement's snapshot sees them.
 * Re-reading the upstream, rather than replaying changes, makes the result
 * right whatever order the changes came in, and a row that moved into or out
 * of the filter is inserted or deleted.  With returning_vnode, each
 * statement returns the vnode of every row it wrote.
 */
char *
backfill_sync_delete_sql(BackfillJob *job, const char *matching, bool returning_vnode)
{
	return psprintf("DELETE FROM %s d WHERE %s%s%s",
					job->downstream_sql, backfill_key_in(job, "d", matching),
					returning_vnode ? " RETURNING " : "",
					returning_vnode ? backfill_vnode_sql(job, backfill_pk_list(job, "d")) : "");
}

char *
backfill_sync_insert_sql(BackfillJob *job, const char *matching, bool returning_vnode)
{
	return psprintf("INSERT INTO %s (%s)%s SELECT %s FROM %s WHERE %s%s%s%s",
					job->downstream_sql, job->columns_sql, overriding_sql(job), job->select_sql,
					backfill_job_scan(job), backfill_key_in(job, "u", matching),
					backfill_filter_and(job),
					returning_vnode ? " RETURNING " : "",
					returning_vnode ? backfill_vnode_sql(job, backfill_pk_list(job, NULL)) : "");
}

/*
 * Making downstream rows equal to the upstream's in place: for the keys of
 * "matching", an upsert of the upstream's rows that pass the filter, then a
 * delete of the downstream rows whose key has none.  For a downstream that
 * a foreign key references (its own, as in a tree of rows, or another
 * table's): the delete and insert above would take a referenced row out of
 * the table for a moment, which ON DELETE CASCADE or SET NULL would act on
 * (deleting or emptying the rows that reference it, in the downstream only)
 * and NO ACTION would refuse.  Upserting first lets rows that the upstream
 * moved away from a parent move before the parent goes; a delete then
 * cascades only to rows the upstream deleted too.  Other downstreams keep
 * the delete and insert: a unique column's values swapped between two rows
 * within one barrier would make an upsert of one row collide with the
 * other's old value.
 */
bool
backfill_sync_in_place(BackfillJob *job)
{
	Oid			argtype = OIDOID;
	Datum		arg = ObjectIdGetDatum(job->downstream);

	return OidIsValid(job->downstream) &&
		backfill_spi_true_args("SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint "
							   "WHERE contype OPERATOR(pg_catalog.=) 'f' "
							   "AND confrelid OPERATOR(pg_catalog.=) $1)",
							   1, &argtype, &arg);
}

static char *sync_upsert_sql(BackfillJob *job, const char *key_cond);

char *
backfill_sync_upsert_matching_sql(BackfillJob *job, const char *matching, bool returning_vnode)
{
	return psprintf("%s%s%s",
					sync_upsert_sql(job, backfill_key_in(job, "u", matching)),
					returning_vnode ? " RETURNING " : "",
					returning_vnode ? backfill_vnode_sql(job, backfill_pk_list(job, NULL)) : "");
}

char *
backfill_sync_delete_gone_matching_sql(BackfillJob *job, const char *matching,
									   bool returning_vnode)
{
	return psprintf("DELETE FROM %s d WHERE %s AND NOT EXISTS "
					"(SELECT FROM %s WHERE %s%s)%s%s",
					job->downstream_sql, backfill_key_in(job, "d", matching),
					backfill_job_scan(job),
					backfill_key_compare(job, backfill_pk_exprs(job, "u"), BTEqualStrategyNumber,
										 backfill_pk_exprs(job, "d")),
					backfill_filter_and(job),
					returning_vnode ? " RETURNING " : "",
					returning_vnode ? backfill_vnode_sql(job, backfill_pk_list(job, "d")) : "");
}

/*
 * For one key, $1..$npk, in a writer's transaction (the apply trigger):
 * upsert the upstream's row if it passes the filter, or delete the
 * downstream's when the upstream has none that does.  An upsert, not a delete and an insert, so that two writers of
 * one key in READ COMMITTED never collide on the downstream's key.  Its SET
 * list has every output column, the key columns too: an equal key may be
 * written differently (numeric 1.5 and 1.50, float8 0 and -0, interval
 * '1 day' and '24 hours'), and the downstream must show the upstream's.
 * A generated column of the downstream is left out, and an identity
 * GENERATED ALWAYS column is inserted with OVERRIDING SYSTEM VALUE (the
 * row keeps the upstream's value) and never updated: the old table of a
 * cutover, which follows the new one, may have both.
 * The _many forms do the same for a set of keys given as one array per key
 * column, $1..$npk (a statement's rows, applied at once).
 */
static char *
sync_upsert_sql(BackfillJob *job, const char *key_cond)
{
	StringInfoData cols;
	StringInfoData select;
	StringInfoData setlist;
	char	   *pkcols = backfill_pk_list(job, NULL);
	bool		overriding = false;

	initStringInfo(&cols);
	initStringInfo(&select);
	initStringInfo(&setlist);
	for (int i = 0; i < job->ncols; i++)
	{
		const char *col = quote_identifier(job->col_names[i]);

		if (!downstream_takes(job, i, false))
			continue;
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "", col);
		if (job->col_exprs != NULL && job->col_exprs[i] != NULL)
			appendStringInfo(&select, "%s(%s) AS %s", select.len > 0 ? ", " : "",
							 job->col_exprs[i], col);
		else
			appendStringInfo(&select, "%s%s", select.len > 0 ? ", " : "", col);
		if (downstream_takes(job, i, true))
			appendStringInfo(&setlist, "%s%s = EXCLUDED.%s", setlist.len > 0 ? ", " : "", col, col);
		else
			overriding = true;
	}
	return psprintf("INSERT INTO %s (%s)%s SELECT %s FROM %s WHERE %s%s "
					"ON CONFLICT (%s) DO %s%s",
					job->downstream_sql, cols.data,
					overriding ? " OVERRIDING SYSTEM VALUE" : "", select.data,
					backfill_job_scan(job), key_cond, backfill_filter_and(job), pkcols,
					setlist.len > 0 ? "UPDATE SET " : "NOTHING", setlist.data);
}

/*
 * backfill_keys_in_arrays
 *		"SELECT ... FROM ROWS FROM (pg_catalog.unnest($1), ...) ...": the
 *		keys of one array per key column, one key column each.
 *
 * unnest() of an array of a composite type returns the composite's fields
 * as columns, not the composite: a key column of such a type would become
 * several columns (or, with one field left, a column of another type).  A
 * one-column key reads the function's whole row, which is the element
 * whatever its type; a key of several columns takes the fields of a
 * composite column by position and builds the value again (the alias list
 * of a function returning a composite names its live fields only).
 */
char *
backfill_keys_in_arrays(BackfillJob *job)
{
	StringInfoData buf;
	StringInfoData aliases;
	StringInfoData funcs;

	initStringInfo(&buf);
	if (job->npk == 1)
	{
		appendStringInfoString(&buf, "SELECT k FROM pg_catalog.unnest($1) AS k");
		return buf.data;
	}
	initStringInfo(&aliases);
	initStringInfo(&funcs);
	appendStringInfoString(&buf, "SELECT ");
	for (int k = 0; k < job->npk; k++)
	{
		appendStringInfo(&funcs, "%spg_catalog.unnest($%d)", k > 0 ? ", " : "", k + 1);
		if (k > 0)
			appendStringInfoString(&buf, ", ");
		if (type_is_rowtype(job->pk_types[k]))
		{
			TupleDesc	desc = lookup_rowtype_tupdesc(getBaseType(job->pk_types[k]), -1);
			int			nlive = 0;

			appendStringInfoString(&buf, "ROW(");
			for (int i = 0; i < desc->natts; i++)
			{
				if (TupleDescAttr(desc, i)->attisdropped)
					continue;
				appendStringInfo(&buf, "%sk.k%d_%d", nlive > 0 ? ", " : "", k, nlive);
				appendStringInfo(&aliases, "%sk%d_%d", aliases.len > 0 ? ", " : "", k, nlive);
				nlive++;
			}
			ReleaseTupleDesc(desc);
			appendStringInfo(&buf, ")::%s", format_type_be_qualified(job->pk_types[k]));
		}
		else
		{
			appendStringInfo(&buf, "k.k%d", k);
			appendStringInfo(&aliases, "%sk%d", aliases.len > 0 ? ", " : "", k);
		}
	}
	appendStringInfo(&buf, " FROM ROWS FROM (%s) AS k(%s)", funcs.data, aliases.data);
	return buf.data;
}

char *
backfill_sync_upsert_sql(BackfillJob *job)
{
	return sync_upsert_sql(job, backfill_key_compare_params(job, "u", BTEqualStrategyNumber, 1));
}

/*
 * With also_any, the keys are also asked for column by column, "u.c =
 * ANY ($1) AND ...": a condition that postgres_fdw sends to the source, so
 * that a foreign upstream is read for those keys only (a key of several
 * columns, for the keys that combine their values), where the IN above
 * would have it read whole.  A column of a composite type is left out:
 * its arrays are not sent.
 */
static char *
key_arrays_any(BackfillJob *job, const char *alias)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
	{
		if (type_is_rowtype(job->pk_types[k]))
			continue;
		appendStringInfo(&buf, " AND %s.%s %s ANY ($%d)", alias,
						 quote_identifier(job->pk_names[k]),
						 key_operator(job->pk_types[k], BTEqualStrategyNumber), k + 1);
	}
	return buf.data;
}

char *
backfill_sync_upsert_many_sql(BackfillJob *job, bool also_any)
{
	return sync_upsert_sql(job, psprintf("%s%s",
										 backfill_key_in(job, "u", backfill_keys_in_arrays(job)),
										 also_any ? key_arrays_any(job, "u") : ""));
}

/* the insert of backfill_sync_insert_sql for the keys of the arrays, also_any */
char *
backfill_sync_insert_many_sql(BackfillJob *job)
{
	return psprintf("INSERT INTO %s (%s)%s SELECT %s FROM %s WHERE %s%s%s",
					job->downstream_sql, job->columns_sql, overriding_sql(job), job->select_sql,
					backfill_job_scan(job),
					backfill_key_in(job, "u", backfill_keys_in_arrays(job)),
					key_arrays_any(job, "u"), backfill_filter_and(job));
}

char *
backfill_sync_delete_gone_sql(BackfillJob *job)
{
	return psprintf("DELETE FROM %s d WHERE %s AND NOT EXISTS "
					"(SELECT FROM %s WHERE %s%s)",
					job->downstream_sql,
					backfill_key_compare_params(job, "d", BTEqualStrategyNumber, 1),
					backfill_job_scan(job),
					backfill_key_compare_params(job, "u", BTEqualStrategyNumber, 1),
					backfill_filter_and(job));
}

char *
backfill_sync_delete_gone_many_sql(BackfillJob *job, bool also_any)
{
	return psprintf("DELETE FROM %s d WHERE %s AND NOT EXISTS "
					"(SELECT FROM %s WHERE %s%s%s)",
					job->downstream_sql, backfill_key_in(job, "d", backfill_keys_in_arrays(job)),
					backfill_job_scan(job),
					backfill_key_compare(job, backfill_pk_exprs(job, "u"), BTEqualStrategyNumber,
										 backfill_pk_exprs(job, "d")),
					also_any ? key_arrays_any(job, "u") : "",
					backfill_filter_and(job));
}

/*
 * A barrier's statements run in an SPI connection of their own, nested in
 * the run's: what SPI allocates for them is released when the barrier is
 * done, instead of accumulating in the run's connection, which lives as long
 * as the CALL or the worker.
 */
void
backfill_spi_enter(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
backfill_spi_leave(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/*
 * backfill_spi_true
 *		Whether a query of one boolean value returns true (not false, not
 *		NULL), in an SPI connection of its own, so that it can run inside a
 *		barrier's.  backfill_spi_true_args binds $1 to $nargs.
 */
bool
backfill_spi_true(const char *sql)
{
	return backfill_spi_true_args(sql, 0, NULL, NULL);
}

bool
backfill_spi_true_args(const char *sql, int nargs, Oid *types, Datum *values)
{
	bool		isnull;
	bool		result;

	backfill_spi_enter();
	backfill_spi_exec_args(sql, nargs, types, values, NULL, SPI_OK_SELECT);
	result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	backfill_spi_leave();
	return !isnull && result;
}

/*
 * backfill_count_rows
 *		The rows of an upstream (its SQL name) that a job copies and the
 *		current user sees, under its row-level security: the progress total.
 *		leaf_sqls: as for backfill_count_sql.
 */
int64
backfill_count_rows(const char *upstream_sql, bool partitioned, const char *filter,
					List *leaf_sqls)
{
	bool		isnull;
	int64		count;

	backfill_spi_enter();
	backfill_spi_exec(backfill_count_sql(upstream_sql, partitioned, filter, leaf_sqls),
					  SPI_OK_SELECT);
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	backfill_spi_leave();
	return count;
}

/* run a statement that must succeed with the expected SPI result */
void
backfill_spi_exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/* a list of OIDs as an oid[], a query's parameter */
Datum
backfill_oid_list_array(List *oids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, oids)
		elems[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

void
backfill_spi_exec_args(const char *sql, int nargs, Oid *types, Datum *values,
					   const char *nulls, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute_with_args failed (%d): %s", rc, sql);
}

/* every KeptPlans of this backend not freed yet, in TopMemoryContext */
static List *registered_plans = NIL;

/*
 * backfill_kept_plans_create
 *		A new, empty set of kept plans, after freeing those a failed run left
 *		(see the file header).  Caller must hold no plan of them.
 */
KeptPlans *
backfill_kept_plans_create(void)
{
	KeptPlans  *kept;
	MemoryContext old;

	while (registered_plans != NIL)
		backfill_kept_plans_free((KeptPlans *) linitial(registered_plans));
	old = MemoryContextSwitchTo(TopMemoryContext);
	kept = palloc0(sizeof(KeptPlans));
	registered_plans = lappend(registered_plans, kept);
	MemoryContextSwitchTo(old);
	return kept;
}

/* prepare a statement and keep its plan in kept */
SPIPlanPtr
backfill_keep_plan(KeptPlans *kept, const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);
	MemoryContext old;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed (%s) for: %s",
			 SPI_result_code_string(SPI_result), sql);
	SPI_keepplan(plan);
	old = MemoryContextSwitchTo(TopMemoryContext);
	kept->plans = lappend(kept->plans, plan);
	MemoryContextSwitchTo(old);
	return plan;
}

/* free the plans of kept, and kept */
void
backfill_kept_plans_free(KeptPlans *kept)
{
	ListCell   *lc;

	foreach(lc, kept->plans)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	list_free(kept->plans);
	registered_plans = list_delete_ptr(registered_plans, kept);
	pfree(kept);
}
