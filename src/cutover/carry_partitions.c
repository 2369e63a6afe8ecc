/*-------------------------------------------------------------------------
 *
 * carry_partitions.c
 *	  The partitions' names a cutover carries: after the swap, each
 *	  partition of the new table takes the name and schema of the partition
 *	  of the old one it replaces.
 *
 * Two partitioned tables.  The swap has given src its new name and dst
 * src's old one.  Each partition of src is paired with the partition of dst
 * of the same bounds (partition_pairs.c, which refuses anything else, and
 * partition_pair_names.c); src's partitions free their names first,
 * following src's new name; then each of dst's takes the schema and name
 * of its pair; then the pairs' indexes exchange their names as the tables'
 * do in the swap (partition_index_names.c); and so on down, for partitions
 * partitioned in turn.  What names a
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
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "cutover/carry_internal.h"
#include "cutover/lock_step.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_rename_partitions);

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
	PartitionPair *pairs = cutover_partition_pairs(src, dst, &n);

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
		cutover_swap_index_names(&pairs[i]);
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
