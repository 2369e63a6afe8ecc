/*-------------------------------------------------------------------------
 *
 * kind_remote.c
 *	  The cdc kind when the upstream is a foreign table of postgres_fdw:
 *	  copying a table of another PostgreSQL server in parallel splits, and
 *	  following it through that server's own logical replication.
 *
 * RisingWave's CDC backfill v2 (cdc_backill_v2.rs, state_v2.rs) cuts the
 * upstream's key range into splits, gives consecutive splits to each actor,
 * reads each split between a low and a high offset of the change stream,
 * and keeps one state row per split.  Here:
 *
 * Splits.  create_job cuts the range of the first key column at bounds
 * taken from the source's pg_stats histogram of that column (or, without
 * one, from a sample), up to BACKFILL_REMOTE_SPLITS_PER_ACTOR per actor,
 * and stores them in backfill.job.remote_splits: split j holds the keys
 * whose first column is in [bound j-1, bound j).  Actor a of p reads splits
 * a*n/p .. (a+1)*n/p-1, in order, over its own connection; split j stands
 * on the actor's vnode vnode_start + (j - its first split) in the executor's
 * vnode array, the actor's other vnodes being finished from the start.  The
 * state table is RisingWave's v2 layout: split_id, backfill_finished,
 * row_count, cdc_offset_low, cdc_offset_high (offsets are {"lsn": ...} of
 * the source).  The position inside a split lives only in memory: a split
 * not finished when a run stops is read again from its start, so a crash
 * re-reads at most one split per actor, and a barrier commits as soon as
 * one of its actor's splits has finished (barrier_full).
 *
 * The change stream.  One publication FOR TABLE and one logical slot with
 * pgoutput on the source, both named backfill_<system identifier>_<database
 * OID>_<job id> of this server, made by the job's first fetch (publication
 * first: pgoutput reads it with the catalog as of each change).  A fetch,
 * before every barrier and in a transaction of its own, under the job's
 * slot lock (one fetch at a time for all the actors):
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
 * advanced to an offset whose changes are committed here.
 *
 * Reading a chunk (DBLog's watermarks, made exact by snapshots).  A chunk of
 * split s is read on the source in one REPEATABLE READ transaction: first
 * its snapshot and pg_current_wal_insert_lsn() (the chunk's offset), then
 * COPY of its next rows in key order, up to the chunk's size, straight into
 * the downstream (COPY FROM, remote.c); the last row's key ends the chunk,
 * and fewer rows than asked for end the split.  A change of a key in the chunk is
 * either visible to that snapshot, so already in the chunk, or not, so it
 * came after: the chunk's barrier deletes the changes of the chunk's keys
 * that its snapshot sees (pg_visible_in_snapshot of their transaction), and
 * leaves the others.  A key is "covered" once a chunk has read it: it lies in
 * a finished split of its actor, or in the current split at or below the
 * position.  At the start of each barrier an actor applies the changes of
 * its covered keys in commit order, the last change of each key winning:
 * an upsert is INSERT ... ON CONFLICT DO UPDATE, a delete a DELETE, a
 * refetch (an update that left a TOASTed column out of the WAL) reads the
 * row again from the source.  The changes of keys not covered yet wait in
 * the change table for their chunk.
 *
 * Why nothing is lost or doubled: the writes to one key are serialized on
 * the source, so the changes to a key that a snapshot sees are a prefix of
 * that key's changes in commit order.  After a chunk, the change table holds
 * the suffix the chunk did not see (those fetched later come after them),
 * and applying a suffix of full images in order leaves the last one, which
 * is the source's row.  A change fetched after the chunk's barrier that the
 * chunk did see is applied too, followed by every later change of its key,
 * so the row only goes back for a moment.  Re-reading a split first deletes
 * the split's range downstream, so rows deleted on the source meanwhile do
 * not stay, and every apply is by key, so applying twice changes nothing.
 *
 * After the finish the job follows the source: its final barrier applies
 * what is fetched, then fetches and applies, one fetch per transaction,
 * until it has reached what the source had committed (after_finish); a
 * worker goes on doing so until stop_job (driver.c), and a run of a finished
 * job (run_job) does it once and returns.
 *
 * verify_job compares the downstream with the source through the foreign
 * table: the keys of splits not finished are not compared, and those of the
 * changes in the change table, or committed on the source after the job's
 * offset (peeked at in the slot, unfetched_keys), are pending.
 * cancel_job and drop_job drop the slot and the publication; those of jobs
 * that no longer exist, left by a crash or a source that was down, are
 * dropped by the first fetch of any job on that server in each process that
 * fetches (each run, each worker).
 *
 * May call: remote.c, pgoutput.c, state.c, catalog.c, privilege.c and the
 * foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/pquery.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "kind.h"
#include "remote.h"
#include "lib.h"
#include "catalog_access.h"
#include "copy.h"
#include "capture.h"
#include "switchover.h"

/* splits per actor create_job aims at */
#define BACKFILL_REMOTE_SPLITS_PER_ACTOR 8

/* messages one fetch peeks at most */
#define BACKFILL_REMOTE_FETCH_CHANGES 20000

/*
 * fetches one after_finish makes at most in a background worker, which calls
 * it again after checking whether it is asked to stop (driver.c)
 */
#define BACKFILL_REMOTE_FOLLOW_FETCHES 50

/* keys read again from the source per statement */
#define BACKFILL_REMOTE_REFETCH_BATCH 500

/* what the kind keeps for a job: its splits, its source, its statements */
typedef struct RemoteJob
{
	BackfillJob *job;
	RemoteTable table;
	char	   *name;			/* of the slot and the publication */
	int			nsplits;
	char	  **bounds;			/* nsplits - 1 inner bounds, text */
	char	  **key_types;		/* per key column, its type's name */
	char	  **col_types;		/* per column */
	int		   *pk_cols;		/* per key column, its index in the columns */

	/* per actor: its splits, the current one, its position in it */
	int		   *first_split;
	int		   *end_split;		/* exclusive */
	char	 ***pos;			/* NULL: the current split is not started */
	bool	   *full;			/* a split finished in this barrier */

	/* per split: the offsets of its reading */
	XLogRecPtr *low;
	XLogRecPtr *high;

	SPIPlanPtr	apply_plan;
	SPIPlanPtr	insert_plan;
	SPIPlanPtr	persist_plan;
	KeptPlans  *plans;
} RemoteJob;

static const char *const remote_reserved_columns[] = {
	"split_id", "backfill_finished", "row_count", "cdc_offset_low", "cdc_offset_high",
	"backfill_lsn", "backfill_order", "backfill_xid", "backfill_op", "backfill_row", NULL
};

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
static int
split_vnode(RemoteJob *rj, int actor, int j)
{
	return rj->job->actors[actor].vnode_start + (j - rj->first_split[actor]);
}

