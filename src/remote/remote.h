/*-------------------------------------------------------------------------
 *
 * remote.h
 *	  Connections to another PostgreSQL server (remote.c), the decoding of
 *	  its logical replication protocol (pgoutput.c), a job's publication and
 *	  slot there (replication.c), reading its rows (reads.c) and cutting its
 *	  key range into splits (splits.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_REMOTE_H
#define BACKFILL_REMOTE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "tcop/dest.h"
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
extern List *backfill_remote_leaves(Oid relid);
extern RemoteConn *backfill_remote_connect(Oid serverid, Oid userid, const char *appname);
extern void backfill_remote_disconnect(RemoteConn *conn);
extern int	backfill_remote_set_deadline(int timeout_ms);
typedef void (*RemoteStep) (void *arg);
extern bool backfill_remote_bounded_or_warn(int timeout_ms, RemoteStep step, void *arg,
											const char *message, const char *hint);
extern const char *backfill_remote_server_name(RemoteConn *conn);
extern RemoteRows *backfill_remote_query(RemoteConn *conn, const char *sql, int nparams,
										 const char *const *params);
extern char *backfill_remote_value(RemoteRows *rows, int row, int col);
extern char *backfill_remote_literal(RemoteConn *conn, const char *value);
extern uint64 backfill_remote_copy_into(RemoteConn *conn, const char *copy_sql,
										Relation rel, List *attnames, DestReceiver *dest,
										char **last_row);

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
	int			part;			/* the part of the job its table is */
	char	  **values;			/* per column of the job, text; NULL for null */
} RemoteChange;

/* one table of the source the decoder follows, and what it learned of it */
typedef struct RemoteDecoderTable
{
	const char *nspname;		/* on the source */
	const char *relname;
	int			part;			/* the job's part it is */
	uint32		relid;			/* its OID, once a Relation message named it */
	int			natts;
	int		   *att_col;		/* per attribute of the Relation message: its column, or -1 */
} RemoteDecoderTable;

/* what the decoder needs to know of the job, and what it found */
typedef struct RemoteDecoder
{
	int			ntables;		/* the source's tables of the job */
	RemoteDecoderTable *tables;
	int			ncols;			/* the job's columns, by name */
	char	  **col_names;
	int			npk;			/* the key's columns: indexes into col_names */
	int		   *pk_cols;

	/* per fetch */
	XLogRecPtr	commit_lsn;		/* of the transaction being decoded */
	uint32		xid;
	int			seq;
	XLogRecPtr	last_end;		/* end of the last commit decoded */
	TimestampTz last_commit_time;
	List	   *changes;		/* RemoteChange *, in order */
} RemoteDecoder;

extern void backfill_pgoutput_decode(RemoteDecoder *dec, const char *data, int len);

/* replication.c: a job's publication and logical slot on the source */
extern XLogRecPtr backfill_remote_ensure_slot(RemoteConn *conn, const char *tables,
											  const char *server_name, const char *name,
											  int64 job_id, bool has_offset);
extern char *backfill_remote_slot_confirmed(RemoteConn *conn, const char *name);
extern void backfill_remote_advance_slot(RemoteConn *conn, const char *name, XLogRecPtr offset);
extern XLogRecPtr backfill_remote_flushed(RemoteConn *conn, uint64 *xmax, char **text);
extern void backfill_remote_flush_writes(RemoteConn *conn);
extern RemoteRows *backfill_remote_peek(RemoteConn *conn, const char *name, const char *upto,
										int nchanges);
extern void backfill_remote_decode_peeked(RemoteRows *rows, RemoteDecoder *dec);
extern void backfill_remote_drop_slot(RemoteConn *conn, const char *name);
extern void backfill_remote_drop_slot_at_commit(RemoteConn *conn, const char *name);
extern void backfill_remote_drop_orphans(RemoteConn *conn, const char *prefix, const char *live);

/* reads.c: rows of the source table, by chunk or by key */
extern void backfill_remote_chunk_start(RemoteConn *conn, char **snapshot, XLogRecPtr *lsn);
extern void backfill_remote_chunk_end(RemoteConn *conn);
extern uint64 backfill_remote_read_range(RemoteConn *conn, Relation rel, List *attnames,
										 const char *columns_sql, const char *qualified,
										 const char *cond, const char *order_by, int64 limit,
										 DestReceiver *dest, char **last_row);
extern uint64 backfill_remote_read_keys(RemoteConn *conn, Relation rel, List *attnames,
										const char *columns_sql, const char *qualified,
										const char *key_list, const char *keys);
extern char **backfill_remote_copy_row_key(const char *line, int ncols, int npk,
										   const int *pk_cols);

/* splits.c: the bounds of a job's splits */
extern Datum backfill_remote_cut_splits(RemoteConn *conn, RemoteTable *table, const char *key,
										int nsplits);

#endif							/* BACKFILL_REMOTE_H */
