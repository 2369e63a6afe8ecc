/*-------------------------------------------------------------------------
 *
 * create.c
 *	  The remote cdc kind's part of create_job: the source's key, what a
 *	  source must offer, the state and change tables, and the splits.
 *
 * The key is the source table's primary key, read on its server; a sharded
 * upstream's partitions must agree on it and partition by columns of it
 * (kind_remote.c says why).  The splits are cut from each source's
 * statistics as the job's owner (remote/splits.c) and recorded in
 * backfill.job (catalog/remote_rows.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"

#include "catalog/remote_rows.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"
#include "remote/remote.h"

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
int
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
void
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
void
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
void
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
void
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
