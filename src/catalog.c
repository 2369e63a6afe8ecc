/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Jobs in the catalog: create_job, loading a job, the job lock.
 *
 * create_job builds, in the caller's transaction, everything a job needs:
 * the downstream table, the state table, the change table, the job's rows
 * in backfill.job and backfill.actor, and two row triggers on the upstream:
 * backfill_capture_<id>, enabled while the job backfills, and
 * backfill_apply_<id>, enabled once it has finished.  Any error rolls all of
 * it back, so nothing is left half-created.
 *
 * The upstream is locked in SHARE ROW EXCLUSIVE mode (the lock CREATE
 * TRIGGER takes anyway) for the whole of create_job, so no write can slip
 * between reading the table's shape and the capture trigger's creation.
 *
 * The job lock is an advisory lock with field4 BACKFILL_LOCK_FIELD4, which
 * pg_advisory_lock() never uses.  run_job holds it exclusively at session
 * level for the whole run; the background actors of a job share it, each at
 * session level; start_job, cancel_job, drop_job and reschedule hold it
 * exclusively at transaction level.  Whoever cannot get it at once fails
 * with OBJECT_IN_USE, except after stopping a job's workers, when waiting
 * for them to let go of it is the point.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "tcop/pquery.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/acl.h"
#include "catalog/objectaddress.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_create_job);

/*
 * Names of the state and change tables' own columns, per kind, which a key
 * column cannot take.
 */
static const char *const reserved_column_names[][8] = {
	[BACKFILL_KIND_NO_SHUFFLE] = {"vnode", "backfill_finished", "row_count"},
	[BACKFILL_KIND_ARRANGEMENT] = {"vnode", "backfill_finished", "row_count"},
	[BACKFILL_KIND_SNAPSHOT] = {"vnode", "epoch", "row_count", "is_epoch_finished",
	"backfill_seq", "backfill_captured_at", "backfill_old_row"},
	[BACKFILL_KIND_CDC] = {"split_id", "backfill_finished", "row_count", "cdc_offset"},
};

static const char *const kind_names[] = {
	[BACKFILL_KIND_NO_SHUFFLE] = "no_shuffle",
	[BACKFILL_KIND_ARRANGEMENT] = "arrangement",
	[BACKFILL_KIND_SNAPSHOT] = "snapshot",
	[BACKFILL_KIND_CDC] = "cdc",
};

const char *
backfill_kind_name(BackfillKind kind)
{
	return kind_names[kind];
}

static BackfillKind
parse_kind(const char *name)
{
	for (int i = 0; i < lengthof(kind_names); i++)
		if (strcmp(name, kind_names[i]) == 0)
			return (BackfillKind) i;

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized backfill kind \"%s\"", name),
			 errhint("Valid kinds are \"no_shuffle\", \"arrangement\", \"snapshot\" and \"cdc\".")));
	pg_unreachable();
}

/* "schema"."name" of a relation that must exist */
static char *
relation_sql(Oid relid)
{
	char	   *relname = get_rel_name(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  relname);
}

/* " COLLATE "schema"."name"" for a collatable column, else "" */
static char *
collate_clause(Oid collid)
{
	HeapTuple	tup;
	Form_pg_collation coll;
	char	   *result;

	if (!OidIsValid(collid))
		return "";
	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collid);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	result = psprintf(" COLLATE %s",
					  quote_qualified_identifier(get_namespace_name(coll->collnamespace),
												 NameStr(coll->collname)));
	ReleaseSysCache(tup);
	return result;
}

static char *
opclass_name(Oid opclass)
{
	HeapTuple	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclass);
	result = pstrdup(NameStr(((Form_pg_opclass) GETSTRUCT(tup))->opcname));
	ReleaseSysCache(tup);
	return result;
}

static void
require_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
}

/*
 * The key of the upstream, from its primary key index: attribute numbers in
 * key order, and the index's collations.  The key must use default btree
 * operator classes, since positions are compared with the types' default
 * ordering (ORDER BY and row comparison).
 */
static int
upstream_key(Relation rel, AttrNumber **attnums, Oid **collations)
{
	Relation	index;
	Form_pg_index indexform;
	int			npk;
	oidvector  *indclass;
	Datum		datum;
	bool		isnull;

	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	if (!OidIsValid(rel->rd_pkindex))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key",
						RelationGetRelationName(rel)),
				 errdetail("A backfill reads the upstream in primary key order and records its progress as a primary key."),
				 errhint("Add a primary key to the table.")));

	index = index_open(rel->rd_pkindex, AccessShareLock);
	indexform = index->rd_index;
	npk = indexform->indnkeyatts;
	datum = SysCacheGetAttr(INDEXRELID, index->rd_indextuple,
							Anum_pg_index_indclass, &isnull);
	Assert(!isnull);
	indclass = (oidvector *) DatumGetPointer(datum);

	*attnums = palloc(npk * sizeof(AttrNumber));
	*collations = palloc(npk * sizeof(Oid));
	for (int i = 0; i < npk; i++)
	{
		AttrNumber	attnum = indexform->indkey.values[i];
		Oid			atttype = get_atttype(RelationGetRelid(rel), attnum);

		if (!OidIsValid(lookup_type_cache(atttype, TYPECACHE_HASH_EXTENDED_PROC)->hash_extended_proc))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key column \"%s\" of table \"%s\" has a type without an extended hash function",
							get_attname(RelationGetRelid(rel), attnum, false),
							RelationGetRelationName(rel)),
					 errdetail("A key's vnode is a hash of its columns; type %s cannot be hashed.",
							   format_type_be(atttype))));
		if (OidIsValid(index->rd_indcollation[i]) &&
			!get_collation_isdeterministic(index->rd_indcollation[i]))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key column \"%s\" of table \"%s\" has a nondeterministic collation",
							get_attname(RelationGetRelid(rel), attnum, false),
							RelationGetRelationName(rel)),
					 errdetail("Keys that are equal but not identical would fall into different vnodes.")));
		if (indclass->values[i] != GetDefaultOpClass(atttype, BTREE_AM_OID))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key of table \"%s\" uses a non-default operator class",
							RelationGetRelationName(rel)),
					 errdetail("Column \"%s\" is indexed with operator class \"%s\".",
							   get_attname(RelationGetRelid(rel), attnum, false),
							   opclass_name(indclass->values[i]))));
		(*attnums)[i] = attnum;
		(*collations)[i] = index->rd_indcollation[i];
	}
	index_close(index, AccessShareLock);
	return npk;
}

