/*-------------------------------------------------------------------------
 *
 * fence.c
 *	  The switchover's fence on the source tables of a remote job: taking
 *	  their write grants away, recording them in the ledger on the source,
 *	  and giving them back when the switchover fails or its transaction
 *	  aborts, or when backfill.unfence() is asked to.
 *
 * switchover.c says what the fence is for and when it is given back (its
 * step 1); the ledger is the comment of the job's publication on each
 * source, written in the fence's own transaction there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/cutover_rows.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "kinds/remote/switchover.h"
#include "lib/lib.h"
#include "remote/remote.h"

/* the longest pause between two attempts at the fence's lock */
#define BACKFILL_SWITCHOVER_MAX_BACKOFF_MS 5000

/* how long giving the fences back after a failure waits for the sources */
#define BACKFILL_SWITCHOVER_UNFENCE_TIMEOUT_MS 5000

/* the source's fences to give back if the transaction aborts, in TopMemoryContext */
typedef struct FenceAtAbort
{
	int64		job_id;
	RemoteConn *conn;			/* opened in the transaction: none is opened after */
	char	   *qualified;		/* the table on the source */
	char	   *display;
} FenceAtAbort;

static List *fences_at_abort = NIL;
static bool abort_callback_registered = false;

/*
 * The fence's ledger on the source: the comment of the job's publication
 * there, a JSON array of the grants each fence revoked, one object each
 * (table, grantee or null for PUBLIC, privilege, column or null, grantable).
 * Written in the fence's own transaction, so that the source never has a
 * fence it does not record; read back, the grants given back and the
 * entries removed in one transaction too.  $1 the publication, $2 a table.
 */
#define LEDGER_QUERY \
	"SELECT e->>'grantee', e->>'privilege', e->>'grantable', e->>'column' " \
	"FROM pg_catalog.pg_publication p CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(" \
	"pg_catalog.obj_description(p.oid, 'pg_publication')::pg_catalog.jsonb) g(e) " \
	"WHERE p.pubname OPERATOR(pg_catalog.=) $1 AND e->>'table' OPERATOR(pg_catalog.=) $2"

/* the ledger without table $2's entries, then $3's (a JSON array) */
#define LEDGER_REWRITE_QUERY \
	"SELECT (coalesce((SELECT pg_catalog.jsonb_agg(e) FROM pg_catalog.jsonb_array_elements(" \
	"pg_catalog.obj_description(p.oid, 'pg_publication')::pg_catalog.jsonb) g(e) " \
	"WHERE e->>'table' OPERATOR(pg_catalog.<>) $2), '[]') OPERATOR(pg_catalog.||) $3::pg_catalog.jsonb)::text " \
	"FROM pg_catalog.pg_publication p WHERE p.pubname OPERATOR(pg_catalog.=) $1"

/* "INSERT (col) ON TABLE t" or "INSERT ON TABLE t" */
static char *
grant_target(const char *qualified, FenceGrant *g)
{
	return psprintf("%s%s%s%s ON TABLE %s", g->privilege,
					g->column ? " (" : "", g->column ? quote_identifier(g->column) : "",
					g->column ? ")" : "", qualified);
}

/* the ledger's entries of table qualified, in cxt */
static List *
read_ledger(RemoteConn *conn, const char *pubname, const char *qualified, MemoryContext cxt)
{
	const char *params[2] = {pubname, qualified};
	RemoteRows *rows = backfill_remote_query(conn, LEDGER_QUERY, 2, params);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	List	   *grants = NIL;

	for (int i = 0; i < rows->nrows; i++)
	{
		FenceGrant *g = palloc0(sizeof(FenceGrant));
		char	   *grantee = backfill_remote_value(rows, i, 0);
		char	   *column = backfill_remote_value(rows, i, 3);

		g->grantee = grantee ? pstrdup(grantee) : NULL;
		g->privilege = pstrdup(backfill_remote_value(rows, i, 1));
		g->grantable = strcmp(backfill_remote_value(rows, i, 2), "true") == 0;
		g->column = column ? pstrdup(column) : NULL;
		grants = lappend(grants, g);
	}
	MemoryContextSwitchTo(old);
	return grants;
}

/*
 * Make table qualified's entries of the ledger grants, in the caller's
 * transaction on the source.  No publication: nothing to write.
 */
