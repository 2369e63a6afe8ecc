/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  DDL on the tables of a job: what is refused, and why.
 *
 * A job reads its upstream's key and output columns by name and type, for
 * as long as it exists: while it backfills, and once finished through the
 * apply trigger.  Its downstream, state and change tables are its own.  So
 * an event trigger, backfill._on_ddl(), refuses, while a job that is not
 * cancelled exists:
 *
 *	- dropping its upstream, downstream, state or change table (sql_drop,
 *	  DROP TABLE and DROP SCHEMA ... CASCADE alike);
 *	- dropping a column of the upstream the job reads (the key, the columns
 *	  it copies, those its computed columns and filter use), or of the
 *	  downstream (sql_drop);
 *	- renaming such a column, retyping a copied one, or a column a computed
 *	  column reads so that its type would change, or changing the upstream's
 *	  primary key (ddl_command_end of ALTER TABLE).  The computed columns and
 *	  the filter are analyzed again against the altered table (shape.c), so
 *	  a change that leaves them meaningless is refused with the parser's
 *	  error;
 *	- renaming a value of an enum its key contains, until it has finished,
 *	  when its range vnodes' bounds hold keys as text (ddl_command_start of
 *	  ALTER TYPE; see check_enum_rename).
 *
 *	- disabling or dropping the job's triggers on its upstream or a
 *	  partition of it (ddl_command_start of ALTER TABLE ... DISABLE TRIGGER
 *	  ALL or USER, or ENABLE/DISABLE [REPLICA | ALWAYS] TRIGGER naming one;
 *	  sql_drop of DROP TRIGGER), whoever owns the upstream: the writes they
 *	  would miss would never reach the downstream.  ENABLE TRIGGER ALL is
 *	  let through, as a data-only restore ends with it; every run puts the
 *	  job's triggers back as its status says (capture.c);
 *	- an unlogged table under the upstream of a cdc job that has not
 *	  finished (ddl_command_end of ALTER TABLE ... SET UNLOGGED, and of a
 *	  partition attached or created): its changes would never reach the
 *	  write-ahead log the job reads.
 *
 *	- dropping the policy that records a job's owner (sql_drop of DROP
 *	  POLICY; catalog.c).
 *
 * The error rolls the command back, so nothing is left half-done: no
 * orphaned trigger, slot or state table.
 *
 * A job's owner is a role's object, as its tables are.  DROP ROLE sees it
 * through the policy on its state table (catalog.c), which REASSIGN OWNED
 * leaves alone, so the role cannot be dropped while it owns a job.  The two
 * commands that empty a role handle jobs as they handle tables:
 * REASSIGN OWNED gives the job to the role that got its state table
 * (backfill_reassign_owned, from the utility hook, since REASSIGN OWNED
 * fires no event trigger: in a backend that has not loaded the library,
 * the next DROP OWNED does it), and DROP OWNED, at ddl_command_start, does
 * the same for a job REASSIGN OWNED left behind, then drops the role's
 * other jobs with drop_job, as the caller, before it drops their tables.
 *
 * The partitions of a partitioned upstream come and go (capture.c does the
 * work, in the DDL's own transaction, so that their rows join or leave the
 * downstream exactly once): CREATE TABLE ... PARTITION OF and ATTACH
 * PARTITION (ddl_command_end) bring theirs, DETACH PARTITION takes them
 * away.  Refused: DETACH PARTITION ... CONCURRENTLY (ddl_command_start,
 * before its first transaction), whose two transactions leave no moment at
 * which the rows could leave; dropping a partition (sql_drop, told by the
 * clones of the job's row triggers dropped with it), whose rows could then
 * never leave.  Adding a column, renaming or
 * moving a table, and building an index disturb nothing, since a job holds
 * its tables by OID and reads their names afresh at each run.
 *
 * The checks read every job, whoever runs the DDL, so they run as the
 * extension's owner; they only ever raise errors.  cancel_job and drop_job
 * take the job out of the catalog before they drop its tables.
 *
 * A restore runs only the checks of columns (and lets the triggers be
 * disabled, enabled and dropped: pg_restore --disable-triggers, --clean).  pg_dump's scripts and
 * pg_restore set check_function_bodies = off, as they restore objects before
 * what they depend on; here, the jobs' rows are loaded with the data, and
 * only then are the tables' constraints added, the upstream's primary key
 * among them and not necessarily first (the downstream's, or another unique
 * constraint of the upstream, may come before it); pg_restore --clean drops
 * the tables before the extension.  Every run, and the capture trigger,
 * check the key again (check_key_unchanged, check_change_table).  A restore
 * never drops, renames or retypes a column, though.  And any session may
 * set check_function_bodies = off, but only a role with the privileges of
 * the extension's owner may write the catalogs, as restoring the jobs' rows
 * does: for any other role, nothing is skipped.
 *
 * May call: capture.c, shape.c, catalog.c, privilege.c and the foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "utils/array.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "lib.h"
#include "catalog_access.h"
#include "copy.h"
#include "capture.h"
#include "ddl.h"

PG_FUNCTION_INFO_V1(backfill_on_ddl);

/*
 * The jobs that are not cancelled, and what they hold: the tables, then the
 * columns, the key, the upstream columns read, the computed columns'
 * expressions, the filter and whether the downstream is a table the user
 * made (a catalog older than 1.2 has no such thing:
 * the columns it copies are all it reads).  condition, if not "", restricts
 * them further ("AND ...").
 */
static char *
jobs_holding_sql(const char *condition)
{
	return psprintf("SELECT j.job_id, j.upstream::pg_catalog.oid, j.downstream::pg_catalog.oid, "
					"       j.state_table::pg_catalog.oid, j.change_table::pg_catalog.oid, "
					"       j.columns, j.pk_columns, %s "
					"  FROM backfill.job j WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled'%s "
					" ORDER BY j.job_id",
					backfill_job_catalog_has("source_columns") ?
					"coalesce(j.source_columns, j.columns), j.expressions, j.filter, j.into_existing" :
					"j.columns, NULL::pg_catalog.text[], NULL::pg_catalog.text, false",
					condition);
}

static void
refuse_drop(int64 job_id, const char *what, const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot drop %s because backfill job %lld uses it", name, (long long) job_id),
			 errdetail("It is the %s of backfill job %lld.", what, (long long) job_id),
			 errhint("Drop the job first with backfill.drop_job(%lld), or cancel it with backfill.cancel_job(%lld).",
					 (long long) job_id, (long long) job_id)));
}

