//go:build !wasip1

package main

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestHistorySkipSameDecisions: conversations that grow a turn at a time
// (an agent's requests), some of whose turns and system prompts hold values
// to mask or a placeholder-shaped token, for three tenants in turn: every request is
// masked, blocked or let through exactly as with nothing remembered — the
// turns a remembered clean run covers are skipped, the others scanned —
// and the runs are used.
func TestHistorySkipSameDecisions(t *testing.T) {
	h := plugintest.New(t, `{}`)
	pieces := []string{
		"The health factor is 1.84 and the last rebalance was on 2024-03-18. ",
		"Nothing to see here, just prose about gas costs and supply APYs. ",
		"Consider the current supply APYs on both venues before you move. ",
		"Mail " + email + " or call " + phone + " before noon. ",
		"see [EMAIL_1] above. ",
		"Signed with private key 0x" + strings.Repeat("ab12", 16) + " yesterday. ",
	}
	rng := rand.New(rand.NewPCG(5, 6))
	seg := func() string {
		var sb strings.Builder
		for range 1 + rng.IntN(3) {
			// Mostly clean prose, so that runs get remembered.
			if rng.IntN(6) == 0 {
				sb.WriteString(pieces[3+rng.IntN(3)])
			} else {
				sb.WriteString(pieces[rng.IntN(3)])
			}
		}
		return sb.String()
	}
	type conv struct {
		tenant string
		system []wire.Block
		msgs   []wire.Message
	}
	prompt := strings.Repeat("You are a careful DeFi assistant. ", 20)
	systems := [][]wire.Block{
		{text(prompt)},
		{text(prompt + "Escalations go to " + email + ".")},
		{text(prompt + "The user wrote [EMAIL_1] once.")},
		{text(prompt), text("Answer in English.")},
		nil,
	}
	convs := make([]*conv, 5)
	for i := range convs {
		convs[i] = &conv{tenant: "t" + strconv.Itoa(i%3)}
	}
	hits0 := historyHits
	for i := range 400 {
		c := convs[rng.IntN(len(convs))]
		if rng.IntN(8) == 0 {
			c.msgs = nil // a new conversation
		}
		if len(c.msgs) == 0 || rng.IntN(10) == 0 {
			c.system = systems[rng.IntN(len(systems))] // mostly kept, sometimes changed
		}
		if len(c.msgs) > 0 {
			c.msgs = append(c.msgs, wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c", Name: "f",
				Data: []byte(`{"note":"` + seg() + `"}`)}}})
			c.msgs = append(c.msgs, userMsg(wire.Block{Type: wire.BlockToolResult, ID: "c", Text: seg()}))
		}
		c.msgs = append(c.msgs, userMsg(text(seg()+" turn "+strconv.Itoa(i))))
		req := wire.Request{System: c.system, Messages: append([]wire.Message(nil), c.msgs...)}
		m := meta("req_h" + strconv.Itoa(i))
		m.Tenant = c.tenant
		warm := h.OnRequest(wire.LayerRequest{Meta: m, Request: req})
		// The same request with nothing remembered, then the runs as they were.
		saved, savedNext := history, historyNext
		for j := range saved {
			saved[j].b = append([]byte(nil), saved[j].b...)
		}
		forgetHistory()
		cold := h.OnRequest(wire.LayerRequest{Meta: m, Request: req})
		history, historyNext = saved, savedNext
		warm.Annotations, cold.Annotations = nil, nil // a fresh sealing key each time
		if !reflect.DeepEqual(warm, cold) {
			t.Fatalf("request %d: with the runs\n%+v\nwithout\n%+v", i, warm, cold)
		}
	}
	if historyHits-hits0 < 50 {
		t.Fatalf("%d requests skipped turns", historyHits-hits0)
	}
}

// A remembered run is used only by its tenant and only when the turns are
// the same bytes: a changed earlier turn of the same length (now holding
// an address) is scanned and masked.
func TestHistorySkipExact(t *testing.T) {
	h := plugintest.New(t, `{}`)
	forgetHistory()
	clean := "Consider gas costs and the current supply APYs on both venues, please. "
	turns := func(first string) []wire.Message {
		return []wire.Message{userMsg(text(first)), {Role: "assistant", Content: []wire.Block{text(clean)}}, userMsg(text("Go on."))}
	}
	run := func(tenant string, msgs []wire.Message) wire.LayerResult {
		m := meta("req_x")
		m.Tenant = tenant
		return h.OnRequest(wire.LayerRequest{Meta: m, Request: wire.Request{Messages: msgs}})
	}
	run("a", turns(clean))
	hits := historyHits
	run("a", turns(clean))
	if historyHits != hits+1 {
		t.Fatal("the same turns again did not skip the remembered run")
	}
	run("b", turns(clean))
	if historyHits != hits+1 {
		t.Fatal("another tenant used tenant a's run")
	}
	// The same length: only the bytes tell the turns apart.
	filler := "Consider gas costs and write to " + strings.Repeat("x", len(email)) + " before noon, please."
	run("a", turns(filler))
	res := run("a", turns(strings.Replace(filler, strings.Repeat("x", len(email)), email, 1)))
	if res.Patched == 0 || !strings.Contains(res.Request.Messages[0].Content[0].Text, "[EMAIL_1]") {
		t.Fatalf("a changed earlier turn was not masked: %+v", res)
	}
}
