/*-------------------------------------------------------------------------
 *
 * create.c
 *	  backfill.create_job(): everything a job needs, in the caller's
 *	  transaction.
 *
 * create_job builds the downstream table, the kind's state table, the
 * change table, the job's rows in backfill.job and backfill.actor, and the
 * triggers on the upstream (capture/triggers.c).  Any error rolls all of it back, so
 * nothing is left half-created.  What it copies (columns, computed columns,
 * the row filter) is read and checked by shape.c.
 *
 * It has two C symbols, as pg_stat_statements keeps one per signature:
 * backfill_create_job for the seven arguments of catalogs 1.0 and 1.1,
 * backfill_create_job_1_2 for the nine of 1.2 (filter, into_existing),
 * backfill_create_job_1_3 for the ten of 1.3 (indexes, index_build.c).  An
 * older catalog keeps working with the newer library until ALTER EXTENSION
 * UPDATE; what it has no columns for (computed columns) is refused.
 *
 * The upstream is locked in SHARE ROW EXCLUSIVE mode (the lock CREATE
 * TRIGGER takes anyway), with its partitions if it is partitioned, for the
 * whole of create_job, so no write can slip between reading the table's
 * shape and the capture trigger's creation.
 *
 * Which tables may be an upstream, and its key, are upstream.c's, shared
 * with estimate.c; the downstream's DDL is built here, for estimate.c too
 * (create.h).  The job's rows are written by the catalog layer
 * (job_rows.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "parser/scansup.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "api/create.h"
#include "api/upstream.h"
#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/job_rows.h"
#include "copy/copy.h"
#include "copy/index_build.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "remote/remote.h"

PG_FUNCTION_INFO_V1(backfill_create_job);
PG_FUNCTION_INFO_V1(backfill_create_job_1_2);
PG_FUNCTION_INFO_V1(backfill_create_job_1_3);
PG_FUNCTION_INFO_V1(backfill_create_job_as);

/*
 * backfill.rate_limit: the rate limit of a job created without one, as
 * RisingWave's session variable backfill_rate_limit: snapshot rows per
 * second per actor, 0 paused, -1 none.
 */
static int	backfill_rate_limit = -1;

/*
 * backfill.max_jobs_per_upstream and backfill.max_jobs_per_role: caps a
 * superuser sets on the jobs that are not cancelled (those whose triggers
 * work at every write to their upstream), per upstream table and per owner.
 * -1 lifts either.  As a role's CONNECTION LIMIT, the one per role does not
 * bind superusers.
 */
static int	backfill_max_jobs_per_upstream = 16;
static int	backfill_max_jobs_per_role = 100;

