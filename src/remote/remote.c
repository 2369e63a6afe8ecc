/*-------------------------------------------------------------------------
 *
 * remote.c
 *	  Connections to another PostgreSQL server, named by a foreign table of
 *	  postgres_fdw: queries and COPY over libpq, interruptible.
 *
 * A connection is built as postgres_fdw builds its own (connection.c): the
 * libpq options of the foreign server, then those of the user mapping of
 * the role the job runs as (its owner), the application name, and the
 * database's encoding as client_encoding.  A role that is not a superuser
 * must give a password in its user mapping, and the source must have asked
 * for it, unless a superuser set password_required 'false' on the mapping:
 * the checks of postgres_fdw (connection.c), at every connection.  No
 * option is ever stored by the extension: they are read from the catalogs
 * at each connection.  Each process keeps one connection per foreign server
 * and role, opened on first use; an error in the middle of a query closes
 * it, so the next use connects again.
 *
 * Every wait on the source, the connection's start included, goes through
 * WaitLatchOrSocket (wait_socket), so nothing waits on a source that does
 * not answer for longer than the caller lets it: a statement timeout, a
 * cancel, a worker's SIGTERM interrupt the wait, and the connection is
 * closed before the error goes on.  A worker's job being stopped (stop_job
 * sets the worker's latch) interrupts it too, with an error of its own
 * (backfill_stop_pending, xact.c), and the worker ends (worker.c).  Where
 * interrupts cannot end a wait (at commit, where they are held) or have
 * been spent (the clean-up after a statement timeout), the caller bounds
 * it with a deadline (backfill_remote_set_deadline), after which the wait
 * fails as a lost connection does.
 *
 * No cancel request is sent after an error: libpq's PQcancel() connects
 * to the source and waits for its answer without a way to interrupt it, so
 * a source that has stopped answering (a frozen host, a stopped process)
 * would hold the backend for good, past every timeout and
 * pg_terminate_backend.  Closing the connection is enough: the source ends
 * the statement when it next writes to the closed socket, and ends a
 * transaction left open on it at once.
 *
 * Errors: a failure to connect, or a connection lost, is reported with
 * SQLSTATE 08006 (connection_failure), which workers retry; an error the
 * source raised keeps its SQLSTATE, except those of a source shutting down
 * or starting (class 57) and a replication slot in use by a previous
 * session still ending (55006), also reported as 08006.  The text of libpq
 * is reported in DETAIL with every password of the options replaced by
 * asterisks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_user_mapping.h"
#include "commands/copy.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "libpq-fe.h"
#include "libpq/libpq-be-fe-helpers.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "executor/executor.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "backfill.h"
#include "lib/lib.h"
#include "remote/remote.h"

struct RemoteConn
{
	Oid			serverid;
	Oid			userid;
	char	   *server_name;
	PGconn	   *conn;
	List	   *secrets;		/* the passwords of its options, to strip */
};

/* when waits on the source give up (0: never), and the bound it came from */
static TimestampTz deadline = 0;
static int	deadline_ms = 0;

/*
 * backfill_remote_set_deadline
 *		Make every wait on a source from now on fail once timeout_ms have
 *		passed (0: lift it), as a lost connection fails (08006).  For the
 *		waits interrupts cannot end.  Returns the bound it replaces, to set
 *		again after.
 */
int
backfill_remote_set_deadline(int timeout_ms)
{
	int			previous = deadline_ms;

	deadline_ms = timeout_ms;
	deadline = timeout_ms > 0 ?
		TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms) : 0;
	return previous;
}

/*
 * backfill_remote_bounded_or_warn
 *		Run step(arg), whose waits on a source fail after timeout_ms, where
 *		an error must not escape: at the commit or the abort of the
 *		transaction, which has decided already.  An error becomes a WARNING
 *		of message and hint, with the error's own text as its DETAIL.
 *		Returns whether step went through.
 */
bool
backfill_remote_bounded_or_warn(int timeout_ms, RemoteStep step, void *arg,
								const char *message, const char *hint)
{
	MemoryContext cxt = CurrentMemoryContext;
	int			previous = backfill_remote_set_deadline(timeout_ms);
	volatile bool done = true;

	PG_TRY();
	{
		step(arg);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("%s", message),
				 errdetail_internal("%s", edata->detail ? edata->detail : edata->message),
				 errhint("%s", hint)));
		FreeErrorData(edata);
		done = false;
	}
	PG_END_TRY();
	(void) backfill_remote_set_deadline(previous);
	return done;
}

