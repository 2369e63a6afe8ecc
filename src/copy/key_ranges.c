/*-------------------------------------------------------------------------
 *
 * key_ranges.c
 *	  Ranges of keys in key order: the range of a key, in C for the pages
 *	  verify_job(job, 'changed') reads (page_ranges.c), and in SQL,
 *	  backfill._key_range(), for the statement that sums each range's rows
 *	  on each side in one pass.
 *
 * The order is the key columns' default btree order under each column's
 * collation, the order of the statements' conditions on a range's bounds
 * (backfill_key_compare_columns), so that a row is in the range whose
 * bounds hold it whichever way it is looked at.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "copy/key_ranges.h"

PG_FUNCTION_INFO_V1(backfill_key_range);

/*
 * key_ranges_init
 *		Ranges of keys of the given column types, compared under the given
 *		collations, cut at bounds (nranges - 1 keys of nkeys columns).
 */
void
key_ranges_init(KeyRanges *ranges, int nkeys, const Oid *types, const Oid *collations,
				int nranges, Datum *bounds)
{
	Assert(nranges >= 1);
	backfill_vnode_order_init(&ranges->order, nkeys, types, collations, CurrentMemoryContext);
	ranges->nranges = nranges;
	ranges->bounds = bounds;
}

/*
 * key_range_of
 *		The range of a key: the number of bounds at or below it.  Rows of a
 *		page often come in key order, so the range found last is tried first.
 */
int
key_range_of(KeyRanges *ranges, const Datum *key)
{
	int			nkeys = ranges->order.nkeys;
	int			r = ranges->order.last;
	int			lo = 0;
	int			hi = ranges->nranges - 1;

	if ((r == 0 || backfill_vnode_compare(&ranges->order, &ranges->bounds[(r - 1) * nkeys], key) <= 0) &&
		(r == ranges->nranges - 1 ||
		 backfill_vnode_compare(&ranges->order, key, &ranges->bounds[r * nkeys]) < 0))
		return r;
	/* the first bound above the key: bounds 0 .. nranges - 2 */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (backfill_vnode_compare(&ranges->order, &ranges->bounds[mid * nkeys], key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	ranges->order.last = lo;
	return lo;
}

/* the bounds and order of a call site of backfill._key_range() */
typedef struct KeyRangeCache
{
	ArrayType  *bounds;			/* as given: a call with others reads them again */
	bool		constant;		/* the bounds are a constant of the statement */
	KeyRanges	ranges;
} KeyRangeCache;

/* read the bounds (a text[][] of nkeys columns) for the keys' types and collations */
static void
load_bounds(FunctionCallInfo fcinfo, KeyRangeCache *cache, ArrayType *bounds, int nkeys)
{
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	FuncExpr   *call = (FuncExpr *) fcinfo->flinfo->fn_expr;
	Oid			types[FUNC_MAX_ARGS];
	Oid			collations[FUNC_MAX_ARGS];
	Datum	   *elems;
	bool	   *nulls;
	Datum	   *keys;
	int			n;

	if (ARR_NDIM(bounds) > 0 && (ARR_NDIM(bounds) != 2 || ARR_DIMS(bounds)[1] != nkeys))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("the bounds of ranges of keys of %d columns must be an array of rows of %d columns",
						nkeys, nkeys)));
	deconstruct_array(bounds, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int k = 0; k < nkeys; k++)
	{
		types[k] = get_fn_expr_argtype(fcinfo->flinfo, k + 1);
		collations[k] = call && IsA(call, FuncExpr) && list_length(call->args) > k + 1 ?
			exprCollation(list_nth(call->args, k + 1)) : InvalidOid;
	}
	keys = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		Oid			typinput;
		Oid			typioparam;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a bound of a range of keys must not have a NULL column")));
		getTypeInputInfo(types[i % nkeys], &typinput, &typioparam);
		keys[i] = OidInputFunctionCall(typinput, TextDatumGetCString(elems[i]), typioparam, -1);
	}
	key_ranges_init(&cache->ranges, nkeys, types, collations, n / nkeys + 1, keys);
	cache->bounds = DatumGetArrayTypePCopy(PointerGetDatum(bounds));
	cache->constant = get_fn_expr_arg_stable(fcinfo->flinfo, 0);
	MemoryContextSwitchTo(old);
}

/*
 * backfill._key_range(bounds text[], VARIADIC "any") RETURNS integer
 *
 * The range of the key made of the arguments after the first, in key column
 * order, among the ranges the bounds cut (a text[][], one row of key columns
 * per bound, in key order): the number of bounds at or below it.  STRICT: a
 * NULL key is in no range.  It reads nothing but its arguments, so PUBLIC
 * may execute it: verify_job(job, 'changed') calls it as the job's owner.
 */
Datum
backfill_key_range(PG_FUNCTION_ARGS)
{
	KeyRangeCache *cache = (KeyRangeCache *) fcinfo->flinfo->fn_extra;
	int			nkeys = PG_NARGS() - 1;
	Datum		key[FUNC_MAX_ARGS];

	if (nkeys < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("backfill._key_range() needs a key of at least one column")));
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(KeyRangeCache));
		fcinfo->flinfo->fn_extra = cache;
	}
	/* read once for the statement's constant bounds, not looked at again per row */
	if (cache->bounds == NULL || !cache->constant)
	{
		ArrayType  *bounds = PG_GETARG_ARRAYTYPE_P(0);

		if (cache->bounds == NULL || VARSIZE(cache->bounds) != VARSIZE(bounds) ||
			memcmp(cache->bounds, bounds, VARSIZE(bounds)) != 0)
			load_bounds(fcinfo, cache, bounds, nkeys);
	}
	for (int k = 0; k < nkeys; k++)
		key[k] = PG_GETARG_DATUM(k + 1);
	PG_RETURN_INT32(key_range_of(&cache->ranges, key));
}
