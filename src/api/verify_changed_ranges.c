/*-------------------------------------------------------------------------
 *
 * verify_changed_ranges.c
 *	  The ranges of keys of verify_job(job, 'changed'): cut anew (the job's
 *	  range vnodes, or every so many keys of the downstream), their bounds
 *	  as keys, and a range grown too large cut in parts, the pages' lists
 *	  renumbered to name every part of a range they named.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "api/verify_changed.h"
#include "catalog/catalog_access.h"
#include "copy/page_ranges.h"

/* a text[] of the elements given */
static char *
text_array_literal(Datum *elems, int n)
{
	ArrayType  *a = construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT);

	return DatumGetCString(OidFunctionCall1(F_ARRAY_OUT, PointerGetDatum(a)));
}

/*
 * Ranges cut anew: at the job's range vnodes' bounds when it has them, else
 * at every so many keys of the downstream.  Bounds as VerifyState holds
 * them.
 */
void
verify_cut_ranges(Changed *ch)
{
	const VerifyPlan *plan = ch->plan;
	VerifyState *state = ch->state;
	bool		isnull;
	Datum		d = backfill_job_column(plan->job.job_id, "vnode_bounds", &isnull);
	List	   *keys = NIL;

	if (!isnull)
	{
		ArrayType  *bounds = DatumGetArrayTypeP(d);
		int			npk = plan->job.npk;
		Datum	   *elems;
		int			n;

		deconstruct_array(bounds, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		for (int i = 0; i + npk <= n; i += npk)
			keys = lappend(keys, text_array_literal(&elems[i], npk));
	}
	else
	{
		SPITupleTable *rows = verify_query(plan, psprintf("SELECT count(*)::text FROM %s d",
														  plan->source.scan_d));
		int64		n = strtoi64(SPI_getvalue(rows->vals[0], rows->tupdesc, 1), NULL, 10);
		int64		step = Max((int64) plan->range_rows * CHANGED_RANGE_FACTOR,
							   n / CHANGED_MAX_RANGES + 1);

		SPI_freetuptable(rows);
		rows = verify_query(plan, verify_split_sql(plan->keyt_d, plan->key_d,
												   psprintf("%s d", plan->source.scan_d),
												   "", "", step));
		for (uint64 i = 0; i < SPI_processed; i++)
			keys = lappend(keys, SPI_getvalue(rows->vals[i], rows->tupdesc, 1));
	}
	state->nranges = list_length(keys) + 1;
	state->bounds = palloc0(sizeof(char *) * (state->nranges + 1));
	for (int i = 0; i < list_length(keys); i++)
		state->bounds[i + 1] = list_nth(keys, i);
	state->upstream_rows = palloc0(sizeof(int64) * state->nranges);
	state->downstream_rows = palloc0(sizeof(int64) * state->nranges);
	state->checksums = palloc0(sizeof(char *) * state->nranges);
	state->differs = palloc0(sizeof(bool) * state->nranges);
	state->checked_at = palloc0(sizeof(char *) * state->nranges);
	state->pages = palloc0(sizeof(bytea *) * Max(state->nrelations, 1));
}

/* the bounds of the ranges as keys, for key_range_of */
Datum *
verify_bound_keys(Changed *ch)
{
	int			npk = ch->plan->job.npk;
	int			nbounds = ch->state->nranges - 1;
	Datum	   *keys = palloc(sizeof(Datum) * Max(nbounds * npk, 1));

	for (int b = 0; b < nbounds; b++)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN,
																  ch->state->bounds[b + 1],
																  TEXTOID, -1)),
						  TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
		if (n != npk)
			elog(ERROR, "a bound of backfill job " INT64_FORMAT " has %d columns, not %d",
				 ch->plan->job.job_id, n, npk);
		for (int k = 0; k < npk; k++)
		{
			Oid			typinput;
			Oid			typioparam;

			if (nulls[k])
				elog(ERROR, "a bound of backfill job " INT64_FORMAT " has a NULL column",
					 ch->plan->job.job_id);
			getTypeInputInfo(ch->types[k], &typinput, &typioparam);
			keys[b * npk + k] = OidInputFunctionCall(typinput, TextDatumGetCString(elems[k]),
													 typioparam, -1);
		}
	}
	return keys;
}

