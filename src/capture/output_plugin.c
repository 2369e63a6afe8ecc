/*-------------------------------------------------------------------------
 *
 * output_plugin.c
 *	  The logical decoding output plugin of the cdc kind.
 *
 * A cdc job's replication slot uses this plugin ("backfill", this library).
 * With the option relid, the upstream's OID, it emits one line per row of
 * that table (or of a partition of it, at any level, as a publication
 * through the partition root would) a committed transaction inserted,
 * updated or deleted:
 *
 *		<LSN of the commit record> TAB <key as a row literal>
 *
 * for example "0/16B3748\t(42)" or "0/16B3748\t(7,\"a b\")"; an update
 * that changes the key emits the old key and the new one.  The row literal
 * is what record_in reads, so the fetch (kind_cdc.c) casts it to the row type of
 * the job's change table.  Nothing else is emitted: transactions and other
 * tables write no line.
 *
 * Transactions that carry the job's own replication origin (named as its
 * slot) are the job's barriers, writing its downstream: they are filtered
 * out before they are decoded (kind_cdc.c).
 *
 * The key is the table's (backfill_key_index: its primary key, or a unique
 * index over NOT NULL columns).  The old key of a delete or of a key change
 * comes from the replica identity, which create_job requires to be that
 * key (the default for a primary key, USING INDEX for another) or the full
 * row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/xlogdefs.h"
#include "catalog/pg_index.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "replication/output_plugin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "copy/copy.h"
#include "lib/lib.h"

/* what a decoding session keeps */
typedef struct DecodeState
{
	Oid			relid;			/* the upstream */
	RepOriginId own_origin;		/* the job's, which its own transactions carry */
	MemoryContext cxt;			/* reset after every change */
} DecodeState;

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

static void
decode_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	DecodeState *state = palloc0(sizeof(DecodeState));
	ListCell   *lc;

	state->cxt = AllocSetContextCreate(ctx->context, "backfill decode",
									   ALLOCSET_SMALL_SIZES);
	foreach(lc, ctx->output_plugin_options)
	{
		DefElem    *elem = lfirst(lc);

		if (strcmp(elem->defname, "relid") == 0 && elem->arg != NULL)
		{
			const char *value = strVal(elem->arg);
			char	   *end;
			unsigned long relid;

			errno = 0;
			relid = strtoul(value, &end, 10);
			if (errno != 0 || *end != '\0' || end == value || value[0] == '-' ||
				relid == 0 || relid > PG_UINT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for option \"relid\" of output plugin \"backfill\": \"%s\"",
								value),
						 errhint("Pass the OID of the upstream table.")));
			state->relid = (Oid) relid;
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" of output plugin \"backfill\" is not recognized",
							elem->defname),
					 errhint("The only option is \"relid\", the OID of the upstream table.")));
	}
	/* a slot is created without options; reading it needs the table */
	if (!is_init && !OidIsValid(state->relid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output plugin \"backfill\" needs option \"relid\"")));
	/* the job's origin has the slot's name (slot.c) */
	state->own_origin = replorigin_by_name(NameStr(ctx->slot->data.name), true);
	opt->output_type = OUTPUT_PLUGIN_TEXTUAL_OUTPUT;
	ctx->output_plugin_private = state;
}

/* the job's own transactions: skipped before they are decoded */
static bool
decode_filter_origin(LogicalDecodingContext *ctx, RepOriginId origin_id)
{
	DecodeState *state = ctx->output_plugin_private;

	return origin_id != InvalidRepOriginId && origin_id == state->own_origin;
}

static void
decode_begin(LogicalDecodingContext *ctx pg_attribute_unused(),
			 ReorderBufferTXN *txn pg_attribute_unused())
{
}

static void
decode_commit(LogicalDecodingContext *ctx pg_attribute_unused(),
			  ReorderBufferTXN *txn pg_attribute_unused(),
			  XLogRecPtr commit_lsn pg_attribute_unused())
{
}

