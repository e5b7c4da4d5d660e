# aiq build.
#
# Modules are discovered by directory, so adding a file needs no edit here:
#   common/ policy/ queue/      -> libaiqcore.a  (pure C, no I/O libraries)
#   operator/*.c minus main.c, simulator/*.c -> libaiqop.a (curl, json-c, SQLite, libyaml)
#   test/apiserver/*.c minus main.c -> libaiqapi.a (the local cluster)
#   test/promfake/main.c        -> aiq-promfake, a fake Prometheus for tests
#   tools/<prog>.c              -> one program per file (aiq-sim, kubectl-aiq, aiq-journal)
#   tools/cli_*.c               -> libaiqcli.a (kubectl-aiq's commands and helpers;
#                                  tools/kubectl-aiq.c is its main)
#   test/unit/test_*.c          -> one test binary each (ASan+UBSan build)
#   fuzz/fuzz_*.c               -> one libFuzzer target each (clang)
#   bench/bench_*.c             -> one benchmark each (-O2)
#   test/realcluster/*.go       -> build/realcluster/aiq-realcluster, the real
#                                  Kubernetes control plane for tests (Go)
#
# Build variants live under build/: rel (-O2), san (ASan+UBSan), dbg
# (-O0, for valgrind), fuzz (clang, libFuzzer+ASan+UBSan).

SHELL := /bin/sh
# The entry targets (test, demo, bench, ...) build with one job per core
# unless the caller chose -j already.
JOBS := $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 2))
CC ?= cc
CLANG ?= clang
PKGS := libcurl json-c sqlite3 yaml-0.1 libmicrohttpd gnutls

DEPS_OK := $(shell pkg-config --exists $(PKGS) 2>/dev/null && echo yes)
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS)) -lm -lpthread

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -I. -MMD -MP

