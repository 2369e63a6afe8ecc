/*-------------------------------------------------------------------------
 *
 * index_build.c
 *	  A downstream's indexes: the upstream's other indexes given to it at
 *	  create_job (create_job's "indexes"), and the indexes a job builds once,
 *	  after its snapshot, instead of maintaining them row by row.
 *
 * Copying an index row by row costs a search of the index and a WAL record
 * per row and per index; building it once costs a sort (in
 * maintenance_work_mem, by parallel workers where PostgreSQL plans them:
 * max_parallel_maintenance_workers) and writes it sequentially.  That is
 * what pg_repack and pgcopydb do, and why CREATE TABLE AS followed by ADD
 * PRIMARY KEY beats an INSERT into a keyed table.  A job may do the same
 * when nothing needs the downstream's indexes while it copies, which is a
 * property of its kind (kind.h: builds_indexes_once; doc/indexes.md argues
 * it for each):
 *
 *	- the snapshot kind writes, until every vnode has finished its snapshot,
 *	  only its chunks' rows: plain inserts of keys that are all different
 *	  (each vnode's rows in key order from its position, which commits with
 *	  them), of a snapshot that no change reaches (they go to the log).  No
 *	  statement looks a key up downstream before the log store, which
 *	  deletes and upserts by key;
 *	- the cdc kind on a foreign table (kinds/remote/kind_remote.c) COPYs each
 *	  split's rows from the source; while its downstream waits for its
 *	  indexes it applies no change (they wait in its change table, in commit
 *	  order, until the final barrier), and a split deletes its range only
 *	  when it is read again after a crash;
 *	- the other kinds forward changes to the rows already copied from the
 *	  first barrier on (a delete and an upsert by key, or the apply trigger's
 *	  ON CONFLICT), so they need the key's index throughout; they keep their
 *	  indexes.
 *
 * At create_job (backfill_create_indexes), with "indexes", the upstream's
 * valid indexes other than its primary key are created on the new
 * downstream, each whose columns, expressions and predicate read only
 * columns the job copies under their own names (the rest draw a NOTICE),
 * with the name PostgreSQL derives from the downstream's (CREATE INDEX
 * without a name).  An index whose expressions or predicate call a
 * function of a role that the job's owner, who owns the downstream, does
 * not trust with its rights is refused (check_index_functions).  A job
 * that copies a whole table ("indexes" NULL, its default) gets more: what
 * the upstream refuses, the downstream that is to replace it refuses too
 * (copy_upstream_constraints): the upstream's NOT NULL columns, and its
 * valid CHECK, UNIQUE and EXCLUDE constraints, their functions checked as
 * an index's are (its generated columns, partitioning and foreign keys:
 * migration.c).  The table is empty, so adding them costs nothing; the
 * copy then checks each row as INSERT does (sink.c), and a UNIQUE or
 * EXCLUDE constraint's index is built once like the others.  Then, for
 * a kind that builds once, every index of the downstream (the key's
 * included) is written down in backfill.job_index as
 * the statement that makes it again (ALTER TABLE ... ADD CONSTRAINT for a
 * constraint's, else the index's definition), its name kept, and dropped:
 * the table is empty, so that costs nothing.  A table of the user's
 * (into_existing, which is empty: downstream.c) keeps its indexes; they are
 * built once too when the job's owner owns it and none of them is needed as
 * it is: an index a foreign key references, the replica identity's, the
 * clustered one, one in a tablespace of its own or not valid stays, and the
 * table keeps all of them when it is partitioned or has children.  The
 * definitions are deparsed under the pinned search_path, so every name in
 * them is qualified; the downstream's own name is spliced in when they run,
 * as a job reads its tables' names afresh at each run.
 *
 * The remote kind builds them in its final barrier (one process runs it).
 * After the snapshot (backfill_indexes_built, from the kind's log store
 * barrier, kind_snapshot.c), the snapshot kind's first actor builds them,
 * in order, in its barrier's transaction, then deletes their rows; every
 * other actor waits, barrier after barrier, until it sees none, and only
 * then applies its log.
 * One builder, so no two builds race, and since the rows go in the same
 * commit as the indexes, a crash or a kill during the build rolls both back
 * and the restarted job builds again from the committed snapshot: nothing
 * is copied again.  CREATE INDEX and ADD CONSTRAINT run the index's
 * functions as the table's owner, in a security-restricted operation, as
 * always.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "optimizer/optimizer.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/index_rows.h"
#include "copy/index_build.h"
#include "lib/lib.h"

/* one index to build: head || the downstream's name || tail */