/* define the settings create_job reads; from _PG_init */
void
backfill_create_init(void)
{
	DefineCustomIntVariable("backfill.max_jobs_per_upstream",
							"Most backfill jobs that are not cancelled one upstream table may have.",
							"Each job's trigger works at every write to the table. -1 for no cap.",
							&backfill_max_jobs_per_upstream,
							16,
							-1,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("backfill.max_jobs_per_role",
							"Most backfill jobs that are not cancelled one role may own.",
							"The jobs of superusers are not capped. -1 for no cap.",
							&backfill_max_jobs_per_role,
							100,
							-1,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("backfill.rate_limit",
							"Rate limit of the jobs created without one, in snapshot rows per second per actor.",
							"As RisingWave's backfill_rate_limit: 0 creates jobs paused, -1 without a limit.",
							&backfill_rate_limit,
							-1,
							-1,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/* create_job's arguments */
typedef struct CreateArgs
{
	char	   *name;
	Oid			upstream;
	BackfillKind kind;
	ArrayType  *columns;		/* NULL for all */
	int32		parallelism;
	int32		chunk_size;
	int32		rate_limit;		/* -1 for none */
	char	   *filter;			/* NULL for none */
	bool		into_existing;
	bool		indexes;		/* the upstream's other indexes too */
	bool		indexes_null;	/* "indexes" NULL: as a migration needs */
} CreateArgs;

/* what create_job found out about the upstream and the downstream */
typedef struct CreatePlan
{
	Relation	rel;			/* the upstream, locked */
	int			npk;
	AttrNumber *pk;
	Oid		   *pk_collations;
	JobShape	shape;			/* the columns and the filter */
	char	   *search_path;	/* the job's */
	char	   *downstream_sql;
	Datum	   *col_names;		/* the output columns, as text */
	Datum	   *pk_names;		/* the key columns, as text */
	ArrayType  *vnode_bounds;	/* range vnodes (ranges.c); NULL: hashed */
} CreatePlan;

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

/*
 * backfill_check_parallelism
 *		Refuse a parallelism out of 1 .. BACKFILL_MAX_PARALLELISM, for
 *		create_job, estimate_job and reschedule.
 */
void
backfill_check_parallelism(int parallelism)
{
	if (parallelism < 1 || parallelism > BACKFILL_MAX_PARALLELISM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallelism must be between 1 and %d", BACKFILL_MAX_PARALLELISM),
				 errdetail("The %d vnodes are split across the actors, so there can be at most one actor per vnode.",
						   BACKFILL_VNODE_COUNT)));
}

static void
require_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
}

/* read and check create_job's arguments */
static void
read_arguments(FunctionCallInfo fcinfo, CreateArgs *args)
{
	const KindRoutine *kind;

	require_arg(fcinfo, 0, "name");
	require_arg(fcinfo, 1, "upstream");
	require_arg(fcinfo, 2, "kind");
	require_arg(fcinfo, 4, "parallelism");
	require_arg(fcinfo, 5, "chunk_size");

	args->name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	args->upstream = PG_GETARG_OID(1);
	args->kind = backfill_kind_for_upstream(backfill_parse_kind(text_to_cstring(PG_GETARG_TEXT_PP(2))),
											args->upstream);
	args->columns = PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3);
	args->parallelism = PG_GETARG_INT32(4);
	args->chunk_size = PG_GETARG_INT32(5);
	args->rate_limit = -1;
	args->filter = NULL;
	args->into_existing = false;
	if (PG_NARGS() > 8)
	{
		args->filter = PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7));
		require_arg(fcinfo, 8, "into_existing");
		args->into_existing = PG_GETARG_BOOL(8);
	}
	args->indexes = false;
	args->indexes_null = false;
	if (PG_NARGS() > 9)
	{
		args->indexes_null = PG_ARGISNULL(9);
		args->indexes = !args->indexes_null && PG_GETARG_BOOL(9);
	}
	if (!PG_ARGISNULL(6))
	{
		args->rate_limit = PG_GETARG_INT32(6);
		if (args->rate_limit < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rate_limit must not be negative"),
					 errhint("Pass NULL for no limit, or 0 to create the job paused.")));
	}
	else
		args->rate_limit = backfill_rate_limit;	/* the session's default, -1 none */

	/* the library may be newer than the catalog until ALTER EXTENSION UPDATE */
	kind = backfill_kind_routine(args->kind);
	if (kind->needs_job_column && !backfill_job_catalog_has(kind->needs_job_column))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"%s\" needs version %s of extension \"backfill\"",
						backfill_kind_name(args->kind),
						kind->needs_version ? kind->needs_version : "1.1"),
				 errhint("Run ALTER EXTENSION backfill UPDATE.")));
	backfill_check_parallelism(args->parallelism);
	if (args->chunk_size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_size must be at least 1")));
}

/* no key column may take a name the kind's own tables use */
static void
check_key_names(const KindRoutine *kind, Relation rel, int npk, AttrNumber *pk)
{
	Oid			upstream_oid = RelationGetRelid(rel);

	for (int k = 0; k < npk; k++)
	{
		char	   *keyname = get_attname(upstream_oid, pk[k], false);

		for (int i = 0; kind->reserved_columns[i]; i++)
			if (strcmp(keyname, kind->reserved_columns[i]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("primary key column \"%s\" of table \"%s\" has a name the state table uses",
								keyname, RelationGetRelationName(rel)),
						 errdetail("The state and change tables of a job of kind \"%s\" have a column \"%s\" besides the key columns.",
								   backfill_kind_name(kind->kind), keyname)));
	}
}

