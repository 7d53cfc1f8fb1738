package daemon

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/bardoinference/bardo/host/health"
	"github.com/bardoinference/bardo/host/pipeline"
)

// probes keeps the health tracker's active pings in step with the enabled
// providers: a provider with a base URL is pinged with GET <base_url>/models
// (with its credential) when health has taken it out, while it is on trial,
// and when it has been idle for long (host/health.Prober decides when).
type probes struct {
	prober *health.Prober
	client *http.Client

	mu    sync.Mutex
	names map[string]bool
}

func newProbes(t *health.Tracker) *probes {
	p := &probes{prober: health.NewProber(t, health.ProberConfig{}), client: &http.Client{}, names: map[string]bool{}}
	p.prober.Start()
	return p
}

// Sync implements pipeline.ProviderWatcher.
func (p *probes) Sync(providers []*pipeline.Provider) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[string]bool{}
	for _, pr := range providers {
		if !pr.Enabled || pr.Spec.BaseURL == "" {
			continue
		}
		want[pr.Spec.Name] = true
		url := strings.TrimSuffix(pr.Spec.BaseURL, "/") + "/models"
		auth := pr.CatalogAuth()
		p.prober.Set(pr.Spec.Name, func(ctx context.Context) (int, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return 0, err
			}
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := p.client.Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		})
		p.names[pr.Spec.Name] = true
	}
	for name := range p.names {
		if !want[name] {
			p.prober.Set(name, nil)
			delete(p.names, name)
		}
	}
}

func (p *probes) close() { p.prober.Close() }