/* a relation's name as pg_get_indexdef prints it */
static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * The part of an index's definition (pg_get_indexdef) after its table's
 * name, " USING method (...) ...", or NULL when it does not read as
 * expected.  *unique is set from the index.
 */
static char *
index_def_tail(Oid indexoid, Oid relid, bool *unique)
{
	char	   *def = TextDatumGetCString(DirectFunctionCall1(pg_get_indexdef,
															  ObjectIdGetDatum(indexoid)));
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	const char *const only[] = {"", "ONLY "};

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	*unique = ((Form_pg_index) GETSTRUCT(tup))->indisunique;
	ReleaseSysCache(tup);
	for (int i = 0; i < lengthof(only); i++)
	{
		char	   *head = psprintf("CREATE %sINDEX %s ON %s%s", *unique ? "UNIQUE " : "",
									quote_identifier(get_rel_name(indexoid)), only[i],
									qualified_name(relid));

		if (strncmp(def, head, strlen(head)) == 0 &&
			strncmp(def + strlen(head), " USING ", 7) == 0)
			return def + strlen(head);
	}
	return NULL;
}

/*
 * The first column of an upstream's index that the downstream does not
 * have as a copy of the same column under the same name, or NULL when it
 * has them all: its key columns, and those its expressions and predicate
 * read.
 */
static const char *
unmapped_column(Relation upstream, Form_pg_index index, HeapTuple tup, const JobShape *shape)
{
	Bitmapset  *attrs = NULL;
	int			x = -1;
	const int	fields[] = {Anum_pg_index_indexprs, Anum_pg_index_indpred};

	for (int i = 0; i < index->indnatts; i++)
		if (index->indkey.values[i] != 0)
			attrs = bms_add_member(attrs, index->indkey.values[i] -
								   FirstLowInvalidHeapAttributeNumber);
	for (int f = 0; f < lengthof(fields); f++)
	{
		bool		isnull;
		Datum		d = SysCacheGetAttr(INDEXRELID, tup, fields[f], &isnull);

		if (!isnull)
			pull_varattnos(stringToNode(TextDatumGetCString(d)), 1, &attrs);
	}
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	att = x + FirstLowInvalidHeapAttributeNumber;
		const char *name;
		bool		found = false;

		if (att <= 0)
			return "a system column";
		name = get_attname(RelationGetRelid(upstream), att, false);
		for (int c = 0; c < shape->ncols && !found; c++)
			found = shape->cols[c].expr == NULL && shape->cols[c].attnum == att &&
				strcmp(shape->cols[c].name, name) == 0;
		if (!found)
			return psprintf("column \"%s\"", name);
	}
	return NULL;
}

/*
 * Whether code of a function owned by role "owner" may run with the rights
 * of role "runner": a superuser's (PostgreSQL's own functions are the
 * bootstrap superuser's), the runner's own, or that of a role that has the
 * runner's privileges already, which gains nothing by it.
 */
static bool
function_owner_trusted(Oid owner, Oid runner)
{
	return superuser_arg(owner) || owner == runner || has_privs_of_role(owner, runner);
}

/*
 * The first function an index or a constraint (classid, objid) calls, in
 * its expressions or its predicate, directly or as an operator's code,
 * whose owner's code must not run with the rights of role runner
 * (function_owner_trusted), its owner into *owner; InvalidOid when there
 * is none.  For migration.c's generated columns and partition keys too.  Read from the object's dependencies, which CREATE INDEX and
 * ADD CONSTRAINT record for every function and operator they call.
 */
