/*-------------------------------------------------------------------------
 *
 * downstream.c
 *	  A downstream the user made: the checks that let a job fill an
 *	  existing table (create_job's into_existing).
 *
 * A job writes its downstream by key: a chunk inserts rows, a barrier's
 * forwarding deletes the rows of some keys and inserts them again (or, in a
 * table a foreign key references, upserts them with ON CONFLICT on the key
 * and deletes those gone), the apply trigger upserts with ON CONFLICT on the
 * key.  So a table of the user's can
 * take a job's rows if it is
 *
 *	- a permanent table, partitioned or not, outside the extension's schema,
 *	  not the job's upstream nor another job's downstream (it may be another
 *	  job's upstream: jobs chain, but never round: a table whose rows would
 *	  come back to the upstream through the jobs that copy them, as with
 *	  c1 -> c2 and c2 -> c1, would make every write fire the jobs' triggers
 *	  again without end; see job_cycle());
 *	- empty: a job fills it from the start, and rows it holds already would
 *	  be neither copied nor removed;
 *	- made of the job's columns, by name, in any order, each of a type the
 *	  job's values can be assigned to (as INSERT assigns them), none of them
 *	  generated nor GENERATED ALWAYS AS IDENTITY (INSERT takes no value for
 *	  it); its other columns get their defaults, so none may be NOT
 *	  NULL without one;
 *	- keyed as the upstream: a primary key or a unique index, immediate,
 *	  without expressions or predicate, on exactly the key columns, which
 *	  are of the upstream key's types (a key is copied as it is, and the
 *	  job's positions are keys of those types) with deterministic
 *	  collations.
 *
 * Each unmet rule is an error naming what does not fit.  The table stays
 * locked in SHARE ROW EXCLUSIVE mode until create_job's transaction ends,
 * so that it is still empty when the job starts.  The job's owner needs the
 * privileges to read it and to insert, update and delete its rows.  Such a
 * table may carry anything else (triggers, other indexes, row-level
 * security): the job's chunks then go through INSERT (sink.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/regproc.h"

#include "backfill.h"
#include "catalog/job_run_rows.h"
#include "copy/copy.h"
#include "lib/lib.h"

/* the table a name stands for, with the privileges the job's owner needs */
static Oid
existing_table(const char *name)
{
	RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(name));
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);
	AclMode		needed[4] = {ACL_SELECT, ACL_INSERT, ACL_UPDATE, ACL_DELETE};

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"%s\" does not exist", name),
				 errhint("Create the table first, or let create_job make it: leave into_existing false.")));
	/* before the lock: a user who may not fill it must not queue on it */
	for (int i = 0; i < lengthof(needed); i++)
	{
		AclResult	aclresult = pg_class_aclcheck(relid, GetUserId(), needed[i]);

		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(relid)),
						   get_rel_name(relid));
	}
	return relid;
}

/*
 * The tables whose writes fire the triggers of a job over relid, or that a
 * write into relid reaches: relid, its ancestors (a job's row triggers are
 * cloned to every partition of its upstream) and its partitions at every
 * level (a row written into relid lands in one of them).  Read from the
 * catalogs only, without locks: create_job holds the two ends of the walk.
 */
static List *
partition_region(Oid relid)
{
	List	   *region = list_make1_oid(relid);

	if (get_rel_relispartition(relid))
		region = list_concat(region, get_partition_ancestors(relid));
	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		region = list_concat_unique_oid(region, find_all_inheritors(relid, NoLock, NULL));
	return region;
}

/*
 * Whether the rows a job would write into downstream can come back to its
 * upstream through the live jobs that copy tables into tables, each firing
 * the next one's triggers: a walk of the graph upstream -> downstream of the
 * jobs that are not cancelled, from downstream.  Returns the jobs on the
 * way back, in order, as text ("1, 3"), "" when downstream and upstream
 * share a partition tree, or NULL when there is no cycle.
 */
