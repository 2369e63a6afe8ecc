/*-------------------------------------------------------------------------
 *
 * migration.c
 *	  What the downstream of a whole-table copy gets of its upstream besides
 *	  indexes and constraints (index_build.c): its generated columns, its
 *	  partitioning and partitions, and, once the job follows, its foreign
 *	  keys.
 *
 * A job that copies the whole of a local table ("indexes" NULL, no computed
 * column, no filter: create.c's GIFT_MIGRATION) makes a downstream that is
 * to take the upstream's place at the cutover, so it is made as the
 * upstream is made:
 *
 *	- a generated column is generated in the downstream too, with the
 *	  upstream's expression (deparsed under the pinned search_path, so every
 *	  name in it is qualified).  The job never writes it: the job's column
 *	  list leaves out a column the downstream generates (catalog/job_load.c),
 *	  so the chunks, the forwarding and the apply trigger let the downstream
 *	  compute it, as the upstream does.  The expression runs as whoever writes the
 *	  downstream, the job's owner first: one that calls a function of a role
 *	  the job's owner does not trust with its rights is refused, as an
 *	  index's is (index_build.c);
 *	- a partitioned upstream gets a downstream partitioned by the same key,
 *	  with a partition for each of the upstream's, of the same bounds (the
 *	  default partition too), partitioned in turn as the upstream's are.  A
 *	  partition is named after the upstream's: the upstream's name at its
 *	  start becomes the downstream's, another name gets the downstream's
 *	  name and an underscore in front; the cutover gives each partition the
 *	  name of the one it replaces (_cutover_rename_partitions);
 *	- foreign keys come last.  A foreign key is checked row by row against
 *	  the referenced table as it is now, and enforced on the referenced
 *	  table's writes: while the job copies an older snapshot and applies the
 *	  changes after it, a row whose referenced row is deleted since (its
 *	  own delete, by ON DELETE CASCADE say, still on its way) would fail a
 *	  barrier, and a referenced row deleted upstream after its referencing
 *	  rows would be refused while the downstream still holds them.  Once the
 *	  job has finished, its downstream follows the upstream in each writer's
 *	  transaction (the apply trigger), so a foreign key checks there what
 *	  it checks upstream, in the same transaction.  After the final
 *	  barrier's commit (backfill_give_foreign_keys, from the driver) each
 *	  of the upstream's foreign keys to another table that the downstream
 *	  lacks is added NOT VALID (no scan: the rows are the upstream's, which
 *	  satisfy it), as the job's owner; finish_cutover validates it.  Adding
 *	  one takes SHARE ROW EXCLUSIVE on the downstream and on the referenced
 *	  table; a writer may hold a lock on one and wait for the other, so
 *	  each attempt waits at most backfill's short lock timeout (below
 *	  deadlock_timeout: the writer never finds the deadlock, the attempt
 *	  gives up first) and is tried again.  A foreign key that references the
 *	  upstream itself, one whose referenced columns the job's owner has no
 *	  REFERENCES privilege on, and any of a partitioned downstream
 *	  (PostgreSQL 15 adds none NOT VALID to a partitioned table) are not
 *	  given: create_job says so in a NOTICE, and the cutover lists them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "catalog/index_rows.h"
#include "copy/copy.h"
#include "copy/index_build.h"
#include "lib/lib.h"

/* attempts at each foreign key, and the longest sleep between two */
#define BACKFILL_FK_ATTEMPTS	20
#define BACKFILL_FK_MAX_SLEEP_MS	1000

/* ----------------------------------------------------------------
 * Generated columns
 * ---------------------------------------------------------------- */

/*
 * Refuse a generated column of the upstream whose expression calls a
 * function the downstream's writers, its owner first, must not run.
 */
static void
check_generated_functions(Relation upstream, AttrNumber attnum, Oid attrdef)
{
	Oid			runner = GetUserId();
	Oid			owner = InvalidOid;
	Oid			func = backfill_untrusted_function(AttrDefaultRelationId, attrdef, runner, &owner);
	const char *owner_name = GetUserNameFromId(owner, true);

	if (!OidIsValid(func))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot give generated column \"%s\" of table \"%s\" to the downstream",
					get_attname(RelationGetRelid(upstream), attnum, false),
					RelationGetRelationName(upstream)),
			 errdetail("The column's expression calls function %s of role \"%s\", which would run with the rights of role \"%s\", the owner of the downstream, or of its writers.",
					   format_procedure(func), owner_name ? owner_name : "?",
					   GetUserNameFromId(runner, false)),
			 errhint("Pass indexes => false for a downstream whose column is a plain copy, or create the job as a role whose privileges role \"%s\" has.",
					 owner_name ? owner_name : "?")));
}