/* the inner bounds stored with the job */
static void
load_bounds(RemoteJob *rj)
{
	bool		isnull;
	Datum		d = backfill_job_column(rj->job->job_id, "remote_splits", &isnull);
	Datum	   *elems;
	int			n = 0;

	rj->bounds = NULL;
	if (!isnull)
	{
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, NULL, &n);
		rj->bounds = palloc(sizeof(char *) * Max(n, 1));
		for (int i = 0; i < n; i++)
			rj->bounds[i] = TextDatumGetCString(elems[i]);
	}
	rj->nsplits = n + 1;
}

/* lower (inclusive) and upper (exclusive) bound of split j; NULL: none */
static char *
split_lo(RemoteJob *rj, int j)
{
	return j == 0 ? NULL : rj->bounds[j - 1];
}

static char *
split_hi(RemoteJob *rj, int j)
{
	return j == rj->nsplits - 1 ? NULL : rj->bounds[j];
}

/* a RemoteJob for a loaded job, in the current memory context */
RemoteJob *
remote_job_make(BackfillJob *job)
{
	RemoteJob  *rj = palloc0(sizeof(RemoteJob));
	int			p = Max(job->nactors, 1);

	rj->job = job;
	backfill_remote_table(job->upstream, &rj->table);
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

/* this process's connection to the job's source, as the job's owner */
RemoteConn *
remote_job_connect(RemoteJob *rj)
{
	return backfill_remote_connect(rj->table.serverid, rj->job->owner,
								   psprintf("backfill job %lld", (long long) rj->job->job_id));
}

/* ---- key conditions, for the source (literals) or here (parameters) ---- */

typedef struct KeyCond
{
	StringInfoData sql;
	RemoteConn *conn;			/* literals for it, or NULL: parameters */
	int			nparams;
	Datum		values[2 * INDEX_MAX_KEYS + 4];
	Oid			types[2 * INDEX_MAX_KEYS + 4];
} KeyCond;

static void
cond_value(KeyCond *kc, const char *value, const char *type)
{
	if (kc->conn != NULL)
		appendStringInfo(&kc->sql, "%s::%s", backfill_remote_literal(kc->conn, value), type);
	else
	{
		kc->values[kc->nparams] = CStringGetTextDatum(value);
		kc->types[kc->nparams] = TEXTOID;
		appendStringInfo(&kc->sql, "$%d::%s", ++kc->nparams, type);
	}
}

/*
 * AND (alias.k1, ...) op (key), or for its first column only (one_column).
 * Here, with the operators of the key types' btree classes, as every
 * comparison of keys in this server's SQL is written (sql.c); for the
 * source, with the operators' names, which its own catalogs resolve.
 */
static void
cond_compare(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, char **key,
			 bool one_column)
{
	static const char *const names[] = {"", "<", "<=", "=", ">=", ">"};
	BackfillJob *job = rj->job;
	int			n = one_column ? 1 : job->npk;
	char	  **left = backfill_pk_exprs(job, alias);
	char	  **right = palloc(sizeof(char *) * n);
	StringInfoData saved = kc->sql;

	for (int k = 0; k < n; k++)
	{
		initStringInfo(&kc->sql);
		cond_value(kc, key[k], rj->key_types[k]);
		right[k] = kc->sql.data;
	}
	kc->sql = saved;
	if (kc->conn == NULL)
		appendStringInfo(&kc->sql, " AND %s",
						 backfill_key_compare_types(n, job->pk_types, left, strategy, right));
	else
	{
		appendStringInfoString(&kc->sql, " AND (");
		for (int k = 0; k < n; k++)
			appendStringInfo(&kc->sql, "%s%s", k > 0 ? ", " : "", left[k]);
		appendStringInfo(&kc->sql, ") %s (", names[strategy]);
		for (int k = 0; k < n; k++)
			appendStringInfo(&kc->sql, "%s%s", k > 0 ? ", " : "", right[k]);
		appendStringInfoChar(&kc->sql, ')');
	}
}

/* AND (alias.k1, ...) op (key) */
static void
cond_key(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, char **key)
{
	cond_compare(kc, rj, alias, strategy, key, false);
}

/* AND alias.k1 op bound, when there is a bound */
static void
cond_bound(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, const char *bound)
{
	char	   *key[1];

	if (bound == NULL)
		return;
	key[0] = (char *) bound;
	cond_compare(kc, rj, alias, strategy, key, true);
}

/* "true" and the conditions of a key range of split j */
static void
cond_range(KeyCond *kc, RemoteJob *rj, const char *alias, int j, char **after, char **upto)
{
	initStringInfo(&kc->sql);
	appendStringInfoString(&kc->sql, "true");
	cond_bound(kc, rj, alias, BTGreaterEqualStrategyNumber, split_lo(rj, j));
	cond_bound(kc, rj, alias, BTLessStrategyNumber, split_hi(rj, j));
	if (after != NULL)
		cond_key(kc, rj, alias, BTGreaterStrategyNumber, after);
	if (upto != NULL)
		cond_key(kc, rj, alias, BTLessEqualStrategyNumber, upto);
}

static void
spi_cond(KeyCond *kc, const char *sql, int expected)
{
	backfill_spi_exec_args(sql, kc->nparams, kc->types, kc->values, NULL, expected);
}

/* ---- create_job ---- */

/*
 * The key of the source table, by its primary key there: the foreign
 * table's attribute numbers in key order, and their collations here.
 */
static int
remote_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations)
{
	RemoteTable table;
	RemoteConn *conn;
	RemoteRows *rows;
	const char *params[1];

	backfill_remote_table(RelationGetRelid(rel), &table);
	conn = backfill_remote_connect(table.serverid, GetUserId(), "backfill create_job");
	params[0] = table.qualified;
	rows = backfill_remote_query(conn,
								 "SELECT a.attname::text FROM pg_catalog.pg_class c "
								 "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
								 "LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND i.indisprimary "
								 "LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid "
								 "AND a.attnum = ANY (i.indkey) "
								 "WHERE c.oid = pg_catalog.to_regclass($1) "
								 "ORDER BY pg_catalog.array_position(i.indkey::pg_catalog.int2[], a.attnum)",
								 1, params);
	if (rows->nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table \"%s.%s\" does not exist on server \"%s\"",
						table.nspname, table.relname, table.server_name),
				 errdetail("Foreign table \"%s\" names it.", RelationGetRelationName(rel))));
	if (backfill_remote_value(rows, 0, 0) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s.%s\" on server \"%s\" has no primary key",
						table.nspname, table.relname, table.server_name),
				 errdetail("A backfill reads the upstream in primary key order and records its progress as a primary key."),
				 errhint("Add a primary key to the table on the source.")));
	*attnums = palloc(sizeof(AttrNumber) * rows->nrows);
	*collations = palloc(sizeof(Oid) * rows->nrows);
	for (int k = 0; k < rows->nrows; k++)
	{
		char	   *name = backfill_remote_value(rows, k, 0);
		AttrNumber	att = get_attnum(RelationGetRelid(rel), name);

		if (att == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("foreign table \"%s\" has no column \"%s\"", RelationGetRelationName(rel), name),
					 errdetail("Column \"%s\" is in the primary key of table \"%s.%s\" on server \"%s\".",
							   name, table.nspname, table.relname, table.server_name)));
		(*attnums)[k] = att;
		(*collations)[k] = TupleDescAttr(RelationGetDescr(rel), att - 1)->attcollation;
	}
	return rows->nrows;
}

