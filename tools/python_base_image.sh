#!/usr/bin/env bash
# A Debian base image with Python 3.11 in podman's local storage, for building the Dockerfile
# where no image registry is reachable: debootstrap fetches Debian's packages from the mirror
# (the only thing it needs), and podman imports the tree. Nothing happens when the image exists.
#
#   tools/python_base_image.sh [IMAGE]        # default localhost/rewake-python:bookworm
#   REWAKE_TEST_PYTHON_IMAGE=IMAGE pytest tests/integration/test_container_image.py
#
# Needs root, podman and debootstrap (Debian: apt-get install podman runc debootstrap).
set -euo pipefail

image="${1:-localhost/rewake-python:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if podman image exists "$image"; then
    exit 0
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
# python3-venv: the Dockerfile's builder stage makes a virtualenv with pip in it.
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$mirror" >/dev/null
tar -C "$root" -c . | podman import --quiet - "$image" >/dev/null
echo "$image"
