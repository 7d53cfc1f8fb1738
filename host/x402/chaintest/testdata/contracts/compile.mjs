// Compiles the project's own contracts with solc-js (npm solc, pinned in
// package-lock.json) and checks — or with --write, updates — the committed
// outputs:
//   host/x402/contracts/ERC6492Check.sol -> host/x402/contracts/ERC6492Check.bin
//     (creation bytecode, hex; embedded in the gateway: the deployless
//     ERC-6492 check it runs through eth_call)
//   ./WalletFactory.sol -> ./WalletFactory.json (abi + bytecode; the chain
//     tests' CREATE2 factory for counterfactual wallets)
// Settings are fixed (optimizer 200 runs, evm paris, no metadata hash), so the
// output is a pure function of the source and the compiler version: a check
// that fails means a source changed without `node compile.mjs --write`.
// Usage: node compile.mjs [--write]   (scripts/chain-deps.sh runs the check)
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const solc = require("solc");
const here = dirname(fileURLToPath(import.meta.url));
const x402 = join(here, "..", "..", "..");
const write = process.argv.includes("--write");

const targets = [
  { src: join(x402, "contracts", "ERC6492Check.sol"), name: "ERC6492Check", out: join(x402, "contracts", "ERC6492Check.bin"), format: "bin" },
  { src: join(here, "WalletFactory.sol"), name: "WalletFactory", out: join(here, "WalletFactory.json"), format: "json" },
];

const input = {
  language: "Solidity",
  sources: Object.fromEntries(targets.map((t) => [t.name + ".sol", { content: readFileSync(t.src, "utf8") }])),
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "paris",
    metadata: { bytecodeHash: "none", appendCBOR: false },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === "error");
for (const e of output.errors || []) console.error(e.formattedMessage);
if (errors.length) process.exit(1);

let stale = 0;
for (const t of targets) {
  const c = output.contracts[t.name + ".sol"][t.name];
  const text =
    t.format === "bin"
      ? c.evm.bytecode.object + "\n"
      : JSON.stringify({ contractName: t.name, compiler: "solc " + solc.version(), abi: c.abi, bytecode: "0x" + c.evm.bytecode.object }, null, 2) + "\n";
  let old = "";
  try {
    old = readFileSync(t.out, "utf8");
  } catch {}
  const rel = relative(join(x402, "..", ".."), t.out);
  if (old === text) {
    console.log(`compile: ${rel} up to date (solc ${solc.version()})`);
  } else if (write) {
    writeFileSync(t.out, text);
    console.log(`compile: wrote ${rel}`);
  } else {
    console.error(`compile: ${rel} does not match its source compiled with solc ${solc.version()}: run node compile.mjs --write`);
    stale++;
  }
}
process.exit(stale ? 1 : 0);
