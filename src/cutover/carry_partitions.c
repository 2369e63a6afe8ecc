/*-------------------------------------------------------------------------
 *
 * carry_partitions.c
 *	  The partitions' names a cutover carries: after the swap, each
 *	  partition of the new table takes the name and schema of the partition
 *	  of the old one it replaces.
 *
 * Two partitioned tables.  The swap has given src its new name and dst
 * src's old one.  Each partition of src is paired with the partition of dst
 * of the same bounds (partition_pairs.c, which refuses
 * anything else); src's partitions free their names first, following src's
 * new name; then each of dst's takes the schema and name of its pair; then
 * the pairs' indexes exchange their names as the tables' do in the swap;
 * and so on down, for partitions partitioned in turn.  What names a
 * partition (a writer, a grant, a report) then names the one that takes the
 * writes, and the rollback, the same swap the other way, gives the old
 * partitions their names back.
 *
 * One partitioned table.  Its partitions follow its name (partitions_of.c).
 *
 * Each ALTER runs as the caller, who needs to own the partition; the swap
 * holds the tables ACCESS EXCLUSIVE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "cutover/carry_internal.h"
#include "cutover/lock_step.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_rename_partitions);

/* one partition of src with the one of dst of the same bounds */
typedef struct PartitionPair
{
	Oid			old_part;
	Oid			new_part;
	char	   *name;			/* old_part's name before the renames */
	char	   *new_name;		/* new_part's name before the renames */
	char	   *schema;			/* old_part's schema */
} PartitionPair;

#define PARTITION_PAIRS \
	"SELECT p.old_part, p.new_part, o.relname, n.relname, ns.nspname" \
	"  FROM unnest($1::pg_catalog.oid[], $2::pg_catalog.oid[]) p(old_part, new_part)" \
	"  JOIN pg_class o ON o.oid = p.old_part" \
	"  JOIN pg_namespace ns ON ns.oid = o.relnamespace" \
	"  JOIN pg_class n ON n.oid = p.new_part" \
	" ORDER BY o.relname"

