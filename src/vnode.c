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
 * May call: nothing of the extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "backfill.h"

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
