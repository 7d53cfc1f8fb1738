package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

type eventsReply struct {
	Events []struct {
		Seq       uint64         `json:"seq"`
		Type      string         `json:"type"`
		RequestID string         `json:"request_id"`
		Data      map[string]any `json:"data"`
	} `json:"events"`
	Next   uint64 `json:"next"`
	Missed uint64 `json:"missed"`
}

func getEvents(t *testing.T, g *testgateway.Gateway, query, token string) (int, eventsReply) {
	t.Helper()
	req, _ := http.NewRequest("GET", g.URL+"/admin/events"+query, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r eventsReply
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("events body %s: %v", b, err)
		}
	}
	return resp.StatusCode, r
}

// The operator sees what routing did: each failed attempt
// (provider:fallback), each intent resolution with what it compromised
// (provider:resolved), read by sequence number, optionally by long poll.
func TestEventsForOperators(t *testing.T) {
	g, primary, _ := startPrimaryBackup(t, testgateway.Options{AdminToken: "adm"})

	if code, _ := getEvents(t, g, "", ""); code != 401 {
		t.Fatalf("without the admin token: %d", code)
	}
	if code, _ := getEvents(t, g, "?since=x", "adm"); code != 400 {
		t.Fatalf("bad since: %d", code)
	}
	if code, _ := getEvents(t, g, "?wait=5m", "adm"); code != 400 {
		t.Fatalf("wait above 30s: %d", code)
	}

	primary.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "backup" {
		t.Fatalf("failover: %d %q", r.Status, r.Header.Get("X-Bardo-Provider"))
	}
	rid := r.Header.Get("X-Bardo-Request-Id")
	_, ev := getEvents(t, g, "?since=0", "adm")
	var tries []float64
	for _, e := range ev.Events {
		if e.Type == "provider:fallback" && e.RequestID == rid && e.Data["failed"] == "primary" {
			tries = append(tries, e.Data["try"].(float64))
		}
	}
	if !slices.Equal(tries, []float64{1, 2}) {
		t.Fatalf("fallback events for %s: %+v", rid, ev.Events)
	}

	// An intent the simulator serves without privacy: resolved, degraded.
	since := ev.Next
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"dream on"}]}`,
		"X-Bardo-Subsystem", "dream")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "sim" {
		t.Fatalf("intent: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	_, ev = getEvents(t, g, "?since="+itoa(since), "adm")
	found := false
	for _, e := range ev.Events {
		if e.Type == "provider:resolved" && e.Data["subsystem"] == "dream" && e.Data["provider"] == "sim" {
			deg, _ := e.Data["degraded"].([]any)
			if !slices.Contains(deg, any("privacy")) || !strings.Contains(r.Header.Get("X-Bardo-Degraded"), "privacy") {
				t.Fatalf("dream on sim: degraded %v, header %q", deg, r.Header.Get("X-Bardo-Degraded"))
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no provider:resolved for dream: %+v", ev.Events)
	}

	// A long poll returns as soon as the next event arrives.
	done := make(chan eventsReply, 1)
	go func() {
		_, r := getEvents(t, g, "?wait=10s&since="+itoa(ev.Next), "adm")
		done <- r
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	post(t, g.URL, "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"again"}]}`, "X-Bardo-Subsystem", "curator")
	select {
	case r := <-done:
		if len(r.Events) == 0 || r.Events[0].Seq != ev.Next+1 || time.Since(t0) > 5*time.Second {
			t.Fatalf("long poll: %+v after %v", r, time.Since(t0))
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the long poll did not return on the new event")
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }
