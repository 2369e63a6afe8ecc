/*-------------------------------------------------------------------------
 *
 * actor.c
 *	  A job's actors made again (reschedule), and the ids of new jobs,
 *	  fragments and actors.
 *
 * Job, fragment and actor ids are taken under an advisory lock, with
 * field4 BACKFILL_ID_LOCK_FIELD4, held only while one id is taken
 * (backfill_next_id).
 * Only the extension's owner writes the catalogs; the writes here run in a
 * catalog context (privilege.c) on behalf of a caller whose right to the job
 * was checked first.  Nothing here commits: a failure recorded here stays
 * when the caller commits it (state.c, worker.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * backfill_next_id
 *		The next value of one of the extension's id sequences (job_id_seq,
 *		fragment_id_seq, actor_id_seq), set again with setval(): nextval()
 *		logs 32 values ahead, which a crash would skip, where setval()'s WAL
 *		record holds the value itself, so that ids stay dense across
 *		crashes.  An advisory lock of the sequence's makes the two one step
 *		for concurrent callers; it is released at once, and nextval() and
 *		setval() are not rolled back, so concurrent transactions never wait
 *		for each other's commit.
 */
int64
backfill_next_id(const char *sequence)
{
	Oid			seqid;
	List	   *names = list_make2(makeString(BACKFILL_SCHEMA),
								   makeString((char *) sequence));
	LOCKTAG		tag;
	RoleContext rc;
	int64		result;

	seqid = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, false);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) seqid, 0, BACKFILL_ID_LOCK_FIELD4);
	backfill_catalog_enter(&rc);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	result = DatumGetInt64(DirectFunctionCall1(nextval_oid, ObjectIdGetDatum(seqid)));
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seqid), Int64GetDatum(result));
	LockRelease(&tag, ExclusiveLock, false);
	backfill_role_leave(&rc);
	return result;
}

/*
 * backfill_replace_actors
 *		The job's actors again: parallelism of them, new ids (dense, as
 *		backfill_next_id takes them), even contiguous vnode ranges, at the
 *		epoch the old ones had reached.  Their row counts are the kind's to
 *		set (kind.h).
 */
void
backfill_replace_actors(int64 job_id, int parallelism)
{
	Oid			types[3] = {INT8OID, INT4OID, INT4ARRAYOID};
	Datum		values[3] = {Int64GetDatum(job_id), Int32GetDatum(parallelism)};
	Datum		actor_ids[BACKFILL_MAX_PARALLELISM];
	RoleContext rc;

	Assert(parallelism >= 1 && parallelism <= BACKFILL_MAX_PARALLELISM);
	for (int i = 0; i < parallelism; i++)
		actor_ids[i] = Int32GetDatum((int32) backfill_next_id("actor_id_seq"));
	values[2] = PointerGetDatum(construct_array(actor_ids, parallelism, INT4OID,
												sizeof(int32), true, TYPALIGN_INT));
	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("WITH old AS (DELETE FROM backfill.actor a WHERE a.job_id = $1 "
						   "                 RETURNING a.epoch, a.fragment_id) "
						   "INSERT INTO backfill.actor (actor_id, job_id, fragment_id, vnode_start, vnode_end, epoch) "
						   "SELECT $3[i + 1], $1, j.fragment_id, "
						   "       i * 256 / $2, (i + 1) * 256 / $2 - 1, "
						   "       (SELECT coalesce(pg_catalog.max(o.epoch), 0) FROM old o) "
						   "  FROM backfill.job j, pg_catalog.generate_series(0, $2 - 1) i "
						   " WHERE j.job_id = $1 ORDER BY i",
						   3, types, values, NULL, SPI_OK_INSERT);
	backfill_role_leave(&rc);
	backfill_catalog_write("UPDATE backfill.job SET parallelism = $2 WHERE job_id = $1",
				  job_id, false, parallelism, SPI_OK_UPDATE);
}
