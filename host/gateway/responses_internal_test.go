package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestSpliceBody: the chain goes ahead of the request's own items (a
// string input becomes a user message), store and previous_response_id
// leave, every other member stays as sent.
func TestSpliceBody(t *testing.T) {
	body := []byte(`{"model":"m","store":true,"previous_response_id":"resp_1","input":"next","metadata":{"a":"b"}}`)
	m := readResponsesMembers(body)
	if m.previous != "resp_1" || !m.store {
		t.Fatalf("members %+v", m)
	}
	got := spliceBody(body, []byte(`{"role":"user","content":"first"},{"type":"message","role":"assistant","content":[]}`), &m)
	want := `{"model":"m","store":true,"metadata":{"a":"b"},"input":[{"role":"user","content":"first"},{"type":"message","role":"assistant","content":[]},{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}]}`
	if string(got) != want {
		t.Errorf("spliced\n%s\nwant\n%s", got, want)
	}
	if m := readResponsesMembers([]byte(`{"model":"m","input":"x","store":false}`)); m.store {
		t.Fatal("store:false read as true")
	}
}

// TestStoreWriterSplitEvents: the terminal event is found and stored
// however the stream's bytes are cut into writes, before its last byte is
// passed on.
func TestStoreWriterSplitEvents(t *testing.T) {
	stream := []byte("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_x\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"delta\":\"hi\"}\n\n" +
		": bardo cost=0\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_x\",\"model\":\"m\",\"output\":[]}}\n\n")
	for cut := 1; cut < len(stream); cut += 7 {
		st := &store.MemoryResponses{}
		g := &Gateway{Responses: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		sw := &storeWriter{w: w, s: &storing{g: g, tenant: "t", input: []byte(`[]`)}}
		for i := 0; i < len(stream); i += cut {
			if _, err := sw.Write(stream[i:min(i+cut, len(stream))]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out.Bytes(), stream) {
			t.Fatalf("cut %d: the stream was changed", cut)
		}
		r, err := st.GetResponse(context.Background(), "t", "resp_x")
		if err != nil || string(r.Response) != `{"id":"resp_x","model":"m","output":[]}` {
			t.Fatalf("cut %d: stored %v, %v", cut, r, err)
		}
	}
}

// TestCarryExtra: a Responses caller's members with a Chat equivalent
// are carried under Chat's names, and back.
func TestCarryExtra(t *testing.T) {
	extra := []byte(`{"text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"},"strict":true},"verbosity":"low"},"reasoning":{"effort":"high","summary":"auto"},"parallel_tool_calls":false,"prompt_cache_key":"k","metadata":{"a":"b"},"client_metadata":{"x":"y"},"truncation":"auto","top_logprobs":2}`)
	carried, honoured := carryExtra(wire.DialectResponses, wire.DialectOpenAI, extra)
	var got map[string]any
	if err := json.Unmarshal(carried, &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(`{"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"},"strict":true}},"verbosity":"low","reasoning_effort":"high","parallel_tool_calls":false,"prompt_cache_key":"k"}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("carried %s", carried)
	}
	if dropped := droppedFields(extra, honoured...); dropped != "top_logprobs" {
		t.Errorf("dropped %q, want only top_logprobs", dropped)
	}

	back, _ := carryExtra(wire.DialectOpenAI, wire.DialectResponses, carried)
	var round map[string]any
	_ = json.Unmarshal(back, &round)
	if f := round["text"].(map[string]any)["format"].(map[string]any); f["name"] != "w" || f["type"] != "json_schema" || round["reasoning"].(map[string]any)["effort"] != "high" {
		t.Errorf("chat → responses: %s", back)
	}
}

// TestInputItemsList: newest first by default, ids made for items without
// one and stable.
func TestInputItemsList(t *testing.T) {
	in := []byte(`[{"role":"user","content":"a"},{"id":"fc_1","type":"function_call"}]`)
	var l struct {
		Data    []map[string]any `json:"data"`
		FirstID string           `json:"first_id"`
		LastID  string           `json:"last_id"`
	}
	if err := json.Unmarshal(inputItemsList("resp_abc", in, false), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Data) != 2 || l.FirstID != "fc_1" || l.LastID != "item_abc_0" || l.Data[1]["id"] != "item_abc_0" {
		t.Errorf("%+v", l)
	}
}
