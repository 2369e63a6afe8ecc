/*-------------------------------------------------------------------------
 *
 * vnode.c
 *	  The vnode of a key: which of the 256 virtual nodes a row belongs to.
 *
 * RisingWave hashes a row's distribution key (here: the primary key) to one
 * of 256 vnodes and gives each actor a set of vnodes.  We hash each key
 * column with its type's extended hash function, the one hash partitioning
 * uses, so the result is stable across sessions, servers and upgrades: a
 * vnode that changed would silently break every stored position.  Text is
 * hashed under the "C" collation, i.e. by its bytes.
 *
 * A job made since version 1.2 maps keys to vnodes by ranges instead: 255
 * bounds, cut when the job was created (ranges.c) and stored with it, split
 * the key space in key order, and a key's vnode is the number of bounds at
 * or below it (keys below the first bound go to vnode 0, keys at or above
 * the last one to vnode 255).  The comparison is the key columns' default
 * btree order under their collations, the order of the primary key's index,
 * so that the keys of consecutive vnodes are one range of that index.  The
 * bounds are stored as text, each column written and read under fixed
 * settings (DateStyle ISO, IntervalStyle postgres, extra_float_digits 3),
 * so that every backend reads the same values from them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_vnode);

/* seed of the extended hash functions; never change it */
#define BACKFILL_HASH_SEED	UINT64CONST(0x6261636b66696c6c)

static FmgrInfo *
hash_proc_for_type(Oid typid)
{
	TypeCacheEntry *tce;

	tce = lookup_type_cache(typid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
	if (!OidIsValid(tce->hash_extended_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an extended hash function for type %s",
						format_type_be(typid))));
	return &tce->hash_extended_proc_finfo;
}

/* ---- range mappings ---- */

/* the settings the bounds are written and read under */
static int
pin_bound_format(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * backfill_vnode_compare
 *		Compare two keys (their columns in key order, none NULL) in the
 *		order of the range mapping: <0, 0 or >0.
 */
int
backfill_vnode_compare(VnodeHasher *hasher, const Datum *a, const Datum *b)
{
	for (int i = 0; i < hasher->nkeys; i++)
	{
		int32		c = DatumGetInt32(FunctionCall2Coll(&hasher->procs[i],
														hasher->collations[i],
														a[i], b[i]));

		if (c != 0)
			return c;
	}
	return 0;
}

/* the lowest key of vnode v > 0 of a range mapping */
const Datum *
backfill_vnode_lower_bound(VnodeHasher *hasher, int v)
{
	Assert(hasher->bounds && v > 0 && v < BACKFILL_VNODE_COUNT);
	return &hasher->bounds[(v - 1) * hasher->nkeys];
}

/*
 * The vnode of a key under a range mapping: the number of bounds at or
 * below it.  Keys often come in key order, so the vnode found last is
 * tried first.
 */
static int16
range_vnode_of(VnodeHasher *hasher, const Datum *values)
{
	int			v = hasher->last;
	int			lo;
	int			hi;

	if ((v == 0 || backfill_vnode_compare(hasher, backfill_vnode_lower_bound(hasher, v), values) <= 0) &&
		(v == BACKFILL_VNODE_COUNT - 1 ||
		 backfill_vnode_compare(hasher, values, backfill_vnode_lower_bound(hasher, v + 1)) < 0))
		return (int16) v;

	/* the first bound above the key, 1-based: bounds 1..255 */
	lo = 1;
	hi = BACKFILL_VNODE_COUNT;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (backfill_vnode_compare(hasher, backfill_vnode_lower_bound(hasher, mid), values) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	hasher->last = lo - 1;
	return (int16) (lo - 1);
}

/*
 * backfill_vnode_order_init
 *		The order of keys of the given column types under the given
 *		collations, for backfill_vnode_compare: their default btree
 *		comparison functions, looked up once for many keys.  No bounds.
 */
void
backfill_vnode_order_init(VnodeHasher *hasher, int nkeys, const Oid *types,
						  const Oid *collations, MemoryContext cxt)
{
	Assert(nkeys > 0 && nkeys <= FUNC_MAX_ARGS);
	hasher->nkeys = nkeys;
	hasher->bounds = NULL;
	hasher->last = 0;
	for (int i = 0; i < nkeys; i++)
	{
		TypeCacheEntry *tce = lookup_type_cache(types[i], TYPECACHE_CMP_PROC_FINFO);

		if (!OidIsValid(tce->cmp_proc_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("could not identify a comparison function for type %s",
							format_type_be(types[i]))));
		fmgr_info_copy(&hasher->procs[i], &tce->cmp_proc_finfo, cxt);
		hasher->collations[i] = collations[i];
	}
}

/*
 * backfill_vnode_ranges_init
 *		A range mapping of keys of the given column types and collations, from
 *		its stored bounds (a text[][] of BACKFILL_VNODE_COUNT - 1 rows of
 *		nkeys columns).  The types must have a default btree operator class.
 */
void
backfill_vnode_ranges_init(VnodeHasher *hasher, int nkeys, const Oid *types,
						   const Oid *collations, ArrayType *bounds, MemoryContext cxt)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			level;
	MemoryContext old;

	Assert(nkeys > 0 && nkeys <= FUNC_MAX_ARGS);
	deconstruct_array(bounds, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (ARR_NDIM(bounds) != 2 || ARR_DIMS(bounds)[0] != BACKFILL_VNODE_COUNT - 1 ||
		ARR_DIMS(bounds)[1] != nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid vnode bounds"),
				 errdetail("The bounds must be an array of %d rows of %d columns.",
						   BACKFILL_VNODE_COUNT - 1, nkeys)));

	backfill_vnode_order_init(hasher, nkeys, types, collations, cxt);

	old = MemoryContextSwitchTo(cxt);
	hasher->bounds = palloc(sizeof(Datum) * n);
	level = pin_bound_format();
	for (int i = 0; i < n; i++)
	{
		Oid			typinput;
		Oid			typioparam;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid vnode bounds"),
					 errdetail("Bound %d has a NULL column.", i / nkeys + 1)));
		getTypeInputInfo(types[i % nkeys], &typinput, &typioparam);
		hasher->bounds[i] = OidInputFunctionCall(typinput, TextDatumGetCString(elems[i]),
												 typioparam, -1);
	}
	AtEOXact_GUC(true, level);
	MemoryContextSwitchTo(old);
}

