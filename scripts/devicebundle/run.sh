#!/usr/bin/env bash
# run.sh: proves clinfer on this machine's OpenCL devices and writes
# report.md and report.json. Part of the device bundle (`make
# device-bundle` in the clinfer repository); needs bash, tar and gzip, and
# an OpenCL driver, nothing else.
#
#   ./run.sh [--quick] [--list-suites] [--devices GPU.0,GPU.1] [--max-step 4m] [--tune exhaustive] [OUTDIR]
#
#   --quick     a short pass of every step (CI)
#   --list-suites  list the test suites' tests instead of running them
#               (for a machine whose `go test` ran them: make test)
#   --tune      tuning mode of the tuning steps: fast (default) or
#               exhaustive (every variant of PP-OCR det 640/320, cls, rec);
#               they write the device's shipped tuning database into
#               OUTDIR/tuning (`make tuning-db REPORT=OUTDIR` ships it)
#   --devices   only these clinfer devices (default: every OpenCL device)
#   --max-step  cap each step's time limit (a machine lent for little time)
#   OUTDIR      where the report, logs and the unpacked bundle go
#               (default ./clinfer-device-report)
#
# Exit status: 0 every suite passed, 1 a suite failed, 2 no usable OpenCL.
set -euo pipefail

usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
say() { echo "run.sh: $*"; }

quick=()
devices=()
out=
while (($#)); do
	case $1 in
	--quick) quick+=(-quick) ;;
	--list-suites) quick+=(-list-suites) ;;
	--devices) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; devices=(-devices "$2"); shift ;;
	--devices=*) devices=(-devices "${1#--devices=}") ;;
	--max-step) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; devices+=(-max-step "$2"); shift ;;
	--tune) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; devices+=(-tune "$2"); shift ;;
	-h | --help) usage; exit 0 ;;
	-*) say "unknown option $1"; usage >&2; exit 2 ;;
	*) out=$1 ;;
	esac
	shift
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${out:-$PWD/clinfer-device-report}
mkdir -p "$out"
out=$(cd "$out" && pwd)
B=$out/bundle

if [[ ! -f $B/BUNDLE ]] || ! cmp -s "$B/BUNDLE" "$here/BUNDLE"; then
	say "unpacking $(cat "$here/BUNDLE") into $B"
	rm -rf "$B"
	mkdir -p "$B"
	tar -xzf "$here/payload.tar.gz" -C "$B"
fi

# find_lib NAME: the path of a shared library the dynamic linker would
# find, from ldconfig's cache or the usual directories.
find_lib() {
	local name=$1 ldc p d
	for ldc in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
		if p=$("$ldc" -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }') && [[ -n $p ]]; then
			echo "$p"
			return 0
		fi
	done
	for d in ${LD_LIBRARY_PATH//:/ } /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib /lib \
		/usr/local/lib /usr/local/nvidia/lib64 /usr/lib/nvidia /usr/lib64/nvidia; do
		if [[ -e $d/$name ]]; then
			echo "$d/$name"
			return 0
		fi
	done
	return 1
}

# The ICD loader: the machine's, else the bundle's copy of ocl-icd.
if loader=$(find_lib libOpenCL.so.1); then
	say "OpenCL ICD loader: $loader"
else
	export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	say "no OpenCL ICD loader (libOpenCL.so.1) on this machine: using the bundle's copy of ocl-icd"
fi

# Vendor files: NVIDIA's driver without its ICD file (common in containers
# that mount the driver libraries only) gets a private one.
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
icds=()
if [[ -d $vendors ]]; then
	shopt -s nullglob
	icds=("$vendors"/*.icd)
	shopt -u nullglob
elif [[ -f $vendors ]]; then
	icds=("$vendors")
fi
if ((${#icds[@]} == 0)); then
	if nv=$(find_lib libnvidia-opencl.so.1); then
		mkdir -p "$out/icd"
		echo "$nv" >"$out/icd/nvidia.icd"
		export OCL_ICD_VENDORS=$out/icd
		say "NVIDIA's OpenCL library $nv has no vendor file in $vendors: wrote $out/icd/nvidia.icd and set OCL_ICD_VENDORS=$out/icd"
	fi
else
	say "OpenCL vendor files in $vendors: ${icds[*]##*/}"
fi

if ! "$B/bin/clinfo" >"$out/clinfo.txt" 2>&1; then
	cat "$out/clinfo.txt" >&2
	cat >&2 <<'TXT'
run.sh: no usable OpenCL platform on this machine. Install the OpenCL
driver of the device (the ICD loader is in this bundle), for example:
  NVIDIA   the driver's OpenCL part (libnvidia-opencl.so.1, e.g. the
           Debian/Ubuntu package nvidia-opencl-icd or libnvidia-compute-*)
  AMD      ROCm's rocm-opencl-runtime, or mesa-opencl-icd (rusticl)
  Intel    intel-opencl-icd (compute-runtime)
  any CPU  pocl-opencl-icd (POCL)
and check that /etc/OpenCL/vendors holds its .icd file (or point
OCL_ICD_VENDORS at one).
TXT
	exit 2
fi
grep -E '^Platform|Device #' "$out/clinfo.txt" | sed 's/^/run.sh:   /' || true

exec "$B/bin/devicereport" -bundle "$B" -out "$out" "${quick[@]}" "${devices[@]}"
