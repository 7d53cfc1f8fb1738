package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/server"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// waitFor polls cond for up to 20 s (a bound, not an assertion on time).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// TestIdleRelease: once after the pipeline loads, and once the gateway has
// gone quiet after traffic — never while a request holds the pipeline —
// the daemon shrinks the plugin pools to one instance and gives memory
// back, counted in bardo_memory_releases_total.
func TestIdleRelease(t *testing.T) {
	slow := wasmbuild.MustBuild(t, "testplugins/slow")
	d, _ := newDaemon(t, `idle_release = "50ms"

[[layer]]
name = "slow"
plugin = "`+slow+`"
pool = 3
timeout = "10s"
`)
	d.Live.Close() // its canaries borrow instances: the counts below are the test's
	releases := func(reason string) float64 { return d.Metrics.Value("bardo_memory_releases_total", "reason", reason) }
	waitFor(t, "the release after the load", func() bool { return releases("load") == 1 })

	// A burst: three requests at once, each holding the pipeline as the
	// gateway's requests do, make the pool grow to three instances.
	p, done := d.Manager.Acquire()
	pl := p.Layers[0].Plugin
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sleepCall(pl, "sleep 300ms"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	d.idle.Settled(gateway.Settlement{})
	if n, _ := pl.MemoryBytes(); n != 3 {
		t.Fatalf("%d instances after the burst, want 3", n)
	}
	// In flight: nothing is released however long it lasts.
	time.Sleep(300 * time.Millisecond)
	if r := releases("idle"); r != 0 {
		t.Fatalf("released %v times while a request was in flight", r)
	}
	done()
	waitFor(t, "the idle release", func() bool { return releases("idle") == 1 })
	if n, _ := pl.MemoryBytes(); n != 1 || pl.Shrunk() < 2 {
		t.Fatalf("after the idle release: %d idle instances, %d shrunk; want 1 and at least 2", n, pl.Shrunk())
	}
	// Once per idle period.
	time.Sleep(300 * time.Millisecond)
	if r := releases("idle") + releases("load"); r != 2 {
		t.Fatalf("%v releases in all, want 2: one per quiet period", r)
	}
	// A reload is a load: given back once quiet.
	if err := d.Manager.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the release after a reload", func() bool { return releases("load") == 2 })
}

func sleepCall(pl *sandbox.Plugin, text string) error {
	var enc wire.Encoder
	req := wire.Request{Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: text}}}}}
	wire.EncodeLayerRequest(&enc, &wire.Meta{RequestID: "r", Tenant: "t"}, &req, pl.Descriptor().Reads)
	_, err := pl.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), sandbox.CallInfo{RequestID: "r", Tenant: "t"})
	return err
}

// TestLivenessOneCallPerPool: the plugins canary borrows one instance per
// pool, not one per entry: a bundle's entries share their module's pool,
// and a describe for each at once regrew the pool after every idle shrink.
func TestLivenessOneCallPerPool(t *testing.T) {
	bundle := wasmbuild.MustBuild(t, "host/sandbox/testdata/bundle")
	d, _ := newDaemon(t, `
[[layer]]
name = "tag"
plugin = "`+bundle+`"
entry = "tag"
trusted = true
pool = 4

[[layer]]
name = "count"
plugin = "`+bundle+`"
entry = "count"
trusted = true
pool = 4
`)
	d.Live.Close() // only this test's run calls the canary
	describes := func() (n float64) {
		for _, name := range []string{"tag", "count"} {
			n += d.Metrics.Value("bardo_sandbox_call_seconds", "plugin", name, "op", "bardo_describe")
		}
		return n
	}
	// The canaries' first run (started by New, finishing on its own after
	// Close) has made its call once one is counted.
	waitFor(t, "the canaries' first run", func() bool { return describes() >= 1 })
	before := describes()
	var plugins server.Check
	for _, c := range LivenessChecks(d) {
		if c.Name == "plugins" {
			plugins = c
		}
	}
	p, done := d.Manager.Acquire()
	if !p.Layers[0].Plugin.SharesPool(p.Layers[1].Plugin) {
		t.Fatal("the bundle's entries were loaded apart")
	}
	done()
	if err := plugins.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls := describes() - before; calls != 1 {
		t.Fatalf("the canary made %v describe calls on one bundle's pool, want 1", calls)
	}
}