Oid
backfill_untrusted_function(Oid classid, Oid objid, Oid runner, Oid *owner)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			result = InvalidOid;

	ScanKeyInit(&keys[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(classid));
	ScanKeyInit(&keys[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(objid));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, keys);
	while (!OidIsValid(result) && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);
		Oid			func = InvalidOid;
		HeapTuple	proc;

		if (dep->refclassid == ProcedureRelationId)
			func = dep->refobjid;
		else if (dep->refclassid == OperatorRelationId)
			func = get_opcode(dep->refobjid);
		if (!OidIsValid(func))
			continue;
		proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(func));
		if (!HeapTupleIsValid(proc))
			elog(ERROR, "cache lookup failed for function %u", func);
		*owner = ((Form_pg_proc) GETSTRUCT(proc))->proowner;
		if (!function_owner_trusted(*owner, runner))
			result = func;
		ReleaseSysCache(proc);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return result;
}

/*
 * Refuse an index of the upstream whose functions the downstream's owner
 * (the current user, the job's owner) must not run.  A copied index runs
 * its expressions and predicate as the owner of its table, at its build and
 * at every insert and update: a table owner's function in an index of a
 * superuser's copy would run as the superuser.  Refused rather than left
 * out: the downstream is to stand in for the upstream, and a unique index
 * left out would let it hold rows the upstream refuses.
 */
static void
check_index_functions(Relation upstream, Oid indexoid)
{
	Oid			runner = GetUserId();
	Oid			owner;
	Oid			func = backfill_untrusted_function(RelationRelationId, indexoid, runner, &owner);

	if (!OidIsValid(func))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot give index \"%s\" of table \"%s\" to the downstream",
					get_rel_name(indexoid), RelationGetRelationName(upstream)),
			 errdetail("The index calls function %s of role \"%s\", which would run with the rights of role \"%s\", the owner of the downstream.",
					   format_procedure(func),
					   GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) : "?",
					   GetUserNameFromId(runner, false)),
			 errhint("Pass indexes => false and create the indexes the downstream needs once their functions are reviewed, or create the job as a role whose privileges role \"%s\" has.",
					 GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) : "?")));
}

/*
 * Give the new downstream the upstream's valid indexes other than its
 * key (its primary key, or the unique index over NOT NULL columns that
 * backfill_key_index picks, whose columns the downstream's primary key
 * is on), each that reads only columns copied under their own names,
 * named as PostgreSQL names an index of the downstream.
 */
static void
copy_upstream_indexes(Relation upstream, const char *downstream_sql, const JobShape *shape,
					  DownstreamGift gift)
{
	List	   *indexes = RelationGetIndexList(upstream);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		Form_pg_index index;
		const char *missing;
		char	   *tail;
		bool		unique;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", indexoid);
		index = (Form_pg_index) GETSTRUCT(tup);
		if (index->indisprimary || !index->indisvalid || !index->indisready ||
			(gift == GIFT_MIGRATION && OidIsValid(get_index_constraint(indexoid))) ||
			(indexoid == backfill_key_index(upstream) && !OidIsValid(get_index_constraint(indexoid))))
		{
			/*
			 * a constraint's index comes with it (copy_upstream_constraints);
			 * the key's, the downstream's primary key on its columns has
			 */
			ReleaseSysCache(tup);
			continue;
		}
		missing = unmapped_column(upstream, index, tup, shape);
		ReleaseSysCache(tup);
		if (missing != NULL && gift == GIFT_MIGRATION)
			continue;			/* the cutover lists a unique one left out */
		if (missing != NULL)
		{
			ereport(NOTICE,
					(errmsg("index \"%s\" of table \"%s\" is not given to the downstream",
							get_rel_name(indexoid), RelationGetRelationName(upstream)),
					 errdetail("The index reads %s, which the job does not copy under the same name.",
							   missing)));
			continue;
		}
		check_index_functions(upstream, indexoid);
		tail = index_def_tail(indexoid, RelationGetRelid(upstream), &unique);
		if (tail == NULL)
			elog(ERROR, "could not read the definition of index %u", indexoid);
		backfill_spi_exec(psprintf("CREATE %sINDEX ON %s%s", unique ? "UNIQUE " : "",
								   downstream_sql, tail),
						  SPI_OK_UTILITY);
	}
	list_free(indexes);
}

