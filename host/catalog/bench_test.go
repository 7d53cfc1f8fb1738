package catalog

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/routing"
)

// catalog400 is an OpenRouter-sized catalog: 400 models with
// vendor/model ids.
func catalog400() (*Catalog, []string) {
	ms := make([]Model, 400)
	ids := make([]string, 400)
	for i := range ms {
		ids[i] = fmt.Sprintf("vendor-%02d/model-%03d-instruct", i%37, i)
		ms[i] = Model{ID: ids[i], Provider: "openrouter", ContextWindow: 128000,
			Input: PriceFromNanos(int64(i) * 1e7), Output: PriceFromNanos(int64(i) * 4e7), Features: routing.Features(routing.ToolUse)}
	}
	return NewCatalog("openrouter", ms, time.Now()), ids
}

// BenchmarkLookup400: the request path's lookup by model id, through the
// Refresher's atomic pointer, in a 400-model catalog.
func BenchmarkLookup400(b *testing.B) {
	cat, ids := catalog400()
	r, err := NewRefresher(Options{Provider: "openrouter"})
	if err != nil {
		b.Fatal(err)
	}
	r.cur.Store(cat)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m, ok := r.Catalog().Lookup(ids[i%len(ids)])
		if !ok || !m.Has(routing.Features(routing.ToolUse)) {
			b.Fatal("miss")
		}
		i++
	}
}

func BenchmarkLookup400Miss(b *testing.B) {
	cat, _ := catalog400()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := cat.Lookup("vendor-99/not-a-model"); ok {
			b.Fatal("hit")
		}
	}
}

func BenchmarkLookup400Parallel(b *testing.B) {
	cat, ids := catalog400()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok := cat.Lookup(ids[i%len(ids)]); !ok {
				b.Fatal("miss")
			}
			i++
		}
	})
}

// BenchmarkDecodeOpenRouter400: the cost of one refresh's decoding of a
// 400-model OpenRouter answer (done hourly, off the request path).
func BenchmarkDecodeOpenRouter400(b *testing.B) {
	type entry map[string]any
	data := make([]entry, 400)
	for i := range data {
		data[i] = entry{
			"id": fmt.Sprintf("vendor-%02d/model-%03d", i%37, i), "name": fmt.Sprintf("Model %d", i),
			"description":    "A model with a description of realistic length, which OpenRouter sends for every entry and the decoder has to skip over.",
			"context_length": 131072,
			"architecture":   entry{"modality": "text+image->text", "input_modalities": []string{"text", "image"}, "output_modalities": []string{"text"}},
			"pricing":        entry{"prompt": "0.0000003", "completion": "0.0000012", "input_cache_read": "0.00000003"},
			"top_provider":   entry{"context_length": 131072, "max_completion_tokens": 16384, "is_moderated": false},
			"supported_parameters": []string{"max_tokens", "temperature", "tools", "tool_choice", "reasoning",
				"structured_outputs", "response_format", "top_p", "stop", "seed"},
		}
	}
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Decode("openrouter", ShapeAuto, body)
		if err != nil || len(d.Models) != 400 {
			b.Fatal(err, len(d.Models))
		}
	}
}
