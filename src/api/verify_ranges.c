/*-------------------------------------------------------------------------
 *
 * verify_ranges.c
 *	  verify_job's checksum method: ranges of keys compared by their
 *	  checksums, those that differ cut until they are small enough to be
 *	  compared row by row.
 *
 * Per range of keys, both sides' count and sum of their rows' hashes, in
 * one statement (one snapshot; verify_sql.c).  A range whose sides differ
 * is cut, at keys of the side with the more rows, into at most 16 ranges,
 * until it holds at most range_rows rows (or has been cut 64 times); such a
 * leaf is then compared row by row, as the rows method compares all of it,
 * pending keys included, 64 leaves to a statement (one look at what is
 * pending, not one per leaf).  Ranges are taken in key order, from a stack
 * whose top is the lowest, so that the rows come out in the rows method's
 * order.
 *
 * The rate limit of a finished job, as it is now, paces the upstream's rows
 * read (0, a paused job, does not hold back a comparison asked for; a job
 * that copies reads at its limit already, and a comparison then is a check
 * of its barriers): the first cut is then into ranges of about a second's
 * worth of rows, at keys of the downstream, so that no one statement reads
 * more of the upstream than the limit allows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/timestamp.h"

#include "api/verify.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"
#include "runtime/driver.h"

/* how often a range is cut at most, and how many leaves a statement compares */
#define VERIFY_MAX_DEPTH	64
#define VERIFY_LEAVES		64
#define VERIFY_MAX_PARTS	16

/* a range of keys still to compare: [lo, hi), each a text[] of the key; NULL: open */
typedef struct KeyRange
{
	char	   *lo;
	char	   *hi;
	int			depth;
	int			top;			/* a range given: its place; -1 for a part */
} KeyRange;

/* the ranges small enough to compare row by row, gathered */
typedef struct Leaves
{
	int			n;
	int64		rows;			/* the upstream's rows in them */
	StringInfoData from;		/* their bounds, FROM items */
	StringInfoData cond_u;		/* "(true AND ...) OR (true AND ...)" */
	StringInfoData cond_d;
} Leaves;

/* a range of keys as SQL: its bounds as FROM items and each side's conditions */
typedef struct RangeSql
{
	char	   *from;
	char	   *cond_u;
	char	   *cond_d;
} RangeSql;

/* where the checksum method is */
typedef struct Checksums
{
	const VerifyPlan *plan;
	ReturnSetInfo *rsinfo;
	VerifyCounts *counts;
	List	   *stack;			/* KeyRange's, the next one last */
	Leaves		leaves;
	int			nbounds;		/* the bounds named so far */
	TimestampTz last_line;
	VerifyRangeDone done;		/* ranges given: told of each one's sums */
	void	   *done_arg;
} Checksums;

/*
 * verify_rate
 *		The job's rate limit now when it has finished; 0 for none.
 */
int
verify_rate(const VerifyPlan *plan)
{
	bool		isnull;
	Datum		status = backfill_job_column(plan->job.job_id, "status", &isnull);
	Datum		rate;

	if (isnull || strcmp(TextDatumGetCString(status), "finished") != 0)
		return 0;
	rate = backfill_job_column(plan->job.job_id, "rate_limit", &isnull);
	return isnull ? 0 : DatumGetInt32(rate);
}

/* sleep until the rows read so far are no more than rate per second since the start */
static void
pace(const VerifyPlan *plan, int64 rows_read, int rate)
{
	TimestampTz until;

	if (rate <= 0)
		return;
	until = TimestampTzPlusMilliseconds(plan->started, (int64) (rows_read * 1000.0 / rate));
	while (GetCurrentTimestamp() < until)
	{
		long		secs;
		int			usecs;

		TimestampDifference(GetCurrentTimestamp(), until, &secs, &usecs);
		backfill_sleep_ms(secs * 1000 + usecs / 1000 + 1);
	}
}

/* push the range [lo, hi) at depth */
static void
push_range(Checksums *cs, char *lo, char *hi, int depth, int top)
{
	KeyRange   *r = palloc(sizeof(KeyRange));

	r->lo = lo;
	r->hi = hi;
	r->depth = depth;
	r->top = top;
	cs->stack = lappend(cs->stack, r);
}

