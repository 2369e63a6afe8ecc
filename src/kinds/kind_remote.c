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
 * Splits.  create_job cuts the range of the first key column at bounds taken
 * from the source's pg_stats histogram of that column (or, without one, from
 * a sample; remote/splits.c), up to BACKFILL_REMOTE_SPLITS_PER_ACTOR per
 * actor, and stores them in backfill.job.remote_splits
 * (catalog/remote_rows.c): split j holds the keys whose first column is in
 * [bound j-1, bound j).  Actor a of p reads splits a*n/p .. (a+1)*n/p-1, in
 * order, over its own connection; split j stands on the actor's vnode
 * vnode_start + (j - its first split) in the executor's vnode array, the
 * actor's other vnodes being finished from the start (remote_job.c).  The
 * state table is RisingWave's v2 layout: split_id, backfill_finished,
 * row_count, cdc_offset_low, cdc_offset_high (offsets are {"lsn": ...} of
 * the source).  The position inside a split lives only in memory: a split not
 * finished when a run stops is read again from its start, so a crash
 * re-reads at most one split per actor, and a barrier commits as soon as one
 * of its actor's splits has finished (barrier_full).
 *
 * The change stream (remote_changes.c).  One publication and one logical
 * slot on the source per job (remote/replication.c); a fetch, before a
 * barrier (every one in run_job; in a worker, at most once a barrier
 * interval unless the last stopped at its limit: driver.c) and in a
 * transaction of its own, under the job's slot lock,
 * appends the changes of whole transactions the slot holds beyond the
 * offset committed in backfill.job.remote_lsn to backfill.changes_<id>,
 * and commits its new offset; the slot is only advanced to an offset whose
 * changes are committed here, so a crash anywhere re-fetches from it.
 *
 * Reading a chunk (DBLog's watermarks, made exact by snapshots).  A chunk of
 * split s is read on the source in one REPEATABLE READ transaction: first
 * its snapshot and pg_current_wal_insert_lsn() (the chunk's offset), then
 * COPY of its next rows in key order, up to the chunk's size, straight into
 * the downstream (COPY FROM; remote/reads.c); the last row's key ends the
 * chunk, and fewer rows than asked for end the split.  A change of a key in
 * the chunk is either visible to that snapshot, so already in the chunk, or
 * not, so it came after: the chunk's barrier deletes the changes of the
 * chunk's keys that its snapshot sees (pg_visible_in_snapshot of their
 * transaction), and leaves the others.  A key is "covered" once a chunk has
 * read it: it lies in a finished split of its actor, or in the current split
 * at or below the position.  At the start of each barrier an actor applies
 * the changes of its covered keys in commit order (remote_changes.c), the
 * last change of each key winning: an upsert is INSERT ... ON CONFLICT DO
 * UPDATE, a delete a DELETE, a refetch (an update that left a TOASTed column
 * out of the WAL) reads the row again from the source.  The changes of keys
 * not covered yet wait in the change table for their chunk.
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
 * Indexes built once (builds_indexes_once, copy/index_build.c).  The
 * downstream has no index while the splits are copied: the rows go to the
 * heap alone, through one ring of buffers for all the chunks (sink.c says
 * why), and the final barrier builds the key's index and the others,
 * sorted, before it applies the change table.  Nothing needs a key looked
 * up before that: no change is applied while the downstream waits for its
 * indexes (each waits in the change table, in commit order, as those of
 * keys not read yet wait for their chunk, and applying them all at the end
 * leaves each key's last image just as applying them barrier by barrier
 * does), and a split read from its start deletes its range only when rows
 * of it were committed, which happens once per split read again after a
 * crash, at most one per actor.  The build is in the final barrier's
 * transaction: a crash during it rolls both back, and the next run builds
 * again from the committed copy without reading the source again.
 *
 * Several servers (doc/sharded.md).  The upstream may also be a
 * partitioned table whose leaves, at any level, are all foreign tables (a
 * sharded upstream; remote.c's backfill_remote_leaves finds them, grouped
 * by server).  Each is a part of the job: it is cut into splits of its own
 * from its server's statistics, the parts' splits one after the other (a
 * NULL bound between two parts, backfill.job.remote_partitions their
 * order), so each actor's consecutive splits lie on one server or two, and
 * the actors read the servers at once.  Each server is a source with its
 * own slot and publication (of its parts' tables, same name on each) and
 * its own offset (backfill.job_source); a fetch visits each, and each
 * change is stored with its part (backfill_part).  The partition keys must
 * be columns of the key, which every part's table has the same on its
 * server: a key then lives in one part, its changes all come from one
 * server in that server's commit order, and the argument above holds per
 * key.  Covered keys are those of (part, key) ranges; a split read again
 * deletes its range downstream within its partition's constraint.  Before
 * the final barrier, a fetch that cannot reach a server leaves it out (in a
 * subtransaction), so the actors of the others go on in their workers; the
 * final barrier needs all of them.
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
 * The kind is cut by concern, as postgres_fdw cuts its callbacks from its
 * connections and its SQL: this file holds the kind's callbacks and its
 * state table; remote_job.c the RemoteJob they share (remote_job.h), with
 * the splits' places; remote_keys.c the conditions on keys;
 * remote_changes.c the change stream, fetched and applied.  What is said
 * to the source is in remote/ (replication.c, reads.c, splits.c), what is
 * written in backfill.job and backfill.actor in catalog/remote_rows.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/remote_rows.h"
#include "copy/copy.h"
#include "copy/index_build.h"
#include "kinds/kind.h"
#include "kinds/remote_job.h"
#include "lib/lib.h"
#include "remote/remote.h"

static const char *const remote_reserved_columns[] = {
	"split_id", "backfill_finished", "row_count", "cdc_offset_low", "cdc_offset_high",
	"backfill_lsn", "backfill_order", "backfill_xid", "backfill_op", "backfill_row", NULL
};

/* ---- create_job ---- */

/*
 * The names of the columns of the primary key of foreign table relid's
 * table on its server, in key order, read as the current user.
 */
static char **
source_key_names(Oid relid, int *nkeys)
{
	RemoteTable table;
	RemoteConn *conn;
	RemoteRows *rows;
	const char *params[1];
	char	  **names;

	backfill_remote_table(relid, &table);
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
				 errdetail("Foreign table \"%s\" names it.", get_rel_name(relid))));
	if (backfill_remote_value(rows, 0, 0) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s.%s\" on server \"%s\" has no primary key",
						table.nspname, table.relname, table.server_name),
				 errdetail("A backfill reads the upstream in primary key order and records its progress as a primary key."),
				 errhint("Add a primary key to the table on the source.")));
	names = palloc(sizeof(char *) * rows->nrows);
	for (int k = 0; k < rows->nrows; k++)
		names[k] = backfill_remote_value(rows, k, 0);
	*nkeys = rows->nrows;
	return names;
}