/* whether the text array datum holds name */
static bool
array_has(Datum array, const char *name)
{
	Datum	   *elems;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, NULL, &n);
	for (int i = 0; i < n; i++)
		if (strcmp(TextDatumGetCString(elems[i]), name) == 0)
			return true;
	return false;
}

/* sql_drop: the dropped tables and columns; a restore drops tables */
static void
check_drops(bool restoring)
{
	SPITupleTable *dropped;
	uint64		ndropped;

	/* DROP EXTENSION backfill: the catalogs are gone, and so are the jobs */
	if (SPI_execute("SELECT FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type = 'extension' AND object_name = 'backfill'",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	if (SPI_processed > 0 || !OidIsValid(get_extension_oid(BACKFILL_SCHEMA, true)))
		return;

	if (SPI_execute("SELECT objid, object_type, address_names[3], object_identity "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type IN ('table', 'table column')", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	dropped = SPI_tuptable;
	ndropped = SPI_processed;
	if (ndropped == 0)
		return;
	if (SPI_execute(jobs_holding_sql(""), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");

	for (uint64 d = 0; d < ndropped; d++)
	{
		bool		isnull;
		Oid			objid = DatumGetObjectId(SPI_getbinval(dropped->vals[d], dropped->tupdesc, 1, &isnull));
		char	   *type = SPI_getvalue(dropped->vals[d], dropped->tupdesc, 2);
		char	   *column = SPI_getvalue(dropped->vals[d], dropped->tupdesc, 3);
		char	   *identity = SPI_getvalue(dropped->vals[d], dropped->tupdesc, 4);
		bool		is_column = strcmp(type, "table column") == 0;

		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			int64		job_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
			static const char *const roles[] = {NULL, "upstream table", "downstream table",
			"state table", "change table"};

			for (int r = 1; r <= 4; r++)
			{
				Datum		rel = SPI_getbinval(tup, desc, r + 1, &isnull);

				if (isnull || DatumGetObjectId(rel) != objid)
					continue;
				if (!is_column)
				{
					if (!restoring)
						refuse_drop(job_id, roles[r], psprintf("table %s", identity));
					continue;
				}
				/*
				 * A column: of the upstream if read, of the downstream if
				 * filled, of the job's own tables always.
				 */
				if (r > 2 ||
					(r == 2 && array_has(SPI_getbinval(tup, desc, 6, &isnull), column)) ||
					(r == 1 && (array_has(SPI_getbinval(tup, desc, 8, &isnull), column) ||
								array_has(SPI_getbinval(tup, desc, 7, &isnull), column))))
					refuse_drop(job_id, psprintf("column \"%s\" of the %s", column, roles[r]),
								psprintf("column %s", identity));
			}
		}
	}
}

/*
 * Whether a copied column fits the downstream's: the same type, or, in a
 * table the user made, one its values can be assigned to.
 */
static bool
same_column_type(Oid rel1, AttrNumber att1, Oid rel2, AttrNumber att2, bool assignable)
{
	Oid			type1,
				type2,
				coll1,
				coll2;
	int32		typmod1,
				typmod2;

	get_atttypetypmodcoll(rel1, att1, &type1, &typmod1, &coll1);
	get_atttypetypmodcoll(rel2, att2, &type2, &typmod2, &coll2);
	if (assignable)
		return can_coerce_type(1, &type1, &type2, COERCION_ASSIGNMENT);
	return type1 == type2 && typmod1 == typmod2 && coll1 == coll2;
}

static char *
column_type(Oid rel, AttrNumber att)
{
	Oid			type,
				coll;
	int32		typmod;

	get_atttypetypmodcoll(rel, att, &type, &typmod, &coll);
	return format_type_with_typemod(type, typmod);
}

static void
refuse_rename(int64 job_id, Oid relid, const char *col, bool copied)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot rename column \"%s\" of table \"%s\" because backfill job %lld uses it",
					col, get_rel_name(relid), (long long) job_id),
			 errdetail("Backfill job %lld %s the column by its name.", (long long) job_id,
					   copied ? "copies" : "reads"),
			 errhint("Drop the job first with backfill.drop_job(%lld), or cancel it with backfill.cancel_job(%lld).",
					 (long long) job_id, (long long) job_id)));
}

static void
refuse_retype(int64 job_id, Oid relid, const char *col, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot change the type of column \"%s\" of table \"%s\" because backfill job %lld uses it",
					col, get_rel_name(relid), (long long) job_id),
			 errdetail_internal("%s", detail),
			 errhint("Drop the job first with backfill.drop_job(%lld), or cancel it with backfill.cancel_job(%lld).",
					 (long long) job_id, (long long) job_id)));
}

