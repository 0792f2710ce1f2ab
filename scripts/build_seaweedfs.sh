#!/usr/bin/env bash
# Build SeaweedFS's `weed` (a real S3-compatible server, https://github.com/seaweedfs/seaweedfs) for the object-storage
# tests (framework/testing/s3.py), once per version and user (every clone on the machine shares it, CI's too), into
# ${XDG_CACHE_HOME:-~/.cache}/medallion/seaweedfs/<version>/weed. `go install` refuses the
# module (its go.mod has replace directives), so the module is downloaded from the Go module proxy, copied out of the
# read-only module cache and built inside its own folder. Takes minutes on 2 cores the first time (niced: other work
# keeps the cores), milliseconds once cached. Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

MODULE=github.com/seaweedfs/seaweedfs
VERSION=${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}
out=${XDG_CACHE_HOME:-$HOME/.cache}/medallion/seaweedfs/$VERSION/weed
if [ -x "$out" ]; then echo "$out"; exit 0; fi
command -v go >/dev/null 2>&1 || { echo "setup: Go is needed once to build SeaweedFS for the S3 tests (https://go.dev/dl)" >&2; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || { echo "setup: could not download $MODULE@$VERSION" >&2; exit 1; }
cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
echo "setup: building SeaweedFS $VERSION for the S3 tests (a few minutes, once)" >&2
mkdir -p "$(dirname "$out")"
(cd "$work/src" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w" -o "$work/weed" ./weed)
mv "$work/weed" "$out"
echo "$out"
