package main

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Annotations this adapter reads. The gateway sets the subsystem when it
// routed the request by intent; every X-Bardo-* request header arrives as
// "bardo.hdr.<lower-case name>".
const (
	annSubsystem = "bardo.route.subsystem"
	annRole      = "bardo.hdr.x-bardo-role"       // X-Bardo-Role: the caller's cognitive role
	annWebSearch = "bardo.hdr.x-bardo-web-search" // X-Bardo-Web-Search: off | on | auto
)

// tier is the privacy tier a Venice model id names.
type tier uint8

const (
	tierPrivate tier = iota // no-log
	tierTEE                 // attested enclave
	tierE2EE                // end-to-end encrypted (and attested)
)

// tierOf reads the tier from a model id. Venice documents the prefixes
// (tee-*, e2ee-*); the issue names a -tee suffix, so both are honoured. A
// model feature suffix (":enable_web_search=on") is not part of the name.
func tierOf(model string) tier {
	name, _, _ := strings.Cut(strings.ToLower(model), ":")
	switch {
	case strings.HasPrefix(name, "e2ee-"), strings.HasSuffix(name, "-e2ee"):
		return tierE2EE
	case strings.HasPrefix(name, "tee-"), strings.HasSuffix(name, "-tee"):
		return tierTEE
	}
	return tierPrivate
}

func annotation(anns []wire.KV, key string) string {
	for i := len(anns) - 1; i >= 0; i-- {
		if anns[i].Key == key {
			return anns[i].Value
		}
	}
	return ""
}

// veniceParams builds the venice_parameters object: the caller's own
// members, and the adapter's choices for those it did not set.
func veniceParams(in *wire.EncodeInput) (map[string]json.RawMessage, *wire.Error) {
	bad := func(msg string) *wire.Error {
		return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: msg}
	}
	vp := map[string]json.RawMessage{}
	if raw := member(in.Request.Extra, "venice_parameters"); raw != nil {
		if err := json.Unmarshal(raw, &vp); err != nil || vp == nil {
			return nil, bad("venice_parameters must be a JSON object")
		}
	}
	setDefault := func(k string, v any) {
		if _, ok := vp[k]; !ok {
			b, _ := json.Marshal(v)
			vp[k] = b
		}
	}
	setDefault("include_venice_system_prompt", cfg.IncludeVeniceSystemPrompt)

	sub := annotation(in.Meta.Annotations, annSubsystem)
	role := annotation(in.Meta.Annotations, annRole)
	if role == "" {
		role = sub
	}
	if slug := cfg.Characters[role]; slug != "" {
		setDefault("character_slug", slug)
	} else if cfg.DefaultCharacter != "" {
		setDefault("character_slug", cfg.DefaultCharacter)
	}

	// Web search is off unless asked for: in venice_parameters, or with
	// the X-Bardo-Web-Search header (for callers whose SDK cannot add a
	// body field).
	if h := strings.ToLower(strings.TrimSpace(annotation(in.Meta.Annotations, annWebSearch))); h != "" {
		if h != "off" && h != "on" && h != "auto" {
			return nil, bad("X-Bardo-Web-Search must be off, on or auto, not " + strconv.Quote(h))
		}
		setDefault("enable_web_search", h)
	}
	setDefault("enable_web_search", "off")

	// Thinking is stripped for every routed subsystem but those whose
	// visible reasoning is the point. A request not routed by intent
	// (an explicit model) keeps Venice's default (thinking not stripped).
	if sub != "" {
		setDefault("strip_thinking_response", !cfg.keep[sub])
	}
	return vp, nil
}