/*
 * Each part of a qualified name must fit in NAMEDATALEN - 1 bytes: the
 * parser of qualified names cuts a longer one short without a word, and the
 * job would fill a table named otherwise than asked.  Parts are read as
 * SplitIdentifierString reads them (a doubled quote in a quoted part is one
 * byte; lower-casing keeps an unquoted part's length).
 */
static void
check_name_length(const char *name)
{
	const char *p = name;

	while (*p)
	{
		const char *start;
		int			len = 0;

		while (scanner_isspace(*p) || *p == '.')
			p++;
		start = p;
		if (*p == '"')
		{
			for (p++; *p; p++)
			{
				if (*p == '"')
				{
					if (p[1] != '"')
					{
						p++;
						break;
					}
					p++;
				}
				len++;
			}
		}
		else
		{
			while (*p && *p != '.' && !scanner_isspace(*p))
			{
				p++;
				len++;
			}
		}
		if (len >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("name \"%.*s\" is too long", (int) (p - start), start),
					 errdetail("The name of the downstream table would be cut to %d bytes.",
							   NAMEDATALEN - 1),
					 errhint("Choose a job name of at most %d bytes for each of its parts.",
							 NAMEDATALEN - 1)));
	}
}

/* the downstream's name: a new table, outside the extension's schema */
static char *
downstream_name(const char *name)
{
	RangeVar   *downstream_rv;
	Oid			downstream_nsp;

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
	return quote_qualified_identifier(get_namespace_name(downstream_nsp),
									  downstream_rv->relname);
}

/*
 * The key's DDL (", k1 type1 COLLATE c1, ...") and list ("k1, k2"), and the
 * names of the key and output columns.
 */
static void
describe_columns(CreatePlan *plan, StringInfo key_ddl, StringInfo key_list)
{
	Oid			upstream_oid = RelationGetRelid(plan->rel);

	plan->pk_names = palloc(sizeof(Datum) * plan->npk);
	plan->col_names = palloc(sizeof(Datum) * plan->shape.ncols);
	for (int k = 0; k < plan->npk; k++)
	{
		char	   *keyname = get_attname(upstream_oid, plan->pk[k], false);
		Oid			type;
		int32		typmod;
		Oid			collid;

		get_atttypetypmodcoll(upstream_oid, plan->pk[k], &type, &typmod, &collid);
		appendStringInfo(key_list, "%s%s", k > 0 ? ", " : "", quote_identifier(keyname));
		appendStringInfo(key_ddl, ", %s %s%s", quote_identifier(keyname),
						 format_type_with_typemod(type, typmod),
						 collate_clause(plan->pk_collations[k]));
		plan->pk_names[k] = CStringGetTextDatum(keyname);
	}
	for (int i = 0; i < plan->shape.ncols; i++)
		plan->col_names[i] = CStringGetTextDatum(plan->shape.cols[i].name);
}

static DownstreamGift downstream_gift(const CreateArgs *args, const CreatePlan *plan);

/*
 * backfill_downstream_ddl
 *		The CREATE TABLE of a downstream named table_sql: the columns of a
 *		job's shape, keyed on key_list ("k1, k2"), each column followed by
 *		its clause of generated (" GENERATED ALWAYS AS ..."; NULL for none,
 *		or no array), the table by partition_by (" PARTITION BY ..."; NULL
 *		for none).
 */
char *
backfill_downstream_ddl(const JobShape *shape, const char *table_sql, const char *key_list,
						char **generated, const char *partition_by)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE TABLE %s (", table_sql);
	for (int i = 0; i < shape->ncols; i++)
	{
		ShapeColumn *col = &shape->cols[i];

		appendStringInfo(&buf, "%s %s%s%s, ", quote_identifier(col->name),
						 format_type_with_typemod(col->type, col->typmod),
						 collate_clause(col->collation),
						 generated != NULL && generated[i] != NULL ? generated[i] : "");
	}
	appendStringInfo(&buf, "PRIMARY KEY (%s))%s", key_list, partition_by ? partition_by : "");
	return buf.data;
}

/*
 * The downstream table: the output columns, keyed as the upstream; for a
 * migration (gift), generated and partitioned as the upstream is, its
 * partitions made too (migration.c).
 */
