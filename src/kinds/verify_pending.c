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
