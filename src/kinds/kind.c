/*-------------------------------------------------------------------------
 *
 * kind.c
 *	  The routine of each kind of job.
 *
 * May call: the kinds' files (their routines only), catalog.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "utils/lsyscache.h"

#include "kind.h"
#include "catalog_access.h"

static const KindRoutine *const routines[BACKFILL_NUM_KINDS] = {
	[BACKFILL_KIND_NO_SHUFFLE] = &backfill_no_shuffle_routine,
	[BACKFILL_KIND_ARRANGEMENT] = &backfill_arrangement_routine,
	[BACKFILL_KIND_SNAPSHOT] = &backfill_snapshot_routine,
	[BACKFILL_KIND_CDC] = &backfill_cdc_routine,
	[BACKFILL_KIND_REMOTE_CDC] = &backfill_remote_cdc_routine,
};

/* the routine of a kind */
const KindRoutine *
backfill_kind_routine(BackfillKind kind)
{
	if ((int) kind < 0 || (int) kind >= BACKFILL_NUM_KINDS)
		elog(ERROR, "unrecognized backfill kind %d", (int) kind);
	return routines[kind];
}

/*
 * The kind a job of kind "kind" has when its upstream is the relation
 * upstream: cdc from a foreign table is the remote cdc kind; no other kind
 * reads a foreign table.
 */
BackfillKind
backfill_kind_for_upstream(BackfillKind kind, Oid upstream)
{
	if (get_rel_relkind(upstream) != RELKIND_FOREIGN_TABLE)
		return kind;
	if (kind != BACKFILL_KIND_CDC)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a backfill job of kind \"%s\" cannot read foreign table \"%s\"",
						backfill_kind_name(kind), get_rel_name(upstream)),
				 errdetail("Only a cdc job follows another server's changes, through its logical replication."),
				 errhint("Use kind \"cdc\" to copy a table of another PostgreSQL server through postgres_fdw.")));
	return BACKFILL_KIND_REMOTE_CDC;
}