/*
 * The downstream's columns: the requested ones in the requested order, with
 * the key columns that were not requested put first, or all columns.
 */
static int
output_columns(Relation rel, ArrayType *requested, int npk, AttrNumber *pk,
			   AttrNumber **attnums)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			ncols = 0;
	AttrNumber *cols = palloc(sizeof(AttrNumber) * (desc->natts + npk));

	if (requested == NULL)
	{
		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				cols[ncols++] = TupleDescAttr(desc, i)->attnum;
	}
	else
	{
		Datum	   *names;
		bool	   *nulls;
		int			nnames;

		if (ARR_NDIM(requested) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("argument \"columns\" must be a one-dimensional array")));
		deconstruct_array(requested, TEXTOID, -1, false, TYPALIGN_INT,
						  &names, &nulls, &nnames);

		/* key columns that were not asked for come first */
		for (int k = 0; k < npk; k++)
		{
			char	   *keyname = get_attname(RelationGetRelid(rel), pk[k], false);
			bool		found = false;

			for (int i = 0; i < nnames && !found; i++)
				found = !nulls[i] && strcmp(TextDatumGetCString(names[i]), keyname) == 0;
			if (!found)
				cols[ncols++] = pk[k];
		}

		cols = repalloc(cols, sizeof(AttrNumber) * (ncols + nnames));
		for (int i = 0; i < nnames; i++)
		{
			char	   *name;
			AttrNumber	attnum;

			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("argument \"columns\" must not contain nulls")));
			name = TextDatumGetCString(names[i]);
			attnum = get_attnum(RelationGetRelid(rel), name);
			if (attnum == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" of relation \"%s\" does not exist",
								name, RelationGetRelationName(rel))));
			if (attnum < 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot backfill system column \"%s\"", name)));
			/* key columns put first were not in the list: a match is a repeat */
			for (int j = 0; j < ncols; j++)
				if (cols[j] == attnum)
					ereport(ERROR,
							(errcode(ERRCODE_DUPLICATE_COLUMN),
							 errmsg("column \"%s\" specified more than once", name)));
			cols[ncols++] = attnum;
		}
	}
	*attnums = cols;
	return ncols;
}

/* nextval() of one of the extension's sequences */
static int64
next_id(const char *sequence)
{
	Oid			seqid;
	List	   *names = list_make2(makeString(BACKFILL_SCHEMA),
								   makeString((char *) sequence));

	RoleContext rc;
	int64		result;

	seqid = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, false);
	backfill_catalog_enter(&rc);
	result = DatumGetInt64(DirectFunctionCall1(nextval_oid, ObjectIdGetDatum(seqid)));
	backfill_role_leave(&rc);
	return result;
}

static void
spi_exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/*
 * backfill.create_job(name text, upstream regclass, kind text,
 *					   columns text[], parallelism int, chunk_size int)
 *		RETURNS bigint
 */
