package pricing

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/sdk/wire"
)

// anthropicStream is a streamed Anthropic answer as the API sends it: the
// input side in message_start, the cumulative output in message_delta.
const anthropicStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4","content":[],"stop_reason":null,"usage":{"input_tokens":1200,"cache_creation_input_tokens":2000,"cache_read_input_tokens":8000,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the \"usage\": is 42"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":350}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// openaiStream is a streamed OpenAI answer with include_usage: usage null
// on every chunk, then a usage chunk, then [DONE].
const openaiStream = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}` + "\n\n" +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}` + "\n\n" +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":2048,"completion_tokens":300,"total_tokens":2348,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n" +
	"data: [DONE]\n\n"

var (
	anthropicWant = wire.Usage{InputTokens: 1200, OutputTokens: 350, CacheReadTokens: 8000, CacheWriteTokens: 2000}
	openaiWant    = wire.Usage{InputTokens: 1024, OutputTokens: 300, CacheReadTokens: 1024}
)

// feed writes s to a StreamUsage in pieces of n bytes (0: at once).
func feed(s string, n int) (wire.Usage, bool) {
	var su StreamUsage
	b := []byte(s)
	for n > 0 && len(b) > n {
		su.Write(b[:n])
		b = b[n:]
	}
	su.Write(b)
	su.Close()
	return su.Usage()
}

func TestStreamUsageEveryChunking(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         wire.Usage
	}{
		{"anthropic", anthropicStream, anthropicWant},
		{"openai", openaiStream, openaiWant},
		{"anthropic-crlf", strings.ReplaceAll(anthropicStream, "\n", "\r\n"), anthropicWant},
		{"openai-cr", strings.ReplaceAll(openaiStream, "\n", "\r"), openaiWant},
	} {
		for n := 0; n <= 64; n++ {
			u, ok := feed(tc.stream, n)
			if !ok || u != tc.want {
				t.Fatalf("%s, %d-byte writes: %+v %v, want %+v", tc.name, n, u, ok, tc.want)
			}
		}
	}
}

// The priced stream gives the same figures as the priced body: the
// README's worked examples, streamed.
func TestStreamedFiguresMatchHandComputed(t *testing.T) {
	u, _ := feed(anthropicStream, 17)
	b := NewBill(Terms{Spread: SpreadPro})
	b.Add(Served(sonnet(t), u, Optimizations{PrunedTokens: 1500, AlignedCache: true}))
	if f := b.Settle(); f.Charge != 21563 || f.Savings != 21787 {
		t.Fatalf("anthropic stream: %+v", f)
	}
	u, _ = feed(openaiStream, 5)
	b = NewBill(Terms{Spread: SpreadFree})
	b.Add(Served(mini(t), u, Optimizations{PrunedTokens: 2000}))
	if f := b.Settle(); f.Charge != 513 || f.Savings != 48 {
		t.Fatalf("openai stream: %+v", f)
	}
}

