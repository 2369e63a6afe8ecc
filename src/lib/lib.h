/*-------------------------------------------------------------------------
 *
 * lib.h
 *	  The foundations and the privileges: SQL text and SPI (sql.c), transactions,
 *	  sleeps and epochs (xact.c), vnodes (vnode.c), RisingWave's Debug printing
 *	  (rw_debug.c), role contexts and the pinned search_path (privilege.c),
 *	  the lines of progress of the run in this process and its waits for
 *	  locks (lines.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_LIB_LIB_H
#define BACKFILL_LIB_LIB_H

#include "backfill.h"
#include "storage/lockdefs.h"

/* sql.c: SQL text */
extern char *backfill_relation_sql(Oid relid);
extern char *backfill_regclass_text(Oid relid);
extern char *backfill_upstream_scan(const char *upstream_sql, bool partitioned);
extern char *backfill_job_scan(BackfillJob *job);
extern char *backfill_filter_and(BackfillJob *job);
extern char *backfill_partition_renamed(const char *part, const char *before,
										const char *after);
extern char *backfill_count_sql(const char *upstream_sql, bool partitioned, const char *filter,
								List *leaf_sqls);
extern char *backfill_pk_list(BackfillJob *job, const char *alias);
extern char *backfill_pk_list_desc(BackfillJob *job);
extern char *backfill_pk_params(BackfillJob *job, int first);
extern char *backfill_key_compare_types(int npk, const Oid *types, char **left, int strategy,
										char **right);
extern char *backfill_key_in_types(int npk, const Oid *types, char **left, const char *subquery);
extern char **backfill_pk_exprs(BackfillJob *job, const char *alias);
extern char **backfill_pk_param_exprs(BackfillJob *job, int first);
extern char *backfill_key_compare(BackfillJob *job, char **left, int strategy, char **right);
extern char *backfill_key_compare_columns(Oid upstream, int npk, char **names, const char *left,
										  int strategy, const char *right);
extern char *backfill_key_compare_params(BackfillJob *job, const char *alias, int strategy, int first);
extern char *backfill_key_in(BackfillJob *job, const char *alias, const char *subquery);
extern char *backfill_vnode_sql(BackfillJob *job, const char *keys);
extern void backfill_append_excluded_key(StringInfo sql, BackfillJob *job);
extern char *backfill_text_array_sql(Datum array, char ***elems, int *nelems);
extern char *backfill_sync_delete_sql(BackfillJob *job, const char *matching,
									  bool returning_vnode);
extern char *backfill_sync_insert_sql(BackfillJob *job, const char *matching,
									  bool returning_vnode);
extern bool backfill_sync_in_place(BackfillJob *job);
extern char *backfill_sync_upsert_matching_sql(BackfillJob *job, const char *matching,
											   bool returning_vnode);
extern char *backfill_sync_delete_gone_matching_sql(BackfillJob *job, const char *matching,
													bool returning_vnode);
extern char *backfill_sync_upsert_sql(BackfillJob *job);
extern char *backfill_sync_delete_gone_sql(BackfillJob *job);
extern char *backfill_sync_upsert_many_sql(BackfillJob *job, bool also_any);
extern char *backfill_sync_insert_many_sql(BackfillJob *job);
extern char *backfill_keys_in_arrays(BackfillJob *job);
extern char *backfill_sync_delete_gone_many_sql(BackfillJob *job, bool also_any);

/* key_index.c */
extern Oid	backfill_key_index(Relation rel);

/* sql.c: SPI */
extern void backfill_spi_enter(void);
extern void backfill_spi_leave(void);
extern void backfill_spi_exec(const char *sql, int expected);
extern bool backfill_spi_true(const char *sql);
extern bool backfill_spi_true_args(const char *sql, int nargs, Oid *types, Datum *values);
extern int64 backfill_count_rows(const char *upstream_sql, bool partitioned, const char *filter,
								 List *leaf_sqls);
extern void backfill_spi_exec_args(const char *sql, int nargs, Oid *types, Datum *values,
								   const char *nulls, int expected);
extern Datum backfill_oid_list_array(List *oids);
extern KeptPlans *backfill_kept_plans_create(void);
extern SPIPlanPtr backfill_keep_plan(KeptPlans *kept, const char *sql, int nargs,
									 Oid *argtypes);
extern void backfill_kept_plans_free(KeptPlans *kept);

