/*-------------------------------------------------------------------------
 *
 * create.h
 *	  create_job (create.c): its settings, defined from _PG_init, and the
 *	  downstream's DDL, which estimate_job (estimate.c) builds too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_CREATE_H
#define BACKFILL_API_CREATE_H

#include "backfill.h"
#include "copy/copy.h"

extern void backfill_create_init(void);
extern void backfill_check_parallelism(int parallelism);
extern char *backfill_downstream_ddl(const JobShape *shape, const char *table_sql,
									 const char *key_list, char **generated,
									 const char *partition_by);

#endif							/* BACKFILL_API_CREATE_H */