/* a list of OIDs as an oid[] */
static Datum
oid_array(List *oids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, oids)
		elems[i++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(elems, i, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * The pairs of partitions of src and dst, by the name of src's: an error
 * unless they match one to one (partition_pairs.c), read with the
 * snapshot of a statement of their own
 */
static PartitionPair *
partition_pairs(Oid src, Oid dst, int *n)
{
	PartitionPair *pairs;
	List	   *old_parts;
	List	   *new_parts;
	Oid			types[2] = {OIDARRAYOID, OIDARRAYOID};
	Datum		values[2];

	cutover_statement_begin();
	backfill_cutover_pair_partitions(src, dst, true, &old_parts, &new_parts);
	cutover_statement_end();
	values[0] = oid_array(old_parts);
	values[1] = oid_array(new_parts);
	backfill_spi_exec_args(PARTITION_PAIRS, 2, types, values, NULL, SPI_OK_SELECT);
	*n = (int) SPI_processed;
	pairs = palloc0(sizeof(PartitionPair) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		pairs[i].old_part = cutover_oid(i, 1);
		pairs[i].new_part = cutover_oid(i, 2);
		pairs[i].name = cutover_value(i, 3);
		pairs[i].new_name = cutover_value(i, 4);
		pairs[i].schema = cutover_value(i, 5);
	}
	return pairs;
}

/* one index of schema renamed, all names unquoted */
static void
rename_index(const char *schema, const char *from, const char *to)
{
	cutover_run(psprintf("ALTER INDEX %s RENAME TO %s",
						 quote_qualified_identifier(schema, from), quote_identifier(to)));
}

/*
 * The indexes of pair's two partitions of the same definition exchange
 * their names, through a name of the old partition's own.
 */
static void
swap_index_names(const PartitionPair *pair)
{
	int			n;
	char	  **src_indexes;
	char	  **dst_indexes;

	cutover_query_pair(cutover_index_pairs_sql, false, pair->old_part, pair->new_part);
	n = (int) SPI_processed;
	src_indexes = palloc(sizeof(char *) * Max(n, 1));
	dst_indexes = palloc(sizeof(char *) * Max(n, 1));
	for (int k = 0; k < n; k++)
	{
		src_indexes[k] = cutover_value(k, 1);
		dst_indexes[k] = cutover_value(k, 2);
	}
	for (int k = 0; k < n; k++)
	{
		char	   *tmp = psprintf("backfill_cutover_%u_%d", pair->old_part, k + 1);

		rename_index(pair->schema, src_indexes[k], tmp);
		rename_index(pair->schema, dst_indexes[k], src_indexes[k]);
		rename_index(pair->schema, tmp, dst_indexes[k]);
	}
}

static void rename_partitions(Oid src, Oid dst, const char *src_name, const char *dst_name);

/*
 * Two partitioned tables: src's partitions follow src's new name, dst's
 * take their names and schemas, and their indexes' names (see the file
 * header).
 */
static void
rename_paired_partitions(Oid src, Oid dst, const char *src_name, const char *src_new)
{
	int			n;
	PartitionPair *pairs = partition_pairs(src, dst, &n);

	/* the old partitions free their names first */
	for (int i = 0; i < n; i++)
		cutover_run(psprintf("ALTER TABLE %s RENAME TO %s", backfill_regclass_text(pairs[i].old_part),
							 quote_identifier(cutover_renamed_partition(pairs[i].name, src_name, src_new))));
	for (int i = 0; i < n; i++)
	{
		if (get_rel_namespace(pairs[i].new_part) != get_rel_namespace(pairs[i].old_part))
			cutover_run(psprintf("ALTER TABLE %s SET SCHEMA %s", backfill_regclass_text(pairs[i].new_part),
								 quote_identifier(pairs[i].schema)));
		cutover_run(psprintf("ALTER TABLE %s RENAME TO %s", backfill_regclass_text(pairs[i].new_part),
							 quote_identifier(pairs[i].name)));
	}
	for (int i = 0; i < n; i++)
	{
		swap_index_names(&pairs[i]);
		rename_partitions(pairs[i].old_part, pairs[i].new_part, pairs[i].name, pairs[i].new_name);
	}
}

/* after the swap of src (once src_name) and dst (once dst_name) */
static void
rename_partitions(Oid src, Oid dst, const char *src_name, const char *dst_name)
{
	char	   *src_new = get_rel_name(src);

	check_stack_depth();
	if (src_new != NULL && get_rel_relkind(src) == RELKIND_PARTITIONED_TABLE &&
		get_rel_relkind(dst) == RELKIND_PARTITIONED_TABLE)
		rename_paired_partitions(src, dst, src_name, src_new);
	else
	{
		if (src_new != NULL)
			cutover_rename_partitions_of(src, src_name, src_new);
		cutover_rename_partitions_of(dst, dst_name, src_name);
	}
}

/*
 * cutover_rename_partitions
 *		After the swap of src (once src_name, now its new name) and dst (once
 *		dst_name, now src_name), give each partition of dst the name and
 *		schema of the partition of src it replaces (see the file header).
 */
void
cutover_rename_partitions(Oid src, Oid dst, const char *src_name, const char *dst_name)
{
	backfill_spi_enter();
	rename_partitions(src, dst, src_name, dst_name);
	backfill_spi_leave();
}

/*
 * backfill._cutover_rename_partitions(src regclass, dst regclass,
 *		src_name name, dst_name name) RETURNS void
 *		cutover_rename_partitions.  Strict.
 */
Datum
backfill_cutover_rename_partitions(PG_FUNCTION_ARGS)
{
	cutover_rename_partitions(PG_GETARG_OID(0), PG_GETARG_OID(1),
							  pstrdup(NameStr(*PG_GETARG_NAME(2))),
							  pstrdup(NameStr(*PG_GETARG_NAME(3))));
	PG_RETURN_VOID();
}