static void
create_downstream(CreatePlan *plan, const char *key_list, DownstreamGift gift)
{
	char	  **generated = NULL;
	const char *partitioned = NULL;

	if (gift == GIFT_MIGRATION)
	{
		generated = backfill_generated_columns(plan->rel, &plan->shape);
		partitioned = backfill_partition_by(plan->rel);
	}
	backfill_spi_exec(backfill_downstream_ddl(&plan->shape, plan->downstream_sql, key_list,
											  generated, partitioned),
					  SPI_OK_UTILITY);
	if (gift == GIFT_MIGRATION)
	{
		backfill_create_partitions(plan->rel, plan->downstream_sql);
		backfill_note_foreign_keys(plan->rel, plan->downstream_sql);
	}
}

/*
 * The job's row in the catalog (job_rows.c): its arguments, what the plan
 * found, its tables, the filter, expressions (NULL when every column is
 * copied) and source_columns of its shape.
 */
static void
job_row(const CreateArgs *args, const CreatePlan *plan, const JobDefinition *def,
		int32 fragment_id, int64 total_rows, NewJobRow *row)
{
	const JobShape *shape = &plan->shape;
	Datum	   *exprs = palloc(sizeof(Datum) * Max(shape->ncols, 1));
	bool	   *expr_nulls = palloc(sizeof(bool) * Max(shape->ncols, 1));
	Datum	   *sources = palloc(sizeof(Datum) * Max(shape->nsources, 1));
	int			dims[1] = {shape->ncols};
	int			lbs[1] = {1};

	memset(row, 0, sizeof(*row));
	row->job_id = def->job_id;
	row->name = args->name;
	row->kind = backfill_kind_name(args->kind);
	row->upstream = args->upstream;
	row->owner = def->owner;	/* the caller owns it */
	row->downstream_sql = def->downstream_sql;
	row->state_sql = def->state_sql;
	row->changes_sql = def->changes_sql;
	row->columns = construct_array(plan->col_names, plan->shape.ncols, TEXTOID,
								   -1, false, TYPALIGN_INT);
	row->pk_columns = construct_array(plan->pk_names, plan->npk, TEXTOID,
									  -1, false, TYPALIGN_INT);
	row->fragment_id = fragment_id;
	row->parallelism = args->parallelism;
	row->chunk_size = args->chunk_size;
	row->total_rows = total_rows;
	/*
	 * What RisingWave's rw_ddl_progress shows as the statement, in the words
	 * of what the job makes: a new table filled from a query, or rows put
	 * into a table of the user's; then the kind of backfill and its source.
	 */
	row->ddl_statement = psprintf("%s %s %sSELECT %s FROM %s%s%s (backfill %s from %s)",
								  args->into_existing ? "INSERT INTO" : "CREATE TABLE",
								  def->downstream_sql,
								  args->into_existing ? "" : "AS ",
								  backfill_shape_select_list(&plan->shape),
								  def->upstream_sql,
								  plan->shape.filter ? " WHERE " : "",
								  plan->shape.filter ? plan->shape.filter : "",
								  row->kind, def->upstream_sql);
	row->rate_limit = args->rate_limit;

	for (int i = 0; i < shape->ncols; i++)
	{
		expr_nulls[i] = shape->cols[i].expr == NULL;
		exprs[i] = expr_nulls[i] ? (Datum) 0 : CStringGetTextDatum(shape->cols[i].expr);
	}
	for (int i = 0; i < shape->nsources; i++)
		sources[i] = CStringGetTextDatum(shape->sources[i]);
	row->filter = shape->filter;
	row->expressions = shape->computed ?
		construct_md_array(exprs, expr_nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT) :
		NULL;
	row->source_columns = construct_array(sources, shape->nsources, TEXTOID, -1, false,
										  TYPALIGN_INT);
	row->into_existing = args->into_existing;
	row->vnode_bounds = plan->vnode_bounds;
}

/*
 * A log of before-images (CAPTURE_LOG) keeps each row as the downstream's
 * row type when the downstream is the job's own copy of upstream columns;
 * otherwise (computed columns, a filter, a table of the user's) as a type of
 * its own, backfill.image_<id>, of the upstream columns the job reads.
 * Returns the type's name, and its columns' DDL into *image_ddl (NULL when
 * it is the downstream's).
 */