CORE_SRC := $(wildcard common/*.c policy/*.c queue/*.c)
OP_SRC   := $(filter-out operator/main.c,$(wildcard operator/*.c)) $(wildcard simulator/*.c)
API_SRC  := $(filter-out test/apiserver/main.c,$(wildcard test/apiserver/*.c))
CLI_SRC  := $(wildcard tools/cli_*.c)
TOOL_SRC := $(filter-out $(CLI_SRC),$(wildcard tools/*.c))
TEST_SRC := $(wildcard test/unit/test_*.c)
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
BENCH_SRC := $(wildcard bench/bench_*.c)
TH_SRC   := test/unit/th.c

# Programs: name -> main source.
PROGS := $(if $(wildcard operator/main.c),aiq-operator) \
	$(if $(wildcard test/apiserver/main.c),aiq-apiserver) \
	$(if $(wildcard test/promfake/main.c),aiq-promfake) $(patsubst tools/%.c,%,$(TOOL_SRC))
main_of = $(if $(filter aiq-operator,$(1)),operator/main.c,$(if $(filter aiq-apiserver,$(1)),test/apiserver/main.c,$(if $(filter aiq-promfake,$(1)),test/promfake/main.c,tools/$(1).c)))

VARIANT_CFLAGS_rel := -O2 -g
VARIANT_CFLAGS_san := -O1 -g -DAIQ_SELFCHECK -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
VARIANT_CFLAGS_dbg := -O0 -g -DAIQ_SELFCHECK
VARIANT_LDFLAGS_san := -fsanitize=address,undefined

.PHONY: all deps test unit e2e bench lint valgrind fuzz fuzz-smoke clean demo soak realcluster
.DEFAULT_GOAL := all
# Keep intermediate objects so rebuilds are incremental.
.SECONDARY:

deps:
	@./scripts/install-deps.sh

# ---- per-variant rules -------------------------------------------------------
define VARIANT
build/$(1)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE_CFLAGS) $$(VARIANT_CFLAGS_$(1)) $$(PKG_CFLAGS) -c $$< -o $$@

build/$(1)/libaiqcore.a: $$(CORE_SRC:%.c=build/$(1)/%.o)
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^

build/$(1)/libaiqop.a: $$(OP_SRC:%.c=build/$(1)/%.o)
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^

build/$(1)/libaiqapi.a: $$(API_SRC:%.c=build/$(1)/%.o)
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^

build/$(1)/libaiqcli.a: $$(CLI_SRC:%.c=build/$(1)/%.o)
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^

LIBS_$(1) := build/$(1)/libaiqcli.a build/$(1)/libaiqapi.a build/$(1)/libaiqop.a build/$(1)/libaiqcore.a

build/$(1)/test/%: build/$(1)/test/unit/%.o build/$(1)/test/unit/th.o $$(LIBS_$(1))
	$$(CC) $$(VARIANT_CFLAGS_$(1)) $$(VARIANT_LDFLAGS_$(1)) -o $$@ $$< build/$(1)/test/unit/th.o $$(LIBS_$(1)) $$(PKG_LIBS)
endef
$(eval $(call VARIANT,rel))
$(eval $(call VARIANT,san))
$(eval $(call VARIANT,dbg))

# The commit every binary reports (--version, aiq_build_info): passed to
# common/version.c alone, recompiled when HEAD or the index moves.
AIQ_GIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(foreach v,rel san dbg,build/$(v)/common/version.o): BASE_CFLAGS += -DAIQ_GIT='"$(AIQ_GIT)"'
$(foreach v,rel san dbg,build/$(v)/common/version.o): $(wildcard .git/HEAD .git/index)

define PROG
build/$(1)/$(2): build/$(1)/$(3:.c=.o) $$(LIBS_$(1))
	$$(CC) $$(VARIANT_CFLAGS_$(1)) $$(VARIANT_LDFLAGS_$(1)) -o $$@ build/$(1)/$(3:.c=.o) $$(LIBS_$(1)) $$(PKG_LIBS)
endef
$(foreach v,rel san dbg,$(foreach p,$(PROGS),$(eval $(call PROG,$(v),$(p),$(call main_of,$(p))))))

REL_PROGS := $(PROGS:%=build/rel/%)
SAN_PROGS := $(PROGS:%=build/san/%)
SAN_TESTS := $(TEST_SRC:test/unit/%.c=build/san/test/%)
DBG_TESTS := $(TEST_SRC:test/unit/%.c=build/dbg/test/%)

# ---- the real control plane (Go, test infrastructure) -------------------------
# kube-apiserver, kube-scheduler, kube-controller-manager and etcd from the
# Kubernetes Go modules, in one binary (test/realcluster). go builds
# incrementally from its own caches (GOCACHE, GOMODCACHE: kept between
# runs in their default places under $HOME), so only the first build is
# slow. The version is stamped as a release build would be, so /version
# says v1.34.N and the kubectl dispatcher can pick its client.
GO ?= go
REALCLUSTER := build/realcluster/aiq-realcluster
REAL_SRC := $(wildcard test/realcluster/*.go) test/realcluster/go.mod test/realcluster/go.sum
K8S_VERSION = $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes v\([0-9.]*\)$$/\1/p' test/realcluster/go.mod)
K8S_LDFLAGS = -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean

$(REALCLUSTER): $(REAL_SRC)
	@mkdir -p $(dir $@)
	@t0=$$(date +%s); echo "go build $@ (Kubernetes v$(K8S_VERSION); the first build takes several minutes)"; \
	cd test/realcluster && GOTOOLCHAIN=local GOFLAGS=-mod=readonly $(GO) build -ldflags '$(K8S_LDFLAGS)' \
		-o $(CURDIR)/$@ . && echo "built $@ in $$(( $$(date +%s) - t0 )) s"

realcluster: $(REALCLUSTER)

# After REALCLUSTER is defined: a rule's prerequisites are expanded when
# make reads it, so above it `all` built no control plane.
# When the libraries were missing as make read this file, install them
# first and build in a new make, which reads pkg-config's flags with the
# libraries present (building beside the install, as a prerequisite
# would with -j, compiles before the headers are there).
ifeq ($(DEPS_OK),yes)
all: $(REL_PROGS) $(REALCLUSTER)
else ifeq ($(AIQ_DEPS_TRIED),1)
all:
	@echo "make: the libraries are installed but 'pkg-config --exists $(PKGS)' still fails" >&2; exit 1
else
all:
	@./scripts/install-deps.sh
	@$(MAKE) --no-print-directory AIQ_DEPS_TRIED=1 all
endif

# ---- tests -------------------------------------------------------------------
# make test: every unit test under ASan/UBSan, then the unit tests under
# valgrind (the -O0 build) in the background beside the e2e suites that
# need no API server, then every other end-to-end suite on both API
# servers, alone on the machine.
test: deps
	@$(MAKE) --no-print-directory $(JOBS) test-build $(DBG_TESTS)
	@AIQ_VALGRIND_BUILD=build/dbg ./test/run-tests.sh build/san

test-build: $(SAN_TESTS) $(SAN_PROGS) $(REL_PROGS) $(REALCLUSTER) fuzz-build-if-clang
.PHONY: test-build

unit: deps
	@$(MAKE) --no-print-directory $(JOBS) $(SAN_TESTS)
	@./test/run-tests.sh build/san unit

e2e: deps
	@$(MAKE) --no-print-directory $(JOBS) $(SAN_PROGS) $(REL_PROGS) $(REALCLUSTER)
	@./test/run-tests.sh build/san e2e

valgrind: deps
	@$(MAKE) --no-print-directory $(JOBS) $(DBG_TESTS)
	@./test/run-tests.sh build/dbg valgrind

# ---- fuzzing -----------------------------------------------------------------
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -I. -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_LIB_CFLAGS := $(filter-out -fsanitize=fuzzer%,$(FUZZ_CFLAGS)) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP
FUZZ_BINS := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)

build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_LIB_CFLAGS) $(PKG_CFLAGS) -c $< -o $@

build/fuzz/libfuzzcore.a: $(CORE_SRC:%.c=build/fuzz/obj/%.o)
	rm -f $@ && ar rcs $@ $^

build/fuzz/libfuzzop.a: $(OP_SRC:%.c=build/fuzz/obj/%.o)
	rm -f $@ && ar rcs $@ $^

# Targets link archives, so each pulls in only the objects it needs.
build/fuzz/%: fuzz/%.c build/fuzz/libfuzzop.a build/fuzz/libfuzzcore.a
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -o $@ $< build/fuzz/libfuzzop.a build/fuzz/libfuzzcore.a $(PKG_LIBS)

fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)

fuzz-build-if-clang:
	@if command -v $(CLANG) >/dev/null 2>&1 && [ -n "$(FUZZ_BINS)" ]; then \
		$(MAKE) --no-print-directory $(FUZZ_BINS); fi
.PHONY: fuzz-build-if-clang

# ---- benchmarks ----------------------------------------------------------------
# bench/*.c other than bench_*.c are helpers linked into every benchmark.
BENCH_BINS := $(BENCH_SRC:bench/%.c=build/rel/bench/%)
BENCH_LIB_OBJ := $(patsubst %.c,build/rel/%.o,$(filter-out $(BENCH_SRC),$(wildcard bench/*.c)))
build/rel/bench/%: build/rel/bench/%.o $(BENCH_LIB_OBJ) $(LIBS_rel)
	$(CC) -O2 -o $@ $< $(BENCH_LIB_OBJ) $(LIBS_rel) $(PKG_LIBS)

# The process benchmarks start both API servers: the real control plane
# is built too.
bench: deps
	@$(MAKE) --no-print-directory $(JOBS) $(BENCH_BINS) $(REL_PROGS) $(REALCLUSTER)
	@./bench/run-bench.sh

# ---- lint --------------------------------------------------------------------
# The layering (what each directory may include: the table in
# docs/architecture.md), stdio I/O in the core and the banned calls, no
# product function over 80 lines, then cppcheck.
lint: deps
	python3 scripts/lint-layers.py .
	python3 scripts/lint-funclen.py .
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --suppress=missingIncludeSystem --std=c11 -I. \
		common policy queue operator simulator test/apiserver tools

# make demo AIQ_API=real: the same demo on the real control plane.
demo: deps
	@$(MAKE) --no-print-directory $(JOBS) $(REL_PROGS) $(if $(filter real,$(AIQ_API)),$(REALCLUSTER))
	@AIQ_API=$(or $(AIQ_API),local) ./scripts/demo.sh

# The e2e suites of `make soak` run the ASan build unless SOAK_BUILD says
# otherwise: `make soak SOAK_BUILD=build/rel` is several times faster.
SOAK_BUILD ?= build/san
soak: deps
	@$(MAKE) --no-print-directory $(JOBS) test-build
	@AIQ_SOAK=1 AIQ_PROGRESS=$${AIQ_PROGRESS:-30} AIQ_E2E_BUILD=$(SOAK_BUILD) ./test/run-tests.sh build/san

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