/*
 * Whether the downstream has every column a constraint reads (conkey) as a
 * copy of the upstream's column under the same name.
 */
static bool
constraint_columns_copied(Relation upstream, Form_pg_constraint con, HeapTuple tup,
						  const JobShape *shape)
{
	bool		isnull;
	Datum		conkey = SysCacheGetAttr(CONSTROID, tup, Anum_pg_constraint_conkey, &isnull);
	ArrayType  *arr;
	int16	   *attnums;
	int			n;

	if (isnull)
		return false;			/* a CHECK that reads no column: nothing to pin it to */
	arr = DatumGetArrayTypeP(conkey);
	n = ARR_DIMS(arr)[0];
	attnums = (int16 *) ARR_DATA_PTR(arr);
	for (int i = 0; i < n; i++)
	{
		const char *name;
		bool		found = false;

		if (attnums[i] == 0)
			continue;			/* an index's expression: read below */
		name = get_attname(RelationGetRelid(upstream), attnums[i], false);

		for (int c = 0; c < shape->ncols && !found; c++)
			found = shape->cols[c].expr == NULL && shape->cols[c].attnum == attnums[i] &&
				strcmp(shape->cols[c].name, name) == 0;
		if (!found)
			return false;
	}
	if (OidIsValid(con->conindid))
	{
		HeapTuple	itup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(con->conindid));
		const char *missing;

		if (!HeapTupleIsValid(itup))
			elog(ERROR, "cache lookup failed for index %u", con->conindid);
		missing = unmapped_column(upstream, (Form_pg_index) GETSTRUCT(itup), itup, shape);
		ReleaseSysCache(itup);
		return missing == NULL;
	}
	return true;
}

/*
 * Refuse a constraint of the upstream whose functions the downstream's
 * owner (the current user) must not run, as check_index_functions does an
 * index: a CHECK runs as whoever writes the table, and an exclusion
 * constraint's operators and a unique constraint's index expressions as
 * its owner at every write.
 */
static void
check_constraint_functions(Relation upstream, Oid conoid, Oid indexoid)
{
	Oid			runner = GetUserId();
	Oid			owner = InvalidOid;
	Oid			func = backfill_untrusted_function(ConstraintRelationId, conoid, runner, &owner);

	if (!OidIsValid(func) && OidIsValid(indexoid))
		func = backfill_untrusted_function(RelationRelationId, indexoid, runner, &owner);
	if (!OidIsValid(func))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot give constraint \"%s\" of table \"%s\" to the downstream",
					get_constraint_name(conoid), RelationGetRelationName(upstream)),
			 errdetail("The constraint calls function %s of role \"%s\", which would run with the rights of role \"%s\", the owner of the downstream, or of its writers.",
					   format_procedure(func),
					   GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) : "?",
					   GetUserNameFromId(runner, false)),
			 errhint("Pass indexes => false and add the constraints the downstream needs once their functions are reviewed, or create the job as a role whose privileges role \"%s\" has.",
					 GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) : "?")));
}

/*
 * Give the new, empty downstream the upstream's NOT NULL columns and its
 * valid CHECK, UNIQUE and EXCLUDE constraints, each that reads only
 * columns copied under their own names: a migration's downstream is to
 * refuse what the table it replaces refuses.  CHECK keeps its name (a
 * table's own); a UNIQUE or EXCLUDE constraint is named as PostgreSQL
 * names one of the downstream's, its index's name being the schema's.  A
 * NOT VALID constraint is left out: the upstream may hold rows it would
 * refuse.  Foreign keys are left out: checked row by row against the
 * referenced table while the copy is of an older snapshot, they could
 * refuse a row the upstream holds; they come once the job follows, and
 * the generated columns and partitions with the table (migration.c).
 */
