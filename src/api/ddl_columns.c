/*-------------------------------------------------------------------------
 *
 * ddl_columns.c
 *	  DDL checks of what a job reads and writes, by name and type: its
 *	  tables and their columns dropped (sql_drop), its columns renamed or
 *	  retyped (ddl_command_end of ALTER TABLE), an enum of its key renamed
 *	  (ddl_command_start of ALTER TYPE).
 *
 * A job reads its upstream's key and output columns by name and type, for
 * as long as it exists, and fills its downstream's; the computed columns
 * and the filter are analyzed again against an altered table (shape.c), so
 * a change that leaves them meaningless is refused with the parser's
 * error.  The rules, and how a restore is let through, are told in
 * event_trigger.c, which calls these checks as the extension's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "api/ddl.h"
#include "catalog/catalog_access.h"
#include "catalog/job_holdings.h"
#include "copy/copy.h"
#include "lib/lib.h"
#include "remote/remote.h"

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
void
backfill_check_drops(bool restoring)
{
	SPITupleTable *dropped;
	uint64		ndropped;
	JobHolding *jobs;
	int			njobs;

	/* DROP EXTENSION backfill: the catalogs are gone, and so are the jobs */
	if (SPI_execute("SELECT FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type = 'extension' AND object_name = 'backfill'",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	if (SPI_processed > 0 || !OidIsValid(get_extension_oid(BACKFILL_SCHEMA, true)))
		return;

	if (SPI_execute("SELECT objid, object_type, address_names[3] AS column_name, object_identity "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type IN ('table', 'table column')", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	dropped = SPI_tuptable;
	ndropped = SPI_processed;
	if (ndropped == 0)
		return;
	njobs = backfill_jobs_holding(InvalidOid, &jobs);

	for (uint64 d = 0; d < ndropped; d++)
	{
		bool		isnull;
		Oid			objid = DatumGetObjectId(backfill_spi_column(dropped, d, "objid", &isnull));
		char	   *type = backfill_spi_column_text(dropped, d, "object_type");
		char	   *column = backfill_spi_column_text(dropped, d, "column_name");
		char	   *identity = backfill_spi_column_text(dropped, d, "object_identity");
		bool		is_column = strcmp(type, "table column") == 0;

		for (int i = 0; i < njobs; i++)
		{
			JobHolding *job = &jobs[i];
			static const char *const roles[JOB_TABLE_COUNT] = {
				[JOB_TABLE_UPSTREAM] = "upstream table",
				[JOB_TABLE_DOWNSTREAM] = "downstream table",
				[JOB_TABLE_STATE] = "state table",
				[JOB_TABLE_CHANGE] = "change table",
			};

			for (int r = 0; r < JOB_TABLE_COUNT; r++)
			{
				if (!OidIsValid(job->tables[r]) || job->tables[r] != objid)
					continue;
				if (!is_column)
				{
					if (!restoring)
						refuse_drop(job->job_id, roles[r], psprintf("table %s", identity));
					continue;
				}
				/*
				 * A column: of the upstream if read, of the downstream if
				 * filled, of the job's own tables always.
				 */
				if (r > JOB_TABLE_DOWNSTREAM ||
					(r == JOB_TABLE_DOWNSTREAM && array_has(job->columns, column)) ||
					(r == JOB_TABLE_UPSTREAM && (array_has(job->source_columns, column) ||
												 array_has(job->pk_columns, column))))
					refuse_drop(job->job_id, psprintf("column \"%s\" of the %s", column, roles[r]),
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

/* a job's text[] column, or none */
static void
job_array(Datum d, bool isnull, Datum **elems, bool **nulls, int *nelems)
{
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
check_job_after_alter(const JobHolding *job, Oid relid, bool restoring)
{
	int64		job_id = job->job_id;
	Oid			upstream = job->tables[JOB_TABLE_UPSTREAM];
	Oid			downstream = job->tables[JOB_TABLE_DOWNSTREAM];
	char	   *filter = job->filter;
	bool		into_existing = job->into_existing;
	Datum	   *cols;
	Datum	   *sources;
	Datum	   *exprs = NULL;
	bool	   *expr_nulls = NULL;
	int			ncols;
	int			nsources;
	int			nexprs;
	Relation	rel;

	job_array(job->columns, job->columns_null, &cols, NULL, &ncols);
	job_array(job->source_columns, job->source_columns_null, &sources, NULL, &nsources);
	job_array(job->expressions, job->expressions_null, &exprs, &expr_nulls, &nexprs);

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
	 * made with, whatever its kind (but while a restore adds it).  A foreign
	 * upstream has no primary key here: its key is the source table's, which
	 * every run reads on the source; so does a partitioned table of foreign
	 * tables.
	 */
	if (!restoring && backfill_remote_leaves(upstream) == NIL)
	{
		BackfillJob *job = backfill_load_job(job_id, CurrentMemoryContext);

		backfill_check_key_unchanged(job, job->change_table);
	}
}

/*
 * ddl_command_end of ALTER TABLE: every job over an altered upstream or
 * downstream must still find what it reads and writes.
 */
void
backfill_check_alters(bool restoring)
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
		Oid			relid = DatumGetObjectId(backfill_spi_column(altered, a, "objid", &isnull));
		JobHolding *jobs;
		int			njobs = backfill_jobs_holding(relid, &jobs);

		for (int i = 0; i < njobs; i++)
			check_job_after_alter(&jobs[i], relid, restoring);
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
void
backfill_check_enum_rename(EventTriggerData *trigdata)
{
	AlterEnumStmt *stmt;
	Oid			enumtype;
	JobHolding *jobs;
	int			njobs;

	if (!IsA(trigdata->parsetree, AlterEnumStmt))
		return;
	stmt = (AlterEnumStmt *) trigdata->parsetree;
	if (stmt->oldVal == NULL)
		return;					/* ADD VALUE moves no label */
	enumtype = backfill_command_typid(stmt->typeName);
	if (!OidIsValid(enumtype))
		return;					/* the command's own error */
	njobs = backfill_jobs_with_key_bounds(&jobs);
	for (int i = 0; i < njobs; i++)
	{
		int64		job_id = jobs[i].job_id;
		Oid			upstream = jobs[i].tables[JOB_TABLE_UPSTREAM];
		char	  **names;
		int			npk;

		(void) backfill_text_array_sql(jobs[i].pk_columns, &names, &npk);
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
