#!/usr/bin/env bash
# subset.sh TRITON_GRPC_SERVICE_PROTO > grpc_service.proto
#
# Cuts the subset clinfer serves out of Triton's grpc_service.proto
# (github.com/triton-inference-server/common, protobuf/grpc_service.proto,
# commit 83adf7cf88a2f343005974dff3728be746de2d66): the licence header, the
# KServe v2 core RPCs up to ModelInfer, the repository extension's three
# RPCs and the messages they use, verbatim. Nothing in the subset uses
# model_config.proto, so its import is dropped. See README.md.
set -euo pipefail
src=$1
want=a2cca0548e8b647f35c2d7d4aaee24d711fa786150dd5e2437c6830843301462
got=$(sha256sum "$src" | cut -d' ' -f1)
if [[ $got != "$want" && ${SUBSET_ANY_SOURCE:-} != 1 ]]; then
	echo "subset.sh: $src has sha256 $got, not the recorded commit's $want" >&2
	exit 1
fi
sed -n '1,31p' "$src"
echo
sed -n '34,82p' "$src"
echo
sed -n '110,138p' "$src"
sed -n '219,814p' "$src"
echo
sed -n '1235,1412p' "$src"
