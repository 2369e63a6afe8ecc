/*-------------------------------------------------------------------------
 *
 * job.c
 *	  The remote cdc kind's state of a job (RemoteJob): the names of its
 *	  objects on the source, its splits and where each actor's stand, its
 *	  source table's columns, and its connection there.
 *
 * A RemoteJob is made from a loaded job (kind_remote.c's design: split j
 * holds the keys of its part whose first column is in [bound j-1,
 * bound j), a NULL bound standing for the part's start or end; actor a of
 * p reads splits a*n/p .. (a+1)*n/p-1, split j stands on the actor's vnode
 * vnode_start + (j - its first split)).  A job of one foreign table has one
 * part and one source; a sharded job a part per foreign partition and a
 * source per server of them.  The executor keeps it as the
 * kind's state for a run (remote_prepare); other callbacks make one for
 * the statement at hand.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "catalog/remote_rows.h"
#include "kinds/remote/job.h"

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

/*
 * The inner bounds stored with the job, and the part of each split: a NULL
 * bound ends a part (a sharded job's parts follow one another, each cut
 * into splits of its own).
 */
static void
load_bounds(RemoteJob *rj)
{
	int			n;
	int			part = 0;

	rj->bounds = backfill_job_split_bounds(rj->job->job_id, &n);
	rj->nsplits = n + 1;
	rj->split_part = palloc(sizeof(int) * rj->nsplits);
	for (int j = 0; j < rj->nsplits; j++)
	{
		rj->split_part[j] = part;
		if (j < n && rj->bounds[j] == NULL)
			part++;
	}
	if (part != rj->nparts - 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the splits of backfill job %lld do not match its %d partitions",
						(long long) rj->job->job_id, rj->nparts)));
}

/*
 * The parts of the job's upstream: the foreign table, or the foreign
 * partitions create_job found under the partitioned one, in their order;
 * and their servers, in the order the parts first name them.
 */
static void
load_parts(RemoteJob *rj)
{
	Oid		   *relids;

	rj->sharded = get_rel_relkind(rj->job->upstream) == RELKIND_PARTITIONED_TABLE;
	if (rj->sharded)
		relids = backfill_job_remote_partitions(rj->job->job_id, &rj->nparts);
	else
	{
		relids = palloc(sizeof(Oid));
		relids[0] = rj->job->upstream;
		rj->nparts = 1;
	}
	rj->parts = palloc0(sizeof(RemotePart) * rj->nparts);
	rj->sources = palloc0(sizeof(RemoteSource) * rj->nparts);
	for (int p = 0; p < rj->nparts; p++)
	{
		RemotePart *part = &rj->parts[p];

		part->relid = relids[p];
		backfill_remote_table(relids[p], &part->table);
		part->source = -1;
		for (int s = 0; s < rj->nsources; s++)
			if (rj->sources[s].serverid == part->table.serverid)
				part->source = s;
		if (part->source < 0)
		{
			part->source = rj->nsources++;
			rj->sources[part->source].serverid = part->table.serverid;
			rj->sources[part->source].server_name = part->table.server_name;
		}
	}
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

/* the part split j reads */
RemotePart *
part_of_split(RemoteJob *rj, int j)
{
	return &rj->parts[rj->split_part[j]];
}

/* a RemoteJob for a loaded job, in the current memory context */
RemoteJob *
remote_job_make(BackfillJob *job)
{
	RemoteJob  *rj = palloc0(sizeof(RemoteJob));
	int			p = Max(job->nactors, 1);

	rj->job = job;
	load_parts(rj);
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

/* this process's connection to one of the job's servers, as the job's owner */
RemoteConn *
remote_source_connect(RemoteJob *rj, int source)
{
	return backfill_remote_connect(rj->sources[source].serverid, rj->job->owner,
								   psprintf("backfill job %lld", (long long) rj->job->job_id));
}

/* this process's connection to the source of a job of one server */
RemoteConn *
remote_job_connect(RemoteJob *rj)
{
	Assert(rj->nsources == 1);
	return remote_source_connect(rj, 0);
}

/*
 * A statement of the job: kept across the run's transactions for an
 * executor, or for the current SPI connection only.
 */
SPIPlanPtr
remote_plan(RemoteJob *rj, const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan;

	if (rj->plans != NULL)
		return backfill_keep_plan(rj->plans, sql, nargs, types);
	plan = SPI_prepare(sql, nargs, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed (%s) for: %s", SPI_result_code_string(SPI_result), sql);
	return plan;
}
