#!/usr/bin/env bash
# Builds dubbogw's image from a static binary built here, with no registry
# pull: ./scripts/image.sh [TAG]  (default dubbogw:dev). Uses podman,
# buildah or docker, whichever is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-dubbogw:dev}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -ldflags "-s -w" -o "$ctx/dubbogw" ./cmd/dubbogw
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
cp deploy/Containerfile.prebuilt "$ctx/Containerfile"
if command -v podman >/dev/null; then
  podman build -q -t "$tag" "$ctx"
elif command -v buildah >/dev/null; then
  buildah bud -q -t "$tag" "$ctx"
elif command -v docker >/dev/null; then
  docker build -q -t "$tag" "$ctx"
else
  echo "image.sh: no podman, buildah or docker; the binary is $ctx/dubbogw" >&2
  exit 1
fi
echo "built $tag"
