#!/usr/bin/env bash
# build.sh builds the device bundle (`make device-bundle`): everything
# needed to prove clinfer on an OpenCL machine that has a driver and
# nothing else (no Go, no compiler, no apt, no network).
#
#   scripts/devicebundle/build.sh OUTDIR     (default clinfer-out/device-bundle)
#
# OUTDIR gets run.sh, README.txt and payload.tar.gz; run.sh unpacks the
# payload, which mirrors the repository so that each test binary runs in
# its package directory as `go test` would:
#
#   BUNDLE                      commit and build date
#   go.mod                      (RepoRoot finds the tree by it)
#   bin/                        clinfo benchmark tune compiletime devicereport
#   clbackend/clbackend.test    clbackend/cl/cl.test  kernels/kernels.test
#   tests/tests.test            bench/bench.test
#   tests/testdata/             the real models' inputs and ONNX Runtime's outputs
#   .cache/models/              the real models under 8 MiB (make models)
#   onnx-testdata/              the ONNX backend suite (libonnx-testdata)
#   lib/libOpenCL.so.1          the ICD loader (ocl-icd), for machines without one
#
# Everything is linked against a Debian 11 sysroot (sysroot.sh) and needs
# glibc 2.17 or newer; the script checks every binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
GO=${GO:-go}
OUT=${1:-clinfer-out/device-bundle}
ONNX_DATA=${CLINFER_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
MODELS=${CLINFER_MODELS:-.cache/models}
# The binaries link against a Debian 11 sysroot (sysroot.sh) so that they
# need glibc 2.17 at most (GLIBC_MAX), not the build machine's 2.34+.
SYSROOT=${SYSROOT:-.cache/sysroot-bullseye}
GLIBC_MAX=2.17

log() { echo "device-bundle: $*" >&2; }
for need in "$ONNX_DATA/node" "$MODELS/ch_PP-OCRv4_det_infer.onnx"; do
	[[ -e "$need" ]] || { log "missing $need: run \`make deps models\` first"; exit 1; }
done
[[ -e "$SYSROOT/.clinfer-sysroot" ]] || { log "no build sysroot in $SYSROOT: run \`make device-bundle\` (it runs scripts/devicebundle/sysroot.sh as root)"; exit 1; }
S=$(cd "$SYSROOT" && pwd)
LIBDIR=$S/usr/lib/x86_64-linux-gnu
LOADER=$LIBDIR/libOpenCL.so.1
SYSFLAGS="--sysroot=$S -B$LIBDIR -L$LIBDIR -L$S/lib/x86_64-linux-gnu"
export CGO_CFLAGS="$SYSFLAGS -O2 -g" CGO_LDFLAGS="$SYSFLAGS"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
P=$STAGE/payload
mkdir -p "$P/bin" "$P/lib" "$P/.cache"
# -s -w: no symbol tables or DWARF (a third of each binary); panics still
# print function names and lines from the pclntab.
LDFLAGS="-s -w"
log "building commands"
for c in cmd/clinfo cmd/benchmark cmd/tune bench/compiletime cmd/devicereport; do
	"$GO" build -trimpath -ldflags "$LDFLAGS" -o "$P/bin/$(basename "$c")" "./$c"
done
log "building test binaries"
for pkg in clbackend clbackend/cl kernels tests bench; do
	mkdir -p "$P/$pkg"
	"$GO" test -c -trimpath -tags devicebundle -ldflags "$LDFLAGS" -o "$P/$pkg/$(basename "$pkg").test" "./$pkg"
done
cp go.mod "$P/go.mod"
mkdir -p "$P/tests"
cp -r tests/testdata "$P/tests/testdata"
# The models under 8 MiB: PP-OCR det and cls, the wake-word heads, Silero.
# PP-OCR rec (10.8 MB, 10 MB gzipped) and IS-Net (44-176 MB) would take the
# bundle past the 60 MiB that fits what a device call carries (64 MiB);
# their tests skip in the bundle, naming the model.
mkdir -p "$P/.cache/models"
find "$MODELS/" -maxdepth 1 -name '*.onnx' -size -8M -exec cp {} "$P/.cache/models/" \;
# OMITTED names the others, so that their tests skip in the bundle
# (conformance.ModelPath) instead of failing as a missing `make models`.
find "$MODELS/" -maxdepth 1 -name '*.onnx' ! -size -8M -printf '%f\n' | sort >"$P/.cache/models/OMITTED"
mkdir -p "$P/onnx-testdata"
for d in node pytorch-converted pytorch-operator simple; do
	cp -r "$ONNX_DATA/$d" "$P/onnx-testdata/$d"
done
cp -L "$LOADER" "$P/lib/libOpenCL.so.1"

# glibc_needed FILE prints the newest GLIBC_x.y symbol version FILE needs.
glibc_needed() { { objdump -T "$1" 2>/dev/null || true; } | { grep -o 'GLIBC_[0-9.]*' || true; } | sed 's/GLIBC_//' | sort -V | tail -1; }
newest=0
for f in "$P"/bin/* "$P"/*/*.test "$P"/*/*/*.test "$P/lib/libOpenCL.so.1"; do
	v=$(glibc_needed "$f")
	[[ -z $v ]] && continue # static
	if [[ $(printf '%s\n%s\n' "$v" "$GLIBC_MAX" | sort -V | tail -1) != "$GLIBC_MAX" ]]; then
		log "${f#"$P"/} needs glibc $v, newer than the $GLIBC_MAX the bundle promises (was the sysroot used?)"
		exit 1
	fi
	if [[ $(printf '%s\n%s\n' "$v" "$newest" | sort -V | tail -1) == "$v" ]]; then newest=$v; fi
done
printf 'clinfer %s (%s), built %s, needs glibc >= %s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	"$(git diff --quiet 2>/dev/null && echo clean || echo 'with uncommitted changes')" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$newest" >"$P/BUNDLE"

rm -rf "$OUT"
mkdir -p "$OUT"
log "packing"
tar -C "$P" -czf "$OUT/payload.tar.gz" .
cp scripts/devicebundle/run.sh "$OUT/run.sh"
chmod +x "$OUT/run.sh"
cp "$P/BUNDLE" "$OUT/BUNDLE"
cat >"$OUT/README.txt" <<'TXT'
clinfer device bundle: proves clinfer on any Linux x86-64 machine with an
OpenCL driver. Nothing here needs Go, a compiler, apt or the network.

  ./run.sh [--quick] [--devices GPU.0,GPU.1] [OUTDIR]

runs the ONNX backend suite, the real models, HETERO, f16, the kernel and
lowering tests and the benchmarks on every OpenCL device, and writes
OUTDIR/report.md and OUTDIR/report.json (OUTDIR defaults to
./clinfer-device-report). Exit status: 0 every suite passed, 1 a suite
failed, 2 no usable OpenCL. Copy report.md and report.json to
docs/devices/<device>.{md,json} in the clinfer repository and run
`make device-matrix` to add the device to the README.
TXT
size=$(du -sb "$OUT" | cut -f1)
log "$(du -sh "$OUT" | cut -f1) in $OUT ($size bytes; limit 60 MiB)"
if (( size > 60 * 1024 * 1024 )); then
	log "the bundle is over 60 MiB"
	exit 1
fi
