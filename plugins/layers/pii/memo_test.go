//go:build !wasip1

package main

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/memo"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// memoRequest is an agent turn whose long segments (system prompt, an
// earlier turn, a tool call's argument) carry values to mask, a
// placeholder-shaped token the caller wrote and a 64-hex value whose
// context is its JSON member name; last is the new turn.
func memoRequest(last string) wire.Request {
	filler := strings.Repeat("Keep the answer short and cite the file you changed. ", 12)
	key := strings.Repeat("ab12", 16)
	return wire.Request{
		System: []wire.Block{text(filler + "Escalations go to ops@corp.example; the user wrote [EMAIL_1] once.")},
		Messages: []wire.Message{
			userMsg(text(filler + "Call me on " + phone + " or mail " + email + ".")),
			{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "sign",
				Data: []byte(`{"private_key":"` + key + `","note":"` + filler + `"}`)}}},
			userMsg(wire.Block{Type: wire.BlockToolResult, ID: "c1", Text: filler + "signed from 10.20.30.40"}),
			userMsg(text(last)),
		},
	}
}

// memoHits counts the hits of both memo tables.
func memoHits() int { return memoized.Hits + texts.hits }

// TestMemoSameDecisions: a request whose long segments were scanned before
// (the agent's next turn) is masked exactly as when they were new, its
// placeholders numbered around the caller's own, from the memo; another
// tenant's instance state is never used, and a changed segment is scanned
// again.
func TestMemoSameDecisions(t *testing.T) {
	memoized.Reset()
	texts.reset()
	h := plugintest.New(t, `{}`)
	run := func(tenant, id, last string) (wire.LayerResult, int) {
		t.Helper()
		hits := memoHits()
		m := meta(id)
		m.Tenant = tenant
		res := h.OnRequest(wire.LayerRequest{Meta: m, Request: memoRequest(last)})
		return res, memoHits() - hits
	}
	first, hits := run("t1", "req_1", "Now fix the test.")
	if hits != 0 {
		t.Fatalf("first request: %d memo hits", hits)
	}
	if first.Action != wire.ActionContinue || first.Patched != wire.PartSystem|wire.PartMessages {
		t.Fatalf("action %d patched %b", first.Action, first.Patched)
	}
	sys := first.Request.System[0].Text
	if !strings.Contains(sys, "[EMAIL_2]") || strings.Contains(sys, "ops@corp.example") || !strings.Contains(sys, "[EMAIL_1] once") {
		t.Fatalf("system: %q", sys)
	}
	again, hits := run("t1", "req_2", "Now fix the test.")
	if hits != 5 {
		t.Fatalf("the next turn: %d memo hits, want the 5 segments of memoMinLen bytes or more", hits)
	}
	if !reflect.DeepEqual(again.Request, first.Request) || !reflect.DeepEqual(again.Headers, first.Headers) {
		t.Fatalf("from the memo:\n%+v\nwant\n%+v", again.Request, first.Request)
	}
	if _, hits := run("t2", "req_3", "Now fix the test."); hits != 0 {
		t.Fatalf("another tenant: %d memo hits", hits)
	}
	// One segment changed: it is scanned, the other four come from the memo.
	req := memoRequest("Now fix the test.")
	req.Messages[0].Content[0].Text += " Or bob@example.org."
	hits = memoHits()
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_4"), Request: req})
	if memoHits()-hits != 4 || !strings.Contains(res.Request.Messages[0].Content[0].Text, "Or [EMAIL_4].") {
		t.Fatalf("%d hits; %q", memoHits()-hits, res.Request.Messages[0].Content[0].Text)
	}
	// A value that blocks in the newest turn still blocks from the memo.
	mnemonic := "legal winner thank year wave sausage worth useful legal winner thank yellow"
	long := strings.Repeat("Keep the answer short and cite the file you changed. ", 12) + mnemonic
	for _, id := range []string{"req_5", "req_6"} {
		if res, _ := run("t1", id, long); res.Action != wire.ActionReject || res.Error == nil || res.Error.Status != 400 {
			t.Fatalf("%s: action %d error %+v", id, res.Action, res.Error)
		}
	}
}

// The text memo answers only for the very text it scanned, of the same
// member and tenant: an entry under the same hash that holds another text,
// member or tenant is a miss.
func TestTextMemoExact(t *testing.T) {
	texts.reset()
	a := strings.Repeat("the health factor is 1.84 and the key is ", 4)
	b := strings.Replace(a, "1.84", "1.85", 1) // same length, one byte apart
	texts.put(42, "t1", "", a, []span{{3, 7, kEmail}}, []string{a[10:14]})
	for _, c := range []struct {
		tenant, member, text string
		want                 bool
	}{{"t1", "", a, true}, {"t1", "", b, false}, {"t1", "note", a, false}, {"t2", "", a, false}, {"t1", "", a[:len(a)-1], false}} {
		e, ok := texts.get(42, c.tenant, c.member, c.text)
		if ok != c.want {
			t.Fatalf("get(%q, %q, %q) = %v, want %v", c.tenant, c.member, c.text[30:40], ok, c.want)
		}
		if ok {
			var k masker
			texts.use(&k, e, c.text)
			if !reflect.DeepEqual(k.spans, []span{{3, 7, kEmail}}) || !reflect.DeepEqual(k.det.taken, []string{a[10:14]}) {
				t.Fatalf("use: %v %q", k.spans, k.det.taken)
			}
		}
	}
	if _, ok := texts.get(43, "t1", "", a); ok {
		t.Fatal("found under another hash")
	}
	// Another text under the same hash is kept beside it.
	texts.put(42, "t1", "", b, nil, nil)
	if _, ok := texts.get(42, "t1", "", a); !ok {
		t.Fatal("a lost to b")
	}
	if e, ok := texts.get(42, "t1", "", b); !ok || e.ns != 0 {
		t.Fatalf("b: %v %+v", ok, e)
	}
}

