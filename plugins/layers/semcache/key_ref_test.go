//go:build !wasip1

package main

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// contextHashRef is contextHash as it was before history took the turns
// as one span of the input (5cd704d): every field written one by one. The
// span must tell requests apart exactly as it did
// (TestContextHashMatchesReference).
func contextHashRef(r *wire.Request, matchModel bool) string {
	h := &hasher{}
	if matchModel {
		h.str(tModel, r.Model)
	}
	h.blocks(tSystem, r.System)
	n := len(r.Messages)
	if lastTurn(r) != nil {
		n--
	}
	for i := 0; i < n; i++ {
		m := &r.Messages[i]
		h.str(tRole, m.Role)
		h.str(tName, m.Name)
		h.raw(tExtra, m.Extra)
		h.blocks(tContent, m.Content)
	}
	if m := lastTurn(r); m != nil {
		h.str(tLast, m.Name)
		h.raw(tExtra, m.Extra)
		for _, bl := range m.Content {
			if bl.Type != wire.BlockText {
				h.block(&bl)
				continue
			}
			_, injected := splitReminders(bl.Text)
			for _, s := range injected {
				h.str(tReminder, s)
			}
			h.raw(tExtra, bl.Extra)
		}
	}
	for i := range r.Tools {
		t := &r.Tools[i]
		h.str(tTool, t.Name)
		h.str(tDesc, t.Description)
		h.raw(tSchema, t.Schema)
		h.raw(tExtra, t.Extra)
	}
	h.raw(tToolChoice, r.ToolChoice)
	h.num(tParams, uint64(r.Params.Set))
	h.extra(r.Extra)
	sum := plugin.SHA256(h.b)
	return string(sum[:16])
}

// randomRequest draws a request from small pools of values, so that many
// pairs share their history and differ in one field or in cache_control.
func randomRequest(rng *rand.Rand) *wire.Request {
	pick := func(ss ...string) string { return ss[rng.IntN(len(ss))] }
	raw := func(ss ...string) []byte {
		if s := pick(ss...); s != "" {
			return []byte(s)
		}
		return nil
	}
	cc := func() []byte { return raw("", "", `{"type":"ephemeral"}`, `{"type":"ephemeral","ttl":"1h"}`) }
	block := func() wire.Block {
		b := wire.Block{Type: wire.BlockText, Text: pick("", "a", "b", "a long text "+string(make([]byte, 130))), CacheControl: cc(),
			Extra: raw("", "", "", `{"citations":[]}`)}
		switch rng.IntN(4) {
		case 0:
			b.Type, b.ID, b.Name, b.Data = wire.BlockToolUse, pick("c1", "c2"), pick("", "Read"), raw("", `{"x":1}`)
		case 1:
			b.Type, b.ID, b.IsError = wire.BlockToolResult, pick("c1", ""), rng.IntN(2) == 0
		}
		return b
	}
	blocks := func(max int) []wire.Block {
		var bs []wire.Block
		for range rng.IntN(max + 1) {
			bs = append(bs, block())
		}
		return bs
	}
	r := &wire.Request{Model: pick("", "m1", "m2"), System: blocks(2)}
	for range rng.IntN(3) {
		r.Messages = append(r.Messages, wire.Message{Role: pick("user", "assistant", "system"), Name: pick("", "", "dev"),
			Content: blocks(2), Extra: raw("", "", "", `{"refusal":null}`)})
	}
	r.Messages = append(r.Messages, wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "q", CacheControl: cc()}}})
	for range rng.IntN(4) {
		r.Tools = append(r.Tools, wire.Tool{Name: pick("Read", "Read", "Edit", ""), Description: pick("", "reads"),
			Schema: raw("", `{}`, `{"type":"object"}`), CacheControl: cc(), Extra: raw("", "", `{"defer_loading":true}`)})
	}
	return r
}

// redrawCacheControl is a copy of r with every cache_control drawn anew:
// the same context.
func redrawCacheControl(r *wire.Request, rng *rand.Rand) *wire.Request {
	cc := func() []byte {
		if rng.IntN(2) == 0 {
			return nil
		}
		return []byte(`{"type":"ephemeral"}`)
	}
	blocks := func(bs []wire.Block) []wire.Block {
		bs = append([]wire.Block(nil), bs...)
		for i := range bs {
			bs[i].CacheControl = cc()
		}
		return bs
	}
	c := *r
	c.System = blocks(r.System)
	c.Messages = append([]wire.Message(nil), r.Messages...)
	for i := range c.Messages {
		c.Messages[i].Content = blocks(c.Messages[i].Content)
	}
	c.Tools = append([]wire.Tool(nil), r.Tools...)
	for i := range c.Tools {
		c.Tools[i].CacheControl = cc()
	}
	return &c
}