/*
 * What the job copies: the source's columns as they are, into a table of its
 * own.  A row filter or a computed column would have to be evaluated on the
 * source for the chunks and here for the changes, and a table of the user's
 * would need an image type of its own for the change table.
 */
static void
remote_check_shape(Relation upstream, const JobShape *shape, bool into_existing)
{
	const char *what = shape->filter ? "a row filter" :
		shape->computed ? "computed columns" :
		into_existing ? "a downstream table of the user's" : NULL;

	if (what != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a cdc job from foreign table \"%s\" cannot have %s",
						RelationGetRelationName(upstream), what),
				 errdetail("A job whose upstream is on another server copies the source's columns as they are into a table of its own."),
				 errhint("Copy the table as it is, and derive what you need from the copy with a job on it.")));
}

/*
 * What the source must offer: logical decoding, a free slot, and a role that
 * may replicate.
 */
static void
remote_check_create(Relation upstream, int parallelism pg_attribute_unused())
{
	RemoteTable table;
	RemoteConn *conn;
	RemoteRows *rows;

	backfill_remote_table(RelationGetRelid(upstream), &table);
	conn = backfill_remote_connect(table.serverid, GetUserId(), "backfill create_job");
	rows = backfill_remote_query(conn,
								 "SELECT pg_catalog.current_setting('wal_level'), "
								 "(SELECT r.rolreplication OR r.rolsuper FROM pg_catalog.pg_roles r "
								 "WHERE r.rolname = current_user)::text, "
								 "(pg_catalog.current_setting('max_replication_slots')::int - "
								 "(SELECT pg_catalog.count(*) FROM pg_catalog.pg_replication_slots))::text",
								 0, NULL);
	if (strcmp(backfill_remote_value(rows, 0, 0), "logical") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("server \"%s\" does not have \"wal_level\" set to \"logical\"", table.server_name),
				 errdetail("Its wal_level is \"%s\"; a cdc job reads the source's changes through a logical replication slot.",
						   backfill_remote_value(rows, 0, 0)),
				 errhint("Set wal_level = logical on the source and restart it.")));
	if (strcmp(backfill_remote_value(rows, 0, 1), "true") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the role of the user mapping for server \"%s\" may not replicate", table.server_name),
				 errdetail("A cdc job owns a logical replication slot on the source."),
				 errhint("Give that role the REPLICATION attribute on the source.")));
	if (atoi(backfill_remote_value(rows, 0, 2)) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("server \"%s\" has no free replication slot", table.server_name),
				 errhint("Raise max_replication_slots on the source, or drop a slot it no longer needs.")));
}

/* the state table in RisingWave's v2 layout, and the change table */
static void
remote_create_state_table(const JobDefinition *def)
{
	backfill_create_job_table(psprintf("CREATE TABLE %s (split_id pg_catalog.int8 PRIMARY KEY, "
									   "backfill_finished pg_catalog.bool, row_count pg_catalog.int8, "
									   "cdc_offset_low pg_catalog.jsonb, cdc_offset_high pg_catalog.jsonb)",
									   def->state_sql),
							  def->state_sql, def->owner);
	backfill_create_job_table(psprintf("CREATE TABLE %s (backfill_lsn pg_catalog.pg_lsn, "
									   "backfill_order pg_catalog.int4, backfill_xid pg_catalog.xid8, "
									   "backfill_op pg_catalog.\"char\", %s, backfill_row %s); "
									   "CREATE INDEX ON %s (%s)",
									   def->changes_sql, def->key_ddl + 2, def->downstream_sql,
									   def->changes_sql, def->key_list),
							  def->changes_sql, def->owner);
}

/* the bounds of the splits, from the source's statistics or a sample */
static Datum
cut_splits(RemoteConn *conn, RemoteTable *table, const char *key, int nsplits)
{
	const char *params[3] = {table->nspname, table->relname, key};
	RemoteRows *rows;
	ArrayBuildState *astate = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	char	   *prev = NULL;
	bool		sampled = false;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	rows = backfill_remote_query(conn,
								 "SELECT histogram_bounds::text::text[] FROM pg_catalog.pg_stats "
								 "WHERE schemaname = $1 AND tablename = $2 AND attname = $3 "
								 "ORDER BY inherited LIMIT 1", 3, params);
	if (rows->nrows == 0 || backfill_remote_value(rows, 0, 0) == NULL)
	{
		/* no statistics: quantiles of a sample of about 30000 rows */
		char	   *sql;
		StringInfoData fractions;

		initStringInfo(&fractions);
		appendStringInfoString(&fractions, "{");
		for (int i = 1; i < nsplits; i++)
			appendStringInfo(&fractions, "%s%g", i > 1 ? "," : "", (double) i / nsplits);
		appendStringInfoString(&fractions, "}");
		sql = psprintf("SELECT (pg_catalog.percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY %s))::text[] "
					   "FROM %s TABLESAMPLE BERNOULLI ((SELECT LEAST(100, 3000000 / GREATEST(c.reltuples, 1)) "
					   "FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($2)))",
					   quote_identifier(key), table->qualified);
		params[0] = nsplits > 1 ? fractions.data : "{}";
		params[1] = table->qualified;
		rows = backfill_remote_query(conn, sql, 2, params);
		if (rows->nrows == 0 || backfill_remote_value(rows, 0, 0) == NULL)
			return PointerGetDatum(construct_empty_array(TEXTOID));
		sampled = true;
	}
	deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN,
															  backfill_remote_value(rows, 0, 0),
															  TEXTOID, -1)),
					  TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 1; i < nsplits; i++)
	{
		/* a histogram's inner bounds at the quantiles; a sample's as they are */
		int			at = sampled ? i - 1 : (int) ((int64) i * (n - 1) / nsplits);
		char	   *b;

		if (at >= n || nulls[at])
			continue;
		b = TextDatumGetCString(elems[at]);
		if (prev != NULL && strcmp(prev, b) == 0)
			continue;
		astate = accumArrayResult(astate, CStringGetTextDatum(b), false, TEXTOID, CurrentMemoryContext);
		prev = b;
	}
	return makeArrayResult(astate, CurrentMemoryContext);
}