/*
 * backfill_generated_columns
 *		For each column of the shape, " GENERATED ALWAYS AS (expr) STORED"
 *		when it is a copy of a generated column of the upstream, else NULL.
 *		As the caller, the job's owner, under the pinned search_path.
 */
char	  **
backfill_generated_columns(Relation upstream, const JobShape *shape)
{
	TupleDesc	desc = RelationGetDescr(upstream);
	char	  **clauses = palloc0(sizeof(char *) * Max(shape->ncols, 1));

	for (int c = 0; c < shape->ncols; c++)
	{
		const ShapeColumn *col = &shape->cols[c];
		Oid			attrdef;

		if (col->expr != NULL || col->attnum <= 0 ||
			TupleDescAttr(desc, col->attnum - 1)->attgenerated != ATTRIBUTE_GENERATED_STORED)
			continue;
		attrdef = GetAttrDefaultOid(RelationGetRelid(upstream), col->attnum);
		if (!OidIsValid(attrdef) || desc->constr == NULL)
			elog(ERROR, "no expression for generated column %d of relation %u",
				 col->attnum, RelationGetRelid(upstream));
		check_generated_functions(upstream, col->attnum, attrdef);
		for (int d = 0; d < desc->constr->num_defval; d++)
		{
			AttrDefault *def = &desc->constr->defval[d];

			if (def->adnum == col->attnum)
				clauses[c] = psprintf(" GENERATED ALWAYS AS (%s) STORED",
									  TextDatumGetCString(DirectFunctionCall2(pg_get_expr,
																			  CStringGetTextDatum(def->adbin),
																			  ObjectIdGetDatum(RelationGetRelid(upstream)))));
		}
	}
	return clauses;
}

/* ----------------------------------------------------------------
 * Partitioning
 * ---------------------------------------------------------------- */

/* " PARTITION BY ..." of a partitioned table, its functions checked */
static char *
partition_by(Oid relid)
{
	Oid			runner = GetUserId();
	Oid			owner = InvalidOid;
	Oid			func = backfill_untrusted_function(RelationRelationId, relid, runner, &owner);
	const char *owner_name = GetUserNameFromId(owner, true);

	if (OidIsValid(func))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot partition the downstream as table \"%s\" is", get_rel_name(relid)),
				 errdetail("The table's partition key calls function %s of role \"%s\", which would run with the rights of role \"%s\", the owner of the downstream, or of its writers.",
						   format_procedure(func), owner_name ? owner_name : "?",
						   GetUserNameFromId(runner, false)),
				 errhint("Pass indexes => false for a downstream that is not partitioned, or create the job as a role whose privileges role \"%s\" has.",
						 owner_name ? owner_name : "?")));
	return psprintf(" PARTITION BY %s",
					TextDatumGetCString(DirectFunctionCall1(pg_get_partkeydef,
															ObjectIdGetDatum(relid))));
}

/*
 * backfill_partition_by
 *		" PARTITION BY ..." for the downstream of a partitioned upstream,
 *		"" for another.
 */
const char *
backfill_partition_by(Relation upstream)
{
	if (upstream->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return "";
	return partition_by(RelationGetRelid(upstream));
}

/* the name of the partition of table "parent" that stands for partition "part" of "upstream" */
static char *
partition_name(const char *part, const char *upstream, const char *parent)
{
	char	   *name = backfill_partition_renamed(part, upstream, parent);

	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the name of the downstream's partition for partition \"%s\" would be too long", part),
				 errdetail("It would be \"%s\", of more than %d bytes.", name, NAMEDATALEN - 1),
				 errhint("Choose a shorter job name.")));
	return name;
}

/* a partition's bound as CREATE TABLE ... PARTITION OF takes it */
static char *
partition_bound(Oid part)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(part));
	Datum		bound;
	bool		isnull;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", part);
	bound = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
		elog(ERROR, "partition %u has no bound", part);
	result = TextDatumGetCString(DirectFunctionCall2(pg_get_expr, bound, ObjectIdGetDatum(part)));
	ReleaseSysCache(tup);
	return result;
}