static void
copy_upstream_constraints(Relation upstream, const char *downstream_sql, const JobShape *shape)
{
	TupleDesc	desc = RelationGetDescr(upstream);
	StringInfoData notnull;
	Relation	conrel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *ddl = NIL;
	ListCell   *lc;

	initStringInfo(&notnull);
	for (int c = 0; c < shape->ncols; c++)
	{
		const ShapeColumn *col = &shape->cols[c];

		if (col->expr == NULL && col->attnum > 0 &&
			TupleDescAttr(desc, col->attnum - 1)->attnotnull)
			appendStringInfo(&notnull, "%sALTER COLUMN %s SET NOT NULL",
							 notnull.len > 0 ? ", " : "", quote_identifier(col->name));
	}
	if (notnull.len > 0)
		ddl = lappend(ddl, psprintf("ALTER TABLE %s %s", downstream_sql, notnull.data));

	conrel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationGetRelid(upstream)));
	scan = systable_beginscan(conrel, ConstraintRelidTypidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
		char	   *def;

		if ((con->contype != CONSTRAINT_CHECK && con->contype != CONSTRAINT_UNIQUE &&
			 con->contype != CONSTRAINT_EXCLUSION) ||
			!con->convalidated || !constraint_columns_copied(upstream, con, tup, shape))
			continue;
		check_constraint_functions(upstream, con->oid, con->conindid);
		def = TextDatumGetCString(DirectFunctionCall1(pg_get_constraintdef,
													  ObjectIdGetDatum(con->oid)));
		if (con->contype == CONSTRAINT_CHECK)
			ddl = lappend(ddl, psprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", downstream_sql,
										quote_identifier(NameStr(con->conname)), def));
		else
			ddl = lappend(ddl, psprintf("ALTER TABLE %s ADD %s", downstream_sql, def));
	}
	systable_endscan(scan);
	table_close(conrel, AccessShareLock);

	foreach(lc, ddl)
		backfill_spi_exec(lfirst(lc), SPI_OK_UTILITY);
}

