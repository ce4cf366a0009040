#!/usr/bin/env bash
# bench.sh: the throughput table of issue #14, Skein side by side with
# franz-go's kfake (in memory, no replication, no disk), with the same load
# generator (skein perf: franz-go, 1 MiB batches, 100,000 buffered records,
# no compression, no per-record latency recording), in one sitting.
#
# Usage: scripts/bench.sh FRANZ_GO_DIR     (or FRANZ_GO_DIR=... scripts/bench.sh)
#
# FRANZ_GO_DIR is a checkout of github.com/twmb/franz-go (kfake is not
# vendored here and nothing of it is committed). scripts/kfake.sh builds a
# small main in a temporary directory that imports the checkout's
# pkg/kfake and starts 3 kfake brokers; it starts a 3-broker Skein dev
# cluster (skein dev, durable defaults: fsync before the ack). Then, for
# each system, RUNS runs (default 3) of:
#   produce 1 KiB records, 3 partitions, RF=3, acks=all
#   produce 100 B records, 3 partitions, RF=3, acks=all
#   consume each topic back from the start
# and prints the medians and the Skein/kfake ratios. One JSON line per run
# is kept in $OUT (default: a temporary file, named at the end).
#
# Environment: RUNS (3), N1K records of 1 KiB per run (300000), N100
# records of 100 B per run (2000000), SKEIN_PORT (19092), KFAKE_PORT (29092),
# BROKER_BIN: a skein binary to run the brokers with (to compare builds;
# default: the one built from this tree, which always runs the load).
set -euo pipefail

FRANZ_GO_DIR=${1:-${FRANZ_GO_DIR:-}}
if [[ -z "$FRANZ_GO_DIR" || ! -d "$FRANZ_GO_DIR/pkg/kfake" ]]; then
	echo "usage: scripts/bench.sh FRANZ_GO_DIR  (a github.com/twmb/franz-go checkout; also FRANZ_GO_DIR=...)" >&2
	exit 2
fi
FRANZ_GO_DIR=$(cd "$FRANZ_GO_DIR" && pwd)
RUNS=${RUNS:-3}
N1K=${N1K:-300000}
N100=${N100:-2000000}
SKEIN_PORT=${SKEIN_PORT:-19092}
# Not in the brokers' environment: a broker reads every SKEIN_* variable as
# a property (SKEIN_PORT would be "port", which it refuses).
export -n SKEIN_PORT
KFAKE_PORT=${KFAKE_PORT:-29092}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/skein-bench-XXXXXX")
OUT=${OUT:-$work/results.jsonl}
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work/skein-data" "$work/kfake" "$work/skein"
}
trap cleanup EXIT

echo "building skein and a kfake runner (from $FRANZ_GO_DIR) in $work" >&2
(cd "$root" && go build -o "$work/skein" ./cmd/skein)
broker_bin=${BROKER_BIN:-$work/skein}
# shellcheck source=scripts/kfake.sh
. "$root/scripts/kfake.sh"
kfake_build "$FRANZ_GO_DIR" "$work"

# wait_for FILE TEXT: until the process writing FILE has printed TEXT.
wait_for() {
	for _ in $(seq 600); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for '$2' in $1:" >&2
	cat "$1" >&2
	exit 1
}

"$work/kfake/kfake" --port "$KFAKE_PORT" >"$work/kfake.out" 2>&1 &
pids+=($!)
"$broker_bin" dev --port "$SKEIN_PORT" --data "$work/skein-data" >"$work/skein.out" 2>&1 &
pids+=($!)
wait_for "$work/kfake.out" "kfake ready"
wait_for "$work/skein.out" "press Ctrl-C"
skein_bs="127.0.0.1:$SKEIN_PORT,127.0.0.1:$((SKEIN_PORT + 100)),127.0.0.1:$((SKEIN_PORT + 200))"
kfake_bs="127.0.0.1:$KFAKE_PORT,127.0.0.1:$((KFAKE_PORT + 1)),127.0.0.1:$((KFAKE_PORT + 2))"
: >"$OUT"

# One run: system, workload, run number. Produces then consumes a fresh
# topic, appending both JSON lines to $OUT.
one() {
	local sys=$1 size=$2 n=$3 run=$4 bs
	bs=$([[ $sys == skein ]] && echo "$skein_bs" || echo "$kfake_bs")
	local topic="bench-$size-$run"
	"$work/skein" perf produce -b "$bs" --topic "$topic" --partitions 3 --replication-factor 3 \
		--num-records "$n" --record-size "$size" --acks all --label "$sys produce $size" --json >>"$OUT"
	"$work/skein" perf consume -b "$bs" --topic "$topic" --messages "$n" --json |
		sed "s/^{/{\"label\":\"$sys consume $size\",/" >>"$OUT"
}

for run in $(seq "$RUNS"); do
	for sys in kfake skein; do
		one "$sys" 1024 "$N1K" "$run"
		one "$sys" 100 "$N100" "$run"
	done
	echo "run $run of $RUNS done" >&2
done

# median LABEL FIELD: the median of FIELD over the runs labelled LABEL.
median() {
	grep "\"label\":\"$1\"" "$OUT" | grep -o "\"$2\":[0-9.e+-]*" | cut -d: -f2 | sort -g |
		awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}
row() { # title label-suffix field unit scale
	local s k
	s=$(median "skein $2" "$3")
	k=$(median "kfake $2" "$3")
	awk -v t="$1" -v s="$s" -v k="$k" -v u="$4" -v d="$5" \
		'BEGIN {printf "| %s | %.3g %s | %.3g %s | %.2f |\n", t, s/d, u, k/d, u, s/k}'
}
echo
echo "Medians of $RUNS runs, 3 partitions, RF=3, acks=all (Skein: fsync before the ack); $(nproc) cores."
echo
echo "| workload | Skein | kfake | ratio |"
echo "|---|---|---|---|"
row "produce 1 KiB records" "produce 1024" mb_per_sec "MiB/s" 1
row "produce 100 B records" "produce 100" records_per_sec "M rec/s" 1e6
row "produce 100 B records" "produce 100" mb_per_sec "MiB/s" 1
row "consume 1 KiB" "consume 1024" mb_per_sec "MiB/s" 1
row "consume 100 B" "consume 100" records_per_sec "M rec/s" 1e6
echo
echo "JSON lines: $OUT" >&2