/*
 * A sharded upstream's partition keys, at every level, must be columns of
 * the key: PostgreSQL asks the same of a unique index on a partitioned
 * table.  Then a key is in one partition only, so its changes all come
 * from one server, in that server's commit order, and a change of the
 * partition key is a change of the key, a delete and an insert of two
 * keys whose order does not matter.
 */
static void
check_partition_keys(Relation rel, int npk, const AttrNumber *pk)
{
	ListCell   *lc;

	foreach(lc, find_all_inheritors(RelationGetRelid(rel), NoLock, NULL))
	{
		Relation	part;
		PartitionKey key;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_PARTITIONED_TABLE)
			continue;
		part = relation_open(lfirst_oid(lc), NoLock);
		key = RelationGetPartitionKey(part);
		for (int i = 0; i < get_partition_natts(key); i++)
		{
			AttrNumber	att = get_partition_col_attnum(key, i);
			const char *name = att == 0 ? NULL : get_attname(RelationGetRelid(part), att, false);
			bool		in_key = false;

			/* a partition's columns are the parent's, by name */
			for (int k = 0; name != NULL && k < npk; k++)
				in_key |= strcmp(name, get_attname(RelationGetRelid(rel), pk[k], false)) == 0;
			if (in_key)
				continue;
			if (name == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("the partition key of table \"%s\" is not in the primary key of its partitions' tables",
								RelationGetRelationName(part)),
						 errdetail("It partitions by an expression."),
						 errhint("A job over partitions on several servers needs each key in one partition: partition by columns of the sources' primary key.")));
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the partition key of table \"%s\" is not in the primary key of its partitions' tables",
							RelationGetRelationName(part)),
					 errdetail("Column \"%s\" partitions it and is not a column of the primary key on the sources.",
							   name),
					 errhint("A job over partitions on several servers needs each key in one partition: partition by columns of the sources' primary key.")));
		}
		relation_close(part, NoLock);
	}
}

