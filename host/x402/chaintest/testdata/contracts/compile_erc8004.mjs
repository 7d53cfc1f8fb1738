// Compiles ERC8004Registries.sol (the chain tests' minimal ERC-8004 Identity
// and Reputation registries) with the same solc-js and settings as
// compile.mjs (plus viaIR), into ERC8004Registries.json: { contracts: { Name: { abi,
// bytecode } } }. A check by default; --write updates the file.
// Usage: node compile_erc8004.mjs [--write]
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const solc = require("solc");
const here = dirname(fileURLToPath(import.meta.url));
const src = "ERC8004Registries.sol";
const out = join(here, "ERC8004Registries.json");
const input = {
  language: "Solidity",
  sources: { [src]: { content: readFileSync(join(here, src), "utf8") } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "paris",
    viaIR: true, // the NewFeedback event has more arguments than the legacy pipeline can stack
    metadata: { bytecodeHash: "none", appendCBOR: false },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of output.errors || []) console.error(e.formattedMessage);
if ((output.errors || []).some((e) => e.severity === "error")) process.exit(1);
const contracts = {};
for (const name of ["IdentityRegistry", "ReputationRegistry"]) {
  const c = output.contracts[src][name];
  contracts[name] = { abi: c.abi, bytecode: "0x" + c.evm.bytecode.object };
}
const text = JSON.stringify({ compiler: "solc " + solc.version(), contracts }, null, 2) + "\n";
let old = "";
try {
  old = readFileSync(out, "utf8");
} catch {}
if (old === text) {
  console.log("compile_erc8004: ERC8004Registries.json up to date");
} else if (process.argv.includes("--write")) {
  writeFileSync(out, text);
  console.log("compile_erc8004: wrote ERC8004Registries.json");
} else {
  console.error("compile_erc8004: ERC8004Registries.json does not match its source: run node compile_erc8004.mjs --write");
  process.exit(1);
}
