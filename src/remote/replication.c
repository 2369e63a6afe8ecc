/*-------------------------------------------------------------------------
 *
 * replication.c
 *	  A remote job's publication and logical replication slot on the
 *	  source: making them, peeking at the slot's changes, advancing and
 *	  dropping it, and sweeping those of jobs that no longer exist.
 *
 * Each remote job has one publication FOR TABLE and one logical slot with
 * pgoutput on each source (a sharded job's publication on a server has
 * the tables of its partitions there), both named by the kind
 * (kinds/remote/job.c: backfill_<system identifier>_<database OID>_<job
 * id>).  The publication is made first: pgoutput reads it with the
 * catalog as of each change.  The slot is only peeked at
 * (pg_logical_slot_peek_binary_changes) and advanced to an offset whose
 * changes the caller has committed, so a crash anywhere re-reads from that
 * offset; the messages are decoded by pgoutput.c.
 *
 * A slot dropped is not made again by a rollback, and the changes only it
 * held are gone: so a job's slot and publication are dropped after the
 * local transaction that lets go of them has committed
 * (backfill_remote_drop_slot_at_commit), never before.  A failure then,
 * or a crash between the commit and the drop, leaves them to the sweep of
 * the slots of jobs that no longer run (backfill_remote_drop_orphans).
 *
 * This file sends the statements and reads their answers; which offset to
 * advance to, when to sweep and which jobs are alive are the kind's to say.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"

#include "remote/remote.h"

/* how long the drops after a commit wait for a source at most, each */
#define BACKFILL_REMOTE_DROP_TIMEOUT_MS 10000

/* The confirmed offset of the slot named $1, as the source writes it */
#define SLOT_CONFIRMED_QUERY \
	"SELECT confirmed_flush_lsn::text FROM pg_catalog.pg_replication_slots WHERE slot_name = $1"

/*
 * backfill_remote_ensure_slot
 *		Make the job's publication of tables (quoted, qualified names of the
 *		source, comma-separated) and its slot, both named name, if missing,
 *		on server_name; return the slot's confirmed offset (a new slot's
 *		start).  A slot missing when the job has an offset (has_offset) is
 *		an error: the source's changes since that offset are lost.
 */
XLogRecPtr
backfill_remote_ensure_slot(RemoteConn *conn, const char *tables, const char *server_name,
							const char *name, int64 job_id, bool has_offset)
{
	const char *params[1] = {name};
	RemoteRows *rows;
	char	   *confirmed;
	bool		err = false;

	/*
	 * Both looked up in one round trip: a job does this before every fetch,
	 * and they almost always exist.  A slot of that name that is not a
	 * logical one has no confirmed offset; creating it then fails on the
	 * source with its own error.
	 */
	rows = backfill_remote_query(conn,
								 "SELECT EXISTS (SELECT FROM pg_catalog.pg_publication WHERE pubname = $1)::text, "
								 "(" SLOT_CONFIRMED_QUERY ")",
								 1, params);
	confirmed = backfill_remote_value(rows, 0, 1);
	if (strcmp(backfill_remote_value(rows, 0, 0), "true") != 0)
		(void) backfill_remote_query(conn, psprintf("CREATE PUBLICATION %s FOR TABLE %s",
													quote_identifier(name), tables),
									 0, NULL);
	if (confirmed == NULL)
	{
		if (has_offset)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of backfill job %lld does not exist on server \"%s\"",
							name, (long long) job_id, server_name),
					 errdetail("The changes of the source since the job's offset are lost."),
					 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							 (long long) job_id, (long long) job_id)));
		rows = backfill_remote_query(conn, "SELECT lsn::text FROM pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput')",
									 1, params);
		confirmed = backfill_remote_value(rows, 0, 0);
	}
	return pg_lsn_in_internal(confirmed, &err);
}

/*
 * backfill_remote_slot_confirmed
 *		The confirmed offset of slot name, as the source writes it; NULL when
 *		the slot does not exist.
 */