static char *
image_type(const CreatePlan *plan, const CreateArgs *args, int64 job_id, char **image_ddl)
{
	Oid			upstream_oid = RelationGetRelid(plan->rel);
	StringInfoData buf;

	*image_ddl = NULL;
	if (!plan->shape.computed && !plan->shape.filter && !args->into_existing)
		return plan->downstream_sql;
	initStringInfo(&buf);
	for (int i = 0; i < plan->shape.nsources; i++)
	{
		AttrNumber	attnum = get_attnum(upstream_oid, plan->shape.sources[i]);
		Oid			type;
		int32		typmod;
		Oid			collid;

		get_atttypetypmodcoll(upstream_oid, attnum, &type, &typmod, &collid);
		appendStringInfo(&buf, "%s%s %s%s", i > 0 ? ", " : "",
						 quote_identifier(plan->shape.sources[i]),
						 format_type_with_typemod(type, typmod), collate_clause(collid));
	}
	*image_ddl = buf.data;
	return psprintf("%s.%s", BACKFILL_SCHEMA,
					quote_identifier(psprintf("image_%lld", (long long) job_id)));
}

/*
 * What the upstream and the arguments make of the job: its key, columns,
 * filter and downstream name.  Opens and locks the upstream.
 */
static void
plan_job(const CreateArgs *args, const KindRoutine *kind, CreatePlan *plan)
{
	Oid		   *pk_types;

	{
		/* the caller reads it and may capture its changes (without a stream) */
		static const AclMode needed[] = {ACL_SELECT, ACL_TRIGGER};

		plan->rel = backfill_open_upstream(args->upstream, ShareRowExclusiveLock, needed,
										   kind->capture == CAPTURE_STREAM ? 1 : lengthof(needed),
										   kind->upstream_key != NULL);
	}
	/* the copy is of what the caller, the job's owner, reads of it */
	backfill_check_unfiltered_copy(RelationGetRelid(plan->rel), GetUserId());
	plan->npk = kind->upstream_key ?
		kind->upstream_key(plan->rel, &plan->pk, &plan->pk_collations) :
		backfill_upstream_key(plan->rel, &plan->pk, &plan->pk_collations);
	check_key_names(kind, plan->rel, plan->npk, plan->pk);
	pk_types = palloc(sizeof(Oid) * plan->npk);
	for (int k = 0; k < plan->npk; k++)
		pk_types[k] = get_atttype(RelationGetRelid(plan->rel), plan->pk[k]);
	plan->search_path = backfill_safe_search_path(plan->npk, pk_types);
	backfill_shape_read(plan->rel, args->columns, args->filter, plan->npk, plan->pk,
						plan->search_path, &plan->shape);
	if ((plan->shape.computed || plan->shape.filter || args->into_existing ||
		 plan->rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE) &&
		!backfill_job_catalog_has("expressions"))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s need version 1.2 of extension \"backfill\"",
						args->into_existing ? "downstream tables of the user's" :
						plan->shape.filter ? "row filters" :
						plan->shape.computed ? "computed columns" : "partitioned upstreams"),
				 errhint("Run ALTER EXTENSION backfill UPDATE.")));
	backfill_kind_check_shape(kind, plan->rel, &plan->shape, args->into_existing);
	backfill_kind_check_create(kind, plan->rel, args->parallelism);
	plan->downstream_sql = args->into_existing ? NULL : downstream_name(args->name);
}

/*
 * What the new downstream gets of the upstream's indexes and constraints:
 * with "indexes" NULL, all that a migration needs when the job copies the
 * whole of a local table (no computed column, no filter), which its
 * downstream is to replace; none for another copy, which is no stand-in
 * for its upstream, nor for a table of the user's, nor for rows of
 * another server (a foreign table, a table of foreign partitions), whose
 * constraints that server does not enforce.
 */
