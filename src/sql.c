/*-------------------------------------------------------------------------
 *
 * sql.c
 *	  SQL text and SPI: the helpers every layer above builds statements with.
 *
 * Names go into SQL text through quote_identifier() only, values only as
 * parameters.  The statements that make downstream rows equal to the
 * upstream's are built here, once, for every caller: a barrier forwarding
 * the keys a set of changes names, and the apply trigger for one key.
 *
 * Plans kept across transactions belong to whoever made them, in a
 * KeptPlans of its own that it frees.  A run that fails cannot free them:
 * during the error's cleanup the failed statement may still hold one.  So a
 * KeptPlans stays registered until it is freed, and the next one made in
 * the backend frees those a failed run left, in a transaction that holds
 * none.  At most one run is active in a backend, so a registered KeptPlans
 * met there is always such a leftover.
 *
 * May call: nothing of the extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "backfill.h"

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

/* the rows a job copies, counted: the progress total */
char *
backfill_count_sql(const char *upstream_sql, bool partitioned, const char *filter)
{
	return psprintf("SELECT pg_catalog.count(*) FROM %s%s%s%s",
					backfill_upstream_scan(upstream_sql, partitioned),
					filter ? " WHERE (" : "", filter ? filter : "", filter ? ")" : "");
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

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
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
	return psprintf("DELETE FROM %s d WHERE (%s) IN (%s)%s%s",
					job->downstream_sql, backfill_pk_list(job, "d"), matching,
					returning_vnode ? " RETURNING " : "",
					returning_vnode ? backfill_vnode_sql(job, backfill_pk_list(job, "d")) : "");
}

char *
backfill_sync_insert_sql(BackfillJob *job, const char *matching, bool returning_vnode)
{
	return psprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE (%s) IN (%s)%s%s%s",
					job->downstream_sql, job->columns_sql, job->select_sql,
					backfill_job_scan(job), backfill_pk_list(job, "u"), matching,
					backfill_filter_and(job),
					returning_vnode ? " RETURNING " : "",
					returning_vnode ? backfill_vnode_sql(job, backfill_pk_list(job, NULL)) : "");
}

/*
 * For one key, $1..$npk, in a writer's transaction (the apply trigger):
 * upsert the upstream's row if it passes the filter, or delete the
 * downstream's when the upstream has none that does.  An upsert, not a delete and an insert, so that two writers of
 * one key in READ COMMITTED never collide on the downstream's key.  Its SET
 * list has every output column, the key columns too: an equal key may be
 * written differently (numeric 1.5 and 1.50, float8 0 and -0, interval
 * '1 day' and '24 hours'), and the downstream must show the upstream's.
 * The _many forms do the same for a set of keys given as one array per key
 * column, $1..$npk (a statement's rows, applied at once).
 */
static char *
sync_upsert_sql(BackfillJob *job, const char *key_cond)
{
	StringInfoData setlist;
	char	   *pkcols = backfill_pk_list(job, NULL);

	initStringInfo(&setlist);
	for (int i = 0; i < job->ncols; i++)
	{
		const char *col = quote_identifier(job->col_names[i]);

		appendStringInfo(&setlist, "%s%s = EXCLUDED.%s", i > 0 ? ", " : "", col, col);
	}
	return psprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE (%s) %s%s "
					"ON CONFLICT (%s) DO UPDATE SET %s",
					job->downstream_sql, job->columns_sql, job->select_sql,
					backfill_job_scan(job), backfill_pk_list(job, "u"),
					key_cond, backfill_filter_and(job), pkcols,
					setlist.data);
}

/*
 * keys_in_arrays
 *		"IN (SELECT ... FROM ROWS FROM (pg_catalog.unnest($1), ...) ...)":
 *		the keys of one array per key column, one key column each.
 *
 * unnest() of an array of a composite type returns the composite's fields
 * as columns, not the composite: a key column of such a type would become
 * several columns (or, with one field left, a column of another type).  A
 * one-column key reads the function's whole row, which is the element
 * whatever its type; a key of several columns takes the fields of a
 * composite column by position and builds the value again (the alias list
 * of a function returning a composite names its live fields only).
 */
static char *
keys_in_arrays(BackfillJob *job)
{
	StringInfoData buf;
	StringInfoData aliases;
	StringInfoData funcs;

	initStringInfo(&buf);
	if (job->npk == 1)
	{
		appendStringInfoString(&buf, "IN (SELECT k FROM pg_catalog.unnest($1) AS k)");
		return buf.data;
	}
	initStringInfo(&aliases);
	initStringInfo(&funcs);
	appendStringInfoString(&buf, "IN (SELECT ");
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
	appendStringInfo(&buf, " FROM ROWS FROM (%s) AS k(%s))", funcs.data, aliases.data);
	return buf.data;
}

char *
backfill_sync_upsert_sql(BackfillJob *job)
{
	return sync_upsert_sql(job, psprintf("= (%s)", backfill_pk_params(job, 1)));
}

char *
backfill_sync_upsert_many_sql(BackfillJob *job)
{
	return sync_upsert_sql(job, keys_in_arrays(job));
}

char *
backfill_sync_delete_gone_sql(BackfillJob *job)
{
	char	   *params = backfill_pk_params(job, 1);

	return psprintf("DELETE FROM %s d WHERE (%s) = (%s) AND NOT EXISTS "
					"(SELECT FROM %s WHERE (%s) = (%s)%s)",
					job->downstream_sql, backfill_pk_list(job, "d"), params,
					backfill_job_scan(job), backfill_pk_list(job, "u"), params,
					backfill_filter_and(job));
}

char *
backfill_sync_delete_gone_many_sql(BackfillJob *job)
{
	return psprintf("DELETE FROM %s d WHERE (%s) %s AND NOT EXISTS "
					"(SELECT FROM %s WHERE (%s) = (%s)%s)",
					job->downstream_sql, backfill_pk_list(job, "d"), keys_in_arrays(job),
					backfill_job_scan(job), backfill_pk_list(job, "u"),
					backfill_pk_list(job, "d"), backfill_filter_and(job));
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
 *		barrier's.
 */
bool
backfill_spi_true(const char *sql)
{
	bool		isnull;
	bool		result;

	backfill_spi_enter();
	backfill_spi_exec(sql, SPI_OK_SELECT);
	result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	backfill_spi_leave();
	return !isnull && result;
}

/*
 * backfill_count_rows
 *		The rows of an upstream (its SQL name) that a job copies and the
 *		current user sees, under its row-level security: the progress total.
 */
int64
backfill_count_rows(const char *upstream_sql, bool partitioned, const char *filter)
{
	bool		isnull;
	int64		count;

	backfill_spi_enter();
	backfill_spi_exec(backfill_count_sql(upstream_sql, partitioned, filter), SPI_OK_SELECT);
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