/* the text[] column n of a job's row, or none */
static void
job_array(HeapTuple tup, TupleDesc desc, int n, Datum **elems, bool **nulls, int *nelems)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, n, &isnull);

	*nelems = 0;
	if (!isnull)
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  elems, nulls, nelems);
}

/*
 * A computed column of a job over an altered upstream: its expression,
 * analyzed again, must still give the downstream column's type.
 */
static void
check_computed(int64 job_id, Oid relid, Relation upstream, Oid downstream,
			   const char *col, const char *text, bool assignable)
{
	Node	   *expr = backfill_shape_expression(upstream, text, false, col);
	AttrNumber	down_att = get_attnum(downstream, col);
	Oid			type;
	Oid			coll;
	int32		typmod;
	char	   *detail;

	get_atttypetypmodcoll(downstream, down_att, &type, &typmod, &coll);
	if (exprType(expr) == type && exprTypmod(expr) == typmod)
		return;
	if (assignable)
	{
		Oid			from = exprType(expr);

		if (can_coerce_type(1, &from, &type, COERCION_ASSIGNMENT))
			return;
	}
	detail = psprintf("Backfill job %lld computes column \"%s\", of type %s, as %s, which would now be of type %s.",
					  (long long) job_id, col, format_type_with_typemod(type, typmod),
					  text, format_type_with_typemod(exprType(expr), exprTypmod(expr)));
	if (relid == downstream)
		refuse_retype(job_id, relid, col, detail);
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot alter table \"%s\" because backfill job %lld computes column \"%s\" from it",
					get_rel_name(relid), (long long) job_id, col),
			 errdetail_internal("%s", detail),
			 errhint("Drop the job first with backfill.drop_job(%lld), or cancel it with backfill.cancel_job(%lld).",
					 (long long) job_id, (long long) job_id)));
}

/*
 * One job over an altered table (relid): it must still find the upstream
 * columns it reads, by name, its downstream's columns, of the types it
 * fills them with, its computed columns and filter, and its key.
 */
static void
check_job_after_alter(HeapTuple tup, TupleDesc desc, Oid relid, bool restoring)
{
	bool		isnull;
	int64		job_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	Oid			upstream = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	Oid			downstream = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	char	   *filter = SPI_getvalue(tup, desc, 10);
	bool		into_existing = DatumGetBool(SPI_getbinval(tup, desc, 11, &isnull));
	Datum	   *cols;
	Datum	   *sources;
	Datum	   *exprs = NULL;
	bool	   *expr_nulls = NULL;
	int			ncols;
	int			nsources;
	int			nexprs;
	Relation	rel;

	if (isnull)
		downstream = InvalidOid;
	job_array(tup, desc, 6, &cols, NULL, &ncols);
	job_array(tup, desc, 8, &sources, NULL, &nsources);
	job_array(tup, desc, 9, &exprs, &expr_nulls, &nexprs);

	/* the columns copied, by name, each into a column of its type */
	for (int c = 0; c < ncols; c++)
	{
		char	   *col = TextDatumGetCString(cols[c]);
		bool		computed = c < nexprs && !expr_nulls[c];
		AttrNumber	up_att = computed ? InvalidAttrNumber : get_attnum(upstream, col);
		AttrNumber	down_att = OidIsValid(downstream) ? get_attnum(downstream, col) : InvalidAttrNumber;

		if ((!computed && up_att == InvalidAttrNumber) ||
			(OidIsValid(downstream) && down_att == InvalidAttrNumber))
			refuse_rename(job_id, relid, col, true);
		if (!computed && down_att != InvalidAttrNumber &&
			!same_column_type(upstream, up_att, downstream, down_att, into_existing))
			refuse_retype(job_id, relid, col,
						  psprintf(into_existing ?
								   "Backfill job %lld copies the column, of type %s, into a column of type %s, to which it cannot be assigned." :
								   "Backfill job %lld copies the column, of type %s, into a column of type %s.",
								   (long long) job_id, column_type(upstream, up_att),
								   column_type(downstream, down_att)));
	}
	/* the other columns the computed columns and the filter read */
	for (int c = 0; c < nsources; c++)
		if (get_attnum(upstream, TextDatumGetCString(sources[c])) == InvalidAttrNumber)
			refuse_rename(job_id, relid, TextDatumGetCString(sources[c]), false);
	rel = relation_open(upstream, AccessShareLock);
	for (int c = 0; c < ncols && c < nexprs; c++)
		if (!expr_nulls[c] && OidIsValid(downstream))
			check_computed(job_id, relid, rel, downstream, TextDatumGetCString(cols[c]),
						   TextDatumGetCString(exprs[c]), into_existing);
	if (filter != NULL)
		(void) backfill_shape_expression(rel, filter, true, NULL);
	relation_close(rel, AccessShareLock);
	/*
	 * the key, as every run checks it: its change table has the key it was
	 * made with, whatever its kind (but while a restore adds it)
	 */
	if (!restoring)
	{
		BackfillJob *job = backfill_load_job(job_id, CurrentMemoryContext);

		backfill_check_key_unchanged(job, job->change_table);
	}
}