// bodyMerge is the object whose members the host sets on the OpenAI body it
// encodes (UpstreamCall.BodyMerge, replacing members of the same name):
//
//   - venice_parameters, always: the caller's own members with the
//     adapter's choices for the rest (veniceParams), so it must replace
//     whatever the caller sent;
//   - prompt_cache_key from the session (the spec's golem id and session
//     epoch: stable across a session, new with each epoch), unless the
//     caller set its own;
//   - top_k when the request has one in Params (an Anthropic caller's):
//     Venice takes it, but OpenAI's format has no field for it, so the
//     host's encoding leaves it out;
//   - for a stream, stream_options with include_usage forced on, so the
//     answer's usage can be accounted; the caller's other stream_options
//     members are kept, as the merge replaces the whole object.
//
// The caller's fields count only when it spoke OpenAI: the host forwards
// those (an Anthropic caller's unknown fields are Anthropic's and the host
// drops them when it translates), so an OpenAI caller's prompt_cache_key or
// top_k is already in the body and must not be overwritten.
func bodyMerge(in *wire.EncodeInput, vp map[string]json.RawMessage) ([]byte, error) {
	vpJSON, err := json.Marshal(vp)
	if err != nil {
		return nil, err
	}
	var callerExtra []byte
	if in.Meta.Dialect == wire.DialectOpenAI {
		callerExtra = in.Request.Extra
	}
	b := make([]byte, 0, 64+len(vpJSON))
	b = append(b, `{"venice_parameters":`...)
	b = append(b, vpJSON...)
	if in.Meta.Session != "" && member(callerExtra, "prompt_cache_key") == nil {
		key, err := json.Marshal(in.Meta.Session)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"prompt_cache_key":`...)
		b = append(b, key...)
	}
	// A negative top_k is one the host notes as clamped (top_k-clamped):
	// sending it would contradict that note, and Venice would refuse it.
	if p := in.Request.Params; p.Set&wire.HasTopK != 0 && p.TopK >= 0 && member(callerExtra, "top_k") == nil {
		b = append(b, `,"top_k":`...)
		b = strconv.AppendInt(b, p.TopK, 10)
	}
	if in.Request.Stream {
		b = append(b, `,"stream_options":{"include_usage":true`...)
		if so := member(callerExtra, "stream_options"); len(so) > 0 && so[0] == '{' {
			jsonscan.EachMember(so, func(k, v []byte) {
				if string(k) != "include_usage" {
					b = append(b, ',', '"')
					b = append(b, k...)
					b = append(b, '"', ':')
					b = append(b, v...)
				}
			})
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// member returns the raw value of a top-level member of obj, or nil.
func member(obj []byte, key string) []byte {
	var out []byte
	jsonscan.EachMember(obj, func(k, v []byte) {
		if string(k) == key {
			out = v
		}
	})
	return out
}

// e2eeCheck refuses what an end-to-end encrypted request may not carry:
// the host cannot read an E2EE context, so it can neither dispatch tools
// nor search the web for it (spec, E2E_CONSTRAINTS). The check runs before
// anything is sent, so a refused request never reaches Venice.
func e2eeCheck(in *wire.EncodeInput, model string, vp map[string]json.RawMessage) *wire.Error {
	var why []string
	if len(in.Request.Tools) > 0 {
		why = append(why, "tools")
	}
	for _, m := range in.Request.Messages {
		if hasToolBlock(m.Content) {
			why = append(why, "tool calls in the conversation")
			break
		}
	}
	if searchOn(vp["enable_web_search"]) || suffixSearch(model) || member(in.Request.Extra, "web_search_options") != nil {
		why = append(why, "web search")
	}
	if truthy(vp["enable_web_scraping"]) {
		why = append(why, "web scraping")
	}
	if len(why) > 0 {
		return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "model " + model + " is end-to-end encrypted: an E2EE request may not carry " + strings.Join(why, ", ") +
				"; nothing was sent to provider " + in.Route.Provider}
	}
	if !cfg.AllowE2EEPlaintext {
		return &wire.Error{Status: 501, Kind: wire.ErrInvalidRequest,
			Message: "model " + model + " needs end-to-end encryption of the request, which provider " + in.Route.Provider +
				" does not perform; nothing was sent (use the model's tee- variant for attested inference)"}
	}
	return nil
}

func hasToolBlock(bs []wire.Block) bool {
	for _, b := range bs {
		if b.Type == wire.BlockToolUse || b.Type == wire.BlockToolResult {
			return true
		}
	}
	return false
}

// searchOn reports whether an enable_web_search value asks for search:
// anything but "off" (and false/null) does, so an unknown mode errs on the
// side of refusing.
func searchOn(v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return !strings.EqualFold(strings.TrimSpace(s), "off") && s != ""
	}
	var b *bool
	if json.Unmarshal(v, &b) == nil {
		return b != nil && *b
	}
	return true
}

func truthy(v json.RawMessage) bool {
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.EqualFold(s, "true")
	}
	return false
}

// suffixSearch reports whether a model id's feature suffix
// ("model:enable_web_search=on&…", Venice's alternative to
// venice_parameters) turns web search or scraping on.
func suffixSearch(model string) bool {
	_, suffix, ok := strings.Cut(model, ":")
	if !ok {
		return false
	}
	for _, kv := range strings.Split(suffix, "&") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "enable_web_search":
			if !strings.EqualFold(v, "off") {
				return true
			}
		case "enable_web_scraping":
			if strings.EqualFold(v, "true") {
				return true
			}
		}
	}
	return false
}