/*
 * The key of the source table, by its primary key there: the foreign
 * table's attribute numbers in key order, and their collations here.  For
 * a sharded upstream, the key every partition's table has on its server,
 * which must be the same columns, in the same order, and hold the
 * partition keys.
 */
static int
remote_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations)
{
	List	   *leaves = backfill_remote_leaves(RelationGetRelid(rel));
	int			npk;
	char	  **names = source_key_names(linitial_oid(leaves), &npk);
	ListCell   *lc;

	for_each_from(lc, leaves, 1)
	{
		int			n;
		char	  **other = source_key_names(lfirst_oid(lc), &n);
		bool		same = (n == npk);

		for (int k = 0; same && k < n; k++)
			same = strcmp(names[k], other[k]) == 0;
		if (!same)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the tables of the partitions of table \"%s\" have different primary keys on their servers",
							RelationGetRelationName(rel)),
					 errdetail("The table of partition \"%s\" has a primary key of other columns than that of partition \"%s\".",
							   get_rel_name(lfirst_oid(lc)), get_rel_name(linitial_oid(leaves))),
					 errhint("Give every partition's table the same primary key on its server.")));
	}
	*attnums = palloc(sizeof(AttrNumber) * npk);
	*collations = palloc(sizeof(Oid) * npk);
	for (int k = 0; k < npk; k++)
	{
		AttrNumber	att = get_attnum(RelationGetRelid(rel), names[k]);

		if (att == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("%s \"%s\" has no column \"%s\"",
							rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE ? "foreign table" : "table",
							RelationGetRelationName(rel), names[k]),
					 errdetail("Column \"%s\" is in the primary key of the source table of \"%s\".",
							   names[k], get_rel_name(linitial_oid(leaves)))));
		(*attnums)[k] = att;
		(*collations)[k] = TupleDescAttr(RelationGetDescr(rel), att - 1)->attcollation;
	}
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		check_partition_keys(rel, npk, *attnums);
	return npk;
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
 * What each source must offer: logical decoding, a free slot, and a role
 * that may replicate.
 */
static void
remote_check_create(Relation upstream, int parallelism pg_attribute_unused())
{
	List	   *servers = NIL;
	ListCell   *lc;

	foreach(lc, backfill_remote_leaves(RelationGetRelid(upstream)))
	{
		RemoteTable table;
		RemoteConn *conn;
		RemoteRows *rows;
		AclResult	aclresult;

		/*
		 * A sharded upstream's partitions are read one by one, each from
		 * its server (verify_job's first read of each too): the caller
		 * reads each, not only through the partitioned table.
		 */
		aclresult = pg_class_aclcheck(lfirst_oid(lc), GetUserId(), ACL_SELECT);
		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_FOREIGN_TABLE, get_rel_name(lfirst_oid(lc)));
		backfill_remote_table(lfirst_oid(lc), &table);
		if (list_member_oid(servers, table.serverid))
			continue;
		servers = lappend_oid(servers, table.serverid);
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
	/* a sharded job's changes know their partition: backfill_part */
	backfill_create_job_table(psprintf("CREATE TABLE %s (backfill_lsn pg_catalog.pg_lsn, "
									   "backfill_order pg_catalog.int4, backfill_xid pg_catalog.xid8, "
									   "backfill_op pg_catalog.\"char\", %s, backfill_row %s%s); "
									   "CREATE INDEX ON %s (%s)",
									   def->changes_sql, def->key_ddl + 2, def->downstream_sql,
									   def->upstream->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
									   ", backfill_part pg_catalog.int4 NOT NULL" : "",
									   def->changes_sql, def->key_list),
							  def->changes_sql, def->owner);
}

