package fakeupstream

// Venice (api.venice.ai). Venice's API is OpenAI Chat Completions under
// /api/v1, plus a venice_parameters object; the fake serves it at
// POST /api/v1/chat/completions (so a provider's base_url is
// fake.URL()+"/api/v1", as for https://api.venice.ai/api/v1).
//
// What it imitates, and where it comes from:
//
//   - The request: venice_parameters validated by type
//     (include_venice_system_prompt, character_slug, enable_web_search ∈
//     off|on|auto, strip_thinking_response, disable_thinking,
//     enable_web_citations, enable_web_scraping), Venice's error shapes
//     ({"error":"…"} and, for validation, {"error","details","issues"}).
//     From Venice's API reference.
//   - Reasoning: a thinking reply (fake:thinking) comes as a leading
//     "<think>…</think>" in content, as DeepSeek-R1 does on Venice;
//     strip_thinking_response (or disable_thinking) removes it.
//   - Model naming: tee-* and e2ee-* (Venice's documented prefixes) and
//     *-tee, *-e2ee (the suffix form) are attested models. An E2EE
//     model refuses tools and web search with a 400.
//   - The privacy protocol of the spec ("VeniceClient"), which Venice's
//     public API does not document: every successful response carries
//     X-Venice-Privacy-Level: private and X-Venice-Retention-Policy: none;
//     a non-streamed answer of an attested model, asked for with
//     X-Venice-Attestation: required, carries X-Venice-Attestation-Receipt,
//     the receipt format defined in plugins/providers/venice/README.md,
//     signed with the Ed25519 key VeniceAttestationPublicKey names and
//     echoing the request's X-Venice-Attestation-Nonce. Streams never carry
//     a receipt (the format covers a whole body).
//
// The Venice phrases below break that protocol on purpose, one defect per
// phrase; the generic behaviours (Script, fake:status, fake:thinking, …)
// apply as on the OpenAI endpoint.

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// VeniceChatPath is the Venice chat completions path the fake serves.
const VeniceChatPath = "/api/v1/chat/completions"

// Venice privacy protocol headers (spec, "VeniceClient").
const (
	VeniceHeaderPrivacyLevel       = "X-Venice-Privacy-Level"
	VeniceHeaderRetentionPolicy    = "X-Venice-Retention-Policy"
	VeniceHeaderAttestation        = "X-Venice-Attestation"       // request: "required"
	VeniceHeaderAttestationNonce   = "X-Venice-Attestation-Nonce" // request: the freshness challenge
	VeniceHeaderAttestationReceipt = "X-Venice-Attestation-Receipt"
)

// veniceKey signs the fake's receipts. It is derived from a fixed seed so
// that every run, and every gateway under test, trusts the same key.
var veniceKey = ed25519.NewKeyFromSeed(sha256Of("fakeupstream venice attestation key"))

// VeniceEnclaveMeasurement is the enclave_measurement of the fake's
// receipts: a SHA-384 digest, as the spec's PCR digests are.
var VeniceEnclaveMeasurement = func() string {
	s := sha512.Sum384([]byte("fakeupstream venice enclave"))
	return hex.EncodeToString(s[:])
}()

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// VeniceAttestationPublicKey returns the standard base64 Ed25519 public key
// that verifies the fake's receipts (for a Venice adapter's
// attestation_keys).
func VeniceAttestationPublicKey() string {
	return base64.StdEncoding.EncodeToString(veniceKey.Public().(ed25519.PublicKey))
}

// veniceBehaviour breaks the privacy protocol for one response, as the
// Venice phrases ask. The zero value is a well-behaved Venice.
type veniceBehaviour struct {
	OmitPrivacyHeaders bool          // send neither privacy header
	PrivacyLevel       string        // X-Venice-Privacy-Level (default "private")
	RetentionPolicy    string        // X-Venice-Retention-Policy (default "none")
	OmitReceipt        bool          // no receipt on an attested answer
	DebugEnclave       bool          // the receipt says debug_mode: true
	ReceiptAge         time.Duration // the receipt is dated this long ago
	BadSignature       bool          // the receipt's signature is corrupted
	HashMismatch       bool          // the receipt attests another body
}

