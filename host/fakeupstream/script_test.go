package fakeupstream

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func chatWith(text string, stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model": "m", "stream": stream, "max_tokens": 1000,
		"messages": []map[string]any{{"role": "user", "content": text}},
	})
	return string(b)
}

func TestParsePhrases(t *testing.T) {
	b, ok := parsePhrases("hi fake:tool=lookup fake:thinking fake:latency=20ms fake:drip=3ms fake:cut=4 fake:cached=10 fake:bogus")
	want := Behaviour{ToolCall: true, ToolName: "lookup", Thinking: true, Latency: 20 * time.Millisecond,
		ChunkDelay: 3 * time.Millisecond, CutStream: true, CutAfter: 4, CacheRead: 10}
	if !ok || b != want {
		t.Fatalf("got %+v, want %+v", b, want)
	}
	if b, _ := parsePhrases("fake:status=429 fake:retry-after=7 fake:malformed"); b != (Behaviour{Status: 429, RetryAfter: 7, MalformedChunk: true, MalformedAfter: 2}) {
		t.Fatalf("got %+v", b)
	}
	if b, _ := parsePhrases("fake:overloaded fake:cut"); b != (Behaviour{Status: 529, CutStream: true, CutAfter: 2}) {
		t.Fatalf("got %+v", b)
	}
	if _, ok := parsePhrases("plain text, fake:unknown"); ok {
		t.Fatal("no known phrase should give ok=false")
	}
}

func TestCombine(t *testing.T) {
	got := Combine(Thinking(), Latency(time.Second), CutAfter(0), Reply("x"), Latency(2*time.Second))
	want := Behaviour{Thinking: true, Latency: 2 * time.Second, CutStream: true, Text: "x"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestScriptQueue(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1/chat/completions"
	s.Script(Fail(500), Reply("second"))
	if s.Pending() != 2 {
		t.Fatalf("pending %d", s.Pending())
	}
	// A request rejected by auth does not consume the script.
	jsonBody(t, post(t, url, nil, chatWith("x", false)), http.StatusUnauthorized)
	// The script takes precedence over a magic phrase.
	jsonBody(t, post(t, url, openAIHeaders(), chatWith("fake:tool", false)), http.StatusInternalServerError)
	m := jsonBody(t, post(t, url, openAIHeaders(), chatWith("first", false)), http.StatusOK)
	if str(t, m, "choices", 0, "message", "content") != "second" {
		t.Fatalf("scripted reply %v", m["choices"])
	}
	m = jsonBody(t, post(t, url, openAIHeaders(), chatWith("third", false)), http.StatusOK)
	if str(t, m, "choices", 0, "message", "content") != "echo: third" || s.Pending() != 0 {
		t.Fatalf("default reply %v", m["choices"])
	}
}

func TestDefaultBehaviourOption(t *testing.T) {
	s := newServer(t, WithDefaultBehaviour(Reply("always")))
	m := jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith("x", false)), http.StatusOK)
	if str(t, m, "choices", 0, "message", "content") != "always" {
		t.Fatalf("reply %v", m["choices"])
	}
}

func TestErrorStatuses(t *testing.T) {
	s := newServer(t)
	cases := []struct {
		status             int
		openAIType, anType string
	}{
		{429, "requests", "rate_limit_error"},
		{500, "server_error", "api_error"},
		{502, "cf_bad_gateway", "api_error"},
		{503, "server_error", "api_error"},
		{529, "server_error", "overloaded_error"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			// OpenAI, selected by magic phrase.
			resp := post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith(fmt.Sprintf("hi fake:status=%d fake:retry-after=3", c.status), true))
			e := obj(t, jsonBody(t, resp, c.status), "error")
			if str(t, e, "type") != c.openAIType {
				t.Errorf("OpenAI error %v", e)
			}
			if resp.Header.Get("retry-after") != "3" {
				t.Errorf("OpenAI retry-after %q", resp.Header.Get("retry-after"))
			}
			if c.status == 429 && str(t, e, "code") != "rate_limit_exceeded" {
				t.Errorf("OpenAI 429 code %v", e)
			}
			// Anthropic, selected by script.
			s.Script(Fail(c.status))
			resp = post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi", true))
			m := jsonBody(t, resp, c.status)
			if str(t, m, "type") != "error" || str(t, m, "error", "type") != c.anType {
				t.Errorf("Anthropic error %v", m)
			}
			wantRetry := ""
			if c.status == 429 {
				wantRetry = "0"
			}
			if got := resp.Header.Get("retry-after"); got != wantRetry {
				t.Errorf("Anthropic retry-after %q, want %q", got, wantRetry)
			}
		})
	}
	s.Script(RateLimited(12))
	resp := post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi", false))
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "12" {
		t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("retry-after"))
	}
	s.Script(Overloaded())
	if m := jsonBody(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi", false)), 529); str(t, m, "error", "message") != "Overloaded" {
		t.Fatalf("overloaded body %v", m)
	}
}