Datum
backfill_create_job(PG_FUNCTION_ARGS)
{
	char	   *name;
	Oid			upstream_oid;
	BackfillKind kind;
	ArrayType  *requested = NULL;
	int32		parallelism;
	int32		chunk_size;
	int32		rate_limit = -1;
	Relation	rel;
	AttrNumber *pk;
	Oid		   *pk_collations;
	int			npk;
	AttrNumber *cols;
	int			ncols;
	RangeVar   *downstream_rv;
	Oid			downstream_nsp;
	char	   *downstream_sql;
	char	   *upstream_sql;
	char	   *state_sql;
	char	   *changes_sql;
	int64		job_id;
	int32		fragment_id;
	StringInfoData buf;
	StringInfoData pklist;
	StringInfoData collist;
	StringInfoData ddl;
	RoleContext rc;
	int64		total_rows;
	Datum		actor_ids[BACKFILL_MAX_PARALLELISM];
	Datum		vnode_starts[BACKFILL_MAX_PARALLELISM];
	Datum		vnode_ends[BACKFILL_MAX_PARALLELISM];
	Datum		colnames_datums[MaxTupleAttributeNumber];
	Datum		pknames_datums[INDEX_MAX_KEYS];

	require_arg(fcinfo, 0, "name");
	require_arg(fcinfo, 1, "upstream");
	require_arg(fcinfo, 2, "kind");
	require_arg(fcinfo, 4, "parallelism");
	require_arg(fcinfo, 5, "chunk_size");

	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	upstream_oid = PG_GETARG_OID(1);
	kind = parse_kind(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	if (!PG_ARGISNULL(3))
		requested = PG_GETARG_ARRAYTYPE_P(3);
	parallelism = PG_GETARG_INT32(4);
	chunk_size = PG_GETARG_INT32(5);
	if (!PG_ARGISNULL(6))
	{
		rate_limit = PG_GETARG_INT32(6);
		if (rate_limit < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rate_limit must not be negative"),
					 errhint("Pass NULL for no limit, or 0 to create the job paused.")));
	}

	/* the library may be newer than the catalog until ALTER EXTENSION UPDATE */
	if ((kind == BACKFILL_KIND_SNAPSHOT || kind == BACKFILL_KIND_CDC) &&
		get_attnum(get_relname_relid("job", get_namespace_oid(BACKFILL_SCHEMA, false)),
				   "snapshot_epoch") == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"%s\" needs version 1.1 of extension \"backfill\"",
						backfill_kind_name(kind)),
				 errhint("Run ALTER EXTENSION backfill UPDATE.")));
	if (parallelism < 1 || parallelism > BACKFILL_MAX_PARALLELISM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallelism must be between 1 and %d", BACKFILL_MAX_PARALLELISM),
				 errdetail("The %d vnodes are split across the actors, so there can be at most one actor per vnode.",
						   BACKFILL_VNODE_COUNT)));
	if (chunk_size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_size must be at least 1")));

	/* the upstream: a plain permanent table with a primary key */
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(upstream_oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", upstream_oid)));
	/* before any lock: a user who may not capture it must not queue on it */
	{
		AclMode		needed[2] = {ACL_SELECT, ACL_TRIGGER};

		/* each of them: an aclcheck of several bits passes on any one */
		for (int i = 0; i < lengthof(needed); i++)
		{
			AclResult	aclresult = pg_class_aclcheck(upstream_oid, GetUserId(), needed[i]);

			if (aclresult != ACLCHECK_OK)
				aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(upstream_oid)),
							   get_rel_name(upstream_oid));
		}
	}
	rel = try_relation_open(upstream_oid, ShareRowExclusiveLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", upstream_oid)));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot backfill from relation \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind)));
	if (IsCatalogRelation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot backfill from system catalog \"%s\"",
						RelationGetRelationName(rel))));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot backfill from temporary table \"%s\"",
						RelationGetRelationName(rel))));
	if (rel->rd_rel->relnamespace == get_namespace_oid(BACKFILL_SCHEMA, false))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot backfill from table \"%s\" of schema \"%s\"",
						RelationGetRelationName(rel), BACKFILL_SCHEMA),
				 errdetail("Schema \"%s\" holds the extension's own tables.", BACKFILL_SCHEMA)));

	npk = upstream_key(rel, &pk, &pk_collations);
	for (int k = 0; k < npk; k++)
	{
		char	   *keyname = get_attname(upstream_oid, pk[k], false);

		for (int i = 0; i < lengthof(reserved_column_names[kind]); i++)
			if (reserved_column_names[kind][i] &&
				strcmp(keyname, reserved_column_names[kind][i]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("primary key column \"%s\" of table \"%s\" has a name the state table uses",
								keyname, RelationGetRelationName(rel)),
						 errdetail("The state and change tables of a job of kind \"%s\" have a column \"%s\" besides the key columns.",
								   backfill_kind_name(kind), keyname)));
	}
	ncols = output_columns(rel, requested, npk, pk, &cols);
	if (kind == BACKFILL_KIND_CDC)
		backfill_cdc_check_create(rel, parallelism);

	/* the downstream: a new table, outside the extension's schema */
	downstream_rv = makeRangeVarFromNameList(stringToQualifiedNameList(name));
	if (downstream_rv->relname[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid name syntax"),
				 errdetail("The name of the downstream table is empty.")));
	downstream_nsp = RangeVarGetCreationNamespace(downstream_rv);
	if (downstream_nsp == get_namespace_oid(BACKFILL_SCHEMA, false))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot create the downstream table in schema \"%s\"", BACKFILL_SCHEMA),
				 errdetail("Schema \"%s\" holds the extension's own tables.", BACKFILL_SCHEMA),
				 errhint("Choose another schema for the downstream table.")));
	if (isAnyTempNamespace(downstream_nsp))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create the downstream table in a temporary schema"),
				 errdetail("Background workers and later sessions must see the downstream table."),
				 errhint("Choose a permanent schema for the downstream table.")));
	if (OidIsValid(get_relname_relid(downstream_rv->relname, downstream_nsp)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", downstream_rv->relname),
				 errhint("Choose another name for the job, or drop the existing relation.")));
	downstream_sql = quote_qualified_identifier(get_namespace_name(downstream_nsp),
												downstream_rv->relname);
	upstream_sql = relation_sql(upstream_oid);

	job_id = next_id("job_id_seq");
	fragment_id = (int32) next_id("fragment_id_seq");
	for (int i = 0; i < parallelism; i++)
	{
		actor_ids[i] = Int32GetDatum((int32) next_id("actor_id_seq"));
		vnode_starts[i] = Int16GetDatum((int16) (i * BACKFILL_VNODE_COUNT / parallelism));
		vnode_ends[i] = Int16GetDatum((int16) ((i + 1) * BACKFILL_VNODE_COUNT / parallelism - 1));
	}
	state_sql = psprintf("%s.%s", BACKFILL_SCHEMA,
						 quote_identifier(psprintf("state_%lld", (long long) job_id)));
	changes_sql = psprintf("%s.%s", BACKFILL_SCHEMA,
						   quote_identifier(psprintf("changes_%lld", (long long) job_id)));

	/* column lists */
	initStringInfo(&pklist);
	initStringInfo(&collist);
	initStringInfo(&ddl);
	for (int k = 0; k < npk; k++)
	{
		char	   *keyname = get_attname(upstream_oid, pk[k], false);
		Oid			type;
		int32		typmod;
		Oid			collid;

		get_atttypetypmodcoll(upstream_oid, pk[k], &type, &typmod, &collid);
		appendStringInfo(&pklist, "%s%s", k > 0 ? ", " : "", quote_identifier(keyname));
		appendStringInfo(&ddl, ", %s %s%s", quote_identifier(keyname),
						 format_type_with_typemod(type, typmod),
						 collate_clause(pk_collations[k]));
		pknames_datums[k] = CStringGetTextDatum(keyname);
	}
	for (int i = 0; i < ncols; i++)
	{
		char	   *colname = get_attname(upstream_oid, cols[i], false);

		appendStringInfo(&collist, "%s%s", i > 0 ? ", " : "", quote_identifier(colname));
		colnames_datums[i] = CStringGetTextDatum(colname);
	}

	SPI_connect();

	/* the downstream table: the output columns, keyed as the upstream */
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE TABLE %s (", downstream_sql);
	for (int i = 0; i < ncols; i++)
	{
		Oid			type;
		int32		typmod;
		Oid			collid;

		get_atttypetypmodcoll(upstream_oid, cols[i], &type, &typmod, &collid);
		appendStringInfo(&buf, "%s %s%s, ",
						 quote_identifier(get_attname(upstream_oid, cols[i], false)),
						 format_type_with_typemod(type, typmod),
						 collate_clause(collid));
	}
	appendStringInfo(&buf, "PRIMARY KEY (%s))", pklist.data);
	spi_exec(buf.data, SPI_OK_UTILITY);

	/*
	 * The state and change tables live in the extension's schema, where only
	 * the extension's owner creates tables; they belong to the job's owner,
	 * who runs the job.
	 */
	backfill_catalog_enter(&rc);

	/* the state table, in RisingWave's layout of the kind */
	resetStringInfo(&buf);
	if (kind == BACKFILL_KIND_SNAPSHOT)
		appendStringInfo(&buf,
						 "CREATE TABLE %s (vnode pg_catalog.int2 PRIMARY KEY, "
						 "epoch pg_catalog.int8, row_count pg_catalog.int8, "
						 "is_epoch_finished pg_catalog.bool%s)",
						 state_sql, ddl.data);
	else if (kind == BACKFILL_KIND_CDC)
		appendStringInfo(&buf,
						 "CREATE TABLE %s (split_id pg_catalog.varchar PRIMARY KEY%s, "
						 "backfill_finished pg_catalog.bool, row_count pg_catalog.int8, "
						 "cdc_offset pg_catalog.jsonb)",
						 state_sql, ddl.data);
	else
		appendStringInfo(&buf,
						 "CREATE TABLE %s (vnode pg_catalog.int2 PRIMARY KEY%s, "
						 "backfill_finished pg_catalog.bool, row_count pg_catalog.int8)",
						 state_sql, ddl.data);
	spi_exec(buf.data, SPI_OK_UTILITY);

	/*
	 * The change table: the keys written since the last barrier; for the
	 * snapshot kind, a log of them with the rows' images before the write
	 * (snapshot.c).
	 */
	resetStringInfo(&buf);
	if (kind == BACKFILL_KIND_SNAPSHOT)
	{
		appendStringInfo(&buf,
						 "CREATE TABLE %s (%s, backfill_seq pg_catalog.int8, "
						 "backfill_captured_at pg_catalog.timestamptz, backfill_old_row %s)",
						 changes_sql, ddl.data + 2, downstream_sql);
		spi_exec(buf.data, SPI_OK_UTILITY);
		resetStringInfo(&buf);
		appendStringInfo(&buf, "CREATE INDEX ON %s (%s, backfill_seq)", changes_sql, pklist.data);
	}
	else
		appendStringInfo(&buf, "CREATE TABLE %s (%s)", changes_sql, ddl.data + 2);
	spi_exec(buf.data, SPI_OK_UTILITY);
	resetStringInfo(&buf);
	appendStringInfo(&buf, "ALTER TABLE %s OWNER TO %s", state_sql,
					 quote_identifier(GetUserNameFromId(rc.save_userid, false)));
	spi_exec(buf.data, SPI_OK_UTILITY);
	resetStringInfo(&buf);
	appendStringInfo(&buf, "ALTER TABLE %s OWNER TO %s", changes_sql,
					 quote_identifier(GetUserNameFromId(rc.save_userid, false)));
	spi_exec(buf.data, SPI_OK_UTILITY);

	/*
	 * The state and change tables belong to the extension's data: DROP
	 * EXTENSION refuses while they exist, and CASCADE drops them.  They are
	 * not members, so pg_dump keeps them.
	 */
	{
		ObjectAddress extension;

		ObjectAddressSet(extension, ExtensionRelationId,
						 get_extension_oid(BACKFILL_SCHEMA, false));
		for (int i = 0; i < 2; i++)
		{
			ObjectAddress table;
			Oid			relid;

			relid = get_relname_relid(psprintf(i == 0 ? "state_%lld" : "changes_%lld",
											   (long long) job_id),
									  get_namespace_oid(BACKFILL_SCHEMA, false));
			ObjectAddressSet(table, RelationRelationId, relid);
			recordDependencyOn(&table, &extension, DEPENDENCY_NORMAL);
		}
	}

	/* the catalog rows */
	{
		Oid			argtypes[17] = {INT8OID, TEXTOID, TEXTOID, OIDOID, OIDOID,
		TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT4OID, INT4OID,
		INT4OID, INT8OID, TEXTOID, INT4OID, OIDOID};
		Datum		values[17];
		char		nulls[17];
		char	   *ddl_statement;
		bool		isnull;

		/* what RisingWave's rw_ddl_progress shows as the statement */
		ddl_statement = psprintf("CREATE MATERIALIZED VIEW %s AS SELECT %s FROM %s",
								 name, collist.data, upstream_sql);

		/* read as the caller, who may */
		backfill_role_leave(&rc);
		resetStringInfo(&buf);
		appendStringInfo(&buf, "SELECT pg_catalog.count(*) FROM ONLY %s", upstream_sql);
		spi_exec(buf.data, SPI_OK_SELECT);
		total_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 1, &isnull));
		backfill_catalog_enter(&rc);

		values[0] = Int64GetDatum(job_id);
		values[1] = CStringGetTextDatum(name);
		values[2] = CStringGetTextDatum(backfill_kind_name(kind));
		values[3] = ObjectIdGetDatum(upstream_oid);
		values[4] = ObjectIdGetDatum(upstream_oid);
		values[5] = CStringGetTextDatum(downstream_sql);
		values[6] = CStringGetTextDatum(state_sql);
		values[7] = CStringGetTextDatum(changes_sql);
		values[8] = PointerGetDatum(construct_array(colnames_datums, ncols, TEXTOID,
													-1, false, TYPALIGN_INT));
		values[9] = PointerGetDatum(construct_array(pknames_datums, npk, TEXTOID,
													-1, false, TYPALIGN_INT));
		values[10] = Int32GetDatum(fragment_id);
		values[11] = Int32GetDatum(parallelism);
		values[12] = Int32GetDatum(chunk_size);
		values[13] = Int64GetDatum(total_rows);
		values[14] = CStringGetTextDatum(ddl_statement);
		values[15] = Int32GetDatum(rate_limit);
		values[16] = ObjectIdGetDatum(rc.save_userid);	/* the caller owns it */
		memset(nulls, ' ', sizeof(nulls));
		if (rate_limit < 0)
			nulls[15] = 'n';

		/* $5 is unused: relations are stored as regclass, which dumps by name */
		if (SPI_execute_with_args("INSERT INTO backfill.job (job_id, job_name, kind, upstream, "
								  "downstream_name, downstream, state_table, "
								  "change_table, columns, pk_columns, fragment_id, parallelism, "
								  "chunk_size, total_rows, ddl_statement, rate_limit, owner) "
								  "VALUES ($1, $2, $3, $4, $6, $6::pg_catalog.regclass, "
								  "$7::pg_catalog.regclass, $8::pg_catalog.regclass, $9, $10, "
								  "$11, $12, $13, $14, $15, $16, $17::pg_catalog.regrole)",
								  17, argtypes, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into backfill.job");
	}
	{
		Oid			argtypes[5] = {INT2ARRAYOID, INT8OID, INT4OID, INT2ARRAYOID, INT2ARRAYOID};
		Datum		values[5];

		values[0] = PointerGetDatum(construct_array(actor_ids, parallelism, INT4OID,
													4, true, TYPALIGN_INT));
		values[1] = Int64GetDatum(job_id);
		values[2] = Int32GetDatum(fragment_id);
		values[3] = PointerGetDatum(construct_array(vnode_starts, parallelism, INT2OID,
													2, true, TYPALIGN_SHORT));
		values[4] = PointerGetDatum(construct_array(vnode_ends, parallelism, INT2OID,
													2, true, TYPALIGN_SHORT));
		argtypes[0] = INT4ARRAYOID;
		if (SPI_execute_with_args("INSERT INTO backfill.actor (actor_id, job_id, fragment_id, "
								  "vnode_start, vnode_end) "
								  "SELECT a, $2, $3, s, e FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($4), pg_catalog.unnest($5)) AS u(a, s, e)",
								  5, argtypes, values, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into backfill.actor");
	}

	/* the snapshot kind reads as of now: the epoch of create_job */
	if (kind == BACKFILL_KIND_SNAPSHOT)
	{
		Oid			argtypes[2] = {INT8OID, INT8OID};
		Datum		values[2] = {Int64GetDatum(job_id),
		Int64GetDatum(backfill_next_epoch(0))};

		if (SPI_execute_with_args("UPDATE backfill.job SET snapshot_epoch = $2 WHERE job_id = $1",
								  2, argtypes, values, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not update backfill.job");
	}

	/*
	 * The triggers: capture now, apply once the job has finished.  A cdc job
	 * captures from the write-ahead log instead (cdc.c).
	 */
	if (kind != BACKFILL_KIND_CDC)
	{
		resetStringInfo(&buf);
		appendStringInfo(&buf,
						 "CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s "
						 "FOR EACH ROW EXECUTE FUNCTION backfill.capture_change('%lld')",
						 quote_identifier(psprintf("backfill_capture_%lld", (long long) job_id)),
						 upstream_sql, (long long) job_id);
		spi_exec(buf.data, SPI_OK_UTILITY);
	}
	resetStringInfo(&buf);
	appendStringInfo(&buf,
					 "CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s "
					 "FOR EACH ROW EXECUTE FUNCTION backfill.apply_change('%lld')",
					 quote_identifier(psprintf("backfill_apply_%lld", (long long) job_id)),
					 upstream_sql, (long long) job_id);
	spi_exec(buf.data, SPI_OK_UTILITY);
	resetStringInfo(&buf);
	appendStringInfo(&buf,
					 "CREATE TRIGGER %s BEFORE TRUNCATE ON %s "
					 "FOR EACH STATEMENT EXECUTE FUNCTION backfill.truncate_change('%lld')",
					 quote_identifier(psprintf("backfill_capture_truncate_%lld", (long long) job_id)),
					 upstream_sql, (long long) job_id);
	spi_exec(buf.data, SPI_OK_UTILITY);
	resetStringInfo(&buf);
	appendStringInfo(&buf,
					 "CREATE TRIGGER %s AFTER TRUNCATE ON %s "
					 "FOR EACH STATEMENT EXECUTE FUNCTION backfill.truncate_change('%lld')",
					 quote_identifier(psprintf("backfill_apply_truncate_%lld", (long long) job_id)),
					 upstream_sql, (long long) job_id);
	spi_exec(buf.data, SPI_OK_UTILITY);

	/*
	 * Not ALTER TABLE: we hold the upstream open, and need not own it.  The
	 * capture fires ALWAYS, so that writes of a replica-role session (a
	 * logical replication subscriber, a restore) are captured too.
	 */
	if (kind != BACKFILL_KIND_CDC)
		EnableDisableTrigger(rel, psprintf("backfill_capture_%lld", (long long) job_id),
							 TRIGGER_FIRES_ALWAYS, false, ShareRowExclusiveLock);
	EnableDisableTrigger(rel, psprintf("backfill_apply_%lld", (long long) job_id),
						 TRIGGER_DISABLED, false, ShareRowExclusiveLock);
	EnableDisableTrigger(rel, psprintf("backfill_capture_truncate_%lld", (long long) job_id),
						 TRIGGER_FIRES_ALWAYS, false, ShareRowExclusiveLock);
	EnableDisableTrigger(rel, psprintf("backfill_apply_truncate_%lld", (long long) job_id),
						 TRIGGER_DISABLED, false, ShareRowExclusiveLock);
	backfill_role_leave(&rc);

	SPI_finish();
	relation_close(rel, NoLock);

	if (kind == BACKFILL_KIND_NO_SHUFFLE)
		ereport(WARNING,
				(errmsg("backfill job %lld uses the legacy no-shuffle backfill, which cannot resume after an interruption",
						(long long) job_id),
				 errdetail("If the job stops before it has finished, every later run fails and the job must be cancelled and recreated."),
				 errhint("Use kind \"arrangement\" for a job that resumes where it stopped.")));

	PG_RETURN_INT64(job_id);
}

/*
 * backfill_pk_list
 *		"alias"."k1", "alias"."k2", ... (or without alias when NULL)
 */
char *
backfill_pk_list(BackfillJob *job, const char *alias)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
	{
		if (k > 0)
			appendStringInfoString(&buf, ", ");
		if (alias)
			appendStringInfo(&buf, "%s.", alias);
		appendStringInfoString(&buf, quote_identifier(job->pk_names[k]));
	}
	return buf.data;
}

static char *
text_array_sql(Datum array, char ***elems, int *nelems)
{
	Datum	   *datums;
	bool	   *nulls;
	int			n;
	StringInfoData buf;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &datums, &nulls, &n);
	initStringInfo(&buf);
	if (elems)
		*elems = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		char	   *s = TextDatumGetCString(datums[i]);

		if (elems)
			(*elems)[i] = s;
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", quote_identifier(s));
	}
	if (nelems)
		*nelems = n;
	return buf.data;
}

static char *safe_search_path(int npk, Oid *pk_types);

/*
 * The job's key must still be the upstream's primary key, of the types its
 * state table was made with: positions are compared, and bound as
 * parameters, as those types.  A key that changed (retyped, another primary
 * key) is refused here rather than misread.
 */
static void
check_key_unchanged(BackfillJob *job)
{
	Relation	rel = table_open(job->upstream, AccessShareLock);
	bool		ok;
	Relation	index;

	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	ok = OidIsValid(rel->rd_pkindex);
	if (ok)
	{
		index = index_open(rel->rd_pkindex, AccessShareLock);
		ok = index->rd_index->indnkeyatts == job->npk;
		for (int k = 0; ok && k < job->npk; k++)
		{
			/*
			 * The key types the job was made with: its state table's, but
			 * for the snapshot kind its log's, so that a progress table that
			 * lost them fails its own check (state.c) with RisingWave's
			 * message, recorded on the job.
			 */
			Oid			made_with = job->kind == BACKFILL_KIND_SNAPSHOT ?
				job->change_table : job->state_table;
			AttrNumber	made_attnum = get_attnum(made_with, job->pk_names[k]);

			ok = index->rd_index->indkey.values[k] == get_attnum(job->upstream, job->pk_names[k]) &&
				made_attnum != InvalidAttrNumber &&
				get_atttype(made_with, made_attnum) == job->pk_types[k];
		}
		index_close(index, AccessShareLock);
	}
	table_close(rel, AccessShareLock);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the primary key of table %s has changed since backfill job %lld was created",
						job->upstream_sql, (long long) job->job_id),
				 errdetail("The job's positions are keys of the primary key it was created with."),
				 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again.",
						 (long long) job->job_id)));
}