/*
 * Wait until sock is ready for events, or for the latch: a cancel, a
 * statement timeout or SIGTERM then raise their error, and a stop of the
 * worker's job raises ours; past the deadline, an error of a lost
 * connection.  Returns WaitLatchOrSocket's events.
 */
static int
wait_socket(const char *server_name, pgsocket sock, int events)
{
	long		timeout = -1;
	int			rc;

	if (deadline != 0)
	{
		timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (timeout <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("server \"%s\" did not answer within %d ms", server_name, deadline_ms)));
		events |= WL_TIMEOUT;
	}
	rc = WaitLatchOrSocket(MyLatch, WL_EXIT_ON_PM_DEATH | WL_LATCH_SET | events,
						   sock, timeout, PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (backfill_stop_pending())
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling the wait for server \"%s\" because the job was stopped",
							server_name)));
	}
	return rc;
}

/*
 * libpqsrv_connect_params(), with its waits through wait_socket(): a
 * source that accepts the connection and never answers holds no one.  NULL
 * when libpq is out of memory; else a connection to check with PQstatus().
 */
static PGconn *
connect_interruptible(const char *server_name, const char *const *keywords,
					  const char *const *values)
{
	PGconn	   *conn;

	libpqsrv_connect_prepare();
	conn = PQconnectStartParams(keywords, values, false);
	if (conn == NULL)
	{
		ReleaseExternalFD();
		return NULL;
	}
	if (PQstatus(conn) == CONNECTION_BAD)
		return conn;
	PG_TRY();
	{
		/* as PQconnectPoll() asks: first wait until the socket is writable */
		PostgresPollingStatusType status = PGRES_POLLING_WRITING;

		while (status != PGRES_POLLING_OK && status != PGRES_POLLING_FAILED)
		{
			(void) wait_socket(server_name, PQsocket(conn),
							   status == PGRES_POLLING_READING ?
							   WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE);
			status = PQconnectPoll(conn);
		}
	}
	PG_CATCH();
	{
		libpqsrv_disconnect(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return conn;
}

/* this process's connections, in TopMemoryContext */
static List *connections = NIL;

/* the COPY being read by backfill_remote_copy_into(), and its last row read */
static RemoteConn *copy_conn = NULL;
static char *copy_buf = NULL;
static int	copy_len = 0;
static int	copy_off = 0;
static char *copy_last = NULL;
static int	copy_last_len = 0;

/*
 * The server, schema and table of a foreign table of postgres_fdw: its
 * options schema_name and table_name, else its own names.
 */
void
backfill_remote_table(Oid foreign_table, RemoteTable *table)
{
	ForeignTable *ft = GetForeignTable(foreign_table);
	ForeignServer *server = GetForeignServer(ft->serverid);
	ListCell   *lc;

	table->serverid = server->serverid;
	table->server_name = pstrdup(server->servername);
	table->nspname = get_namespace_name(get_rel_namespace(foreign_table));
	table->relname = get_rel_name(foreign_table);
	foreach(lc, ft->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "schema_name") == 0)
			table->nspname = defGetString(def);
		else if (strcmp(def->defname, "table_name") == 0)
			table->relname = defGetString(def);
	}
	table->qualified = quote_qualified_identifier(table->nspname, table->relname);
}

/* leaves of a sharded upstream, ordered by server name, then by name here */
static int
leaf_order(const ListCell *a, const ListCell *b)
{
	Oid			x = lfirst_oid(a);
	Oid			y = lfirst_oid(b);
	int			c = strcmp(GetForeignServer(GetForeignTable(x)->serverid)->servername,
						   GetForeignServer(GetForeignTable(y)->serverid)->servername);

	if (c == 0)
		c = strcmp(get_namespace_name(get_rel_namespace(x)), get_namespace_name(get_rel_namespace(y)));
	return c != 0 ? c : strcmp(get_rel_name(x), get_rel_name(y));
}

/*
 * backfill_remote_leaves
 *		The foreign tables a job whose upstream is relid reads on other
 *		servers: relid itself when it is a foreign table; the leaf
 *		partitions of a partitioned table whose leaves, at every level, are
 *		all foreign tables, grouped by server (by the server's name, then the
 *		partitions' names), so that consecutive splits, and so each actor's,
 *		are on one server; NIL for any other table.  A partitioned table
 *		with leaves of both sorts is refused: its local partitions' changes
 *		would come through the capture's triggers and the others' through
 *		their servers' logical replication, with no order between the two.
 *		Reads the partitions without locking them: the caller locks the tree.
 */