char *
backfill_remote_slot_confirmed(RemoteConn *conn, const char *name)
{
	const char *params[1] = {name};
	RemoteRows *rows;

	rows = backfill_remote_query(conn, SLOT_CONFIRMED_QUERY, 1, params);
	return rows->nrows == 0 ? NULL : backfill_remote_value(rows, 0, 0);
}

/* backfill_remote_advance_slot: move slot name's confirmed offset to offset */
void
backfill_remote_advance_slot(RemoteConn *conn, const char *name, XLogRecPtr offset)
{
	const char *params[2];

	params[0] = name;
	params[1] = psprintf("%X/%X", LSN_FORMAT_ARGS(offset));
	(void) backfill_remote_query(conn, "SELECT FROM pg_catalog.pg_replication_slot_advance($1, $2::pg_catalog.pg_lsn)",
								 2, params);
}

/*
 * backfill_remote_flushed
 *		The end of the source's flushed WAL, and the xmax of its current
 *		snapshot (*xmax), which makes a change's 32-bit xid full.  Its text,
 *		as the source wrote it, in *text.
 */
XLogRecPtr
backfill_remote_flushed(RemoteConn *conn, uint64 *xmax, char **text)
{
	RemoteRows *rows;
	bool		err = false;

	rows = backfill_remote_query(conn, "SELECT pg_catalog.pg_current_wal_flush_lsn()::text, "
								 "pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text",
								 0, NULL);
	*xmax = strtou64(backfill_remote_value(rows, 0, 1), NULL, 10);
	*text = backfill_remote_value(rows, 0, 0);
	return pg_lsn_in_internal(*text, &err);
}

/*
 * backfill_remote_flush_writes
 *		Make the source flush what it wrote so far: a transaction that writes
 *		WAL (a logical message, which pgoutput does not send) and commits
 *		synchronously flushes all of it, asynchronous commits included.
 */
void
backfill_remote_flush_writes(RemoteConn *conn)
{
	(void) backfill_remote_query(conn, "BEGIN", 0, NULL);
	(void) backfill_remote_query(conn, "SET LOCAL synchronous_commit = local", 0, NULL);
	(void) backfill_remote_query(conn, "SELECT FROM pg_catalog.pg_logical_emit_message(true, 'backfill', '')",
								 0, NULL);
	(void) backfill_remote_query(conn, "COMMIT", 0, NULL);
}

/*
 * backfill_remote_peek
 *		The messages of slot name's publication of the same name, without
 *		consuming them, as bytea text: up to upto (its text) and at most
 *		nchanges of them, or, upto NULL, all the slot holds.
 */
RemoteRows *
backfill_remote_peek(RemoteConn *conn, const char *name, const char *upto, int nchanges)
{
	const char *params[4];

	if (upto == NULL)
	{
		params[0] = name;
		params[1] = name;
		return backfill_remote_query(conn, "SELECT data FROM pg_catalog.pg_logical_slot_peek_binary_changes("
									 "$1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)",
									 2, params);
	}
	params[0] = name;
	params[1] = upto;
	params[2] = psprintf("%d", nchanges);
	params[3] = name;
	return backfill_remote_query(conn, "SELECT data FROM pg_catalog.pg_logical_slot_peek_binary_changes("
								 "$1, $2::pg_catalog.pg_lsn, $3::int, 'proto_version', '1', "
								 "'publication_names', $4)", 4, params);
}

/*
 * backfill_remote_decode_peeked
 *		Decode the messages of a peek (bytea as text) into dec, whose job's
 *		fields the caller has set (pgoutput.c).
 */
void
backfill_remote_decode_peeked(RemoteRows *rows, RemoteDecoder *dec)
{
	for (int i = 0; i < rows->nrows; i++)
	{
		char	   *hex = backfill_remote_value(rows, i, 0);
		int			len = (strlen(hex) - 2) / 2;
		char	   *data = palloc(len + 1);

		(void) hex_decode(hex + 2, len * 2, data);
		backfill_pgoutput_decode(dec, data, len);
		pfree(data);
	}
}

