/*-------------------------------------------------------------------------
 *
 * monitoring.c
 *	  What monitoring roles see of other roles' jobs: their catalog rows
 *	  without the values of their upstreams.
 *
 * Row-level security shows each role the jobs of the roles whose privileges
 * it has.  A member of pg_read_all_stats (pg_monitor is one) watches every
 * job of the database as it watches every session in pg_stat_activity: the
 * views read backfill._monitored_jobs() besides backfill.job, which returns
 * the rows that row-level security hides from it, read from the table
 * directly, with the columns that hold values of the upstream NULL: the row
 * filter and the expressions (constants), the vnode bounds and the split
 * bounds (keys), the last error and its detail (a key in a unique
 * violation, a row in a check failure) and the statement that made the job
 * (all of these).  The actors, the cutover rows and the per-server offsets
 * hold no such value: policies on their tables show them to such a member
 * whole.  The position of a live actor, a key, stays hidden by
 * live_actors.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog/catalog_access.h"

PG_FUNCTION_INFO_V1(backfill_monitored_jobs);

/* the columns of backfill.job that hold values of the upstream */
static const char *const upstream_value_columns[] = {
	"filter", "expressions", "vnode_bounds", "remote_splits",
	"last_error", "last_error_detail", "ddl_statement",
};

/*
 * backfill._monitored_jobs() RETURNS SETOF backfill.job
 *		For a member of pg_read_all_stats, the jobs of the roles whose
 *		privileges it does not have, without the values of their upstreams;
 *		nothing for anyone else.
 */
Datum
backfill_monitored_jobs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			user = GetUserId();
	Oid			relid;
	Relation	rel;
	TupleDesc	desc;
	TableScanDesc scan;
	HeapTuple	tup;
	AttrNumber	owner_att;
	bool		hidden[MaxHeapAttributeNumber] = {false};
	Datum	   *values;
	bool	   *nulls;

	InitMaterializedSRF(fcinfo, 0);
	if (!has_privs_of_role(user, ROLE_PG_READ_ALL_STATS))
		PG_RETURN_VOID();

	relid = get_relname_relid("job", get_namespace_oid(BACKFILL_SCHEMA, false));
	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	if (desc->natts != rsinfo->setDesc->natts)
		elog(ERROR, "backfill._monitored_jobs() does not return the row type of backfill.job");
	owner_att = get_attnum(relid, "owner");
	for (int i = 0; i < lengthof(upstream_value_columns); i++)
	{
		AttrNumber	att = get_attnum(relid, upstream_value_columns[i]);

		if (att != InvalidAttrNumber)
			hidden[att - 1] = true;
	}
	values = palloc(desc->natts * sizeof(Datum));
	nulls = palloc(desc->natts * sizeof(bool));

	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		owner = heap_getattr(tup, owner_att, desc, &isnull);

		/* row-level security shows these to the caller whole */
		if (isnull || has_privs_of_role(user, DatumGetObjectId(owner)))
			continue;
		heap_deform_tuple(tup, desc, values, nulls);
		for (int i = 0; i < desc->natts; i++)
			if (hidden[i])
				nulls[i] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
