//go:build !wasip1

package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

const (
	email = "alice.smith@example.com"
	phone = "+1 415 555 2671"
)

func text(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

func userMsg(blocks ...wire.Block) wire.Message { return wire.Message{Role: "user", Content: blocks} }

func meta(id string) wire.Meta {
	return wire.Meta{RequestID: id, Tenant: "t1", Dialect: wire.DialectOpenAI}
}

// kvHas reports whether any kv value of the harness contains s.
func kvHas(h *plugintest.Host, key string) bool {
	_, ok := h.KVGet(key)
	return ok
}

// respond runs the response phase with the request's annotations.
func respond(h *plugintest.Host, id string, res wire.LayerResult, content ...wire.Block) wire.LayerResponseResult {
	m := meta(id)
	m.Annotations = res.Annotations
	return h.OnResponse(wire.LayerResponse{Meta: m, Response: wire.Response{ID: "r", Content: content}})
}

func TestMaskAndRestore(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{
		System: []wire.Block{text("Operator contact: ops@corp.example.")},
		Messages: []wire.Message{
			userMsg(text("Mail " + email + " or call " + phone + ". Again: " + email)),
			{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "lookup",
				Data: []byte(`{"who":"` + email + `","note":"say \"hi\" to ` + email + `\n"}`)}}},
			userMsg(wire.Block{Type: wire.BlockToolResult, ID: "c1", Text: "found 192.168.0.7",
				Data: []byte(`[{"type":"text","text":"ssn 123-45-6789"}]`)}),
		},
	}
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_1"), Request: req})
	if res.Action != wire.ActionContinue || res.Patched != wire.PartSystem|wire.PartMessages {
		t.Fatalf("action %d patched %b", res.Action, res.Patched)
	}
	got := res.Request
	if s := got.System[0].Text; s != "Operator contact: [EMAIL_1]." {
		t.Errorf("system = %q", s)
	}
	if s := got.Messages[0].Content[0].Text; s != "Mail [EMAIL_2] or call [PHONE_1]. Again: [EMAIL_2]" {
		t.Errorf("user text = %q", s)
	}
	if s := string(got.Messages[1].Content[0].Data); s != `{"who":"[EMAIL_2]","note":"say \"hi\" to [EMAIL_2]\n"}` {
		t.Errorf("tool_use input = %s", s)
	}
	tr := got.Messages[2].Content[0]
	if tr.Text != "found [IPV4_1]" || string(tr.Data) != `[{"type":"text","text":"ssn [SSN_1]"}]` {
		t.Errorf("tool_result = %q %s", tr.Text, tr.Data)
	}
	var hdr string
	for _, kv := range res.Headers {
		if kv.Key == "X-Bardo-PII" {
			hdr = kv.Value
		}
	}
	if hdr != "8 masked, 0 redacted" {
		t.Errorf("X-Bardo-PII = %q", hdr)
	}
	if h.Metrics["pii_masked_total"] != 8 {
		t.Errorf("metrics %v", h.Metrics)
	}
	// The kv entry is sealed: no original in it.
	sealed, ok := h.KVGet(kvKey("req_1"))
	if !ok {
		t.Fatal("no mapping stored")
	}
	for _, v := range []string{email, phone, "192.168.0.7", "EMAIL"} {
		if bytes.Contains(sealed, []byte(v)) {
			t.Errorf("kv entry holds %q in clear", v)
		}
	}
	if keyOf(&wire.Meta{Annotations: res.Annotations}) == "" {
		t.Fatal("no key annotation")
	}

	rr := respond(h, "req_1", res,
		text("I wrote to [EMAIL_2] ([PHONE_1]); [EMAIL_9] and [UNKNOWN_1] stay."),
		wire.Block{Type: wire.BlockToolUse, ID: "t", Name: "send", Data: []byte(`{"to":"[EMAIL_2]","ip":"[IPV4_1]"}`)},
		wire.Block{Type: wire.BlockThinking, Text: "thinking about [EMAIL_2]"})
	if !rr.Replaced {
		t.Fatal("response not replaced")
	}
	if s := rr.Response.Content[0].Text; s != "I wrote to "+email+" ("+phone+"); [EMAIL_9] and [UNKNOWN_1] stay." {
		t.Errorf("restored text = %q", s)
	}
	if s := string(rr.Response.Content[1].Data); s != `{"to":"`+email+`","ip":"192.168.0.7"}` {
		t.Errorf("restored tool input = %s", s)
	}
	if s := rr.Response.Content[2].Text; s != "thinking about [EMAIL_2]" {
		t.Errorf("thinking changed: %q", s)
	}
	if h.Metrics["pii_restored_total"] != 4 {
		t.Errorf("restored metric %v", h.Metrics["pii_restored_total"])
	}
	if kvHas(h, kvKey("req_1")) {
		t.Error("mapping not deleted after the response phase")
	}
	for _, l := range h.Logs {
		if strings.Contains(l, email) {
			t.Errorf("log holds an original: %q", l)
		}
	}
}

