# Generates defi_day.jsonl: one DeFi agent's day, written for bardo. Every
# line is one Anthropic message; the replay sends the conversation up to each
# user-side message (a user turn or a tool result), 55 calls in all. Hex
# values are generated (seeded): transaction, block and proposal hashes,
# storage slots, event topics, addresses. The trace is frozen; this script
# records how it was made.
import json, random
random.seed(2026)
H = lambda n: '0x' + ''.join(random.choice('0123456789abcdef') for _ in range(n))
wallet = H(40)
msgs = []
def user(t): msgs.append({"role": "user", "content": t})
def call(i, name, args, result, say=None):
    content = ([{"type": "text", "text": say}] if say else []) + [{"type": "tool_use", "id": f"toolu_{i:03d}", "name": name, "input": args}]
    msgs.append({"role": "assistant", "content": content})
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:03d}", "content": result}]})
def answer(t): msgs.append({"role": "assistant", "content": t})
n = 0
tasks = [
    ("Good morning. What's in the wallet?", "get_balances"),
    ("Swap 0.5 ETH for USDC, max 0.5% slippage.", "swap"),
    ("Supply 1,000 USDC to Aave.", "supply"),
    ("Did the supply transaction confirm? Give me the hash.", "receipt"),
    ("Bridge 200 USDC to Arbitrum.", "bridge"),
    ("Check the Arbitrum side for the bridged funds.", "receipt"),
    ("Vote yes on the Aave proposal that's live.", "vote"),
    ("Repay 150 USDC of my GHO debt.", "repay"),
    ("What did my last five transactions do?", "history"),
    ("Revoke the old router's allowance.", "revoke"),
    ("End of day summary, with every tx hash.", "summary"),
]
for ti, (prompt, kind) in enumerate(tasks):
    user(prompt)
    hashes = []
    for step in range(4):
        n += 1
        tx, blk = H(64), H(64)
        hashes.append(tx)
        if step == 0:
            call(n, "get_balances", {"address": wallet}, json.dumps({"address": wallet, "ETH": "2.41", "USDC": "3120.55", "aUSDC": "1000.00", "block": int(19283000 + n)}))
        elif step == 1:
            call(n, "simulate", {"kind": kind, "from": wallet}, [{"type": "text", "text": f"Simulation OK for {kind}: gas 142,118, no revert. Storage slot {H(64)} changes from {H(64)} to {H(64)}."}], say="Simulating first.")
        elif step == 2:
            call(n, "send_transaction", {"kind": kind, "from": wallet}, json.dumps({"transactionHash": tx, "status": "pending", "nonce": 40 + n}))
        else:
            call(n, "get_receipt", {"txHash": hashes[-2]}, [{"type": "text", "text": json.dumps({"transactionHash": hashes[-2], "blockHash": blk, "blockNumber": hex(19283000 + n), "status": "0x1", "logs": [{"topics": [H(64), H(64)], "data": H(64)}]})},
                                                            {"type": "text", "text": f"Etherscan: https://etherscan.io/tx/{hashes[-2]}"}])
    answer(f"Done: {kind} confirmed in tx {hashes[-2]} (block hash {blk}).")
with open("defi_day.jsonl", "w") as f:
    for m in msgs:
        f.write(json.dumps(m) + "\n")
calls = sum(1 for m in msgs if m["role"] == "user")
print(len(msgs), "messages,", calls, "calls")
