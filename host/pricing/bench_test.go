package pricing

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkPriceRequest prices one request end to end: prices from the
// catalog entry (conventions applied), one served outcome, settle, and the
// two header values.
func BenchmarkPriceRequest(b *testing.B) {
	m := catalog.Model{ID: "claude-sonnet-4", Input: price(b, "3"), Output: price(b, "15")}
	u := wire.Usage{InputTokens: 1200, OutputTokens: 350, CacheReadTokens: 8000, CacheWriteTokens: 2000}
	opt := Optimizations{PrunedTokens: 1500, AlignedCache: true}
	var buf [64]byte
	b.ReportAllocs()
	for b.Loop() {
		bill := NewBill(Terms{Spread: SpreadPro})
		bill.Add(Served(PricesOf(&m, Anthropic), u, opt))
		f := bill.Settle()
		_ = AppendUSD(AppendUSD(buf[:0], f.Charge), f.Savings)
	}
}

// body4K is a 4 KB OpenAI answer with its usage at the end, where the API
// puts it.
var body4K = func() []byte {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 88)
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2048,"completion_tokens":300,"total_tokens":2348,"prompt_tokens_details":{"cached_tokens":1024}}}`)
}()

func BenchmarkBodyUsage4K(b *testing.B) {
	b.SetBytes(int64(len(body4K)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := BodyUsage(body4K); !ok {
			b.Fatal("no usage")
		}
	}
}

// stream4K is a ~4 KB streamed Anthropic answer: message_start, many
// text deltas, message_delta.
var stream4K = func() []byte {
	var s strings.Builder
	s.WriteString(anthropicStream[:strings.Index(anthropicStream, "event: content_block_delta")])
	for s.Len() < 3800 {
		s.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lorem ipsum dolor\"}}\n\n")
	}
	s.WriteString(anthropicStream[strings.Index(anthropicStream, "event: content_block_stop"):])
	return []byte(s.String())
}()

// BenchmarkStreamUsage4K writes the stream in 256-byte pieces, as a
// passthrough copy loop would.
func BenchmarkStreamUsage4K(b *testing.B) {
	b.SetBytes(int64(len(stream4K)))
	b.ReportAllocs()
	var su StreamUsage
	for b.Loop() {
		su.Reset()
		for p := stream4K; len(p) > 0; {
			n := min(256, len(p))
			su.Write(p[:n])
			p = p[n:]
		}
		su.Close()
		if u, _ := su.Usage(); u != anthropicWant {
			b.Fatal(u)
		}
	}
}

func BenchmarkTrailer(b *testing.B) {
	tr := Trailer{Figures: Figures{Charge: 21563, Savings: 21787}, Balance: 4_978_437, HasBalance: true, RemainingTokens: 98765, HasRemaining: true}
	var buf [128]byte
	b.ReportAllocs()
	for b.Loop() {
		_ = tr.Append(buf[:0])
	}
}
