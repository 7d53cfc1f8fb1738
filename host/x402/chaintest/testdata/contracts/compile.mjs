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
// and the vendored third-party contracts (vendor/, see vendor/README.md), each
// with the compiler and settings of its upstream foundry.toml:
//   Permit2 (solc 0.8.17, via-IR, 1,000,000 runs) -> ./Permit2.json
//   x402UptoPermit2Proxy (solc 0.8.28, 200 runs, no CBOR) -> ./x402UptoPermit2Proxy.json
// Their creation code is exactly what was deployed: CREATE2 through the
// deterministic deployer with upstream's salt gives the canonical address
// (checked here and by the chain tests, which deploy them that way).
// Usage: node compile.mjs [--write]   (scripts/chain-deps.sh runs the check)
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
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
function check(out, text) {
  let old = "";
  try {
    old = readFileSync(out, "utf8");
  } catch {}
  const rel = relative(join(x402, "..", ".."), out);
  if (old === text) {
    console.log(`compile: ${rel} up to date`);
  } else if (write) {
    writeFileSync(out, text);
    console.log(`compile: wrote ${rel}`);
  } else {
    console.error(`compile: ${rel} does not match its source: run node compile.mjs --write`);
    stale++;
  }
}

// Vendored contracts: the source unit names are upstream's (src/…, lib/…),
// as forge passes them, so the compiler sees the same input.
const { keccak_256 } = require("js-sha3");
const create2Deployer = "4e59b44847b379578588920ca78fbf26c0b4956c"; // Arachnid's, on every chain
function create2(salt, init) {
  const h = keccak_256(Buffer.from("ff" + create2Deployer + salt.slice(2) + keccak_256(Buffer.from(init, "hex")), "hex"));
  return "0x" + h.slice(24);
}
function walk(d) {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".sol") ? [p] : [];
  });
}
const vendored = [
  {
    name: "Permit2",
    file: "src/Permit2.sol",
    compiler: "solc-0.8.17",
    upstream: "github.com/Uniswap/permit2@cc56ad0f3439c502c246fc5cfcc3db92bb8b7219",
    dirs: [["permit2/src", "src/"], ["solmate", "lib/solmate/"]],
    settings: { optimizer: { enabled: true, runs: 1000000 }, viaIR: true, evmVersion: "london", metadata: { bytecodeHash: "none" }, remappings: ["solmate/=lib/solmate/"] },
    salt: "0x0000000000000000000000000000000000000000d3af2663da51c10215000000",
    args: "",
    address: "0x000000000022d473030f116ddee9f6b43ac78ba3",
  },
  {
    name: "x402UptoPermit2Proxy",
    file: "src/x402UptoPermit2Proxy.sol",
    compiler: "solc-0.8.28",
    upstream: "github.com/coinbase/x402@dd927a26cfefc98c24b3ec38b3a8f204dad0c60d (contracts/evm)",
    dirs: [["x402/src", "src/"], ["openzeppelin-contracts", "lib/openzeppelin-contracts/"]],
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: "cancun", metadata: { bytecodeHash: "none", appendCBOR: false }, remappings: ["@openzeppelin/contracts/=lib/openzeppelin-contracts/contracts/"] },
    salt: "0x000000000000000000000000000000000000000000000000b000000001db633d",
    args: "000000000000000000000000000000000022d473030f116ddee9f6b43ac78ba3", // constructor(address permit2)
    address: "0x4020a4f3b7b90cca423b9fabcc0ce57c6c240002",
  },
];
for (const v of vendored) {
  const c = require(v.compiler);
  const sources = {};
  for (const [dir, unit] of v.dirs) {
    const root = join(here, "vendor", dir);
    for (const p of walk(root)) sources[unit + relative(root, p)] = { content: readFileSync(p, "utf8") };
  }
  const out = JSON.parse(c.compile(JSON.stringify({ language: "Solidity", sources, settings: { ...v.settings, outputSelection: { [v.file]: { [v.name]: ["abi", "evm.bytecode.object"] } } } })));
  for (const e of out.errors || []) if (e.severity === "error") console.error(e.formattedMessage);
  if ((out.errors || []).some((e) => e.severity === "error")) process.exit(1);
  const k = out.contracts[v.file][v.name];
  const init = k.evm.bytecode.object + v.args;
  const at = create2(v.salt, init);
  if (at !== v.address) {
    console.error(`compile: ${v.name} would deploy at ${at}, not its canonical ${v.address}: the source or settings differ from upstream's`);
    stale++;
  }
  const text = JSON.stringify({ contractName: v.name, compiler: "solc " + c.version(), upstream: v.upstream, salt: v.salt, address: v.address, abi: k.abi, initCode: "0x" + init }, null, 2) + "\n";
  check(join(here, v.name + ".json"), text);
}

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