List *
backfill_remote_leaves(Oid relid)
{
	char		relkind = get_rel_relkind(relid);
	List	   *leaves = NIL;
	Oid			local_leaf = InvalidOid;
	ListCell   *lc;

	if (relkind == RELKIND_FOREIGN_TABLE)
		return list_make1_oid(relid);
	if (relkind != RELKIND_PARTITIONED_TABLE)
		return NIL;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			part = lfirst_oid(lc);
		char		kind = get_rel_relkind(part);

		if (kind == RELKIND_FOREIGN_TABLE)
			leaves = lappend_oid(leaves, part);
		else if (kind != RELKIND_PARTITIONED_TABLE && !OidIsValid(local_leaf))
			local_leaf = part;
	}
	if (leaves == NIL)
		return NIL;
	if (OidIsValid(local_leaf))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has partitions both here and on other servers",
						get_rel_name(relid)),
				 errdetail("Partition \"%s\" is a table of this server and partition \"%s\" a foreign table. A job follows the changes of local partitions through triggers and those of foreign partitions through their servers' logical replication, and the two have no common order.",
						   get_rel_name(local_leaf), get_rel_name(linitial_oid(leaves))),
				 errhint("Copy the local partitions and the foreign ones with a job each, on partitioned tables of their own.")));
	list_sort(leaves, leaf_order);
	return leaves;
}

/* a message of libpq with the connection's passwords replaced */
static char *
stripped(RemoteConn *rc, const char *message)
{
	char	   *result = pstrdup(message ? message : "");
	ListCell   *lc;
	int			len = strlen(result);

	/* libpq's messages end with a newline */
	while (len > 0 && result[len - 1] == '\n')
		result[--len] = '\0';
	foreach(lc, rc->secrets)
	{
		const char *secret = lfirst(lc);
		char	   *at;

		while (secret[0] != '\0' && (at = strstr(result, secret)) != NULL)
			memset(at, '*', strlen(secret));
	}
	return result;
}

/* whether a keyword is one libpq knows */
static bool
is_libpq_option(const char *keyword)
{
	PQconninfoOption *defaults = PQconndefaults();
	bool		found = false;

	if (defaults == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	for (PQconninfoOption *o = defaults; o->keyword != NULL && !found; o++)
		found = strcmp(o->keyword, keyword) == 0;
	PQconninfoFree(defaults);
	return found;
}

/*
 * Whether a user mapping requires a password: true unless it has the option
 * password_required 'false', which postgres_fdw lets only a superuser set
 * (postgres_fdw's UserMappingPasswordRequired()).
 */
static bool
user_mapping_password_required(UserMapping *um)
{
	ListCell   *lc;

	foreach(lc, um->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "password_required") == 0)
			return defGetBoolean(def);
	}
	return true;
}

/*
 * The keywords and values of a connection: the server's options, the user
 * mapping's, then ours.  Notes the passwords in rc->secrets.
 */
static int
connection_options(RemoteConn *rc, ForeignServer *server, UserMapping *um,
				   const char *appname, const char ***keywords, const char ***values)
{
	List	   *options = list_concat(list_copy(server->options), um->options);
	int			n = 0;
	bool		has_password = false;
	ListCell   *lc;

	*keywords = palloc0(sizeof(char *) * (list_length(options) + 3));
	*values = palloc0(sizeof(char *) * (list_length(options) + 3));
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (!is_libpq_option(def->defname))
			continue;
		(*keywords)[n] = def->defname;
		(*values)[n++] = defGetString(def);
		if (strcmp(def->defname, "password") == 0)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			rc->secrets = lappend(rc->secrets, pstrdup(defGetString(def)));
			MemoryContextSwitchTo(old);
			/* an empty password is none, as postgres_fdw has it */
			if (defGetString(def)[0] != '\0')
				has_password = true;
		}
	}
	(*keywords)[n] = "fallback_application_name";
	(*values)[n++] = appname;
	(*keywords)[n] = "client_encoding";
	(*values)[n++] = GetDatabaseEncodingName();

	/*
	 * As postgres_fdw's check_conn_params(): a plain role must give a
	 * password, unless a superuser set password_required 'false' on its
	 * mapping; else it could connect as the server's OS user, or as any role
	 * a source trusting local connections lets it name.
	 */
	if (!superuser_arg(um->userid) && !has_password &&
		user_mapping_password_required(um))
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required"),
				 errdetail("Non-superusers must provide a password in the user mapping.")));
	return n;
}

