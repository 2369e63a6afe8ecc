/*-------------------------------------------------------------------------
 *
 * check.h
 *	  The checks of the cutover, before anything is locked or changed: what
 *	  refuses a swap (check.c, check_depend.c, check_names.c), what a real
 *	  schema has that cannot be carried (check_schema.c), whole tables and
 *	  row-level security (check_table.c), trusted owners and a materialized
 *	  view made again (check_owner.c), another job over either table
 *	  (other_job.c), what the new table would enforce less (weaker.c,
 *	  accepts.c), and what they share (check_args.c, and
 *	  queries.c for their SPI steps).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_CHECK_H
#define BACKFILL_CUTOVER_CHECK_H

#include "fmgr.h"
#include "utils/array.h"

#include "cutover/queries.h"

/*
 * The fields of a backfill.job row the checks read, as the PL/pgSQL read
 * them: a NULL row, or a NULL field, reads as NULL (InvalidOid, or a NULL
 * job id), and the job id is shown as RAISE and format() showed it.
 */
typedef struct CutoverJob
{
	bool		id_null;
	int64		job_id;
	char	   *id_raise;		/* "%" of RAISE: "<NULL>" for NULL */
	char	   *id_format;		/* "%s" of format(): "" for NULL */
	Oid			upstream;
	Oid			downstream;
	Oid			change_table;
	Oid			owner;
} CutoverJob;

/* check.c, other_job.c */
extern void cutover_check(CutoverJob *job, Oid src, Oid dst);
extern int64 cutover_other_job(int64 job_id, Oid src, Oid dst);
extern void cutover_refuse_other_job(CutoverJob *job, Oid src, Oid dst);

/* accepts.c */
extern void cutover_accepts(CutoverJob *job, ArrayType *accept);

/* check_args.c */
extern void cutover_job_from_row(HeapTupleHeader row, CutoverJob *job);
extern void cutover_job_arg(FunctionCallInfo fcinfo, int argno, CutoverJob *job);
extern Oid	cutover_oid_arg(FunctionCallInfo fcinfo, int argno);
extern char *cutover_rel_raise(Oid relid);
extern char *cutover_rel_format(Oid relid);
extern char *cutover_role(Oid roleid);
extern const char *cutover_ident(const char *name);

/* check_table.c */
extern void cutover_whole_table(CutoverJob *job, Oid rel);
extern bool cutover_filtered_by_rls(CutoverJob *job, bool *isnull);

/* check_owner.c */
extern bool cutover_trusts(Oid src, Oid dst, bool *isnull);
extern void cutover_check_matview(Oid mv, Oid dst);

/* check_schema.c */
extern void cutover_check_schema(CutoverJob *job, Oid src, Oid dst);

/* check_depend.c, check_names.c */
extern void cutover_check_dependents(CutoverJob *job, Oid src, Oid dst);

/* check_rules.c */
extern void cutover_check_rule(SPITupleTable *tab, int i, Oid src, Oid dst);
extern void cutover_check_names(CutoverJob *job, Oid src, Oid dst);

#endif							/* BACKFILL_CUTOVER_CHECK_H */