/*
 * Make under the downstream's partitioned table "into" (in schema nspname,
 * named into_name) a partition for each partition of "from", of the same
 * bounds, partitioned in turn as it is.
 */
static void
create_partitions(Oid from, const char *from_name, const char *nspname, const char *into_name)
{
	List	   *parts = find_inheritance_children(from, NoLock);
	ListCell   *lc;

	foreach(lc, parts)
	{
		Oid			part = lfirst_oid(lc);
		char		relkind = get_rel_relkind(part);
		char	   *name;

		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot partition the downstream as table \"%s\" is", from_name),
					 errdetail("Partition \"%s\" is not a table.", get_rel_name(part))));
		name = partition_name(get_rel_name(part), from_name, into_name);
		backfill_spi_exec(psprintf("CREATE TABLE %s PARTITION OF %s %s%s",
								   quote_qualified_identifier(nspname, name),
								   quote_qualified_identifier(nspname, into_name),
								   partition_bound(part),
								   relkind == RELKIND_PARTITIONED_TABLE ? partition_by(part) : ""),
						  SPI_OK_UTILITY);
		if (relkind == RELKIND_PARTITIONED_TABLE)
			create_partitions(part, get_rel_name(part), nspname, name);
	}
}

/*
 * backfill_create_partitions
 *		Give the new, partitioned downstream (downstream_sql) a partition for
 *		each of the upstream's, of the same bounds, at every level.  As the
 *		caller, under the pinned search_path, connected to SPI.
 */