static void
write_ledger(RemoteConn *conn, const char *pubname, const char *qualified, List *grants)
{
	StringInfoData json;
	const char *params[3];
	RemoteRows *rows;
	ListCell   *lc;
	char	   *ledger;

	initStringInfo(&json);
	appendStringInfoChar(&json, '[');
	foreach(lc, grants)
	{
		FenceGrant *g = lfirst(lc);

		if (lc != list_head(grants))
			appendStringInfoString(&json, ", ");
		appendStringInfoString(&json, "{\"table\": ");
		escape_json(&json, qualified);
		appendStringInfoString(&json, ", \"grantee\": ");
		if (g->grantee)
			escape_json(&json, g->grantee);
		else
			appendStringInfoString(&json, "null");
		appendStringInfoString(&json, ", \"privilege\": ");
		escape_json(&json, g->privilege);
		appendStringInfoString(&json, ", \"column\": ");
		if (g->column)
			escape_json(&json, g->column);
		else
			appendStringInfoString(&json, "null");
		appendStringInfo(&json, ", \"grantable\": %s}", g->grantable ? "true" : "false");
	}
	appendStringInfoChar(&json, ']');
	params[0] = pubname;
	params[1] = qualified;
	params[2] = json.data;
	rows = backfill_remote_query(conn, LEDGER_REWRITE_QUERY, 3, params);
	if (rows->nrows == 0)
		return;
	ledger = backfill_remote_value(rows, 0, 0);
	(void) backfill_remote_query(conn, psprintf("COMMENT ON PUBLICATION %s IS %s", quote_identifier(pubname),
												strcmp(ledger, "[]") == 0 ? "NULL" :
												backfill_remote_literal(conn, ledger)),
								 0, NULL);
}

/* whether grants has one equal to g */
static bool
has_grant(List *grants, FenceGrant *g)
{
	ListCell   *lc;

	foreach(lc, grants)
	{
		FenceGrant *h = lfirst(lc);

		if ((h->grantee == NULL) == (g->grantee == NULL) &&
			(h->grantee == NULL || strcmp(h->grantee, g->grantee) == 0) &&
			strcmp(h->privilege, g->privilege) == 0 &&
			(h->column == NULL) == (g->column == NULL) &&
			(h->column == NULL || strcmp(h->column, g->column) == 0))
			return true;
	}
	return false;
}

/*
 * give_back
 *		Grant again what the ledger records for table qualified, and remove
 *		those entries, in one transaction on the source; return how many.
 *		A failed query closes the connection, and the source's transaction
 *		with it.
 */
int
give_back(RemoteConn *conn, const char *pubname, const char *qualified)
{
	List	   *grants;
	ListCell   *lc;

	(void) backfill_remote_query(conn, "BEGIN", 0, NULL);
	grants = read_ledger(conn, pubname, qualified, CurrentMemoryContext);
	foreach(lc, grants)
	{
		FenceGrant *g = lfirst(lc);

		(void) backfill_remote_query(conn, psprintf("GRANT %s TO %s%s", grant_target(qualified, g),
													g->grantee ? quote_identifier(g->grantee) : "PUBLIC",
													g->grantable ? " WITH GRANT OPTION" : ""),
									 0, NULL);
	}
	if (grants != NIL)
		write_ledger(conn, pubname, qualified, NIL);
	(void) backfill_remote_query(conn, "COMMIT", 0, NULL);
	return list_length(grants);
}

/*
 * One attempt at the fence, in one transaction on the source (see the file
 * header).  A lock timeout raises 55P03, as the source raised it.
 */