// Venice magic phrases, in the last user message like the generic ones.
const (
	PhraseVeniceNoPrivacy    = "venice:no-privacy-headers"
	PhraseVenicePrivacy      = "venice:privacy"   // "venice:privacy=<level>"
	PhraseVeniceRetention    = "venice:retention" // "venice:retention=<policy>", e.g. 30d
	PhraseVeniceNoReceipt    = "venice:no-receipt"
	PhraseVeniceDebug        = "venice:debug-enclave"
	PhraseVeniceStale        = "venice:stale" // "venice:stale=<Go duration>" (default 60s)
	PhraseVeniceBadSignature = "venice:bad-signature"
	PhraseVeniceHashMismatch = "venice:hash-mismatch"
)

// parseVenicePhrases reads the Venice phrases in text.
func parseVenicePhrases(text string) veniceBehaviour {
	var v veniceBehaviour
	for _, word := range strings.Fields(text) {
		name, val, hasVal := strings.Cut(word, "=")
		switch name {
		case PhraseVeniceNoPrivacy:
			v.OmitPrivacyHeaders = true
		case PhraseVenicePrivacy:
			v.PrivacyLevel = val
		case PhraseVeniceRetention:
			v.RetentionPolicy = val
		case PhraseVeniceNoReceipt:
			v.OmitReceipt = true
		case PhraseVeniceDebug:
			v.DebugEnclave = true
		case PhraseVeniceStale:
			v.ReceiptAge = time.Minute
			if d, err := time.ParseDuration(val); hasVal && err == nil {
				v.ReceiptAge = d
			}
		case PhraseVeniceBadSignature:
			v.BadSignature = true
		case PhraseVeniceHashMismatch:
			v.HashMismatch = true
		}
	}
	return v
}

// Venice privacy tiers, read from a model id.
const (
	VeniceTierPrivate = "private"
	VeniceTierTEE     = "tee"
	VeniceTierE2EE    = "e2ee"
)

// VeniceTier returns the tier a model id names: tee-*/*-tee, e2ee-*/*-e2ee,
// else private. A feature suffix (":enable_web_search=on") is ignored.
func VeniceTier(model string) string {
	name, _, _ := strings.Cut(strings.ToLower(model), ":")
	switch {
	case strings.HasPrefix(name, "e2ee-"), strings.HasSuffix(name, "-e2ee"):
		return VeniceTierE2EE
	case strings.HasPrefix(name, "tee-"), strings.HasSuffix(name, "-tee"):
		return VeniceTierTEE
	}
	return VeniceTierPrivate
}

// veniceParameters are the members the fake validates; others pass.
type veniceParameters struct {
	IncludeVeniceSystemPrompt *bool   `json:"include_venice_system_prompt"`
	CharacterSlug             *string `json:"character_slug"`
	EnableWebSearch           *string `json:"enable_web_search"`
	EnableWebCitations        *bool   `json:"enable_web_citations"`
	EnableWebScraping         *bool   `json:"enable_web_scraping"`
	StripThinkingResponse     *bool   `json:"strip_thinking_response"`
	DisableThinking           *bool   `json:"disable_thinking"`
}

type veniceRequest struct {
	oaRequest
	VeniceParameters *veniceParameters `json:"venice_parameters"`
}

// veniceError writes Venice's StandardError shape.
func veniceError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"error": message})
}

// veniceInvalid writes Venice's DetailedError shape for a bad field.
func veniceInvalid(w http.ResponseWriter, path []string, message string) {
	details := map[string]any{"_errors": []string{}}
	cur := details
	for i, p := range path {
		next := map[string]any{"_errors": []string{}}
		if i == len(path)-1 {
			next["_errors"] = []string{message}
		}
		cur[p] = next
		cur = next
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{
		"error":   "Invalid request parameters",
		"details": details,
		"issues":  []any{map[string]any{"code": "invalid_type", "path": path, "message": message}},
	})
}

// veniceFail writes the error Venice answers with for a scripted status.
func veniceFail(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusTooManyRequests:
		veniceError(w, status, "Rate limit exceeded")
	case http.StatusPaymentRequired:
		veniceError(w, status, "Insufficient USD or Diem balance to complete request. Visit https://venice.ai/settings/api to add credits.")
	case http.StatusInternalServerError:
		veniceError(w, status, "Inference processing failed")
	default:
		veniceError(w, status, http.StatusText(status))
	}
}