/* write one line: the commit's LSN, then the key of tuple */
static void
emit_key(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation rel,
		 Relation pkindex, HeapTuple tuple, bool last)
{
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfo	out;

	OutputPluginPrepareWrite(ctx, last);
	out = ctx->out;
	appendStringInfo(out, "%X/%X\t(", LSN_FORMAT_ARGS(txn->final_lsn));
	for (int k = 0; k < pkindex->rd_index->indnkeyatts; k++)
	{
		AttrNumber	attnum = pkindex->rd_index->indkey.values[k];
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
		bool		isnull;
		Datum		value = heap_getattr(tuple, attnum, desc, &isnull);
		Oid			outfunc;
		bool		isvarlena;

		if (k > 0)
			appendStringInfoChar(out, ',');
		if (isnull)
			continue;
		if (att->attlen == -1 && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(value)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot decode a key of table \"%s\" stored out of line",
							RelationGetRelationName(rel)),
					 errdetail("A value of key column \"%s\" is too large to be decoded from the write-ahead log.",
							   NameStr(att->attname))));
		getTypeOutputInfo(att->atttypid, &outfunc, &isvarlena);
		if (isvarlena)
			value = PointerGetDatum(PG_DETOAST_DATUM(value));
		backfill_append_record_field(out, OidOutputFunctionCall(outfunc, value));
	}
	appendStringInfoChar(out, ')');
	OutputPluginWrite(ctx, last);
}

static bool
same_key(Relation rel, Relation pkindex, HeapTuple a, HeapTuple b)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int k = 0; k < pkindex->rd_index->indnkeyatts; k++)
	{
		AttrNumber	attnum = pkindex->rd_index->indkey.values[k];
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
		bool		anull;
		bool		bnull;
		Datum		av = heap_getattr(a, attnum, desc, &anull);
		Datum		bv = heap_getattr(b, attnum, desc, &bnull);

		if (anull != bnull)
			return false;
		if (!anull && !datumIsEqual(av, bv, att->attbyval, att->attlen))
			return false;
	}
	return true;
}

static void
decode_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation rel,
			  ReorderBufferChange *change)
{
	DecodeState *state = ctx->output_plugin_private;
	MemoryContext old;
	Relation	pkindex;
	Oid			key_index;
	HeapTuple	newtuple = NULL;
	HeapTuple	oldtuple = NULL;

	/* a partition's rows are the partitioned table's: published through it */
	if (RelationGetRelid(rel) != state->relid &&
		!(rel->rd_rel->relispartition && backfill_partition_of(RelationGetRelid(rel), state->relid)))
		return;

	old = MemoryContextSwitchTo(state->cxt);
	key_index = backfill_key_index(rel);
	if (!OidIsValid(key_index))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key or unique index over NOT NULL columns",
						RelationGetRelationName(rel)),
				 errdetail("A cdc job decodes the key of every row written.")));
	pkindex = RelationIdGetRelation(key_index);

	if (change->data.tp.newtuple)
		newtuple = &change->data.tp.newtuple->tuple;
	if (change->data.tp.oldtuple)
		oldtuple = &change->data.tp.oldtuple->tuple;

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			if (newtuple)
				emit_key(ctx, txn, rel, pkindex, newtuple, true);
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			/* an old tuple is logged when the key changed (or identity full) */
			if (oldtuple && newtuple && !same_key(rel, pkindex, oldtuple, newtuple))
				emit_key(ctx, txn, rel, pkindex, oldtuple, false);
			if (newtuple)
				emit_key(ctx, txn, rel, pkindex, newtuple, true);
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			if (oldtuple == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("a delete from table \"%s\" carries no key", RelationGetRelationName(rel)),
						 OidIsValid(rel->rd_pkindex) ?
						 errhint("Use ALTER TABLE ... REPLICA IDENTITY DEFAULT.") :
						 errhint("Use ALTER TABLE ... REPLICA IDENTITY USING INDEX %s, or REPLICA IDENTITY FULL.",
								 quote_identifier(RelationGetRelationName(pkindex)))));
			emit_key(ctx, txn, rel, pkindex, oldtuple, true);
			break;
		default:
			break;
	}
	RelationClose(pkindex);
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->cxt);
}

static void
decode_shutdown(LogicalDecodingContext *ctx pg_attribute_unused())
{
}

/*
 * _PG_output_plugin_init
 *		The entry point PostgreSQL calls for a slot whose plugin is "backfill".
 */
void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	cb->startup_cb = decode_startup;
	cb->begin_cb = decode_begin;
	cb->change_cb = decode_change;
	cb->commit_cb = decode_commit;
	cb->shutdown_cb = decode_shutdown;
	cb->filter_by_origin_cb = decode_filter_origin;
}