/*
 * A bound of a range as a FROM item named name: the key's values, each cast
 * to its type, under the key's column names.
 */
static char *
bound_item(const VerifyJob *job, const char *bound, const char *name)
{
	ArrayType  *array = DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, (char *) bound,
																 TEXTOID, -1));
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	StringInfoData buf;

	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	initStringInfo(&buf);
	appendStringInfoString(&buf, ", (SELECT ");
	for (int k = 0; k < Min(n, job->npk); k++)
		appendStringInfo(&buf, "%s%s::%s AS %s", k > 0 ? ", " : "",
						 nulls[k] ? "NULL" : quote_literal_cstr(TextDatumGetCString(elems[k])),
						 job->pk_types_sql[k], quote_identifier(job->pk_names[k]));
	appendStringInfo(&buf, ") %s", name);
	return buf.data;
}

/* add a bound of a range to its SQL: a FROM item named name, a condition on each side */
static void
add_bound(const VerifyJob *job, RangeSql *sql, const char *bound, const char *name,
		  int strategy)
{
	sql->from = psprintf("%s%s", sql->from, bound_item(job, bound, name));
	sql->cond_u = psprintf("%s AND %s", sql->cond_u,
						   backfill_key_compare_columns(job->upstream, job->npk, job->pk_names,
														"u", strategy, name));
	sql->cond_d = psprintf("%s AND %s", sql->cond_d,
						   backfill_key_compare_columns(job->upstream, job->npk, job->pk_names,
														"d", strategy, name));
}

/* the SQL of a range: each bound a FROM item with a name of its own */
static RangeSql
range_sql(Checksums *cs, const KeyRange *r)
{
	RangeSql	sql = {"", "", ""};
	int			nb = ++cs->nbounds;

	if (r->lo != NULL)
		add_bound(&cs->plan->job, &sql, r->lo, psprintf("backfill_lo%d", nb),
				  BTGreaterEqualStrategyNumber);
	if (r->hi != NULL)
		add_bound(&cs->plan->job, &sql, r->hi, psprintf("backfill_hi%d", nb),
				  BTLessStrategyNumber);
	return sql;
}

/*
 * verify_range_where
 *		A range of keys from lo up to hi (text[] literals of the key; NULL:
 *		open) as SQL: its bounds as FROM items (", ..."), each side's
 *		conditions (" AND ...").
 */
void
verify_range_where(const VerifyPlan *plan, char *lo, char *hi, char **from, char **cond_u,
				   char **cond_d)
{
	Checksums	cs = {0};
	KeyRange	r = {lo, hi, 0, -1};
	RangeSql	sql;

	cs.plan = plan;
	sql = range_sql(&cs, &r);
	*from = sql.from;
	*cond_u = sql.cond_u;
	*cond_d = sql.cond_d;
}

/* the leaves gathered so far, compared row by row in one statement */
static void
compare_leaves(Checksums *cs)
{
	Leaves	   *lv = &cs->leaves;
	char	   *sql = verify_rows_sql(cs->plan, psprintf(" AND (%s)", lv->cond_u.data),
									  psprintf(" AND (%s)", lv->cond_d.data), lv->from.data);

	cs->counts->differences += verify_compare(cs->plan, sql, cs->rsinfo);
	cs->counts->rows_read += lv->rows;
	lv->n = 0;
	lv->rows = 0;
	resetStringInfo(&lv->from);
	resetStringInfo(&lv->cond_u);
	resetStringInfo(&lv->cond_d);
	pace(cs->plan, cs->counts->rows_read, verify_rate(cs->plan));
}

/* a range small enough, to compare row by row with the next leaves */
static void
add_leaf(Checksums *cs, const RangeSql *sql, int64 rows)
{
	Leaves	   *lv = &cs->leaves;
	const char *sep = lv->n > 0 ? " OR " : "";

	lv->n++;
	lv->rows += rows;
	appendStringInfoString(&lv->from, sql->from);
	appendStringInfo(&lv->cond_u, "%s(true%s)", sep, sql->cond_u);
	appendStringInfo(&lv->cond_d, "%s(true%s)", sep, sql->cond_d);
}

/*
 * verify_range_sums
 *		Both sides' "count sum" of a range of keys (its bounds as FROM items,
 *		each side's conditions; "" for all of the keys), in one statement.
 */