/*
 * ddl_command_end of ALTER TABLE: every job over an altered upstream or
 * downstream must still find what it reads and writes.
 */
static void
check_alters(bool restoring)
{
	SPITupleTable *altered;
	uint64		naltered;

	if (SPI_execute("SELECT DISTINCT objid FROM pg_catalog.pg_event_trigger_ddl_commands() "
					"WHERE object_type IN ('table', 'table column')", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	altered = SPI_tuptable;
	naltered = SPI_processed;
	for (uint64 a = 0; a < naltered; a++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(altered->vals[a], altered->tupdesc, 1, &isnull));
		Oid			argtypes[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(relid)};
		SPITupleTable *jobs;
		uint64		njobs;

		if (SPI_execute_with_args(jobs_holding_sql(" AND (j.upstream OPERATOR(pg_catalog.=) $1 "
												   "OR j.downstream OPERATOR(pg_catalog.=) $1)"),
								  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read backfill.job");
		jobs = SPI_tuptable;
		njobs = SPI_processed;
		for (uint64 i = 0; i < njobs; i++)
			check_job_after_alter(jobs->vals[i], jobs->tupdesc, relid, restoring);
	}
}

/*
 * The jobs, not cancelled, whose upstream is relid or, when relid is a
 * partition, one of its ancestors: their ids into *ids, their number
 * returned.  condition, if not "", restricts them further ("AND ...").
 */
static int
jobs_over_where(Oid relid, const char *condition, int64 **ids)
{
	List	   *tables = list_make1_oid(relid);
	Datum	   *oids;
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1];
	ListCell   *lc;
	int			n = 0;

	if (get_rel_relispartition(relid))
		tables = list_concat(tables, get_partition_ancestors(relid));
	oids = palloc(sizeof(Datum) * list_length(tables));
	foreach(lc, tables)
		oids[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	values[0] = PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	backfill_spi_exec_args(psprintf("SELECT job_id FROM backfill.job "
									"WHERE status OPERATOR(pg_catalog.<>) 'cancelled' "
									"AND upstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)%s "
									"ORDER BY job_id", condition),
						   1, argtypes, values, NULL, SPI_OK_SELECT);
	*ids = palloc(sizeof(int64) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		(*ids)[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
												&isnull));
	}
	return (int) SPI_processed;
}

static int
jobs_over(Oid relid, int64 **ids)
{
	return jobs_over_where(relid, "", ids);
}

/*
 * A table under the upstream of a cdc job that has not finished (relid
 * itself, or a partition of it at any level) that is unlogged: refused.  The
 * job takes the upstream's changes from the write-ahead log, which holds
 * none of an unlogged table's, and would finish without them.  A finished
 * job follows its upstream through the apply trigger, which sees every
 * write.  set_unlogged says what was done: ALTER TABLE ... SET UNLOGGED, or
 * a partition attached or created.
 */
static void
check_unlogged_under_cdc(Oid relid, bool set_unlogged)
{
	List	   *rels = list_make1_oid(relid);
	ListCell   *lc;
	int64	   *ids;

	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		rels = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			rel = lfirst_oid(lc);

		if (get_rel_relkind(rel) != RELKIND_RELATION ||
			get_rel_persistence(rel) != RELPERSISTENCE_UNLOGGED)
			continue;
		if (jobs_over_where(relid, " AND kind OPERATOR(pg_catalog.=) 'cdc' "
							"AND status OPERATOR(pg_catalog.<>) 'finished'", &ids) == 0)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 set_unlogged ?
				 errmsg("cannot change table \"%s\" to unlogged because backfill job %lld takes its changes from the write-ahead log",
						get_rel_name(rel), (long long) ids[0]) :
				 errmsg("unlogged table \"%s\" cannot join the upstream of backfill job %lld",
						get_rel_name(rel), (long long) ids[0]),
				 errdetail("Backfill job %lld, of kind \"cdc\", takes the upstream's changes from the write-ahead log, which holds none of an unlogged table's.",
						   (long long) ids[0]),
				 set_unlogged ?
				 errhint("Drop the job first with backfill.drop_job(%lld), or wait until it has finished.",
						 (long long) ids[0]) :
				 errhint("Use ALTER TABLE ... SET LOGGED first, or wait until the job has finished.")));
	}
}

/*
 * The caller's search_path when the event trigger fired: the catalog context
 * pins the extension's own, but the names of the command's parse tree are
 * the caller's, resolved as the command resolved them.
 */
static char *caller_search_path = NULL;

