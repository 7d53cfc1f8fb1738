package daemon

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/server"
	"github.com/bardoinference/bardo/sdk/plugin"
)

// LivenessChecks are the canaries behind /healthz (server.Liveness): each
// walks a path every request takes, so a wedged one — no pipeline, a plugin
// pool whose instances are all stuck, a vector index or key/value lock that
// stays held — makes the gateway report that it cannot serve.
func LivenessChecks(d *Daemon) []server.Check {
	return []server.Check{
		{Name: "pipeline", Run: func(context.Context) error {
			if d.Manager.Peek() == nil {
				return errors.New("no pipeline is loaded")
			}
			return nil
		}},
		{Name: "plugins", Run: func(ctx context.Context) error {
			// Borrow an instance of every plugin, as a request does, and
			// have it describe itself: a pool whose every instance is held
			// (by calls blocked in the host, say) cannot lend one.
			p, release := d.Manager.Acquire()
			defer release()
			// Concurrently: one stuck pool must not use up the others' time
			// and have them reported as well.
			var (
				mu   sync.Mutex
				errs []string
				wg   sync.WaitGroup
			)
			var pools []*sandbox.Plugin
			call := func(pl *sandbox.Plugin) {
				if pl == nil || pl.Closed() {
					return
				}
				// One call per pool: a bundle's entries share their
				// module's instances, and a describe for each at once would
				// grow the pool back after every idle shrink.
				for _, q := range pools {
					if q.SharesPool(pl) {
						return
					}
				}
				pools = append(pools, pl)
				wg.Add(1)
				go func() {
					defer wg.Done()
					// The sandbox's errors name the plugin.
					if _, err := pl.Call(ctx, plugin.OpDescribe, nil, sandbox.CallInfo{RequestID: "liveness"}); err != nil {
						mu.Lock()
						errs = append(errs, err.Error())
						mu.Unlock()
					}
				}()
			}
			for _, l := range p.Layers {
				call(l.Plugin)
			}
			for _, pr := range p.Providers {
				call(pr.Plugin)
			}
			wg.Wait()
			if len(errs) > 0 {
				sort.Strings(errs)
				return errors.New(strings.Join(errs, "; "))
			}
			return nil
		}},
		{Name: "vector_index", Run: d.Vectors.Probe},
		{Name: "kv", Run: func(context.Context) error {
			// No context to honour: a held lock blocks here, and the
			// canary's age reports it.
			d.KV.Get("\x00bardo/liveness")
			return nil
		}},
	}
}
