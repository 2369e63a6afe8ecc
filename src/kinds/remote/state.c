/*-------------------------------------------------------------------------
 *
 * state.c
 *	  The remote cdc kind's state table: decoding it into the vnodes the
 *	  splits stand on, writing the dirty splits' rows back, and what the
 *	  observation functions show of it (job_state, job_splits).
 *
 * One row per split, in RisingWave's v2 layout (state_v2.rs): split_id,
 * backfill_finished, row_count, cdc_offset_low, cdc_offset_high.  The
 * position inside a split lives only in its actor's memory (chunk.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_type.h"
#include "foreign/foreign.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/remote_rows.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"

/*
 * An offset column: NULL, or {"lsn": "X/X"}; its jsonb type and its lsn
 * are the columns <prefix>_type and <prefix>_lsn of the state's query.
 */
static void
check_offset(BackfillJob *job, HeapTuple tup, TupleDesc desc, const char *prefix,
			 const char *field, bool required)
{
	char	   *type = SPI_getvalue(tup, desc, SPI_fnumber(desc, psprintf("%s_type", prefix)));
	char	   *lsn = SPI_getvalue(tup, desc, SPI_fnumber(desc, psprintf("%s_lsn", prefix)));
	char	   *split = SPI_getvalue(tup, desc, SPI_fnumber(desc, "split_id"));
	bool		have_error = false;

	if (type == NULL)
	{
		if (required)
			backfill_split_state_error(job, field, split);
		return;
	}
	if (strcmp(type, "object") != 0 || lsn == NULL)
		have_error = true;
	else
		(void) pg_lsn_in_internal(lsn, &have_error);
	if (have_error)
		backfill_split_state_error(job, field, split);
}

/*
 * Decode the state rows into the vnodes the splits stand on, in the order of
 * RisingWave's state_v2.rs: backfill_finished, row_count, cdc_offset_low,
 * cdc_offset_high.
 */
void
remote_load_state(BackfillJob *job)
{
	RemoteJob  *rj = remote_job_make(job);

	backfill_init_vnodes(job);
	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
		job->vnodes[v].present = job->vnodes[v].finished = true;
	for (int a = 0; a < job->nactors; a++)
		for (int j = rj->first_split[a]; j < rj->end_split[a]; j++)
			job->vnodes[split_vnode(rj, a, j)].present =
				job->vnodes[split_vnode(rj, a, j)].finished = false;

	if (SPI_execute(psprintf("SELECT split_id, backfill_finished, row_count, "
							 "pg_catalog.jsonb_typeof(cdc_offset_low) AS low_type, "
							 "cdc_offset_low OPERATOR(pg_catalog.->>) 'lsn' AS low_lsn, "
							 "pg_catalog.jsonb_typeof(cdc_offset_high) AS high_type, "
							 "cdc_offset_high OPERATOR(pg_catalog.->>) 'lsn' AS high_lsn "
							 "FROM %s ORDER BY split_id", job->state_sql), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		int			split_col = SPI_fnumber(desc, "split_id");
		bool		isnull;
		int64		split = DatumGetInt64(SPI_getbinval(tup, desc, split_col, &isnull));
		bool		finished = DatumGetBool(SPI_getbinval(tup, desc,
														  SPI_fnumber(desc, "backfill_finished"),
														  &isnull));
		int64		rows;
		int			actor = -1;

		if (isnull)
			backfill_split_state_error(job, "backfill_finished", SPI_getvalue(tup, desc, split_col));
		rows = DatumGetInt64(SPI_getbinval(tup, desc, SPI_fnumber(desc, "row_count"), &isnull));
		if (isnull || rows < 0)
			backfill_split_state_error(job, "row_count", SPI_getvalue(tup, desc, split_col));
		check_offset(job, tup, desc, "low", "cdc_offset_low", finished);
		check_offset(job, tup, desc, "high", "cdc_offset_high", finished);
		for (int a = 0; a < job->nactors; a++)
			if (split >= rj->first_split[a] && split < rj->end_split[a])
				actor = a;
		if (actor < 0)
			backfill_split_state_error(job, "split_id", SPI_getvalue(tup, desc, split_col));
		job->vnodes[split_vnode(rj, actor, (int) split)].present = true;
		job->vnodes[split_vnode(rj, actor, (int) split)].finished = finished;
		job->vnodes[split_vnode(rj, actor, (int) split)].row_count = rows;
	}
	SPI_freetuptable(SPI_tuptable);
}

void
prepare_persist(RemoteJob *rj)
{
	Oid			types[5] = {INT8OID, BOOLOID, INT8OID, TEXTOID, TEXTOID};

	rj->persist_plan =
		remote_plan(rj,
					psprintf("INSERT INTO %s AS s (split_id, backfill_finished, row_count, "
									"cdc_offset_low, cdc_offset_high) VALUES ($1, $2, $3, "
									"CASE WHEN $4 IS NOT NULL THEN pg_catalog.jsonb_build_object('lsn', $4) END, "
									"CASE WHEN $5 IS NOT NULL THEN pg_catalog.jsonb_build_object('lsn', $5) END) "
									"ON CONFLICT (split_id) DO UPDATE SET "
									"backfill_finished = EXCLUDED.backfill_finished, row_count = EXCLUDED.row_count, "
									"cdc_offset_low = EXCLUDED.cdc_offset_low, cdc_offset_high = EXCLUDED.cdc_offset_high",
									rj->job->state_sql),
						   5, types);
}

/* kind.h: persist: the dirty splits' rows */
void
remote_persist(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;
	BackfillJob *job = rj->job;

	for (int a = 0; a < job->nactors; a++)
		for (int j = rj->first_split[a]; j < rj->end_split[a]; j++)
		{
			VnodeState *vs = &job->vnodes[split_vnode(rj, a, j)];
			Datum		values[5];
			char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

			if (!vs->dirty)
				continue;
			values[0] = Int64GetDatum(j);
			values[1] = BoolGetDatum(vs->finished);
			values[2] = Int64GetDatum(vs->row_count);
			values[3] = CStringGetTextDatum(psprintf("%X/%X", LSN_FORMAT_ARGS(rj->low[j])));
			values[4] = CStringGetTextDatum(psprintf("%X/%X", LSN_FORMAT_ARGS(rj->high[j])));
			if (SPI_execute_plan(rj->persist_plan, values, nulls, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not write state table %s", job->state_sql);
			vs->dirty = false;
			vs->present = true;
		}
}

/* kind.h: update_actor: the rows of its splits */
void
remote_update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	int64		rows = 0;

	for (int v = actor->vnode_start; v <= actor->vnode_end; v++)
		rows += exec->job->vnodes[v].row_count;
	backfill_record_actor(exec, actor, rows);
}

bool
remote_finished_everywhere(BackfillJob *job)
{
	int			nbounds;
	int			nsplits;

	(void) backfill_job_split_bounds(job->job_id, &nbounds);
	nsplits = nbounds + 1;
	return backfill_spi_true(psprintf("SELECT pg_catalog.count(*) FILTER (WHERE backfill_finished) = %d FROM %s",
									  nsplits, job->state_sql));
}

void
remote_recount_actors(int64 job_id, const char *state_sql pg_attribute_unused())
{
	backfill_actor_rows_reset(job_id);
}

/*
 * job_state's rows: one per split, its id for a vnode, its range of the
 * first key column for a position, its low and high offsets for cdc_offset;
 * actor a of p reads splits a*n/p .. (a+1)*n/p - 1, as job.c gives
 * them out.  The position inside a split is in memory only.
 */
char *
remote_state_query(const char *state_sql, const char *position pg_attribute_unused())
{
	return psprintf("WITH b AS (SELECT coalesce($2, '{}'::text[]) AS b), "
					"     a AS (SELECT a.actor_id, (row_number() OVER (ORDER BY a.actor_id) - 1)::int AS i, "
					"                  count(*) OVER ()::int AS p "
					"             FROM backfill.actor a WHERE a.job_id = $1) "
					"SELECT a.actor_id, sp.split_id, "
					"       format('[%%s,%%s)', b.b[sp.split_id], b.b[sp.split_id + 1]), "
					"       coalesce(s.backfill_finished, false), coalesce(s.row_count, 0), NULL::bigint, "
					"       CASE WHEN s.split_id IS NOT NULL "
					"            THEN jsonb_build_object('low', s.cdc_offset_low, 'high', s.cdc_offset_high) END "
					"  FROM b CROSS JOIN generate_series(0, cardinality(b.b)) AS sp(split_id) "
					"  JOIN a ON sp.split_id >= a.i * (cardinality(b.b) + 1) / a.p "
					"        AND sp.split_id < (a.i + 1) * (cardinality(b.b) + 1) / a.p "
					"  LEFT JOIN %s s ON s.split_id = sp.split_id "
					" ORDER BY sp.split_id", state_sql);
}

/* the name of the server of foreign table relid; NULL when it is none */
static char *
foreign_server_name(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(FOREIGNTABLEREL, ObjectIdGetDatum(relid));
	ForeignServer *server;

	if (!HeapTupleIsValid(tup))
		return NULL;
	server = GetForeignServerExtended(((Form_pg_foreign_table) GETSTRUCT(tup))->ftserver,
									  FSV_MISSING_OK);
	ReleaseSysCache(tup);
	return server ? pstrdup(server->servername) : NULL;
}

/*
 * job_splits' rows: split j holds the keys in [bound j-1, bound j) of the
 * first key column; a NULL bound, in a sharded job's, ends a partition's
 * splits, so a split's partition is the one after as many NULL bounds as
 * come before it (a job of one foreign table: its upstream).
 */
List *
remote_splits(const JobView *job)
{
	Datum	   *bounds = NULL;
	bool	   *bound_nulls = NULL;
	int			nbounds = 0;
	Datum	   *parts = NULL;
	bool	   *part_nulls = NULL;
	int			nparts = 0;
	int			part = 0;
	List	   *splits = NIL;

	if (!job->splits_null)
		deconstruct_array(DatumGetArrayTypeP(job->splits), TEXTOID, -1, false, TYPALIGN_INT,
						  &bounds, &bound_nulls, &nbounds);
	if (!job->partitions_null)
		deconstruct_array(DatumGetArrayTypeP(job->partitions), OIDOID, sizeof(Oid), true,
						  TYPALIGN_INT, &parts, &part_nulls, &nparts);
	for (int i = 0; i <= nbounds; i++)
	{
		JobSplit   *split = palloc0(sizeof(JobSplit));

		if (i > 0 && bound_nulls[i - 1])
			part++;
		split->split_id = i;
		split->partition = part < nparts && !part_nulls[part] ?
			DatumGetObjectId(parts[part]) : job->upstream;
		split->server = foreign_server_name(split->partition);
		if (i > 0 && !bound_nulls[i - 1])
			split->lower_bound = TextDatumGetCString(bounds[i - 1]);
		if (i < nbounds && !bound_nulls[i])
			split->upper_bound = TextDatumGetCString(bounds[i]);
		splits = lappend(splits, split);
	}
	return splits;
}
