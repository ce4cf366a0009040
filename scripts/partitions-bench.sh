#!/usr/bin/env bash
# partitions-bench.sh: the many-partitions target of issue #14. Starts a
# 3-broker cluster on 127.0.0.1 (the `skein dev` layout and properties,
# each broker also a controller, admin listener with /debug/pprof), then:
#   - creates N partitions (default 10,000) of RF=3 in topics of 100
#     (skein perf partitions): the time until every CreateTopics answered,
#     and until every partition had a leader and its 3 replicas in sync;
#   - lets the cluster sit idle IDLE seconds (default 60) and takes each
#     broker's CPU over that window (utime+stime from /proc, % of one core),
#     RSS (now and peak), goroutines (go_goroutines on /metrics);
#   - counts "ISR change outcome unknown; resending" lines in the logs;
#   - sends SIGTERM to all three at once and times each one's exit (and
#     its exit status: 0 is a clean stop).
# One JSON line per broker and one for the run go to stdout, a readable
# summary to stderr.
#
# Usage: scripts/partitions-bench.sh [N]
# Environment: FD_LIMIT (the open-files limit the brokers get; default
# the hard limit), PORT (17092, below the ephemeral range 32768-60999: broker i listens on PORT+100*(i-1), its
# controller on +1, admin on +2), IDLE (60), PER_TOPIC (100), KEEP=1 keeps
# the data directory, WORK (a fresh temporary directory), BROKER_BIN (a
# skein binary to run; default: built from this tree), PROFILE=1 takes a
# CPU profile of broker 1 over the first 20 s of the creation into
# $WORK/create-cpu.pprof and one over 30 s while idle into
# $WORK/idle-cpu.pprof, and broker 1's goroutines 8 s into the stop
# into $WORK/stop-goroutines.txt.
set -euo pipefail

N=${1:-10000}
PORT=${PORT:-17092}
IDLE=${IDLE:-60}
PER_TOPIC=${PER_TOPIC:-100}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/skein-partitions-XXXXXX")}
mkdir -p "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ ${KEEP:-0} == 1 ]] || rm -rf "$work/data"
}
trap cleanup EXIT

# The client side (skein perf partitions) always runs this tree's build.
echo "building skein into $work" >&2
(cd "$root" && go build -o "$work/skein" ./cmd/skein)
BROKER_BIN=${BROKER_BIN:-$work/skein}
clk=$(getconf CLK_TCK)
# Every replica holds its active segment open: a broker of N partitions
# (RF=3 on 3 brokers: all N) needs more than N descriptors. Raise the soft
# limit to FD_LIMIT (default: the hard limit).
ulimit -n "${FD_LIMIT:-$(ulimit -Hn)}" 2>/dev/null || echo "could not raise the open-files limit to ${FD_LIMIT:-$(ulimit -Hn)}" >&2
echo "open-files limit per broker: $(ulimit -n)" >&2
voters="1@127.0.0.1:$((PORT + 1)),2@127.0.0.1:$((PORT + 101)),3@127.0.0.1:$((PORT + 201))"
bootstrap="127.0.0.1:$PORT,127.0.0.1:$((PORT + 100)),127.0.0.1:$((PORT + 200))"
# Another cluster on these ports would answer for this one.
for i in 1 2 3; do
	for p in $((PORT + 100 * (i - 1))) $((PORT + 100 * (i - 1) + 1)) $((PORT + 100 * (i - 1) + 2)); do
		if (: </dev/tcp/127.0.0.1/$p) 2>/dev/null; then
			echo "port $p is in use (another cluster?); set PORT" >&2
			exit 1
		fi
	done
done
for i in 1 2 3; do
	p=$((PORT + 100 * (i - 1)))
	mkdir -p "$work/data/broker-$i"
	"$BROKER_BIN" server \
		--override node.id=$i --override process.roles=broker,controller \
		--override cluster.id=skein-partitions-bench \
		--override listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p + 1)) \
		--override controller.quorum.voters=$voters \
		--override log.dirs="$work/data/broker-$i" \
		--override default.replication.factor=3 --override min.insync.replicas=2 \
		--override offsets.topic.replication.factor=3 --override log.level=info \
		--override admin.listeners=http://127.0.0.1:$((p + 2)) --override admin.pprof.enable=true \
		>"$work/broker-$i.log" 2>&1 &
	pids+=($!)
done