/*
 * After the catalog rows: cut the splits and mark the job remote.  A
 * sharded job's splits are its partitions', one after the other in the
 * order backfill_remote_leaves gives (each partition cut from its own
 * server's statistics, a NULL bound between two partitions), and its
 * partitions and servers are recorded.
 */
static void
remote_after_create(const JobDefinition *def)
{
	List	   *leaves = backfill_remote_leaves(RelationGetRelid(def->upstream));
	int			nparts = list_length(leaves);
	int			nsplits = def->parallelism *
		Min(BACKFILL_REMOTE_SPLITS_PER_ACTOR, BACKFILL_VNODE_COUNT / def->parallelism);
	char	   *key = pstrdup(def->key_list);
	char	   *comma = strchr(key, ',');
	ArrayBuildState *bounds = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	ArrayBuildState *parts = initArrayResult(OIDOID, CurrentMemoryContext, false);
	ArrayBuildState *servers = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	List	   *seen = NIL;
	ListCell   *lc;

	if (nparts > BACKFILL_VNODE_COUNT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("table \"%s\" has %d partitions on other servers, more than a job reads",
						RelationGetRelationName(def->upstream), nparts),
				 errdetail("A job reads at most %d partitions, one split of each or more.", BACKFILL_VNODE_COUNT),
				 errhint("Copy the partitions with several jobs, over partitioned tables of fewer partitions.")));
	if (comma != NULL)
		*comma = '\0';
	/* key_list is quoted; the statistics know the column by its name */
	key = get_attname(RelationGetRelid(def->upstream),
					  get_attnum(RelationGetRelid(def->upstream), key[0] == '"' ?
								 pnstrdup(key + 1, strlen(key) - 2) : key), false);
	foreach(lc, leaves)
	{
		RemoteTable table;
		RemoteConn *conn;
		Datum	   *elems;
		int			n;

		backfill_remote_table(lfirst_oid(lc), &table);

		/*
		 * As the job's owner, through its user mapping, as every later
		 * connection of the job: the caller runs this in the catalog
		 * context, where the current user is the extension's owner, whose
		 * mapping could show the statistics and rows of the source that the
		 * job's own role may not see.
		 */
		conn = backfill_remote_connect(table.serverid, def->owner, "backfill create_job");
		deconstruct_array(DatumGetArrayTypeP(backfill_remote_cut_splits(conn, &table, key,
																		Max(1, nsplits / nparts))),
						  TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		if (foreach_current_index(lc) > 0)
			bounds = accumArrayResult(bounds, (Datum) 0, true, TEXTOID, CurrentMemoryContext);
		for (int i = 0; i < n; i++)
			bounds = accumArrayResult(bounds, elems[i], false, TEXTOID, CurrentMemoryContext);
		parts = accumArrayResult(parts, ObjectIdGetDatum(lfirst_oid(lc)), false, OIDOID,
								 CurrentMemoryContext);
		if (!list_member_oid(seen, table.serverid))
		{
			seen = lappend_oid(seen, table.serverid);
			servers = accumArrayResult(servers, CStringGetTextDatum(table.server_name), false,
									   TEXTOID, CurrentMemoryContext);
		}
	}
	backfill_job_set_splits(def->job_id, makeArrayResult(bounds, CurrentMemoryContext));
	if (def->upstream->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		backfill_job_set_partitions(def->job_id, makeArrayResult(parts, CurrentMemoryContext),
									makeArrayResult(servers, CurrentMemoryContext));
}

/* ---- the state ---- */

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

/* kind.h: fetch: whether every source's slot was read to the end it had */
static bool
remote_fetch(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;

	/*
	 * a sharded job's actors of the servers that answer go on while one
	 * does not: its changes wait in its slot, and the actors reading its
	 * splits wait for it, each in its worker
	 */
	backfill_lock_slot_of(rj->job->job_id);
	return fetch_once(rj, true, rj->sharded);
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
	List	   *keys = NIL;

	backfill_lock_slot_of(job_id);
	for (int s = 0; s < rj->nsources; s++)
	{
		RemoteConn *conn;
		RemoteRows *rows;
		RemoteDecoder dec;
		char	   *confirmed;
		bool		err = false;
		XLogRecPtr	since;
		ListCell   *lc;

		/* a sharded job's offset on each server, as the caller's snapshot sees it */
		if (!rj->sharded)
			since = pg_lsn_in_internal(since_text, &err);
		else if (!backfill_job_remote_offset_seen(job_id, s, &since))
			continue;			/* nothing fetched there yet */
		conn = remote_source_connect(rj, s);

		/* what the source wrote so far, flushed */
		backfill_remote_flush_writes(conn);
		confirmed = backfill_remote_slot_confirmed(conn, rj->name);
		if (confirmed == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of backfill job %lld does not exist on server \"%s\"",
							rj->name, (long long) job_id, rj->sources[s].server_name),
					 errdetail("The changes of the source since the job's offset are lost."),
					 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							 (long long) job_id, (long long) job_id)));
		if (pg_lsn_in_internal(confirmed, &err) > since)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not compare backfill job %lld with its source", (long long) job_id),
					 errdetail("The job fetched changes of the source that this statement's snapshot does not see."),
					 errhint("Run backfill.verify_job(%lld) again.", (long long) job_id)));
		rows = backfill_remote_peek(conn, rj->name, NULL, 0);
		decode_messages(rj, s, rows, &dec);
		foreach(lc, dec.changes)
		{
			RemoteChange *c = lfirst(lc);
			Datum	   *key = palloc(sizeof(Datum) * job->npk);
			bool	   *nulls = palloc(sizeof(bool) * job->npk);
			int			dims[1] = {job->npk};
			int			lbs[1] = {1};

			if (c->commit_lsn < since)
				continue;		/* fetched already */
			for (int k = 0; k < job->npk; k++)
			{
				char	   *v = c->values[rj->pk_cols[k]];

				nulls[k] = (v == NULL);
				key[k] = v ? CStringGetTextDatum(v) : (Datum) 0;
			}
			keys = lappend(keys, construct_md_array(key, nulls, 1, dims, lbs, TEXTOID, -1, false,
													TYPALIGN_INT));
		}
	}
	return keys;
}

