#!/usr/bin/env bash
# sysroot.sh makes the build root the device bundle links against: Debian 11
# (bullseye, glibc 2.31) with libc6-dev, ocl-icd-opencl-dev and
# opencl-headers, in $1 (default .cache/sysroot-bullseye). Binaries linked
# against it need glibc 2.14 at most, so the bundle runs on RHEL/CentOS 7,
# Amazon Linux 2, Ubuntu 18.04 and everything newer, where binaries linked
# against the build machine's glibc 2.36 would need 2.34.
#
# Needs root (debootstrap) and Debian's package mirror; idempotent: a
# finished sysroot has a .clinfer-sysroot marker and is kept.
set -euo pipefail
S=${1:-.cache/sysroot-bullseye}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { echo "sysroot: $*" >&2; }
mkdir -p "$(dirname "$S")"
# Checkouts that share one .cache (worktrees linking it) may run this at
# once: the first makes the sysroot, the others wait for it and find it
# made, instead of removing the one being made.
exec 9>"$S.lock"
flock 9
if [[ -e "$S/.clinfer-sysroot" ]]; then
	exit 0
fi
command -v debootstrap >/dev/null || { log "debootstrap is missing: run \`make deps\` (Debian package debootstrap)"; exit 1; }
rm -rf "$S"
log "debootstrap bullseye into $S (about 250 MB, a minute or two)"
debootstrap --variant=minbase --include=libc6-dev,ocl-icd-opencl-dev,opencl-headers bullseye "$S" "$MIRROR" >"$S.log" 2>&1 ||
	{ log "debootstrap failed; see $S.log"; exit 1; }
# The linker resolves the libraries' absolute symlinks and linker scripts
# inside the sysroot only when they are relative to it.
for d in usr/lib/x86_64-linux-gnu lib/x86_64-linux-gnu lib64 usr/lib; do
	for p in "$S/$d"/*; do
		if [[ -L $p && $(readlink "$p") == /* ]]; then
			ln -sfn "$(realpath -m --relative-to="$(dirname "$p")" "$S$(readlink "$p")")" "$p"
		fi
	done
done
touch "$S/.clinfer-sysroot"
log "done: $S (Debian $(cat "$S/etc/debian_version"))"