/*
 * backfill_load_job
 *		Read a job's definition and actors into cxt.  Caller is connected to
 *		SPI.  The job's state is not read here (see state.c).
 */
BackfillJob *
backfill_load_job(int64 job_id, MemoryContext cxt)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	HeapTuple	tup;
	TupleDesc	desc;
	BackfillJob *job;
	MemoryContext oldcxt;
	bool		isnull;

	if (SPI_execute_with_args("SELECT job_name, kind, status, owner::pg_catalog.oid, "
							  "upstream::pg_catalog.oid, downstream::pg_catalog.oid, "
							  "state_table::pg_catalog.oid, change_table::pg_catalog.oid, "
							  "fragment_id, chunk_size, "
							  "(SELECT coalesce(pg_catalog.max(a.epoch), 0) FROM backfill.actor a "
							  " WHERE a.job_id = j.job_id), "
							  "runs, columns, pk_columns, coalesce(rate_limit, -1), "
							  "run_mode = 'background', "
							  /* read by name: a 1.0 catalog has no such column yet */
							  "coalesce((pg_catalog.to_jsonb(j) OPERATOR(pg_catalog.->>) 'snapshot_epoch')::pg_catalog.int8, 0) "
							  "FROM backfill.job j WHERE job_id = $1",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));

	oldcxt = MemoryContextSwitchTo(cxt);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	job = palloc0(sizeof(BackfillJob));
	job->job_id = job_id;
	job->job_name = SPI_getvalue(tup, desc, 1);
	job->kind = parse_kind(SPI_getvalue(tup, desc, 2));
	job->status = SPI_getvalue(tup, desc, 3);
	job->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	job->upstream = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
	job->downstream = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	if (isnull)
		job->downstream = InvalidOid;
	job->state_table = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
	if (isnull)
		job->state_table = InvalidOid;
	job->change_table = DatumGetObjectId(SPI_getbinval(tup, desc, 8, &isnull));
	if (isnull)
		job->change_table = InvalidOid;
	job->fragment_id = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
	job->chunk_size = DatumGetInt32(SPI_getbinval(tup, desc, 10, &isnull));
	job->epoch = DatumGetInt64(SPI_getbinval(tup, desc, 11, &isnull));
	job->runs = DatumGetInt32(SPI_getbinval(tup, desc, 12, &isnull));
	job->columns_sql = text_array_sql(SPI_getbinval(tup, desc, 13, &isnull),
									  &job->col_names, &job->ncols);
	(void) text_array_sql(SPI_getbinval(tup, desc, 14, &isnull), &job->pk_names, &job->npk);
	job->rate_limit = DatumGetInt32(SPI_getbinval(tup, desc, 15, &isnull));
	job->background = DatumGetBool(SPI_getbinval(tup, desc, 16, &isnull));
	job->snapshot_epoch = DatumGetInt64(SPI_getbinval(tup, desc, 17, &isnull));

	/* a cancelled job has no tables left: the caller reports it */
	if (strcmp(job->status, "cancelled") != 0)
	{
		job->upstream_sql = relation_sql(job->upstream);
		job->downstream_sql = relation_sql(job->downstream);
		job->state_sql = relation_sql(job->state_table);
		job->changes_sql = relation_sql(job->change_table);
		job->pk_types = palloc(sizeof(Oid) * job->npk);
		for (int k = 0; k < job->npk; k++)
		{
			AttrNumber	attnum = get_attnum(job->upstream, job->pk_names[k]);

			if (attnum == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("key column \"%s\" of backfill job %lld no longer exists in table %s",
								job->pk_names[k], (long long) job_id, job->upstream_sql)));
			job->pk_types[k] = get_atttype(job->upstream, attnum);
		}
		check_key_unchanged(job);
		job->search_path = safe_search_path(job->npk, job->pk_types);
	}
	MemoryContextSwitchTo(oldcxt);

	/* by name: a 1.0 catalog has no log_store_caught_up yet */
	if (SPI_execute_with_args("SELECT actor_id, vnode_start, vnode_end, "
							  "coalesce((pg_catalog.to_jsonb(a) OPERATOR(pg_catalog.->>) "
							  "'log_store_caught_up')::pg_catalog.bool, false) "
							  "FROM backfill.actor a "
							  "WHERE job_id = $1 ORDER BY actor_id",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.actor");
	oldcxt = MemoryContextSwitchTo(cxt);
	job->nactors = (int) SPI_processed;
	job->actors = palloc0(sizeof(BackfillActor) * Max(job->nactors, 1));
	for (int i = 0; i < job->nactors; i++)
	{
		tup = SPI_tuptable->vals[i];
		desc = SPI_tuptable->tupdesc;
		job->actors[i].actor_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		job->actors[i].vnode_start = DatumGetInt16(SPI_getbinval(tup, desc, 2, &isnull));
		job->actors[i].vnode_end = DatumGetInt16(SPI_getbinval(tup, desc, 3, &isnull));
		/* a snapshot job that had caught up goes on with its final barrier */
		job->actors[i].caught_up = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull)) && !isnull;
	}
	MemoryContextSwitchTo(oldcxt);
	return job;
}

