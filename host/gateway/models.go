package gateway

import (
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/valyala/fasthttp"

	hostrouting "github.com/bardoinference/bardo/host/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// models answers GET /v1/models in the caller's dialect (Anthropic's list
// format when the request carries anthropic-version, OpenAI's otherwise):
// "auto" first — the gateway chooses by intent — then what the enabled
// providers serve: the models of their descriptions (the plugin's own, the
// static [[provider.model]] catalog, or the refreshed one) and the exact ids
// among their `models` globs (globs are routing rules, not models). Client
// model pickers (Cursor, the SDKs' models.list) show exactly what may be
// asked for.
func (g *Gateway) models(ctx *fasthttp.RequestCtx) {
	d := wire.DialectOpenAI
	if len(ctx.Request.Header.Peek("anthropic-version")) > 0 {
		d = wire.DialectAnthropic
	}
	if !ctx.IsGet() {
		ctx.Response.Header.Set("Allow", "GET")
		WriteError(ctx, d, &wire.Error{Status: 405, Kind: wire.ErrInvalidRequest, Message: "use GET on /v1/models"})
		return
	}
	// The list is the caller's: a key is needed like anywhere else
	// (read-only keys too), so a keyed gateway lists its catalog to no stranger.
	var ip netip.Addr
	if a, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		ip = a.Unmap()
	}
	if _, werr := g.admit(ctx, &Admission{Dialect: d, Path: string(ctx.Path()), Header: &ctx.Request.Header, RemoteIP: ip}); werr != nil {
		WriteError(ctx, d, werr)
		return
	}
	p := g.Pipelines.Peek()
	type entry struct{ id, owner string }
	list := []entry{{hostrouting.AutoModel, "bardo"}}
	seen := map[string]bool{hostrouting.AutoModel: true}
	add := func(id, owner string) {
		if id != "" && !seen[id] {
			seen[id] = true
			list = append(list, entry{id, owner})
		}
	}
	for _, d := range p.Descriptions() {
		for i := range d.Models {
			add(d.Models[i].ID, d.ID)
		}
	}
	for _, pr := range p.Providers {
		if !pr.Enabled {
			continue
		}
		for _, m := range pr.Spec.Models {
			if !strings.ContainsAny(m, "*?[") {
				add(m, pr.Spec.Name)
			}
		}
	}
	var body []byte
	if d == wire.DialectAnthropic {
		type model struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
		}
		out := struct {
			Data    []model `json:"data"`
			HasMore bool    `json:"has_more"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
		}{Data: []model{}}
		for _, e := range list {
			out.Data = append(out.Data, model{Type: "model", ID: e.id, DisplayName: e.id, CreatedAt: "1970-01-01T00:00:00Z"})
		}
		if n := len(out.Data); n > 0 {
			out.FirstID, out.LastID = &out.Data[0].ID, &out.Data[n-1].ID
		}
		body, _ = json.Marshal(out)
	} else {
		type model struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Created int64  `json:"created"`
			OwnedBy string `json:"owned_by"`
		}
		out := struct {
			Object string  `json:"object"`
			Data   []model `json:"data"`
		}{Object: "list", Data: []model{}}
		for _, e := range list {
			out.Data = append(out.Data, model{ID: e.id, Object: "model", OwnedBy: e.owner})
		}
		body, _ = json.Marshal(out)
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
