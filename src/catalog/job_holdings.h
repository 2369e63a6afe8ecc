/*-------------------------------------------------------------------------
 *
 * job_holdings.h
 *	  The jobs that hold a table, a key or a role's objects, as the checks
 *	  of DDL ask for them (job_holdings.c); a column of an SPI result by
 *	  name.
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_JOB_HOLDINGS_H
#define BACKFILL_CATALOG_JOB_HOLDINGS_H

#include "executor/spi.h"

#include "backfill.h"

/* the tables of a job, in JobHolding.tables */
typedef enum JobTable
{
	JOB_TABLE_UPSTREAM,
	JOB_TABLE_DOWNSTREAM,
	JOB_TABLE_STATE,
	JOB_TABLE_CHANGE,
	JOB_TABLE_COUNT
} JobTable;

/*
 * A job that is not cancelled, and what it holds.  The text[] Datums live
 * as long as the SPI connection they were read in.
 */
typedef struct JobHolding
{
	int64		job_id;
	Oid			tables[JOB_TABLE_COUNT];	/* InvalidOid: none */
	Datum		columns;		/* text[]: the downstream's columns */
	bool		columns_null;
	Datum		pk_columns;		/* text[]: the key */
	bool		pk_columns_null;
	Datum		source_columns; /* text[]: the upstream columns read */
	bool		source_columns_null;
	Datum		expressions;	/* text[]: the computed columns' */
	bool		expressions_null;
	char	   *filter;			/* NULL for none */
	bool		into_existing;	/* the downstream is the user's table */
} JobHolding;

extern Datum backfill_spi_column(SPITupleTable *tuptable, uint64 row, const char *name,
								 bool *isnull);
extern char *backfill_spi_column_text(SPITupleTable *tuptable, uint64 row, const char *name);
extern int	backfill_jobs_holding(Oid relid, JobHolding **jobs);
extern int	backfill_jobs_over(Oid relid, bool unfinished_cdc, int64 **ids);
extern int	backfill_jobs_with_key_bounds(JobHolding **jobs);
extern bool backfill_job_not_cancelled(int64 job_id);
extern int	backfill_jobs_given_away(Datum roles, int64 **ids, Oid **state_tables,
									 Oid **owners);
extern int	backfill_jobs_owned(Datum roles, int64 **ids);
extern int64 backfill_other_job_over(int64 job_id, Oid a, Oid b);

#endif							/* BACKFILL_CATALOG_JOB_HOLDINGS_H */
