/*-------------------------------------------------------------------------
 *
 * changes.c
 *	  The change stream of a remote job: fetching the source's changes into
 *	  the change table, and applying them to the downstream.
 *
 * The change stream.  One publication FOR TABLE and one logical slot with
 * pgoutput on the source, both named backfill_<system identifier>_<database
 * OID>_<job id> of this server, made by the job's first fetch (publication
 * first: pgoutput reads it with the catalog as of each change;
 * remote/replication.c).  A fetch, before a barrier (driver.c says which)
 * and in a transaction of its own, under the job's slot lock (one fetch at
 * a time for all the actors):
 *	 1. advances the slot to backfill.job.remote_lsn, the offset the last
 *		fetch committed, so the source can recycle the WAL before it;
 *	 2. peeks at most BACKFILL_REMOTE_FETCH_CHANGES messages up to the
 *		source's flushed WAL, decodes them (pgoutput.c) and appends the
 *		changes of whole transactions to backfill.changes_<id>: commit LSN,
 *		order, full transaction id, upsert, delete or refetch, the key, and
 *		the new row;
 *	 3. stores the new offset: the end of the last transaction decoded, or
 *		the flushed WAL's end when the peek was not cut short.
 * A crash anywhere re-fetches from the committed offset: the slot was only
 * advanced to an offset whose changes are committed here.  The slots and
 * publications of jobs that no longer exist, left by a crash or a source
 * that was down, are dropped by the first fetch of any job on that server
 * in each process that fetches (each run, each worker).
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

/* the insert of one decoded change: all parameters text */
void
prepare_insert(RemoteJob *rj)
{
	BackfillJob *job = rj->job;
	StringInfoData sql;
	Oid			types[INDEX_MAX_KEYS + 5 + 1600];
	int			n = 4 + job->npk + job->ncols + (rj->sharded ? 1 : 0);

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (backfill_lsn, backfill_order, backfill_xid, backfill_op, %s, backfill_row%s) "
					 "VALUES ($1::pg_catalog.pg_lsn, $2::pg_catalog.int4, $3::pg_catalog.xid8, $4::pg_catalog.\"char\"",
					 job->changes_sql, backfill_pk_list(job, NULL), rj->sharded ? ", backfill_part" : "");
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&sql, ", $%d::%s", 5 + k, rj->key_types[k]);
	appendStringInfoString(&sql, ", CASE WHEN $4 = 'u' THEN ROW(");
	for (int c = 0; c < job->ncols; c++)
		appendStringInfo(&sql, "%s$%d::%s", c > 0 ? ", " : "", 5 + job->npk + c, rj->col_types[c]);
	appendStringInfo(&sql, ")::%s END", job->downstream_sql);
	if (rj->sharded)
		appendStringInfo(&sql, ", $%d::pg_catalog.int4", n);
	appendStringInfoChar(&sql, ')');
	for (int i = 0; i < n; i++)
		types[i] = TEXTOID;
	rj->insert_plan = remote_plan(rj, sql.data, n, types);
}

/* ---- fetching ---- */

/* the job's tables on source s, quoted and qualified there, comma-separated */
static char *
source_tables(RemoteJob *rj, int source)
{
	StringInfoData list;

	initStringInfo(&list);
	for (int p = 0; p < rj->nparts; p++)
		if (rj->parts[p].source == source)
			appendStringInfo(&list, "%s%s", list.len > 0 ? ", " : "", rj->parts[p].table.qualified);
	return list.data;
}

/* the job's publication and slot on source s, made if missing */
XLogRecPtr
ensure_slot(RemoteJob *rj, RemoteConn *conn, int source, bool has_offset)
{
	return backfill_remote_ensure_slot(conn, source_tables(rj, source),
									   rj->sources[source].server_name, rj->name,
									   rj->job->job_id, has_offset);
}

/* whether this process has swept a server for orphans, by server OID */
static List *swept_servers = NIL;

/*
 * Drop the slots and publications of this database's jobs that no longer
 * exist (a crash, or a source down when they were dropped), on the job's
 * server, those of every role's jobs (the publications the source lets the
 * job's role drop); once per process and server.
 */
void
sweep_orphans(RemoteConn *conn, Oid serverid)
{
	MemoryContext old;

	if (list_member_oid(swept_servers, serverid))
		return;

	/* every role's jobs: row-level security shows each role its own */
	backfill_remote_drop_orphans(conn, remote_object_name(0, true), backfill_remote_live_jobs());
	old = MemoryContextSwitchTo(TopMemoryContext);
	swept_servers = lappend_oid(swept_servers, serverid);
	MemoryContextSwitchTo(old);
}