/* after the catalog rows: cut the splits and mark the job remote */
static void
remote_after_create(const JobDefinition *def)
{
	RemoteTable table;
	RemoteConn *conn;
	int			nsplits = def->parallelism *
		Min(BACKFILL_REMOTE_SPLITS_PER_ACTOR, BACKFILL_VNODE_COUNT / def->parallelism);
	Datum		values[2];
	Oid			types[2] = {INT8OID, TEXTARRAYOID};
	char	   *key = pstrdup(def->key_list);
	char	   *comma = strchr(key, ',');

	backfill_remote_table(RelationGetRelid(def->upstream), &table);

	/*
	 * As the job's owner, through its user mapping, as every later
	 * connection of the job: the caller runs this in the catalog context,
	 * where the current user is the extension's owner, whose mapping could
	 * show the statistics and rows of the source that the job's own role
	 * may not see.
	 */
	conn = backfill_remote_connect(table.serverid, def->owner, "backfill create_job");
	if (comma != NULL)
		*comma = '\0';
	/* key_list is quoted; the statistics know the column by its name */
	key = get_attname(RelationGetRelid(def->upstream),
					  get_attnum(RelationGetRelid(def->upstream), key[0] == '"' ?
								 pnstrdup(key + 1, strlen(key) - 2) : key), false);
	values[0] = Int64GetDatum(def->job_id);
	values[1] = cut_splits(conn, &table, key, nsplits);
	backfill_spi_exec_args("UPDATE backfill.job SET remote = true, remote_splits = $2 WHERE job_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
}

/* ---- the state ---- */

/* an offset column: NULL, or {"lsn": "X/X"} */
static void
check_offset(BackfillJob *job, HeapTuple tup, TupleDesc desc, int col, const char *field,
			 bool required)
{
	char	   *type = SPI_getvalue(tup, desc, col);
	char	   *lsn = SPI_getvalue(tup, desc, col + 1);
	bool		have_error = false;

	if (type == NULL)
	{
		if (required)
			backfill_split_state_error(job, field, SPI_getvalue(tup, desc, 1));
		return;
	}
	if (strcmp(type, "object") != 0 || lsn == NULL)
		have_error = true;
	else
		(void) pg_lsn_in_internal(lsn, &have_error);
	if (have_error)
		backfill_split_state_error(job, field, SPI_getvalue(tup, desc, 1));
}

/*
 * Decode the state rows into the vnodes the splits stand on, in the order of
 * RisingWave's state_v2.rs: backfill_finished, row_count, cdc_offset_low,
 * cdc_offset_high.
 */
static void
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
							 "pg_catalog.jsonb_typeof(cdc_offset_low), cdc_offset_low OPERATOR(pg_catalog.->>) 'lsn', "
							 "pg_catalog.jsonb_typeof(cdc_offset_high), cdc_offset_high OPERATOR(pg_catalog.->>) 'lsn' "
							 "FROM %s ORDER BY split_id", job->state_sql), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		split = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		bool		finished = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
		int64		rows;
		int			actor = -1;

		if (isnull)
			backfill_split_state_error(job, "backfill_finished", SPI_getvalue(tup, desc, 1));
		rows = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		if (isnull || rows < 0)
			backfill_split_state_error(job, "row_count", SPI_getvalue(tup, desc, 1));
		check_offset(job, tup, desc, 4, "cdc_offset_low", finished);
		check_offset(job, tup, desc, 6, "cdc_offset_high", finished);
		for (int a = 0; a < job->nactors; a++)
			if (split >= rj->first_split[a] && split < rj->end_split[a])
				actor = a;
		if (actor < 0)
			backfill_split_state_error(job, "split_id", SPI_getvalue(tup, desc, 1));
		job->vnodes[split_vnode(rj, actor, (int) split)].present = true;
		job->vnodes[split_vnode(rj, actor, (int) split)].finished = finished;
		job->vnodes[split_vnode(rj, actor, (int) split)].row_count = rows;
	}
	SPI_freetuptable(SPI_tuptable);
}

/* ---- statements ---- */

/*
 * The covered keys of an actor, on the change table c: in its range, and
 * below the current split ($3 = 0: $4 its lower bound), at or below the
 * position ($3 = 1: $5...), or anywhere ($3 = 2).
 */
static char *
covered_sql(RemoteJob *rj)
{
	BackfillJob *job = rj->job;
	char	  **c = backfill_pk_exprs(job, "c");
	char	  **pos = palloc(sizeof(char *) * job->npk);
	char	   *bound[1];
	StringInfoData sql;

	initStringInfo(&sql);
	bound[0] = psprintf("$1::%s", rj->key_types[0]);
	appendStringInfo(&sql, "($1 IS NULL OR %s) ",
					 backfill_key_compare_types(1, job->pk_types, c, BTGreaterEqualStrategyNumber, bound));
	bound[0] = psprintf("$2::%s", rj->key_types[0]);
	appendStringInfo(&sql, "AND ($2 IS NULL OR %s) ",
					 backfill_key_compare_types(1, job->pk_types, c, BTLessStrategyNumber, bound));
	bound[0] = psprintf("$4::%s", rj->key_types[0]);
	for (int k = 0; k < job->npk; k++)
		pos[k] = psprintf("$%d::%s", 5 + k, rj->key_types[k]);
	appendStringInfo(&sql, "AND CASE $3 WHEN 2 THEN true WHEN 0 THEN %s ELSE %s END",
					 backfill_key_compare_types(1, job->pk_types, c, BTLessStrategyNumber, bound),
					 backfill_key_compare(job, c, BTLessEqualStrategyNumber, pos));
	return sql.data;
}

/*
 * A statement of the job: kept across the run's transactions for an
 * executor, or for the current SPI connection only.
 */
static SPIPlanPtr
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
	Oid			types[INDEX_MAX_KEYS + 4];

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
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&keys, "%sl.%s::text", k > 0 ? ", " : "", quote_identifier(job->pk_names[k]));
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
	rj->apply_plan = remote_plan(rj, sql.data, 4 + job->npk, types);
}

/* the insert of one decoded change: all parameters text */
void
prepare_insert(RemoteJob *rj)
{
	BackfillJob *job = rj->job;
	StringInfoData sql;
	Oid			types[INDEX_MAX_KEYS + 4 + 1600];
	int			n = 4 + job->npk + job->ncols;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (backfill_lsn, backfill_order, backfill_xid, backfill_op, %s, backfill_row) "
					 "VALUES ($1::pg_catalog.pg_lsn, $2::pg_catalog.int4, $3::pg_catalog.xid8, $4::pg_catalog.\"char\"",
					 job->changes_sql, backfill_pk_list(job, NULL));
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&sql, ", $%d::%s", 5 + k, rj->key_types[k]);
	appendStringInfoString(&sql, ", CASE WHEN $4 = 'u' THEN ROW(");
	for (int c = 0; c < job->ncols; c++)
		appendStringInfo(&sql, "%s$%d::%s", c > 0 ? ", " : "", 5 + job->npk + c, rj->col_types[c]);
	appendStringInfo(&sql, ")::%s END)", job->downstream_sql);
	for (int i = 0; i < n; i++)
		types[i] = TEXTOID;
	rj->insert_plan = remote_plan(rj, sql.data, n, types);
}

static void
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

static void
remote_prepare(BarrierExecutor *exec)
{
	MemoryContext old = MemoryContextSwitchTo(exec->cxt);
	RemoteJob  *rj = remote_job_make(exec->job);

	rj->plans = exec->plans;
	prepare_apply(rj);
	prepare_insert(rj);
	prepare_persist(rj);
	exec->kind_state = rj;
	MemoryContextSwitchTo(old);
}

/* ---- the change stream ---- */

/* the job's publication and slot on the source, made if missing */
static XLogRecPtr
ensure_slot(RemoteJob *rj, RemoteConn *conn, bool has_offset)
{
	const char *params[2] = {rj->name, rj->table.qualified};
	RemoteRows *rows;
	bool		err = false;
	XLogRecPtr	lsn;

	rows = backfill_remote_query(conn, "SELECT FROM pg_catalog.pg_publication WHERE pubname = $1", 1, params);
	if (rows->nrows == 0)
		(void) backfill_remote_query(conn, psprintf("CREATE PUBLICATION %s FOR TABLE %s",
													quote_identifier(rj->name), rj->table.qualified),
									 0, NULL);
	rows = backfill_remote_query(conn, "SELECT confirmed_flush_lsn::text FROM pg_catalog.pg_replication_slots "
								 "WHERE slot_name = $1", 1, params);
	if (rows->nrows == 0)
	{
		if (has_offset)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of backfill job %lld does not exist on server \"%s\"",
							rj->name, (long long) rj->job->job_id, rj->table.server_name),
					 errdetail("The changes of the source since the job's offset are lost."),
					 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							 (long long) rj->job->job_id, (long long) rj->job->job_id)));
		rows = backfill_remote_query(conn, "SELECT lsn::text FROM pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput')",
									 1, params);
	}
	lsn = pg_lsn_in_internal(backfill_remote_value(rows, 0, 0), &err);
	return lsn;
}

/* whether this process has swept a server for orphans, by server OID */
static List *swept_servers = NIL;

/*
 * Drop the slots and publications of this database's jobs that no longer
 * exist (a crash, or a source down when they were dropped), on the job's
 * server, those of every role's jobs (the publications the source lets the
 * job's role drop); once per process and server.
 */