func TestLatencyAndDrip(t *testing.T) {
	s := newServer(t)
	start := time.Now()
	jsonBody(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith("slow fake:latency=150ms", false)), http.StatusOK)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("answered after %v", d)
	}

	s.Script(Drip(20 * time.Millisecond))
	resp := post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("one two three four five six seven eight nine", true))
	// Headers arrive before the drip; frames then arrive spaced out.
	start = time.Now()
	events := sse(t, resp)
	if d, min := time.Since(start), time.Duration(len(events)-1)*20*time.Millisecond; d < min {
		t.Fatalf("%d frames in %v, want at least %v", len(events), d, min)
	}
}

// A held stream sends its first frame, then nothing until the hold is
// released; the rest then follows, complete.
func TestHold(t *testing.T) {
	s := newServer(t)
	hold := make(chan struct{})
	s.Script(Behaviour{Hold: hold})
	resp := post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith("one two three four five six", true))
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "data: ") {
		t.Fatalf("first frame %q, %v", first, err)
	}
	br.ReadString('\n') // the frame's blank line
	got := make(chan string, 1)
	go func() {
		rest, _ := io.ReadAll(br)
		got <- string(rest)
	}()
	select {
	case rest := <-got:
		t.Fatalf("the stream went on while held: %q", rest)
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	events, err := ParseSSE(strings.NewReader(first + "\n" + <-got))
	if err != nil || events[len(events)-1].Data != "[DONE]" {
		t.Fatalf("after the hold: %v, %v", events, err)
	}
}

func TestCutStream(t *testing.T) {
	s := newServer(t)
	resp := post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith("a b c d e f g h i j k l fake:cut=3", true))
	events, err := ParseSSE(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error %v, want unexpected EOF", err)
	}
	if len(events) != 3 || slices.ContainsFunc(events, func(e Event) bool { return e.Data == "[DONE]" }) {
		t.Fatalf("events %v", events)
	}
	for _, e := range events {
		decodeData(t, e)
	}

	s.Script(CutAfter(4))
	resp = post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi", true))
	events, err = ParseSSE(resp.Body)
	if err == nil || len(events) != 4 || events[0].Event != "message_start" {
		t.Fatalf("events %v, err %v", events, err)
	}

	// A cut that would fall after the last frame still withholds the end.
	s.Script(CutAfter(1000))
	resp = post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi", true))
	events, err = ParseSSE(resp.Body)
	if err == nil || events[len(events)-1].Event != "message_delta" {
		t.Fatalf("events %v, err %v", events, err)
	}

	// Non-stream: the body stops halfway.
	s.Script(CutAfter(0))
	resp = post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith("hi", false))
	if _, err := io.ReadAll(resp.Body); resp.StatusCode != 200 || err == nil {
		t.Fatalf("status %d, read error %v", resp.StatusCode, err)
	}
}

