# backfill: PGXS build of the extension and its tests

EXTENSION = backfill
MODULE_big = backfill
OBJS = \
	src/apply.o \
	src/backfill.o \
	src/capture.o \
	src/catalog.o \
	src/chunk.o \
	src/control.o \
	src/create.o \
	src/ddl.o \
	src/decode.o \
	src/downstream.o \
	src/driver.o \
	src/estimate.o \
	src/executor.o \
	src/kind.o \
	src/kind_cdc.o \
	src/kind_remote.o \
	src/kind_snapshot.o \
	src/kind_vnode.o \
	src/pacing.o \
	src/pgoutput.o \
	src/privilege.o \
	src/progress.o \
	src/ranges.o \
	src/remote.o \
	src/run.o \
	src/rw_debug.o \
	src/shape.o \
	src/shmem.o \
	src/sink.o \
	src/slot.o \
	src/sql.o \
	src/state.o \
	src/vnode.o \
	src/worker.o \
	src/xact.o
DATA = sql/backfill--1.0.sql sql/backfill--1.0--1.1.sql sql/backfill--1.1--1.2.sql sql/backfill--1.2--1.3.sql
PGFILEDESC = "backfill - resumable backfill of derived tables"

REGRESS = setup create_job run_job recovery legacy_message observe cancel_drop workers safety snapshot cdc ddl downstream filter_columns into_existing partitioned privileges search_path_attack owner_context bad_input capture apply_statements apply_direct pacing range_vnodes upgrade remote limits watch key_types ddl_guards expression_settings
REGRESS_OPTS = --inputdir=test --outputdir=.
ISOLATION = changes_across_barriers key_moves writer_across_barrier final_barrier_race two_runners snapshot_phases cdc_fetch capture_ddl_between_rows filter_moves apply_waits cdc_slot_lock partition_lock_order
ISOLATION_OPTS = --inputdir=test --outputdir=output_iso
TAP_TESTS = 1

# the server headers as system headers: their inline functions leave
# parameters unused, ours must not
PG_CPPFLAGS = -isystem $(shell $(PG_CONFIG) --includedir-server) -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL = $(libpq)
PG_CFLAGS = $(PG_CFLAGS_EXTRA) -Wall -Wextra -Wno-missing-field-initializers -Wno-sign-compare

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The PGXN release: backfill-<version>.zip of the committed tree, with a
# top-level backfill-<version>/ directory; <version> is META.json's.
DIST_VERSION = $(shell perl -MJSON::PP -0777 -ne 'print decode_json($$_)->{version}' META.json)
.PHONY: dist
dist:
	bash scripts/check_versions.sh
	@git diff --quiet HEAD -- || echo "make dist: uncommitted changes are left out of the zip" >&2
	git archive --format=zip --prefix=backfill-$(DIST_VERSION)/ -o backfill-$(DIST_VERSION).zip HEAD
	@echo "backfill-$(DIST_VERSION).zip"
