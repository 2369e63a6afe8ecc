/*-------------------------------------------------------------------------
 *
 * job_rows.h
 *	  A new job's rows in backfill.job and backfill.actor, as create_job
 *	  writes them, and what it and rebuild_actors read back (job_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_JOB_ROWS_H
#define BACKFILL_CATALOG_JOB_ROWS_H

#include "utils/array.h"

#include "backfill.h"

/* the values of a new job's row in backfill.job */
typedef struct NewJobRow
{
	int64		job_id;
	const char *name;
	const char *kind;			/* its name in the catalog */
	Oid			upstream;
	Oid			owner;
	const char *downstream_sql;
	const char *state_sql;
	const char *changes_sql;
	ArrayType  *columns;		/* text[]: the output columns */
	ArrayType  *pk_columns;		/* text[]: the key */
	int32		fragment_id;
	int32		parallelism;
	int32		chunk_size;
	int64		total_rows;
	const char *ddl_statement;	/* what rw_ddl_progress shows */
	int32		rate_limit;		/* -1 for none */
	/* what a catalog of version 1.2 has (backfill_job_catalog_has) */
	const char *filter;			/* NULL for none */
	ArrayType  *expressions;	/* text[], NULL when every column is copied */
	ArrayType  *source_columns; /* text[]: the upstream columns read */
	bool		into_existing;
	ArrayType  *vnode_bounds;	/* text[] of range vnodes; NULL: hashed */
} NewJobRow;

extern void backfill_insert_job_rows(const NewJobRow *row);
extern void backfill_lock_role_jobs(Oid owner);
extern void backfill_count_live_jobs(Oid upstream, Oid owner, int64 *on_upstream,
									 int64 *of_role);
extern void backfill_job_kind_state(int64 job_id, char **kind, char **state_table);

#endif							/* BACKFILL_CATALOG_JOB_ROWS_H */