# ready I: until broker I's /readyz answers 200.
ready() {
	for _ in $(seq 600); do
		if ! kill -0 "${pids[$(($1 - 1))]}" 2>/dev/null; then
			echo "broker $1 exited:" >&2
			tail -20 "$work/broker-$1.log" >&2
			exit 1
		fi
		curl -sf "http://127.0.0.1:$((PORT + 100 * ($1 - 1) + 2))/readyz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "broker $1 not ready after 60 s:" >&2
	tail -20 "$work/broker-$1.log" >&2
	exit 1
}
for i in 1 2 3; do ready $i; done
echo "cluster ready; creating $N partitions (topics of $PER_TOPIC, RF=3)" >&2

createprof=
if [[ ${PROFILE:-0} == 1 ]]; then
	curl -sf -o "$work/create-cpu.pprof" "http://127.0.0.1:$((PORT + 2))/debug/pprof/profile?seconds=20" &
	createprof=$!
fi
"$work/skein" perf partitions -b "$bootstrap" --partitions "$N" --per-topic "$PER_TOPIC" \
	--replication-factor 3 --json >"$work/create.json"
cat "$work/create.json" >&2

# cpu_ticks PID: utime+stime of PID in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
goroutines() {
	curl -sf "http://127.0.0.1:$((PORT + 100 * ($1 - 1) + 2))/metrics" | awk '$1 == "go_goroutines" {print $2}'
}

declare -a t0
for i in 1 2 3; do t0[$i]=$(cpu_ticks "${pids[$((i - 1))]}"); done
start=$(date +%s.%N)
prof=
if [[ ${PROFILE:-0} == 1 ]]; then
	# One CPU profile at a time: a creation shorter than the creation
	# profile's 20 s would make this one fail.
	[[ -z $createprof ]] || wait "$createprof" || echo "the creation profile failed" >&2
	curl -sf -o "$work/idle-cpu.pprof" "http://127.0.0.1:$((PORT + 2))/debug/pprof/profile?seconds=30" &
	prof=$!
fi
sleep "$IDLE"
end=$(date +%s.%N)
[[ -z $prof ]] || wait "$prof"
for i in 1 2 3; do
	pid=${pids[$((i - 1))]}
	t1=$(cpu_ticks "$pid")
	cpu=$(awk -v a="${t0[$i]}" -v b="$t1" -v s="$start" -v e="$end" -v c="$clk" 'BEGIN {printf "%.1f", 100 * (b - a) / c / (e - s)}')
	rss=$(($(status_kb "$pid" VmRSS) / 1024))
	hwm=$(($(status_kb "$pid" VmHWM) / 1024))
	g=$(goroutines $i)
	fds=$(ls "/proc/$pid/fd" | wc -l)
	resends=$(grep -c "ISR change outcome unknown; resending" "$work/broker-$i.log" || true)
	echo "{\"broker\":$i,\"idle_cpu_percent\":$cpu,\"rss_mib\":$rss,\"peak_rss_mib\":$hwm,\"goroutines\":$g,\"open_files\":$fds,\"resend_lines\":$resends}"
	echo "broker $i: idle CPU $cpu% of a core over ${IDLE}s, RSS $rss MiB (peak $hwm), $g goroutines, $fds open files, $resends resend lines" >&2
done

# Stop all three at once and time each exit: a broker is gone when
# /proc no longer shows it running (a zombie waits for us to reap it).
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
gone() { [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo X) =~ ^(Z|X|)$ ]]; }
stop_start=$(date +%s.%N)
for p in "${pids[@]}"; do kill -TERM "$p"; done
if [[ ${PROFILE:-0} == 1 ]]; then
	# What broker 1 is still doing 8 s into its stop.
	(sleep 8 && curl -sf -o "$work/stop-goroutines.txt" "http://127.0.0.1:$((PORT + 2))/debug/pprof/goroutine?debug=2") &
fi
declare -a took
left=3
for _ in $(seq 1200); do
	for i in 1 2 3; do
		if [[ -z ${took[$i]:-} ]] && gone "${pids[$((i - 1))]}"; then
			took[$i]=$(awk -v s="$stop_start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.2f", e - s}')
			left=$((left - 1))
		fi
	done
	((left > 0)) || break
	sleep 0.05
done
for i in 1 2 3; do
	rc=0
	wait "${pids[$((i - 1))]}" || rc=$?
	echo "{\"broker\":$i,\"stop_seconds\":${took[$i]:-null},\"exit_status\":$rc}"
	echo "broker $i: exited $rc after ${took[$i]:-more than 60} s of SIGTERM" >&2
done
pids=()
echo "{\"run\":$(cat "$work/create.json"),\"loadavg\":\"$loadavg\",\"cores\":$(nproc)}"
echo "logs: $work/broker-{1,2,3}.log" >&2