/* a relation the command names, looked up under the caller's search_path */
static Oid
command_relid(const RangeVar *rv, bool missing_ok)
{
	int			level = NewGUCNestLevel();
	Oid			relid;

	(void) set_config_option("search_path", caller_search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	relid = RangeVarGetRelid(rv, NoLock, missing_ok);
	AtEOXact_GUC(true, level);
	return relid;
}

/* a type the command names, looked up under the caller's search_path */
static Oid
command_typid(List *names)
{
	int			level = NewGUCNestLevel();
	Oid			typid;

	(void) set_config_option("search_path", caller_search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	typid = LookupTypeNameOid(NULL, makeTypeNameFromNameList(names), true);
	AtEOXact_GUC(true, level);
	return typid;
}

/*
 * ddl_command_end of ALTER TABLE ... SET UNLOGGED under the upstream of a
 * cdc job (check_unlogged_under_cdc)
 */
static void
check_set_unlogged(EventTriggerData *trigdata)
{
	AlterTableStmt *stmt;
	ListCell   *lc;

	if (!IsA(trigdata->parsetree, AlterTableStmt))
		return;
	stmt = (AlterTableStmt *) trigdata->parsetree;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Oid			relid;

		if (cmd->subtype != AT_SetUnLogged)
			continue;
		relid = command_relid(stmt->relation, true);
		if (OidIsValid(relid))
			check_unlogged_under_cdc(relid, true);
	}
}

/* a partition joined (attached, created) or left (detached) relid */
static void
partition_moved(Oid relid, Oid partition, bool joined)
{
	int64	   *ids;
	int			n;

	if (joined)
		check_unlogged_under_cdc(partition, false);
	n = jobs_over(relid, &ids);

	for (int i = 0; i < n; i++)
		backfill_capture_partition(backfill_load_job(ids[i], CurrentMemoryContext),
								   partition, joined);
}


/*
 * ddl_command_end of ALTER TABLE ... ATTACH or DETACH PARTITION, and of
 * CREATE TABLE ... PARTITION OF, under the upstream of a job: the rows that
 * join or leave it do so in the downstream too, exactly once (capture.c).
 */
static void
partition_changes(EventTriggerData *trigdata)
{
	SPITupleTable *created;
	uint64		ncreated;

	if (trigdata->tag == CMDTAG_ALTER_TABLE && !IsA(trigdata->parsetree, AlterTableStmt))
		return;					/* a rename */
	if (IsA(trigdata->parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) trigdata->parsetree;
		ListCell   *lc;

		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

			if (cmd->subtype != AT_AttachPartition && cmd->subtype != AT_DetachPartition)
				continue;
			partition_moved(command_relid(stmt->relation, false),
							command_relid(((PartitionCmd *) cmd->def)->name, false),
							cmd->subtype == AT_AttachPartition);
		}
		return;
	}
	if (SPI_execute("SELECT objid FROM pg_catalog.pg_event_trigger_ddl_commands() "
					"WHERE command_tag = 'CREATE TABLE' AND object_type = 'table'",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	created = SPI_tuptable;
	ncreated = SPI_processed;
	for (uint64 i = 0; i < ncreated; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(created->vals[i], created->tupdesc, 1,
														   &isnull));

		if (get_rel_relispartition(relid))
			partition_moved(get_partition_parent(relid, false), relid, true);
	}
}

/*
 * ddl_command_start of ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY
 * (and FINALIZE) under the upstream of a job: refused.  It detaches in two
 * transactions, between which the partition's rows are neither the
 * upstream's nor gone, so there is no one moment at which they can leave
 * the downstream.
 */
static void
check_detach_concurrently(EventTriggerData *trigdata)
{
	AlterTableStmt *stmt;
	ListCell   *lc;

	if (!IsA(trigdata->parsetree, AlterTableStmt))
		return;
	stmt = (AlterTableStmt *) trigdata->parsetree;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Oid			parent;
		int64	   *ids;

		if (!(cmd->subtype == AT_DetachPartition && ((PartitionCmd *) cmd->def)->concurrent) &&
			cmd->subtype != AT_DetachPartitionFinalize)
			continue;
		parent = command_relid(stmt->relation, true);
		if (!OidIsValid(parent) || jobs_over(parent, &ids) == 0)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot detach a partition of table \"%s\" concurrently while backfill job %lld uses it",
						get_rel_name(parent), (long long) ids[0]),
				 errdetail("A concurrent detach takes two transactions, between which the partition's rows could not leave the job's downstream."),
				 errhint("Detach it without CONCURRENTLY.")));
	}
}

/* whether values of type typid contain values of type target */
static bool
type_contains(Oid typid, Oid target, int depth)
{
	Oid			elem;

	check_stack_depth();
	if (typid == target)
		return true;
	if (depth > 32)
		return false;
	typid = getBaseType(typid);
	if (typid == target)
		return true;
	if (OidIsValid(elem = get_element_type(typid)))
		return type_contains(elem, target, depth + 1);
	if (type_is_range(typid))
		return type_contains(get_range_subtype(typid), target, depth + 1);
	if (type_is_multirange(typid))
		return type_contains(get_multirange_range(typid), target, depth + 1);
	if (type_is_rowtype(typid) && typid != RECORDOID)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
		bool		found = false;

		for (int i = 0; i < desc->natts && !found; i++)
			found = !TupleDescAttr(desc, i)->attisdropped &&
				type_contains(TupleDescAttr(desc, i)->atttypid, target, depth + 1);
		ReleaseTupleDesc(desc);
		return found;
	}
	return false;
}