/* xact.c */
extern void backfill_xact_pin_path(void);
extern void backfill_commit(void);
extern void backfill_next_barrier(bool with_snapshot);
extern void backfill_next_fetch(void);
extern void backfill_xact_begin(bool nonatomic);
extern void backfill_xact_end(void);
extern void backfill_xact_abort(void);
extern bool backfill_rollback_after_error(void);
extern ResourceOwner backfill_subxact_begin(void);
extern void backfill_subxact_rollback(ResourceOwner owner);
extern ErrorData *backfill_subxact_call(void (*work) (void *arg), void *arg);
extern ErrorData *backfill_subxact_exec(const char *sql, int expected, int lock_ms);
extern void backfill_subxact_release(ResourceOwner owner);
extern void backfill_sleep_ms(long ms);
extern void backfill_sleep_until(TimestampTz t);
extern void backfill_set_stop_check(bool (*check) (void));
extern bool backfill_stop_pending(void);
extern int64 backfill_next_epoch(int64 previous);

/*
 * vnode.c: how a job maps keys to vnodes, looked up once: the hash
 * functions of a key's types, or a range mapping's bounds and comparison
 * functions
 */
typedef struct VnodeHasher
{
	int			nkeys;
	FmgrInfo	procs[FUNC_MAX_ARGS];	/* hash, or btree comparison */
	Datum	   *bounds;			/* range mapping: the lowest key of vnodes
								 * 1..255, nkeys columns each; NULL: hash */
	Oid			collations[FUNC_MAX_ARGS];	/* range mapping: the key's */
	int			last;			/* range mapping: the vnode found last */
} VnodeHasher;

extern void backfill_vnode_hasher_init(VnodeHasher *hasher, int nkeys,
									   const Oid *types, MemoryContext cxt);
extern void backfill_vnode_order_init(VnodeHasher *hasher, int nkeys, const Oid *types,
									  const Oid *collations, MemoryContext cxt);
extern void backfill_vnode_ranges_init(VnodeHasher *hasher, int nkeys, const Oid *types,
									   const Oid *collations, ArrayType *bounds,
									   MemoryContext cxt);
extern int	backfill_vnode_compare(VnodeHasher *hasher, const Datum *a, const Datum *b);
extern const Datum *backfill_vnode_lower_bound(VnodeHasher *hasher, int v);
extern ArrayType *backfill_vnode_bounds_text(int nkeys, const Oid *types, const Datum *bounds);
extern int16 backfill_vnode_of(VnodeHasher *hasher, const Datum *values,
							   const bool *isnull);

/* rw_debug.c */
extern char *backfill_rw_debug_row(bool some, int n, const Datum *values,
								   const bool *isnull, const Oid *types);

/* ---- privileges (privilege.c) ---- */
extern int	backfill_pin_catalog_path(void);
extern void backfill_catalog_enter(RoleContext *rc);
extern void backfill_owner_enter(Oid owner, bool pin_search_path, RoleContext *rc);
extern void backfill_role_leave(RoleContext *rc);
extern void backfill_check_job_owner(int64 job_id, Oid owner);
extern void backfill_check_unfiltered_copy(Oid relid, Oid owner);
extern Oid	backfill_relation_owner(Oid relid);
extern bool backfill_may_write_catalogs(void);
extern char *backfill_safe_search_path(int npk, Oid *pk_types);
extern void backfill_pin_parse_settings(void);
extern void backfill_pin_deparse_settings(void);
extern int	backfill_pin_search_path(BackfillJob *job);
extern void backfill_unpin_search_path(int level);

/* lines.c: the run's lines of progress, its counts, its waits for locks */
typedef struct BackfillRunCounts
{
	int64		rows_copied;	/* snapshot rows the barriers read */
	int64		changes_applied;	/* captured changes the barriers applied */
	int64		barriers;
} BackfillRunCounts;

extern void backfill_lines_begin(const char *prefix, int elevel, int interval_ms);
extern void backfill_lines_end(void);
extern bool backfill_lines_on(void);
extern int	backfill_lines_interval_ms(void);
extern const BackfillRunCounts *backfill_run_counts(TimestampTz *started_at);
extern void backfill_count_rows_copied(int64 rows);
extern void backfill_count_changes_applied(int64 changes);
extern void backfill_count_barrier(void);
extern void backfill_line(const char *fmt,...) pg_attribute_printf(1, 2);
extern void backfill_lock_relation(Oid relid, LOCKMODE mode);

#endif							/* BACKFILL_LIB_LIB_H */