func TestNoPII(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_2"), Request: wire.Request{
		Messages: []wire.Message{userMsg(text("What is 2+2? Version 1.2.3, date 2024-01-15, price $12.50, [EMAIL_1]."))}}})
	if res.Patched != 0 || len(res.Headers) != 0 || len(res.Annotations) != 0 {
		t.Fatalf("touched a request without PII: %+v", res)
	}
	// Without the annotation the response phase does nothing (no kv read).
	rr := respond(h, "req_2", res, text("[EMAIL_1]"))
	if rr.Replaced {
		t.Fatal("restored without a mapping")
	}
}

func TestTakenPlaceholdersAreSkipped(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_3"), Request: wire.Request{
		Messages: []wire.Message{userMsg(text("Template [EMAIL_1] stays; mine is " + email))}}})
	if s := res.Request.Messages[0].Content[0].Text; s != "Template [EMAIL_1] stays; mine is [EMAIL_2]" {
		t.Fatalf("masked = %q", s)
	}
	rr := respond(h, "req_3", res, text("[EMAIL_1] vs [EMAIL_2]"))
	if s := rr.Response.Content[0].Text; s != "[EMAIL_1] vs "+email {
		t.Fatalf("restored = %q", s)
	}
}

func TestBlockSecrets(t *testing.T) {
	h := plugintest.New(t, `{}`)
	for i, msg := range []string{
		"my key is 0x" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318" + " ok",
		"restore from " + mnemonic,
	} {
		res := h.OnRequest(wire.LayerRequest{Meta: meta("req_b"), Request: wire.Request{
			Messages: []wire.Message{userMsg(text("mail " + email + "; " + msg))}}})
		if res.Action != wire.ActionReject || res.Error == nil || res.Error.Status != 400 || res.Error.Kind != wire.ErrInvalidRequest {
			t.Fatalf("%d: not rejected: %+v", i, res)
		}
		m := res.Error.Message
		if !strings.Contains(m, []string{"Ethereum private key", "BIP-39 mnemonic"}[i]) {
			t.Errorf("message does not name the kind: %q", m)
		}
		if strings.Contains(m, "4c0883a6") || strings.Contains(m, "abandon") || strings.Contains(m, email) {
			t.Errorf("message leaks a value: %q", m)
		}
	}
	if kvHas(h, kvKey("req_b")) {
		t.Error("a blocked request stored a mapping")
	}
	if h.Metrics["pii_blocked_total"] != 2 {
		t.Errorf("metrics %v", h.Metrics)
	}
}