static DownstreamGift
downstream_gift(const CreateArgs *args, const CreatePlan *plan)
{
	char		relkind = plan->rel->rd_rel->relkind;

	if (!args->indexes_null)
		return args->indexes ? GIFT_INDEXES : GIFT_NONE;
	if (args->into_existing || plan->shape.computed || plan->shape.filter != NULL ||
		(relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) ||
		(relkind == RELKIND_PARTITIONED_TABLE &&
		 backfill_remote_leaves(RelationGetRelid(plan->rel)) != NIL))
		return GIFT_DEFAULT_NONE;
	return GIFT_MIGRATION;
}

/*
 * The partitions a sharded upstream's rows are counted by, one count sent
 * to each one's server (backfill_count_sql), or NIL.  The caller may read
 * each of them (remote_check_create), and a foreign table has no row-level
 * security of its own, so their sum is what the job's chunks read.
 */
static List *
foreign_leaf_sqls(Relation upstream)
{
	List	   *sqls = NIL;
	ListCell   *lc;

	if (upstream->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return NIL;
	foreach(lc, backfill_remote_leaves(RelationGetRelid(upstream)))
		sqls = lappend(sqls, backfill_relation_sql(lfirst_oid(lc)));
	return sqls;
}

/*
 * The job's range vnodes, cut from a sample of what it copies, read as the
 * caller; NULL for hashed vnodes, for a kind that cuts its own splits, and on
 * a catalog without their columns.
 */
static ArrayType *
cut_vnodes(const CreatePlan *plan, const KindRoutine *kind, const char *upstream_sql)
{
	Oid			upstream = RelationGetRelid(plan->rel);
	char	  **names = palloc(sizeof(char *) * plan->npk);
	Oid		   *types = palloc(sizeof(Oid) * plan->npk);

	if (kind->cuts_splits || !backfill_job_catalog_has("vnode_bounds"))
		return NULL;
	for (int k = 0; k < plan->npk; k++)
	{
		names[k] = get_attname(upstream, plan->pk[k], false);
		types[k] = get_atttype(upstream, plan->pk[k]);
	}
	return backfill_cut_vnodes(upstream,
							   backfill_upstream_scan(upstream_sql,
													  plan->rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE),
							   plan->shape.filter, plan->npk, names, types);
}

/*
 * Refuse a job over the caps backfill.max_jobs_per_upstream and
 * backfill.max_jobs_per_role, counting the jobs that are not cancelled.
 * SQLSTATE 53000, as for the caps on workers: these are settings a
 * superuser raises, not limits of the implementation (54000).  Reads every
 * role's jobs, so as the extension's owner.  Two jobs created at once count
 * each other, at any isolation level: the count is of what is committed
 * when it is made, and the creators wait for each other before it, on one
 * upstream for its lock (held since plan_job), of one role for the role's
 * (job_rows.c).  SPI connected.
 */
static void
check_job_caps(Oid upstream, Oid owner)
{
	RoleContext rc;
	int64		on_upstream;
	int64		of_role;

	if (backfill_max_jobs_per_upstream < 0 &&
		(backfill_max_jobs_per_role < 0 || superuser_arg(owner)))
		return;
	if (backfill_max_jobs_per_role >= 0 && !superuser_arg(owner))
		backfill_lock_role_jobs(owner);
	backfill_catalog_enter(&rc);
	backfill_count_live_jobs(upstream, owner, &on_upstream, &of_role);
	backfill_role_leave(&rc);

	if (backfill_max_jobs_per_upstream >= 0 && on_upstream >= backfill_max_jobs_per_upstream)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("cannot create another backfill job on table \"%s\"", get_rel_name(upstream)),
				 errdetail_plural("The table has %lld backfill job that is not cancelled, and backfill.max_jobs_per_upstream allows %d. Each job's trigger works at every write to the table.",
								  "The table has %lld backfill jobs that are not cancelled, and backfill.max_jobs_per_upstream allows %d. Each job's trigger works at every write to the table.",
								  (unsigned long) on_upstream,
								  (long long) on_upstream, backfill_max_jobs_per_upstream),
				 errhint("Drop the jobs that are no longer needed with backfill.drop_job(), or have a superuser raise backfill.max_jobs_per_upstream.")));
	if (backfill_max_jobs_per_role >= 0 && of_role >= backfill_max_jobs_per_role &&
		!superuser_arg(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("cannot create another backfill job owned by role \"%s\"",
						GetUserNameFromId(owner, false)),
				 errdetail_plural("The role owns %lld backfill job that is not cancelled, and backfill.max_jobs_per_role allows %d.",
								  "The role owns %lld backfill jobs that are not cancelled, and backfill.max_jobs_per_role allows %d.",
								  (unsigned long) of_role,
								  (long long) of_role, backfill_max_jobs_per_role),
				 errhint("Drop the jobs that are no longer needed with backfill.drop_job(), or have a superuser raise backfill.max_jobs_per_role.")));
}

