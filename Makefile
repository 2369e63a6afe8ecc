# backfill: PGXS build of the extension and its tests

EXTENSION = backfill
MODULE_big = backfill
OBJS = \
	src/api/backfill.o \
	src/api/control.o \
	src/api/create.o \
	src/api/cutover.o \
	src/api/cutover_finish.o \
	src/api/cutover_hand_over.o \
	src/api/cutover_local.o \
	src/api/cutover_rollback.o \
	src/api/cutover_rollback_put_back.o \
	src/api/cutover_rollback_row.o \
	src/api/cutover_start.o \
	src/api/cutover_switchover.o \
	src/api/ddl_columns.o \
	src/api/ddl_command.o \
	src/api/ddl_job_tables.o \
	src/api/ddl_owners.o \
	src/api/ddl_partitions.o \
	src/api/ddl_triggers.o \
	src/api/estimate.o \
	src/api/event_trigger.o \
	src/api/job_drop.o \
	src/api/job_ops.o \
	src/api/kind_columns.o \
	src/api/observe.o \
	src/api/repair.o \
	src/api/run.o \
	src/api/switchover.o \
	src/api/upstream.o \
	src/api/verify_changed.o \
	src/api/verify_changed_ranges.o \
	src/api/verify_compare.o \
	src/api/verify_job.o \
	src/api/verify_ranges.o \
	src/api/verify_state.o \
	src/api/verify_sql.o \
	src/api/view_explain.o \
	src/capture/apply_change.o \
	src/capture/apply_direct.o \
	src/capture/capture_change.o \
	src/capture/firing.o \
	src/capture/output_plugin.o \
	src/capture/partitions.o \
	src/capture/slot.o \
	src/capture/triggers.o \
	src/capture/truncate_change.o \
	src/catalog/actor.o \
	src/catalog/barrier_rows.o \
	src/catalog/capabilities.o \
	src/catalog/capture_job_rows.o \
	src/catalog/cutover_rows.o \
	src/catalog/index_rows.o \
	src/catalog/job.o \
	src/catalog/job_holdings.o \
	src/catalog/job_load.o \
	src/catalog/job_lock.o \
	src/catalog/job_names.o \
	src/catalog/job_owner.o \
	src/catalog/job_rows.o \
	src/catalog/job_run_rows.o \
	src/catalog/job_tables.o \
	src/catalog/job_view.o \
	src/catalog/names.o \
	src/catalog/remote_rows.o \
	src/catalog/verification_rows.o \
	src/copy/chunk.o \
	src/copy/downstream.o \
	src/copy/index_build.o \
	src/copy/key_ranges.o \
	src/copy/migration.o \
	src/copy/page_ranges.o \
	src/copy/ranges.o \
	src/copy/shape.o \
	src/copy/sink.o \
	src/copy/size.o \
	src/copy/state.o \
	src/cutover/accepts.o \
	src/cutover/acl_items.o \
	src/cutover/arguments.o \
	src/cutover/attempt_arguments.o \
	src/cutover/attempt_lines.o \
	src/cutover/attempt_once.o \
	src/cutover/attempt_pause.o \
	src/cutover/attempts.o \
	src/cutover/carry_acl.o \
	src/cutover/carry_columns.o \
	src/cutover/carry_functions.o \
	src/cutover/carry_keys.o \
	src/cutover/carry_matviews.o \
	src/cutover/carry_partitions.o \
	src/cutover/carry_replication.o \
	src/cutover/carry_sequences.o \
	src/cutover/carry_subscriptions.o \
	src/cutover/carry_table.o \
	src/cutover/carry_triggers.o \
	src/cutover/carry_views.o \
	src/cutover/check.o \
	src/cutover/check_args.o \
	src/cutover/check_depend.o \
	src/cutover/check_names.o \
	src/cutover/check_owner.o \
	src/cutover/check_rules.o \
	src/cutover/check_schema.o \
	src/cutover/check_table.o \
	src/cutover/column_sequences.o \
	src/cutover/deadlock.o \
	src/cutover/finish_lock.o \
	src/cutover/finish_row.o \
	src/cutover/finish_steps.o \
	src/cutover/function_retype.o \
	src/cutover/index_pairs.o \
	src/cutover/index_wait.o \
	src/cutover/irreversible.o \
	src/cutover/job_row.o \
	src/cutover/lock.o \
	src/cutover/lock_one.o \
	src/cutover/matview_definitions.o \
	src/cutover/matview_parts.o \
	src/cutover/old_name.o \
	src/cutover/other_job.o \
	src/cutover/partition_index_names.o \
	src/cutover/partition_keys.o \
	src/cutover/partition_pair_names.o \
	src/cutover/partition_pairs.o \
	src/cutover/partitions_of.o \
	src/cutover/queries.o \
	src/cutover/record.o \
	src/cutover/record_checks.o \
	src/cutover/report.o \
	src/cutover/same_row_type.o \
	src/cutover/start_checks.o \
	src/cutover/steps.o \
	src/cutover/swap.o \
	src/cutover/swap_carry.o \
	src/cutover/swap_renames.o \
	src/cutover/swap_statements.o \
	src/cutover/verify_gate.o \
	src/cutover/weaker.o \
	src/kinds/kind.o \
	src/kinds/kind_cdc.o \
	src/kinds/kind_snapshot.o \
	src/kinds/kind_vnode.o \
	src/kinds/remote/apply.o \
	src/kinds/remote/chunk.o \
	src/kinds/remote/create.o \
	src/kinds/remote/fence.o \
	src/kinds/remote/fetch.o \
	src/kinds/remote/job.o \
	src/kinds/remote/keys.o \
	src/kinds/remote/kind_remote.o \
	src/kinds/remote/state.o \
	src/kinds/remote/stream.o \
	src/kinds/remote/switchover.o \
	src/kinds/remote/unfetched.o \
	src/kinds/remote/verify.o \
	src/kinds/verify_pending.o \
	src/lib/key_index.o \
	src/lib/lines.o \
	src/lib/privilege.o \
	src/lib/rw_debug.o \
	src/lib/sql.o \
	src/lib/vnode.o \
	src/lib/xact.o \
	src/remote/pgoutput.o \
	src/remote/reads.o \
	src/remote/remote.o \
	src/remote/replication.o \
	src/remote/splits.o \
	src/runtime/driver.o \
	src/runtime/executor.o \
	src/runtime/extension_ddl.o \
	src/runtime/live_actors.o \
	src/runtime/monitoring.o \
	src/runtime/pacing.o \
	src/runtime/progress.o \
	src/runtime/registry.o \
	src/runtime/wait.o \
	src/runtime/worker.o \
	src/runtime/worker_control.o \
	src/views/query_shape.o \
	src/views/scan_order.o