static void
fence_once(Switchover *sw, FenceTarget *t, MemoryContext cxt)
{
	RemoteConn *conn = remote_source_connect(sw->rj, t->source);
	const char *params[1] = {t->table.qualified};
	const char *timeout = psprintf("%dms", sw->lock_timeout_ms);
	RemoteRows *rows;
	List	   *grants;
	List	   *fresh;
	ListCell   *lc;

	/* a failure before the COMMIT closes it, and the source's transaction */
	t->conn = conn;

	(void) backfill_remote_query(conn, "BEGIN", 0, NULL);
	(void) backfill_remote_query(conn, "SELECT pg_catalog.set_config('lock_timeout', $1, true)",
								 1, &timeout);
	(void) backfill_remote_query(conn, psprintf("LOCK TABLE %s IN SHARE MODE", t->table.qualified),
								 0, NULL);
	rows = backfill_remote_query(conn,
								 "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE'), "
								 "pg_catalog.pg_get_userbyid(c.relowner)::text, current_user::text "
								 "FROM pg_catalog.pg_class c WHERE c.oid = $1::pg_catalog.regclass",
								 1, params);
	if (strcmp(backfill_remote_value(rows, 0, 0), "t") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot fence table \"%s\" on server \"%s\"", t->display,
						t->table.server_name),
				 errdetail("Role \"%s\" of the user mapping of the job's owner does not have the privileges of the table's owner \"%s\" there, which revoking its write privileges needs.",
						   backfill_remote_value(rows, 0, 2), backfill_remote_value(rows, 0, 1)),
				 errhint("Stop the writers yourself and switch over with fence => false, or map the job's owner to the table's owner.")));

	/* what an earlier fence that was not given back revoked (a crash) */
	grants = read_ledger(conn, sw->pubname, t->table.qualified, cxt);
	fresh = NIL;

	rows = backfill_remote_query(conn,
								 "SELECT r.rolname::text, a.privilege_type, a.is_grantable, NULL::text, "
								 "a.grantor = c.relowner, pg_catalog.pg_get_userbyid(a.grantor)::text "
								 "FROM pg_catalog.pg_class c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a "
								 "LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee "
								 "WHERE c.oid = $1::pg_catalog.regclass AND a.grantee <> c.relowner "
								 "AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE') "
								 "UNION ALL "
								 "SELECT r.rolname::text, a.privilege_type, a.is_grantable, t.attname::text, "
								 "a.grantor = c.relowner, pg_catalog.pg_get_userbyid(a.grantor)::text "
								 "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute t "
								 "ON t.attrelid = c.oid AND t.attnum > 0 AND NOT t.attisdropped "
								 "CROSS JOIN LATERAL pg_catalog.aclexplode(t.attacl) a "
								 "LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee "
								 "WHERE c.oid = $1::pg_catalog.regclass AND a.grantee <> c.relowner "
								 "AND a.privilege_type IN ('INSERT', 'UPDATE')",
								 1, params);
	for (int i = 0; i < rows->nrows; i++)
	{
		MemoryContext old;
		FenceGrant *g;

		if (strcmp(backfill_remote_value(rows, i, 4), "t") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot fence table \"%s\" on server \"%s\"", t->display,
							t->table.server_name),
					 errdetail("Role \"%s\" granted %s on it to %s, and only the grants of the table's owner can be given back if the switchover fails.",
							   backfill_remote_value(rows, i, 5), backfill_remote_value(rows, i, 1),
							   backfill_remote_value(rows, i, 0) ?
							   quote_identifier(backfill_remote_value(rows, i, 0)) : "PUBLIC"),
					 errhint("Revoke that grant on the source, or stop the writers yourself and switch over with fence => false.")));
		old = MemoryContextSwitchTo(cxt);
		g = palloc0(sizeof(FenceGrant));
		g->grantee = backfill_remote_value(rows, i, 0) ? pstrdup(backfill_remote_value(rows, i, 0)) : NULL;
		g->privilege = pstrdup(backfill_remote_value(rows, i, 1));
		g->grantable = strcmp(backfill_remote_value(rows, i, 2), "t") == 0;
		g->column = backfill_remote_value(rows, i, 3) ? pstrdup(backfill_remote_value(rows, i, 3)) : NULL;
		fresh = lappend(fresh, g);
		MemoryContextSwitchTo(old);
	}
	foreach(lc, fresh)
	{
		FenceGrant *g = lfirst(lc);

		(void) backfill_remote_query(conn, psprintf("REVOKE %s FROM %s", grant_target(t->table.qualified, g),
													g->grantee ? quote_identifier(g->grantee) : "PUBLIC"),
									 0, NULL);
		if (!has_grant(grants, g))
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			grants = lappend(grants, g);
			MemoryContextSwitchTo(old);
		}
	}
	/* the ledger commits with the revokes, or neither does */
	write_ledger(conn, sw->pubname, t->table.qualified, grants);
	(void) backfill_remote_query(conn, "COMMIT", 0, NULL);
	t->revoked = grants;
	t->fenced = true;
}

/*
 * The fence, tried up to "attempts" times while its lock times out, each
 * attempt in a subtransaction (a failed query closes the connection, and
 * with it the source's transaction).
 */
