/*-------------------------------------------------------------------------
 *
 * verify_pending.c
 *	  What the kinds' verify_source callbacks share: the SQL of verify_job
 *	  that is the same for every kind that has keys pending.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kinds/kind.h"
#include "lib/lib.h"

/*
 * For the kinds' verify_source: a difference is settled when its key is
 * pending nowhere, neither in the job's change table nor among the keys not
 * fetched yet (w).  Two anti-joins, which the planner merges (a key is an
 * anonymous record, which it will not hash), so that a job with many keys
 * pending and many differences is compared in n log n, not n times m.
 */
char *
backfill_verify_settled_sql(const VerifyJob *job)
{
	return psprintf("NOT EXISTS (SELECT FROM %s c WHERE ROW(%s) = x.k) "
					"AND NOT EXISTS (SELECT FROM w WHERE w.k = x.k)",
					job->changes_sql, job->key_c);
}

/*
 * For the kinds whose state table has a row per vnode: a job that has not
 * finished covers the keys of a vnode whose flag "finished" is set or that
 * compare with its position by the btree strategy given (at or below it,
 * or below it for a position that is the next row to read); the keys
 * captured since its last barrier are pending.  A finished job covers every
 * key and has nothing pending.
 */
void
backfill_verify_vnode_source(const VerifyJob *job, VerifySource *source, const char *finished,
							 int strategy)
{
	if (job->finished)
		return;
	source->covered = psprintf("EXISTS (SELECT FROM %s s WHERE s.vnode = %s AND (s.%s OR %s))",
							   job->state_sql, job->vnode_u, finished,
							   backfill_key_compare_columns(job->upstream, job->npk, job->pk_names,
															"u", strategy, "s"));
	source->settled = backfill_verify_settled_sql(job);
}
