/*-------------------------------------------------------------------------
 *
 * swap_internal.h
 *	  The swap of a cutover's two tables (swap.c), their names
 *	  (swap_renames.c), the carry functions it calls (swap_carry.c), and
 *	  what it carries from the old table to the new one, one file per kind
 *	  of thing: the columns (carry_columns.c, column_sequences.c), the
 *	  table's own settings (carry_table.c, carry_replication.c), the
 *	  triggers (carry_triggers.c), the views (carry_views.c) and the
 *	  foreign keys (carry_keys.c).
 *
 * Each carry reads what it needs of src before the renames (its _read
 * step: a definition printed then names src, whose name dst then has),
 * and makes its statements after them (its _carry step), as the caller,
 * in the caller's SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_SWAP_INTERNAL_H
#define BACKFILL_CUTOVER_SWAP_INTERNAL_H

#include "nodes/pg_list.h"

#include "cutover/queries.h"

/* one swap: its tables, their names as they were, what was read of src before the renames */
typedef struct Swap
{
	Oid			src;			/* the old table, which has the name */
	Oid			dst;			/* the new table, which takes it */
	char	   *src_new_name;
	char	   *src_name;
	char	   *src_schema;
	char	   *dst_schema;
	char	   *dst_text;		/* dst as regclass printed it before the renames */
	Oid			src_owner;
	bool		src_rowsecurity;
	bool		src_forcerowsecurity;
	char		src_replident;
	bool		same_heap;		/* both plain tables of one access method */
	List	   *views;			/* SwapStatement, carry_views.c */
	List	   *triggers;		/* SwapStatement, carry_triggers.c */
	List	   *foreign_keys;	/* SwapStatement, carry_keys.c */
	List	   *self_keys;		/* SwapStatement, carry_keys.c */
	List	   *added;			/* the foreign keys added NOT VALID, OIDs */
} Swap;

/* a statement read before the renames, with the object it makes */
typedef struct SwapStatement
{
	char	   *sql;			/* its definition, or the statement that makes it */
	Oid			rel;			/* the view, or the table of the foreign key */
	char	   *name;			/* the trigger's or the constraint's name */
	char		state;			/* a trigger's tgenabled */
} SwapStatement;

/* swap_renames.c: before the renames, and the renames */
extern void swap_read_tables(Swap *swap);
extern void swap_rename_tables(Swap *swap, List *src_indexes, List *dst_indexes);

/* swap_carry.c: the materialized views, the owner and privileges, the rest by OID */
extern Datum swap_read_matviews(Swap *swap, bool *isnull);
extern void swap_carry_matviews(Swap *swap, Datum matviews, bool isnull);
extern void swap_carry_owner(Swap *swap);
extern void swap_carry_by_oid(Swap *swap);

/* swap_statements.c */
extern List *swap_read_statements(const char *sql, Oid src, Oid dst, int relcol, int namecol,
								  int statecol);

/* carry_columns.c */
extern void swap_carry_columns(Swap *swap);

/* column_sequences.c */
extern void swap_move_identity(Swap *swap, const char *column, char identity);
extern void swap_carry_owned_sequences(Swap *swap);

/* carry_table.c */
extern void swap_carry_table(Swap *swap);

/* carry_replication.c */
extern void swap_carry_replica_identity(Swap *swap);
extern void swap_carry_publications(Swap *swap);

/* carry_triggers.c */
extern void swap_read_triggers(Swap *swap);
extern void swap_carry_triggers(Swap *swap);

/* carry_views.c */
extern void swap_read_views(Swap *swap);
extern void swap_carry_views(Swap *swap);

/* carry_keys.c */
extern void swap_read_keys(Swap *swap);
extern void swap_carry_keys(Swap *swap);

#endif							/* BACKFILL_CUTOVER_SWAP_INTERNAL_H */
