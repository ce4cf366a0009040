#!/usr/bin/env bash
# The project's test command (the README's second command): static checks,
# unit and end-to-end tests with real clients, and a short run of each fuzz
# target.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

echo "== build"
go build ./...
echo "== vet"
go vet ./...
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 # = 2026.2.2; the proxy serves the module version, not the release name
fi
echo "== staticcheck"
"$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")" ./...
echo "== gofmt"
unformatted=$(gofmt -l cmd internal test deploy 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi

echo "== fuzz (short)"
# A count, not a duration: Go 1.26's fuzz coordinator can fail a run with
# a bare "context deadline exceeded" when a -fuzztime duration ends while
# a worker is mid-call (golang/go#75804, fixed in Go 1.27); a count has no
# deadline to race. 20000 inputs take 1-8 s per target here.
FUZZTIME=${FUZZTIME:-20000x}
# Each fuzz target runs briefly; its seed corpus also runs in 'go test' below.
for pkg in $(go list ./internal/...); do
	for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
	done
done

# The Compose tests (a 3-broker cluster of FROM-scratch containers: one
# killed mid-stream; and a skein verify run whose faults are docker kill,
# pause and network disconnect) run where Docker works.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && \
	{ command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1; }; then
	export SKEINTEST_COMPOSE=1
else
	echo "Docker with Compose is not available here: the Compose cluster tests (kill, verify) are skipped."
fi

# A bounded chaos run: skein verify against a local 3-broker cluster for
# 20 s of kill -9, SIGSTOP and network-partition faults must be VALID with
# nothing lost or duplicated (TestVerifyLocalCluster in internal/chaos),
# and its txn workload all-or-nothing (TestVerifyLocalClusterTxn).
export SKEINTEST_VERIFY=1

echo "== test"
# The TestCluster* tests (the e2e cluster tests, ~90 s, and the few
# in-process cluster tests of cmd/skein and internal/metrics) run once,
# below, with the invariants tag, instead of twice.
go test -count=1 -timeout 15m -skip '^TestCluster' ./...

# confluent-kafka-go links the librdkafka its module bundles, so its part
# of the security client matrix (TestSecureClients, skipped above where
# cgo is off) and its transactional producer and read_committed consumer
# (TestTxnConfluent, only built with cgo) run here with cgo; gcc is on
# every machine of this kind.
echo "== test (cgo: confluent-kafka-go)"
CGO_ENABLED=1 go vet ./test/e2e/
CGO_ENABLED=1 go test -count=1 -run '^(TestSecureClients|TestTxnConfluent)$/^confluent-kafka-go/' ./test/e2e/

# Once more with broken invariants panicking where they are found
# (internal/invariant): the replica core, the simulator's seeds and the
# in-process cluster tests.
echo "== test (-tags invariants)"
go test -count=1 -tags invariants ./internal/invariant/ ./internal/replica/ ./internal/replication/
go test -count=1 -tags invariants -run 'TestSeeds|TestRegressions' ./internal/sim/
# Replicas moving between log directories (AlterReplicaLogDirs) under faults: ~10 s.
go test -count=1 -tags invariants -run '^TestLogDirSeeds$' ./internal/sim/ -sim.seeds=50
go test -count=1 -timeout 10m -tags invariants -run '^TestCluster' ./test/e2e/ ./cmd/skein/ ./internal/metrics/