// Anthropic's message_delta may restate the input side (cumulative); a
// field it states wins, one it leaves out keeps message_start's value.
func TestAnthropicDeltaRestatesInput(t *testing.T) {
	s := strings.Replace(anthropicStream, `"usage":{"output_tokens":350}`,
		`"usage":{"input_tokens":1300,"cache_read_input_tokens":null,"output_tokens":350}`, 1)
	u, _ := feed(s, 0)
	want := anthropicWant
	want.InputTokens = 1300
	if u != want {
		t.Fatalf("%+v", u)
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	s := strings.Replace(openaiStream, `"usage":{"prompt_tokens"`, `"x":{"prompt_tokens"`, 1)
	if u, ok := feed(s, 3); ok {
		t.Fatalf("usage from a stream that has none: %+v", u)
	}
}

// A data line longer than maxLine is skipped without growing the buffer
// past it, and the stream reads on.
func TestStreamOverlongLine(t *testing.T) {
	long := "data: {\"x\":\"" + strings.Repeat("a", maxLine+10) + "\"}\n\n"
	var su StreamUsage
	su.Write([]byte(long[:maxLine/2]))
	su.Write([]byte(long[maxLine/2:]))
	su.Write([]byte(anthropicStream))
	if u, _ := su.Usage(); u != anthropicWant {
		t.Fatalf("%+v", u)
	}
	if cap(su.line) > maxLine+64*1024 {
		t.Fatalf("line buffer grew to %d", cap(su.line))
	}
}

func TestBodyUsage(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       wire.Usage
		ok         bool
	}{
		{"anthropic", `{"id":"msg_01","type":"message","content":[{"type":"text","text":"{\"usage\":{\"input_tokens\":9}}"}],"usage":{"input_tokens":1200,"cache_creation_input_tokens":2000,"cache_read_input_tokens":8000,"output_tokens":350,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":2000,"ephemeral_1h_input_tokens":0}}}`, anthropicWant, true},
		{"openai", `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":2048,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1024}}}`, openaiWant, true},
		{"openai-no-details", `{"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`, wire.Usage{InputTokens: 10, OutputTokens: 3}, true},
		{"openai-null-details", `{"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":null}}`, wire.Usage{InputTokens: 10, OutputTokens: 3}, true},
		{"openrouter-cache-write", `{"usage":{"completion_tokens":2,"prompt_tokens":194,"prompt_tokens_details":{"cached_tokens":50,"cache_write_tokens":100,"audio_tokens":0},"cost":0.95}}`, wire.Usage{InputTokens: 44, OutputTokens: 2, CacheReadTokens: 50, CacheWriteTokens: 100}, true},
		{"deepseek", `{"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":60,"prompt_cache_miss_tokens":40}}`, wire.Usage{InputTokens: 40, OutputTokens: 5, CacheReadTokens: 60}, true},
		{"cached-above-prompt", `{"usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":99}}}`, wire.Usage{CacheReadTokens: 10}, true},
		{"spaces", "{ \"usage\" : { \"prompt_tokens\" : 7 , \"completion_tokens\" : 1 } }", wire.Usage{InputTokens: 7, OutputTokens: 1}, true},
		{"no-usage", `{"id":"x","choices":[]}`, wire.Usage{}, false},
		{"usage-null", `{"usage":null}`, wire.Usage{}, false},
		{"nested-only", `{"choices":[{"usage":{"prompt_tokens":5}}]}`, wire.Usage{}, false},
		{"garbage", `not json`, wire.Usage{}, false},
	} {
		u, ok := BodyUsage([]byte(tc.body))
		if u != tc.want || ok != tc.ok {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, u, ok, tc.want, tc.ok)
		}
	}
}

// Real wire bytes from the fake upstream (both dialects, streamed and
// not, with prompt-cache reads and writes): the scanners agree with the
// dialect decoders, and a stream with its non-stream twin.
func TestAgainstFakeUpstream(t *testing.T) {
	fake := fakeupstream.New()
	defer fake.Close()
	post := func(path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, fake.URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+fakeupstream.DefaultAPIKey)
		req.Header.Set("x-api-key", fakeupstream.DefaultAPIKey)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v %s", path, resp.StatusCode, err, b)
		}
		return b
	}
	const an = `{"model":"claude-sonnet-4","max_tokens":200,%s"messages":[{"role":"user","content":"tell me about prices fake:cached=3000 fake:cache-write=500"}]}`
	body := post("/v1/messages", strings.Replace(an, "%s", "", 1))
	got, ok := BodyUsage(body)
	resp, err := anthropic.DecodeResponse(body)
	if err != nil || !ok || got != resp.Usage || got.CacheReadTokens != 3000 || got.CacheWriteTokens != 500 {
		t.Fatalf("anthropic body: %+v %v, decoder %+v %v", got, ok, resp.Usage, err)
	}
	stream := post("/v1/messages", strings.Replace(an, "%s", `"stream":true,`, 1))
	if su, ok := feed(string(stream), 13); !ok || su != got {
		t.Fatalf("anthropic stream: %+v, body %+v", su, got)
	}

	const oa = `{"model":"gpt-4o-mini",%s"messages":[{"role":"user","content":"tell me about prices fake:cached=1024"}]}`
	body = post("/v1/chat/completions", strings.Replace(oa, "%s", "", 1))
	got, ok = BodyUsage(body)
	oresp, err := openai.DecodeResponse(body)
	if err != nil || !ok || got != oresp.Usage || got.CacheReadTokens != 1024 {
		t.Fatalf("openai body: %+v %v, decoder %+v %v", got, ok, oresp.Usage, err)
	}
	stream = post("/v1/chat/completions", strings.Replace(oa, "%s", `"stream":true,"stream_options":{"include_usage":true},`, 1))
	if su, ok := feed(string(stream), 11); !ok || su != got {
		t.Fatalf("openai stream: %+v, body %+v\n%s", su, got, stream)
	}
}

