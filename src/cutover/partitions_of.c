/*-------------------------------------------------------------------------
 *
 * partitions_of.c
 *	  The partitions of a table renamed from one name to another follow
 *	  its name, and so on down, for partitions partitioned in turn.
 *
 * A partition named before_x becomes after_x, another name x becomes
 * after_x, cut to the length of a name as an assignment to a name cuts it
 * (never in the middle of a character).  Each ALTER TABLE ... RENAME runs
 * as the caller, who needs to own the partition, in the order of the
 * partitions' names; the swap holds the tables ACCESS EXCLUSIVE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "cutover/carry_internal.h"
#include "lib/lib.h"

#define PARTITIONS_OF \
	"SELECT i.inhrelid::regclass AS part, c.relname" \
	"  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid" \
	" WHERE i.inhparent = $1 AND c.relispartition ORDER BY c.relname"

/* the name a partition named relname takes when its table goes from before to after */
char *
cutover_renamed_partition(const char *relname, const char *before, const char *after)
{
	char	   *renamed = backfill_partition_renamed(relname, before, after);

	/* cut as PostgreSQL cuts a name too long, as the SQL version did */
	renamed[pg_mbcliplen(renamed, strlen(renamed), NAMEDATALEN - 1)] = '\0';
	return renamed;
}

/*
 * cutover_rename_partitions_of
 *		Rename the partitions of rel, renamed from before to after, and
 *		theirs.  The caller is connected to SPI.
 */
void
cutover_rename_partitions_of(Oid rel, const char *before, const char *after)
{
	int			n;
	Oid		   *parts;
	char	  **names;

	check_stack_depth();
	cutover_query_pair(PARTITIONS_OF, false, rel, InvalidOid);
	n = (int) SPI_processed;
	parts = palloc(sizeof(Oid) * Max(n, 1));
	names = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		parts[i] = cutover_oid(i, 1);
		names[i] = cutover_value(i, 2);
	}
	for (int i = 0; i < n; i++)
	{
		char	   *renamed = cutover_renamed_partition(names[i], before, after);

		cutover_run(psprintf("ALTER TABLE %s RENAME TO %s", backfill_regclass_text(parts[i]),
							 quote_identifier(renamed)));
		cutover_rename_partitions_of(parts[i], names[i], renamed);
	}
}
