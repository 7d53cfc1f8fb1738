package daemon

import (
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/routing"
)

// catalogSource: pipeline.toml's catalog_refresh decides; without it a
// described catalog URL is fetched hourly unless the entry lists static
// models; "off" never fetches; an absolute URL is split at its last path
// segment, query kept.
func TestCatalogSource(t *testing.T) {
	described := func(url string) *routing.ProviderDescription { return &routing.ProviderDescription{CatalogURL: url} }
	static := []catalog.Model{{ID: "m"}}
	for _, c := range []struct {
		name       string
		spec       config.Provider
		desc       *routing.ProviderDescription
		base, path string
		interval   time.Duration
	}{
		{"nothing described, no refresh", config.Provider{BaseURL: "https://x/v1"}, nil, "https://x/v1", "", 0},
		{"described, no static catalog: hourly", config.Provider{BaseURL: "https://x/v1"}, described("/models?type=text"), "https://x/v1", "/models?type=text", catalog.DefaultInterval},
		{"described, static catalog: only when asked", config.Provider{BaseURL: "https://x/v1", Catalog: static}, described("/models"), "https://x/v1", "/models", 0},
		{"catalog_refresh wins", config.Provider{BaseURL: "https://x/v1", Catalog: static, CatalogRefresh: 10 * time.Minute}, described("/models"), "https://x/v1", "/models", 10 * time.Minute},
		{"catalog_refresh without a described URL: base_url/models", config.Provider{BaseURL: "https://x/v1", CatalogRefresh: time.Hour}, nil, "https://x/v1", "", time.Hour},
		{"off", config.Provider{BaseURL: "https://x/v1", CatalogRefreshOff: true}, described("/models"), "", "", 0},
		{"absolute URL", config.Provider{BaseURL: "https://x/v1"}, described("https://cat.example/api/v1/models?a=b/c"), "https://cat.example/api/v1", "/models?a=b/c", catalog.DefaultInterval},
	} {
		base, path, interval := catalogSource(&pipeline.Provider{Spec: c.spec, Described: c.desc})
		if base != c.base || path != c.path || interval != c.interval {
			t.Errorf("%s: %q %q %v, want %q %q %v", c.name, base, path, interval, c.base, c.path, c.interval)
		}
	}
}
