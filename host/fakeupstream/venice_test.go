package fakeupstream

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func veniceHeaders(extra ...string) map[string]string {
	h := openAIHeaders()
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func veniceBody(model, text string, more string) string {
	b, _ := json.Marshal(text)
	return `{"model":"` + model + `","messages":[{"role":"user","content":` + string(b) + `}]` + more + `}`
}

// receiptOf decodes and checks a receipt the way a client must: base64
// JSON, an Ed25519 signature by VeniceAttestationPublicKey over the
// documented line format. It returns the decoded fields.
func receiptOf(t *testing.T, header string) (fields map[string]any, signatureOK bool) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatalf("receipt is not base64: %v", err)
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("receipt is not JSON: %v: %s", err, raw)
	}
	hasKeys(t, fields, "version", "enclave_measurement", "nonce", "timestamp", "model_id", "response_hash", "debug_mode", "signature")
	ts := strconv.FormatInt(int64(fields["timestamp"].(float64)), 10)
	msg := strings.Join([]string{"venice-attestation-v1", "1", fields["enclave_measurement"].(string), fields["nonce"].(string), ts,
		fields["model_id"].(string), fields["response_hash"].(string), strconv.FormatBool(fields["debug_mode"].(bool))}, "\n")
	sig, err := base64.StdEncoding.DecodeString(fields["signature"].(string))
	if err != nil {
		t.Fatalf("signature is not base64: %v", err)
	}
	pub, err := base64.StdEncoding.DecodeString(VeniceAttestationPublicKey())
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: %v", VeniceAttestationPublicKey(), err)
	}
	return fields, ed25519.Verify(pub, []byte(msg), sig)
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVeniceChatPrivacyHeaders(t *testing.T) {
	s := newServer(t)
	resp := post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("llama-3.3-70b", "hello", ""))
	m := jsonBody(t, resp, http.StatusOK)
	if got := str(t, m, "choices", 0, "message", "content"); got != "echo: hello" {
		t.Fatalf("content %q", got)
	}
	if resp.Header.Get(VeniceHeaderPrivacyLevel) != "private" || resp.Header.Get(VeniceHeaderRetentionPolicy) != "none" ||
		resp.Header.Get(VeniceHeaderAttestationReceipt) != "" {
		t.Fatalf("headers %v", resp.Header)
	}
	if s.Count(VeniceChatPath) != 1 || s.Count("/v1/chat/completions") != 0 {
		t.Fatalf("counts %v", s.Counts())
	}

	resp = post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("llama-3.3-70b", "hello "+PhraseVeniceNoPrivacy, ""))
	jsonBody(t, resp, http.StatusOK)
	if _, ok := resp.Header[http.CanonicalHeaderKey(VeniceHeaderPrivacyLevel)]; ok {
		t.Fatalf("privacy header sent despite %s", PhraseVeniceNoPrivacy)
	}
	if _, ok := resp.Header[http.CanonicalHeaderKey(VeniceHeaderRetentionPolicy)]; ok {
		t.Fatalf("retention header sent despite %s", PhraseVeniceNoPrivacy)
	}

	resp = post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("llama-3.3-70b", "hi venice:retention=30d venice:privacy=anonymized", ""))
	jsonBody(t, resp, http.StatusOK)
	if resp.Header.Get(VeniceHeaderRetentionPolicy) != "30d" || resp.Header.Get(VeniceHeaderPrivacyLevel) != "anonymized" {
		t.Fatalf("headers %v", resp.Header)
	}
}

