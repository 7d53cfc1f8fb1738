package daemon

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/telemetry"
)

// catalogs refreshes the model catalogs of the providers that set
// catalog_refresh (pipeline.CatalogSource). It lives as long as the daemon,
// so a reload that keeps a provider keeps its refresher and last good
// catalog; a provider whose settings changed gets a new refresher.
type catalogs struct {
	log     *slog.Logger
	metrics *telemetry.Registry

	mu      sync.Mutex
	byName  map[string]*refreshed
	version atomic.Uint64
}

type refreshed struct {
	key string // what identifies the settings: url, interval, shape, auth
	r   *catalog.Refresher
}

func newCatalogs(log *slog.Logger, m *telemetry.Registry) *catalogs {
	return &catalogs{log: log, metrics: m, byName: map[string]*refreshed{}}
}

// Sync implements pipeline.CatalogSource.
func (c *catalogs) Sync(providers []*pipeline.Provider) {
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[string]bool{}
	for _, pr := range providers {
		s := pr.Spec
		if !pr.Enabled || s.CatalogRefresh == 0 || s.BaseURL == "" {
			continue
		}
		want[s.Name] = true
		auth := pr.CatalogAuth()
		key := strings.Join([]string{s.BaseURL, s.CatalogRefresh.String(), s.CatalogShape, auth}, "\x00")
		if old, ok := c.byName[s.Name]; ok {
			if old.key == key {
				continue
			}
			old.r.Close()
		}
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		name := s.Name
		r, err := catalog.NewRefresher(catalog.Options{
			Provider: name, BaseURL: strings.TrimSuffix(s.BaseURL, "/"), Shape: catalog.Shape(s.CatalogShape),
			Interval: s.CatalogRefresh, Header: h, Static: s.Catalog,
			OnUpdate: func(cat *catalog.Catalog) {
				c.version.Add(1)
				c.metrics.Add("bardo_catalog_refreshes_total", 1, "provider", name, "result", "ok")
				c.log.Info("catalog refreshed", "provider", name, "models", cat.Len())
			},
			OnError: func(err error) {
				c.metrics.Add("bardo_catalog_refreshes_total", 1, "provider", name, "result", "error")
				c.log.Warn("catalog refresh failed; keeping the last good catalog", "provider", name, "err", err)
			},
		})
		if err != nil {
			c.log.Warn("catalog refresh not started", "provider", name, "err", err)
			continue
		}
		r.Start()
		c.byName[name] = &refreshed{key: key, r: r}
	}
	for name, old := range c.byName {
		if !want[name] {
			old.r.Close()
			delete(c.byName, name)
		}
	}
	c.version.Add(1)
}

// Models implements pipeline.CatalogSource.
func (c *catalogs) Models(provider string) ([]catalog.Model, bool) {
	c.mu.Lock()
	rf, ok := c.byName[provider]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return rf.r.Catalog().Models(), true
}

// Version implements pipeline.CatalogSource.
func (c *catalogs) Version() uint64 { return c.version.Load() }

func (c *catalogs) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, rf := range c.byName {
		rf.r.Close()
		delete(c.byName, name)
	}
}
