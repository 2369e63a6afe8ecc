/*-------------------------------------------------------------------------
 *
 * carry_subscriptions.c
 *	  The subscriptions that write to the old table, which a cutover points
 *	  at the new one (swap.c calls cutover_carry_subscriptions;
 *	  backfill._cutover_carry_subscriptions is its SQL face).
 *
 * pg_subscription_rel maps each table a subscription writes to by OID,
 * with the state of its initial copy.  The apply worker finds the local
 * table by name, then skips the changes of a table that has no ready row
 * there: the table that takes the name would have its changes skipped, and
 * confirmed to the publisher.  So each row moves to the new table, as it
 * is.  Only a row whose table is ready (its initial copy done and caught
 * up): a table still being synchronised is written by a sync worker, and
 * the cutover refuses it (check_schema.c).
 *
 * The caller holds both tables ACCESS EXCLUSIVE and has the privileges of
 * their owners: every write a subscription makes to a table goes to
 * whatever table has the name.  Both are checked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "cutover/carry_internal.h"
#include "cutover/lock_step.h"

PG_FUNCTION_INFO_V1(backfill_cutover_carry_subscriptions);

/*
 * cutover_carry_subscriptions
 *		Move every row of pg_subscription_rel of src to dst, as it is (see
 *		the file header); only ready ones.  The caller holds both tables
 *		ACCESS EXCLUSIVE and has the privileges of their owners.
 */
void
cutover_carry_subscriptions(Oid src, Oid dst)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *subs = NIL;
	ListCell   *lc;

	backfill_cutover_require_locks(src, dst, "subscriptions");
	rel = table_open(SubscriptionRelRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_subscription_rel_srrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(src));
	scan = systable_beginscan(rel, SubscriptionRelSrrelidSrsubidIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		subs = lappend_oid(subs, ((Form_pg_subscription_rel) GETSTRUCT(tup))->srsubid);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	foreach(lc, subs)
	{
		Oid			subid = lfirst_oid(lc);
		XLogRecPtr	lsn;
		XLogRecPtr	dst_lsn;
		char		state = GetSubscriptionRelState(subid, src, &lsn);

		if (state != SUBREL_STATE_READY)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot carry table \"%s\" of subscription \"%s\" over to table \"%s\"",
							get_rel_name(src), get_subscription_name(subid, false), get_rel_name(dst)),
					 errdetail("The subscription has not finished its initial copy of the table."),
					 errhint("Wait until the table is ready in pg_subscription_rel (srsubstate \"r\").")));
		if (GetSubscriptionRelState(subid, dst, &dst_lsn) != SUBREL_STATE_UNKNOWN)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot carry table \"%s\" of subscription \"%s\" over to table \"%s\"",
							get_rel_name(src), get_subscription_name(subid, false), get_rel_name(dst)),
					 errdetail("The subscription writes to table \"%s\" too.", get_rel_name(dst))));
		RemoveSubscriptionRel(subid, src);
		AddSubscriptionRelState(subid, dst, SUBREL_STATE_READY, lsn);
	}
	CommandCounterIncrement();
}

/*
 * backfill._cutover_carry_subscriptions(src regclass, dst regclass)
 *		RETURNS void
 *		cutover_carry_subscriptions, STRICT.
 */
Datum
backfill_cutover_carry_subscriptions(PG_FUNCTION_ARGS)
{
	cutover_carry_subscriptions(PG_GETARG_OID(0), PG_GETARG_OID(1));
	PG_RETURN_VOID();
}