void
fence(Switchover *sw, FenceTarget *t, int attempts)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int attempt = 0;

	while (!t->fenced)
	{
		ResourceOwner owner = backfill_subxact_begin();

		attempt++;
		PG_TRY();
		{
			fence_once(sw, t, cxt);
			backfill_subxact_release(owner);
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			long		backoff;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			backfill_subxact_rollback(owner);
			/* an error of ours leaves the source's transaction open: close it */
			if (t->conn != NULL)
				backfill_remote_disconnect(t->conn);
			t->conn = NULL;
			if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
				ReThrowError(edata);
			if (attempt >= attempts)
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("could not lock table \"%s\" on server \"%s\" to fence it",
								t->display, t->table.server_name),
						 errdetail("Each of %d attempts waited %d ms for the lock and gave up; nothing was changed.",
								   attempts, sw->lock_timeout_ms),
						 errhint("Look for long transactions on the table on the source, or switch over with a longer lock_timeout or more attempts.")));
			backoff = Min(50L << Min(attempt - 1, 10), BACKFILL_SWITCHOVER_MAX_BACKOFF_MS);
			ereport(NOTICE,
					(errmsg("could not lock table \"%s\" on server \"%s\" within %d ms, attempt %d of %d; trying again in %ld ms",
							t->display, t->table.server_name, sw->lock_timeout_ms,
							attempt, attempts, backoff)));
			ereport(LOG,
					(errmsg("backfill job %lld: switchover attempt %d of %d could not lock table \"%s\" on server \"%s\" within %d ms",
							(long long) sw->job->job_id, attempt, attempts, t->display,
							t->table.server_name, sw->lock_timeout_ms),
					 errhidestmt(true)));
			backfill_sleep_ms(backoff);
		}
		PG_END_TRY();
	}
}

/*
 * Give back what the ledger records for one table, after a failure.  Best
 * effort: a source that cannot be reached keeps the fence, and its ledger,
 * and the warning says how to give it back later.
 */
static void
unfence_target(Switchover *sw, FenceTarget *t)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner;

	owner = backfill_subxact_begin();
	PG_TRY();
	{
		(void) give_back(remote_source_connect(sw->rj, t->source), sw->pubname, t->table.qualified);
		backfill_subxact_release(owner);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		backfill_subxact_rollback(owner);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not give back the write privileges on table \"%s\" on server \"%s\"",
						t->display, t->table.server_name),
				 errdetail_internal("%s", edata->detail ? edata->detail : edata->message),
				 errhint("The source records what the fence revoked: call backfill.unfence(%lld) once it answers, or switch over again.",
						 (long long) sw->job->job_id)));
	}
	PG_END_TRY();
}

/*
 * Give back what every fence revoked, waiting for the sources
 * BACKFILL_SWITCHOVER_UNFENCE_TIMEOUT_MS at most in all: after a statement
 * timeout, nothing else would end a wait on a source that does not answer.
 */
void
unfence(Switchover *sw)
{
	int			previous = backfill_remote_set_deadline(BACKFILL_SWITCHOVER_UNFENCE_TIMEOUT_MS);

	for (int i = 0; i < sw->ntargets; i++)
		unfence_target(sw, &sw->targets[i]);
	(void) backfill_remote_set_deadline(previous);
}

/* give_back for a fence of a transaction that aborted (a RemoteStep) */
static void
give_back_fence(void *arg)
{
	FenceAtAbort *f = arg;

	(void) give_back(f->conn, remote_object_name(f->job_id, false), f->qualified);
}

/*
 * If the transaction that switched over aborts, give the fences back
 * (sources that do not answer within the bound keep them, and their
 * ledger); once it commits, they stay.  Interrupts are held here: the
 * deadline bounds the waits.
 */
static void
fences_at_abort_callback(XactEvent event, void *arg pg_attribute_unused())
{
	List	   *fences;
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT && event != XACT_EVENT_PREPARE &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	fences = fences_at_abort;
	fences_at_abort = NIL;
	foreach(lc, fences)
	{
		FenceAtAbort *f = lfirst(lc);

		if (event == XACT_EVENT_ABORT)
			(void) backfill_remote_bounded_or_warn(BACKFILL_SWITCHOVER_UNFENCE_TIMEOUT_MS,
												   give_back_fence, f,
												   psprintf("could not give back the write privileges on table \"%s\" on server \"%s\"",
															f->display, backfill_remote_server_name(f->conn)),
												   psprintf("The source records what the fence revoked: call backfill.unfence(%lld) once it answers, or switch over again.",
															(long long) f->job_id));
		pfree(f->qualified);
		pfree(f->display);
	}
	list_free_deep(fences);
}

/* give the fences of sw back if the transaction aborts */
void
unfence_at_abort(Switchover *sw)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	for (int i = 0; i < sw->ntargets; i++)
	{
		FenceAtAbort *f = palloc(sizeof(FenceAtAbort));

		f->job_id = sw->job->job_id;
		f->conn = remote_source_connect(sw->rj, sw->targets[i].source);
		f->qualified = pstrdup(sw->targets[i].table.qualified);
		f->display = pstrdup(sw->targets[i].display);
		fences_at_abort = lappend(fences_at_abort, f);
	}
	MemoryContextSwitchTo(old);
	if (!abort_callback_registered)
	{
		RegisterXactCallback(fences_at_abort_callback, NULL);
		abort_callback_registered = true;
	}
}
