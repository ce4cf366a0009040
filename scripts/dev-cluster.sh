# shellcheck shell=bash
# dev-cluster.sh: sourced by the measuring scripts (cpu-per-byte.sh,
# latency-under-load.sh) to run their load against a fresh `skein dev`
# cluster. The caller sets root (the repository) and may set WORK,
# BROKER_BIN, LABEL and PORT as its usage describes.

# dev_cluster_setup NAME: makes the work directory (WORK, or a fresh
# temporary one named after NAME), builds skein from this tree into it
# (the load always runs that one), and sets work, bin (BROKER_BIN or that
# build: what the brokers run) and LABEL. From then on an exit stops the
# cluster and removes its data and the build.
dev_cluster_setup() {
	work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/skein-$1-XXXXXX")}
	mkdir -p "$work"
	(cd "$root" && go build -o "$work/skein" ./cmd/skein)
	bin=${BROKER_BIN:-$work/skein}
	LABEL=${LABEL:-$(basename "$bin")}
	dev=
	trap dev_cluster_cleanup EXIT
}

dev_cluster_cleanup() {
	if [[ -n $dev ]]; then
		kill -INT "$dev" 2>/dev/null || true
		wait "$dev" 2>/dev/null || true
	fi
	rm -rf "$work/data" "$work/skein"
}

# dev_cluster_start: starts `$bin dev` (3 brokers, each also a
# controller; broker i on PORT+100*(i-1)) with its data in $work/data,
# waits until it serves, and sets dev (its pid), pids (the broker
# processes) and bs (the bootstrap servers).
dev_cluster_start() {
	# A reused WORK holds the last cluster's output: read before the new
	# one's shell truncates it, its "press Ctrl-C" would pass for this one.
	rm -f "$work/dev.out"
	"$bin" dev --port "$PORT" --data "$work/data" >"$work/dev.out" 2>&1 &
	dev=$!
	for _ in $(seq 600); do
		grep -qs "press Ctrl-C" "$work/dev.out" && break
		if ! kill -0 "$dev" 2>/dev/null; then
			cat "$work/dev.out" >&2
			exit 1
		fi
		sleep 0.1
	done
	pids=$(pgrep -P "$dev" | tr '\n' ' ')
	bs="127.0.0.1:$PORT,127.0.0.1:$((PORT + 100)),127.0.0.1:$((PORT + 200))"
}
