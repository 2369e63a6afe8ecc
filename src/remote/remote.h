/*-------------------------------------------------------------------------
 *
 * remote.h
 *	  Connections to another PostgreSQL server (remote.c) and the decoding
 *	  of its logical replication protocol (pgoutput.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_REMOTE_H
#define BACKFILL_REMOTE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* remote.c: one connection, per process, per foreign server and role */
typedef struct RemoteConn RemoteConn;

/* the rows of a query, copied out of libpq: values[row * ncols + col], NULL for null */
typedef struct RemoteRows
{
	int			nrows;
	int			ncols;
	char	  **values;
} RemoteRows;

/* where a foreign table lives */
typedef struct RemoteTable
{
	Oid			serverid;
	char	   *server_name;
	char	   *nspname;		/* on the source */
	char	   *relname;
	char	   *qualified;		/* quoted "nsp"."rel" */
} RemoteTable;

extern void backfill_remote_table(Oid foreign_table, RemoteTable *table);
extern RemoteConn *backfill_remote_connect(Oid serverid, Oid userid, const char *appname);
extern void backfill_remote_disconnect(RemoteConn *conn);
extern RemoteRows *backfill_remote_query(RemoteConn *conn, const char *sql, int nparams,
										 const char *const *params);
extern char *backfill_remote_value(RemoteRows *rows, int row, int col);
extern char *backfill_remote_literal(RemoteConn *conn, const char *value);
extern uint64 backfill_remote_copy_into(RemoteConn *conn, const char *copy_sql,
										Relation rel, List *attnames, char **last_row);

/* pgoutput.c: one decoded change of the source table */
typedef enum RemoteChangeKind
{
	REMOTE_UPSERT,				/* an insert, or the new row of an update */
	REMOTE_DELETE,				/* a delete, or the old key of an update that moved it */
	REMOTE_REFETCH				/* a new row with unchanged TOASTed values: read it again */
} RemoteChangeKind;

typedef struct RemoteChange
{
	RemoteChangeKind kind;
	XLogRecPtr	commit_lsn;		/* of its transaction */
	uint32		xid;			/* its transaction's */
	int			seq;			/* its order in the transaction */
	char	  **values;			/* per column of the job, text; NULL for null */
} RemoteChange;

/* what the decoder needs to know of the job, and what it found */
typedef struct RemoteDecoder
{
	const char *nspname;		/* the source table */
	const char *relname;
	int			ncols;			/* the job's columns, by name */
	char	  **col_names;
	int			npk;			/* the key's columns: indexes into col_names */
	int		   *pk_cols;

	/* per fetch */
	uint32		relid;			/* the source table's OID, once a Relation message named it */
	int			natts;
	int		   *att_col;		/* per attribute of the Relation message: its column, or -1 */
	XLogRecPtr	commit_lsn;		/* of the transaction being decoded */
	uint32		xid;
	int			seq;
	XLogRecPtr	last_end;		/* end of the last commit decoded */
	TimestampTz last_commit_time;
	List	   *changes;		/* RemoteChange *, in order */
} RemoteDecoder;

extern void backfill_pgoutput_decode(RemoteDecoder *dec, const char *data, int len);

#endif							/* BACKFILL_REMOTE_H */
