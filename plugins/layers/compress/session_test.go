//go:build !wasip1

package main

// A long agent session the tests share: a DeFi operations agent working with
// its owner through a morning — fourteen answered exchanges and a fifteenth
// question, 57 turns, with single and parallel tool calls, a failed call and
// its retry, and tool results the size real APIs return (72 hourly price
// candles, 30 transactions, a 16-pool table, news). About 34 KB of
// conversation text, ≈ 9,000 estimated tokens.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/bardoinference/bardo/sdk/wire"
)

type session struct {
	System []wire.Block
	Tools  []wire.Tool
	Msgs   []wire.Message
}

func text(s string) []wire.Block { return []wire.Block{{Type: wire.BlockText, Text: s}} }

func userSays(s string) wire.Message      { return wire.Message{Role: "user", Content: text(s)} }
func assistantSays(s string) wire.Message { return wire.Message{Role: "assistant", Content: text(s)} }

type call struct{ id, name, input string }

// assistantCalls is an assistant turn: an optional sentence, then tool calls.
func assistantCalls(say string, calls ...call) wire.Message {
	m := wire.Message{Role: "assistant"}
	if say != "" {
		m.Content = append(m.Content, wire.Block{Type: wire.BlockText, Text: say})
	}
	for _, c := range calls {
		m.Content = append(m.Content, wire.Block{Type: wire.BlockToolUse, ID: c.id, Name: c.name, Data: []byte(c.input)})
	}
	return m
}

type result struct {
	id, content string
	isError     bool
}