// The text memo's copies, spans and entries stay within their bounds: past
// one it starts over.
func TestTextMemoBound(t *testing.T) {
	texts.reset()
	text := strings.Repeat("x", 1000)
	for i := range 3 * textMaxBytes / len(text) {
		texts.put(uint64(i), "t1", "", text, nil, nil)
		if len(texts.text) > textMaxBytes || len(texts.entries) > textMaxEntries {
			t.Fatalf("after %d: %d bytes, %d entries", i, len(texts.text), len(texts.entries))
		}
	}
	for i := range 3 * textMaxEntries {
		texts.put(uint64(i%7), "t1", "", "short text", []span{{0, 1, kEmail}}, nil)
		if len(texts.entries) > textMaxEntries || len(texts.spans) > textMaxSpans {
			t.Fatalf("after %d: %d entries, %d spans", i, len(texts.entries), len(texts.spans))
		}
	}
}

// memo.EqualString (what the memo compares with) agrees with == on texts of every length around its eight- and
// thirty-two-byte steps; hashText gives a copy the same hash and another
// member or tenant another.
func TestSameTextHash(t *testing.T) {
	base := strings.Repeat("0123456789abcdef", 8)
	for n := range len(base) {
		a := base[:n]
		if !memo.EqualString(a, strings.Clone(a)) {
			t.Fatalf("len %d: a copy differs", n)
		}
		if n >= memoMinLen && hashText(1, "", a) != hashText(1, "", strings.Clone(a)) {
			t.Fatalf("len %d: a copy hashes differently", n)
		}
		for i := range n {
			b := []byte(a)
			b[i] ^= 1
			if memo.EqualString(a, string(b)) {
				t.Fatalf("len %d: byte %d changed, still the same", n, i)
			}
		}
	}
	if hashText(1, "a", base) == hashText(1, "", base) {
		t.Fatal("the member is not hashed")
	}
	if hashText(tenantSeed("t1"), "", base) == hashText(tenantSeed("t2"), "", base) {
		t.Fatal("tenants share hashes")
	}
}

// Texts that share a hash are all remembered, up to textProbes of them;
// each is found with its own result (a hash at the top of the range too:
// the probe wraps around the index).
func TestTextMemoProbes(t *testing.T) {
	texts.reset()
	text := func(i int) string { return strings.Repeat("a", 100) + strconv.Itoa(i) + strings.Repeat("b", 100) }
	const h = ^uint64(0) - 2
	for i := range textProbes + 1 {
		texts.put(h, "t1", "", text(i), []span{{i, i + 1, kEmail}}, nil)
	}
	for i := range textProbes + 1 {
		e, ok := texts.get(h, "t1", "", text(i))
		if ok != (i < textProbes) {
			t.Fatalf("text %d: found %v", i, ok)
		}
		if ok && texts.spans[e.s0].start != i {
			t.Fatalf("text %d: another's result %v", i, texts.spans[e.s0])
		}
	}
}

// A segment longer than textKeyMax is remembered under the host's SHA-256.
func TestMemoLongSegment(t *testing.T) {
	memoized.Reset()
	texts.reset()
	h := plugintest.New(t, `{}`)
	long := strings.Repeat("Keep the answer short and cite the file you changed. ", textKeyMax/50) + " Mail " + email + "."
	for i, want := range []int{0, 1} {
		hits := memoized.Hits
		m := meta("req_long" + string(rune('0'+i)))
		res := h.OnRequest(wire.LayerRequest{Meta: m, Request: wire.Request{Messages: []wire.Message{userMsg(text(long))}}})
		if memoized.Hits-hits != want || !strings.HasSuffix(res.Request.Messages[0].Content[0].Text, " Mail [EMAIL_1].") {
			t.Fatalf("request %d: %d hits, %q", i, memoized.Hits-hits, res.Request.Messages[0].Content[0].Text[len(long)-30:])
		}
	}
}

