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
 * once, in the transaction of the ALTER TABLE.
 *
 * May call: the other files of src/capture/ (capture_internal.h), catalog.c,
 * privilege.c and the foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "lib.h"
#include "catalog_access.h"
#include "capture.h"
#include "capture_internal.h"

/*
 * The keys of every row of a relation (a partition joining or leaving the
 * upstream) into the job's change table, as if they had just been written;
 * in a log, each with the row's image if the row leaves, none if it joins
 * (it was not part of the upstream as of the snapshot epoch).  With
 * keys_only, the keys alone, whatever the layout.  Read by the caller, the
 * extension's owner: the job's owner may have no right on the partition
 * itself (a partition has privileges of its own), and nothing of the
 * user's runs here.
 */
static void
capture_rows(BackfillJob *job, Oid relid, bool attached, bool keys_only)
{
	Relation	changes = table_open(job->change_table, AccessShareLock);
	bool		is_log = !keys_only && backfill_is_log_table(changes, job->npk);
	char	   *scan = backfill_upstream_scan(backfill_relation_sql(relid),
											  get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE);
	StringInfoData image;

	initStringInfo(&image);
	if (is_log && attached)
		appendStringInfoString(&image, ", NULL");
	else if (is_log)
	{
		TupleDesc	desc = RelationGetDescr(changes);
		Oid			rowtype = TupleDescAttr(desc, desc->natts - 1)->atttypid;
		TupleDesc	img = lookup_rowtype_tupdesc(rowtype, -1);

		appendStringInfoString(&image, ", ROW(");
		for (int i = 0; i < img->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(img, i);
			bool		in_rel = !att->attisdropped &&
				get_attnum(relid, NameStr(att->attname)) != InvalidAttrNumber;

			appendStringInfo(&image, "%s%s%s", i > 0 ? ", " : "", in_rel ? "u." : "NULL",
							 in_rel ? quote_identifier(NameStr(att->attname)) : "");
		}
		appendStringInfo(&image, ")::%s", format_type_be_qualified(rowtype));
		ReleaseTupleDesc(img);
	}
	table_close(changes, AccessShareLock);
	backfill_spi_exec(psprintf("INSERT INTO %s (%s%s) SELECT %s%s%s FROM %s", job->changes_sql,
							   backfill_pk_list(job, NULL),
							   is_log ? ", backfill_seq, backfill_captured_at, backfill_old_row" : "",
							   backfill_pk_list(job, "u"),
							   is_log ? ", pg_catalog.nextval('backfill.change_seq'), "
							   "pg_catalog.statement_timestamp()" : "",
							   image.data, scan),
					  SPI_OK_INSERT);
}

/* the leaf partitions of a relation, or itself if it is one, as an oid[] */
static Datum
leaves_array(Oid relid)
{
	List	   *leaves = NIL;
	Datum	   *oids;
	int			n = 0;
	ListCell   *lc;

	foreach(lc, backfill_upstream_relations(relid, NoLock))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			leaves = lappend_oid(leaves, lfirst_oid(lc));
	oids = palloc(sizeof(Datum) * Max(list_length(leaves), 1));
	foreach(lc, leaves)
		oids[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * The rows of a partition joining or leaving the upstream of a finished
 * job, into or out of its downstream, now.  Joining, they are read through
 * the upstream, as the job's owner.  Leaving, they are not part of it any
 * more: their keys go to the change table first, as the extension's owner
 * (see capture_rows); it is empty once the job has finished, and again
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
		backfill_install_partition_truncates(partition, job->job_id);
	else
		backfill_drop_partition_truncates(partition, job->job_id);
	if (job->status != BACKFILL_STATUS_FINISHED)
		capture_rows(job, partition, attached, false);
	else
		partition_rows_now(job, partition, attached);
}