/*
 * ddl_command_start of ALTER TYPE ... RENAME VALUE, of an enum that a key
 * of a job with range vnodes contains, before the job has finished:
 * refused.  The bounds of its vnodes are keys stored as text (vnode.c),
 * in which a renamed label could not be read back: every run and
 * verify_job would fail.  Not stored otherwise: an enum's binary form is
 * its label too, and the OID of a label does not survive a dump and
 * restore; nor cut again, since the positions the job has stored are in
 * the vnodes the first bounds made; nor rewritten by the rename, which
 * would have to find the label in keys of any type that contains the enum
 * (composites, arrays, ranges).  A job needs its bounds only until it has
 * finished, so the rename waits for that, or for the job's cancel.
 */
static void
check_enum_rename(EventTriggerData *trigdata)
{
	AlterEnumStmt *stmt;
	Oid			enumtype;
	SPITupleTable *jobs;
	uint64		njobs;

	if (!IsA(trigdata->parsetree, AlterEnumStmt))
		return;
	stmt = (AlterEnumStmt *) trigdata->parsetree;
	if (stmt->oldVal == NULL)
		return;					/* ADD VALUE moves no label */
	enumtype = command_typid(stmt->typeName);
	if (!OidIsValid(enumtype))
		return;					/* the command's own error */
	backfill_spi_exec("SELECT job_id, upstream, pk_columns FROM backfill.job "
					  "WHERE vnode_bounds IS NOT NULL "
					  "AND status OPERATOR(pg_catalog.<>) ALL (ARRAY['finished', 'cancelled']) "
					  "ORDER BY job_id", SPI_OK_SELECT);
	jobs = SPI_tuptable;
	njobs = SPI_processed;
	for (uint64 i = 0; i < njobs; i++)
	{
		bool		isnull;
		int64		job_id = DatumGetInt64(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 1, &isnull));
		Oid			upstream = DatumGetObjectId(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 2, &isnull));
		char	  **names;
		int			npk;

		(void) backfill_text_array_sql(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 3, &isnull),
									   &names, &npk);
		for (int k = 0; k < npk; k++)
		{
			AttrNumber	attnum = get_attnum(upstream, names[k]);

			if (attnum == InvalidAttrNumber ||
				!type_contains(get_atttype(upstream, attnum), enumtype, 0))
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot rename a value of type %s because backfill job %lld depends on it",
							format_type_be(enumtype), (long long) job_id),
					 errdetail("The bounds of the job's vnodes are keys of column \"%s\" of table %s, stored as text, which a renamed value would make unreadable.",
							   names[k], backfill_relation_sql(upstream)),
					 errhint("Rename the value once the job has finished, or cancel the job first.")));
		}
	}
}

/*
 * sql_drop: a partition of a job's upstream dropped.  It carries clones of
 * the job's row triggers, dropped with it; a job's trigger dropped with its
 * table, which is not the job's upstream (refused already), tells.  Refused:
 * the partition's rows could no longer leave the downstream, nor be read as
 * of a snapshot job's epoch.
 */
static void
check_partition_drops(void)
{
	SPITupleTable *dropped;
	uint64		ndropped;

	if (SPI_execute("SELECT t.address_names[3], d.object_identity "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() t "
					"JOIN pg_catalog.pg_event_trigger_dropped_objects() d "
					"  ON d.object_type = 'table' AND d.address_names = t.address_names[1:2] "
					"WHERE t.object_type = 'trigger'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	dropped = SPI_tuptable;
	ndropped = SPI_processed;
	for (uint64 d = 0; d < ndropped; d++)
	{
		int64		job_id = backfill_trigger_job(SPI_getvalue(dropped->vals[d], dropped->tupdesc, 1));

		if (job_id == 0)
			continue;
		backfill_spi_exec(psprintf("SELECT FROM backfill.job WHERE job_id = %lld "
								   "AND status OPERATOR(pg_catalog.<>) 'cancelled'",
								   (long long) job_id), SPI_OK_SELECT);
		if (SPI_processed == 0)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop table %s because it is a partition of the upstream of backfill job %lld",
						SPI_getvalue(dropped->vals[d], dropped->tupdesc, 2), (long long) job_id),
				 errdetail("Its rows could no longer leave the job's downstream."),
				 errhint("Detach it first with ALTER TABLE ... DETACH PARTITION, then drop it.")));
	}
}

/*
 * Whether job_id is a job, not cancelled, over relid (its upstream, or an
 * ancestor of it)
 */
static bool
job_over(Oid relid, int64 job_id)
{
	int64	   *ids;
	int			n = jobs_over(relid, &ids);

	for (int i = 0; i < n; i++)
		if (ids[i] == job_id)
			return true;
	return false;
}

static void
refuse_trigger_change(int64 job_id, const char *table, const char *what, bool one)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 one ?
			 errmsg("cannot %s on table \"%s\" because backfill job %lld uses it",
					what, table, (long long) job_id) :
			 errmsg("cannot %s on table \"%s\" because backfill job %lld uses them",
					what, table, (long long) job_id),
			 errdetail("Backfill job %lld keeps its downstream equal to table \"%s\" through its triggers; the writes they would miss would never reach the downstream.",
					   (long long) job_id, table),
			 errhint("Drop the job first with backfill.drop_job(%lld), or cancel it with backfill.cancel_job(%lld).",
					 (long long) job_id, (long long) job_id)));
}

