/*-------------------------------------------------------------------------
 *
 * unfetched.c
 *	  The keys of the changes a remote job's source committed that the job
 *	  has not fetched, which verify_job's comparison counts as pending: for
 *	  the comparison itself, and for backfill._unfetched_keys().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/remote_rows.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"
#include "remote/remote.h"

/*
 * kind.h: unfetched_keys, for verify_job.  The keys of the changes the
 * source committed at or after "since", the job's offset as the caller's
 * snapshot sees it, that the slot still holds: a fetch committed every
 * change below it, into the change table or applied.  First makes the
 * source flush the WAL it has written, so that every transaction that a
 * snapshot taken on the source before this sees as committed is within the
 * slot's reach (it decodes flushed WAL only).  Takes the slot lock until the
 * transaction ends.  Fails with a serialization failure when fetches the
 * caller's snapshot does not see have moved the slot beyond "since".
 * Returns text[] Datums, the key's columns of each change.
 */
List *
remote_unfetched_keys(int64 job_id, const char *since_text)
{
	BackfillJob *job = backfill_load_job(job_id, CurrentMemoryContext);
	RemoteJob  *rj = remote_job_make(job);
	List	   *keys = NIL;

	backfill_lock_slot_of(job_id);
	for (int s = 0; s < rj->nsources; s++)
	{
		RemoteConn *conn;
		RemoteRows *rows;
		RemoteDecoder dec;
		char	   *confirmed;
		bool		err = false;
		XLogRecPtr	since;
		ListCell   *lc;

		/* a sharded job's offset on each server, as the caller's snapshot sees it */
		if (!rj->sharded)
			since = pg_lsn_in_internal(since_text, &err);
		else if (!backfill_job_remote_offset_seen(job_id, s, &since))
			continue;			/* nothing fetched there yet */
		conn = remote_source_connect(rj, s);

		/* what the source wrote so far, flushed */
		backfill_remote_flush_writes(conn);
		confirmed = backfill_remote_slot_confirmed(conn, rj->name);
		if (confirmed == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of backfill job %lld does not exist on server \"%s\"",
							rj->name, (long long) job_id, rj->sources[s].server_name),
					 errdetail("The changes of the source since the job's offset are lost."),
					 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							 (long long) job_id, (long long) job_id)));
		if (pg_lsn_in_internal(confirmed, &err) > since)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not compare backfill job %lld with its source", (long long) job_id),
					 errdetail("The job fetched changes of the source that this statement's snapshot does not see."),
					 errhint("Run backfill.verify_job(%lld) again.", (long long) job_id)));
		rows = backfill_remote_peek(conn, rj->name, NULL, 0);
		decode_messages(rj, s, rows, &dec);
		foreach(lc, dec.changes)
		{
			RemoteChange *c = lfirst(lc);
			Datum	   *key = palloc(sizeof(Datum) * job->npk);
			bool	   *nulls = palloc(sizeof(bool) * job->npk);
			int			dims[1] = {job->npk};
			int			lbs[1] = {1};

			if (c->commit_lsn < since)
				continue;		/* fetched already */
			for (int k = 0; k < job->npk; k++)
			{
				char	   *v = c->values[rj->pk_cols[k]];

				nulls[k] = (v == NULL);
				key[k] = v ? CStringGetTextDatum(v) : (Datum) 0;
			}
			keys = lappend(keys, construct_md_array(key, nulls, 1, dims, lbs, TEXTOID, -1, false,
													TYPALIGN_INT));
		}
	}
	return keys;
}

/*
 * The keys as one text[][], a key's columns a row (no row: an empty array)
 */
static ArrayType *
keys_array(List *keys, int npk)
{
	int			n = list_length(keys);
	Datum	   *elems = palloc(sizeof(Datum) * Max(n * npk, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n * npk, 1));
	int			dims[2] = {n, npk};
	int			lbs[2] = {1, 1};
	ListCell   *lc;

	if (n == 0)
		return construct_empty_array(TEXTOID);
	foreach(lc, keys)
	{
		Datum	   *key;
		bool	   *key_nulls;
		int			ncols;

		deconstruct_array(lfirst(lc), TEXTOID, -1, false, TYPALIGN_INT, &key, &key_nulls, &ncols);
		if (ncols != npk)
			elog(ERROR, "a key of %d columns where the job's has %d", ncols, npk);
		memcpy(elems + foreach_current_index(lc) * npk, key, sizeof(Datum) * npk);
		memcpy(nulls + foreach_current_index(lc) * npk, key_nulls, sizeof(bool) * npk);
	}
	return construct_md_array(elems, nulls, 2, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * remote_verify_unfetched
 *		kind.h: VerifySource's decoded_param.  As a statement of verify_job's
 *		comparison runs, as the job's owner: the keys not fetched from the
 *		offset the job's row shows (over several servers, each server's own),
 *		as remote_unfetched_keys reads them, in a text[][]; none when the job
 *		has fetched nothing yet.  The slot lock the comparison holds keeps
 *		the offset where it is.
 */
Datum
remote_verify_unfetched(const VerifyJob *job, bool *isnull)
{
	List	   *keys = NIL;
	Datum		since;
	bool		since_null = true;
	Datum		result;

	backfill_spi_enter();
	backfill_spi_exec_args("SELECT (CASE WHEN j.remote_partitions IS NULL THEN j.remote_lsn "
						   "ELSE '0/0'::pg_lsn END)::text FROM backfill.job j WHERE j.job_id = $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job->job_id)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed > 0)
		since = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &since_null);
	if (!since_null)
		keys = remote_unfetched_keys(job->job_id, TextDatumGetCString(since));
	result = SPI_datumTransfer(PointerGetDatum(keys_array(keys, job->npk)), false, -1);
	backfill_spi_leave();
	*isnull = false;
	return result;
}
