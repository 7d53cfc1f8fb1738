package daemon

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
		base, path, interval := catalogSource(pr)
		if !pr.Enabled || interval == 0 || base == "" {
			continue
		}
		want[s.Name] = true
		auth := pr.CatalogAuth()
		key := strings.Join([]string{base, path, interval.String(), s.CatalogShape, auth}, "\x00")
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
			Provider: name, BaseURL: strings.TrimSuffix(base, "/"), Path: path, Shape: catalog.Shape(s.CatalogShape),
			Interval: interval, Header: h, Static: s.Catalog,
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

// catalogSource says where and how often a provider's catalog is fetched
// (interval 0: never). catalog_refresh in pipeline.toml decides ("off":
// never; a duration: from the described catalog URL, else
// <base_url>/models). Without it, a provider whose plugin describes a
// catalog URL and whose entry lists no static models refreshes hourly —
// the only way intents can reach it; a static catalog is the operator's
// statement and is refreshed only when asked.
func catalogSource(pr *pipeline.Provider) (base, path string, interval time.Duration) {
	s := pr.Spec
	if s.CatalogRefreshOff {
		return "", "", 0
	}
	base, interval = s.BaseURL, s.CatalogRefresh
	var described string
	if pr.Described != nil {
		described = pr.Described.CatalogURL
	}
	if interval == 0 && described != "" && len(s.Catalog) == 0 {
		interval = catalog.DefaultInterval
	}
	switch {
	case strings.Contains(described, "://"):
		// An absolute URL: split at its last path segment (before any query).
		end := len(described)
		if q := strings.IndexByte(described, '?'); q >= 0 {
			end = q
		}
		i := strings.LastIndexByte(described[:end], '/')
		base, path = described[:i], described[i:]
	case described != "":
		path = described
	}
	return base, path, interval
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
