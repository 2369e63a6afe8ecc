/*-------------------------------------------------------------------------
 *
 * partitions.c
 *	  A partition joining or leaving the upstream of a job: its rows join or
 *	  leave the downstream exactly once.
 *
 * A partition that is attached to (or created in) a partitioned upstream,
 * or detached from it (api/ddl_partitions.c sees the ALTER TABLE), gets or loses the job's
 * partition truncate trigger (triggers.c); PostgreSQL itself adds or removes
 * the clones of the row triggers.  While the job backfills, the keys of the
 * partition's rows go to the change table, as if they had just been
 * written, so that the barriers forward them as any write; once it has
 * finished, the rows are inserted into or deleted from the downstream at
 * once, in the transaction of the ALTER TABLE.  The change table is written
 * as the job's owner, in a security-restricted operation, as every other
 * write of it is (privilege.c).
 *
 * A partitioned downstream, a whole-table copy's, gets a partition of the
 * same bound first (copy/migration.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "catalog/catalog_access.h"
#include "copy/index_build.h"
#include "lib/lib.h"

/* rows of a partition read at a time, then written as the job's owner */
#define CAPTURE_BATCH_ROWS 1000

/*
 * The keys of every row of a relation (a partition joining or leaving the
 * upstream) into the job's change table, as if they had just been written;
 * in a log, each with the row's image if the row leaves, none if it joins
 * (it was not part of the upstream as of the snapshot epoch).  With
 * keys_only, the keys alone, whatever the layout.
 *
 * Read by the caller, the extension's owner, with the log's sequence
 * numbers, which only it may draw: the job's owner may have no right on the
 * partition itself (a partition has privileges of its own, and a detached
 * one is read through no parent), and a scan of its columns runs nothing
 * of a user's.  Written as the job's owner, in a security-restricted
 * operation, a batch at a time: the change table is the owner's, and
 * whatever an older version let the owner put on it (a trigger, a rule, an
 * index expression, a column's type and its casts) must run with the
 * owner's rights only, never with the extension owner's.
 */
