/*-------------------------------------------------------------------------
 *
 * ranges.c
 *	  Range vnodes: cutting a new job's key space into BACKFILL_VNODE_COUNT
 *	  ranges, and backfill.job_vnode(), the vnode of a key in a given job.
 *
 * A vnode of a job made since version 1.2 is a range of keys, not a hash of
 * them (vnode.c says how a key is mapped), so that the vnodes of an actor,
 * which are consecutive, are one range of the primary key's index that the
 * actor reads in one ordered scan: a job reads each upstream row once
 * whatever its parallelism, where with hashed vnodes each actor read every
 * row and kept its own.
 *
 * create_job cuts the ranges from a sample of the rows the job copies (the
 * row filter applies, and the caller's row-level security): up to
 * BACKFILL_SAMPLE_PAGES pages (TABLESAMPLE SYSTEM, a fixed seed, so that
 * the same table gives the same cuts; the whole table when it is smaller),
 * sorted by the key; bound i (1..255) is the sample's key at position
 * floor(i * n / 256).  The bounds are stored with the job
 * (backfill.job.vnode_bounds, vnode_mapping 'range') and never change:
 * a key keeps its vnode for the job's life, whatever is written later, and
 * keys below the first bound or above the last one belong to the first or
 * the last vnode.  An upstream without a sampled row gets hashed vnodes, as
 * do jobs made by older versions (vnode_mapping NULL) and jobs made with
 * backfill.vnode_mapping = 'hash'.
 *
 * backfill.job_vnode(job_id, key columns...) is the SQL side of the same
 * mapping, for the statements of a job's barriers, the apply trigger and
 * verify_job; it gives backfill.vnode()'s hash for a hashed job.  The
 * caller must have the privileges of the job's owner (the bounds are keys of
 * the upstream), and the key's types must be the job's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "copy/copy.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_job_vnode);

/* pages of the upstream a cut reads at most */
#define BACKFILL_SAMPLE_PAGES 2048

typedef enum VnodeMappingSetting
{
	VNODE_MAPPING_RANGE,
	VNODE_MAPPING_HASH
} VnodeMappingSetting;

static const struct config_enum_entry vnode_mapping_options[] = {
	{"range", VNODE_MAPPING_RANGE, false},
	{"hash", VNODE_MAPPING_HASH, false},
	{NULL, 0, false}
};

static int	vnode_mapping = VNODE_MAPPING_RANGE;

