package vectorindex_test

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/models/glove"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/vectorindex"
)

// TestGloveFarQuestion is the semantic cache's report, with the offline
// GloVe embedder: a tenant of 10k questions made of random DeFi words and
// one question far from all of them, searched while inserts go on; once the
// background graph is installed the far question, asked again (graph alone)
// or paraphrased with one more word, must still be found with the cache's
// call (k=8, minScore 0.92). Before the reachability fix it was not.
func TestGloveFarQuestion(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds 10k texts and builds a graph")
	}
	emb, err := glove.Load(modeltest.Dir(t, modeltest.Glove), glove.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	words := strings.Fields(`eth btc usdc usdt dai weth wbtc uniswap aave compound
		curve lido maker yield apy apr liquidity pool swap bridge stake staking
		lend borrow collateral liquidation leverage perp futures funding rate
		oracle gas fee slippage arbitrage vault token price market volume whale
		airdrop governance dao treasury rollup layer chain wallet defi protocol
		hedge short long spread basis`)
	r := rand.New(rand.NewSource(1))
	const n = 10_000
	texts := make([]string, n)
	for i := range texts {
		k := 3 + r.Intn(5)
		ws := make([]string, k)
		for j := range ws {
			ws[j] = words[r.Intn(len(words))]
		}
		texts[i] = "what is the " + strings.Join(ws, " ")
	}
	far := n / 2
	texts[far] = "how long should i bake my grandmother's apple pie in the oven"
	paraphrase := "how long should i bake my grandmother's apple pie in the oven tonight"

	ctx := context.Background()
	vecs := make([][]float32, 0, n)
	for i := 0; i < n; i += 256 {
		v, err := emb.Embed(ctx, texts[i:min(n, i+256)])
		if err != nil {
			t.Fatal(err)
		}
		vecs = append(vecs, v...)
	}
	pv, err := emb.Embed(ctx, []string{paraphrase})
	if err != nil {
		t.Fatal(err)
	}

	ix, err := vectorindex.New(vectorindex.Config{Dim: emb.Dim(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	for i, v := range vecs {
		if err := ix.Insert("agent", fmt.Sprint(i), v, time.Hour, nil, nil); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if _, err := ix.Search("agent", vecs[r.Intn(i+1)], 8, 0.92); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wait (bounded) for the background build to be installed.
	for i := 0; ix.Stats().GraphNodes == 0; i++ {
		if i == 3000 {
			t.Fatal("no graph after 150 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d entries, %d graph nodes", ix.Len("agent"), ix.Stats().GraphNodes)

	found := func(q []float32) (bool, int) {
		m, err := ix.Search("agent", q, 8, 0.92)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range m {
			if x.ID == fmt.Sprint(far) {
				return true, len(m)
			}
		}
		return false, len(m)
	}
	for _, graphOnly := range []bool{true, false} {
		vectorindex.SetGraphOnly(ix, graphOnly)
		if ok, got := found(vecs[far]); !ok {
			t.Errorf("graphOnly=%v: the far question asked again: not found (%d matches)", graphOnly, got)
		}
		if ok, got := found(pv[0]); !ok {
			t.Errorf("graphOnly=%v: the far question paraphrased: not found (%d matches)", graphOnly, got)
		}
	}
}