func TestConfigActionsAndPatterns(t *testing.T) {
	h := plugintest.New(t, `{
		"mask_system": false,
		"mapping_ttl": "90s",
		"actions": {"email": "redact", "eth_private_key": "mask", "ipv4": "off"},
		"patterns": [
			{"name": "employee_id", "regex": "EMP-[0-9]{6}"},
			{"name": "quoted", "regex": "Q\"[a-z]+\\\\[a-z]+\"", "action": "mask"},
			{"name": "project", "regex": "PRJ-[A-Z]{4}", "action": "block"}
		]}`)
	if cfg.mappingTTL.Seconds() != 90 {
		t.Errorf("ttl = %s", cfg.mappingTTL)
	}
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_4"), Request: wire.Request{
		System: []wire.Block{text("sys " + email)},
		Messages: []wire.Message{userMsg(text(
			"from " + email + " at 10.1.2.3, employee EMP-123456, private key " + privKey + ` and Q"ab\cd"`))}}})
	if res.Patched != wire.PartMessages {
		t.Fatalf("patched %b (system must stay with mask_system=false)", res.Patched)
	}
	want := `from [REDACTED_EMAIL] at 10.1.2.3, employee [EMPLOYEE_ID_1], private key [PRIVATE_KEY_1] and [QUOTED_1]`
	if s := res.Request.Messages[0].Content[0].Text; s != want {
		t.Fatalf("masked = %q", s)
	}
	if res.Headers[0].Value != "3 masked, 1 redacted" {
		t.Errorf("header %q", res.Headers[0].Value)
	}
	// A value with quotes and a backslash, restored into tool-call JSON.
	rr := respond(h, "req_4", res,
		text("[EMPLOYEE_ID_1] [REDACTED_EMAIL]"),
		wire.Block{Type: wire.BlockToolUse, Data: []byte(`{"q":"[QUOTED_1]","k":"[PRIVATE_KEY_1]"}`)})
	if s := rr.Response.Content[0].Text; s != "EMP-123456 [REDACTED_EMAIL]" {
		t.Errorf("text = %q", s)
	}
	var args map[string]string
	if err := json.Unmarshal(rr.Response.Content[1].Data, &args); err != nil || args["q"] != `Q"ab\cd"` || args["k"] != privKey {
		t.Errorf("tool input %s (%v)", rr.Response.Content[1].Data, err)
	}
	res = h.OnRequest(wire.LayerRequest{Meta: meta("req_5"), Request: wire.Request{
		Messages: []wire.Message{userMsg(text("about PRJ-ABCD"))}}})
	if res.Action != wire.ActionReject || !strings.Contains(res.Error.Message, `pattern "project"`) {
		t.Fatalf("custom block: %+v", res)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []string{
		`{"mask_sytem": false}`,
		`{"actions": {"email": "hide"}}`,
		`{"actions": {"passport": "mask"}}`,
		`{"mapping_ttl": 0}`,
		`{"mapping_ttl": "forever"}`,
		`{"patterns": [{"name": "Bad Name", "regex": "x"}]}`,
		`{"patterns": [{"name": "email", "regex": "x"}]}`,
		`{"patterns": [{"name": "x", "regex": "("}]}`,
		`{"patterns": [{"name": "x", "regex": "a(?=b)"}]}`,
		`{"patterns": [{"name": "x", "regex": "y", "action": "nope"}]}`,
	} {
		if err := configure([]byte(c)); err == nil {
			t.Errorf("config %s accepted", c)
		}
	}
	if err := configure([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
}

// streamText feeds deltas through the stream phase one batch each, like the
// host does per upstream event, and returns what the caller would read.
func streamRun(t *testing.T, h *plugintest.Host, m wire.Meta, batches [][]wire.Event) ([]wire.Event, [][]wire.Event) {
	t.Helper()
	var state []byte
	var all []wire.Event
	var per [][]wire.Event
	for i, b := range batches {
		r := h.OnStream(wire.LayerStream{Meta: m, Events: b, State: state, Final: i == len(batches)-1})
		state = r.State
		all = append(all, r.Events...)
		per = append(per, r.Events)
	}
	return all, per
}

func joinDeltas(evs []wire.Event, index int64) string {
	var sb strings.Builder
	for _, e := range evs {
		if e.Type == wire.EventDelta && e.Index == index {
			sb.WriteString(e.Text)
		}
	}
	return sb.String()
}

func TestStreamRestoresSplitPlaceholders(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_s"), Request: wire.Request{
		Messages: []wire.Message{userMsg(text("to " + email + " and " + phone))}}})
	m := meta("req_s")
	m.Stream = true
	m.Annotations = res.Annotations
	delta := func(i int64, k wire.DeltaKind, s string) wire.Event {
		return wire.Event{Type: wire.EventDelta, Index: i, Delta: k, Text: s}
	}
	batches := [][]wire.Event{
		{{Type: wire.EventMessageStart, ID: "m"}, {Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockText}}},
		{delta(0, wire.DeltaText, "Sent to [EMA")},
		{delta(0, wire.DeltaText, "IL_")},
		{delta(0, wire.DeltaText, "1], phone [")},
		{delta(0, wire.DeltaText, "PHONE_1")},
		{delta(0, wire.DeltaText, "]. Also [x] and [NOTE")},
		{{Type: wire.EventBlockStop, Index: 0}, {Type: wire.EventBlockStart, Index: 1, Block: wire.Block{Type: wire.BlockToolUse, ID: "c", Name: "send"}}},
		{delta(1, wire.DeltaInputJSON, `{"to":"[EMAIL`)},
		{delta(1, wire.DeltaInputJSON, `_1]","cc":"[EMAIL_1]"`)},
		{delta(1, wire.DeltaInputJSON, `,"x":"[PHONE_`)},
		{},
	}
	all, per := streamRun(t, h, m, batches)
	if s := joinDeltas(all, 0); s != "Sent to "+email+", phone "+phone+". Also [x] and [NOTE" {
		t.Errorf("text = %q", s)
	}
	if s := joinDeltas(all, 1); s != `{"to":"`+email+`","cc":"`+email+`","x":"[PHONE_` {
		t.Errorf("json = %q", s)
	}
	// Held-back text never leaks as a partial placeholder, and is flushed
	// before its block stops.
	for _, e := range all {
		if strings.Contains(e.Text, "[EMA") && !strings.Contains(e.Text, "]") {
			t.Errorf("partial placeholder emitted: %q", e.Text)
		}
	}
	stop := per[6]
	if len(stop) < 2 || stop[0].Type != wire.EventDelta || stop[0].Text != "[NOTE" || stop[1].Type != wire.EventBlockStop {
		t.Errorf("flush before block stop: %+v", stop)
	}
	if len(per[2]) != 0 {
		t.Errorf("a batch that only continues a placeholder emits nothing, got %+v", per[2])
	}
	if kvHas(h, kvKey("req_s")) {
		t.Error("mapping not deleted")
	}
	if h.Metrics["pii_restored_total"] != 4 {
		t.Errorf("restored %v", h.Metrics["pii_restored_total"])
	}
}