/* whether a foreign key references an index */
static bool
referenced_by_foreign_key(Oid indexoid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(indexoid)};
	bool		found;

	backfill_spi_exec_args("SELECT FROM pg_catalog.pg_constraint "
						   "WHERE contype OPERATOR(pg_catalog.=) 'f' "
						   "AND conindid OPERATOR(pg_catalog.=) $1 LIMIT 1",
						   1, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * Whether an index of the downstream can be dropped now and built again
 * after the snapshot with nothing lost but its comment.
 */
static bool
index_can_wait(Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	Form_pg_index index;
	bool		ok;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	index = (Form_pg_index) GETSTRUCT(tup);
	ok = index->indisvalid && index->indisready && !index->indisreplident &&
		!index->indisclustered && !OidIsValid(get_rel_tablespace(indexoid));
	ReleaseSysCache(tup);
	return ok && !referenced_by_foreign_key(indexoid);
}

/*
 * Write down one index of the downstream at position, then drop it: as a
 * constraint when it is a constraint's, else as an index.
 */
static void
defer_index(int64 job_id, int position, Oid relid, const char *downstream_sql, Oid indexoid)
{
	Oid			conoid = get_index_constraint(indexoid);
	char	   *name = get_rel_name(indexoid);
	const char *head;
	char	   *tail;
	char	   *drop;

	if (OidIsValid(conoid))
	{
		char	   *conname = get_constraint_name(conoid);

		head = "ALTER TABLE ";
		tail = psprintf(" ADD CONSTRAINT %s %s", quote_identifier(conname),
						TextDatumGetCString(DirectFunctionCall1(pg_get_constraintdef,
																ObjectIdGetDatum(conoid))));
		drop = psprintf("ALTER TABLE %s DROP CONSTRAINT %s", downstream_sql,
						quote_identifier(conname));
	}
	else
	{
		bool		unique;

		tail = index_def_tail(indexoid, relid, &unique);
		if (tail == NULL)
			elog(ERROR, "could not read the definition of index %u", indexoid);
		head = psprintf("CREATE %sINDEX %s ON ", unique ? "UNIQUE " : "", quote_identifier(name));
		drop = psprintf("DROP INDEX %s", qualified_name(indexoid));
	}

	backfill_record_pending_index(job_id, position, name, head, tail);
	backfill_spi_exec(drop, SPI_OK_UTILITY);
}

/*
 * Drop the downstream's indexes that can wait, writing each down to be
 * built after the snapshot: the primary key's first, then the others in
 * the order they were made.
 */
static void
defer_indexes(int64 job_id, const char *downstream_sql, bool into_existing)
{
	Oid			relid = DatumGetObjectId(DirectFunctionCall1(regclassin,
															 CStringGetDatum(downstream_sql)));
	Relation	rel;
	List	   *indexes;
	Oid			pkey;
	ListCell   *lc;
	int			position = 0;

	/* a table of the user's: only its owner's, and only a plain one */
	if (into_existing &&
		(get_rel_relkind(relid) != RELKIND_RELATION || !pg_class_ownercheck(relid, GetUserId())))
		return;
	/* dropping an index takes this lock anyway: take it before looking */
	rel = table_open(relid, AccessExclusiveLock);
	if (into_existing && rel->rd_rel->relhassubclass)
	{
		table_close(rel, NoLock);
		return;
	}
	indexes = RelationGetIndexList(rel);
	pkey = RelationGetPrimaryKeyIndex(rel);
	table_close(rel, NoLock);

	if (OidIsValid(pkey) && index_can_wait(pkey))
		defer_index(job_id, position++, relid, downstream_sql, pkey);
	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);

		if (indexoid != pkey && index_can_wait(indexoid))
			defer_index(job_id, position++, relid, downstream_sql, indexoid);
	}
	list_free(indexes);
}

/*
 * backfill_create_indexes
 *		At create_job, after the downstream (downstream_sql) and the job's
 *		catalog row exist: with gift GIFT_INDEXES, give the new downstream
 *		the upstream's other indexes; with GIFT_MIGRATION, its NOT NULL
 *		columns and constraints too; with build_once (the job's kind builds
 *		them after its snapshot), drop the downstream's indexes that can
 *		wait, written down in backfill.job_index.  As the caller, under the
 *		pinned search_path, connected to SPI.
 */
void
backfill_create_indexes(int64 job_id, Relation upstream, const char *downstream_sql,
						const JobShape *shape, DownstreamGift gift, bool build_once,
						bool into_existing)
{
	if (gift == GIFT_INDEXES || gift == GIFT_MIGRATION)
	{

		if (into_existing)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("indexes cannot be given to a downstream of the user's"),
					 errdetail("A job with into_existing fills a table the user made, which keeps its own indexes."),
					 errhint("Create the indexes the table needs on it, or pass indexes => false.")));
		if (gift == GIFT_MIGRATION)
			copy_upstream_constraints(upstream, downstream_sql, shape);
		copy_upstream_indexes(upstream, downstream_sql, shape, gift);
		if (gift == GIFT_INDEXES)
			backfill_mark_job_indexes(job_id);
	}
	if (gift == GIFT_MIGRATION || gift == GIFT_DEFAULT_NONE)
		backfill_mark_job_indexes_default(job_id);
	if (build_once && backfill_job_catalog_has("indexes"))
		defer_indexes(job_id, downstream_sql, into_existing);
}

