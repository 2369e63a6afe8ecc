/*-------------------------------------------------------------------------
 *
 * carry_keys.c
 *	  The foreign keys the swap carries: those of other tables that
 *	  reference src, and src's own to itself; and dst's own that its job
 *	  added NOT VALID, to validate with them.
 *
 * Each is added NOT VALID: validating scans the table, which must not
 * happen under the lock.  The swap returns them, and finish_cutover
 * validates them after the cutover's transaction.
 *
 * - A foreign key of another table to src is dropped and added again, of
 *   the definition printed before the renames, which names src by the name
 *   dst then has.
 * - A foreign key of src to itself gives dst its own, to itself, under
 *   src's name for it unless dst has a constraint of that name, unless dst
 *   has one of that definition already.
 * - dst's own foreign keys that its job added NOT VALID once it followed
 *   src (src/copy/migration.c), each where src's of the same definition is
 *   valid.
 *
 * Run as the caller, in its SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

/* the foreign keys of other tables that reference src */
#define REFERENCING_KEYS \
	"SELECT pg_get_constraintdef(c.oid), c.conrelid::regclass, c.conname" \
	"  FROM pg_constraint c" \
	" WHERE c.contype = 'f' AND c.confrelid = $1 AND c.conrelid <> $1 AND c.conparentid = 0" \
	" ORDER BY c.oid"

/* src's foreign keys to itself, printed with src's name: dst's to itself */
#define SELF_KEYS \
	"SELECT regexp_replace(pg_get_constraintdef(c.oid), ' NOT VALID$', ''), NULL::oid, c.conname" \
	"  FROM pg_constraint c" \
	" WHERE c.contype = 'f' AND c.confrelid = $1 AND c.conrelid = $1 AND c.conparentid = 0" \
	" ORDER BY c.oid"

/* the constraint of table $1 named $2 */
#define CONSTRAINT_NAMED \
	"SELECT oid FROM pg_constraint WHERE conrelid = $1 AND conname = $2"

/* whether dst has a foreign key to itself of definition $2 */
#define SELF_KEY_OF \
	"SELECT EXISTS (SELECT FROM pg_constraint c" \
	"                WHERE c.conrelid = $1 AND c.contype = 'f' AND c.confrelid = $1" \
	"                  AND regexp_replace(pg_get_constraintdef(c.oid), ' NOT VALID$', '') = $2)"

/* dst's own foreign keys added NOT VALID, each where src's of that definition is valid */
#define OWN_KEYS \
	"SELECT own.oid FROM pg_constraint own" \
	" WHERE own.conrelid = $2 AND own.contype = 'f' AND NOT own.convalidated" \
	"   AND EXISTS (SELECT FROM pg_constraint old" \
	"                WHERE old.conrelid = $1 AND old.contype = 'f' AND old.convalidated" \
	"                  AND pg_get_constraintdef(old.oid)" \
	"                      = regexp_replace(pg_get_constraintdef(own.oid), ' NOT VALID$', ''))" \
	" ORDER BY own.oid"

/* swap_read_keys: the foreign keys to src, before the renames */
void
swap_read_keys(Swap *swap)
{
	swap->foreign_keys = swap_read_statements(REFERENCING_KEYS, swap->src, InvalidOid, 2, 3, 0);
	swap->self_keys = swap_read_statements(SELF_KEYS, swap->src, InvalidOid, 0, 3, 0);
}

/* the constraint of rel named name, just added; InvalidOid (NULL) if none */
static Oid
constraint_named(Oid rel, const char *name)
{
	cutover_query_rel_text(CONSTRAINT_NAMED, rel, name);
	return SPI_processed > 0 ? cutover_oid(0, 1) : InvalidOid;
}

/* a foreign key of another table to src references dst */
static void
carry_referencing(Swap *swap, SwapStatement *key)
{
	const char *rel = backfill_regclass_text(key->rel);
	size_t		len = strlen(key->sql);
	bool		not_valid = len >= 10 && strcmp(key->sql + len - 10, " NOT VALID") == 0;

	cutover_run(psprintf("ALTER TABLE %s DROP CONSTRAINT %s", rel, quote_identifier(key->name)));
	cutover_run(psprintf("ALTER TABLE %s ADD CONSTRAINT %s %s%s", backfill_regclass_text(key->rel),
						 quote_identifier(key->name), key->sql, not_valid ? "" : " NOT VALID"));
	swap->added = lappend_oid(swap->added, constraint_named(key->rel, key->name));
}

/* the name of dst's key to itself: src's for it, unless dst has a constraint of that name */
static char *
self_key_name(Swap *swap, const char *name)
{
	cutover_query_rel_text(CONSTRAINT_NAMED, swap->dst, name);
	if (SPI_processed == 0)
		return pstrdup(name);
	/* left(name, 40): 40 characters */
	return psprintf("%.*s_%u", pg_mbcharcliplen(name, strlen(name), 40), name, swap->dst);
}

/* a foreign key of src to itself gives dst its own, unless dst has one of that definition */
static void
carry_self(Swap *swap, SwapStatement *key)
{
	char	   *name;

	cutover_query_rel_text(SELF_KEY_OF, swap->dst, key->sql);
	if (cutover_bool(0, 1))
		return;
	name = self_key_name(swap, key->name);
	cutover_run(psprintf("ALTER TABLE %s ADD CONSTRAINT %s %s NOT VALID",
						 backfill_regclass_text(swap->dst), quote_identifier(name), key->sql));
	swap->added = lappend_oid(swap->added, constraint_named(swap->dst, name));
}

/*
 * swap_carry_keys
 *		The foreign keys to src reference dst, dst gets src's to itself, and
 *		the foreign keys added NOT VALID, dst's own among them, are listed
 *		in swap->added (see the file header).  After the renames.
 */
void
swap_carry_keys(Swap *swap)
{
	ListCell   *lc;

	foreach(lc, swap->foreign_keys)
		carry_referencing(swap, lfirst(lc));
	foreach(lc, swap->self_keys)
		carry_self(swap, lfirst(lc));
	cutover_query_pair(OWN_KEYS, false, swap->src, swap->dst);
	for (uint64 i = 0; i < SPI_processed; i++)
		swap->added = lappend_oid(swap->added, cutover_oid(i, 1));
}
