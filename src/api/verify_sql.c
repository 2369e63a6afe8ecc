/*-------------------------------------------------------------------------
 *
 * verify_sql.c
 *	  The SQL of verify_job's comparison: each side's key, values and row
 *	  hash, and the three statements it runs (rows, sums, split points).
 *
 * The upstream's side is the filtered projection, computed columns as the
 * job computes them, each value cast to the type of the downstream's
 * column, so that the two sides compare as the downstream stores them.
 * Positions are compared through the key types' btree operators
 * (backfill_key_compare_columns), whatever they are named.
 *
 * A row's hash, for the checksum method, is of its values (its key's among
 * them), each hashed with its place as the seed, combined by xor and hashed
 * again, so that values swapped between rows or columns change it.  A
 * value's hash: NULL's is a constant of its place; the type's own extended
 * hash where equal values are identical (integers, uuid, text under a
 * deterministic collation); else the hash of its binary send form, which
 * tells 1.0 from 1.00, 0 from -0 and strings a nondeterministic collation
 * finds equal, as the rows method's image comparison (*=) does.
 *
 * Every statement runs as the job's owner (verify_job.c): the filter and
 * the computed columns are the owner's SQL.  A range's bounds are FROM
 * items of their own, out of reach of the owner's SQL, whose names they
 * could take.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "api/verify.h"
#include "lib/lib.h"

/* "alias.col" for each of names, joined with ", " */
static char *
column_list(const char *alias, int n, char **names, const char *suffix)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s.%s%s", i > 0 ? ", " : "", alias,
						 quote_identifier(names[i]), suffix);
	return buf.data;
}

/* the downstream's column of that name, or NULL; ReleaseSysCache it */
static HeapTuple
downstream_column(Oid downstream, const char *name)
{
	HeapTuple	tup = SearchSysCacheAttName(downstream, name);

	return HeapTupleIsValid(tup) ? tup : NULL;
}

/* "CAST(value AS type)": a value of the upstream as the downstream stores it */
static char *
cast_to(Form_pg_attribute att, const char *expression, const char *name)
{
	return psprintf("CAST(%s AS %s)",
					expression ? psprintf("(%s)", expression) :
					psprintf("u.%s", quote_identifier(name)),
					format_type_with_typemod(att->atttypid, att->atttypmod));
}

/* the hash of a value of column att at place (see the file header) */
static char *
value_hash(Form_pg_attribute att, int64 place, const char *value)
{
	Oid			base = getBaseType(att->atttypid);
	int64		null_hash = DatumGetInt64(DirectFunctionCall2(hashint8extended,
															  Int64GetDatum(place),
															  Int64GetDatum(7919)));
	char	   *hash;

	if (base == INT2OID || base == INT4OID || base == INT8OID)
		hash = psprintf("pg_catalog.hashint%dextended(%s, %lld)", get_typlen(base), value,
						(long long) place);
	else if (base == UUIDOID)
		hash = psprintf("pg_catalog.uuid_hash_extended(%s, %lld)", value, (long long) place);
	else if ((base == TEXTOID || base == VARCHAROID) &&
			 (!OidIsValid(att->attcollation) || get_collation_isdeterministic(att->attcollation)))
		hash = psprintf("pg_catalog.hashtextextended(%s, %lld)", value, (long long) place);
	else
	{
		HeapTuple	typtup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(base));
		Oid			send;

		if (!HeapTupleIsValid(typtup))
			elog(ERROR, "cache lookup failed for type %u", base);
		send = ((Form_pg_type) GETSTRUCT(typtup))->typsend;
		ReleaseSysCache(typtup);
		if (OidIsValid(send))
			hash = psprintf("pg_catalog.hash_array_extended(ARRAY[%s(CAST(%s AS %s))], %lld)",
							quote_qualified_identifier(get_namespace_name(get_func_namespace(send)),
													   get_func_name(send)),
							value, format_type_be(base), (long long) place);
		else
			hash = psprintf("pg_catalog.hashtextextended(CAST(%s AS text) COLLATE \"C\", %lld)",
							value, (long long) place);
	}
	return psprintf("CASE WHEN (%s) IS NULL THEN %lld::int8 ELSE %s END",
					value, (long long) null_hash, hash);
}