// venice answers Venice's paths; it reports false for any other path.
func (s *Server) venice(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if r.URL.Path != VeniceChatPath {
		return false
	}
	if r.Method != http.MethodPost {
		veniceError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return true
	}
	s.veniceChat(w, r, body)
	return true
}

func (s *Server) veniceChat(w http.ResponseWriter, r *http.Request, body []byte) {
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || strings.TrimSpace(key) != s.cfg.apiKey {
		veniceError(w, http.StatusUnauthorized, "Authentication failed")
		return
	}
	var req veniceRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		path := []string{"body"}
		if errors.As(err, &te) && te.Field != "" {
			path = strings.Split(te.Field, ".")
		}
		veniceInvalid(w, path, "Invalid input: "+err.Error())
		return
	}
	vp := req.VeniceParameters
	if vp == nil {
		vp = &veniceParameters{}
	}
	switch {
	case req.Model == "":
		veniceInvalid(w, []string{"model"}, "Field is required")
		return
	case req.Messages == nil || len(*req.Messages) == 0:
		veniceInvalid(w, []string{"messages"}, "Field is required")
		return
	case vp.EnableWebSearch != nil && *vp.EnableWebSearch != "off" && *vp.EnableWebSearch != "on" && *vp.EnableWebSearch != "auto":
		veniceInvalid(w, []string{"venice_parameters", "enable_web_search"}, `Invalid enum value. Expected 'off' | 'on' | 'auto'`)
		return
	}
	tier := VeniceTier(req.Model)
	if tier == VeniceTierE2EE && (len(req.Tools) > 0 || (vp.EnableWebSearch != nil && *vp.EnableWebSearch != "off")) {
		veniceError(w, http.StatusBadRequest, "E2EE models do not support function calling or web search")
		return
	}

	var lastUser string
	var all strings.Builder
	for _, m := range *req.Messages {
		t := contentText(m.Content)
		all.WriteString(t)
		if m.Role == "user" || m.Role == "tool" {
			lastUser = t
		}
	}
	firstTool := ""
	if len(req.Tools) > 0 {
		firstTool = req.Tools[0].Function.Name
	}
	b := s.next(lastUser)
	vb := parseVenicePhrases(lastUser)
	if !s.prepare(w, r, b, func(status int) { veniceFail(w, status) }) {
		return
	}
	rep := buildReply(b, lastUser, all.String(), firstTool, pick(req.MaxTokens, req.MaxCompletionTokens), "call_")
	// Reasoning models on Venice show their thinking inline, in <think>
	// tags, unless asked to strip it.
	strip := (vp.StripThinkingResponse != nil && *vp.StripThinkingResponse) || (vp.DisableThinking != nil && *vp.DisableThinking)
	think := ""
	if rep.thinking != "" && !strip {
		think = "<think>" + rep.thinking + "</think>\n\n"
	}

	h := w.Header()
	h.Set("x-venice-version", "20260301.fake")
	h.Set("x-ratelimit-limit-requests", "500")
	h.Set("x-ratelimit-remaining-requests", "499")
	if !vb.OmitPrivacyHeaders {
		h.Set(VeniceHeaderPrivacyLevel, pick(VeniceTierPrivate, vb.PrivacyLevel))
		h.Set(VeniceHeaderRetentionPolicy, pick("none", vb.RetentionPolicy))
	}
	id, created := newID("chatcmpl-", 29), time.Now().Unix()
	usage := rep.openAIUsage()
	finish := "stop"
	switch {
	case rep.toolName != "":
		finish = "tool_calls"
	case rep.truncated:
		finish = "length"
	}
	if req.Stream {
		s.veniceStream(w, r, b, req, id, created, think, rep, finish, usage)
		return
	}

	content := think + rep.text
	msg := oaMessage{Role: "assistant", Annotations: []struct{}{}}
	if content != "" || rep.toolName == "" {
		msg.Content = &content
	}
	if rep.toolName != "" {
		msg.ToolCalls = []oaToolCall{{ID: rep.toolID, Type: "function", Function: oaFunction{rep.toolName, rep.toolArgs}}}
	}
	out, err := json.Marshal(oaCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: req.Model,
		Choices: []oaChoice{{Message: msg, FinishReason: finish}}, Usage: usage,
	})
	if err != nil {
		panic(err) // programming error: every payload here is marshalable
	}
	if tier != VeniceTierPrivate && strings.EqualFold(r.Header.Get(VeniceHeaderAttestation), "required") && !vb.OmitReceipt {
		h.Set(VeniceHeaderAttestationReceipt, veniceReceipt(vb, req.Model, r.Header.Get(VeniceHeaderAttestationNonce), out))
	}
	finishBytes(w, b, out)
}

