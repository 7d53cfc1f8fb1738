package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

type metricSink struct {
	mu sync.Mutex
	m  map[string]float64
}

func (s *metricSink) PluginMetric(plugin string, kind int, name string, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]float64{}
	}
	s.m[plugin+"/"+name] += v
}

func loadHostcalls(t *testing.T, trusted bool) (*sandbox.Plugin, *metricSink) {
	t.Helper()
	ms := &metricSink{}
	p, err := sandbox.Load(context.Background(), sandbox.Options{
		Name:        "hc",
		Path:        wasmbuild.MustBuild(t, "testplugins/hostcalls"),
		Trusted:     trusted,
		MemoryLimit: 64 << 20,
		PoolSize:    2,
		Timeout:     5 * time.Second,
		Config:      []byte(`{"suffix":" [native]"}`),
		KV:          kvstore.NewMemory(1 << 20),
		Metrics:     ms,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, ms
}

func onRequest(t *testing.T, p *sandbox.Plugin, tenant, text string) wire.LayerResult {
	t.Helper()
	var enc wire.Encoder
	req := wire.Request{Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: text}}}}}
	wire.EncodeLayerRequest(&enc, &wire.Meta{RequestID: "r1", Tenant: tenant}, &req, p.Descriptor().Reads)
	out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), sandbox.CallInfo{RequestID: "r1", Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	var res wire.LayerResult
	if err := res.Decode(out); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestHostFunctions(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(map[bool]string{true: "trusted", false: "untrusted"}[trusted], func(t *testing.T) {
			p, ms := loadHostcalls(t, trusted)
			d := p.Descriptor()
			if d.Name != "hostcalls" || d.Kind != "layer" || d.Reads != wire.PartMessages || d.Writes != wire.PartMessages {
				t.Fatalf("descriptor = %+v", d)
			}
			steps := []struct{ tenant, text, want, header string }{
				{"t1", "hello", "hello [native] #1", "1"},
				{"t1", "hello", "hello [native] #2", "2"},
				{"t2", "hello", "hello [native] #1", "1"}, // tenants are isolated
				{"t1", "please reset", "please reset [native] #1", "1"},
			}
			for i, s := range steps {
				res := onRequest(t, p, s.tenant, s.text)
				if res.Patched != wire.PartMessages {
					t.Fatalf("step %d: patched = %b", i, res.Patched)
				}
				if got := res.Request.Messages[0].Content[0].Text; got != s.want {
					t.Fatalf("step %d: text = %q, want %q", i, got, s.want)
				}
				h := map[string]string{}
				for _, kv := range res.Headers {
					h[kv.Key] = kv.Value
				}
				if h["X-Bardo-Hostcalls"] != s.header {
					t.Fatalf("step %d: headers = %v", i, res.Headers)
				}
				// The shared space counts across tenants; the hash and the
				// regex set run natively on the host.
				if h["X-Bardo-Hostcalls-Shared"] != strconv.Itoa(i+1) {
					t.Fatalf("step %d: shared count = %q", i, h["X-Bardo-Hostcalls-Shared"])
				}
				sum := sha256.Sum256([]byte(s.text))
				if h["X-Bardo-Hostcalls-Hash"] != hex.EncodeToString(sum[:4]) {
					t.Fatalf("step %d: hash = %q", i, h["X-Bardo-Hostcalls-Hash"])
				}
				if h["X-Bardo-Hostcalls-Matches"] != "0,0" {
					t.Fatalf("step %d: matches = %q", i, h["X-Bardo-Hostcalls-Matches"])
				}
			}
			ms.mu.Lock()
			defer ms.mu.Unlock()
			if got := ms.m["hc/hostcalls_requests_total"]; got != 4 {
				t.Fatalf("metric = %v, want 4", got)
			}
		})
	}
}

func TestRegexSet(t *testing.T) {
	p, _ := loadHostcalls(t, true)
	res := onRequest(t, p, "t1", "call 555 0100 or mail ann@example.com, bob@test.org; ref 42")
	for _, h := range res.Headers {
		if h.Key == "X-Bardo-Hostcalls-Matches" {
			if h.Value != "3,2" {
				t.Fatalf("matches = %q, want 3 numbers and 2 addresses", h.Value)
			}
			return
		}
	}
	t.Fatal("no matches header")
}

func TestMissingExportIsAPluginError(t *testing.T) {
	p, _ := loadHostcalls(t, true)
	_, err := p.Call(context.Background(), plugin.OpEncode, nil, sandbox.CallInfo{})
	if err == nil || !strings.Contains(err.Error(), "not a layer op") {
		t.Fatalf("err = %v", err)
	}
	if _, discarded := p.Stats(); discarded != 0 {
		t.Fatalf("a plugin-reported error must not discard the instance, discarded=%d", discarded)
	}
}

func TestPoolBoundsConcurrency(t *testing.T) {
	p, _ := loadHostcalls(t, true)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			onRequest(t, p, "t"+string(rune('a'+i)), "hi")
		}()
	}
	wg.Wait()
	if inst, _ := p.Stats(); inst > 2 {
		t.Fatalf("pool size 2 but %d instances were created", inst)
	}
}