static void
sweep_orphans(RemoteConn *conn, Oid serverid)
{
	StringInfoData live;
	const char *params[2];
	RoleContext rc;
	MemoryContext old;

	if (list_member_oid(swept_servers, serverid))
		return;

	/* every role's jobs: row-level security shows each role its own */
	backfill_catalog_enter(&rc);
	if (SPI_execute("SELECT pg_catalog.string_agg(job_id::text, ',') FROM backfill.job "
					"WHERE remote AND status <> 'cancelled'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	backfill_role_leave(&rc);
	initStringInfo(&live);
	appendStringInfo(&live, "{%s}", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) ?
					 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : "");
	params[0] = remote_object_name(0, true);
	params[1] = live.data;
	(void) backfill_remote_query(conn,
								 "SELECT pg_catalog.pg_drop_replication_slot(slot_name) FROM pg_catalog.pg_replication_slots "
								 "WHERE NOT active AND pg_catalog.starts_with(slot_name, $1) "
								 "AND pg_catalog.substr(slot_name, pg_catalog.length($1) + 1) <> ALL ($2::text[])",
								 2, params);
	{
		RemoteRows *rows = backfill_remote_query(conn,
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
static void
store_changes(RemoteJob *rj, RemoteDecoder *dec, XLogRecPtr offset, uint64 xmax)
{
	BackfillJob *job = rj->job;
	int			n = 4 + job->npk + job->ncols;
	Datum	   *values = palloc(sizeof(Datum) * n);
	char	   *nulls = palloc(n);
	ListCell   *lc;

	foreach(lc, dec->changes)
	{
		RemoteChange *c = lfirst(lc);
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
								rj->table.nspname, rj->table.relname, rj->table.server_name,
								job->pk_names[k])));
			values[4 + k] = CStringGetTextDatum(v);
		}
		for (int i = 0; i < job->ncols; i++)
		{
			values[4 + job->npk + i] = c->values[i] ? CStringGetTextDatum(c->values[i]) : (Datum) 0;
			nulls[4 + job->npk + i] = c->values[i] ? ' ' : 'n';
		}
		if (SPI_execute_plan(rj->insert_plan, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into %s", job->changes_sql);
	}
}

/* the job's offset, as committed */
static bool
committed_offset(RemoteJob *rj, XLogRecPtr *offset)
{
	bool		isnull;
	Datum		d = backfill_job_column(rj->job->job_id, "remote_lsn", &isnull);

	*offset = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	return !isnull;
}

/*
 * Whether the transaction's snapshot sees the offset as committed: another
 * actor's fetch may have committed one since it was taken, and this
 * transaction, REPEATABLE READ, could not record its own after it.
 */
static bool
snapshot_sees_offset(RemoteJob *rj, bool has_offset, XLogRecPtr offset)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(rj->job->job_id)};
	bool		isnull;
	Datum		d;

	backfill_spi_exec_args("SELECT remote_lsn FROM backfill.job WHERE job_id = $1",
						   1, types, values, NULL, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? !has_offset : (has_offset && DatumGetLSN(d) == offset);
}

static void
record_offset(RemoteJob *rj, XLogRecPtr offset, XLogRecPtr source_end, TimestampTz commit_time)
{
	Oid			types[4] = {INT8OID, PG_LSNOID, PG_LSNOID, TIMESTAMPTZOID};
	Datum		values[4] = {Int64GetDatum(rj->job->job_id), LSNGetDatum(offset),
	LSNGetDatum(source_end), TimestampTzGetDatum(commit_time)};
	char		nulls[4] = {' ', ' ', ' ', commit_time == 0 ? 'n' : ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.job SET remote_lsn = $2, remote_source_lsn = $3, "
						   "remote_caught_up_at = CASE WHEN $2 >= $3 THEN pg_catalog.now() "
						   "ELSE remote_caught_up_at END, "
						   "remote_last_commit = coalesce($4, remote_last_commit) WHERE job_id = $1",
						   4, types, values, nulls, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/* decode the messages of a peek at the slot (bytea as text) into dec */
static void
decode_messages(RemoteJob *rj, RemoteRows *rows, RemoteDecoder *dec)
{
	memset(dec, 0, sizeof(*dec));
	dec->nspname = rj->table.nspname;
	dec->relname = rj->table.relname;
	dec->ncols = rj->job->ncols;
	dec->col_names = rj->job->col_names;
	dec->npk = rj->job->npk;
	dec->pk_cols = rj->pk_cols;
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

/*
 * One fetch (see the file header).  Returns whether it reached the end of
 * the source's WAL as it was when it started; skips it, returning true, when
 * first and another fetch committed since the transaction's snapshot (the
 * next barrier's fetch does it).  Caller is connected to SPI, as the job's
 * owner, and holds the slot lock.
 */
bool
fetch_once(RemoteJob *rj, bool first)
{
	RemoteConn *conn = remote_job_connect(rj);
	XLogRecPtr	offset;
	bool		has_offset = committed_offset(rj, &offset);
	XLogRecPtr	confirmed;
	RemoteRows *rows;
	RemoteDecoder dec;
	const char *params[4];
	XLogRecPtr	upto;
	XLogRecPtr	fetched;
	uint64		xmax;
	bool		err = false;

	if (first && !snapshot_sees_offset(rj, has_offset, offset))
		return true;
	confirmed = ensure_slot(rj, conn, has_offset);
	sweep_orphans(conn, rj->table.serverid);
	if (!has_offset)
		offset = confirmed;
	params[0] = rj->name;
	params[1] = psprintf("%X/%X", LSN_FORMAT_ARGS(offset));
	if (confirmed < offset)
		(void) backfill_remote_query(conn, "SELECT FROM pg_catalog.pg_replication_slot_advance($1, $2::pg_catalog.pg_lsn)",
									 2, params);
	rows = backfill_remote_query(conn, "SELECT pg_catalog.pg_current_wal_flush_lsn()::text, "
								 "pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text",
								 0, NULL);
	upto = pg_lsn_in_internal(backfill_remote_value(rows, 0, 0), &err);
	xmax = strtou64(backfill_remote_value(rows, 0, 1), NULL, 10);

	params[1] = backfill_remote_value(rows, 0, 0);
	params[2] = psprintf("%d", BACKFILL_REMOTE_FETCH_CHANGES);
	params[3] = rj->name;
	rows = backfill_remote_query(conn, "SELECT data FROM pg_catalog.pg_logical_slot_peek_binary_changes("
								 "$1, $2::pg_catalog.pg_lsn, $3::int, 'proto_version', '1', "
								 "'publication_names', $4)", 4, params);
	decode_messages(rj, rows, &dec);
	store_changes(rj, &dec, offset, xmax);
	fetched = rows->nrows < BACKFILL_REMOTE_FETCH_CHANGES ? upto : dec.last_end;
	fetched = Max(fetched, offset);
	record_offset(rj, fetched, upto, dec.last_commit_time);
	return fetched >= upto;
}

/* kind.h: fetch, before a barrier */
static void
remote_fetch(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;

	backfill_lock_slot_of(rj->job->job_id);
	(void) fetch_once(rj, true);
}

/*
 * kind.h: unfetched_keys, for verify_job.  The keys of the changes the
 * source committed at or after "since", the job's offset as the caller's
 * snapshot sees it, that the slot still holds: a fetch committed every
 * change below it, into the change table or applied.  First makes the
 * source flush the WAL it has written, so that every transaction that a
 * snapshot taken on the source before this sees as committed is within the
 * slot's reach (it decodes flushed WAL only).  Takes the slot lock until the
 * transaction ends.  Fails with a serialization failure when fetches the
 * caller's snapshot does not see have moved the slot beyond "since".
 * Returns text[] Datums, the key's columns of each change.
 */
static List *
remote_unfetched_keys(int64 job_id, const char *since_text)
{
	BackfillJob *job = backfill_load_job(job_id, CurrentMemoryContext);
	RemoteJob  *rj = remote_job_make(job);
	RemoteConn *conn;
	RemoteRows *rows;
	RemoteDecoder dec;
	const char *params[2] = {rj->name, rj->name};
	bool		err = false;
	XLogRecPtr	since = pg_lsn_in_internal(since_text, &err);
	List	   *keys = NIL;
	ListCell   *lc;

	backfill_lock_slot_of(job_id);
	conn = remote_job_connect(rj);

	/*
	 * What the source wrote so far, flushed: a transaction that writes WAL
	 * (a logical message, which pgoutput does not send) and commits
	 * synchronously flushes all of it, asynchronous commits included.
	 */
	(void) backfill_remote_query(conn, "BEGIN", 0, NULL);
	(void) backfill_remote_query(conn, "SET LOCAL synchronous_commit = local", 0, NULL);
	(void) backfill_remote_query(conn, "SELECT FROM pg_catalog.pg_logical_emit_message(true, 'backfill', '')",
								 0, NULL);
	(void) backfill_remote_query(conn, "COMMIT", 0, NULL);
	rows = backfill_remote_query(conn, "SELECT confirmed_flush_lsn::text FROM pg_catalog.pg_replication_slots "
								 "WHERE slot_name = $1", 1, params);
	if (rows->nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication slot \"%s\" of backfill job %lld does not exist on server \"%s\"",
						rj->name, (long long) job_id, rj->table.server_name),
				 errdetail("The changes of the source since the job's offset are lost."),
				 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
						 (long long) job_id, (long long) job_id)));
	if (pg_lsn_in_internal(backfill_remote_value(rows, 0, 0), &err) > since)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not compare backfill job %lld with its source", (long long) job_id),
				 errdetail("The job fetched changes of the source that this statement's snapshot does not see."),
				 errhint("Run backfill.verify_job(%lld) again.", (long long) job_id)));
	rows = backfill_remote_query(conn, "SELECT data FROM pg_catalog.pg_logical_slot_peek_binary_changes("
								 "$1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)",
								 2, params);
	decode_messages(rj, rows, &dec);
	foreach(lc, dec.changes)
	{
		RemoteChange *c = lfirst(lc);
		Datum	   *key = palloc(sizeof(Datum) * job->npk);
		bool	   *nulls = palloc(sizeof(bool) * job->npk);
		int			dims[1] = {job->npk};
		int			lbs[1] = {1};

		if (c->commit_lsn < since)
			continue;			/* fetched already */
		for (int k = 0; k < job->npk; k++)
		{
			char	   *v = c->values[rj->pk_cols[k]];

			nulls[k] = (v == NULL);
			key[k] = v ? CStringGetTextDatum(v) : (Datum) 0;
		}
		keys = lappend(keys, construct_md_array(key, nulls, 1, dims, lbs, TEXTOID, -1, false,
												TYPALIGN_INT));
	}
	return keys;
}

/* ---- applying ---- */