/*
 * backfill_remote_connect
 *		This process's connection to a foreign server as a role, through the
 *		role's user mapping (or PUBLIC's).  Errors name the server and carry
 *		libpq's message without passwords.
 */
RemoteConn *
backfill_remote_connect(Oid serverid, Oid userid, const char *appname)
{
	ForeignServer *server = GetForeignServer(serverid);
	UserMapping *um;
	RemoteConn *rc = NULL;
	const char **keywords;
	const char **values;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, connections)
	{
		RemoteConn *c = lfirst(lc);

		if (c->serverid == serverid && c->userid == userid)
		{
			if (c->conn != NULL && PQstatus(c->conn) == CONNECTION_OK)
				return c;
			rc = c;
		}
	}
	/* raises "user mapping not found" for a role without one */
	um = GetUserMapping(userid, serverid);
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (rc == NULL)
	{
		rc = palloc0(sizeof(RemoteConn));
		rc->serverid = serverid;
		rc->userid = userid;
		rc->server_name = pstrdup(server->servername);
		connections = lappend(connections, rc);
	}
	MemoryContextSwitchTo(old);
	list_free_deep(rc->secrets);
	rc->secrets = NIL;
	if (rc->conn != NULL)
		libpqsrv_disconnect(rc->conn);
	rc->conn = NULL;

	(void) connection_options(rc, server, um, appname, &keywords, &values);
	rc->conn = connect_interruptible(server->servername, keywords, values);
	if (rc->conn == NULL || PQstatus(rc->conn) != CONNECTION_OK)
	{
		char	   *message = stripped(rc, rc->conn ? PQerrorMessage(rc->conn) : "out of memory");

		if (rc->conn != NULL)
			libpqsrv_disconnect(rc->conn);
		rc->conn = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to server \"%s\"", server->servername),
				 errdetail_internal("%s", message),
				 errhint("Check the options of foreign server \"%s\" and of the user mapping, and that the server accepts connections.",
						 server->servername)));
	}

	/*
	 * As postgres_fdw's connect_pg_server(): a plain role's connection must
	 * have been authenticated by the password it gave, not by the source
	 * trusting this server's OS user or address (trust, peer, ident).
	 */
	if (!superuser_arg(um->userid) && user_mapping_password_required(um) &&
		!PQconnectionUsedPassword(rc->conn))
	{
		libpqsrv_disconnect(rc->conn);
		rc->conn = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required"),
				 errdetail("Non-superuser cannot connect if the server does not request a password."),
				 errhint("Target server's authentication method must be changed or password_required=false set in the user mapping attributes.")));
	}
	return rc;
}

/* the name of the foreign server a connection is to, for messages */
const char *
backfill_remote_server_name(RemoteConn *rc)
{
	return rc->server_name;
}

/* close a connection; the next backfill_remote_connect() opens it again */
void
backfill_remote_disconnect(RemoteConn *rc)
{
	if (rc->conn != NULL)
		libpqsrv_disconnect(rc->conn);
	rc->conn = NULL;
}

/*
 * After an error or an interrupt: close the connection, without a cancel
 * request (see the file header): nothing here waits for the source.
 */
static void
abandon(RemoteConn *rc)
{
	backfill_remote_disconnect(rc);
}

/* report a failed result (or a lost connection), and close the connection */
static void
report_failure(RemoteConn *rc, PGresult *res, const char *what)
{
	char	   *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char	   *message = stripped(rc, res && PQresultErrorMessage(res)[0] ?
								   PQresultErrorMessage(res) : PQerrorMessage(rc->conn));
	int			code = ERRCODE_CONNECTION_FAILURE;

	if (sqlstate != NULL && PQstatus(rc->conn) == CONNECTION_OK &&
		strncmp(sqlstate, "57", 2) != 0 && strcmp(sqlstate, "55006") != 0)
		code = MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2], sqlstate[3], sqlstate[4]);
	PQclear(res);
	abandon(rc);
	ereport(ERROR,
			(errcode(code),
			 errmsg("could not %s on server \"%s\"", what, rc->server_name),
			 errdetail_internal("%s", message)));
}