VerifySums
verify_range_sums(const VerifyPlan *plan, const char *from, const char *cond_u,
				  const char *cond_d)
{
	SPITupleTable *rows = verify_query(plan, verify_sums_sql(plan, from, cond_u, cond_d));
	char	   *sums[2] = {NULL, NULL};	/* d, u */
	VerifySums	result = {0};

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *side = SPI_getvalue(rows->vals[i], rows->tupdesc, 1);

		sums[strcmp(side, "d") == 0 ? 0 : 1] = SPI_getvalue(rows->vals[i], rows->tupdesc, 2);
	}
	if (sums[0] == NULL || sums[1] == NULL)
		elog(ERROR, "the checksums of a range of backfill job " INT64_FORMAT " have no row",
			 plan->job.job_id);
	result.n_d = strtoi64(sums[0], NULL, 10);
	result.n_u = strtoi64(sums[1], NULL, 10);
	result.sum = sums[1];
	result.equal = strcmp(sums[0], sums[1]) == 0;
	SPI_freetuptable(rows);
	return result;
}

/* the downstream's rows, as the job's owner reads them */
static int64
downstream_rows(Checksums *cs)
{
	SPITupleTable *rows = verify_query(cs->plan,
									   psprintf("SELECT count(*)::text, NULL::text FROM %s d",
												cs->plan->source.scan_d));
	int64		n = strtoi64(SPI_getvalue(rows->vals[0], rows->tupdesc, 1), NULL, 10);

	SPI_freetuptable(rows);
	return n;
}

/* order split points by their place */
static int
compare_places(const ListCell *a, const ListCell *b)
{
	int64		pa = ((int64 *) lfirst(a))[0];
	int64		pb = ((int64 *) lfirst(b))[0];

	return pa < pb ? -1 : pa > pb ? 1 : 0;
}

/*
 * The keys to cut a range at, in key order: every step-th key of the fuller
 * side (n_u < 0: the downstream's, paced, step the rate).
 */
static List *
split_points(Checksums *cs, const RangeSql *sql, int64 n_u, int64 n_d, int rate)
{
	const VerifyPlan *plan = cs->plan;
	SPITupleTable *rows;
	List	   *points = NIL;
	List	   *keys = NIL;
	ListCell   *lc;
	char	   *query;

	if (n_u < 0)
		query = verify_split_sql(plan->keyt_d, plan->key_d,
								 psprintf("%s d", plan->source.scan_d), sql->from, sql->cond_d,
								 Max(rate, 1));
	else
	{
		int64		most = Max(n_u, n_d);
		int64		parts = Min(VERIFY_MAX_PARTS, (most + plan->range_rows - 1) / plan->range_rows);
		int64		step = (most + parts - 1) / parts;

		if (n_d * 2 >= n_u)
			query = verify_split_sql(plan->keyt_d, plan->key_d,
									 psprintf("%s d", plan->source.scan_d), sql->from,
									 sql->cond_d, step);
		else
			query = verify_split_sql(plan->keyt_u, plan->job.key_u,
									 psprintf("(SELECT %s FROM %s WHERE %s) u", plan->job.key_u,
											  plan->scan_u, plan->source.covered),
									 sql->from, sql->cond_u, step);
	}
	rows = verify_query(plan, query);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int64	   *point = palloc(sizeof(int64) + sizeof(char *));

		point[0] = strtoi64(SPI_getvalue(rows->vals[i], rows->tupdesc, 2), NULL, 10);
		*(char **) (point + 1) = SPI_getvalue(rows->vals[i], rows->tupdesc, 1);
		points = lappend(points, point);
	}
	SPI_freetuptable(rows);
	list_sort(points, compare_places);
	foreach(lc, points)
		keys = lappend(keys, *(char **) ((int64 *) lfirst(lc) + 1));
	return keys;
}

/* cut a range at the keys given, the lowest part pushed last */
static void
push_parts(Checksums *cs, const KeyRange *r, List *keys)
{
	int			n = list_length(keys) + 2;
	char	  **bounds = palloc(sizeof(char *) * n);

	bounds[0] = r->lo;
	for (int i = 0; i < list_length(keys); i++)
		bounds[i + 1] = list_nth(keys, i);
	bounds[n - 1] = r->hi;
	for (int i = n - 2; i >= 0; i--)
		push_range(cs, bounds[i], bounds[i + 1], r->depth + 1, -1);
}