/* read again from the source the rows of keys, into the downstream */
static void
refetch(RemoteJob *rj, SPITupleTable *tuptable, uint64 nkeys)
{
	BackfillJob *job = rj->job;
	RemoteConn *conn = remote_job_connect(rj);
	Relation	rel = table_open(job->downstream, RowExclusiveLock);
	List	   *attnames = NIL;
	/* COPY FROM wants one; a worker following the source has none */
	bool		pushed = !ActiveSnapshotSet();

	if (pushed)
		PushActiveSnapshot(GetTransactionSnapshot());

	for (int c = 0; c < job->ncols; c++)
		attnames = lappend(attnames, makeString(job->col_names[c]));
	for (uint64 first = 0; first < nkeys; first += BACKFILL_REMOTE_REFETCH_BATCH)
	{
		StringInfoData sql;
		KeyCond		kc;

		memset(&kc, 0, sizeof(kc));
		kc.conn = conn;
		initStringInfo(&kc.sql);
		for (uint64 i = first; i < Min(nkeys, first + BACKFILL_REMOTE_REFETCH_BATCH); i++)
		{
			appendStringInfoString(&kc.sql, i > first ? ", (" : "(");
			for (int k = 0; k < job->npk; k++)
			{
				if (k > 0)
					appendStringInfoString(&kc.sql, ", ");
				cond_value(&kc, SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, k + 1),
						   rj->key_types[k]);
			}
			appendStringInfoChar(&kc.sql, ')');
		}
		initStringInfo(&sql);
		appendStringInfo(&sql, "COPY (SELECT %s FROM %s t WHERE (%s) IN (%s)) TO STDOUT",
						 job->columns_sql, rj->table.qualified, backfill_pk_list(job, "t"), kc.sql.data);
		(void) backfill_remote_copy_into(conn, sql.data, rel, attnames, NULL);
	}
	table_close(rel, NoLock);
	if (pushed)
		PopActiveSnapshot();
}

/* apply the changes of an actor's covered keys (-1: every key) */
void
apply_changes(RemoteJob *rj, int actor)
{
	BackfillJob *job = rj->job;
	Datum		values[INDEX_MAX_KEYS + 4];
	char		nulls[INDEX_MAX_KEYS + 4];
	int			mode = 2;
	int			cur = -1;

	memset(nulls, 'n', sizeof(nulls));
	values[2] = Int32GetDatum(2);
	nulls[2] = ' ';
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
		for (int j = rj->first_split[actor]; j < rj->end_split[actor] && cur < 0; j++)
			if (!job->vnodes[split_vnode(rj, actor, j)].finished)
				cur = j;
		if (cur >= 0)
			mode = rj->pos[actor] ? 1 : 0;
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

/* kind.h: barrier_changes */
static void
remote_barrier_changes(BarrierExecutor *exec, int first, int last,
					   TimestampTz deadline pg_attribute_unused())
{
	RemoteJob  *rj = exec->kind_state;

	for (int a = first; a <= last; a++)
	{
		rj->full[a] = false;
		apply_changes(rj, a);
	}
}

/* kind.h: final_changes: fetch, then every change applies */
static void
remote_final_changes(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;

	backfill_lock_slot_of(rj->job->job_id);
	(void) fetch_once(rj, true);
	apply_changes(rj, -1);
}

/* ---- reading ---- */

/* a chunk's transaction on the source: its snapshot and offset */
static void
chunk_start(RemoteConn *conn, char **snapshot, XLogRecPtr *lsn)
{
	RemoteRows *rows;
	bool		err = false;

	(void) backfill_remote_query(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	rows = backfill_remote_query(conn, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text, "
								 "pg_catalog.pg_current_snapshot()::text", 0, NULL);
	*lsn = pg_lsn_in_internal(backfill_remote_value(rows, 0, 0), &err);
	*snapshot = backfill_remote_value(rows, 0, 1);
}

/*
 * The key of a row as COPY's text format sends it: the job's columns in
 * order, separated by tabs, with backslash escapes (\b, \f, \n, \r, \t,
 * \v, and a backslash before a backslash); a key column is never null.
 */
static char **
copy_row_key(RemoteJob *rj, const char *line)
{
	BackfillJob *job = rj->job;
	char	  **fields = palloc0(sizeof(char *) * job->ncols);
	char	  **key = palloc(sizeof(char *) * job->npk);
	const char *p = line;

	for (int c = 0; c < job->ncols; c++)
	{
		StringInfoData f;

		initStringInfo(&f);
		for (; *p != '\0' && *p != '\t' && *p != '\n'; p++)
		{
			char		ch = *p;

			if (ch == '\\' && p[1] != '\0')
			{
				ch = *++p;
				ch = ch == 'b' ? '\b' : ch == 'f' ? '\f' : ch == 'n' ? '\n' :
					ch == 'r' ? '\r' : ch == 't' ? '\t' : ch == 'v' ? '\v' : ch;
			}
			appendStringInfoChar(&f, ch);
		}
		fields[c] = f.data;
		if (*p == '\t')
			p++;
	}
	for (int k = 0; k < job->npk; k++)
		key[k] = fields[rj->pk_cols[k]];
	return key;
}

/*
 * kind.h: read_chunk.  Reads the next chunk of the group's actor's current
 * split (see the file header); the group's vnodes are the actor's unread
 * splits.
 */
static int64
remote_read_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit)
{
	RemoteJob  *rj = exec->kind_state;
	BackfillJob *job = rj->job;
	int			a = group->actor;
	int			j = -1;
	RemoteConn *conn;
	char	  **end;
	char	   *last;
	char	   *snapshot;
	XLogRecPtr	lsn;
	KeyCond		kc;
	uint64		rows;
	Relation	rel;
	List	   *attnames = NIL;
	VnodeState *vs;

	for (int s = rj->first_split[a]; s < rj->end_split[a] && j < 0; s++)
		if (!job->vnodes[split_vnode(rj, a, s)].finished)
			j = s;
	if (j < 0 || rj->full[a])
		return 0;
	vs = &job->vnodes[split_vnode(rj, a, j)];
	limit = Max(limit, 1);
	conn = remote_job_connect(rj);
	chunk_start(conn, &snapshot, &lsn);

	/* a split read from its start: what an earlier read left goes */
	if (rj->pos[a] == NULL)
	{
		memset(&kc, 0, sizeof(kc));
		cond_range(&kc, rj, "t", j, NULL, NULL);
		spi_cond(&kc, psprintf("DELETE FROM %s t WHERE %s", job->downstream_sql, kc.sql.data), SPI_OK_DELETE);
		vs->row_count = 0;
		rj->low[j] = lsn;
	}

	/* the next rows of the split in key order; the last one ends the chunk */
	memset(&kc, 0, sizeof(kc));
	kc.conn = conn;
	cond_range(&kc, rj, "t", j, rj->pos[a], NULL);
	for (int c = 0; c < job->ncols; c++)
		attnames = lappend(attnames, makeString(job->col_names[c]));
	rel = table_open(job->downstream, RowExclusiveLock);
	rows = backfill_remote_copy_into(conn, psprintf("COPY (SELECT %s FROM %s t WHERE %s ORDER BY %s LIMIT %lld) TO STDOUT",
													job->columns_sql, rj->table.qualified, kc.sql.data,
													backfill_pk_list(job, "t"), (long long) limit),
									 rel, attnames, &last);
	table_close(rel, NoLock);
	(void) backfill_remote_query(conn, "COMMIT", 0, NULL);
	/* fewer rows than asked for: the split's end */
	end = rows < (uint64) limit || last == NULL ? NULL : copy_row_key(rj, last);

	/* the changes of the chunk's keys that its snapshot saw are in it */
	memset(&kc, 0, sizeof(kc));
	cond_range(&kc, rj, "c", j, rj->pos[a], end);
	kc.values[kc.nparams] = CStringGetTextDatum(snapshot);
	kc.types[kc.nparams++] = TEXTOID;
	spi_cond(&kc, psprintf("DELETE FROM %s c WHERE %s AND pg_catalog.pg_visible_in_snapshot(c.backfill_xid, $%d::pg_catalog.pg_snapshot)",
						   job->changes_sql, kc.sql.data, kc.nparams), SPI_OK_DELETE);

	/* the new position, in the executor's memory */
	rj->high[j] = lsn;
	vs->row_count += rows;
	vs->dirty = true;
	if (end == NULL)
	{
		vs->finished = true;
		rj->pos[a] = NULL;
		rj->full[a] = true;
	}
	else
	{
		MemoryContext old = MemoryContextSwitchTo(exec->cxt);

		rj->pos[a] = palloc(sizeof(char *) * job->npk);
		for (int k = 0; k < job->npk; k++)
			rj->pos[a][k] = pstrdup(end[k]);
		MemoryContextSwitchTo(old);
	}
	return (int64) rows;
}

/* kind.h: barrier_full: an actor commits at the end of each split */
static bool
remote_barrier_full(BarrierExecutor *exec, int actor)
{
	RemoteJob  *rj = exec->kind_state;

	return rj->full[actor];
}

/* kind.h: persist: the dirty splits' rows */
static void
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
static void
remote_update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	int64		rows = 0;

	for (int v = actor->vnode_start; v <= actor->vnode_end; v++)
		rows += exec->job->vnodes[v].row_count;
	backfill_record_actor(exec, actor, rows);
}