static void
job_locktag(LOCKTAG *tag, int64 job_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (job_id >> 32),
						 (uint32) job_id, BACKFILL_LOCK_FIELD4);
}

static void
report_job_running(int64 job_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("backfill job %lld is already running", (long long) job_id),
			 errdetail("Another session is running or changing the job."),
			 errhint("Wait for that session to finish, or stop it.")));
}

/*
 * backfill_lock_job
 *		Take the job lock in exclusive mode without waiting, at session level
 *		(run_job) or transaction level (start_job, cancel_job, drop_job).
 */
void
backfill_lock_job(int64 job_id, bool session)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	if (LockAcquire(&tag, ExclusiveLock, session, true) == LOCKACQUIRE_NOT_AVAIL)
		report_job_running(job_id);
}

void
backfill_unlock_job(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	LockRelease(&tag, ExclusiveLock, true);
}

/*
 * backfill_wait_job_lock
 *		The exclusive job lock for this transaction, waiting for it: after
 *		stopping a job's workers, which release it as they exit.
 */
void
backfill_wait_job_lock(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * backfill_lock_job_shared / backfill_unlock_job_shared
 *		The lock the actors of a job hold together, at session level, for
 *		as long as they run; they wait for it while start_job's transaction
 *		holds it exclusively.
 */
void
backfill_lock_job_shared(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	(void) LockAcquire(&tag, ShareLock, true, false);
}

void
backfill_unlock_job_shared(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	LockRelease(&tag, ShareLock, true);
}

/* whether this transaction holds the job lock exclusively */
bool
backfill_job_lock_mine(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	return LockHeldByMe(&tag, ExclusiveLock);
}

/* whether anyone holds the job lock now */
bool
backfill_job_lock_held(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, false);
	return false;
}