/* the next result of a query, waiting on the latch; NULL at the end */
static PGresult *
next_result(RemoteConn *rc)
{
	PGresult   *volatile res = NULL;

	PG_TRY();
	{
		/* libpqsrv_get_result(), its waits through wait_socket() */
		while (PQisBusy(rc->conn))
		{
			if ((wait_socket(rc->server_name, PQsocket(rc->conn), WL_SOCKET_READABLE) &
				 WL_SOCKET_READABLE) && !PQconsumeInput(rc->conn))
				break;
		}
		res = PQgetResult(rc->conn);
	}
	PG_CATCH();
	{
		abandon(rc);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return res;
}

/*
 * backfill_remote_query
 *		Run one statement with text parameters on the source and return its
 *		rows (none for a command), copied into the current memory context.
 */
RemoteRows *
backfill_remote_query(RemoteConn *rc, const char *sql, int nparams, const char *const *params)
{
	RemoteRows *rows = palloc0(sizeof(RemoteRows));
	PGresult   *res;
	PGresult   *last = NULL;

	if (rc->conn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the connection to server \"%s\" was closed", rc->server_name)));
	if (!PQsendQueryParams(rc->conn, sql, nparams, NULL, params, NULL, NULL, 0))
		report_failure(rc, NULL, "send a query");
	while ((res = next_result(rc)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			PQclear(last);
			/* read the rest, so that the connection is ready again */
			report_failure(rc, res, "run a query");
		}
		PQclear(last);
		last = res;
	}
	if (last == NULL)
		report_failure(rc, NULL, "run a query");
	rows->nrows = PQntuples(last);
	rows->ncols = PQnfields(last);
	rows->values = palloc0(sizeof(char *) * Max(rows->nrows * rows->ncols, 1));
	for (int r = 0; r < rows->nrows; r++)
		for (int c = 0; c < rows->ncols; c++)
			if (!PQgetisnull(last, r, c))
				rows->values[r * rows->ncols + c] = pstrdup(PQgetvalue(last, r, c));
	PQclear(last);
	return rows;
}

/* a value of a query's rows, NULL for null */
char *
backfill_remote_value(RemoteRows *rows, int row, int col)
{
	Assert(row < rows->nrows && col < rows->ncols);
	return rows->values[row * rows->ncols + col];
}

/* a literal for the source's SQL, quoted by libpq as the source wants */
char *
backfill_remote_literal(RemoteConn *rc, const char *value)
{
	char	   *quoted = PQescapeLiteral(rc->conn, value, strlen(value));
	char	   *result;

	if (quoted == NULL)
		report_failure(rc, NULL, "quote a value");
	result = pstrdup(quoted);
	PQfreemem(quoted);
	return result;
}

/* COPY FROM's source of bytes: the rows of the COPY TO STDOUT in flight */
static int
copy_source(void *outbuf, int minread, int maxread)
{
	int			done = 0;

	while (done < maxread)
	{
		if (copy_off >= copy_len)
		{
			int			n;

			if (copy_buf != NULL)
			{
				if (copy_last != NULL)
					PQfreemem(copy_last);
				copy_last = copy_buf;
				copy_last_len = copy_len;
			}
			copy_buf = NULL;
			copy_len = copy_off = 0;
			if (done >= minread)
				break;
			while ((n = PQgetCopyData(copy_conn->conn, &copy_buf, true)) == 0)
			{
				(void) wait_socket(copy_conn->server_name, PQsocket(copy_conn->conn),
								   WL_SOCKET_READABLE);
				if (PQconsumeInput(copy_conn->conn) == 0)
					report_failure(copy_conn, NULL, "read rows");
			}
			if (n == -1)
				break;			/* the end of the COPY */
			if (n < 0)
				report_failure(copy_conn, NULL, "read rows");
			copy_len = n;
		}
		{
			int			take = Min(copy_len - copy_off, maxread - done);

			memcpy((char *) outbuf + done, copy_buf + copy_off, take);
			copy_off += take;
			done += take;
		}
	}
	return done;
}

/* let go of the COPY's buffers */
static void
copy_done(void)
{
	if (copy_buf != NULL)
		PQfreemem(copy_buf);
	if (copy_last != NULL)
		PQfreemem(copy_last);
	copy_buf = copy_last = NULL;
	copy_conn = NULL;
}

/*
 * Send the rows cstate reads, rel's columns attnames in that order, to dest
 * instead of inserting them as CopyFrom does; returns their number.  Each
 * row's values are parsed by COPY FROM's own input functions (NextCopyFrom),
 * in memory reset for every row: dest copies what it keeps.
 */