static char *
job_cycle(Oid upstream, Oid downstream)
{
	List	   *frontier = list_make1_oid(downstream);
	List	   *paths = list_make1(pstrdup(""));
	List	   *seen = list_make1_oid(downstream);

	while (frontier != NIL)
	{
		Oid			rel = linitial_oid(frontier);
		char	   *path = linitial(paths);
		List	   *region = partition_region(rel);
		Datum	   *oids;
		int64	   *job_ids;
		Oid		   *downstreams;
		int			njobs;
		ListCell   *lc;
		int			n = 0;

		frontier = list_delete_first(frontier);
		paths = list_delete_first(paths);
		if (list_member_oid(region, upstream))
			return path;
		oids = palloc(sizeof(Datum) * list_length(region));
		foreach(lc, region)
			oids[n++] = ObjectIdGetDatum(lfirst_oid(lc));
		njobs = backfill_jobs_reading(PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid),
																	  true, TYPALIGN_INT)),
									  &job_ids, &downstreams);
		for (int i = 0; i < njobs; i++)
		{
			int64		job_id = job_ids[i];
			Oid			next = downstreams[i];

			if (list_member_oid(seen, next))
				continue;
			seen = lappend_oid(seen, next);
			frontier = lappend_oid(frontier, next);
			paths = lappend(paths, *path == '\0' ? psprintf("%lld", (long long) job_id) :
							psprintf("%s, %lld", path, (long long) job_id));
		}
	}
	return NULL;
}

/* what the table is: a permanent table of its own, and empty */
static void
check_table(Relation rel, Oid upstream)
{
	int64		filling;
	bool		isnull;
	char	   *cycle;

	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot backfill into relation \"%s\"", RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind)));
	if (IsCatalogRelation(rel) || rel->rd_rel->relnamespace == get_namespace_oid(BACKFILL_SCHEMA, false))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot backfill into table \"%s\" of schema \"%s\"",
						RelationGetRelationName(rel),
						get_namespace_name(rel->rd_rel->relnamespace))));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot backfill into temporary table \"%s\"", RelationGetRelationName(rel)),
				 errdetail("Background workers and later sessions must see the downstream table.")));
	if (RelationGetRelid(rel) == upstream)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot backfill table \"%s\" into itself", RelationGetRelationName(rel))));
	cycle = job_cycle(upstream, RelationGetRelid(rel));
	if (cycle != NULL && *cycle == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot backfill table \"%s\" into table \"%s\"",
						get_rel_name(upstream), RelationGetRelationName(rel)),
				 errdetail("The two tables are in one partition tree: the job's writes into the one would fire its triggers on the other.")));
	if (cycle != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot backfill table \"%s\" into table \"%s\"",
						get_rel_name(upstream), RelationGetRelationName(rel)),
				 errdetail(strchr(cycle, ',') ?
						   "Backfill jobs %s copy the rows of table \"%s\" back into table \"%s\": every write would go round without end." :
						   "Backfill job %s copies the rows of table \"%s\" back into table \"%s\": every write would go round without end.",
						   cycle, RelationGetRelationName(rel), get_rel_name(upstream)),
				 errhint("Drop one of those jobs first, or backfill into another table.")));

	filling = backfill_job_filling(RelationGetRelid(rel));
	if (filling != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("table \"%s\" is the downstream of backfill job %lld", RelationGetRelationName(rel),
						(long long) filling),
				 errdetail("Two jobs cannot fill one table.")));

	backfill_spi_exec(psprintf("SELECT EXISTS (SELECT FROM %s)",
							   backfill_relation_sql(RelationGetRelid(rel))), SPI_OK_SELECT);
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not empty", RelationGetRelationName(rel)),
				 errdetail("A job fills its downstream from the start: rows it holds already would be neither copied nor removed."),
				 errhint("Empty the table, or let create_job make a new one.")));
}

/* each column the job fills: there, assignable, not generated, not identity ALWAYS */
static void
check_columns(Relation rel, const JobShape *shape)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < shape->ncols; i++)
	{
		const ShapeColumn *col = &shape->cols[i];
		AttrNumber	attnum = get_attnum(RelationGetRelid(rel), col->name);
		Form_pg_attribute att;
		Oid			from = col->type;

		if (attnum <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("table \"%s\" has no column \"%s\"", RelationGetRelationName(rel), col->name),
					 errdetail("The job fills the columns %s.", backfill_shape_names(shape))));
		att = TupleDescAttr(desc, attnum - 1);
		if (att->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot fill generated column \"%s\" of table \"%s\"",
							col->name, RelationGetRelationName(rel))));
		/* INSERT refuses a value for it unless told OVERRIDING SYSTEM VALUE */
		if (att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot fill identity column \"%s\" of table \"%s\"",
							col->name, RelationGetRelationName(rel)),
					 errdetail("The column is GENERATED ALWAYS AS IDENTITY: it takes no value but its sequence's, and the job writes the upstream's."),
					 errhint("Make it GENERATED BY DEFAULT: ALTER TABLE %s ALTER COLUMN %s SET GENERATED BY DEFAULT.",
							 backfill_relation_sql(RelationGetRelid(rel)), quote_identifier(col->name))));
		if (!can_coerce_type(1, &from, &att->atttypid, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of table \"%s\" is of type %s, to which a value of type %s cannot be assigned",
							col->name, RelationGetRelationName(rel),
							format_type_with_typemod(att->atttypid, att->atttypmod),
							format_type_with_typemod(col->type, col->typmod))));
	}

	/* the others get their defaults */
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		filled = false;

		for (int c = 0; c < shape->ncols; c++)
			filled |= strcmp(shape->cols[c].name, NameStr(att->attname)) == 0;
		if (!att->attisdropped && !filled && att->attnotnull && !att->atthasdef &&
			!att->attidentity && !att->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("column \"%s\" of table \"%s\" is NOT NULL and has no default",
							NameStr(att->attname), RelationGetRelationName(rel)),
					 errdetail("The job fills the columns %s; the others get their defaults.",
							   backfill_shape_names(shape))));
	}
}