/* backfill.vnode_mapping: how new jobs map keys to vnodes */
void
backfill_ranges_init(void)
{
	DefineCustomEnumVariable("backfill.vnode_mapping",
							 "How jobs created from now on map keys to vnodes.",
							 "range: consecutive vnodes are consecutive ranges of keys, cut from "
							 "a sample of the upstream, so each actor reads only its own rows; "
							 "hash: a hash of the key, as versions before 1.2 did.",
							 &vnode_mapping, VNODE_MAPPING_RANGE, vnode_mapping_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * backfill_cut_vnodes
 *		The bounds of a new job's range vnodes (vnode.c's stored form), from
 *		a sample of its upstream (SQL name upstream_sql, alias u in
 *		scan_sql) read by the current user, or NULL for hashed vnodes: when
 *		backfill.vnode_mapping says so, or when the sample has no row.
 *		Caller is connected to SPI.
 */
ArrayType *
backfill_cut_vnodes(Oid upstream, const char *scan_sql, const char *filter, int npk,
					char **pk_names, const Oid *pk_types)
{
	StringInfoData keys;
	StringInfoData names;
	StringInfoData picked;
	StringInfoData sql;
	bool		isnull;
	double		percent;
	Datum	   *bounds;
	Datum		pages;

	if (vnode_mapping == VNODE_MAPPING_HASH)
		return NULL;

	/* pages of the table, or of its leaf partitions (a partitioned table has none) */
	backfill_spi_exec_args("SELECT (pg_catalog.sum(pg_catalog.pg_relation_size(t.relid)) "
						   "/ pg_catalog.current_setting('block_size')::pg_catalog.int8)::pg_catalog.float8 "
						   "FROM (SELECT $1 AS relid UNION "
						   "SELECT p.relid FROM pg_catalog.pg_partition_tree($1) p WHERE p.isleaf) t",
						   1, (Oid[]) {REGCLASSOID}, (Datum[]) {ObjectIdGetDatum(upstream)},
						   NULL, SPI_OK_SELECT);
	pages = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	percent = 100.0;
	if (!isnull)
	{
		double		npages = DatumGetFloat8(pages);

		if (npages > BACKFILL_SAMPLE_PAGES)
			percent = 100.0 * BACKFILL_SAMPLE_PAGES / npages;
	}

	initStringInfo(&keys);
	initStringInfo(&names);
	initStringInfo(&picked);
	for (int k = 0; k < npk; k++)
	{
		appendStringInfo(&keys, "%su.%s", k > 0 ? ", " : "", quote_identifier(pk_names[k]));
		appendStringInfo(&names, "k%d, ", k);
		appendStringInfo(&picked, "%ss.k%d", k > 0 ? ", " : "", k);
	}

	/*
	 * Bound i is the sorted sample's key number floor(i * n / 256), from 0:
	 * the sample is sorted once, and the 255 keys are picked by a join.
	 */
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH s(%sj) AS MATERIALIZED ("
					 "SELECT %s, pg_catalog.row_number() OVER (ORDER BY %s) - 1 "
					 "FROM %s TABLESAMPLE SYSTEM ($1) REPEATABLE (0)%s%s%s) "
					 "SELECT %s FROM (SELECT pg_catalog.count(*) AS n FROM s) c "
					 "CROSS JOIN pg_catalog.generate_series(1, %d) i "
					 "JOIN s ON s.j = (i * c.n) / %d ORDER BY i",
					 names.data, keys.data, keys.data, scan_sql,
					 filter ? " WHERE (" : "", filter ? filter : "", filter ? ")" : "",
					 picked.data, BACKFILL_VNODE_COUNT - 1, BACKFILL_VNODE_COUNT);
	backfill_spi_exec_args(sql.data, 1, (Oid[]) {FLOAT4OID},
						   (Datum[]) {Float4GetDatum((float4) percent)}, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return NULL;
	if (SPI_processed != BACKFILL_VNODE_COUNT - 1)
		elog(ERROR, "could not cut the keys of %s into vnodes", get_rel_name(upstream));

	bounds = palloc(sizeof(Datum) * (BACKFILL_VNODE_COUNT - 1) * npk);
	for (int i = 0; i < BACKFILL_VNODE_COUNT - 1; i++)
		for (int k = 0; k < npk; k++)
			bounds[i * npk + k] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
												k + 1, &isnull);
	return backfill_vnode_bounds_text(npk, pk_types, bounds);
}

/* what backfill.job_vnode() keeps between calls of one call site */
typedef struct JobVnodeCache
{
	int64		job_id;
	VnodeHasher hasher;
} JobVnodeCache;

/* look up the mapping of a job for the key types of the call */
static void
load_job_mapping(FunctionCallInfo fcinfo, JobVnodeCache *cache, int64 job_id)
{
	int			nkeys = PG_NARGS() - 1;
	Oid			types[FUNC_MAX_ARGS];
	Oid			collations[FUNC_MAX_ARGS];
	Oid			upstream;
	Datum		d;
	bool		isnull;
	char	  **pk_names;
	int			npk;

	(void) backfill_require_job_owner(job_id);
	upstream = backfill_job_upstream(job_id);
	d = backfill_job_column(job_id, "pk_columns", &isnull);
	(void) backfill_text_array_sql(d, &pk_names, &npk);
	if (nkeys != npk)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("backfill.job_vnode() needs %d key columns for backfill job %lld, not %d",
						npk, (long long) job_id, nkeys)));
	for (int k = 0; k < npk; k++)
	{
		AttrNumber	attnum = get_attnum(upstream, pk_names[k]);
		Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, k + 1);
		int32		typmod;

		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of backfill job %lld no longer exists",
							pk_names[k], (long long) job_id)));
		get_atttypetypmodcoll(upstream, attnum, &types[k], &typmod, &collations[k]);
		if (argtype != types[k])
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column %d of backfill job %lld has type %s, not %s",
							k + 1, (long long) job_id, format_type_be(types[k]),
							format_type_be(argtype)),
					 errhint("Cast the argument to the key column's type.")));
	}

	d = backfill_job_column(job_id, "vnode_bounds", &isnull);
	if (isnull)
		backfill_vnode_hasher_init(&cache->hasher, npk, types, fcinfo->flinfo->fn_mcxt);
	else
		backfill_vnode_ranges_init(&cache->hasher, npk, types, collations,
								   DatumGetArrayTypeP(d), fcinfo->flinfo->fn_mcxt);
	cache->job_id = job_id;
}

/*
 * backfill.job_vnode(job_id bigint, VARIADIC "any") RETURNS smallint
 *
 * The vnode of the key made of the arguments after the first, in key column
 * order, in the job: its range, or its hash for a job with hashed vnodes.
 * STRICT: a key column is never NULL.
 */
Datum
backfill_job_vnode(PG_FUNCTION_ARGS)
{
	JobVnodeCache *cache = (JobVnodeCache *) fcinfo->flinfo->fn_extra;
	int64		job_id = PG_GETARG_INT64(0);
	Datum		values[FUNC_MAX_ARGS];
	bool		isnull[FUNC_MAX_ARGS];

	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill.job_vnode() does not accept an array after VARIADIC"),
				 errhint("Pass the key columns as separate arguments.")));
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(JobVnodeCache));
		cache->job_id = -1;
		fcinfo->flinfo->fn_extra = cache;
	}
	if (cache->job_id != job_id)
	{
		/*
		 * The job's row is read from the catalog without SQL; its bounds
		 * are parsed by their types' input functions, which for a reg* type
		 * read the search_path: the extension's own, not the caller's, as
		 * when the function had a SET clause.  Only here, once per call site
		 * and job: that clause set the path and set it back at every row of
		 * the statements that forward a job's changes, which call this once
		 * a row.
		 */
		int			guc_level = backfill_pin_catalog_path();

		cache->job_id = -1;
		load_job_mapping(fcinfo, cache, job_id);
		backfill_unpin_search_path(guc_level);
	}
	for (int i = 1; i < PG_NARGS(); i++)
	{
		values[i - 1] = PG_GETARG_DATUM(i);
		isnull[i - 1] = false;
	}
	PG_RETURN_INT16(backfill_vnode_of(&cache->hasher, values, isnull));
}
