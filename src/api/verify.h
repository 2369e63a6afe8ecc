/*-------------------------------------------------------------------------
 *
 * verify.h
 *	  backfill.verify_job(): what its files share.  verify_job.c is the
 *	  entry point; verify_sql.c writes the comparison's statements and
 *	  verify_compare.c runs them; verify_ranges.c is the checksum method,
 *	  range after range; verify_changed.c the method changed (with
 *	  verify_changed.h), which keeps its state with verify_state.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_VERIFY_H
#define BACKFILL_API_VERIFY_H

#include "executor/spi.h"
#include "access/xlogdefs.h"
#include "funcapi.h"

#include "kinds/kind.h"

/* the comparison of a job: its pieces of SQL, as verify_sql.c writes them */
typedef struct VerifyPlan
{
	VerifyJob	job;
	VerifySource source;		/* its covered with the job's filter */
	bool		remote;
	bool		several_servers;	/* remote_partitions is set */
	char	   *filter;			/* NULL: none */
	int			range_rows;
	TimestampTz started;		/* when verify_job started, which pacing counts from */
	char	   *key_d;			/* the key over alias d */
	char	   *cols_u;			/* the upstream's values as the downstream stores them */
	char	   *cols_d;
	char	   *hash_u;			/* a row's hash, each side */
	char	   *hash_d;
	char	   *keyt_u;			/* the key's columns as text, each side */
	char	   *keyt_d;
	char	   *scan_u;			/* the upstream as a FROM item, alias u */
} VerifyPlan;

/* what a verify found, for its record and its lines */
typedef struct VerifyCounts
{
	int64		ranges;
	int64		rows_read;
	int64		differences;
} VerifyCounts;

/* what verify_job(job, 'changed') keeps of a job between its calls */
typedef struct VerifyState
{
	bool		found;			/* something was kept */
	XLogRecPtr	lsn;			/* where in the WAL its call started */
	char	   *shape;			/* the comparison's SQL */
	int			nrelations;		/* the leaves of the upstream, then the downstream's */
	Oid		   *relations;
	Oid		   *filenodes;
	bytea	  **pages;			/* each one's page lists (page_ranges.c) */
	int			nranges;
	char	  **bounds;			/* nranges + 1 keys as text[] literals; the
								 * first and the last NULL: open */
	int64	   *upstream_rows;	/* each range's rows on each side; -1: not known */
	int64	   *downstream_rows;
	char	  **checksums;		/* the sum of its rows' hashes; NULL: not known */
	bool	   *differs;		/* its sides differed: compared at every call */
	char	  **checked_at;		/* when it was last compared, as text */
} VerifyState;

/* verify_compare.c */
extern uint64 verify_compare(const VerifyPlan *plan, const char *sql, ReturnSetInfo *rsinfo);
extern SPITupleTable *verify_query(const VerifyPlan *plan, const char *sql);
extern bool verify_lines_on(void);

/* verify_sql.c */
extern void verify_plan_sql(VerifyPlan *plan, Oid downstream, List *columns, List *expressions);
extern char *verify_rows_sql(const VerifyPlan *plan, const char *cond_u, const char *cond_d,
							 const char *from_b);
extern char *verify_sums_sql(const VerifyPlan *plan, const char *from_b, const char *cond_u,
							 const char *cond_d);
extern char *verify_split_sql(const char *keyt, const char *key, const char *scan,
							  const char *from_b, const char *cond, int64 step);

/* verify_ranges.c: both sides' "count sum" of a range */
typedef struct VerifySums
{
	int64		n_u;			/* the upstream's rows the downstream covers */
	int64		n_d;
	char	   *sum;			/* the upstream's "count sum" */
	bool		equal;
} VerifySums;

/* verify_ranges.c: told of a range given, its counts and sum (NULL: its sides differ) */
typedef void (*VerifyRangeDone) (void *arg, int range, int64 upstream_rows,
								 int64 downstream_rows, const char *sum);

extern int	verify_rate(const VerifyPlan *plan);
extern VerifySums verify_range_sums(const VerifyPlan *plan, const char *from,
									const char *cond_u, const char *cond_d);
extern void verify_by_checksums(const VerifyPlan *plan, ReturnSetInfo *rsinfo,
								VerifyCounts *counts);
extern void verify_range_where(const VerifyPlan *plan, char *lo, char *hi, char **from,
							   char **cond_u, char **cond_d);
extern void verify_given_ranges(const VerifyPlan *plan, ReturnSetInfo *rsinfo,
								VerifyCounts *counts, char **bounds, List *which,
								VerifyRangeDone done, void *done_arg);

/* verify_state.c */
extern void verify_state_lock(int64 job_id, VerifyState *state);
extern void verify_state_save(int64 job_id, const VerifyState *state, bool all,
							  const bool *rechecked);

/* verify_changed.c */
extern void verify_changed(const VerifyPlan *plan, Oid downstream, ReturnSetInfo *rsinfo,
						   VerifyCounts *counts, int64 *ranges_rechecked,
						   int64 *ranges_total);

#endif							/* BACKFILL_API_VERIFY_H */