/* whether an index of rel is unique on exactly the key columns, and usable as an arbiter */
static bool
index_on_key(Relation rel, Oid indexoid, int npk, char **keynames)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	Form_pg_index form = index->rd_index;
	bool		ok;

	ok = form->indisunique && form->indimmediate && form->indisvalid &&
		form->indnkeyatts == npk &&
		heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL);
	for (int k = 0; ok && k < npk; k++)
	{
		bool		found = false;

		for (int j = 0; j < npk && !found; j++)
			found = form->indkey.values[j] > 0 &&
				strcmp(get_attname(RelationGetRelid(rel), form->indkey.values[j], false),
					   keynames[k]) == 0;
		ok = found;
	}
	index_close(index, AccessShareLock);
	return ok;
}

/* the key: of the upstream key's types, and a unique index on it */
static void
check_key(Relation rel, Relation upstream, int npk, const AttrNumber *pk)
{
	char	  **keynames = palloc(sizeof(char *) * npk);
	StringInfoData keylist;
	ListCell   *lc;

	initStringInfo(&keylist);
	for (int k = 0; k < npk; k++)
	{
		AttrNumber	attnum;
		Oid			uptype = get_atttype(RelationGetRelid(upstream), pk[k]);
		Oid			type;
		int32		typmod;
		Oid			collid;

		keynames[k] = get_attname(RelationGetRelid(upstream), pk[k], false);
		appendStringInfo(&keylist, "%s%s", k > 0 ? ", " : "", quote_identifier(keynames[k]));
		attnum = get_attnum(RelationGetRelid(rel), keynames[k]);
		get_atttypetypmodcoll(RelationGetRelid(rel), attnum, &type, &typmod, &collid);
		if (type != uptype)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column \"%s\" of table \"%s\" is of type %s, but the upstream's is of type %s",
							keynames[k], RelationGetRelationName(rel), format_type_be(type),
							format_type_be(uptype)),
					 errdetail("A job copies the key as it is, and keeps its positions as keys of the upstream's types.")));
		if (OidIsValid(collid) && !get_collation_isdeterministic(collid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" of table \"%s\" has a nondeterministic collation",
							keynames[k], RelationGetRelationName(rel)),
					 errdetail("Keys that are different upstream could be equal in it.")));
	}
	foreach(lc, RelationGetIndexList(rel))
	{
		if (index_on_key(rel, lfirst_oid(lc), npk, keynames))
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("table \"%s\" has no primary key or unique index on exactly the columns (%s)",
					RelationGetRelationName(rel), keylist.data),
			 errdetail("A job writes its downstream by the upstream's key, and keeps it up to date with INSERT ... ON CONFLICT on it."),
			 errhint("Add one: ALTER TABLE %s ADD PRIMARY KEY (%s).",
					 backfill_relation_sql(RelationGetRelid(rel)), keylist.data)));
}

/*
 * backfill_existing_downstream
 *		The table name stands for, checked as the file header says, locked
 *		SHARE ROW EXCLUSIVE until the transaction ends.  upstream (with key
 *		pk) is the job's, shape what it copies.  Caller is connected to SPI.
 *		Returns the table's name, quoted and schema-qualified.
 */
char *
backfill_existing_downstream(const char *name, Relation upstream, const JobShape *shape,
							 int npk, const AttrNumber *pk)
{
	Oid			relid = existing_table(name);
	Relation	rel = relation_open(relid, ShareRowExclusiveLock);
	char	   *result;

	check_table(rel, RelationGetRelid(upstream));
	check_columns(rel, shape);
	check_key(rel, upstream, npk, pk);
	result = backfill_relation_sql(relid);
	relation_close(rel, NoLock);
	return result;
}
