/*-------------------------------------------------------------------------
 *
 * carry_spi.h
 *	  The small SPI steps the cutover's carry functions share: a catalog
 *	  query run with the snapshot its SQL version ran with, a statement run
 *	  as the caller, and a name as a statement prints it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_CARRY_SPI_H
#define BACKFILL_CUTOVER_CARRY_SPI_H

#include "executor/spi.h"

extern void cutover_query(const char *sql, bool read_only, Oid src, Oid dst);
extern void cutover_run(const char *sql);
extern char *cutover_regclass(Oid relid);
extern char *cutover_text(int row, int col);
extern Oid	cutover_oid(int row, int col);

#endif							/* BACKFILL_CUTOVER_CARRY_SPI_H */