func TestMalformedChunk(t *testing.T) {
	s := newServer(t)
	check := func(events []Event, end string) {
		t.Helper()
		bad := 0
		for i, e := range events {
			if e.Data != "[DONE]" && !json.Valid([]byte(e.Data)) {
				bad++
				if i == 0 || i == len(events)-1 {
					t.Errorf("malformed frame at the edge (%d)", i)
				}
			}
		}
		if bad != 1 {
			t.Fatalf("%d malformed frames in %v", bad, events)
		}
		if last := events[len(events)-1]; last.Data != end && last.Event != end {
			t.Fatalf("stream ends with %v", last)
		}
	}
	check(sse(t, post(t, s.URL()+"/v1/chat/completions", openAIHeaders(), chatWith("hi there fake:malformed=2", true))), "[DONE]")
	s.Script(MalformedAfter(3))
	check(sse(t, post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi there", true))), "message_stop")

	s.Script(MalformedAfter(0))
	resp := post(t, s.URL()+"/v1/messages", anthropicHeaders(), chatWith("hi", false))
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || json.Valid(b) {
		t.Fatalf("status %d body %q err %v", resp.StatusCode, b, err)
	}
}

func TestRecording(t *testing.T) {
	s := newServer(t)
	raw := "{ \"model\" :\"m\",\n\"messages\":[{\"role\":\"user\",\"content\":\"secret \\u00e9\"}] }"
	h := openAIHeaders()
	h["X-Trace"] = "abc"
	post(t, s.URL()+"/v1/chat/completions?x=1", h, raw)
	post(t, s.URL()+"/v1/messages", map[string]string{"x-api-key": "bad"}, `{}`)
	do(t, http.MethodGet, s.URL()+"/v1/models", h, "")

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.RawQuery != "x=1" || string(r.Body) != raw ||
		r.Header.Get("X-Trace") != "abc" || r.Header.Get("Authorization") != "Bearer "+DefaultAPIKey || r.Time.IsZero() {
		t.Fatalf("recorded %+v", r)
	}
	if reqs[1].Path != "/v1/messages" || reqs[1].Header.Get("x-api-key") != "bad" {
		t.Fatalf("rejected request not recorded: %+v", reqs[1])
	}
	if last := s.Last(); last.Method != "GET" || last.Path != "/v1/models" {
		t.Fatalf("last %+v", last)
	}
	// Returned copies cannot alter the record.
	reqs[0].Body[0] = 'X'
	reqs[0].Header.Set("X-Trace", "changed")
	if r := s.Requests()[0]; string(r.Body) != raw || r.Header.Get("X-Trace") != "abc" {
		t.Fatal("record was mutated through a copy")
	}
	if want := map[string]int{"/v1/chat/completions": 1, "/v1/messages": 1, "/v1/models": 1}; fmt.Sprint(s.Counts()) != fmt.Sprint(want) {
		t.Fatalf("counts %v", s.Counts())
	}

	s.Script(Reply("unused"))
	s.Reset()
	if len(s.Requests()) != 0 || s.Count("/v1/models") != 0 || s.Pending() != 0 || s.Last().Method != "" {
		t.Fatal("Reset left state behind")
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := newServer(t)
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(chatWith(fmt.Sprint(i), i%2 == 0)))
			req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
			resp, err := http.DefaultClient.Do(req)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if s.Count("/v1/chat/completions") != n || len(s.Requests()) != n {
		t.Fatalf("counted %d, recorded %d", s.Count("/v1/chat/completions"), len(s.Requests()))
	}
}

func TestCloseDoesNotWaitForLatency(t *testing.T) {
	s := New()
	s.Script(Latency(time.Minute))
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(chatWith("x", false)))
		req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	// Wait until the request is in the handler, which records it first.
	for deadline := time.Now().Add(5 * time.Second); s.Count("/v1/chat/completions") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("request never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); s.Pending() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("script never consumed")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// BenchmarkDirectChatCompletion measures a client calling the fake directly
// (non-stream), the baseline for gateway benchmarks.
func BenchmarkDirectChatCompletion(b *testing.B) {
	s := newServer(b)
	body := chatWith("benchmark prompt of a realistic but modest size, a sentence or two long.", false)
	client := &http.Client{}
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	s.Reset() // keep the recording from growing across benchmark rounds
}