/*
 * safe_search_path
 *		The search_path under which the extension plans and runs its SQL:
 *		pg_catalog, then the schemas of the key types' btree operators (the
 *		comparisons in generated SQL are by operator name), then pg_temp.
 *		Nothing a caller put on its own search_path can change what the
 *		statements mean, least of all when they run as the job's owner.
 */
static char *
safe_search_path(int npk, Oid *pk_types)
{
	StringInfoData buf;
	List	   *seen = NIL;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "pg_catalog");
	for (int k = 0; k < npk; k++)
	{
		Oid			opclass = GetDefaultOpClass(pk_types[k], BTREE_AM_OID);
		Oid			opfamily;

		if (!OidIsValid(opclass))
			continue;
		opfamily = get_opclass_family(opclass);
		for (int strategy = 1; strategy <= BTMaxStrategyNumber; strategy++)
		{
			Oid			opr = get_opfamily_member(opfamily, pk_types[k], pk_types[k], strategy);
			HeapTuple	tup;
			Oid			nsp;

			if (!OidIsValid(opr))
				continue;
			tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opr));
			if (!HeapTupleIsValid(tup))
				continue;
			nsp = ((Form_pg_operator) GETSTRUCT(tup))->oprnamespace;
			ReleaseSysCache(tup);
			if (nsp == PG_CATALOG_NAMESPACE || list_member_oid(seen, nsp))
				continue;
			seen = lappend_oid(seen, nsp);
			appendStringInfo(&buf, ", %s", quote_identifier(get_namespace_name(nsp)));
		}
	}
	appendStringInfoString(&buf, ", pg_temp");
	return buf.data;
}