/* add a column's value hash to each side's, at place */
static void
add_hash(StringInfo hash_u, StringInfo hash_d, Form_pg_attribute att, int64 place,
		 const char *expression, const char *name)
{
	const char *sep = hash_u->len > 0 ? " OPERATOR(pg_catalog.#) " : "";

	appendStringInfo(hash_u, "%s%s", sep, value_hash(att, place, cast_to(att, expression, name)));
	appendStringInfo(hash_d, "%s%s", sep,
					 value_hash(att, place, psprintf("d.%s", quote_identifier(name))));
}

/* whether name is one of the job's columns */
static bool
is_column(List *columns, const char *name)
{
	ListCell   *lc;

	foreach(lc, columns)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * The values and the row hash of each side: the job's columns in their
 * order (places 1..n), then the key's columns that are not among them
 * (places 1001..), those the downstream has.
 */
static void
values_sql(VerifyPlan *plan, Oid downstream, List *columns, List *expressions)
{
	StringInfoData cols_u;
	StringInfoData cols_d;
	StringInfoData hash_u;
	StringInfoData hash_d;
	ListCell   *lc;

	initStringInfo(&cols_u);
	initStringInfo(&cols_d);
	initStringInfo(&hash_u);
	initStringInfo(&hash_d);
	foreach(lc, columns)
	{
		int			i = foreach_current_index(lc);
		const char *name = lfirst(lc);
		const char *expression = i < list_length(expressions) ? list_nth(expressions, i) : NULL;
		HeapTuple	tup = downstream_column(downstream, name);

		if (tup == NULL)
			continue;
		appendStringInfo(&cols_u, "%s%s", cols_u.len > 0 ? ", " : "",
						 cast_to((Form_pg_attribute) GETSTRUCT(tup), expression, name));
		appendStringInfo(&cols_d, "%sd.%s", cols_d.len > 0 ? ", " : "", quote_identifier(name));
		add_hash(&hash_u, &hash_d, (Form_pg_attribute) GETSTRUCT(tup), i + 1, expression, name);
		ReleaseSysCache(tup);
	}
	for (int k = 0; k < plan->job.npk; k++)
	{
		HeapTuple	tup;

		if (is_column(columns, plan->job.pk_names[k]) ||
			(tup = downstream_column(downstream, plan->job.pk_names[k])) == NULL)
			continue;
		add_hash(&hash_u, &hash_d, (Form_pg_attribute) GETSTRUCT(tup), 1000 + k + 1, NULL,
				 plan->job.pk_names[k]);
		ReleaseSysCache(tup);
	}
	plan->cols_u = cols_u.data;
	plan->cols_d = cols_d.data;
	plan->hash_u = psprintf("pg_catalog.hashint8extended(%s, 0)", hash_u.data);
	plan->hash_d = psprintf("pg_catalog.hashint8extended(%s, 0)", hash_d.data);
}

/*
 * verify_plan_sql
 *		The pieces of the comparison that depend on the job only: its key
 *		over each alias and its types, its values and row hashes, the
 *		upstream's scan, a key's vnode.  plan->job holds the catalog row.
 */
void
verify_plan_sql(VerifyPlan *plan, Oid downstream, List *columns, List *expressions)
{
	VerifyJob  *job = &plan->job;

	job->key_u = column_list("u", job->npk, job->pk_names, "");
	job->key_c = column_list("c", job->npk, job->pk_names, "");
	plan->key_d = column_list("d", job->npk, job->pk_names, "");
	plan->keyt_u = column_list("u", job->npk, job->pk_names, "::text");
	plan->keyt_d = column_list("d", job->npk, job->pk_names, "::text");
	job->pk_types_sql = palloc0(sizeof(char *) * job->npk);
	for (int k = 0; k < job->npk; k++)
	{
		HeapTuple	tup = downstream_column(downstream, job->pk_names[k]);

		if (tup == NULL)
			continue;
		job->pk_types_sql[k] = format_type_with_typemod(((Form_pg_attribute) GETSTRUCT(tup))->atttypid,
														((Form_pg_attribute) GETSTRUCT(tup))->atttypmod);
		ReleaseSysCache(tup);
	}
	values_sql(plan, downstream, columns, expressions);
	/* a partitioned upstream is read through its partitions */
	plan->scan_u = psprintf("%s%s u",
							get_rel_relkind(job->upstream) == RELKIND_PARTITIONED_TABLE ? "" : "ONLY ",
							backfill_regclass_text(job->upstream));
}

/*
 * verify_rows_sql
 *		The comparison row by row, one statement, one snapshot for all of it:
 *		the differences, key as text and problem, in key order.  cond_u and
 *		cond_d (" AND ...", or "") restrict it to ranges of keys whose bounds
 *		are the FROM items from_b; the keys pending are left out.
 */
char *
verify_rows_sql(const VerifyPlan *plan, const char *cond_u, const char *cond_d,
				const char *from_b)
{
	return psprintf("WITH w AS MATERIALIZED (%9$s), "
					"     x AS (SELECT coalesce(u.k, d.k) AS k, "
					"                  CASE WHEN d.k IS NULL THEN 'missing' "
					"                       WHEN u.k IS NULL THEN 'extra' ELSE 'different' END AS problem "
					"             FROM (SELECT u.backfill_k AS k, u.backfill_r AS r FROM (SELECT ROW(%1$s) AS backfill_k, "
					"                   ROW(%2$s) AS backfill_r, %1$s FROM %3$s WHERE %4$s) u%12$s WHERE true%10$s) u "
					"             FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d%12$s WHERE true%11$s) d ON u.k = d.k "
					"            WHERE u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) "
					"SELECT x.k::text, x.problem FROM x "
					" WHERE %8$s "
					" ORDER BY x.k",
					plan->job.key_u, plan->cols_u, plan->scan_u, plan->source.covered,
					plan->key_d, plan->cols_d, plan->source.scan_d, plan->source.settled,
					plan->source.decoded, cond_u, cond_d, from_b);
}

/*
 * verify_sums_sql
 *		Both sides' count and sum of their rows' hashes in a range of keys,
 *		one row each ("d" then "u"), as "count sum": an exact sum, not one
 *		modulo 2^64 (a second aggregate over the same hashes would compute
 *		each row's hash twice, for odds no better).  Each is an aggregate
 *		that postgres_fdw computes on the source when the hashes are of
 *		built-in types, while the local side's is computed when the server
 *		is async_capable: the two are branches of one Append.
 */
char *
verify_sums_sql(const VerifyPlan *plan, const char *from_b, const char *cond_u,
				const char *cond_d)
{
	const char *sum = "count(*) || ' ' || coalesce(sum(x.h), 0)";
	StringInfoData parts;
	ListCell   *lc;

	if (!plan->several_servers || plan->job.partitions == NIL)
		return psprintf("SELECT 'd'::text, %s FROM (SELECT %s AS h FROM %s d%s WHERE true%s) x "
						"UNION ALL SELECT 'u'::text, %s FROM (SELECT u.backfill_h AS h FROM "
						"(SELECT %s AS backfill_h, %s FROM %s WHERE %s) u%s WHERE true%s) x",
						sum, plan->hash_d, plan->source.scan_d, from_b, cond_d,
						sum, plan->hash_u, plan->job.key_u, plan->scan_u, plan->source.covered,
						from_b, cond_u);

	/*
	 * Over several servers, the upstream's side is summed per foreign
	 * partition, each sum an aggregate of one foreign table that
	 * postgres_fdw sends to its server (it sends none over a partitioned
	 * table), the servers computing theirs at once when they are
	 * async_capable; their counts and sums are then added here.
	 */
	initStringInfo(&parts);
	foreach(lc, plan->job.partitions)
		appendStringInfo(&parts, "%sSELECT count(*) AS c, sum(u.backfill_h) AS s FROM "
						 "(SELECT %s AS backfill_h, %s FROM ONLY %s u WHERE %s) u%s WHERE true%s",
						 foreach_current_index(lc) > 0 ? " UNION ALL " : "",
						 plan->hash_u, plan->job.key_u, backfill_regclass_text(lfirst_oid(lc)),
						 plan->source.covered, from_b, cond_u);
	return psprintf("SELECT 'd'::text, %s FROM (SELECT %s AS h FROM %s d%s WHERE true%s) x "
					"UNION ALL SELECT 'u'::text, sum(p.c) || ' ' || coalesce(sum(p.s), 0) "
					"FROM (%s) p",
					sum, plan->hash_d, plan->source.scan_d, from_b, cond_d, parts.data);
}

/*
 * verify_split_sql
 *		Every step-th key of a side (scan, a FROM item) in key order, as a
 *		text[] of its columns (keyt), with its place.
 */
char *
verify_split_sql(const char *keyt, const char *key, const char *scan, const char *from_b,
				 const char *cond, int64 step)
{
	return psprintf("SELECT s.k::text, s.n::text FROM (SELECT ARRAY[%s] AS k, "
					"row_number() OVER (ORDER BY %s) AS n FROM %s%s WHERE true%s) s "
					"WHERE s.n OPERATOR(pg_catalog.%%) %lld = 0",
					keyt, key, scan, from_b, cond, (long long) step);
}