func TestVeniceRequestValidation(t *testing.T) {
	s := newServer(t)
	resp := post(t, s.URL()+VeniceChatPath, map[string]string{"Authorization": "Bearer wrong"}, veniceBody("m", "x", ""))
	if m := jsonBody(t, resp, http.StatusUnauthorized); str(t, m, "error") != "Authentication failed" {
		t.Fatalf("auth error %v", m)
	}
	for _, c := range []struct {
		name, body string
		path       []string
	}{
		{"type", veniceBody("m", "x", `,"venice_parameters":{"include_venice_system_prompt":"no"}`), []string{"venice_parameters", "include_venice_system_prompt"}},
		{"enum", veniceBody("m", "x", `,"venice_parameters":{"enable_web_search":"always"}`), []string{"venice_parameters", "enable_web_search"}},
		{"no messages", `{"model":"m","messages":[]}`, []string{"messages"}},
	} {
		m := jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(), c.body), http.StatusBadRequest)
		hasKeys(t, m, "error", "details", "issues")
		issuePath := arr(t, m, "issues", 0, "path")
		if len(issuePath) != len(c.path) {
			t.Fatalf("%s: issue path %v, want %v", c.name, issuePath, c.path)
		}
		for i, p := range c.path {
			if issuePath[i] != p {
				t.Fatalf("%s: issue path %v, want %v", c.name, issuePath, c.path)
			}
		}
	}
	// Unknown and well-typed members pass.
	jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(),
		veniceBody("m", "x", `,"venice_parameters":{"character_slug":"alan-watts","enable_web_search":"auto","some_future_flag":1}`)), http.StatusOK)

	// E2EE models refuse tools and web search.
	for _, more := range []string{
		`,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`,
		`,"venice_parameters":{"enable_web_search":"on"}`,
	} {
		m := jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("e2ee-qwen3", "x", more)), http.StatusBadRequest)
		if !strings.Contains(str(t, m, "error"), "E2EE") {
			t.Fatalf("e2ee refusal %v", m)
		}
	}
	jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("tee-qwen3", "x",
		`,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`)), http.StatusOK)

	// Scripted failures come in Venice's shape.
	m := jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("m", "x fake:status=429 fake:retry-after=3", "")), http.StatusTooManyRequests)
	if str(t, m, "error") != "Rate limit exceeded" {
		t.Fatalf("429 body %v", m)
	}
}

func TestVeniceThinking(t *testing.T) {
	s := newServer(t)
	m := jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("deepseek-r1", "why fake:thinking", "")), http.StatusOK)
	want := "<think>Thinking about: why fake:thinking</think>\n\necho: why fake:thinking"
	if got := str(t, m, "choices", 0, "message", "content"); got != want {
		t.Fatalf("content %q, want %q", got, want)
	}
	for _, vp := range []string{`{"strip_thinking_response":true}`, `{"disable_thinking":true}`} {
		m = jsonBody(t, post(t, s.URL()+VeniceChatPath, veniceHeaders(), veniceBody("deepseek-r1", "why fake:thinking", `,"venice_parameters":`+vp)), http.StatusOK)
		if got := str(t, m, "choices", 0, "message", "content"); got != "echo: why fake:thinking" {
			t.Fatalf("%s: content %q", vp, got)
		}
	}

	// Streams: privacy headers, thinking inline, no receipt.
	resp := post(t, s.URL()+VeniceChatPath, veniceHeaders(VeniceHeaderAttestation, "required"),
		veniceBody("tee-deepseek-r1", "why fake:thinking", `,"stream":true,"stream_options":{"include_usage":true}`))
	evs := sse(t, resp)
	if resp.Header.Get(VeniceHeaderPrivacyLevel) != "private" || resp.Header.Get(VeniceHeaderAttestationReceipt) != "" {
		t.Fatalf("stream headers %v", resp.Header)
	}
	var content strings.Builder
	for _, e := range evs[:len(evs)-1] {
		c := decodeData(t, e)
		for _, ch := range arr(t, c, "choices") {
			if s, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
				content.WriteString(s)
			}
		}
	}
	if content.String() != want || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("stream content %q, last %v", content.String(), evs[len(evs)-1])
	}
	if u := decodeData(t, evs[len(evs)-2]); num(t, u, "usage", "completion_tokens") == 0 {
		t.Fatalf("usage chunk %v", u)
	}
}