/* ---- applying ---- */

/*
 * kind.h: barrier_changes.  While the downstream waits for its indexes
 * (builds_indexes_once), nothing is applied: an apply upserts and deletes by
 * key, and the changes of the keys already read wait in the change table,
 * in commit order, for the final barrier, as those of the keys not read yet
 * wait for their chunk.
 */
static void
remote_barrier_changes(BarrierExecutor *exec, int first, int last,
					   TimestampTz deadline pg_attribute_unused())
{
	RemoteJob  *rj = exec->kind_state;

	if (!rj->indexes_built)
		rj->indexes_built = backfill_indexes_built(rj->job, false);
	for (int a = first; a <= last; a++)
	{
		rj->full[a] = false;
		if (rj->indexes_built)
			apply_changes(rj, a);
	}
}

/*
 * kind.h: final_changes: fetch, build the downstream's indexes if it waits
 * for them (in this transaction, so a crash during the build rolls it back
 * with the final barrier, and the next run builds them again from the
 * committed copy), then every change applies.
 */
static void
remote_final_changes(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;

	backfill_lock_slot_of(rj->job->job_id);
	(void) fetch_once(rj, true, false);
	(void) backfill_indexes_built(rj->job, true);
	apply_changes(rj, -1);
}

/* ---- reading ---- */

/*
 * " AND" the partition constraint of a sharded job's part, on the
 * downstream's columns (those of the key, which holds the partition keys),
 * or "" for a job of one table.  Caller is connected to SPI.
 */