func TestStreamWithoutPIIPassesThrough(t *testing.T) {
	h := plugintest.New(t, `{}`)
	evs := []wire.Event{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "[EMAIL_1"}}
	r := h.OnStream(wire.LayerStream{Meta: meta("req_n"), Events: evs})
	if len(r.State) != 0 || len(r.Events) != 1 || r.Events[0].Text != "[EMAIL_1" {
		t.Fatalf("%+v", r)
	}
}

func TestMappingExpired(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_e"), Request: wire.Request{
		Messages: []wire.Message{userMsg(text(email))}}})
	h.KVDelete(kvKey("req_e"))
	rr := respond(h, "req_e", res, text("[EMAIL_1]"))
	if rr.Replaced {
		t.Fatal("restored without a mapping")
	}
	if len(h.Logs) == 0 || !strings.Contains(h.Logs[len(h.Logs)-1], "not found") {
		t.Errorf("logs %v", h.Logs)
	}
}

func TestHMAC(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 64, 200} {
		key, msg := []byte("0123456789abcdef"), bytes.Repeat([]byte{'m'}, n)
		mac := hmac.New(sha256.New, key)
		mac.Write(msg)
		if got := hmacSHA256(key, msg); !bytes.Equal(got[:], mac.Sum(nil)) {
			t.Fatalf("hmac of %d bytes differs from crypto/hmac", n)
		}
	}
}