/* a line of progress: ranges done of those known so far (a range that differs adds its parts) */
static void
progress_line(Checksums *cs)
{
	if (!backfill_progress_due(cs->last_line))
		return;
	ereport(INFO,
			(errmsg("backfill job %lld verify: %lld of %lld ranges, %lld rows compared, %lld differences so far",
					(long long) cs->plan->job.job_id, (long long) cs->counts->ranges,
					(long long) (cs->counts->ranges + list_length(cs->stack)),
					(long long) cs->counts->rows_read, (long long) cs->counts->differences)));
	cs->last_line = GetCurrentTimestamp();
}

/* compare the next range of the stack: equal, a leaf, or cut */
static void
compare_range(Checksums *cs)
{
	KeyRange   *r = llast(cs->stack);
	RangeSql	sql;
	int64		n_u = -1;		/* -1: not counted */
	int64		n_d;
	int			rate;

	cs->stack = list_delete_last(cs->stack);
	cs->counts->ranges++;
	sql = range_sql(cs, r);
	rate = verify_rate(cs->plan);
	if (r->depth == 0 && rate > 0 && cs->done == NULL)
		n_d = downstream_rows(cs);
	else
	{
		VerifySums	sums = verify_range_sums(cs->plan, sql.from, sql.cond_u, sql.cond_d);

		n_u = sums.n_u;
		n_d = sums.n_d;
		if (r->top >= 0)
			cs->done(cs->done_arg, r->top, n_u, n_d, sums.equal ? sums.sum : NULL);
		cs->counts->rows_read += n_u;
		pace(cs->plan, cs->counts->rows_read, rate);
		if (sums.equal)
			return;
	}
	if ((n_u >= 0 && Max(n_u, n_d) <= cs->plan->range_rows) || r->depth >= VERIFY_MAX_DEPTH)
	{
		add_leaf(cs, &sql, Max(n_u, 0));
		return;
	}
	push_parts(cs, r, split_points(cs, &sql, n_u, n_d, rate));
}

/* compare the ranges of the stack, and the leaves they leave */
static void
compare_stack(Checksums *cs)
{
	initStringInfo(&cs->leaves.from);
	initStringInfo(&cs->leaves.cond_u);
	initStringInfo(&cs->leaves.cond_d);
	cs->last_line = GetCurrentTimestamp();
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (cs->leaves.n >= VERIFY_LEAVES || (cs->stack == NIL && cs->leaves.n > 0))
			compare_leaves(cs);
		else if (cs->stack == NIL)
			break;
		else
		{
			progress_line(cs);
			compare_range(cs);
		}
	}
}

/*
 * verify_by_checksums
 *		Compare the whole key range of a job by checksums, returning the
 *		differences to the caller of verify_job; the ranges compared, the
 *		upstream's rows read and the differences into *counts.
 */
void
verify_by_checksums(const VerifyPlan *plan, ReturnSetInfo *rsinfo, VerifyCounts *counts)
{
	Checksums	cs = {0};

	cs.plan = plan;
	cs.rsinfo = rsinfo;
	cs.counts = counts;
	push_range(&cs, NULL, NULL, 0, -1);
	compare_stack(&cs);
}

/*
 * verify_given_ranges
 *		Compare ranges of keys given (bounds[i] to bounds[i + 1] for each i in
 *		which, in key order; a bound a text[] of the key, NULL at either end
 *		for open) as verify_by_checksums compares the whole: done is told of
 *		each one's counts and sum (NULL when its sides differ) as it is
 *		read, in the statement that reads it.
 */
void
verify_given_ranges(const VerifyPlan *plan, ReturnSetInfo *rsinfo, VerifyCounts *counts,
					char **bounds, List *which, VerifyRangeDone done, void *done_arg)
{
	Checksums	cs = {0};

	cs.plan = plan;
	cs.rsinfo = rsinfo;
	cs.counts = counts;
	cs.done = done;
	cs.done_arg = done_arg;
	for (int i = list_length(which) - 1; i >= 0; i--)
	{
		int			r = list_nth_int(which, i);

		push_range(&cs, bounds[r], bounds[r + 1], 0, r);
	}
	compare_stack(&cs);
}
