/*-------------------------------------------------------------------------
 *
 * lock_one.c
 *	  One relation the swap alters, locked by itself, and the check that
 *	  what carries a swap's catalog rows over runs under the swap's locks.
 *
 * Both require the privileges of the relation's owner: the swap alters
 * these relations, so a caller who could not alter them is refused before
 * it waits for a lock or reads a row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "cutover/lock_step.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_lock_relation);

/*
 * backfill_cutover_lock_one
 *		Lock one relation ACCESS EXCLUSIVE, and nothing else with it: a
 *		view's tables are not locked through it, and a sequence is taken as
 *		a table would be.  The wait is bounded by the caller's lock_timeout.
 *		The caller must have the privileges of the relation's owner.
 */
void
backfill_cutover_lock_one(Oid relid)
{
	Oid			relowner = backfill_relation_owner(relid);

	if (!OidIsValid(relowner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!has_privs_of_role(GetUserId(), relowner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of relation %s", get_rel_name(relid)),
				 errdetail("The cutover alters the relation, which names the table it swaps.")));
	LockRelationOid(relid, AccessExclusiveLock);
}

/*
 * backfill._cutover_lock_relation(rel regclass) RETURNS void
 *		One relation locked ACCESS EXCLUSIVE (backfill_cutover_lock_one).
 */
Datum
backfill_cutover_lock_relation(PG_FUNCTION_ARGS)
{
	backfill_cutover_lock_one(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}

/*
 * backfill_cutover_require_locks
 *		What carries a swap's catalog rows over checks first: the caller
 *		holds both tables ACCESS EXCLUSIVE (only the swap does) and has the
 *		privileges of their owners.  what: what it carries, for the error.
 */
void
backfill_cutover_require_locks(Oid src, Oid dst, const char *what)
{
	Oid			tables[2] = {src, dst};

	if (!CheckRelationOidLockedByMe(src, AccessExclusiveLock, false) ||
		!CheckRelationOidLockedByMe(dst, AccessExclusiveLock, false))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot carry %s over without both tables locked", what),
				 errdetail("Only the swap of backfill.cutover() and backfill.rollback_cutover() carries them, under the lock of both tables.")));
	for (int i = 0; i < 2; i++)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(tables[i]));
		Form_pg_class row;

		if (!HeapTupleIsValid(tup))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", tables[i])));
		row = (Form_pg_class) GETSTRUCT(tup);
		if (!has_privs_of_role(GetUserId(), row->relowner))
			aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(row->relkind),
						   NameStr(row->relname));
		ReleaseSysCache(tup);
	}
}