void
backfill_create_partitions(Relation upstream, const char *downstream_sql)
{
	Oid			relid = DatumGetObjectId(DirectFunctionCall1(regclassin,
															 CStringGetDatum(downstream_sql)));

	if (upstream->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return;
	create_partitions(RelationGetRelid(upstream), RelationGetRelationName(upstream),
					  get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

/*
 * The partition of the downstream's partitioned table "into" that has the
 * bound of partition "part" of the upstream, made (partitioned as part
 * is, with partitions as its) when there is none.
 */
static Oid
matching_partition(Oid part, Oid into, const char *from_name)
{
	char	   *bound = partition_bound(part);
	List	   *children = find_inheritance_children(into, NoLock);
	ListCell   *lc;
	char	   *nspname = get_namespace_name(get_rel_namespace(into));
	char	   *name;
	char		relkind = get_rel_relkind(part);

	foreach(lc, children)
	{
		Oid			child = lfirst_oid(lc);

		if (strcmp(partition_bound(child), bound) == 0)
			return child;
	}
	name = partition_name(get_rel_name(part), from_name, get_rel_name(into));
	backfill_spi_exec(psprintf("CREATE TABLE %s PARTITION OF %s %s%s",
							   quote_qualified_identifier(nspname, name),
							   quote_qualified_identifier(nspname, get_rel_name(into)), bound,
							   relkind == RELKIND_PARTITIONED_TABLE ? partition_by(part) : ""),
					  SPI_OK_UTILITY);
	CommandCounterIncrement();
	if (relkind == RELKIND_PARTITIONED_TABLE)
		create_partitions(part, get_rel_name(part), nspname, name);
	return get_relname_relid(name, get_rel_namespace(into));
}

/*
 * backfill_follow_partition
 *		A partition has joined the upstream of a job whose downstream is a
 *		partitioned copy of it: give the downstream a partition of the same
 *		bound, at each level down to it, where it has none, so that the
 *		rows the partition brings find their place.  (A partition that
 *		leaves the upstream leaves its counterpart in place, emptied by the
 *		job; the cutover names it.)  As the job's owner, before the rows
 *		are captured.
 */
void
backfill_follow_partition(BackfillJob *job, Oid partition)
{
	List	   *chain = NIL;
	Oid			rel = partition;
	Oid			into = job->downstream;
	ListCell   *lc;
	RoleContext rc;
	int			guc_level;

	if (job->into_existing || get_rel_relkind(job->upstream) != RELKIND_PARTITIONED_TABLE ||
		get_rel_relkind(job->downstream) != RELKIND_PARTITIONED_TABLE)
		return;
	/* the partitions from the upstream's child down to the one that joined */
	while (rel != job->upstream)
	{
		chain = lcons_oid(rel, chain);
		if (!get_rel_relispartition(rel))
			return;				/* not under the upstream after all */
		rel = get_partition_parent(rel, true);
	}
	backfill_owner_enter(job->owner, false, &rc);
	guc_level = backfill_pin_catalog_path();
	rel = job->upstream;
	foreach(lc, chain)
	{
		Oid			part = lfirst_oid(lc);

		into = matching_partition(part, into, get_rel_name(rel));
		rel = part;
	}
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
}

/* ----------------------------------------------------------------
 * Foreign keys
 * ---------------------------------------------------------------- */

/*
 * Why the upstream's foreign key con is not given to a downstream of
 * relkind downstream_kind owned by role owner, or NULL when it is.
 */
static const char *
foreign_key_left_out(Form_pg_constraint con, HeapTuple tup, char downstream_kind, Oid owner)
{
	bool		isnull;
	Datum		confkey;
	ArrayType  *arr;
	int16	   *attnums;

	if (downstream_kind == RELKIND_PARTITIONED_TABLE)
		return "The downstream is partitioned, and PostgreSQL adds no foreign key NOT VALID to a partitioned table; the cutover lists it.";
	confkey = SysCacheGetAttr(CONSTROID, tup, Anum_pg_constraint_confkey, &isnull);
	if (isnull)
		elog(ERROR, "null confkey for constraint %u", con->oid);
	arr = DatumGetArrayTypeP(confkey);
	attnums = (int16 *) ARR_DATA_PTR(arr);
	for (int i = 0; i < ARR_DIMS(arr)[0]; i++)
		if (pg_class_aclcheck(con->confrelid, owner, ACL_REFERENCES) != ACLCHECK_OK &&
			pg_attribute_aclcheck(con->confrelid, attnums[i], owner, ACL_REFERENCES) != ACLCHECK_OK)
			return psprintf("Role \"%s\" has no REFERENCES privilege on column \"%s\" of table \"%s\"; the cutover lists it.",
							GetUserNameFromId(owner, false),
							get_attname(con->confrelid, attnums[i], false),
							get_rel_name(con->confrelid));
	return NULL;
}

/*
 * The upstream's valid foreign keys (its own, not a partition's copy of its
 * parent's) that the downstream may get: their definitions, and their
 * names into *names; those not given are left out, with a NOTICE when
 * notice.  Under the pinned search_path, so the definitions qualify every
 * name.
 */
static List *
upstream_foreign_keys(Oid upstream, Oid downstream, Oid owner, bool notice, List **names)
{
	Relation	conrel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *defs = NIL;
	char		downstream_kind = get_rel_relkind(downstream);

	*names = NIL;
	ScanKeyInit(&key, Anum_pg_constraint_conrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(upstream));
	scan = systable_beginscan(conrel, ConstraintRelidTypidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
		const char *why;
		char	   *def;

		/*
		 * A foreign key of the table to itself is the cutover's to give: the
		 * new table gets its own, to itself, at the swap
		 */
		if (con->contype != CONSTRAINT_FOREIGN || !con->convalidated ||
			OidIsValid(con->conparentid) || con->confrelid == con->conrelid)
			continue;
		def = TextDatumGetCString(DirectFunctionCall1(pg_get_constraintdef,
													  ObjectIdGetDatum(con->oid)));
		why = foreign_key_left_out(con, tup, downstream_kind, owner);
		if (why != NULL)
		{
			if (notice)
				ereport(NOTICE,
						(errmsg("foreign key \"%s\" of table \"%s\" is not given to the downstream",
								NameStr(con->conname), get_rel_name(upstream)),
						 errdetail_internal("%s", why)));
			continue;
		}
		defs = lappend(defs, def);
		*names = lappend(*names, pstrdup(NameStr(con->conname)));
	}
	systable_endscan(scan);
	table_close(conrel, AccessShareLock);
	return defs;
}

/*
 * backfill_note_foreign_keys
 *		At create_job, for a whole-table copy: a NOTICE for each of the
 *		upstream's foreign keys that the downstream will not get once the
 *		job follows (backfill_give_foreign_keys).  As the caller, the job's
 *		owner, under the pinned search_path.
 */
void
backfill_note_foreign_keys(Relation upstream, const char *downstream_sql)
{
	Oid			downstream = DatumGetObjectId(DirectFunctionCall1(regclassin,
																  CStringGetDatum(downstream_sql)));
	List	   *names;

	if (upstream->rd_rel->relkind != RELKIND_RELATION &&
		upstream->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return;
	(void) upstream_foreign_keys(RelationGetRelid(upstream), downstream, GetUserId(), true,
								 &names);
}

/*
 * Whether the downstream has a foreign key of definition def (NOT VALID or
 * not), under another name maybe.
 */
static bool
downstream_has(Oid downstream, const char *def)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(downstream), CStringGetTextDatum(def)};

	return backfill_spi_true_args("SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint c "
								  "WHERE c.conrelid OPERATOR(pg_catalog.=) $1 "
								  "AND c.contype OPERATOR(pg_catalog.=) 'f' "
								  "AND pg_catalog.regexp_replace(pg_catalog.pg_get_constraintdef(c.oid), ' NOT VALID$', '') "
								  "OPERATOR(pg_catalog.=) pg_catalog.regexp_replace($2, ' NOT VALID$', ''))",
								  2, argtypes, values);
}

/*
 * Run one ALTER TABLE ... ADD CONSTRAINT, attempt after attempt while a
 * lock is not had in time.  Returns whether it was added; another error is
 * a WARNING, and the foreign key is left out.
 */
static bool
add_foreign_key(const char *ddl, const char *downstream_sql, int lock_ms)
{
	for (int attempt = 1; attempt <= BACKFILL_FK_ATTEMPTS; attempt++)
	{
		ErrorData  *edata = backfill_subxact_exec(ddl, SPI_OK_UTILITY, lock_ms);

		if (edata == NULL)
			return true;
		/* a cancel or a shutdown ends the run, as anywhere else */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_OPERATOR_INTERVENTION)
			ReThrowError(edata);
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		{
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("could not give a foreign key to table %s", downstream_sql),
					 errdetail("%s: %s", ddl, edata->message),
					 errhint("Add it yourself before the cutover, or accept the loss: backfill.cutover(..., accept => '{foreign_key}').")));
			return false;
		}
		FreeErrorData(edata);
		backfill_sleep_ms(Min((long) lock_ms << Min(attempt, 4), BACKFILL_FK_MAX_SLEEP_MS));
	}
	ereport(WARNING,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not give a foreign key to table %s in %d attempts",
					downstream_sql, BACKFILL_FK_ATTEMPTS),
			 errdetail("Each attempt at \"%s\" waited at most %d ms for each lock.", ddl, lock_ms),
			 errhint("Run it yourself before the cutover.")));
	return false;
}

