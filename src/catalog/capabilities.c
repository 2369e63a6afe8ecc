/*-------------------------------------------------------------------------
 *
 * capabilities.c
 *	  What the installed catalog has: the columns of backfill.job and
 *	  backfill.actor that a version of the extension added, probed once and
 *	  kept in a struct, as pg_stat_statements keeps pgssVersion.
 *
 * The library may be newer than the catalog until ALTER EXTENSION UPDATE,
 * so the statements of the catalog layer and the kinds read or write a
 * newer column only when it is there.  The probe looks the columns up once;
 * a relcache invalidation of either table (ALTER EXTENSION UPDATE adds
 * their columns; DROP and CREATE EXTENSION give them new OIDs) forgets it,
 * so that the next reader probes again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "backfill.h"
#include "catalog/catalog_access.h"

static BackfillCatalogCaps caps;
static bool caps_valid = false;
static Oid	caps_job_relid = InvalidOid;
static Oid	caps_actor_relid = InvalidOid;
static bool caps_callback = false;

/* the columns backfill_job_catalog_has() answers for, by name */
static const struct
{
	const char *column;
	size_t		offset;
} job_columns[] = {
	{"snapshot_epoch", offsetof(BackfillCatalogCaps, job_snapshot_epoch)},
	{"remote", offsetof(BackfillCatalogCaps, job_remote)},
	{"remote_splits", offsetof(BackfillCatalogCaps, job_remote_splits)},
	{"expressions", offsetof(BackfillCatalogCaps, job_expressions)},
	{"vnode_bounds", offsetof(BackfillCatalogCaps, job_vnode_bounds)},
	{"source_columns", offsetof(BackfillCatalogCaps, job_source_columns)},
	{"failures", offsetof(BackfillCatalogCaps, job_failures)},
	{"indexes", offsetof(BackfillCatalogCaps, job_indexes)},
	{"remote_partitions", offsetof(BackfillCatalogCaps, job_remote_partitions)},
};

static void
caps_invalidate(Datum arg pg_attribute_unused(), Oid relid)
{
	if (relid == InvalidOid || relid == caps_job_relid || relid == caps_actor_relid)
		caps_valid = false;
}

static bool
has_column(Oid relid, const char *column)
{
	return OidIsValid(relid) && get_attnum(relid, column) != InvalidAttrNumber;
}

/*
 * backfill_catalog_caps
 *		The capabilities of the installed catalog, probed at the first call
 *		and again after either table has changed.
 */
const BackfillCatalogCaps *
backfill_catalog_caps(void)
{
	Oid			schema;

	if (caps_valid)
		return &caps;
	if (!caps_callback)
	{
		CacheRegisterRelcacheCallback(caps_invalidate, (Datum) 0);
		caps_callback = true;
	}
	schema = get_namespace_oid(BACKFILL_SCHEMA, false);
	caps_job_relid = get_relname_relid("job", schema);
	caps_actor_relid = get_relname_relid("actor", schema);
	memset(&caps, 0, sizeof(caps));
	for (int i = 0; i < lengthof(job_columns); i++)
		*(bool *) ((char *) &caps + job_columns[i].offset) =
			has_column(caps_job_relid, job_columns[i].column);
	caps.actor_log_store_caught_up = has_column(caps_actor_relid, "log_store_caught_up");
	caps.actor_throttled_by = has_column(caps_actor_relid, "throttled_by");
	/* a catalog being created is probed again once it is there */
	caps_valid = OidIsValid(caps_job_relid) && OidIsValid(caps_actor_relid);
	return &caps;
}

/*
 * backfill_job_catalog_has
 *		Whether backfill.job has a column that a version of the extension
 *		added: the library may be newer than the catalog until ALTER
 *		EXTENSION UPDATE.  A reader of backfill_catalog_caps().
 */
bool
backfill_job_catalog_has(const char *column)
{
	const BackfillCatalogCaps *c = backfill_catalog_caps();

	for (int i = 0; i < lengthof(job_columns); i++)
		if (strcmp(job_columns[i].column, column) == 0)
			return *(const bool *) ((const char *) c + job_columns[i].offset);
	elog(ERROR, "backfill.job column \"%s\" is not probed", column);
	return false;				/* keep compiler quiet */
}
