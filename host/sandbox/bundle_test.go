package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TestBundle loads two plugins of one module (ABI v1.5) as two entries:
// one compiled module and one pool, each entry with its own config, kv
// space and state, selected per call.
func TestBundle(t *testing.T) {
	path := wasmbuild.MustBuild(t, "host/sandbox/testdata/bundle")
	kv := kvstore.NewMemory(1 << 20)
	opts := func(name, entry, label string) sandbox.Options {
		return sandbox.Options{Name: name, Entry: entry, Path: path, Trusted: true, PoolSize: 2,
			Timeout: 5 * time.Second, Config: []byte(`{"label":"` + label + `"}`), KV: kv}
	}
	ps, err := sandbox.LoadModule(context.Background(), []sandbox.Options{
		opts("count-a", "count", "A"), // an entry named apart from its plugin
		opts("tag", "", "T"),          // no entry: the plugin named like the layer
	})
	if err != nil {
		t.Fatal(err)
	}
	count, tag := ps[0], ps[1]
	defer count.Close()
	defer tag.Close()
	if count.Descriptor().Name != "count" || tag.Descriptor().Name != "tag" {
		t.Fatalf("descriptors %+v, %+v", count.Descriptor(), tag.Descriptor())
	}
	get := func(p *sandbox.Plugin, k string) string {
		for _, h := range onRequest(t, p, "t1", "hi").Headers {
			if h.Key == k {
				return h.Value
			}
		}
		return ""
	}
	// Alternating calls on one instance: each entry's config and state
	// stay its own.
	for i, want := range []string{"1", "2", "3"} {
		if got := get(tag, "X-Bardo-Tag"); got != "T:"+want {
			t.Fatalf("call %d: tag = %q", i, got)
		}
		if got := get(count, "X-Bardo-Count"); got != "A:"+want {
			t.Fatalf("call %d: count = %q", i, got)
		}
	}
	// The kv space is the entry's (its pipeline name), as for a plugin of its own.
	if v, ok := kv.Get(sandbox.TenantPrefix("count-a", "t1") + "n"); !ok || string(v) != "3" {
		t.Fatalf("kv under count-a = %q, %v", v, ok)
	}
	if made, _ := tag.Stats(); made != 1 {
		t.Errorf("%d instances for sequential calls of two entries; want one shared", made)
	}

	// A bundle loaded entry by entry (Load) still finds its plugin by name,
	// and a name it lacks is refused naming the ones it has. It is a pool
	// of its own on the same compiled code.
	p, err := sandbox.Load(context.Background(), opts("tag", "", "solo"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.SharesCode(tag) {
		t.Error("a second load of the same bytes and settings compiled them again")
	}
	if got := get(p, "X-Bardo-Tag"); got != "solo:1" {
		t.Errorf("the second load's tag = %q, want its own config and state", got)
	}
	p.Close()
	if untrusted, err := sandbox.Load(context.Background(), func() sandbox.Options { o := opts("tag", "", "u"); o.Trusted = false; return o }()); err != nil {
		t.Fatal(err)
	} else {
		if untrusted.SharesCode(tag) {
			t.Error("an untrusted load shares a trusted one's runtime")
		}
		untrusted.Close()
	}
	_, err = sandbox.Load(context.Background(), opts("pii", "", "x"))
	if err == nil || !strings.Contains(err.Error(), "has no plugin \"pii\" (it has tag, count)") {
		t.Fatalf("unknown entry: %v", err)
	}
	// Two entries on one plugin would share its variables: refused.
	_, err = sandbox.LoadModule(context.Background(), []sandbox.Options{opts("a", "tag", "1"), opts("b", "tag", "2")})
	if err == nil || !strings.Contains(err.Error(), "both use plugin tag") {
		t.Fatalf("duplicate entry: %v", err)
	}
	count.Close()
	tag.Close()
	if n := sandbox.CompiledModules(); n != 0 {
		t.Errorf("%d compiled modules alive after every load closed", n)
	}
}

// TestBundleConcurrent calls two entries of one pool from many goroutines:
// every call runs on the entry it was made for (the instance's selection
// follows the call), whichever instance it lands on.
func TestBundleConcurrent(t *testing.T) {
	path := wasmbuild.MustBuild(t, "host/sandbox/testdata/bundle")
	kv := kvstore.NewMemory(1 << 20)
	opts := func(name, label string) sandbox.Options {
		return sandbox.Options{Name: name, Entry: name, Path: path, Trusted: true, PoolSize: 2,
			Timeout: 5 * time.Second, Config: []byte(`{"label":"` + label + `"}`), KV: kv}
	}
	ps, err := sandbox.LoadModule(context.Background(), []sandbox.Options{opts("tag", "T"), opts("count", "C")})
	if err != nil {
		t.Fatal(err)
	}
	defer ps[0].Close()
	defer ps[1].Close()
	var wg sync.WaitGroup
	errs := make(chan string, 8*40)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				p, key, label := ps[0], "X-Bardo-Tag", "T:"
				if (g+i)%2 == 1 {
					p, key, label = ps[1], "X-Bardo-Count", "C:"
				}
				var enc wire.Encoder
				wire.EncodeLayerRequest(&enc, &wire.Meta{RequestID: "r", Tenant: "t"}, &wire.Request{}, 0)
				out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), sandbox.CallInfo{RequestID: "r", Tenant: "t"})
				if err != nil {
					errs <- err.Error()
					return
				}
				var res wire.LayerResult
				if err := res.Decode(out); err != nil {
					errs <- err.Error()
					return
				}
				if len(res.Headers) != 1 || res.Headers[0].Key != key || !strings.HasPrefix(res.Headers[0].Value, label) {
					errs <- fmt.Sprintf("a call for %s answered %v", p.Name(), res.Headers)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if made, _ := ps[0].Stats(); made > 2 {
		t.Errorf("%d instances for a pool of 2", made)
	}
}

// withoutBundleExports renames a module's bardo_entries and bardo_select
// exports (same lengths, so the binary stays valid): what a plugin built
// before ABI v1.5 exports.
func withoutBundleExports(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bardo_entries", "bardo_select"} {
		if !bytes.Contains(b, []byte(name)) {
			t.Fatalf("%s does not export %s", path, name)
		}
		b = bytes.ReplaceAll(b, []byte(name), []byte("x"+name[1:]))
	}
	out := filepath.Join(t.TempDir(), "old.wasm")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// A plugin without the v1.5 exports loads and runs as before (never
// selected); a bundle seen that way — as a host before v1.5 sees it — is
// its first plugin.
func TestBeforeBundles(t *testing.T) {
	old, err := sandbox.Load(context.Background(), sandbox.Options{Name: "hc", Path: withoutBundleExports(t, wasmbuild.MustBuild(t, "testplugins/hostcalls")),
		Trusted: true, Timeout: 5 * time.Second, Config: []byte(`{"suffix":" [old]"}`), KV: kvstore.NewMemory(1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := onRequest(t, old, "t1", "hi").Request.Messages[0].Content[0].Text; got != "hi [old] #1" {
		t.Fatalf("a plugin without bardo_select answered %q", got)
	}

	bundle := withoutBundleExports(t, wasmbuild.MustBuild(t, "host/sandbox/testdata/bundle"))
	first, err := sandbox.Load(context.Background(), sandbox.Options{Name: "anything", Path: bundle, Trusted: true, Config: []byte(`{"label":"F"}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if d := first.Descriptor(); d.Name != "tag" {
		t.Fatalf("a bundle without the v1.5 exports is %q, want its first plugin, tag", d.Name)
	}
	if h := onRequest(t, first, "t1", "hi").Headers; len(h) != 1 || h[0].Value != "F:1" {
		t.Fatalf("first plugin answered %v", h)
	}
}