// On any input the scanners never panic nor report a negative count, and
// a StreamUsage fed the same bytes in two chunkings agrees with itself.
func FuzzBodyUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":2048,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":5}}}`))
	f.Add([]byte(`{"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}`))
	f.Add([]byte(`{"usage":{"prompt_tokens":1e3,"completion_tokens":-1,"prompt_cache_hit_tokens":"7"}}`))
	f.Add([]byte(`{"usage":{"prompt_tokens_details":{"cached_tokens":{"x":[1,2]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, _ := BodyUsage(b)
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
			t.Fatalf("negative count %+v", u)
		}
	})
}

func FuzzStreamUsage(f *testing.F) {
	f.Add([]byte(anthropicStream), uint16(7))
	f.Add([]byte(openaiStream), uint16(1))
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":3}}\r\r\ndata:\r\n\n"), uint16(2))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		var whole, split StreamUsage
		whole.Write(b)
		whole.Close()
		i := int(cut) % (len(b) + 1)
		split.Write(b[:i])
		split.Write(b[i:])
		split.Close()
		u1, ok1 := whole.Usage()
		u2, ok2 := split.Usage()
		if u1 != u2 || ok1 != ok2 {
			t.Fatalf("chunking changed the result: %+v %v vs %+v %v", u1, ok1, u2, ok2)
		}
		if u1.InputTokens < 0 || u1.OutputTokens < 0 || u1.CacheReadTokens < 0 || u1.CacheWriteTokens < 0 {
			t.Fatalf("negative count %+v", u1)
		}
	})
}

// BodyUsage reads what the dialect decoders read (the decoded path and the
// passthrough path must bill the same tokens), over random usage objects:
// fields present, absent or null, cached tokens above the prompt, DeepSeek's
// hit counter, odd spacing. 5,000 of each dialect.
func TestBodyUsageMatchesDecoders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	field := func(b *strings.Builder, name string) {
		switch r.IntN(4) {
		case 0: // absent
		case 1:
			fmt.Fprintf(b, `"%s":null,`, name)
		default:
			fmt.Fprintf(b, `"%s" : %d ,`, name, r.Int64N(3_000_000))
		}
	}
	obj := func(b *strings.Builder) string { return "{" + strings.TrimSuffix(b.String(), ",") + "}" }
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for _, f := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
			field(&b, f)
		}
		b.WriteString(`"service_tier":"standard",`)
		body := `{"id":"msg_1","type":"message","content":[{"type":"text","text":"x"}],"usage":` + obj(&b) + `}`
		want, err := anthropic.DecodeResponse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got, _ := BodyUsage([]byte(body)); got != want.Usage {
			t.Fatalf("anthropic %s:\n%+v, decoder %+v", body, got, want.Usage)
		}

		b.Reset()
		field(&b, "prompt_tokens")
		field(&b, "completion_tokens")
		if r.IntN(4) == 0 {
			field(&b, "prompt_cache_hit_tokens")
		}
		if r.IntN(3) > 0 {
			var d strings.Builder
			field(&d, "cached_tokens")
			d.WriteString(`"audio_tokens":0,`)
			b.WriteString(`"prompt_tokens_details":` + obj(&d) + `,`)
		}
		body = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":` + obj(&b) + `}`
		want, err = openai.DecodeResponse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		got, _ := BodyUsage([]byte(body))
		if strings.Contains(body, `"cached_tokens":null`) && strings.Contains(body, `"prompt_cache_hit_tokens" :`) {
			// The one difference, on purpose: an explicit null
			// cached_tokens does not hide DeepSeek's hit counter here
			// (the decoder reads it as 0 cached).
			if got.CacheReadTokens == 0 && strings.Contains(body, `"prompt_tokens" :`) && !strings.Contains(body, `"prompt_cache_hit_tokens" : 0 `) {
				t.Fatalf("hit counter ignored: %s", body)
			}
			continue
		}
		if got != want.Usage {
			t.Fatalf("openai %s:\n%+v, decoder %+v", body, got, want.Usage)
		}
	}
}