static void
capture_rows(BackfillJob *job, Oid relid, bool attached, bool keys_only)
{
	Relation	changes = table_open(job->change_table, AccessShareLock);
	bool		is_log = !keys_only && backfill_is_log_table(changes, job->npk);
	char	   *scan = backfill_upstream_scan(backfill_relation_sql(relid),
											  get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE);
	StringInfoData columns;
	StringInfoData image;
	int			ncolumns = job->npk;
	Portal		portal;
	SPIPlanPtr	insert = NULL;
	Datum	   *values;
	char	   *nulls;

	initStringInfo(&columns);
	appendStringInfoString(&columns, backfill_pk_list(job, "u"));
	/* the log's sequence, which only the extension's owner may use */
	if (is_log)
		appendStringInfo(&columns, ", pg_catalog.nextval('%s.change_seq')", BACKFILL_SCHEMA);
	ncolumns += is_log ? 1 : 0;
	initStringInfo(&image);
	if (is_log && attached)
		appendStringInfoString(&image, ", NULL");
	else if (is_log)
	{
		TupleDesc	desc = RelationGetDescr(changes);
		Oid			rowtype = TupleDescAttr(desc, desc->natts - 1)->atttypid;
		TupleDesc	img = lookup_rowtype_tupdesc(rowtype, -1);

		/* the image's columns the partition has are read, as parameters */
		appendStringInfoString(&image, ", ROW(");
		for (int i = 0; i < img->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(img, i);
			bool		in_rel = !att->attisdropped &&
				get_attnum(relid, NameStr(att->attname)) != InvalidAttrNumber;

			if (in_rel)
			{
				appendStringInfo(&columns, ", u.%s", quote_identifier(NameStr(att->attname)));
				appendStringInfo(&image, "%s$%d", i > 0 ? ", " : "", ++ncolumns);
			}
			else
				appendStringInfo(&image, "%sNULL", i > 0 ? ", " : "");
		}
		appendStringInfo(&image, ")::%s", format_type_be_qualified(rowtype));
		ReleaseTupleDesc(img);
	}
	table_close(changes, AccessShareLock);

	portal = SPI_cursor_open_with_args(NULL, psprintf("SELECT %s FROM %s", columns.data, scan),
									   0, NULL, NULL, NULL, false, 0);
	values = palloc(sizeof(Datum) * ncolumns);
	nulls = palloc(ncolumns);
	for (;;)
	{
		SPITupleTable *rows;
		uint64		nrows;
		RoleContext oc;

		SPI_cursor_fetch(portal, true, CAPTURE_BATCH_ROWS);
		rows = SPI_tuptable;
		nrows = SPI_processed;
		if (nrows == 0)
		{
			SPI_freetuptable(rows);
			break;
		}
		backfill_owner_enter(job->owner, true, &oc);
		if (insert == NULL)
		{
			Oid		   *types = palloc(sizeof(Oid) * ncolumns);

			for (int c = 0; c < ncolumns; c++)
				types[c] = SPI_gettypeid(rows->tupdesc, c + 1);
			insert = SPI_prepare(psprintf("INSERT INTO %s (%s%s) VALUES (%s%s%s)", job->changes_sql,
										  backfill_pk_list(job, NULL),
										  is_log ? ", backfill_seq, backfill_captured_at, backfill_old_row" : "",
										  backfill_pk_params(job, 1),
										  is_log ? psprintf(", $%d, pg_catalog.statement_timestamp()",
															job->npk + 1) : "",
										  image.data),
								 ncolumns, types);
			if (insert == NULL)
				elog(ERROR, "could not prepare the capture of partition %u: %s", relid,
					 SPI_result_code_string(SPI_result));
		}
		for (uint64 r = 0; r < nrows; r++)
		{
			for (int c = 0; c < ncolumns; c++)
			{
				bool		isnull;

				values[c] = SPI_getbinval(rows->vals[r], rows->tupdesc, c + 1, &isnull);
				nulls[c] = isnull ? 'n' : ' ';
			}
			if (SPI_execute_plan(insert, values, nulls, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not write change table %s", job->changes_sql);
		}
		backfill_role_leave(&oc);
		SPI_freetuptable(rows);
	}
	SPI_cursor_close(portal);
}

/* the leaf partitions of a relation, or itself if it is one, as an oid[] */
static Datum
leaves_array(Oid relid)
{
	List	   *leaves = NIL;
	ListCell   *lc;

	foreach(lc, backfill_upstream_relations(relid, NoLock))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			leaves = lappend_oid(leaves, lfirst_oid(lc));
	return backfill_oid_list_array(leaves);
}

/*
 * The rows of a partition joining or leaving the upstream of a finished
 * job, into or out of its downstream, now.  Joining, they are read through
 * the upstream, as the job's owner.  Leaving, they are not part of it any
 * more: their keys go to the change table first (capture_rows); it is empty once the job has finished, and again
 * after this, in the same transaction, which holds the upstream ACCESS
 * EXCLUSIVE (DETACH PARTITION).
 */
static void
partition_rows_now(BackfillJob *job, Oid partition, bool attached)
{
	RoleContext oc;
	int			guc_level;
	Oid			argtype = OIDARRAYOID;
	Datum		leaves = attached ? leaves_array(partition) : (Datum) 0;

	if (!attached)
		capture_rows(job, partition, false, true);
	backfill_owner_enter(job->owner, false, &oc);
	guc_level = backfill_pin_search_path(job);
	if (attached)
		backfill_spi_exec_args(backfill_sync_insert_sql(job,
														psprintf("SELECT %s FROM %s WHERE u.tableoid OPERATOR(pg_catalog.=) ANY ($1)",
																 backfill_pk_list(job, "u"),
																 backfill_job_scan(job)),
														false),
							   1, &argtype, &leaves, NULL, SPI_OK_INSERT);
	else
	{
		backfill_spi_exec(backfill_sync_delete_sql(job,
												   psprintf("SELECT %s FROM %s c",
															backfill_pk_list(job, "c"),
															job->changes_sql),
												   false),
						  SPI_OK_DELETE);
		backfill_spi_exec(psprintf("DELETE FROM %s", job->changes_sql), SPI_OK_DELETE);
	}
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&oc);
}

/*
 * backfill_capture_partition
 *		A partition has joined the job's upstream (attached, or created:
 *		attached is then true and the partition empty) or left it
 *		(detached).  Its leaves get or lose the job's partition truncate
 *		trigger (the row triggers' clones PostgreSQL adds and removes).  Its
 *		rows join or leave the downstream exactly once: while the job
 *		backfills, their keys go to the change table, so that the barriers
 *		forward them as any write; once it has finished, they are inserted
 *		into or deleted from the downstream now.  Caller acts as the
 *		extension's owner, connected to SPI, in the transaction of the
 *		ALTER TABLE, which holds the partition.
 */
void
backfill_capture_partition(BackfillJob *job, Oid partition, bool attached)
{
	if (attached)
	{
		/* a partitioned downstream gets a partition of the same bound */
		backfill_follow_partition(job, partition);
		backfill_install_partition_truncates(partition, job->job_id);
	}
	else
		backfill_drop_partition_truncates(partition, job->job_id);
	if (job->status != BACKFILL_STATUS_FINISHED)
		capture_rows(job, partition, attached, false);
	else
		partition_rows_now(job, partition, attached);
}