// toolResults is the user turn carrying the results of the calls before it.
func toolResults(rs ...result) wire.Message {
	m := wire.Message{Role: "user"}
	for _, r := range rs {
		m.Content = append(m.Content, wire.Block{Type: wire.BlockToolResult, ID: r.id, Text: r.content, IsError: r.isError})
	}
	return m
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// hexOf is a deterministic 0x-hex string of n bytes derived from seed.
func hexOf(seed string, n int) string {
	var out []byte
	for i := 0; len(out) < n; i++ {
		s := sha256.Sum256([]byte(fmt.Sprint(seed, i)))
		out = append(out, s[:]...)
	}
	return "0x" + hex.EncodeToString(out[:n])
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

func candles(asset string, base float64, n int) string {
	type candle struct {
		T      string  `json:"t"`
		Open   float64 `json:"open"`
		High   float64 `json:"high"`
		Low    float64 `json:"low"`
		Close  float64 `json:"close"`
		Volume float64 `json:"volume_usd"`
	}
	out := struct {
		Asset    string   `json:"asset"`
		Interval string   `json:"interval"`
		Source   string   `json:"source"`
		Candles  []candle `json:"candles"`
	}{Asset: asset, Interval: "1h", Source: "chainlink+cex-median"}
	prev := base
	for i := range n {
		c := base * (1 + 0.021*math.Sin(float64(i)/3.1) - 0.012*math.Cos(float64(i)/1.7))
		out.Candles = append(out.Candles, candle{
			T:    fmt.Sprintf("2025-06-%02dT%02d:00:00Z", 9+i/24, i%24),
			Open: round(prev, 2), Close: round(c, 2),
			High: round(math.Max(prev, c)*1.0041, 2), Low: round(math.Min(prev, c)*0.9962, 2),
			Volume: round(41e6+9e6*math.Sin(float64(i)), 0),
		})
		prev = c
	}
	return mustJSON(out)
}

func transactions(wallet string, n int) string {
	type tx struct {
		Hash   string `json:"hash"`
		Block  int    `json:"block"`
		Time   string `json:"time"`
		From   string `json:"from"`
		To     string `json:"to"`
		Method string `json:"method"`
		Value  string `json:"value"`
		GasUSD string `json:"gas_usd"`
		Status string `json:"status"`
	}
	methods := []string{"supply(USDC)", "borrow(USDC)", "swapExactTokensForTokens", "approve(USDC)", "deposit(morpho-usdc-vault)", "collect(48213)", "repay(USDC)", "transfer(ETH)"}
	values := []string{"25000 USDC", "5000 USDC", "4.2 ETH → 13,208 USDC", "unlimited", "40000 USDC", "0.41 ETH + 1,288 USDC", "3000 USDC", "1.5 ETH"}
	var txs []tx
	for i := range n {
		txs = append(txs, tx{
			Hash: hexOf("tx"+fmt.Sprint(i), 32), Block: 22690412 - i*713, Time: fmt.Sprintf("2025-06-%02dT%02d:%02d:11Z", 11-i/5, (7*i)%24, (13*i)%60),
			From: wallet, To: hexOf("to"+fmt.Sprint(i%4), 20), Method: methods[i%len(methods)], Value: values[i%len(values)],
			GasUSD: fmt.Sprintf("%.2f", 1.8+float64(i%5)*0.7), Status: "success",
		})
	}
	return mustJSON(map[string]any{"wallet": wallet, "chain": "ethereum", "transactions": txs})
}

func pools() string {
	type pool struct {
		Address   string  `json:"address"`
		Pair      string  `json:"pair"`
		FeeTier   string  `json:"fee_tier"`
		TVL       float64 `json:"tvl_usd"`
		Volume24h float64 `json:"volume_24h_usd"`
		FeeAPR    float64 `json:"fee_apr_pct"`
		Chain     string  `json:"chain"`
	}
	var ps []pool
	chains := []string{"ethereum", "arbitrum", "base", "optimism"}
	fees := []string{"0.05%", "0.30%", "0.01%", "1.00%"}
	for i := range 16 {
		tvl := 310e6 / float64(i+1)
		ps = append(ps, pool{Address: hexOf("pool"+fmt.Sprint(i), 20), Pair: "WETH/USDC", FeeTier: fees[i%4],
			TVL: round(tvl, 0), Volume24h: round(tvl*(0.9-0.04*float64(i)), 0), FeeAPR: round(6.4+1.7*float64(i%3)-0.3*float64(i), 2), Chain: chains[i%4]})
	}
	return mustJSON(map[string]any{"protocol": "uniswap-v3", "pools": ps})
}

func news() string {
	type article struct {
		Title     string `json:"title"`
		Source    string `json:"source"`
		Published string `json:"published"`
		URL       string `json:"url"`
		Snippet   string `json:"snippet"`
	}
	as := []article{
		{"Morpho DAO approves new risk curator for USDC vaults", "The Defiant", "2025-06-11T16:20:00Z", "https://example.org/news/morpho-curator",
			"The vote passed with 94% support. The new curator will manage allocation caps for the flagship USDC vault, starting with a conservative 35% cap on any single market and weekly public reports on utilization and bad debt."},
		{"Aave governance: proposal to raise USDC supply cap on mainnet v3", "Aave Governance Forum", "2025-06-11T09:05:00Z", "https://example.org/news/aave-usdc-cap",
			"The temp check proposes raising the USDC supply cap from 3.0B to 3.5B and adjusting the slope-2 interest parameter to reduce rate spikes above 92% utilization. A Snapshot vote is expected next week."},
		{"ETH options skew turns negative ahead of CPI print", "CoinDesk", "2025-06-12T07:45:00Z", "https://example.org/news/eth-skew",
			"One-week 25-delta risk reversals flipped to -3.1 vol points, signalling demand for downside protection. Traders cite the US CPI release on Thursday and large token unlocks as near-term risks."},
		{"Uniswap v4 hooks audit contest concludes with two medium findings", "Rekt News", "2025-06-10T18:30:00Z", "https://example.org/news/v4-audit",
			"Neither finding affects deployed pools. The contest reviewed the dynamic-fee hook used by several large ETH/USDC pools and recommended additional bounds checks on fee updates."},
		{"Stablecoin supply on Ethereum reaches record 142B", "The Block", "2025-06-12T05:10:00Z", "https://example.org/news/stablecoin-record",
			"USDC grew 2.3% over the week while USDT was flat. Analysts attribute the growth to rising lending yields on Aave and Morpho, which have pulled idle stablecoins back on-chain."},
	}
	return mustJSON(map[string]any{"query": "Morpho OR Aave governance", "results": as})
}

// agentSession returns the shared session. Every exchange starts with a user
// question; the conversation ends with the fifteenth question, unanswered.
func agentSession() session {
	const wallet = "0x5c8fA1e2B7d04C3a9E61f0b2D4e8A7c6B3d91F20"
	sys := "You are Atlas, a careful DeFi operations agent working for one portfolio owner. You monitor lending " +
		"positions, liquidity positions and wallet activity on Ethereum and its rollups, assess risk, and propose " +
		"actions. Rules: never sign or send a transaction without the owner's explicit confirmation in the same " +
		"turn; state numbers with units and sources; flag any health factor under 1.5; prefer venues with audited " +
		"contracts and at least 50M USD of liquidity; keep gas costs under 0.2% of the amount moved. Use the tools " +
		"to read live data instead of relying on memory, and say when data may be stale."
	tool := func(name, desc, schema string) wire.Tool {
		return wire.Tool{Name: name, Description: desc, Schema: []byte(schema)}
	}
	tools := []wire.Tool{
		tool("get_positions", "Read the owner's lending positions on a protocol.", `{"type":"object","properties":{"protocol":{"type":"string","enum":["aave-v3","morpho","compound-v3"]},"chain":{"type":"string"}},"required":["protocol"]}`),
		tool("get_price_history", "Hourly OHLCV candles for an asset.", `{"type":"object","properties":{"asset":{"type":"string"},"hours":{"type":"integer"}},"required":["asset","hours"]}`),
		tool("get_gas", "Current gas prices and the USD cost of common actions.", `{"type":"object","properties":{"chain":{"type":"string"}}}`),
		tool("get_swap_quote", "Quote a swap on an aggregator or DEX.", `{"type":"object","properties":{"venue":{"type":"string"},"sell":{"type":"string"},"buy":{"type":"string"},"amount":{"type":"string"}},"required":["venue","sell","buy","amount"]}`),
		tool("get_rate_history", "Daily supply and borrow APY of a market.", `{"type":"object","properties":{"protocol":{"type":"string"},"asset":{"type":"string"},"days":{"type":"integer"}},"required":["protocol","asset"]}`),
		tool("simulate_health", "Simulate a lending position's health factor under a price shock.", `{"type":"object","properties":{"protocol":{"type":"string"},"asset":{"type":"string"},"shock_pct":{"type":"number"}},"required":["protocol","asset","shock_pct"]}`),
		tool("get_transactions", "Recent transactions of a wallet.", `{"type":"object","properties":{"wallet":{"type":"string"},"limit":{"type":"integer"}},"required":["wallet"]}`),
		tool("get_pools", "Liquidity pools of a pair with TVL, volume and fee APR.", `{"type":"object","properties":{"pair":{"type":"string"}},"required":["pair"]}`),
		tool("get_lp_position", "A Uniswap v3 LP position by token id.", `{"type":"object","properties":{"token_id":{"type":"integer"}},"required":["token_id"]}`),
		tool("search_news", "Search recent crypto news.", `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		tool("build_tx", "Build (not send) a transaction for the owner to review.", `{"type":"object","properties":{"action":{"type":"string"},"params":{"type":"object"}},"required":["action"]}`),
	}

	var m []wire.Message
	add := func(ms ...wire.Message) { m = append(m, ms...) }

	// 1. Positions overview (parallel calls).
	add(userSays("Morning Atlas. Give me an overview of my lending positions on Aave and Morpho, mainnet. Anything I should worry about?"),
		assistantCalls("I'll read both venues in parallel.",
			call{"toolu_01A", "get_positions", `{"protocol":"aave-v3","chain":"ethereum"}`},
			call{"toolu_01B", "get_positions", `{"protocol":"morpho","chain":"ethereum"}`}),
		toolResults(
			result{id: "toolu_01A", content: mustJSON(map[string]any{"protocol": "aave-v3", "account": wallet, "health_factor": 1.84, "ltv": 0.38,
				"supplied":              []map[string]any{{"asset": "WETH", "amount": "48.20", "usd": 152731.4, "apy": 1.9}, {"asset": "USDC", "amount": "25000", "usd": 25000, "apy": 4.6}},
				"borrowed":              []map[string]any{{"asset": "USDC", "amount": "41000", "usd": 41000, "apy": 6.1}, {"asset": "USDT", "amount": "12500", "usd": 12500, "apy": 6.4}},
				"liquidation_threshold": 0.825, "e_mode": false, "updated": "2025-06-12T08:01:12Z"})},
			result{id: "toolu_01B", content: mustJSON(map[string]any{"protocol": "morpho", "account": wallet,
				"vaults":  []map[string]any{{"vault": "Steakhouse USDC", "assets": "40000 USDC", "apy": 7.2, "curator": "Steakhouse Financial"}},
				"markets": []map[string]any{{"market": "wstETH/USDC 86%", "collateral": "12.5 wstETH", "debt": "18000 USDC", "health_factor": 2.31}},
				"updated": "2025-06-12T08:01:14Z"})}),
		assistantSays("Here is the picture as of 08:01 UTC.\n\nAave v3 (mainnet): you supply 48.20 WETH (≈152,731 USD) and 25,000 USDC, and borrow 41,000 USDC plus 12,500 USDT. Health factor 1.84, LTV 38%, liquidation threshold 82.5%. Nothing urgent, but the USDT debt costs 6.4% APY while the USDC you supply earns only 4.6%.\n\nMorpho: 40,000 USDC in the Steakhouse USDC vault at 7.2% APY, and a wstETH/USDC market position with 12.5 wstETH collateral against 18,000 USDC debt, health factor 2.31.\n\nNo health factor is under the 1.5 threshold. The one thing I'd look at is the spread: you are paying more on Aave debt than you earn on Aave USDC supply, while Morpho pays 7.2%."))

	// 2. Price history.
	add(userSays("What did ETH do over the last three days? I want to know how close we came to any danger zone."),
		assistantCalls("", call{"toolu_02A", "get_price_history", `{"asset":"ETH","hours":72}`}),
		toolResults(result{id: "toolu_02A", content: candles("ETH", 3168.5, 72)}),
		assistantSays("ETH traded in a band of roughly 3,080–3,245 USD over the last 72 hours (hourly candles, Chainlink + CEX median). The lows came in the early hours of each day, the highs in the afternoons. At the low, your Aave health factor would have been about 1.79, so you were never near the 1.5 warning line; liquidation on Aave would need ETH near 1,730 USD with the current debt. Volume was steady at 32–50M USD per hour, no sign of a liquidation cascade."))

	// 3. Gas.
	add(userSays("Check gas right now; I might rebalance today."),
		assistantCalls("", call{"toolu_03A", "get_gas", `{"chain":"ethereum"}`}),
		toolResults(result{id: "toolu_03A", content: mustJSON(map[string]any{"chain": "ethereum", "base_fee_gwei": 6.2, "priority_fee_gwei": 0.4, "eth_usd": 3171.2,
			"estimates_usd": map[string]float64{"erc20_transfer": 0.96, "aave_supply": 3.1, "aave_repay": 2.9, "aave_withdraw": 3.4, "morpho_deposit": 3.8, "uniswap_swap": 4.7, "approve": 0.81},
			"trend_1h":      "falling", "updated": "2025-06-12T08:04:40Z"})}),
		assistantSays("Gas is cheap: base fee 6.2 gwei plus 0.4 priority, ETH at 3,171 USD. A full rebalance (repay on Aave, withdraw, deposit on Morpho, one swap and one approval) would cost about 15 USD in total, far below the 0.2% limit on any amount over 7,500 USD. The 1-hour trend is falling, so there is no rush."))

	// 4. Swap quotes (parallel).
	add(userSays("Quote me selling 15,000 USDC for ETH on Uniswap and on 1inch, and tell me which is better after gas."),
		assistantCalls("Getting both quotes.",
			call{"toolu_04A", "get_swap_quote", `{"venue":"uniswap","sell":"USDC","buy":"ETH","amount":"15000"}`},
			call{"toolu_04B", "get_swap_quote", `{"venue":"1inch","sell":"USDC","buy":"ETH","amount":"15000"}`}),
		toolResults(
			result{id: "toolu_04A", content: mustJSON(map[string]any{"venue": "uniswap-v3", "route": []string{"USDC/WETH 0.05%"}, "sell": "15000 USDC", "buy": "4.7262 ETH", "price_impact_pct": 0.03, "gas_usd": 4.7, "expires": "2025-06-12T08:06:30Z"})},
			result{id: "toolu_04B", content: mustJSON(map[string]any{"venue": "1inch", "route": []string{"USDC/WETH uniswap-v3 0.05% (70%)", "USDC/WETH curve tricrypto (30%)"}, "sell": "15000 USDC", "buy": "4.7311 ETH", "price_impact_pct": 0.02, "gas_usd": 7.9, "expires": "2025-06-12T08:06:31Z"})}),
		assistantSays("1inch gives 4.7311 ETH (split 70% Uniswap 0.05% pool, 30% Curve tricrypto) for 7.90 USD of gas; Uniswap direct gives 4.7262 ETH for 4.70 USD. The 0.0049 ETH difference is worth about 15.5 USD, so after gas 1inch is better by roughly 12.3 USD. Both quotes expire within two minutes; I have not built any transaction."))

	// 5. Rate history (parallel).
	add(userSays("Compare the USDC supply APY on Aave and on the Morpho Steakhouse vault over the past week."),
		assistantCalls("",
			call{"toolu_05A", "get_rate_history", `{"protocol":"aave-v3","asset":"USDC","days":7}`},
			call{"toolu_05B", "get_rate_history", `{"protocol":"morpho-steakhouse-usdc","asset":"USDC","days":7}`}),
		toolResults(
			result{id: "toolu_05A", content: mustJSON(map[string]any{"protocol": "aave-v3", "asset": "USDC", "daily": []map[string]any{
				{"day": "2025-06-06", "supply_apy": 4.1, "borrow_apy": 5.7, "utilization": 0.86}, {"day": "2025-06-07", "supply_apy": 4.3, "borrow_apy": 5.8, "utilization": 0.87},
				{"day": "2025-06-08", "supply_apy": 4.2, "borrow_apy": 5.8, "utilization": 0.87}, {"day": "2025-06-09", "supply_apy": 4.5, "borrow_apy": 6.0, "utilization": 0.89},
				{"day": "2025-06-10", "supply_apy": 4.8, "borrow_apy": 6.3, "utilization": 0.90}, {"day": "2025-06-11", "supply_apy": 4.7, "borrow_apy": 6.2, "utilization": 0.90},
				{"day": "2025-06-12", "supply_apy": 4.6, "borrow_apy": 6.1, "utilization": 0.89}}})},
			result{id: "toolu_05B", content: mustJSON(map[string]any{"protocol": "morpho", "vault": "Steakhouse USDC", "daily": []map[string]any{
				{"day": "2025-06-06", "apy": 6.6, "tvl_usd": 412e6}, {"day": "2025-06-07", "apy": 6.8, "tvl_usd": 418e6}, {"day": "2025-06-08", "apy": 6.9, "tvl_usd": 421e6},
				{"day": "2025-06-09", "apy": 7.4, "tvl_usd": 409e6}, {"day": "2025-06-10", "apy": 7.6, "tvl_usd": 402e6}, {"day": "2025-06-11", "apy": 7.3, "tvl_usd": 405e6},
				{"day": "2025-06-12", "apy": 7.2, "tvl_usd": 407e6}}})}),
		assistantSays("Over the week Aave USDC supply paid 4.1–4.8% (utilization 86–90%), while the Morpho Steakhouse USDC vault paid 6.6–7.6% with 402–421M USD of TVL. Morpho averaged about 2.6 points more. The Steakhouse vault is well above your 50M USD liquidity floor."))

	// 6. Health simulation.
	add(userSays("Simulate my Aave health factor if ETH drops 25% from here."),
		assistantCalls("", call{"toolu_06A", "simulate_health", `{"protocol":"aave-v3","asset":"WETH","shock_pct":-25}`}),
		toolResults(result{id: "toolu_06A", content: mustJSON(map[string]any{"protocol": "aave-v3", "shock_pct": -25, "eth_usd_after": 2378.4, "health_factor_before": 1.84, "health_factor_after": 1.41,
			"liquidation_price_eth": 1731.9, "collateral_usd_after": 139548.5, "debt_usd": 53500, "warning": "below owner threshold 1.5"})}),
		assistantSays("A 25% ETH drop (to about 2,378 USD) would take your Aave health factor from 1.84 to 1.41 — under your 1.5 threshold, though still far from liquidation (which stays at ETH ≈ 1,732 USD). Repaying the 12,500 USDT debt would lift the post-shock figure to about 1.74."))

	// 7. Wallet transactions.
	add(userSays("Show me the last 30 transactions from my main wallet so I can check nothing odd happened."),
		assistantCalls("", call{"toolu_07A", "get_transactions", `{"wallet":"` + wallet + `","limit":30}`}),
		toolResults(result{id: "toolu_07A", content: transactions(wallet, 30)}),
		assistantSays("The last 30 transactions are all yours and all succeeded: supplies and repayments on Aave, a Morpho vault deposit of 40,000 USDC, one swap of 4.2 ETH for 13,208 USDC, an LP fee collection on position 48213, an ETH transfer of 1.5 ETH, and one unlimited USDC approval. The unlimited approval is the only thing I'd tidy up: it was granted to the Aave pool, which is expected, but a bounded approval is safer."))

	// 8. Pools.
	add(userSays("Which ETH/USDC Uniswap v3 pools have the best fee APR right now, across chains?"),
		assistantCalls("", call{"toolu_08A", "get_pools", `{"pair":"WETH/USDC"}`}),
		toolResults(result{id: "toolu_08A", content: pools()}),
		assistantSays("The highest fee APRs are on the smaller pools, but within your 50M USD liquidity rule the best is the Arbitrum 0.30% pool at about 7.8% fee APR with 155M USD TVL, then Ethereum 0.05% at 6.4% with 310M USD TVL. The Base and Optimism pools pay less once you require 50M USD of TVL."))

	// 9. LP position.
	add(userSays("My LP position 48213 — is it in range, and what has it earned?"),
		assistantCalls("", call{"toolu_09A", "get_lp_position", `{"token_id":48213}`}),
		toolResults(result{id: "toolu_09A", content: mustJSON(map[string]any{"token_id": 48213, "pool": "WETH/USDC 0.05% ethereum", "range_usd": []float64{2900, 3500}, "current_usd": 3171.2,
			"in_range": true, "liquidity_usd": 38210.6, "uncollected_fees": map[string]string{"WETH": "0.118", "USDC": "402.77"}, "fees_30d_usd": 1411.3, "impermanent_loss_usd": -212.4})}),
		assistantSays("Position 48213 (WETH/USDC 0.05% on mainnet, range 2,900–3,500 USD) is in range with ETH at 3,171 USD. It holds about 38,211 USD of liquidity, has 0.118 WETH + 402.77 USDC of uncollected fees, earned 1,411 USD in fees over 30 days, and carries about 212 USD of impermanent loss. Net it is doing well."))

	// 10. A plan, no tools.
	add(userSays("Draft a rebalancing plan: I want to cut the expensive USDT debt, keep the Aave health factor above 1.6 even after a 25% ETH drop, and move idle stablecoins to where they earn more. Don't execute anything."),
		assistantSays("Proposed plan (nothing executed):\n\n1. Withdraw 12,500 USDC from Aave supply (earning 4.6%).\n2. Swap it for USDT via 1inch (cost ≈ 5 USD of gas, negligible impact) and repay the full 12,500 USDT debt (6.4%). This removes the most expensive debt; the post-shock health factor rises to about 1.74.\n3. Keep the remaining 12,500 USDC on Aave as a buffer against the 41,000 USDC debt.\n4. Leave the 40,000 USDC in the Morpho Steakhouse vault (7.2%).\n5. Optionally collect the LP fees on 48213 (0.118 WETH + 402.77 USDC) and add the USDC to Morpho.\n\nExpected effect: about 800 USD a year less interest, health factor after a 25% shock ≈ 1.74 (above your 1.6), gas ≈ 15 USD in total. Before doing step 2 I would check Morpho's liquidity and utilization, since more of your stablecoins would sit there."))

	// 11. Vault liquidity.
	add(userSays("Good. Before anything, check the Morpho vault's liquidity and utilization."),
		assistantCalls("", call{"toolu_11A", "get_positions", `{"protocol":"morpho","chain":"ethereum"}`}),
		toolResults(result{id: "toolu_11A", content: mustJSON(map[string]any{"protocol": "morpho", "vault": "Steakhouse USDC", "tvl_usd": 407e6, "idle_usd": 61.2e6, "utilization": 0.85,
			"markets": []map[string]any{{"market": "wstETH/USDC 86%", "allocation_pct": 34, "utilization": 0.9}, {"market": "WBTC/USDC 86%", "allocation_pct": 28, "utilization": 0.88},
				{"market": "sUSDe/USDC 91.5%", "allocation_pct": 22, "utilization": 0.83}, {"market": "idle", "allocation_pct": 16, "utilization": 0}},
			"withdrawable_now_usd": 61.2e6})}),
		assistantSays("The Steakhouse USDC vault holds 407M USD with 61.2M USD idle (utilization 85%), so your 40,000 USDC can be withdrawn at any time. It lends to wstETH/USDC (34%), WBTC/USDC (28%) and sUSDe/USDC (22%), with 16% idle. No concern for the plan."))

	// 12. News.
	add(userSays("Any recent news on Morpho or Aave governance that could change the picture?"),
		assistantCalls("", call{"toolu_12A", "search_news", `{"query":"Morpho OR Aave governance"}`}),
		toolResults(result{id: "toolu_12A", content: news()}),
		assistantSays("Relevant news: Morpho DAO approved a new risk curator for the USDC vaults with a 35% per-market cap (positive for the Steakhouse vault's risk); Aave is discussing a higher USDC supply cap and a gentler slope-2, which could lower borrow-rate spikes above 92% utilization. Also worth noting: ETH options skew turned negative ahead of Thursday's CPI print, so a drawdown is being hedged by the market — another reason to cut the USDT debt now."))

	// 13. Rates again (parallel).
	add(userSays("Recompute the plan's expected yield with the current rates."),
		assistantCalls("Reading current rates.",
			call{"toolu_13A", "get_rate_history", `{"protocol":"aave-v3","asset":"USDT","days":1}`},
			call{"toolu_13B", "get_rate_history", `{"protocol":"morpho-steakhouse-usdc","asset":"USDC","days":1}`}),
		toolResults(
			result{id: "toolu_13A", content: mustJSON(map[string]any{"protocol": "aave-v3", "asset": "USDT", "daily": []map[string]any{{"day": "2025-06-12", "supply_apy": 4.9, "borrow_apy": 6.5, "utilization": 0.91}}})},
			result{id: "toolu_13B", content: mustJSON(map[string]any{"protocol": "morpho", "vault": "Steakhouse USDC", "daily": []map[string]any{{"day": "2025-06-12", "apy": 7.1, "tvl_usd": 407e6}}})}),
		assistantSays("With current rates (Aave USDT borrow 6.5%, Aave USDC supply 4.6%, Morpho Steakhouse 7.1%): repaying 12,500 USDT saves 812 USD a year, withdrawing 12,500 USDC from Aave gives up 575 USD, net +237 USD a year, plus the risk benefit (post-shock health factor 1.74 instead of 1.41). Moving the LP fees' 402.77 USDC to Morpho adds about 29 USD a year."))

	// 14. Build transactions: a failed call, then a retry.
	add(userSays("OK, prepare the transactions for steps 1 and 2 but do not send them."),
		assistantCalls("", call{"toolu_14A", "build_tx", `{"action":"aave_withdraw","params":{"asset":"USDC","amount":"12500"}}`}),
		toolResults(result{id: "toolu_14A", content: `{"error":"simulation_failed","message":"withdraw would bring health factor to 1.49 before the repay; build the repay first or bundle both","code":409}`, isError: true}),
		assistantCalls("The withdrawal alone fails the simulation; I'll bundle it with the swap and the repay so the health factor never dips.",
			call{"toolu_14B", "build_tx", `{"action":"bundle","params":{"steps":["aave_withdraw USDC 12500","1inch_swap USDC->USDT 12500","aave_repay USDT 12500"]}}`}),
		toolResults(result{id: "toolu_14B", content: mustJSON(map[string]any{"bundle_id": "bndl_7QX2", "steps": 3, "simulated": true, "health_factor_min": 1.86, "health_factor_after": 1.97,
			"gas_usd": 13.4, "calldata_bytes": 2104, "to": hexOf("multicall", 20), "requires_signature": true})}),
		assistantSays("Bundle bndl_7QX2 is ready for your review, not sent: withdraw 12,500 USDC from Aave, swap to USDT on 1inch, repay 12,500 USDT — atomically through a multicall, so the health factor never goes below 1.86 during execution and ends at 1.97. Simulated gas: 13.40 USD. It needs your signature; say \"send bndl_7QX2\" if you want me to submit it."))

	// 15. The question being asked.
	add(userSays("Before I sign: what is my total exposure to the ETH price right now, in USD, across Aave, Morpho and the LP position?"))

	return session{System: text(sys), Tools: tools, Msgs: m}
}

// userTurns returns the indexes of the session's user turns: each is where
// a client sends a request (after a question, or after tool results).
func userTurns(msgs []wire.Message) []int {
	var out []int
	for i := range msgs {
		if msgs[i].Role == "user" {
			out = append(out, i)
		}
	}
	return out
}