static const char *
part_condition(RemoteJob *rj, RemotePart *part)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(part->relid)};

	if (!rj->sharded)
		return "";
	if (part->constraint_sql == NULL)
	{
		backfill_spi_exec_args("SELECT pg_catalog.pg_get_partition_constraintdef($1) AS c",
							   1, types, values, NULL, SPI_OK_SELECT);
		part->constraint_sql =
			MemoryContextStrdup(GetMemoryChunkContext(rj),
								psprintf(" AND (%s)", SPI_getvalue(SPI_tuptable->vals[0],
																  SPI_tuptable->tupdesc, 1)));
	}
	return part->constraint_sql;
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
	RemotePart *part;
	ChunkSink  *sink;

	for (int s = rj->first_split[a]; s < rj->end_split[a] && j < 0; s++)
		if (!job->vnodes[split_vnode(rj, a, s)].finished)
			j = s;
	if (j < 0 || rj->full[a])
		return 0;
	vs = &job->vnodes[split_vnode(rj, a, j)];
	part = part_of_split(rj, j);
	limit = Max(limit, 1);
	conn = remote_source_connect(rj, part->source);
	backfill_remote_chunk_start(conn, &snapshot, &lsn);

	/*
	 * A split read from its start: what an earlier read left goes.  Its
	 * row_count is the committed one (a failed barrier drops the executor,
	 * and the next run loads the state again), and rows of the split, read
	 * or applied, commit with their count: none counted, none there.  So a
	 * split never started deletes nothing, which matters while the
	 * downstream has no index to find its range by (builds_indexes_once).
	 */
	if (rj->pos[a] == NULL)
	{
		if (vs->row_count > 0)
		{
			memset(&kc, 0, sizeof(kc));
			cond_range(&kc, rj, "t", j, NULL, NULL);
			spi_cond(&kc, psprintf("DELETE FROM %s t WHERE %s%s", job->downstream_sql, kc.sql.data,
								   part_condition(rj, part)), SPI_OK_DELETE);
		}
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
	/*
	 * The rows go through the sink (sink.c), which inserts them through the
	 * executor's ring of buffers, one for every chunk of the run; COPY FROM
	 * would take a new ring for each.  NULL when the downstream needs what
	 * COPY FROM does (triggers, partitions, a table of the user's).
	 */
	sink = backfill_sink_begin(exec, -1, false);
	rows = backfill_remote_read_range(conn, rel, attnames, job->columns_sql, part->table.qualified,
									  kc.sql.data, backfill_pk_list(job, "t"), limit,
									  (DestReceiver *) sink, &last);
	if (sink != NULL)
		(void) backfill_sink_end(sink, NULL, NULL, NULL, NULL, NULL);
	table_close(rel, NoLock);
	backfill_remote_chunk_end(conn);
	/* fewer rows than asked for: the split's end */
	end = rows < (uint64) limit || last == NULL ? NULL :
		backfill_remote_copy_row_key(last, job->ncols, job->npk, rj->pk_cols);

	/* the changes of the chunk's keys that its snapshot saw are in it */
	memset(&kc, 0, sizeof(kc));
	cond_range(&kc, rj, "c", j, rj->pos[a], end);
	kc.values[kc.nparams] = CStringGetTextDatum(snapshot);
	kc.types[kc.nparams++] = TEXTOID;
	if (rj->sharded)
		appendStringInfo(&kc.sql, " AND c.backfill_part = %d", rj->split_part[j]);
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
	int			nbounds;
	int			nsplits;

	(void) backfill_job_split_bounds(job->job_id, &nbounds);
	nsplits = nbounds + 1;
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
			BackfillJob *job;

			/*
			 * The fetch's statements run in an SPI connection of their own,
			 * released before the commit: the caller's lives as long as the
			 * worker, and the result tables SPI keeps in it until then would
			 * pile up at every round of a follow that does not end.
			 */
			backfill_spi_enter();
			job = backfill_load_job(job_id, cxt);
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
				/*
				 * In a worker, a sharded job follows the servers that answer,
				 * and one that does not is asked again at the next round, not
				 * at once.
				 */
				done = fetch_once(rj, true, IsBackgroundWorker && rj->sharded) ||
					(IsBackgroundWorker && ++fetches >= BACKFILL_REMOTE_FOLLOW_FETCHES);
				apply_changes(rj, -1);
				SPI_freeplan(rj->apply_plan);
				SPI_freeplan(rj->insert_plan);
				backfill_unpin_search_path(guc_level);
				backfill_role_leave(&rc);
			}
			backfill_spi_leave();
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