/*
 * ddl_command_start of ALTER TABLE ... ENABLE or DISABLE TRIGGER under the
 * upstream of a job: a job's own trigger named, which only the job switches
 * (capture.c), or DISABLE TRIGGER ALL or USER, which would switch them off
 * too, is refused.  ENABLE TRIGGER ALL or USER is let through: it is how a
 * data-only restore ends, and every run puts the job's triggers back as its
 * status says (backfill_assert_triggers).
 */
static void
check_trigger_switches(EventTriggerData *trigdata)
{
	AlterTableStmt *stmt;
	ListCell   *lc;

	if (!IsA(trigdata->parsetree, AlterTableStmt))
		return;
	stmt = (AlterTableStmt *) trigdata->parsetree;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Oid			relid;
		int64		job_id;
		int64	   *ids;

		switch (cmd->subtype)
		{
			case AT_EnableTrig:
			case AT_EnableAlwaysTrig:
			case AT_EnableReplicaTrig:
			case AT_DisableTrig:
				job_id = backfill_any_trigger_job(cmd->name);
				if (job_id == 0)
					continue;
				relid = command_relid(stmt->relation, true);
				if (!OidIsValid(relid) || !job_over(relid, job_id))
					continue;
				refuse_trigger_change(job_id, get_rel_name(relid),
									  psprintf("%s trigger \"%s\"",
											   cmd->subtype == AT_DisableTrig ? "disable" : "enable",
											   cmd->name), true);
				break;
			case AT_DisableTrigAll:
			case AT_DisableTrigUser:
				relid = command_relid(stmt->relation, true);
				if (!OidIsValid(relid) || jobs_over(relid, &ids) == 0)
					continue;
				refuse_trigger_change(ids[0], get_rel_name(relid), "disable the triggers", false);
				break;
			default:
				break;
		}
	}
}

/*
 * sql_drop of DROP TRIGGER: a trigger of a job, not cancelled, on its
 * upstream or a partition of it, is refused.  drop_job and cancel_job take
 * the job out of the catalog before they drop its triggers; a partition
 * detached has left the upstream before its own trigger is dropped.
 */
static void
check_trigger_drops(void)
{
	SPITupleTable *dropped;
	uint64		ndropped;

	if (SPI_execute("SELECT address_names[1], address_names[2], address_names[3] "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type = 'trigger'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	dropped = SPI_tuptable;
	ndropped = SPI_processed;
	for (uint64 d = 0; d < ndropped; d++)
	{
		char	   *schema = SPI_getvalue(dropped->vals[d], dropped->tupdesc, 1);
		char	   *table = SPI_getvalue(dropped->vals[d], dropped->tupdesc, 2);
		char	   *name = SPI_getvalue(dropped->vals[d], dropped->tupdesc, 3);
		int64		job_id = name ? backfill_any_trigger_job(name) : 0;
		Oid			nsp;
		Oid			relid;

		if (job_id == 0 || schema == NULL || table == NULL)
			continue;
		nsp = get_namespace_oid(schema, true);
		relid = OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
		if (!OidIsValid(relid) || !job_over(relid, job_id))
			continue;
		refuse_trigger_change(job_id, table, psprintf("drop trigger \"%s\"", name), true);
	}
}

/*
 * The roles of DROP OWNED or REASSIGN OWNED, as an oid[] Datum
 */
static Datum
owned_roles(List *rolespecs)
{
	Datum	   *oids = palloc(sizeof(Datum) * Max(list_length(rolespecs), 1));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, rolespecs)
		oids[n++] = ObjectIdGetDatum(get_rolespec_oid(lfirst(lc), false));
	return PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * The jobs of roles whose state table another role owns now (REASSIGN OWNED
 * gave it away): theirs.  Acts as the extension's owner.
 */
static void
follow_reassigned(Datum roles)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	SPITupleTable *jobs;
	uint64		njobs;
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("SELECT j.job_id, c.oid, c.relowner FROM backfill.job j "
						   "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) j.state_table::pg_catalog.oid "
						   "WHERE j.owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
						   "AND c.relowner OPERATOR(pg_catalog.<>) j.owner::pg_catalog.oid "
						   "ORDER BY j.job_id",
						   1, argtypes, &roles, NULL, SPI_OK_SELECT);
	jobs = SPI_tuptable;
	njobs = SPI_processed;
	for (uint64 i = 0; i < njobs; i++)
	{
		bool		isnull;

		backfill_move_owner(DatumGetInt64(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 1, &isnull)),
							DatumGetObjectId(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 2, &isnull)),
							DatumGetObjectId(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 3, &isnull)));
	}
	backfill_role_leave(&rc);
}

/*
 * ddl_command_start of DROP OWNED: a job is dropped with its owner's
 * objects, as a table is.  One whose state table REASSIGN OWNED gave to
 * another role first goes with its tables to that role, as it would have
 * at the REASSIGN OWNED itself with the library loaded (see
 * backfill_reassign_owned); the others, cancelled ones too, are dropped by
 * drop_job, as the caller, who has the privileges of the roles (DROP OWNED
 * requires them), before DROP OWNED drops their tables.
 */