static uint64
copy_to_dest(CopyFromState cstate, Relation rel, List *attnames, DestReceiver *dest)
{
	TupleDesc	reldesc = RelationGetDescr(rel);
	int			ncols = list_length(attnames);
	TupleDesc	desc = CreateTemplateTupleDesc(ncols);
	AttrNumber *attnums = palloc(sizeof(AttrNumber) * ncols);
	Datum	   *values = palloc(sizeof(Datum) * reldesc->natts);
	bool	   *nulls = palloc(sizeof(bool) * reldesc->natts);
	ExprContext *econtext = CreateStandaloneExprContext();
	TupleTableSlot *slot;
	ErrorContextCallback errcallback;
	uint64		rows = 0;
	ListCell   *lc;
	int			c = 0;

	foreach(lc, attnames)
	{
		AttrNumber	attnum = attnameAttNum(rel, strVal(lfirst(lc)), false);
		Form_pg_attribute att;

		if (attnum <= 0)
			elog(ERROR, "column \"%s\" of %s is not a column to copy into",
				 strVal(lfirst(lc)), RelationGetRelationName(rel));
		att = TupleDescAttr(reldesc, attnum - 1);
		TupleDescInitEntry(desc, c + 1, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, c + 1, att->attcollation);
		attnums[c++] = attnum;
	}
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);

	/* errors name the COPY and its line, as in CopyFrom */
	errcallback.callback = CopyFromErrorCallback;
	errcallback.arg = (void *) cstate;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	dest->rStartup(dest, CMD_INSERT, desc);
	for (;;)
	{
		MemoryContext old;
		bool		more;

		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		more = NextCopyFrom(cstate, econtext, values, nulls);
		MemoryContextSwitchTo(old);
		if (!more)
			break;
		ExecClearTuple(slot);
		for (c = 0; c < ncols; c++)
		{
			slot->tts_values[c] = values[attnums[c] - 1];
			slot->tts_isnull[c] = nulls[attnums[c] - 1];
		}
		ExecStoreVirtualTuple(slot);
		(void) dest->receiveSlot(slot, dest);
		rows++;
	}
	dest->rShutdown(dest);
	error_context_stack = errcallback.previous;

	ExecDropSingleTupleTableSlot(slot);
	FreeExprContext(econtext, true);
	pfree(values);
	pfree(nulls);
	pfree(attnums);
	return rows;
}

/*
 * backfill_remote_copy_into
 *		Run "COPY (...) TO STDOUT" on the source and insert its rows into
 *		rel, as COPY FROM would (triggers, constraints, indexes), into the
 *		columns attnames (String nodes); or, when dest is not NULL, send them
 *		to dest, those columns in that order, which inserts them.  Returns
 *		the rows inserted, and the last of them as the source sent it
 *		(COPY's text format, NULL when none) in *last_row unless that is
 *		NULL.  Caller holds rel open and has an active snapshot.
 */
uint64
backfill_remote_copy_into(RemoteConn *rc, const char *copy_sql, Relation rel, List *attnames,
						  DestReceiver *dest, char **last_row)
{
	PGresult   *res;
	uint64		rows = 0;

	if (!PQsendQuery(rc->conn, copy_sql))
		report_failure(rc, NULL, "send a query");
	res = next_result(rc);
	if (res == NULL || PQresultStatus(res) != PGRES_COPY_OUT)
		report_failure(rc, res, "copy rows");
	PQclear(res);

	copy_conn = rc;
	copy_buf = copy_last = NULL;
	copy_len = copy_off = 0;
	PG_TRY();
	{
		ParseState *pstate = make_parsestate(NULL);
		ParseNamespaceItem *nsitem;
		CopyFromState cstate;

		/* as DoCopy: the range table COPY FROM runs with, permissions checked */
		nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
		nsitem->p_rte->requiredPerms = ACL_INSERT;
		(void) ExecCheckRTPerms(pstate->p_rtable, true);

		cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, copy_source, attnames,
							   list_make1(makeDefElem("encoding",
													  (Node *) makeString((char *) GetDatabaseEncodingName()),
													  -1)));
		rows = dest ? copy_to_dest(cstate, rel, attnames, dest) : CopyFrom(cstate);
		EndCopyFrom(cstate);
		free_parsestate(pstate);
	}
	PG_CATCH();
	{
		copy_done();
		abandon(rc);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (last_row != NULL)
		*last_row = copy_last ? pnstrdup(copy_last, copy_last_len) : NULL;
	copy_done();

	/* the COPY's own result */
	while ((res = next_result(rc)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			report_failure(rc, res, "copy rows");
		PQclear(res);
	}
	return rows;
}