/* every step-th key of the downstream in a range, as text[] literals */
static List *
keys_within(const VerifyPlan *plan, char *lo, char *hi, int64 step)
{
	char	   *from;
	char	   *cond_u;
	char	   *cond_d;
	SPITupleTable *rows;
	List	   *keys = NIL;

	verify_range_where(plan, lo, hi, &from, &cond_u, &cond_d);
	rows = verify_query(plan, verify_split_sql(plan->keyt_d, plan->key_d,
											   psprintf("%s d", plan->source.scan_d),
											   from, cond_d, step));
	for (uint64 i = 0; i < SPI_processed; i++)
		keys = lappend(keys, SPI_getvalue(rows->vals[i], rows->tupdesc, 1));
	return keys;
}

/* the pages' lists with each range r given as ranges first[r] .. first[r + 1] - 1 */
static void
renumber_pages(Changed *ch, int old_nranges, const int *first)
{
	VerifyState *state = ch->state;

	for (int i = 0; i < state->nrelations; i++)
	{
		PageRanges *pages = page_ranges_decode(state->pages[i], old_nranges);

		for (BlockNumber b = 0; b < pages->npages; b++)
		{
			int32	   *list = pages->lists[b];
			int			n = 0;
			int32	   *renumbered;

			if (list == NULL)
				continue;
			for (int j = 1; j <= list[0]; j++)
				n += first[list[j] + 1] - first[list[j]];
			renumbered = palloc(sizeof(int32) * (n + 1));
			renumbered[0] = n;
			n = 0;
			for (int j = 1; j <= list[0]; j++)
				for (int r = first[list[j]]; r < first[list[j] + 1]; r++)
					renumbered[++n] = r;
			pages->lists[b] = renumbered;
		}
		state->pages[i] = page_ranges_encode(pages);
	}
}

/*
 * Cut each range to compare (in *compare) that held more than
 * CHANGED_RANGE_FACTOR * range_rows rows at its last comparison (when it
 * was compared on its own: its rows are known) into parts
 * of a quarter of that, at keys of the downstream, each part to compare.
 * A page's list names every part of a range it named.
 */
void
verify_cut_large_ranges(Changed *ch, bool **compare)
{
	VerifyState *state = ch->state;
	int64		limit = (int64) ch->plan->range_rows * CHANGED_RANGE_FACTOR;
	int			n = state->nranges;
	int		   *first = palloc(sizeof(int) * (n + 1));
	List	  **parts = palloc0(sizeof(List *) * n);
	int			total = 0;
	VerifyState cut = *state;
	bool	   *was = *compare;

	for (int r = 0; r < n; r++)
	{
		first[r] = total;
		if ((*compare)[r] && Max(state->upstream_rows[r], state->downstream_rows[r]) > limit &&
			total + (n - r) < CHANGED_MAX_RANGES)
			parts[r] = keys_within(ch->plan, state->bounds[r], state->bounds[r + 1],
								   Max(limit / 4, 2));
		total += 1 + list_length(parts[r]);
	}
	first[n] = total;
	if (total == n)
		return;
	ch->recut = true;
	cut.nranges = total;
	cut.bounds = palloc0(sizeof(char *) * (total + 1));
	cut.upstream_rows = palloc0(sizeof(int64) * total);
	cut.downstream_rows = palloc0(sizeof(int64) * total);
	cut.checksums = palloc0(sizeof(char *) * total);
	cut.differs = palloc0(sizeof(bool) * total);
	cut.checked_at = palloc0(sizeof(char *) * total);
	*compare = palloc0(sizeof(bool) * total);
	ch->parts = palloc0(sizeof(bool) * total);
	for (int r = 0; r < n; r++)
	{
		cut.bounds[first[r]] = state->bounds[r];
		for (int p = 0; p < list_length(parts[r]); p++)
			cut.bounds[first[r] + 1 + p] = list_nth(parts[r], p);
		for (int c = first[r]; c < first[r + 1]; c++)
		{
			cut.upstream_rows[c] = state->upstream_rows[r];
			cut.downstream_rows[c] = state->downstream_rows[r];
			cut.checksums[c] = state->checksums[r];
			cut.differs[c] = state->differs[r];
			cut.checked_at[c] = state->checked_at[r];
			(*compare)[c] = was[r];
			ch->parts[c] = parts[r] != NIL;
		}
	}
	renumber_pages(ch, n, first);
	*state = cut;
	ch->state = state;
}