static void
drop_owned(DropOwnedStmt *stmt)
{
	Datum		roles = owned_roles(stmt->roles);
	Oid			argtypes[1] = {OIDARRAYOID};
	int64	   *ids;
	uint64		n;

	follow_reassigned(roles);
	backfill_spi_exec_args("SELECT job_id FROM backfill.job "
						   "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) ORDER BY job_id",
						   1, argtypes, &roles, NULL, SPI_OK_SELECT);
	n = SPI_processed;
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
											 &isnull));
	}
	for (uint64 i = 0; i < n; i++)
	{
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(ids[i])};

		backfill_spi_exec_args("SELECT backfill.drop_job($1)", 1, types, values, NULL,
							   SPI_OK_SELECT);
	}
}

/*
 * backfill_reassign_owned
 *		After REASSIGN OWNED, in this database: the jobs whose state table
 *		it gave to another role are that role's.  REASSIGN OWNED fires no
 *		event trigger, so this runs from the utility hook (backfill.c) of a
 *		backend that has loaded the library (every backend, when it is
 *		preloaded); otherwise the next DROP OWNED does it, and until then
 *		DROP ROLE is refused (the owner's policy, catalog.c).
 */
void
backfill_reassign_owned(ReassignOwnedStmt *stmt)
{
	if (!OidIsValid(get_extension_oid(BACKFILL_SCHEMA, true)))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	follow_reassigned(owned_roles(stmt->roles));
	SPI_finish();
}

static ProcessUtility_hook_type prev_process_utility = NULL;

/* REASSIGN OWNED, then its jobs (backfill_reassign_owned) */
static void
reassign_owned_hook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
							 dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
	if (IsA(pstmt->utilityStmt, ReassignOwnedStmt))
		backfill_reassign_owned((ReassignOwnedStmt *) pstmt->utilityStmt);
}

/* install the utility hook; from _PG_init */
void
backfill_ddl_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = reassign_owned_hook;
}

/*
 * sql_drop of DROP POLICY: the policy that records a job's owner
 * (catalog.c) goes only with the job.
 */
static void
check_policy_drops(void)
{
	if (SPI_execute("SELECT address_names[3], address_names[1], address_names[2] "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type = 'policy'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	for (uint64 d = 0; d < SPI_processed; d++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[d], SPI_tuptable->tupdesc, 1);
		long long	job_id;
		int			len;

		if (name == NULL || sscanf(name, "backfill_job_%lld_owner%n", &job_id, &len) != 1 ||
			len != (int) strlen(name) ||
			strcmp(SPI_getvalue(SPI_tuptable->vals[d], SPI_tuptable->tupdesc, 2), BACKFILL_SCHEMA) != 0)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop policy \"%s\" on table %s.%s because backfill job %lld uses it",
						name, BACKFILL_SCHEMA,
						SPI_getvalue(SPI_tuptable->vals[d], SPI_tuptable->tupdesc, 3), job_id),
				 errdetail("It records the owner of backfill job %lld, so that the role cannot be dropped while it owns the job.",
						   job_id),
				 errhint("Drop the job with backfill.drop_job(%lld), or give it to another role with REASSIGN OWNED.",
						 job_id)));
	}
}

/*
 * backfill._on_ddl() event trigger, ON sql_drop, ON ddl_command_end WHEN
 * TAG IN ('ALTER TABLE', 'CREATE TABLE') and ON ddl_command_start WHEN TAG
 * IN ('ALTER TABLE'), and ON ddl_command_start WHEN TAG IN ('ALTER TYPE')
 */
Datum
backfill_on_ddl(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	RoleContext rc;
	bool		restoring;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._on_ddl() was not called by the event trigger manager")));
	trigdata = (EventTriggerData *) fcinfo->context;

	/* a restore, by a role that may write the catalogs: see the file header */
	restoring = !check_function_bodies && backfill_may_write_catalogs();

	caller_search_path = pstrdup(namespace_search_path);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* drop_job runs as the caller */
	if (trigdata->tag == CMDTAG_DROP_OWNED)
	{
		if (strcmp(trigdata->event, "ddl_command_start") == 0 &&
			IsA(trigdata->parsetree, DropOwnedStmt))
			drop_owned((DropOwnedStmt *) trigdata->parsetree);
		SPI_finish();
		PG_RETURN_NULL();
	}
	backfill_catalog_enter(&rc);
	if (strcmp(trigdata->event, "sql_drop") == 0)
	{
		check_drops(restoring);
		/* a restore drops tables, partitions too, and pg_restore --clean triggers */
		if (!restoring)
			check_partition_drops();
		if (!restoring && trigdata->tag == CMDTAG_DROP_TRIGGER)
			check_trigger_drops();
		if (!restoring && trigdata->tag == CMDTAG_DROP_POLICY)
			check_policy_drops();
	}
	else if (strcmp(trigdata->event, "ddl_command_start") == 0)
	{
		check_detach_concurrently(trigdata);
		check_enum_rename(trigdata);
		/* pg_restore --disable-triggers disables them all, then enables them */
		if (!restoring)
			check_trigger_switches(trigdata);
	}
	else
	{
		partition_changes(trigdata);
		if (trigdata->tag == CMDTAG_ALTER_TABLE)
		{
			check_set_unlogged(trigdata);
			check_alters(restoring);
		}
	}
	backfill_role_leave(&rc);
	SPI_finish();
	PG_RETURN_NULL();
}
