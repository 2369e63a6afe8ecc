/*-------------------------------------------------------------------------
 *
 * apply.c
 *	  The change stream of a remote job, applied: the changes of the keys
 *	  an actor has covered, from the change table to the downstream.
 *
 * Applying.  At the start of each barrier an actor applies the changes of
 * its covered keys in commit order, the last change of each key winning:
 * an upsert is INSERT ... ON CONFLICT DO UPDATE, a delete a DELETE, a
 * refetch (an update that left a TOASTed column out of the WAL) reads the
 * row again from the source.  The changes of keys not covered yet wait in
 * the change table for their chunk (kind_remote.c says why nothing is lost
 * or doubled).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "catalog/remote_rows.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"

/* ---- statements ---- */

/*
 * The covered keys of an actor, on the change table c: in its range, and
 * below the current split ($3 = 0: $4 its lower bound), at or below the
 * position ($3 = 1: $5...), or anywhere ($3 = 2).  A sharded job's splits
 * follow one another part by part, so its ranges are of (part, key): the
 * actor's first and last splits' parts are $n+5 and $n+6, the current
 * split's $n+7 (n the key's columns), and a NULL bound is its part's start
 * or end.
 */
static char *
covered_sql(RemoteJob *rj)
{
	BackfillJob *job = rj->job;
	char	  **c = backfill_pk_exprs(job, "c");
	char	  **pos = palloc(sizeof(char *) * job->npk);
	char	   *bound[1];
	char	   *lo;
	char	   *hi;
	char	   *below_lo;
	char	   *upto_pos;
	int			n = job->npk;
	StringInfoData sql;

	bound[0] = psprintf("$1::%s", rj->key_types[0]);
	lo = psprintf("($1 IS NULL OR %s)",
				  backfill_key_compare_types(1, job->pk_types, c, BTGreaterEqualStrategyNumber, bound));
	bound[0] = psprintf("$2::%s", rj->key_types[0]);
	hi = psprintf("($2 IS NULL OR %s)",
				  backfill_key_compare_types(1, job->pk_types, c, BTLessStrategyNumber, bound));
	bound[0] = psprintf("$4::%s", rj->key_types[0]);
	below_lo = backfill_key_compare_types(1, job->pk_types, c, BTLessStrategyNumber, bound);
	for (int k = 0; k < n; k++)
		pos[k] = psprintf("$%d::%s", 5 + k, rj->key_types[k]);
	upto_pos = backfill_key_compare(job, c, BTLessEqualStrategyNumber, pos);

	initStringInfo(&sql);
	if (!rj->sharded)
		appendStringInfo(&sql, "%s AND %s AND CASE $3 WHEN 2 THEN true WHEN 0 THEN %s ELSE %s END",
						 lo, hi, below_lo, upto_pos);
	else
		appendStringInfo(&sql,
						 "(c.backfill_part > $%d OR (c.backfill_part = $%d AND %s)) "
						 "AND (c.backfill_part < $%d OR (c.backfill_part = $%d AND %s)) "
						 "AND CASE $3 WHEN 2 THEN true "
						 "WHEN 0 THEN c.backfill_part < $%d OR (c.backfill_part = $%d AND %s) "
						 "ELSE c.backfill_part < $%d OR (c.backfill_part = $%d AND %s) END",
						 n + 5, n + 5, lo, n + 6, n + 6, hi,
						 n + 7, n + 7, below_lo, n + 7, n + 7, upto_pos);
	return sql.data;
}

/* the apply: the last change of each covered key; returns the keys to read again */
void
prepare_apply(RemoteJob *rj)
{
	BackfillJob *job = rj->job;
	StringInfoData sql;
	StringInfoData set;
	StringInfoData keys;
	Oid			types[INDEX_MAX_KEYS + 7];

	initStringInfo(&set);
	for (int c = 0; c < job->ncols; c++)
	{
		bool		is_key = false;

		for (int k = 0; k < job->npk; k++)
			is_key |= (rj->pk_cols[k] == c);
		if (!is_key)
			appendStringInfo(&set, "%s%s = EXCLUDED.%s", set.len > 0 ? ", " : "",
							 quote_identifier(job->col_names[c]),
							 quote_identifier(job->col_names[c]));
	}
	initStringInfo(&keys);
	appendStringInfoString(&keys, rj->sharded ? "l.backfill_part" : "0 AS backfill_part");
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&keys, ", l.%s::text", quote_identifier(job->pk_names[k]));
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH c AS (DELETE FROM %s c WHERE %s RETURNING c.*), "
					 "l AS (SELECT DISTINCT ON (%s) * FROM c ORDER BY %s, backfill_lsn DESC, backfill_order DESC), "
					 "d AS (DELETE FROM %s t USING l WHERE %s AND l.backfill_op <> 'u'), "
					 "i AS (INSERT INTO %s SELECT (l.backfill_row).* FROM l WHERE l.backfill_op = 'u' "
					 "ON CONFLICT (%s) DO %s%s) "
					 "SELECT %s FROM l WHERE l.backfill_op = 'r'",
					 job->changes_sql, covered_sql(rj),
					 backfill_pk_list(job, NULL), backfill_pk_list(job, NULL),
					 job->downstream_sql,
					 backfill_key_compare(job, backfill_pk_exprs(job, "t"), BTEqualStrategyNumber,
										  backfill_pk_exprs(job, "l")),
					 job->downstream_sql, backfill_pk_list(job, NULL),
					 set.len > 0 ? "UPDATE SET " : "NOTHING", set.data, keys.data);
	types[0] = TEXTOID;
	types[1] = TEXTOID;
	types[2] = INT4OID;
	types[3] = TEXTOID;
	for (int k = 0; k < job->npk; k++)
		types[4 + k] = TEXTOID;
	for (int i = 0; i < 3; i++)
		types[4 + job->npk + i] = INT4OID;
	rj->apply_plan = remote_plan(rj, sql.data, 4 + job->npk + (rj->sharded ? 3 : 0), types);
}

/* ---- applying ---- */

/*
 * Read again from the source the rows of the keys of part "part" among
 * the apply's (its first column the part, the others the key), into the
 * downstream.
 */
static void
refetch_part(RemoteJob *rj, int part, SPITupleTable *tuptable, uint64 nkeys)
{
	BackfillJob *job = rj->job;
	RemotePart *p = &rj->parts[part];
	RemoteConn *conn;
	Relation	rel;
	List	   *attnames = NIL;
	uint64	   *rows = palloc(sizeof(uint64) * Max(nkeys, 1));
	uint64		nrows = 0;

	for (uint64 i = 0; i < nkeys; i++)
		if (strcmp(SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, 1), psprintf("%d", part)) == 0)
			rows[nrows++] = i;
	if (nrows == 0)
		return;
	conn = remote_source_connect(rj, p->source);
	rel = table_open(job->downstream, RowExclusiveLock);
	for (int c = 0; c < job->ncols; c++)
		attnames = lappend(attnames, makeString(job->col_names[c]));
	for (uint64 first = 0; first < nrows; first += BACKFILL_REMOTE_REFETCH_BATCH)
	{
		KeyCond		kc;

		memset(&kc, 0, sizeof(kc));
		kc.conn = conn;
		initStringInfo(&kc.sql);
		for (uint64 i = first; i < Min(nrows, first + BACKFILL_REMOTE_REFETCH_BATCH); i++)
		{
			appendStringInfoString(&kc.sql, i > first ? ", (" : "(");
			for (int k = 0; k < job->npk; k++)
			{
				if (k > 0)
					appendStringInfoString(&kc.sql, ", ");
				cond_value(&kc, SPI_getvalue(tuptable->vals[rows[i]], tuptable->tupdesc,
											 SPI_fnumber(tuptable->tupdesc, job->pk_names[k])),
						   rj->key_types[k]);
			}
			appendStringInfoChar(&kc.sql, ')');
		}
		(void) backfill_remote_read_keys(conn, rel, attnames, job->columns_sql, p->table.qualified,
										 backfill_pk_list(job, "t"), kc.sql.data);
	}
	table_close(rel, NoLock);
}

/* read again from the sources the rows of the apply's keys, into the downstream */
void
refetch(RemoteJob *rj, SPITupleTable *tuptable, uint64 nkeys)
{
	/* COPY FROM wants one; a worker following the source has none */
	bool		pushed = !ActiveSnapshotSet();

	if (pushed)
		PushActiveSnapshot(GetTransactionSnapshot());
	for (int p = 0; p < rj->nparts; p++)
		refetch_part(rj, p, tuptable, nkeys);
	if (pushed)
		PopActiveSnapshot();
}

/* apply the changes of an actor's covered keys (-1: every key) */
void
apply_changes(RemoteJob *rj, int actor)
{
	BackfillJob *job = rj->job;
	Datum		values[INDEX_MAX_KEYS + 7];
	char		nulls[INDEX_MAX_KEYS + 7];
	int			mode = 2;
	int			cur = -1;
	int			n = job->npk;

	memset(nulls, 'n', sizeof(nulls));
	values[2] = Int32GetDatum(2);
	nulls[2] = ' ';
	/* every part, unless an actor's splits say which */
	values[n + 4] = Int32GetDatum(0);
	values[n + 5] = Int32GetDatum(rj->nparts - 1);
	values[n + 6] = Int32GetDatum(0);
	for (int i = 0; i < 3; i++)
		nulls[n + 4 + i] = ' ';
	if (actor >= 0)
	{
		char	   *lo = split_lo(rj, rj->first_split[actor]);
		char	   *hi = split_hi(rj, rj->end_split[actor] - 1);

		if (rj->first_split[actor] >= rj->end_split[actor])
			return;				/* no split */
		if (lo)
			values[0] = CStringGetTextDatum(lo), nulls[0] = ' ';
		if (hi)
			values[1] = CStringGetTextDatum(hi), nulls[1] = ' ';
		values[n + 4] = Int32GetDatum(rj->split_part[rj->first_split[actor]]);
		values[n + 5] = Int32GetDatum(rj->split_part[rj->end_split[actor] - 1]);
		for (int j = rj->first_split[actor]; j < rj->end_split[actor] && cur < 0; j++)
			if (!job->vnodes[split_vnode(rj, actor, j)].finished)
				cur = j;
		if (cur >= 0)
		{
			mode = rj->pos[actor] ? 1 : 0;
			values[n + 6] = Int32GetDatum(rj->split_part[cur]);
		}
	}
	values[2] = Int32GetDatum(mode);
	if (mode == 0 && split_lo(rj, cur) != NULL)
		values[3] = CStringGetTextDatum(split_lo(rj, cur)), nulls[3] = ' ';
	for (int k = 0; mode == 1 && k < job->npk; k++)
		values[4 + k] = CStringGetTextDatum(rj->pos[actor][k]), nulls[4 + k] = ' ';
	if (SPI_execute_plan(rj->apply_plan, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not apply the changes of %s", job->upstream_sql);
	if (SPI_processed > 0)
		refetch(rj, SPI_tuptable, SPI_processed);
}