/*
 * backfill_pin_search_path
 *		Set the safe search_path until backfill_unpin_search_path(level).
 */
int
backfill_pin_search_path(BackfillJob *job)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", job->search_path,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
backfill_unpin_search_path(int level)
{
	AtEOXact_GUC(true, level);
}

/*
 * backfill_job_owner
 *		The owner of a job, read from backfill.job directly rather than with
 *		SPI, so that a writer who may not read the catalog can still find
 *		whom to act as.  InvalidOid if the job does not exist.
 */
Oid
backfill_job_owner(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "owner", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_upstream
 *		The upstream of a job, read as backfill_job_owner() reads the owner.
 *		InvalidOid if the job does not exist.
 */
Oid
backfill_job_upstream(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "upstream", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_column
 *		One column of a job's row in backfill.job, read by its primary key
 *		without SQL, so without privileges or row-level security: a writer's
 *		trigger uses it to find whom to act as and what it serves.  A copy in
 *		the current memory context; *isnull when the job does not exist, or
 *		the value is NULL.
 */
Datum
backfill_job_column(int64 job_id, const char *column, bool *isnull)
{
	Oid			nsp = get_namespace_oid(BACKFILL_SCHEMA, false);
	Oid			relid = get_relname_relid("job", nsp);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	Datum		result = (Datum) 0;

	*isnull = true;
	if (!OidIsValid(relid))
		return result;
	rel = table_open(relid, AccessShareLock);
	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	ScanKeyInit(&key, get_attnum(relid, "job_id"), BTEqualStrategyNumber,
				F_INT8EQ, Int64GetDatum(job_id));
	scan = systable_beginscan(rel, rel->rd_pkindex, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		AttrNumber	attnum = get_attnum(relid, column);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Datum		d = heap_getattr(tup, attnum, RelationGetDescr(rel), isnull);

		/* the tuple goes with the scan */
		if (!*isnull)
			result = datumCopy(d, att->attbyval, att->attlen);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * backfill_reload_settings
 *		Re-read what may change while a job runs: its status and rate limit.
 *		A barrier calls it first, so changes take effect at the next barrier.
 */
void
backfill_reload_settings(BackfillJob *job)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job->job_id)};
	MemoryContext old;
	bool		isnull;

	char	   *status;

	/* once per barrier: in a connection of its own, so nothing accumulates */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT status, coalesce(rate_limit, -1) FROM backfill.job "
							  "WHERE job_id = $1",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	status = SPI_processed == 0 ? "dropped" :
		SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (SPI_processed > 0)
		job->rate_limit = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
													  SPI_tuptable->tupdesc, 2, &isnull));
	/* the status strings are short and few: keep the one in use */
	if (strcmp(job->status, status) != 0)
	{
		old = MemoryContextSwitchTo(GetMemoryChunkContext(job));
		job->status = pstrdup(status);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
}

