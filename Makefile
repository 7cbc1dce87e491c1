# Loom's build. `make demo` runs the main job on its embedded default;
# `make test` is what CI runs.
GO      ?= go
BIN     := bin/loom
FUZZTIME ?= 5s
# Go's fuzzer minimises each new interesting input for up to this long; a
# short run whose time ends during a minimisation fails with "context
# deadline exceeded" (seen in CI). Off for the brief runs of `make test`;
# set it (e.g. 60s, Go's default) for long runs.
FUZZMINIMIZE ?= 0

.PHONY: build test test-deps unit fuzz bench demo sim clean proto

build:
	$(GO) build -o $(BIN) ./cmd/loom

# Vet, every unit test, then each fuzz target briefly (its corpus in
# testdata/fuzz is replayed by the unit tests too), on a machine that has
# only Go and make: scripts/test-env.sh first installs what the tests need
# from Debian (python3, chromium, a JDK, ZooKeeper) where missing, and runs
# `unit` and `fuzz` with a private ZooKeeper it stops afterwards, unless one
# already answers on 127.0.0.1:2181 or $LOOM_TEST_ZK. `make unit` and
# `make fuzz` alone set nothing up: bring your own ZooKeeper.
# (TEST_MAKE, not $(MAKE) itself, so that `make -n test` prints the line
# rather than running it.)
TEST_MAKE = $(MAKE)
test:
	scripts/test-env.sh $(TEST_MAKE) unit fuzz

# Only the installs, no ZooKeeper started.
test-deps:
	scripts/test-env.sh

# The integration package runs real daemons for 6-10 minutes on a 2-core
# machine, past go test's default 10-minute limit on a slow one (CI timed
# out at 606 s): it gets 30.
unit:
	$(GO) vet ./...
	$(GO) test -timeout 30m ./...

# Go's fuzzer sometimes ends a short run with "context deadline exceeded"
# and no failing input (its time ran out mid-call; seen in CI, once twice
# in a row on one target): such a target is run again, up to three runs
# in all, and fails only if all do. A real failure says "Failing input
# written" and fails at once.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$t for $(FUZZTIME)"; \
			run() { $(GO) test $$pkg -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) 2>&1; }; \
			tries=0; \
			until out=$$(run); do \
				tries=$$((tries + 1)); \
				if echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written' && [ $$tries -lt 3 ]; then \
					echo "fuzz $$pkg $$t: the fuzzer's deadline, no failing input; again"; \
				else \
					echo "$$out" | tail -n 40; exit 1; \
				fi; \
			done; \
		done; \
	done

# Go benchmarks print each median beside its target; `loom bench` does the
# same for the simulator's targets.
bench: build
	$(GO) test -run '^$$' -bench . ./fairness ./altruism ./rpc ./rm ./daemon/rm/server ./daemon/nm/executor
	$(BIN) bench

# The main job: a mini cluster of real processes on loopback (an RM and 4
# NMs) running 8 TPC-H jobs in about a minute, with the same jobs replayed
# through the simulator for comparison.
demo: build
	$(BIN) mini --compare-sim

# The simulator on the paper's 100-machine cluster: 250 TPC-H jobs, all
# four policies compared.
sim: build
	$(BIN) sim

clean:
	rm -rf bin

# Regenerates rpc/hadooppb and rpc/yarnpb from proto/hadoop and proto/yarn in
# one protoc run (the YARN files import hadoop/Security.proto). Files are
# registered as hadoop/... and yarn/..., and Hadoop's common messages under
# the package loom.hadoop.common, so that Loom links beside the HDFS client,
# which registers Hadoop's own; package names never reach the wire.
# Needs Debian's protobuf-compiler (protoc) and
# `go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12`.
# The generated code is committed; rerun this after editing any .proto.
proto:
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc -I proto \
		--go_out=. --go_opt=module=github.com/loomrm/loom \
		proto/hadoop/*.proto proto/yarn/*.proto proto/loom/*.proto