// The keystream is SHA-256(key ‖ little-endian counter), block by block:
// computed here with crypto/sha256 directly, it must match what the layer
// XORs (through the host's SHA-256), and XORing twice restores the input.
func TestStreamMatchesDefinition(t *testing.T) {
	key := []byte("0123456789abcdef")
	src := bytes.Repeat([]byte("plaintext "), 9)
	got := make([]byte, len(src))
	xorStream(key, got, src)
	want := make([]byte, len(src))
	for off, ctr := 0, uint64(0); off < len(src); off, ctr = off+32, ctr+1 {
		var in [24]byte
		copy(in[:16], key)
		binary.LittleEndian.PutUint64(in[16:], ctr)
		ks := sha256.Sum256(in[:])
		for j := 0; j < 32 && off+j < len(src); j++ {
			want[off+j] = src[off+j] ^ ks[j]
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the keystream differs from its definition")
	}
	back := make([]byte, len(got))
	xorStream(key, back, got)
	if !bytes.Equal(back, src) {
		t.Fatal("xor twice did not restore the input")
	}
	other := make([]byte, len(src))
	xorStream([]byte("another-key-0123"), other, src)
	if bytes.Equal(other, got) {
		t.Fatal("two keys gave the same ciphertext")
	}
}

func TestSealRoundTrip(t *testing.T) {
	var m mapping
	for i := range 40 {
		m.add("[X_"+strconv.Itoa(i+1)+"]", strings.Repeat("v", i))
	}
	sealed, key, err := seal(&m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := open(sealed, key)
	if err != nil || len(got.ph) != 40 || got.maxLen != m.maxLen {
		t.Fatal(err)
	}
	if v, ok := got.lookup("[X_3]"); !ok || v != strings.Repeat("v", 2) {
		t.Errorf("lookup = %q %v", v, ok)
	}
	sealed[3] ^= 1
	if _, err := open(sealed, key); err == nil {
		t.Error("tampered mapping opened")
	}
}

// A DeFi agent's transaction hashes pass untouched (their JSON member or the
// words before them say "hash"), and a secret in an earlier turn is masked,
// not refused: before, every 64-hex value blocked, and once a hash was in
// the history every later turn of the conversation was refused.
func TestHexContextAndLatestTurnOnly(t *testing.T) {
	h := plugintest.New(t, `{}`)
	const hash = "0x9fc76417374aa880d4449a1f7f31ec597f00b1f6f3dd2d66f4c9c6c445836d8b"
	const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	history := []wire.Message{
		userMsg(text("Swap 0.5 ETH for USDC and tell me the tx hash.")),
		{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "get_receipt",
			Data: []byte(`{"txHash":"` + hash + `"}`)}}},
		userMsg(wire.Block{Type: wire.BlockToolResult, ID: "c1",
			Data: []byte(`[{"type":"text","text":"{\"transactionHash\":\"` + hash + `\",\"status\":\"0x1\"}"}]`)}),
		{Role: "assistant", Content: []wire.Block{text("Done: transaction " + hash + " confirmed in block 19000000.")}},
	}
	req := wire.Request{Messages: append(append([]wire.Message(nil), history...), userMsg(text("Was tx "+hash+" cheap?")))}
	res := h.OnRequest(wire.LayerRequest{Meta: meta("req_h1"), Request: req})
	if res.Action != wire.ActionContinue || res.Patched != 0 {
		t.Fatalf("transaction hashes: action %d patched %b %+v", res.Action, res.Patched, res.Error)
	}

	// A key in the newest message is refused.
	withKey := append(append([]wire.Message(nil), history...), userMsg(text("Here is my private key "+key+", import it")))
	res = h.OnRequest(wire.LayerRequest{Meta: meta("req_h2"), Request: wire.Request{Messages: withKey}})
	if res.Action != wire.ActionReject || res.Error == nil || !strings.Contains(res.Error.Message, "eth_private_key") {
		t.Fatalf("key in the newest turn: %+v", res)
	}
	// The same key one turn earlier is masked, and the request goes on.
	later := append(append([]wire.Message(nil), withKey...),
		wire.Message{Role: "assistant", Content: []wire.Block{text("I cannot import keys.")}}, userMsg(text("ok, what is my balance?")))
	res = h.OnRequest(wire.LayerRequest{Meta: meta("req_h3"), Request: wire.Request{Messages: later}})
	if res.Action != wire.ActionContinue || res.Patched&wire.PartMessages == 0 {
		t.Fatalf("key in an earlier turn: %+v", res)
	}
	got := res.Request.Messages[4].Content[0].Text
	if strings.Contains(got, key) || !strings.Contains(got, "[PRIVATE_KEY_1]") {
		t.Fatalf("earlier key not masked: %q", got)
	}
	if s := res.Request.Messages[3].Content[0].Text; !strings.Contains(s, hash) {
		t.Fatalf("the hash was changed: %q", s)
	}

	// A bare 64-hex value with no context is masked (hex64), never refused.
	res = h.OnRequest(wire.LayerRequest{Meta: meta("req_h4"), Request: wire.Request{Messages: []wire.Message{
		userMsg(text("what is " + key + "?"))}}})
	if res.Action != wire.ActionContinue || !strings.Contains(res.Request.Messages[0].Content[0].Text, "[HEX64_1]") {
		t.Fatalf("bare value: %+v", res)
	}
	// … and restored in the answer and in a tool call's arguments.
	rr := respond(h, "req_h4", res, text("It is [HEX64_1]."),
		wire.Block{Type: wire.BlockToolUse, ID: "c", Name: "lookup", Data: []byte(`{"value":"[HEX64_1]"}`)})
	if rr.Response.Content[0].Text != "It is "+key+"." || !strings.Contains(string(rr.Response.Content[1].Data), key) {
		t.Fatalf("not restored: %+v", rr.Response.Content)
	}
}