/*
 * backfill_load_job_to_run
 *		Load a job that the caller is to run or start: the caller must have
 *		the privileges of its owner, and a cancelled job is refused.
 */
BackfillJob *
backfill_load_job_to_run(int64 job_id, MemoryContext cxt)
{
	BackfillJob *job = backfill_load_job(job_id, cxt);

	backfill_check_job_owner(job_id, job->owner);
	if (strcmp(job->status, "cancelled") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has been cancelled", (long long) job_id),
				 errhint("Create it again with backfill.recreate_job(%lld).",
						 (long long) job_id)));
	return job;
}

/*
 * backfill_names_changed
 *		Whether a table of the job got another name or schema since the job
 *		was loaded: the executor's plans name them, so the caller makes them
 *		again.  Locks the tables and reads the syscache only, so a barrier
 *		that has not taken its snapshot yet has not taken it after this
 *		either.
 */
bool
backfill_names_changed(BackfillJob *job)
{
	Oid			rels[4] = {job->upstream, job->downstream, job->state_table, job->change_table};
	char	  **names[4] = {&job->upstream_sql, &job->downstream_sql,
	&job->state_sql, &job->changes_sql};
	bool		changed = false;
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(job));

	for (int i = 0; i < 4; i++)
	{
		char	   *name;

		/*
		 * Locked first, till the barrier's end: a rename that waited for the
		 * last barrier has committed by now (and the lock made us read its
		 * invalidation), and one that comes later waits for this barrier.
		 */
		LockRelationOid(rels[i], AccessShareLock);
		if (get_rel_name(rels[i]) == NULL)
			continue;			/* dropped: the barrier will say so */
		name = relation_sql(rels[i]);
		if (strcmp(*names[i], name) != 0)
		{
			*names[i] = name;
			changed = true;
		}
	}
	MemoryContextSwitchTo(old);
	return changed;
}

/*
 * backfill_fail_job
 *		Record a failure on the job and commit it, so that it stays when the
 *		caller raises the error.  Caller is connected to SPI in a non-atomic
 *		context.
 */
void
backfill_fail_job(BackfillJob *job, int sqlerrcode, const char *message,
				  const char *detail)
{
	Oid			argtypes[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', detail ? ' ' : 'n', ' '};
	RoleContext rc;

	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum(message);
	values[2] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
	values[3] = CStringGetTextDatum(unpack_sql_state(sqlerrcode));
	backfill_catalog_enter(&rc);
	if (SPI_execute_with_args("UPDATE backfill.job SET status = 'failed', last_error = $2, "
							  "last_error_detail = $3, last_sqlstate = $4 WHERE job_id = $1",
							  4, argtypes, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.job");
	backfill_role_leave(&rc);
	backfill_commit();
}