/* a 32-bit xid of a change, made full by the epoch of xmax, which follows it */
static uint64
full_xid(uint32 xid, uint64 xmax)
{
	uint64		full = (xmax & ~(uint64) 0xFFFFFFFF) | xid;

	if (full > xmax + ((uint64) 1 << 31))
		full -= (uint64) 1 << 32;
	return full;
}

/* append the decoded changes to the change table */
void
store_changes(RemoteJob *rj, RemoteDecoder *dec, XLogRecPtr offset, uint64 xmax)
{
	BackfillJob *job = rj->job;
	int			n = 5 + job->npk + job->ncols;
	Datum	   *values = palloc(sizeof(Datum) * n);
	char	   *nulls = palloc(n);
	ListCell   *lc;

	foreach(lc, dec->changes)
	{
		RemoteChange *c = lfirst(lc);
		RemoteTable *table = &rj->parts[c->part].table;
		char		op = c->kind == REMOTE_UPSERT ? 'u' : c->kind == REMOTE_DELETE ? 'd' : 'r';

		if (c->commit_lsn < offset)
			continue;			/* consumed already */
		memset(nulls, ' ', n);
		values[0] = CStringGetTextDatum(psprintf("%X/%X", LSN_FORMAT_ARGS(c->commit_lsn)));
		values[1] = CStringGetTextDatum(psprintf("%d", c->seq));
		values[2] = CStringGetTextDatum(psprintf(UINT64_FORMAT, full_xid(c->xid, xmax)));
		values[3] = CStringGetTextDatum(psprintf("%c", op));
		for (int k = 0; k < job->npk; k++)
		{
			char	   *v = c->values[rj->pk_cols[k]];

			if (v == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("a change of table \"%s.%s\" on server \"%s\" has no value for key column \"%s\"",
								table->nspname, table->relname, table->server_name,
								job->pk_names[k])));
			values[4 + k] = CStringGetTextDatum(v);
		}
		for (int i = 0; i < job->ncols; i++)
		{
			values[4 + job->npk + i] = c->values[i] ? CStringGetTextDatum(c->values[i]) : (Datum) 0;
			nulls[4 + job->npk + i] = c->values[i] ? ' ' : 'n';
		}
		values[4 + job->npk + job->ncols] = CStringGetTextDatum(psprintf("%d", c->part));
		if (SPI_execute_plan(rj->insert_plan, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into %s", job->changes_sql);
	}
}

/*
 * The catalog's index of source s's offset: -1, the job's own columns, for
 * a job of one server
 */
static int
offset_source(RemoteJob *rj, int source)
{
	return rj->sharded ? source : -1;
}

/* the job's offset on source s, as committed */
bool
committed_offset(RemoteJob *rj, int source, XLogRecPtr *offset)
{
	return backfill_job_remote_offset(rj->job->job_id, offset_source(rj, source), offset);
}

/*
 * Whether the transaction's snapshot sees the offset on source s as
 * committed: another actor's fetch may have committed one since it was
 * taken, and this transaction, when REPEATABLE READ (the final barrier's),
 * could not record its own after it.  A fetch before a barrier is READ
 * COMMITTED (backfill_next_fetch) and always sees it.
 */
bool
snapshot_sees_offset(RemoteJob *rj, int source, bool has_offset, XLogRecPtr offset)
{
	XLogRecPtr	seen;

	if (!backfill_job_remote_offset_seen(rj->job->job_id, offset_source(rj, source), &seen))
		return !has_offset;
	return has_offset && seen == offset;
}

/* record a fetch's offset on source s, the WAL end it saw, its last commit time */
void
record_offset(RemoteJob *rj, int source, XLogRecPtr offset, XLogRecPtr source_end,
			  TimestampTz commit_time)
{
	backfill_job_record_remote_offset(rj->job->job_id, offset_source(rj, source), offset,
									  source_end, commit_time);
}

/* decode the messages of a peek at source s's slot (bytea as text) into dec */
void
decode_messages(RemoteJob *rj, int source, RemoteRows *rows, RemoteDecoder *dec)
{
	memset(dec, 0, sizeof(*dec));
	dec->tables = palloc0(sizeof(RemoteDecoderTable) * rj->nparts);
	for (int p = 0; p < rj->nparts; p++)
		if (rj->parts[p].source == source)
		{
			RemoteDecoderTable *t = &dec->tables[dec->ntables++];

			t->nspname = rj->parts[p].table.nspname;
			t->relname = rj->parts[p].table.relname;
			t->part = p;
		}
	dec->ncols = rj->job->ncols;
	dec->col_names = rj->job->col_names;
	dec->npk = rj->job->npk;
	dec->pk_cols = rj->pk_cols;
	backfill_remote_decode_peeked(rows, dec);
}

/*
 * One fetch from source s (see the file header).  Returns whether it
 * reached the end of the source's WAL as it was when it started; skips it,
 * returning true, when first and another fetch committed since the
 * transaction's snapshot (the next barrier's fetch does it).
 */
static bool
fetch_source(RemoteJob *rj, int source, bool first)
{
	RemoteConn *conn = remote_source_connect(rj, source);
	XLogRecPtr	offset;
	bool		has_offset = committed_offset(rj, source, &offset);
	XLogRecPtr	confirmed;
	RemoteRows *rows;
	RemoteDecoder dec;
	XLogRecPtr	upto;
	char	   *upto_text;
	XLogRecPtr	fetched;
	uint64		xmax;

	if (first && !snapshot_sees_offset(rj, source, has_offset, offset))
		return true;
	confirmed = ensure_slot(rj, conn, source, has_offset);
	sweep_orphans(conn, rj->sources[source].serverid);
	if (!has_offset)
		offset = confirmed;
	if (confirmed < offset)
		backfill_remote_advance_slot(conn, rj->name, offset);
	upto = backfill_remote_flushed(conn, &xmax, &upto_text);

	rows = backfill_remote_peek(conn, rj->name, upto_text, BACKFILL_REMOTE_FETCH_CHANGES);
	decode_messages(rj, source, rows, &dec);
	store_changes(rj, &dec, offset, xmax);
	fetched = rows->nrows < BACKFILL_REMOTE_FETCH_CHANGES ? upto : dec.last_end;
	fetched = Max(fetched, offset);
	record_offset(rj, source, fetched, upto, dec.last_commit_time);
	return fetched >= upto;
}

/* the servers this process's fetches left out, by OID, until they answer */
static List *servers_left_out = NIL;

/*
 * Say in the server log that a fetch left server s out, or that it answers
 * again: once each time, not at every barrier while it is down.
 */
static void
note_left_out(RemoteJob *rj, int source, bool left_out, ErrorData *edata)
{
	Oid			serverid = rj->sources[source].serverid;
	MemoryContext old;

	if (left_out == list_member_oid(servers_left_out, serverid))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (left_out)
	{
		servers_left_out = lappend_oid(servers_left_out, serverid);
		ereport(LOG,
				(errmsg("backfill job %lld: could not fetch the changes of server \"%s\"; the other servers' go on",
						(long long) rj->job->job_id, rj->sources[source].server_name),
				 errdetail_internal("%s", edata->detail ? edata->detail : edata->message),
				 errhidestmt(true)));
	}
	else
	{
		servers_left_out = list_delete_oid(servers_left_out, serverid);
		ereport(LOG,
				(errmsg("backfill job %lld: server \"%s\" answers again",
						(long long) rj->job->job_id, rj->sources[source].server_name),
				 errhidestmt(true)));
	}
	MemoryContextSwitchTo(old);
}

/*
 * One fetch from each of the job's sources.  Returns whether each reached
 * the end of its WAL as it was.  With tolerant, a source that cannot be
 * reached (SQLSTATE class 08) is left out, in a subtransaction rolled back,
 * with a LOG line the first time: its changes wait in its slot for a later
 * fetch, the others' go on (a sharded job's barriers before its last);
 * else the error goes on.  A source left out counts as reached: a fetch
 * again at once would find it as unreachable, and a follow that fetched
 * until every source reached its end would spin while one is down.
 * Caller is connected to SPI, as the job's owner, and holds the slot lock.
 */
bool
fetch_once(RemoteJob *rj, bool first, bool tolerant)
{
	volatile bool reached = true;

	for (volatile int s = 0; s < rj->nsources; s++)
	{
		MemoryContext cxt = CurrentMemoryContext;
		ResourceOwner owner;

		if (!tolerant)
		{
			reached = fetch_source(rj, s, first) && reached;
			continue;
		}
		owner = backfill_subxact_begin();
		PG_TRY();
		{
			reached = fetch_source(rj, s, first) && reached;
			backfill_subxact_release(owner);
			note_left_out(rj, s, false, NULL);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_CONNECTION_EXCEPTION)
				PG_RE_THROW();
			FlushErrorState();
			backfill_subxact_rollback(owner);
			note_left_out(rj, s, true, edata);
		}
		PG_END_TRY();
	}
	return reached;
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
