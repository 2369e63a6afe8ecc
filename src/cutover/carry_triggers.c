/*-------------------------------------------------------------------------
 *
 * carry_triggers.c
 *	  The user's triggers on src move to dst, in the state they were in
 *	  (enabled, disabled, replica, always).
 *
 * Only the user's: not an internal trigger (a foreign key's), not a
 * partition's clone of its parent's, and not a job's, whose function is
 * the extension's (the cutover turns the job around itself).  Each is
 * printed by pg_get_triggerdef before the renames, naming src by the name
 * dst then has; after them it is dropped from src and made again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

#define TRIGGERS \
	"SELECT pg_get_triggerdef(t.oid), NULL::oid, t.tgname, t.tgenabled" \
	"  FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid" \
	" WHERE t.tgrelid = $1 AND NOT t.tgisinternal AND t.tgparentid = 0" \
	"   AND p.pronamespace <> 'backfill'::regnamespace" \
	" ORDER BY t.tgname"

/* swap_read_triggers: src's triggers, before the renames */
void
swap_read_triggers(Swap *swap)
{
	swap->triggers = swap_read_statements(TRIGGERS, swap->src, InvalidOid, 0, 3, 4);
}

/* the ALTER TABLE word for a trigger's state other than enabled ('O') */
static const char *
trigger_state(char state)
{
	switch (state)
	{
		case 'D':
			return "DISABLE";
		case 'R':
			return "ENABLE REPLICA";
		default:
			return "ENABLE ALWAYS";
	}
}

/* swap_carry_triggers: each moves from src to dst, after the renames */
void
swap_carry_triggers(Swap *swap)
{
	ListCell   *lc;

	foreach(lc, swap->triggers)
	{
		SwapStatement *trig = lfirst(lc);

		cutover_run(psprintf("DROP TRIGGER %s ON %s", quote_identifier(trig->name),
							 backfill_regclass_text(swap->src)));
		cutover_run(trig->sql);
		if (trig->state != 'O')
			cutover_run(psprintf("ALTER TABLE %s %s TRIGGER %s", backfill_regclass_text(swap->dst),
								 trigger_state(trig->state), quote_identifier(trig->name)));
	}
}
