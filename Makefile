# backfill: PGXS build of the extension and its tests

EXTENSION = backfill
MODULE_big = backfill
OBJS = \
	src/backfill.o \
	src/catalog.o \
	src/capture.o \
	src/cdc.o \
	src/ddl.o \
	src/decode.o \
	src/executor.o \
	src/jobs.o \
	src/privilege.o \
	src/run.o \
	src/shmem.o \
	src/sink.o \
	src/snapshot.o \
	src/state.o \
	src/vnode.o \
	src/worker.o
DATA = sql/backfill--1.0.sql sql/backfill--1.0--1.1.sql sql/backfill--1.1--1.2.sql
PGFILEDESC = "backfill - resumable backfill of derived tables"

REGRESS = setup create_job run_job recovery observe cancel_drop workers safety snapshot cdc ddl downstream privileges bad_input capture upgrade
REGRESS_OPTS = --inputdir=. --outputdir=.
ISOLATION = changes_across_barriers key_moves writer_across_barrier final_barrier_race two_runners snapshot_phases cdc_fetch capture_ddl_between_rows
ISOLATION_OPTS = --inputdir=. --outputdir=output_iso
TAP_TESTS = 1

PG_CFLAGS = $(PG_CFLAGS_EXTRA) -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