func TestVeniceReceipt(t *testing.T) {
	s := newServer(t)
	ask := func(model, text string, headers ...string) (*http.Response, []byte) {
		resp := post(t, s.URL()+VeniceChatPath, veniceHeaders(headers...), veniceBody(model, text, ""))
		b := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return resp, b
	}
	attest := []string{VeniceHeaderAttestation, "required", VeniceHeaderAttestationNonce, "n0nce"}

	// An attested model, asked for a receipt, gets one: signed, bound to
	// the nonce, the model and the exact body.
	for _, model := range []string{"tee-deepseek-r1", "deepseek-r1-tee", "e2ee-qwen3", "qwen3-e2ee"} {
		before := time.Now().UnixMilli()
		resp, body := ask(model, "plan the trade", attest...)
		after := time.Now().UnixMilli()
		f, sigOK := receiptOf(t, resp.Header.Get(VeniceHeaderAttestationReceipt))
		sum := sha256.Sum256(body)
		ts := int64(f["timestamp"].(float64))
		if !sigOK || f["nonce"] != "n0nce" || f["model_id"] != model || f["response_hash"] != hex.EncodeToString(sum[:]) ||
			f["debug_mode"] != false || f["enclave_measurement"] != VeniceEnclaveMeasurement || f["version"] != float64(1) ||
			ts < before || ts > after {
			t.Fatalf("%s: receipt %v (signature ok %v, body %s)", model, f, sigOK, body)
		}
	}

	// No receipt without the request header, for a private model, or when
	// the phrase says so.
	for _, c := range [][]string{{"tee-deepseek-r1", "x"}, {"llama-3.3-70b", "x", attest[0], attest[1]}, {"tee-deepseek-r1", "x " + PhraseVeniceNoReceipt, attest[0], attest[1]}} {
		if resp, _ := ask(c[0], c[1], c[2:]...); resp.Header.Get(VeniceHeaderAttestationReceipt) != "" {
			t.Fatalf("%v: unexpected receipt", c)
		}
	}

	// Each defect, alone.
	resp, _ := ask("tee-deepseek-r1", "x "+PhraseVeniceDebug, attest...)
	if f, ok := receiptOf(t, resp.Header.Get(VeniceHeaderAttestationReceipt)); !ok || f["debug_mode"] != true {
		t.Fatalf("debug receipt %v %v", f, ok)
	}
	before := time.Now().UnixMilli()
	resp, _ = ask("tee-deepseek-r1", "x "+PhraseVeniceStale+"=90s", attest...)
	after := time.Now().UnixMilli()
	if f, ok := receiptOf(t, resp.Header.Get(VeniceHeaderAttestationReceipt)); !ok ||
		int64(f["timestamp"].(float64)) < before-90_000 || int64(f["timestamp"].(float64)) > after-90_000 {
		t.Fatalf("stale receipt %v %v (asked between %d and %d)", f, ok, before, after)
	}
	resp, _ = ask("tee-deepseek-r1", "x "+PhraseVeniceBadSignature, attest...)
	if _, ok := receiptOf(t, resp.Header.Get(VeniceHeaderAttestationReceipt)); ok {
		t.Fatal("bad-signature receipt verifies")
	}
	resp, body := ask("tee-deepseek-r1", "x "+PhraseVeniceHashMismatch, attest...)
	f, ok := receiptOf(t, resp.Header.Get(VeniceHeaderAttestationReceipt))
	sum := sha256.Sum256(body)
	if !ok || f["response_hash"] == hex.EncodeToString(sum[:]) {
		t.Fatalf("hash-mismatch receipt %v %v", f, ok)
	}
}

func TestVeniceTier(t *testing.T) {
	for model, want := range map[string]string{
		"llama-3.3-70b": VeniceTierPrivate, "tee-x": VeniceTierTEE, "x-tee": VeniceTierTEE, "E2EE-x": VeniceTierE2EE,
		"x-e2ee": VeniceTierE2EE, "x:enable_web_search=on": VeniceTierPrivate, "e2ee-x:character_slug=a": VeniceTierE2EE, "steep": VeniceTierPrivate,
	} {
		if got := VeniceTier(model); got != want {
			t.Errorf("VeniceTier(%q) = %q, want %q", model, got, want)
		}
	}
}
