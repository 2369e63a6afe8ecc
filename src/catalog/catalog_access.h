/*-------------------------------------------------------------------------
 *
 * catalog_access.h
 *	  The job and actor rows of backfill.job and backfill.actor, and the job
 *	  lock, a file for each (names.c, job_load.c, job_tables.c, job_lock.c,
 *	  job.c, job_owner.c, actor.c); what the installed catalog has
 *	  (capabilities.c); a job as the caller sees it (job_view.c, job_names.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_CATALOG_ACCESS_H
#define BACKFILL_CATALOG_CATALOG_ACCESS_H

#include "backfill.h"

/*
 * capabilities.c: the columns of backfill.job and backfill.actor that a
 * version of the extension added, as the installed catalog has them
 */
typedef struct BackfillCatalogCaps
{
	bool		job_snapshot_epoch; /* 1.1 */
	bool		job_remote;
	bool		job_remote_splits;
	bool		job_expressions;	/* 1.2: filters and computed columns */
	bool		job_vnode_bounds;	/* range vnodes */
	bool		job_source_columns;
	bool		job_failures;	/* 1.3 */
	bool		job_indexes;	/* 1.3, with backfill.job_index */
	bool		job_remote_partitions;	/* 1.3, with backfill.job_source */
	bool		actor_log_store_caught_up;
	bool		actor_throttled_by;
} BackfillCatalogCaps;

extern const BackfillCatalogCaps *backfill_catalog_caps(void);
extern bool backfill_job_catalog_has(const char *column);

/* names.c: the names of kinds and statuses */
extern const char *backfill_kind_name(BackfillKind kind);
extern BackfillKind backfill_parse_kind(const char *name);
extern BackfillKind backfill_remote_kind(BackfillKind kind);
extern BackfillJobStatus backfill_parse_status(const char *name);

/* job_load.c: a job's rows into a BackfillJob */
extern BackfillJob *backfill_load_job(int64 job_id, MemoryContext cxt);
extern BackfillJob *backfill_load_job_latest(int64 job_id, MemoryContext cxt);
extern BackfillJob *backfill_load_job_to_run(int64 job_id, MemoryContext cxt);
extern void backfill_reload_settings(BackfillJob *job);

/* job_tables.c: a loaded job against its tables as they are now */
extern void backfill_check_key_unchanged(BackfillJob *job, Oid made_with);
extern bool backfill_names_changed(BackfillJob *job);
extern bool backfill_partition_of(Oid relid, Oid ancestor);

/* job_lock.c: the job lock */
extern void backfill_lock_job(int64 job_id, bool session);
extern void backfill_unlock_job(int64 job_id);
extern void backfill_wait_job_lock(int64 job_id);
extern void backfill_lock_job_shared(int64 job_id);
extern void backfill_unlock_job_shared(int64 job_id);
extern void backfill_lock_job_cutover(int64 job_id);
extern bool backfill_job_lock_held(int64 job_id);
extern bool backfill_job_lock_mine(int64 job_id);

/* job.c: a job's row of backfill.job, by its id */
extern Oid	backfill_job_owner(int64 job_id);
extern Oid	backfill_job_upstream(int64 job_id);
extern Oid	backfill_job_downstream(int64 job_id);
extern Datum backfill_job_column(int64 job_id, const char *column, bool *isnull);
extern void backfill_record_failure(int64 job_id, int sqlerrcode, const char *message,
									const char *detail, bool only_if_backfilling);
extern void backfill_record_start(BackfillJob *job, bool background, int64 total_rows);
extern void backfill_catalog_write(const char *sql, int64 job_id, bool arg_null, int64 arg,
								   int expected);
extern void backfill_mark_cancelled(int64 job_id);
extern void backfill_delete_job_rows(int64 job_id);
extern void backfill_set_foreground(int64 job_id);
extern void backfill_set_rate_limit(int64 job_id, bool none, int64 rows_per_second);
extern void backfill_copy_names(int64 job_id, int64 from_job_id);

/* job_owner.c: the caller's right to a job, and its owner's record */
extern Oid	backfill_require_job_owner(int64 job_id);
extern int64 backfill_owned_job_arg(FunctionCallInfo fcinfo, int argno, const char *argname);
extern void backfill_record_owner(int64 job_id, const char *state_sql, Oid owner);
extern void backfill_move_owner(int64 job_id, Oid state_table, Oid owner);

/* actor.c: a job's actors made again, the ids of new rows */
extern int64 backfill_next_id(const char *sequence);
extern void backfill_replace_actors(int64 job_id, int parallelism);

/*
 * job_view.c: a job's row as the caller sees it (row-level security
 * applying), for the functions that show a job and for reschedule
 */
typedef struct JobView
{
	int64		job_id;
	BackfillKind catalog_kind;	/* as backfill.job.kind names it */
	BackfillKind kind;			/* the one that reads it: remote_cdc for a
								 * remote job */
	char	   *status;			/* as backfill.job.status spells it */
	bool		remote;
	Oid			upstream;
	Oid			state_table;	/* InvalidOid: none (a cancelled job) */
	int			npk;
	char	  **pk_names;		/* the key's columns, unquoted */
	Datum		splits;			/* remote_splits, text[] */
	bool		splits_null;
	Datum		partitions;		/* remote_partitions, oid[] */
	bool		partitions_null;
} JobView;

extern bool backfill_read_job_view(int64 job_id, bool read_only, bool missing_ok,
								   JobView *view);

/* job_names.c: a job's id from its name, as the caller sees the jobs */
extern int64 backfill_job_id_by_name(const char *name);
extern int64 backfill_job_name_arg(FunctionCallInfo fcinfo, int argno);

#endif							/* BACKFILL_CATALOG_CATALOG_ACCESS_H */