// veniceReceipt writes the receipt header value for body (see
// plugins/providers/venice/README.md, "Attestation receipt").
func veniceReceipt(vb veniceBehaviour, model, nonce string, body []byte) string {
	attested := body
	if vb.HashMismatch {
		attested = append([]byte("tampered:"), body...)
	}
	sum := sha256.Sum256(attested)
	rc := struct {
		Version            int    `json:"version"`
		EnclaveMeasurement string `json:"enclave_measurement"`
		Nonce              string `json:"nonce"`
		Timestamp          int64  `json:"timestamp"`
		ModelID            string `json:"model_id"`
		ResponseHash       string `json:"response_hash"`
		DebugMode          bool   `json:"debug_mode"`
		Signature          string `json:"signature"`
	}{1, VeniceEnclaveMeasurement, nonce, time.Now().Add(-vb.ReceiptAge).UnixMilli(), model, hex.EncodeToString(sum[:]), vb.DebugEnclave, ""}
	msg := strings.Join([]string{"venice-attestation-v1", strconv.Itoa(rc.Version), rc.EnclaveMeasurement, rc.Nonce,
		strconv.FormatInt(rc.Timestamp, 10), rc.ModelID, rc.ResponseHash, strconv.FormatBool(rc.DebugMode)}, "\n")
	sig := ed25519.Sign(veniceKey, []byte(msg))
	if vb.BadSignature {
		sig[0] ^= 0xff
	}
	rc.Signature = base64.StdEncoding.EncodeToString(sig)
	j, err := json.Marshal(rc)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(j)
}

// finishBytes writes a 200 JSON body, honouring CutStream and
// MalformedChunk as finishJSON does.
func finishBytes(w http.ResponseWriter, b Behaviour, body []byte) {
	switch {
	case b.CutStream:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		abort(w)
	case b.MalformedChunk:
		writeRaw(w, http.StatusOK, body[:len(body)/2])
	default:
		writeRaw(w, http.StatusOK, body)
	}
}

// veniceStream streams the reply as OpenAI chunks, thinking inline.
func (s *Server) veniceStream(w http.ResponseWriter, r *http.Request, b Behaviour, req veniceRequest, id string, created int64,
	think string, rep reply, finish string, usage oaUsage) {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunk := func(d oaDelta, finish *string) oaChunk {
		c := oaChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			Choices: []oaChunkChoice{{Delta: d, FinishReason: finish}}}
		if includeUsage {
			c.Usage = jsonNull
		}
		return c
	}
	bad := fmt.Sprintf(`data: {"id":%q,"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`, id) + "\n\n"
	sw := s.newSSE(w, r, b, bad)
	sw.send("", chunk(oaDelta{Role: "assistant", Content: jsonString("")}, nil))
	if think != "" {
		sw.send("", chunk(oaDelta{Content: jsonString("<think>")}, nil))
		for _, piece := range splitWords(rep.thinking, 3) {
			sw.send("", chunk(oaDelta{Content: jsonString(piece)}, nil))
		}
		sw.send("", chunk(oaDelta{Content: jsonString("</think>\n\n")}, nil))
	}
	for _, piece := range rep.textPieces() {
		sw.send("", chunk(oaDelta{Content: jsonString(piece)}, nil))
	}
	if rep.toolName != "" {
		zero := 0
		sw.send("", chunk(oaDelta{ToolCalls: []oaToolCall{{Index: &zero, ID: rep.toolID, Type: "function", Function: oaFunction{Name: rep.toolName}}}}, nil))
		for _, piece := range splitBytes(rep.toolArgs, 8) {
			sw.send("", chunk(oaDelta{ToolCalls: []oaToolCall{{Index: &zero, Function: oaFunction{Arguments: piece}}}}, nil))
		}
	}
	sw.send("", chunk(oaDelta{}, &finish))
	if includeUsage {
		u, err := json.Marshal(usage)
		if err != nil {
			panic(err)
		}
		c := chunk(oaDelta{}, nil)
		c.Choices, c.Usage = []oaChunkChoice{}, u
		sw.send("", c)
	}
	sw.end("", "[DONE]")
}