/*
 * backfill_vnode_bounds_text
 *		The stored form of BACKFILL_VNODE_COUNT - 1 bounds, each of nkeys
 *		columns of the given types, none NULL: a text[][].
 */
ArrayType *
backfill_vnode_bounds_text(int nkeys, const Oid *types, const Datum *bounds)
{
	int			n = (BACKFILL_VNODE_COUNT - 1) * nkeys;
	Datum	   *elems = palloc(sizeof(Datum) * n);
	int			dims[2] = {BACKFILL_VNODE_COUNT - 1, nkeys};
	int			lbs[2] = {1, 1};
	int			level = pin_bound_format();

	for (int i = 0; i < n; i++)
	{
		Oid			typoutput;
		bool		isvarlena;

		getTypeOutputInfo(types[i % nkeys], &typoutput, &isvarlena);
		elems[i] = CStringGetTextDatum(OidOutputFunctionCall(typoutput, bounds[i]));
	}
	AtEOXact_GUC(true, level);
	return construct_md_array(elems, NULL, 2, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * backfill_vnode_hasher_init
 *		Look up the hash functions of a key's column types, once for many
 *		keys.
 */
void
backfill_vnode_hasher_init(VnodeHasher *hasher, int nkeys, const Oid *types,
						   MemoryContext cxt)
{
	Assert(nkeys > 0 && nkeys <= FUNC_MAX_ARGS);
	hasher->nkeys = nkeys;
	hasher->bounds = NULL;
	for (int i = 0; i < nkeys; i++)
		fmgr_info_copy(&hasher->procs[i], hash_proc_for_type(types[i]), cxt);
}

/*
 * backfill_vnode_of
 *		The vnode of a key, its columns in key order.
 */
int16
backfill_vnode_of(VnodeHasher *hasher, const Datum *values, const bool *isnull)
{
	uint64		hash = 0;

	if (hasher->bounds)
		return range_vnode_of(hasher, values);

	for (int i = 0; i < hasher->nkeys; i++)
	{
		uint64		h = 0;

		if (!isnull[i])
			h = DatumGetUInt64(FunctionCall2Coll(&hasher->procs[i], C_COLLATION_OID,
												 values[i],
												 UInt64GetDatum(BACKFILL_HASH_SEED)));
		hash = hash_combine64(hash, h);
	}
	return (int16) (hash % BACKFILL_VNODE_COUNT);
}

/*
 * backfill.vnode(VARIADIC "any") RETURNS smallint
 *
 * The vnode of the key made of the arguments, in key column order.  Called
 * for every row a chunk reads, so the hash functions are looked up once per
 * call site.
 */
Datum
backfill_vnode(PG_FUNCTION_ARGS)
{
	int			nargs = PG_NARGS();
	VnodeHasher *hasher = (VnodeHasher *) fcinfo->flinfo->fn_extra;
	Datum		values[FUNC_MAX_ARGS];
	bool		isnull[FUNC_MAX_ARGS];

	if (hasher == NULL)
	{
		Oid			types[FUNC_MAX_ARGS];

		if (nargs < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("backfill.vnode() needs at least one key column")));
		if (get_fn_expr_variadic(fcinfo->flinfo))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("backfill.vnode() does not accept an array after VARIADIC"),
					 errhint("Pass the key columns as separate arguments.")));
		for (int i = 0; i < nargs; i++)
		{
			types[i] = get_fn_expr_argtype(fcinfo->flinfo, i);
			if (!OidIsValid(types[i]))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("could not determine the type of key column %d", i + 1)));
		}
		hasher = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(VnodeHasher));
		backfill_vnode_hasher_init(hasher, nargs, types, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = hasher;
	}

	for (int i = 0; i < nargs; i++)
	{
		values[i] = PG_GETARG_DATUM(i);
		isnull[i] = PG_ARGISNULL(i);
	}
	PG_RETURN_INT16(backfill_vnode_of(hasher, values, isnull));
}
