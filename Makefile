# agentctl: make demo runs the example agent end to end; make test runs
# every check CI runs.

SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

GO      ?= go
BIN     := bin/agentctl
START   := $(shell date +%s.%N)
DEMO_DB := $(CURDIR)/bin/demo.db

.PHONY: build test race bench scale crash chaos fuzz demo screenshots man docs clean

build:
	$(GO) build -buildvcs=auto -trimpath -ldflags='-s -w' -o $(BIN) ./cmd/agentctl # the revision, for agentctl version (some machines set GOFLAGS=-buildvcs=false); no symbol table or DWARF, no local paths: 31 MB instead of 44

# gofmt check, vet, then every test under the race detector, with the
# scenarios and the crash and stress tests driving bin/agentctl, built
# once without it (AGENTCTL_TEST_BIN). testsum prints each package's
# result, the output of tests that failed, the counts, the wall time and
# the ten slowest tests.
test: build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	AGENTCTL_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -race -json -timeout 20m ./... | $(GO) run ./internal/testsum -label test -since $(START)

# The scenarios and the tests that start agentctl processes again, each
# process built with the race detector (the test binary itself).
RACE_TESTS := ^(TestScripts|TestCrash|TestRaceStress)$$
race:
	$(GO) test -race -json -timeout 30m -run '$(RACE_TESTS)' ./cmd/agentctl/ | $(GO) run ./internal/testsum -label race -since $(START)

# Benchmarks, each against a floor measured in the same run: prints one
# table and writes docs/performance.md (method and machine included).
bench:
	@mkdir -p bin
	$(GO) test -run '^$$' -bench '^BenchmarkCold' -benchtime 25x ./cmd/agentctl/ | tee bin/bench.txt
	$(GO) test -run '^$$' -bench '^Benchmark(RunToSuspension|ListSuspended|WorkerWakeup)$$' -benchtime 500x ./cmd/agentctl/ | tee -a bin/bench.txt
	$(GO) test -run '^$$' -bench '^Benchmark(Throughput|BytesPerSuspendedRun|WALFrames)' -benchtime 1x ./cmd/agentctl/ | tee -a bin/bench.txt
	$(GO) test -run '^$$' -bench '^BenchmarkHTTPApprov' -benchtime 500x ./cmd/agentctl/ | tee -a bin/bench.txt
	$(GO) run ./cmd/agentctl/testdata/perfdoc < bin/bench.txt > docs/performance.md

# Scale, long (about 15 minutes on 2 cores; 40 GB free in the temporary directory):
# cold run, approve and list --status suspended on SQLite databases of
# 100k and 10M runs and PostgreSQL ones of 100k and 1M, seeded with bulk
# SQL; writes docs/scale.md. Not part of bench or CI (build tag scale).
scale:
	@mkdir -p bin
	@start=$$(date +%s); \
	$(GO) test -v -tags scale -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 3h ./cmd/agentctl/ | tee bin/scale.txt && \
	$(GO) run ./cmd/agentctl/testdata/scaledoc -elapsed $$(( $$(date +%s) - start )) < bin/scale.txt > docs/scale.md

