#!/usr/bin/env bash
# The operator dashboard's outside pieces (host/dashboard):
#   - uPlot, vendored from npm at a pinned version into
#     host/dashboard/assets/vendor (embedded by go:embed, no CDN). Every run
#     checks the vendored files against their SHA-256; `--vendor` fetches the
#     package again (npm pack), checks the tarball's SHA-256, and rewrites them.
#   - Debian's chromium, which the dashboard's browser tests drive headless:
#     installed with apt-get when absent (`--no-browser` skips it).
set -euo pipefail
cd "$(dirname "$0")/.."

UPLOT_VERSION=1.6.32
UPLOT_TGZ_SHA256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
dir=host/dashboard/assets/vendor
declare -A files=(
	[uPlot.iife.min.js]=19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f
	[uPlot.min.css]=df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04
	[uPlot.LICENSE]=8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd
)

vendor=0 browser=1
for a in "$@"; do
	case $a in
	--vendor) vendor=1 ;;
	--no-browser) browser=0 ;;
	*) echo "usage: $0 [--vendor] [--no-browser]" >&2; exit 2 ;;
	esac
done

if [ $vendor = 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack "uplot@$UPLOT_VERSION" --silent >/dev/null)
	echo "$UPLOT_TGZ_SHA256  $tmp/uplot-$UPLOT_VERSION.tgz" | sha256sum -c --quiet
	tar xzf "$tmp/uplot-$UPLOT_VERSION.tgz" -C "$tmp"
	mkdir -p "$dir"
	cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$dir/"
	cp "$tmp/package/LICENSE" "$dir/uPlot.LICENSE"
fi
for f in "${!files[@]}"; do
	echo "${files[$f]}  $dir/$f" | sha256sum -c --quiet || {
		echo "dashboard-deps: $dir/$f does not match uplot@$UPLOT_VERSION (run $0 --vendor)" >&2
		exit 1
	}
done

if [ $browser = 1 ] && ! command -v chromium >/dev/null; then
	# Root on the test machines (CI included); apt-get update once first.
	if [ "$(id -u)" != 0 ]; then
		echo "dashboard-deps: chromium is missing; install Debian's chromium (apt-get install chromium)" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