/*
 * The lines of an index build (lib/lines.c), one before and one after each
 * index.  CREATE INDEX runs in this backend, through SPI, and PostgreSQL
 * gives an extension no call while it builds (the sort and the scan only
 * update pg_stat_progress_create_index, which another session reads); so
 * the run says which index it builds, of how many, and how big the table
 * is before, in the words of pg_stat_progress_create_index (its phase, its
 * blocks and tuples), and what it built, in how long, after.
 */
static TimestampTz
build_line_before(BackfillJob *job, PendingIndex *index, int i, int n)
{
	Relation	rel;
	BlockNumber blocks;
	float4		tuples;

	if (!backfill_lines_on())
		return 0;
	rel = table_open(job->downstream, AccessShareLock);
	blocks = RelationGetNumberOfBlocks(rel);
	tuples = rel->rd_rel->reltuples;
	table_close(rel, AccessShareLock);
	backfill_line("building index \"%s\" (%d of %d) of %s: building index: scanning table, "
				  "blocks 0/%u, tuples %s",
				  index->name, i + 1, n, job->downstream_sql, blocks,
				  tuples >= 0 ? psprintf("0/%.0f", tuples) : "unknown");
	return GetCurrentTimestamp();
}

static void
build_line_after(BackfillJob *job, PendingIndex *index, int i, int n, TimestampTz started_at)
{
	Oid			indexoid;
	Relation	rel;
	BlockNumber blocks;
	BlockNumber index_blocks;
	float4		tuples;

	if (!backfill_lines_on())
		return;
	indexoid = get_relname_relid(index->name, get_rel_namespace(job->downstream));
	rel = table_open(job->downstream, AccessShareLock);
	blocks = RelationGetNumberOfBlocks(rel);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(indexoid))
		return;
	rel = index_open(indexoid, AccessShareLock);
	index_blocks = RelationGetNumberOfBlocks(rel);
	tuples = rel->rd_rel->reltuples;
	index_close(rel, AccessShareLock);
	backfill_line("built index \"%s\" (%d of %d) of %s in %.1f s: blocks %u/%u, tuples %.0f, "
				  "index size %s",
				  index->name, i + 1, n, job->downstream_sql,
				  (GetCurrentTimestamp() - started_at) / 1000000.0,
				  blocks, blocks, Max(tuples, 0),
				  text_to_cstring(DatumGetTextPP(DirectFunctionCall1(pg_size_pretty,
																	 Int64GetDatum((int64) index_blocks * BLCKSZ)))));
}

/*
 * backfill_indexes_built
 *		Whether the job's downstream has every index it is to build after
 *		its snapshot.  With build, the caller builds those it has not, in
 *		its transaction; without, it only looks.  Called as the job's owner,
 *		under the job's search_path, connected to SPI, once every vnode has
 *		finished its snapshot.
 */
bool
backfill_indexes_built(BackfillJob *job, bool build)
{
	PendingIndex *pending;
	int			npending;
	TimestampTz start;
	long		secs;
	int			usecs;

	if (!backfill_job_catalog_has("indexes"))
		return true;
	npending = backfill_pending_indexes(job->job_id, &pending);
	if (npending == 0 || !build)
		return npending == 0;

	start = GetCurrentTimestamp();
	for (int i = 0; i < npending; i++)
	{
		TimestampTz index_start;

		CHECK_FOR_INTERRUPTS();
		elog(DEBUG1, "backfill job %lld builds index \"%s\" of %s",
			 (long long) job->job_id, pending[i].name, job->downstream_sql);
		index_start = build_line_before(job, &pending[i], i, npending);
		backfill_spi_exec(psprintf("%s%s%s", pending[i].head, job->downstream_sql,
								   pending[i].tail),
						  SPI_OK_UTILITY);
		build_line_after(job, &pending[i], i, npending, index_start);
	}
	backfill_forget_pending_indexes(job->job_id);
	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	ereport(LOG,
			(errmsg("backfill job %lld built %d indexes of %s in %ld ms",
					(long long) job->job_id, npending, job->downstream_sql,
					secs * 1000 + usecs / 1000)));
	return true;
}