// A short text with no byte scan stops at is not scanned: scan finds
// nothing in any such text (random texts over an alphabet of letters,
// spaces, punctuation and the anchor bytes).
func TestNoAnchorFindsNothing(t *testing.T) {
	initWordlist()
	if err := configure([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	alphabet := "abcdefghijklmnopqrstuvwxyzABCDEFXYZ .,;-_+()'\"\n0123456789:@[]"
	rng := rand.New(rand.NewPCG(1, 2))
	var d detector
	d.on = work.det.on
	skipped := 0
	for range 200000 {
		b := make([]byte, 1+rng.IntN(mnemonicMinLen-1))
		for i := range b {
			// Anchors rarely, so most texts have none.
			if rng.IntN(20) == 0 {
				b[i] = alphabet[len(alphabet)-14+rng.IntN(14)]
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet)-14)]
			}
		}
		s := string(b)
		if !noAnchor(s) {
			continue
		}
		skipped++
		d.taken = d.taken[:0]
		if out := d.scan(s, nil); len(out) > 0 || len(d.taken) > 0 {
			t.Fatalf("%q: no anchor, yet scan found %v %q", s, out, d.taken)
		}
	}
	if skipped < 10000 {
		t.Fatalf("only %d texts without an anchor", skipped)
	}
	// Twelve wordlist words take mnemonicMinLen bytes at least.
	m := "act add age aim air all any arm art ask bag bar"
	if len(m) != mnemonicMinLen {
		t.Fatalf("len %d", len(m))
	}
	d.taken = d.taken[:0]
	if out := d.scan(m, nil); len(out) != 1 || out[0].ent != kMnemonic {
		t.Fatalf("shortest mnemonic: %v", out)
	}
}

// Requests drawn from a small pool of segments (so most repeat, in new
// combinations and positions, and several tenants send the same ones) are
// masked exactly as with an empty memo: the memo changes only the cost.
func TestMemoDifferential(t *testing.T) {
	h := plugintest.New(t, `{}`)
	pieces := []string{
		"The health factor is 1.84 and the last rebalance was on 2024-03-18. ",
		"Mail " + email + " or call " + phone + " before noon. ",
		"Card 4111 1111 1111 1111, host 10.20.30.40, see [EMAIL_1] above. ",
		"Signed with private key 0x" + strings.Repeat("ab12", 16) + " yesterday. ",
		"legal winner thank year wave sausage worth useful legal winner thank yellow ",
		"tx 0x" + strings.Repeat("cd34", 16) + " confirmed in block 19000000. ",
		"Nothing to see here, just prose about gas costs and supply APYs. ",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	seg := func() string {
		var sb strings.Builder
		for range 1 + rng.IntN(4) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	texts.reset()
	hits0 := texts.hits
	pool := make([]string, 24)
	for i := range pool {
		pool[i] = seg()
	}
	for i := range 300 {
		var req wire.Request
		req.System = []wire.Block{text(pool[rng.IntN(len(pool))])}
		for range 1 + rng.IntN(4) {
			req.Messages = append(req.Messages, userMsg(text(pool[rng.IntN(len(pool))])),
				wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c", Name: "f",
					Data: []byte(`{"note":"` + pool[rng.IntN(len(pool))] + `","privateKey":"` + strings.Repeat("ef56", 16) + `"}`)}}})
		}
		req.Messages = append(req.Messages, userMsg(text(pool[rng.IntN(len(pool))])))
		m := meta("req_d" + strconv.Itoa(i))
		m.Tenant = "t" + strconv.Itoa(rng.IntN(3))
		warm := h.OnRequest(wire.LayerRequest{Meta: m, Request: req})
		// The same request with an empty memo, then the memo as it was.
		saved := textMemo{slots: slices.Clone(texts.slots), entries: slices.Clone(texts.entries),
			text: slices.Clone(texts.text), spans: slices.Clone(texts.spans), hits: texts.hits}
		texts.reset()
		cold := h.OnRequest(wire.LayerRequest{Meta: m, Request: req})
		texts = saved
		warm.Annotations, cold.Annotations = nil, nil // a fresh sealing key each time
		if !reflect.DeepEqual(warm, cold) {
			t.Fatalf("request %d: from the memo\n%+v\nscanned\n%+v", i, warm, cold)
		}
	}
	if texts.hits-hits0 < 1000 {
		t.Fatalf("%d memo hits", texts.hits-hits0)
	}
}

// The tenant and its hash seed are kept from call to call while the tenant
// stays the same (hashing it every call costs inside wasm); the kept tenant
// is a copy, not a view of a call's input, which the next call writes over
// (natively, plugin.Call scribbles over it), and a new tenant gets its own
// seed, so its texts are looked up under its own hashes.
func TestTenantKeptAcrossCalls(t *testing.T) {
	texts.reset()
	h := plugintest.New(t, `{}`)
	for i, tenant := range []string{"acme", "acme", "bob", "acme", ""} {
		m := meta("req_" + strconv.Itoa(i))
		m.Tenant = tenant
		h.OnRequest(wire.LayerRequest{Meta: m, Request: memoRequest("Now fix the test.")})
		if work.tenant != tenant || work.seed != tenantSeed(tenant) {
			t.Fatalf("call %d (tenant %q): kept tenant %q, seed %x, want %x", i, tenant, work.tenant, work.seed, tenantSeed(tenant))
		}
	}
}