/*
 * kind.h: drop_objects: the slot and the publication on the source, once
 * the transaction has committed (replication.c): dropped before, a rollback
 * of the caller (a cutover, drop_job) would leave the job without the
 * changes only its slot held
 */
static void
remote_drop_objects(int64 job_id)
{
	Oid			upstream = backfill_job_upstream(job_id);
	Oid			owner = backfill_job_owner(job_id);
	char	   *name = remote_object_name(job_id, false);
	List	   *servers = NIL;
	ListCell   *lc;

	if (!OidIsValid(upstream))
		return;
	foreach(lc, backfill_remote_leaves(upstream))
	{
		RemoteTable table;
		MemoryContext cxt = CurrentMemoryContext;

		backfill_remote_table(lfirst_oid(lc), &table);
		if (list_member_oid(servers, table.serverid))
			continue;
		servers = lappend_oid(servers, table.serverid);
		PG_TRY();
		{
			RemoteConn *conn = backfill_remote_connect(table.serverid, owner,
													   psprintf("backfill job %lld", (long long) job_id));

			backfill_remote_drop_slot_at_commit(conn, name);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/* a source that is down keeps them until a later fetch sweeps them */
			if (geterrcode() != ERRCODE_CONNECTION_FAILURE)
				PG_RE_THROW();
			MemoryContextSwitchTo(cxt);
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
}

static void
remote_recount_actors(int64 job_id, const char *state_sql pg_attribute_unused())
{
	backfill_actor_rows_reset(job_id);
}

/*
 * job_state's rows: one per split, its id for a vnode, its range of the
 * first key column for a position, its low and high offsets for cdc_offset;
 * actor a of p reads splits a*n/p .. (a+1)*n/p - 1, as remote_job.c gives
 * them out.  The position inside a split is in memory only.
 */
static char *
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
static List *
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

/* its slot on each source, which it keeps after its finish until it is cancelled */
static char *
remote_slot_name(int64 job_id, BackfillJobStatus status)
{
	if (status == BACKFILL_STATUS_CANCELLED)
		return NULL;
	return remote_object_name(job_id, false);
}

/*
 * kind.h: verify_source, and what it reads.  The keys of splits not
 * finished yet are not compared, on either side (a split's position lives
 * in its actor's memory); the keys of changes the job fetched and has not
 * applied (its change table) and of those the source committed that it has
 * not fetched (its slot, read after the source's snapshot was taken) are
 * pending, also after the finish, since the job follows its source
 * asynchronously.
 */

/*
 * The keys of the finished splits: [bound split_id - 1, bound split_id),
 * compared through the key type's btree operators, as the splits were cut
 * (an hstore key has no >= of that name), and, over several servers, in
 * the split's partition: its partition constraint, on the key's columns,
 * which hold the partition keys (a NULL bound is the partition's start or
 * end).  The splits of the partitions are read as the caller sees them.
 */
static char *
remote_verify_covered(const VerifyJob *job)
{
	char	   *first = (char *) quote_identifier(job->pk_names[0]);
	char	   *bounds = quote_literal_cstr(job->splits ? job->splits : "{}");
	char	   *part_cases = "";

	if (job->partitions != NIL)
	{
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(job->job_id)};
		bool		isnull;
		Datum		d;

		backfill_spi_exec_args("SELECT pg_catalog.format(' AND CASE s.split_id %s END', "
							   "  pg_catalog.string_agg(pg_catalog.format('WHEN %s THEN (%s)', p.split_id, "
							   "    pg_catalog.pg_get_partition_constraintdef(p.partition)), "
							   "    ' ' ORDER BY p.split_id)) "
							   "  FROM backfill.job_splits($1) p",
							   1, types, values, NULL, SPI_OK_SELECT);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		part_cases = isnull ? "" : TextDatumGetCString(d);
	}
	return psprintf("EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished "
					"AND ((%2$s::text[])[s.split_id] IS NULL OR EXISTS (SELECT FROM "
					"(SELECT ((%2$s::text[])[s.split_id])::%4$s AS %3$s) b WHERE %5$s)) "
					"AND ((%2$s::text[])[s.split_id + 1] IS NULL OR EXISTS (SELECT FROM "
					"(SELECT ((%2$s::text[])[s.split_id + 1])::%4$s AS %3$s) b WHERE %6$s))%7$s)",
					job->state_sql, bounds, first, job->pk_types_sql[0],
					backfill_key_compare_columns(job->upstream, 1, job->pk_names, "u",
												 BTGreaterEqualStrategyNumber, "b"),
					backfill_key_compare_columns(job->upstream, 1, job->pk_names, "u",
												 BTLessStrategyNumber, "b"),
					part_cases);
}

/*
 * The source's snapshot, before the comparison reads the slot: postgres_fdw
 * takes it per server at a first read of each foreign table as the job's
 * owner, whose user mappings the comparison uses (a LIMIT over the
 * partitioned table would read its first partition only).
 */
static void
remote_verify_first_reads(const VerifyJob *job)
{
	List	   *tables = job->partitions != NIL ? job->partitions :
		list_make1_oid(job->upstream);
	StringInfoData sql;
	ListCell   *lc;
	RoleContext oc;

	initStringInfo(&sql);
	foreach(lc, tables)
		appendStringInfo(&sql, "%s(SELECT NULL::text, NULL::text FROM %s LIMIT 1)",
						 foreach_current_index(lc) > 0 ? " UNION ALL " : "",
						 backfill_regclass_text(lfirst_oid(lc)));
	backfill_owner_enter(job->owner, true, &oc);
	backfill_spi_exec(sql.data, SPI_OK_SELECT);
	backfill_role_leave(&oc);
}

static void
remote_verify_source(const VerifyJob *job, VerifySource *source)
{
	StringInfoData key_types;

	initStringInfo(&key_types);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&key_types, "%sp.k[%d]::%s", k > 0 ? ", " : "", k + 1,
						 job->pk_types_sql[k]);
	if (!job->finished)
	{
		source->covered = remote_verify_covered(job);
		source->scan_d = psprintf("(SELECT u.* FROM %s u WHERE %s)",
								  job->downstream_sql, source->covered);
	}
	/* no fetch from here on: the source's snapshot, then what its slot holds */
	backfill_lock_slot_of(job->job_id);
	remote_verify_first_reads(job);
	/* from the offset the comparison's snapshot sees; over several servers each reads its own */
	source->decoded = psprintf("SELECT ROW(%s) AS k FROM backfill._unfetched_keys(%lld, "
							   "(SELECT CASE WHEN j.remote_partitions IS NULL THEN j.remote_lsn "
							   "ELSE '0/0'::pg_lsn END FROM backfill.job j WHERE j.job_id = %lld)) p(k)",
							   key_types.data, (long long) job->job_id, (long long) job->job_id);
	source->settled = backfill_verify_settled_sql(job);
}

const KindRoutine backfill_remote_cdc_routine = {
	.kind = BACKFILL_KIND_REMOTE_CDC,
	.reserved_columns = remote_reserved_columns,
	.capture = CAPTURE_STREAM,
	.recount_total = false,
	.needs_job_column = "remote_splits",
	.needs_version = "1.2",
	.cuts_splits = true,
	.builds_indexes_once = true,
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
	.verify_source = remote_verify_source,
	.state_query = remote_state_query,
	.splits = remote_splits,
	.slot_name = remote_slot_name,
};