/* backfill_remote_drop_slot: drop slot name, if it exists, and the publication */
void
backfill_remote_drop_slot(RemoteConn *conn, const char *name)
{
	const char *params[1] = {name};

	(void) backfill_remote_query(conn, "SELECT pg_catalog.pg_drop_replication_slot(slot_name) "
								 "FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
								 1, params);
	(void) backfill_remote_query(conn, psprintf("DROP PUBLICATION IF EXISTS %s", quote_identifier(name)),
								 0, NULL);
}

/* a slot and publication to drop once the transaction has committed */
typedef struct DropAtCommit
{
	RemoteConn *conn;			/* opened in the transaction: none is opened after */
	char	   *name;
} DropAtCommit;

/* the drop of a DropAtCommit (a RemoteStep) */
static void
drop_committed(void *arg)
{
	DropAtCommit *d = arg;

	backfill_remote_drop_slot(d->conn, d->name);
}

/* this transaction's, in TopMemoryContext */
static List *drops_at_commit = NIL;
static bool drop_callback_registered = false;

/*
 * After the commit, drop what the transaction asked to, each under a
 * deadline (interrupts are held here, and a source that does not answer
 * must not hold the backend), an error a WARNING: the commit stands, and
 * the sweep drops what is left.  After an abort, drop nothing.
 */
static void
drop_at_commit_callback(XactEvent event, void *arg pg_attribute_unused())
{
	List	   *drops;
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	drops = drops_at_commit;
	drops_at_commit = NIL;
	if (event != XACT_EVENT_COMMIT)
	{
		list_free_deep(drops);
		return;
	}
	foreach(lc, drops)
	{
		DropAtCommit *d = lfirst(lc);

		(void) backfill_remote_bounded_or_warn(BACKFILL_REMOTE_DROP_TIMEOUT_MS, drop_committed, d,
											   psprintf("could not drop replication slot and publication \"%s\" on server \"%s\"",
														d->name, backfill_remote_server_name(d->conn)),
											   "The next fetch of a job on that server drops them, or drop them on the source.");
		pfree(d->name);
	}
	list_free_deep(drops);
}

/*
 * backfill_remote_drop_slot_at_commit
 *		Drop slot name, if it exists, and the publication, over conn once
 *		the transaction has committed (see the file header).  conn stays
 *		this process's: it is used as it is then, or not at all.
 */
void
backfill_remote_drop_slot_at_commit(RemoteConn *conn, const char *name)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	DropAtCommit *d = palloc(sizeof(DropAtCommit));

	d->conn = conn;
	d->name = pstrdup(name);
	drops_at_commit = lappend(drops_at_commit, d);
	MemoryContextSwitchTo(old);
	if (!drop_callback_registered)
	{
		RegisterXactCallback(drop_at_commit_callback, NULL);
		drop_callback_registered = true;
	}
}

/*
 * backfill_remote_drop_orphans
 *		Drop the slots not in use and the publications named prefix<job id>
 *		whose job id is not in live (a text[] literal of the live ones); the
 *		publications only where the connection's role is a member of their
 *		owner, as the source lets it drop.
 */
void
backfill_remote_drop_orphans(RemoteConn *conn, const char *prefix, const char *live)
{
	const char *params[2] = {prefix, live};
	RemoteRows *rows;

	(void) backfill_remote_query(conn,
								 "SELECT pg_catalog.pg_drop_replication_slot(slot_name) FROM pg_catalog.pg_replication_slots "
								 "WHERE NOT active AND pg_catalog.starts_with(slot_name, $1) "
								 "AND pg_catalog.substr(slot_name, pg_catalog.length($1) + 1) <> ALL ($2::text[])",
								 2, params);
	rows = backfill_remote_query(conn,
								 "SELECT pubname::text FROM pg_catalog.pg_publication "
								 "WHERE pg_catalog.starts_with(pubname, $1) "
								 "AND pg_catalog.pg_has_role(pubowner, 'MEMBER') "
								 "AND pg_catalog.substr(pubname, pg_catalog.length($1) + 1) <> ALL ($2::text[])",
								 2, params);
	for (int i = 0; i < rows->nrows; i++)
		(void) backfill_remote_query(conn, psprintf("DROP PUBLICATION IF EXISTS %s",
													quote_identifier(backfill_remote_value(rows, i, 0))),
									 0, NULL);
}