/*
 * backfill_give_foreign_keys
 *		Once a whole-table copy's job has finished and its downstream follows
 *		the upstream, add to the downstream NOT VALID each of the upstream's
 *		foreign keys it lacks and may get.  Called after the final barrier's
 *		commit, and at any later start of the job (a crash may have come in
 *		between), in a transaction of the caller's, which commits it.  Runs
 *		as the job's owner, in a security-restricted operation.
 */
void
backfill_give_foreign_keys(BackfillJob *job)
{
	RoleContext rc;
	List	   *defs;
	List	   *names;
	ListCell   *ldef;
	ListCell   *lname;
	int			lock_ms = Max(1, Min(100, DeadlockTimeout / 2));
	int			guc_level;

	if (job->into_existing || job->filter != NULL ||
		get_rel_relkind(job->upstream) != RELKIND_RELATION ||
		get_rel_relkind(job->downstream) != RELKIND_RELATION ||
		!backfill_job_catalog_has("indexes"))
		return;
	backfill_spi_enter();
	if (!backfill_job_gives_foreign_keys(job->job_id))
	{
		backfill_spi_leave();
		return;
	}
	backfill_owner_enter(job->owner, false, &rc);
	guc_level = backfill_pin_catalog_path();
	defs = upstream_foreign_keys(job->upstream, job->downstream, job->owner, false, &names);
	forboth(ldef, defs, lname, names)
	{
		char	   *def = lfirst(ldef);
		char	   *stmt;

		if (downstream_has(job->downstream, def))
			continue;
		stmt = psprintf("ALTER TABLE %s ADD CONSTRAINT %s %s NOT VALID", job->downstream_sql,
						quote_identifier(lfirst(lname)), def);
		if (add_foreign_key(stmt, job->downstream_sql, lock_ms))
			elog(DEBUG1, "backfill job %lld: %s", (long long) job->job_id, stmt);
	}
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
	backfill_spi_leave();
}