/* create_job, with the arguments of either signature */
static int64
create_job(FunctionCallInfo fcinfo)
{
	CreateArgs	args;
	CreatePlan	plan;
	JobDefinition def;
	const KindRoutine *kind;
	StringInfoData key_ddl;
	StringInfoData key_list;
	int32		fragment_id;
	int64		total_rows;
	NewJobRow	row;
	RoleContext rc;
	char	   *image_sql;
	char	   *image_ddl;
	int			guc_level;

	read_arguments(fcinfo, &args);
	check_name_length(args.name);
	kind = backfill_kind_routine(args.kind);
	plan_job(&args, kind, &plan);

	/*
	 * The caller's text is read; from here on the job's SQL carries the
	 * stored text, read under the settings it was written under (shape.c).
	 */
	guc_level = NewGUCNestLevel();
	backfill_pin_parse_settings();
	SPI_connect();
	check_job_caps(args.upstream, GetUserId());
	if (args.into_existing)
		plan.downstream_sql = backfill_existing_downstream(args.name, plan.rel, &plan.shape,
														   plan.npk, plan.pk);

	/*
	 * The caller's names (the tables, the filter's and the expressions'
	 * functions) are resolved; from here on the statements are the
	 * extension's own, under its search_path.
	 */
	guc_level = backfill_pin_catalog_path();
	initStringInfo(&key_ddl);
	initStringInfo(&key_list);
	describe_columns(&plan, &key_ddl, &key_list);

	memset(&def, 0, sizeof(def));
	def.job_id = backfill_next_id("job_id_seq");
	fragment_id = (int32) backfill_next_id("fragment_id_seq");
	def.owner = GetUserId();
	def.name = args.name;
	def.upstream = plan.rel;
	def.upstream_sql = backfill_relation_sql(args.upstream);
	def.downstream_sql = plan.downstream_sql;
	def.state_sql = psprintf("%s.%s", BACKFILL_SCHEMA,
							 quote_identifier(psprintf("state_%lld", (long long) def.job_id)));
	def.changes_sql = psprintf("%s.%s", BACKFILL_SCHEMA,
							   quote_identifier(psprintf("changes_%lld", (long long) def.job_id)));
	def.key_ddl = key_ddl.data;
	def.key_list = key_list.data;
	def.parallelism = args.parallelism;
	image_sql = image_type(&plan, &args, def.job_id, &image_ddl);

	if (!args.into_existing)
		create_downstream(&plan, key_list.data, downstream_gift(&args, &plan));
	/* as the caller, the job's owner */
	total_rows = backfill_count_rows(def.upstream_sql,
									 plan.rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE,
									 plan.shape.filter, foreign_leaf_sqls(plan.rel));

	plan.vnode_bounds = cut_vnodes(&plan, kind, def.upstream_sql);
	if (plan.vnode_bounds == NULL && !kind->cuts_splits)
		backfill_check_key_hashable(plan.rel, plan.npk, plan.pk,
									"The job would map keys to vnodes by a hash of the key, since backfill.vnode_mapping is \"hash\" or the upstream has no row to cut ranges of keys from.",
									"Keys of such types are mapped to vnodes by ranges, which a job cuts from the rows of its upstream: create the job once the table has rows, with backfill.vnode_mapping set to \"range\".");

	/*
	 * The state and change tables live in the extension's schema, where only
	 * the extension's owner creates tables; they belong to the job's owner,
	 * who runs the job.
	 */
	backfill_catalog_enter(&rc);
	kind->create_state_table(&def);
	/* the owner's shared dependency, which DROP ROLE sees (catalog/job_owner.c) */
	backfill_record_owner(def.job_id, def.state_sql, def.owner);
	backfill_capture_create_table(kind->capture, def.changes_sql, def.key_ddl,
								  def.key_list, image_sql, image_ddl, def.owner);
	job_row(&args, &plan, &def, fragment_id, total_rows, &row);
	backfill_insert_job_rows(&row);
	backfill_kind_after_create(kind, &def);
	backfill_capture_install(plan.rel, def.upstream_sql, def.job_id, kind->capture);
	backfill_role_leave(&rc);
	backfill_create_indexes(def.job_id, plan.rel, plan.downstream_sql, &plan.shape,
							downstream_gift(&args, &plan), kind->builds_indexes_once,
							args.into_existing);
	backfill_unpin_search_path(guc_level);

	SPI_finish();
	AtEOXact_GUC(true, guc_level);
	relation_close(plan.rel, NoLock);
	return def.job_id;
}

