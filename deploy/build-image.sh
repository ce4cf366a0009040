#!/usr/bin/env bash
# Builds the skein image FROM scratch around a static binary built here.
# Usage: deploy/build-image.sh [tag]   (default tag: skein:dev)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-skein:dev}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/skein" ./cmd/skein
cp deploy/Dockerfile "$ctx/Dockerfile"
docker build -q -t "$tag" "$ctx"