static bool
remote_finished_everywhere(BackfillJob *job)
{
	bool		isnull;
	Datum		d = backfill_job_column(job->job_id, "remote_splits", &isnull);
	int			nsplits = isnull ? 1 : ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(d)),
													  ARR_DIMS(DatumGetArrayTypeP(d))) + 1;

	return backfill_spi_true(psprintf("SELECT pg_catalog.count(*) FILTER (WHERE backfill_finished) = %d FROM %s",
									  nsplits, job->state_sql));
}

/*
 * kind.h: after_finish: follow the source up to where it was now, then
 * return; in a background worker, after BACKFILL_REMOTE_FOLLOW_FETCHES
 * fetches at most.  One fetch and its apply per transaction: a fetch moves
 * the slot only to the offset committed here before it, so a transaction
 * that fails loses nothing the slot has let go of.  Caller is connected to
 * SPI in a non-atomic context, which this commits between fetches; each
 * fetch runs as the job's owner.
 */
static void
remote_after_finish(int64 job_id)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "backfill follow",
											  ALLOCSET_DEFAULT_SIZES);
	bool		done = false;
	int			fetches = 0;

	PG_TRY();
	{
		while (!done)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			BackfillJob *job = backfill_load_job(job_id, cxt);

			CHECK_FOR_INTERRUPTS();
			done = job->status != BACKFILL_STATUS_FINISHED;
			if (!done)
			{
				RemoteJob  *rj = remote_job_make(job);
				RoleContext rc;
				int			guc_level;

				backfill_owner_enter(job->owner, false, &rc);
				guc_level = backfill_pin_search_path(job);
				prepare_apply(rj);
				prepare_insert(rj);
				backfill_lock_slot_of(job_id);
				done = fetch_once(rj, true) ||
					(IsBackgroundWorker && ++fetches >= BACKFILL_REMOTE_FOLLOW_FETCHES);
				apply_changes(rj, -1);
				SPI_freeplan(rj->apply_plan);
				SPI_freeplan(rj->insert_plan);
				backfill_unpin_search_path(guc_level);
				backfill_role_leave(&rc);
			}
			MemoryContextSwitchTo(old);
			MemoryContextReset(cxt);
			if (!done)
			{
				backfill_commit();
				/* without a portal (a worker), SPI needs a snapshot pushed */
				if (ActivePortal == NULL)
					PushActiveSnapshot(GetTransactionSnapshot());
			}
		}
	}
	PG_FINALLY();
	{
		MemoryContextDelete(cxt);
	}
	PG_END_TRY();
}

/* kind.h: drop_objects: the slot and the publication on the source */
static void
remote_drop_objects(int64 job_id)
{
	Oid			upstream = backfill_job_upstream(job_id);
	Oid			owner = backfill_job_owner(job_id);
	RemoteTable table;
	char	   *name = remote_object_name(job_id, false);
	const char *params[1] = {name};

	if (!OidIsValid(upstream) || get_rel_relkind(upstream) != RELKIND_FOREIGN_TABLE)
		return;
	backfill_remote_table(upstream, &table);
	PG_TRY();
	{
		RemoteConn *conn = backfill_remote_connect(table.serverid, owner,
												   psprintf("backfill job %lld", (long long) job_id));

		(void) backfill_remote_query(conn, "SELECT pg_catalog.pg_drop_replication_slot(slot_name) "
									 "FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
									 1, params);
		(void) backfill_remote_query(conn, psprintf("DROP PUBLICATION IF EXISTS %s", quote_identifier(name)),
									 0, NULL);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* a source that is down keeps them until a later fetch sweeps them */
		if (geterrcode() != ERRCODE_CONNECTION_FAILURE)
			PG_RE_THROW();
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not drop replication slot and publication \"%s\" on server \"%s\"",
						name, table.server_name),
				 errdetail_internal("%s", edata->detail ? edata->detail : edata->message),
				 errhint("The next fetch of a job on that server drops them, or drop them on the source.")));
	}
	PG_END_TRY();
}

static void
remote_recount_actors(int64 job_id, const char *state_sql pg_attribute_unused())
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.actor SET row_count = 0 WHERE job_id = $1",
						   1, types, values, NULL, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

const KindRoutine backfill_remote_cdc_routine = {
	.kind = BACKFILL_KIND_REMOTE_CDC,
	.reserved_columns = remote_reserved_columns,
	.capture = CAPTURE_STREAM,
	.recount_total = false,
	.needs_job_column = "remote_splits",
	.needs_version = "1.2",
	.cuts_splits = true,
	.upstream_key = remote_upstream_key,
	.check_shape = remote_check_shape,
	.check_create = remote_check_create,
	.create_state_table = remote_create_state_table,
	.after_create = remote_after_create,
	.load_state = remote_load_state,
	.prepare = remote_prepare,
	.fetch = remote_fetch,
	.barrier_changes = remote_barrier_changes,
	.read_chunk = remote_read_chunk,
	.barrier_full = remote_barrier_full,
	.persist = remote_persist,
	.update_actor = remote_update_actor,
	.actor_finished = backfill_vnodes_finished,
	.finished_everywhere = remote_finished_everywhere,
	.final_changes = remote_final_changes,
	.after_finish = remote_after_finish,
	.drop_objects = remote_drop_objects,
	.unfetched_keys = remote_unfetched_keys,
	.recount_actors = remote_recount_actors,
};
