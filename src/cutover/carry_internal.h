/*-------------------------------------------------------------------------
 *
 * carry_internal.h
 *	  What the files of the cutover's carry functions share: the small SPI
 *	  steps (carry_spi.c: a catalog query run with the snapshot its SQL
 *	  version ran with, a statement run as the caller, a name as a
 *	  statement prints it) and the renames of partitions that follow their
 *	  table's name (partitions_of.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_CARRY_INTERNAL_H
#define BACKFILL_CUTOVER_CARRY_INTERNAL_H

#include "executor/spi.h"

extern void cutover_query(const char *sql, bool read_only, Oid src, Oid dst);
extern void cutover_run(const char *sql);
extern char *cutover_regclass(Oid relid);
extern char *cutover_text(int row, int col);
extern Oid	cutover_oid(int row, int col);

extern char *cutover_renamed_partition(const char *relname, const char *before,
									   const char *after);
extern void cutover_rename_partitions_of(Oid rel, const char *before, const char *after);

#endif							/* BACKFILL_CUTOVER_CARRY_INTERNAL_H */
