/*-------------------------------------------------------------------------
 *
 * verify.h
 *	  backfill.verify_job(): what its files share.  verify_job.c is the
 *	  entry point; verify_sql.c writes the comparison's statements and
 *	  verify_compare.c runs them; verify_ranges.c is the checksum method,
 *	  range after range.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_VERIFY_H
#define BACKFILL_API_VERIFY_H

#include "executor/spi.h"
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

/* verify_ranges.c */
extern void verify_by_checksums(const VerifyPlan *plan, ReturnSetInfo *rsinfo,
								VerifyCounts *counts);

#endif							/* BACKFILL_API_VERIFY_H */