// TestContextHashMatchesReference: on drawn requests, two requests share a
// context hash exactly when they shared it before (with and without the
// model), and the hash of a request decoded from an input (history's span)
// is the hash of the same request built in Go (historyEncoded).
func TestContextHashMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 14))
	reqs := []*wire.Request{fixtures.AgentRequest()}
	for range 300 {
		r := randomRequest(rng)
		reqs = append(reqs, r, redrawCacheControl(r, rng))
	}
	for _, matchModel := range []bool{true, false} {
		refOf, newOf := map[string]string{}, map[string]string{}
		for i, r := range reqs {
			ref, got := contextHashRef(r, matchModel), contextHash(r, matchModel)
			if prev, ok := refOf[ref]; ok && prev != got {
				t.Fatalf("request %d (match_model %v): the reference hash is another request's, the new one differs", i, matchModel)
			}
			if prev, ok := newOf[got]; ok && prev != ref {
				t.Fatalf("request %d (match_model %v): the new hash is another request's, the reference differs: %+v", i, matchModel, r)
			}
			refOf[ref], newOf[got] = got, ref

			// The span of the input as the SDK decodes it.
			var e wire.Encoder
			wire.EncodeLayerRequest(&e, &wire.Meta{RequestID: "r", Tenant: "t", Annotations: []wire.KV{{Key: "k", Value: "v"}}}, r, wire.PartAll)
			var d wire.LayerRequest
			if err := d.Decode(e.Bytes()); err != nil {
				t.Fatal(err)
			}
			var span, built hasher
			ok := span.history(&d.Request, matchModel, e.Bytes(), -1)
			built.historyEncoded(r, matchModel)
			if r.Model != "" && !ok {
				t.Fatalf("request %d: history did not take the decoded input's span", i)
			}
			if ok && !bytes.Equal(span.b, built.b) {
				t.Fatalf("request %d (match_model %v): the input's span\n%q\nis not the built request's\n%q", i, matchModel, span.b, built.b)
			}
			if bytes.HasPrefix(built.b, tWalk.bytes()) {
				t.Fatalf("request %d: historyEncoded fell back to the field walk", i)
			}
			if len(r.Tools) > 0 && r.Tools[0].Name != "" && r.Tools[len(r.Tools)-1].Name != "" {
				var span, built hasher
				if !span.tools(d.Request.Tools, e.Bytes()) {
					t.Fatalf("request %d: tools did not take the decoded input's span", i)
				}
				built.toolsEncoded(r.Tools)
				if !bytes.Equal(span.b, built.b) {
					t.Fatalf("request %d: the tools' span\n%q\nis not the built tools'\n%q", i, span.b, built.b)
				}
			}
		}
		if len(refOf) < 100 || len(refOf) > len(reqs)-100 {
			t.Errorf("match_model %v: %d distinct contexts in %d requests: the draw tests little", matchModel, len(refOf), len(reqs))
		}
	}
}

// TestContextHashOfTheInput: the request phase, given requests as the
// host encodes them (the spans of its input), names the context the hash
// of the same requests built in Go names.
func TestContextHashOfTheInput(t *testing.T) {
	plugintest.New(t, `{}`)
	rng := rand.New(rand.NewPCG(9, 18))
	meta := wire.Meta{RequestID: "r", Tenant: "t", Dialect: wire.DialectAnthropic}
	for i := range 300 {
		r := randomRequest(rng)
		var res wire.LayerResult
		if err := res.Decode(callRequest(t, r, meta)); err != nil {
			t.Fatal(err)
		}
		var ann string
		for _, kv := range res.Annotations {
			if kv.Key == AnnotationMiss {
				ann = kv.Value
			}
		}
		m, ok := decodeMiss(ann)
		if !ok {
			t.Fatalf("request %d: no miss annotation: %+v", i, res)
		}
		if want := contextHash(r, true); m.ctx != want {
			t.Fatalf("request %d: the input's context %s, built in Go %s: %+v", i, m.ctx, want, r)
		}
	}
}

func (t tag) bytes() []byte {
	var b [24]byte
	for i, w := range t.w {
		for j := range 8 {
			b[8*i+j] = byte(w >> (8 * j))
		}
	}
	return b[:t.n]
}