# The scripts of released versions, read as they are, and those of the
# current version, assembled from the parts under src/sql/ (install.sql and
# update-1.3--1.4.sql say which, in which order; scripts/assemble_sql.sh)
EXTVERSION = $(shell sed -n "s/^default_version = '\\(.*\\)'/\\1/p" $(or $(srcdir),.)/backfill.control)
DATA = src/sql/backfill--1.0.sql src/sql/backfill--1.0--1.1.sql src/sql/backfill--1.1--1.2.sql src/sql/backfill--1.2--1.3.sql
DATA_built = backfill--$(EXTVERSION).sql backfill--1.3--$(EXTVERSION).sql
SQL_PARTS = $(wildcard $(srcdir)/src/sql/*.sql $(srcdir)/src/sql/*/*.sql)
PGFILEDESC = "backfill - resumable backfill of derived tables"

REGRESS = setup create_job run_job recovery legacy_message observe cancel_drop workers safety snapshot cdc ddl downstream filter_columns into_existing partitioned privileges search_path_attack owner_context bad_input capture apply_statements apply_direct pacing range_vnodes upgrade remote limits watch key_types ddl_guards expression_settings indexes cutover cutover_owner cutover_refusals row_security internal_functions job_tables cutover_carry waits_monitoring migration_downstream cutover_partitions key_index self_reference vocabulary migration_downstream2 verify_checksum verify_changed repair verify_progress kind_rules cutover_checks cutover_lock_step cutover_carry_steps view_explain cutover_swap_steps verify_kinds
ISOLATION = changes_across_barriers key_moves writer_across_barrier final_barrier_race two_runners snapshot_phases cdc_fetch capture_ddl_between_rows filter_moves apply_waits cdc_slot_lock partition_lock_order cutover_long_txn cutover_queued_writer cutover_concurrent_view cutover_repeatable_read_writer cutover_drop_job cutover_after_rollback job_caps cutover_finish_queued_writer cutover_app_locks cutover_index_build verify_record_concurrent verify_changed_wait cutover_parent_first cutover_finish_parent_first
# the isolation tester's outputs apart from pg_regress's: both read expected/
ISOLATION_OPTS = --outputdir=output_iso
TAP_TESTS = 1

