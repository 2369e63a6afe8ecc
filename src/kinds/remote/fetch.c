/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  The change stream of a remote job: fetching the source's changes into
 *	  the change table (apply.c applies them to the downstream).
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