# Each fuzz target for a few seconds (FUZZTIME): spec loading, exec argv,
# ${{ }} templates, resume data, notifications, stored text, the cut of
# secrets from streamed text. Seeds live in the
# tests. New inputs are minimized for at most FUZZMIN. A minimization
# still running when -fuzztime ends fails the target with "context
# deadline exceeded" and no failing input (Go's fuzzer, not a finding):
# fuzz1 runs such a target once more; any other failure stands.
FUZZTIME ?= 5s
FUZZMIN  ?= 1s
fuzz1 = for try in 1 2; do \
	  out=$$($(GO) test $(1) -run '^$$' -fuzz '^$(2)$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) 2>&1); rc=$$?; echo "$$out"; \
	  [ $$rc -eq 0 ] && break; \
	  if [ $$try = 1 ] && echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
	    echo "$(2): a minimization outlived -fuzztime; once more"; else exit $$rc; fi; \
	done
fuzz:
	@$(call fuzz1,./spec/,FuzzLoad)
	@$(call fuzz1,./spec/,FuzzArgv)
	@$(call fuzz1,./spec/tmpl/,FuzzTemplate)
	@$(call fuzz1,./engine/,FuzzResumeData)
	@$(call fuzz1,./notify/,FuzzRender)
	@$(call fuzz1,./notify/,FuzzDecidedBlocks)
	@$(call fuzz1,./engine/store/sqlstore/,FuzzEscapeText)
	@$(call fuzz1,./toolkits/redact/,FuzzStream)

# Man pages, one per command, into man/ (man -l man/agentctl-approve.1):
# what agentctl man DIR writes.
man: build
	$(BIN) man $(CURDIR)/man

# The generated reference: docs/reference/spec.md from the spec's JSON
# Schema, docs/reference/cli from the command tree (tests fail when
# either is not up to date).
docs:
	mkdir -p docs/reference && $(GO) run ./cmd/agentctl schema --markdown > docs/reference/spec.md
	rm -rf docs/reference/cli && $(GO) run ./cmd/agentctl man --markdown docs/reference/cli
	AGENTCTL_UPDATE_DOCS=1 $(GO) test ./api -run '^TestAPIReferenceUpToDate$$' -count=1

# The inbox's pictures in docs/img (inbox, a run page, a resume form),
# taken in headless Chromium from a server the test starts.
screenshots:
	AGENTCTL_SCREENSHOTS=$(CURDIR)/docs/img AGENTCTL_REQUIRE_BROWSER=1 $(GO) test ./server/web/ -run '^TestScreenshots$$' -count=1 -v

# The crash harness, long: 1000 agentctl processes SIGKILLed at random
# moments (CRASH_SEED picks the sequence); make test runs 50.
crash:
	CRASH_KILLS=$${CRASH_KILLS:-1000} $(GO) test -run '^TestCrash$$' -count=1 -v -timeout 30m ./cmd/agentctl/

# The chaos harness: PostgreSQL, agentctl serve and three workers under
# approvals raced over HTTP and the CLI, with faults injected (SIGKILL,
# SIGTERM, pg_ctl restart, dropped connections, an outage); then the
# ledger, the decisions and the runs' states are checked (docs/reliability.md,
# "Chaos"). Small by default (one round of each fault, 20 s to 3 min; .ci/run
# runs it); longer with a duration: make chaos CHAOS_DURATION=10m.
# CHAOS_BATCH, CHAOS_SEED, CHAOS_LEASE and CHAOS_DIR (keeps the logs) too.
chaos: build
	AGENTCTL_CHAOS=1 AGENTCTL_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^TestChaos$$' -count=1 -v -timeout 3h ./cmd/agentctl/

# The on-call example, offline: run (suspends for approval), then approve
# from a second process.
demo: build
	@rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(BIN) validate examples/agents/oncall.yaml
	@echo '$$ agentctl run oncall -f examples/agents/oncall.yaml --input "nginx is down in prod"'
	@$(BIN) --db $(DEMO_DB) run oncall -f examples/agents/oncall.yaml --input "nginx is down in prod"; \
	code=$$?; echo "(exit $$code: suspended, waiting for a human)"; test $$code -eq 3
	@id=$$($(BIN) --db $(DEMO_DB) list --status suspended -o json | sed -n 's/^    "runId": "\([0-9A-Z]*\)".*/\1/p' | head -1); \
	echo "$$ agentctl approve $$id --reason \"ticket CHG-42\""; \
	$(BIN) --db $(DEMO_DB) approve $$id --reason "ticket CHG-42" && \
	echo "$$ agentctl show $$id" && $(BIN) --db $(DEMO_DB) show $$id
	@echo
	@echo '# A supervisor tree: the approval of a sub-agent surfaces at the root.'
	$(BIN) graph incident -f examples/agents/
	@echo '$$ agentctl run incident -f examples/agents/incident.yaml --input "orders db is out of connections"'
	@$(BIN) --db $(DEMO_DB) run incident -f examples/agents/incident.yaml --input "orders db is out of connections"; \
	code=$$?; echo "(exit $$code: suspended, waiting for a human)"; test $$code -eq 3
	@id=$$($(BIN) --db $(DEMO_DB) list --agent incident --status suspended -o json | sed -n 's/^    "runId": "\([0-9A-Z]*\)".*/\1/p' | head -1); \
	echo "$$ agentctl approve $$id"; \
	$(BIN) --db $(DEMO_DB) approve $$id && \
	echo "$$ agentctl show $$id --tree" && $(BIN) --db $(DEMO_DB) show $$id --tree

clean:
	rm -rf bin
