package gateway

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Request headers reach layers as annotations: every X-Bardo-* header of the
// caller becomes "bardo.hdr.<lower-case name>" (X-Bardo-Cache-Domain →
// bardo.hdr.x-bardo-cache-domain), so a layer can take per-request hints
// without the ABI growing a field per hint. Bounded: at most
// maxHeaderAnnotations headers, values cut at maxHeaderAnnotationLen bytes.
const (
	AnnotationHeaderPrefix = "bardo.hdr."
	maxHeaderAnnotations   = 16
	maxHeaderAnnotationLen = 256

	// AnnotationRegime is the market regime (calm, normal, volatile,
	// crisis) set through the admin API; the semantic cache shortens its
	// TTLs and drops market entries when it changes.
	AnnotationRegime = "bardo.market.regime"
)

// Regimes are the market regimes the admin API accepts.
var Regimes = []string{"calm", "normal", "volatile", "crisis"}

// SetRegime sets the market regime every request carries from now on; it
// reports false for a name not in Regimes.
func (g *Gateway) SetRegime(name string) bool {
	for _, r := range Regimes {
		if r == name {
			g.regime.Store(name)
			return true
		}
	}
	return false
}

// Regime returns the regime set by SetRegime, or "" when none was.
func (g *Gateway) Regime() string {
	s, _ := g.regime.Load().(string)
	return s
}

func (g *Gateway) requestAnnotations(h Header) []wire.KV {
	var anns []wire.KV
	if r := g.Regime(); r != "" {
		anns = append(anns, wire.KV{Key: AnnotationRegime, Value: r})
	}
	n := 0
	for k, v := range h.All() {
		if n == maxHeaderAnnotations {
			break
		}
		if len(k) <= len("X-Bardo-") || !strings.EqualFold(string(k[:len("X-Bardo-")]), "X-Bardo-") {
			continue
		}
		if len(v) > maxHeaderAnnotationLen {
			v = v[:maxHeaderAnnotationLen]
		}
		anns = append(anns, wire.KV{Key: AnnotationHeaderPrefix + strings.ToLower(string(k)), Value: string(v)})
		n++
	}
	return anns
}
