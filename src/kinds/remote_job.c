/*-------------------------------------------------------------------------
 *
 * remote_job.c
 *	  The remote cdc kind's state of a job (RemoteJob): the names of its
 *	  objects on the source, its splits and where each actor's stand, its
 *	  source table's columns, and its connection there.
 *
 * A RemoteJob is made from a loaded job (kind_remote.c's design: split j
 * holds the keys whose first column is in [bound j-1, bound j), actor a of
 * p reads splits a*n/p .. (a+1)*n/p-1, split j stands on the actor's vnode
 * vnode_start + (j - its first split)).  The executor keeps it as the
 * kind's state for a run (remote_prepare); other callbacks make one for
 * the statement at hand.
 *
 * May call: remote.c, remote_rows.c and the foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "remote_rows.h"
#include "remote_job.h"

/* ---- names and splits ---- */

/* backfill_<system identifier>_<database OID>_<job id>, or its prefix */
char *
remote_object_name(int64 job_id, bool prefix_only)
{
	char	   *prefix = psprintf("backfill_" UINT64_FORMAT "_%u_", GetSystemIdentifier(),
								  MyDatabaseId);

	return prefix_only ? prefix : psprintf("%s%lld", prefix, (long long) job_id);
}

/* the vnode split j of the job stands on */
int
split_vnode(RemoteJob *rj, int actor, int j)
{
	return rj->job->actors[actor].vnode_start + (j - rj->first_split[actor]);
}

/* the inner bounds stored with the job */
static void
load_bounds(RemoteJob *rj)
{
	int			n;

	rj->bounds = backfill_job_split_bounds(rj->job->job_id, &n);
	rj->nsplits = n + 1;
}

/* lower (inclusive) and upper (exclusive) bound of split j; NULL: none */
char *
split_lo(RemoteJob *rj, int j)
{
	return j == 0 ? NULL : rj->bounds[j - 1];
}

char *
split_hi(RemoteJob *rj, int j)
{
	return j == rj->nsplits - 1 ? NULL : rj->bounds[j];
}

/* a RemoteJob for a loaded job, in the current memory context */
RemoteJob *
remote_job_make(BackfillJob *job)
{
	RemoteJob  *rj = palloc0(sizeof(RemoteJob));
	int			p = Max(job->nactors, 1);

	rj->job = job;
	backfill_remote_table(job->upstream, &rj->table);
	rj->name = remote_object_name(job->job_id, false);
	load_bounds(rj);
	rj->key_types = palloc(sizeof(char *) * job->npk);
	rj->pk_cols = palloc(sizeof(int) * job->npk);
	rj->col_types = palloc(sizeof(char *) * job->ncols);
	for (int c = 0; c < job->ncols; c++)
	{
		AttrNumber	att = get_attnum(job->upstream, job->col_names[c]);
		Oid			type;
		int32		typmod;
		Oid			coll;

		get_atttypetypmodcoll(job->upstream, att, &type, &typmod, &coll);
		rj->col_types[c] = format_type_with_typemod(type, typmod);
		for (int k = 0; k < job->npk; k++)
			if (strcmp(job->pk_names[k], job->col_names[c]) == 0)
			{
				rj->pk_cols[k] = c;
				rj->key_types[k] = rj->col_types[c];
			}
	}
	rj->first_split = palloc0(sizeof(int) * p);
	rj->end_split = palloc0(sizeof(int) * p);
	rj->pos = palloc0(sizeof(char **) * p);
	rj->full = palloc0(sizeof(bool) * p);
	for (int a = 0; a < job->nactors; a++)
	{
		rj->first_split[a] = a * rj->nsplits / p;
		rj->end_split[a] = (a + 1) * rj->nsplits / p;
	}
	rj->low = palloc0(sizeof(XLogRecPtr) * rj->nsplits);
	rj->high = palloc0(sizeof(XLogRecPtr) * rj->nsplits);
	return rj;
}

/* this process's connection to the job's source, as the job's owner */
RemoteConn *
remote_job_connect(RemoteJob *rj)
{
	return backfill_remote_connect(rj->table.serverid, rj->job->owner,
								   psprintf("backfill job %lld", (long long) rj->job->job_id));
}