/*
 * backfill.create_job(name text, upstream regclass, kind text,
 *					   columns text[], parallelism int, chunk_size int,
 *					   rate_limit int)
 *		RETURNS bigint
 *
 * The signature of catalogs 1.0 and 1.1, until ALTER EXTENSION UPDATE.
 */
Datum
backfill_create_job(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(create_job(fcinfo));
}

/*
 * backfill.create_job(name text, upstream regclass, kind text,
 *					   columns text[], parallelism int, chunk_size int,
 *					   rate_limit int, filter text, into_existing boolean)
 *		RETURNS bigint
 */
Datum
backfill_create_job_1_2(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(create_job(fcinfo));
}

/*
 * backfill.create_job(name text, upstream regclass, kind text,
 *					   columns text[], parallelism int, chunk_size int,
 *					   rate_limit int, filter text, into_existing boolean,
 *					   indexes boolean)
 *		RETURNS bigint
 */
Datum
backfill_create_job_1_3(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(create_job(fcinfo));
}

/*
 * backfill._create_job_as(from_job_id bigint, name text, upstream regclass,
 *						   kind text, columns text[], parallelism int,
 *						   chunk_size int, rate_limit int, filter text,
 *						   into_existing boolean, indexes boolean)
 *		RETURNS bigint
 *
 * For recreate_job: create_job with the other arguments, on behalf of the
 * owner of job from_job_id, who owns the new job.  The old job's filter and
 * expressions are its owner's SQL: the new job must not run them as whoever
 * recreates it (a superuser, say).  The caller must have the privileges of
 * that owner, and the owner must be allowed to call create_job.  It runs as
 * the owner in a security-restricted operation, as the owner's jobs run.
 */
Datum
backfill_create_job_as(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(create_fcinfo, 10);
	Oid			argtypes[10] = {TEXTOID, REGCLASSOID, TEXTOID, TEXTARRAYOID, INT4OID,
	INT4OID, INT4OID, TEXTOID, BOOLOID, BOOLOID};
	Oid			create_oid;
	int64		from_job_id;
	Oid			owner;
	RoleContext oc;
	int64		job_id;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "from_job_id")));
	from_job_id = PG_GETARG_INT64(0);
	owner = backfill_require_job_owner(from_job_id);
	create_oid = LookupFuncName(list_make2(makeString(BACKFILL_SCHEMA), makeString("create_job")),
								lengthof(argtypes), argtypes, false);
	if (pg_proc_aclcheck(create_oid, owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not create backfill jobs",
						GetUserNameFromId(owner, false)),
				 errdetail("A recreated job belongs to the owner of backfill job %lld, who has no EXECUTE privilege on function backfill.create_job.",
						   (long long) from_job_id),
				 errhint("Grant EXECUTE on backfill.create_job to the job's owner, or create a new job with backfill.create_job().")));

	InitFunctionCallInfoData(*create_fcinfo, NULL, lengthof(argtypes), InvalidOid, NULL, NULL);
	for (int i = 0; i < lengthof(argtypes); i++)
		create_fcinfo->args[i] = fcinfo->args[i + 1];

	backfill_owner_enter(owner, false, &oc);
	job_id = create_job(create_fcinfo);
	backfill_role_leave(&oc);
	PG_RETURN_INT64(job_id);
}