# src/ is cut in folders by layer (doc/layers.md); a header of ours is
# included by its folder's path ("lib/lib.h"), from src/ alone, so that none
# can shadow a server header of the same name.  The server headers as system
# headers: their inline functions leave parameters unused, ours must not
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(shell $(PG_CONFIG) --includedir-server) -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL = $(libpq)
PG_CFLAGS = $(PG_CFLAGS_EXTRA) -Wall -Wextra -Wno-missing-field-initializers -Wno-sign-compare

# Header dependencies.  PGXS tracks them only for a server configured with
# --enable-depend, which packaged servers are not, so a changed header would
# leave objects built against the old one (a struct laid out two ways in one
# library).  gcc writes the headers of each object next to it (src/x/y.d);
# the bitcode for the JIT is made again whenever its object is.
PG_CFLAGS += -MMD -MP
EXTRA_CLEAN = $(OBJS:.o=.d)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

-include $(OBJS:.o=.d)
$(foreach obj,$(OBJS),$(eval $(obj:.o=.bc): $(obj)))

# A VPATH build (pg_buildext build build-%v) writes its objects into a tree
# of its own, whose folders must exist before the compiler writes there
# (named by absolute path, which VPATH does not search: the source tree has
# folders of the same names)
OBJ_DIRS = $(addprefix $(CURDIR)/,$(sort $(dir $(OBJS))))
$(OBJS): | $(OBJ_DIRS)
$(OBJ_DIRS):
	@mkdir -p $@

backfill--$(EXTVERSION).sql: $(srcdir)/src/sql/install.sql $(SQL_PARTS) $(srcdir)/scripts/assemble_sql.sh
	bash $(srcdir)/scripts/assemble_sql.sh $< > $@.tmp && mv $@.tmp $@
backfill--1.3--$(EXTVERSION).sql: $(srcdir)/src/sql/update-1.3--$(EXTVERSION).sql $(SQL_PARTS) $(srcdir)/scripts/assemble_sql.sh
	bash $(srcdir)/scripts/assemble_sql.sh $< > $@.tmp && mv $@.tmp $@

# The PGXN release: backfill-<version>.zip of the committed tree, with a
# top-level backfill-<version>/ directory; <version> is META.json's.
DIST_VERSION = $(shell perl -MJSON::PP -0777 -ne 'print decode_json($$_)->{version}' META.json)
.PHONY: dist
dist:
	bash scripts/check_versions.sh
	@git diff --quiet HEAD -- || echo "make dist: uncommitted changes are left out of the zip" >&2
	git archive --format=zip --prefix=backfill-$(DIST_VERSION)/ -o backfill-$(DIST_VERSION).zip HEAD
	@echo "backfill-$(DIST_VERSION).zip"
