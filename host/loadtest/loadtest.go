// Package loadtest drives a running gateway with many concurrent clients and
// judges every answer: the status, a stream's end, the text (the fake
// upstream echoes the prompt, so an answer to another question is caught),
// and the headers that say a layer was skipped or a stale answer served.
// Its tests run the repository's shipped pipeline.toml under load against
// host/fakeupstream, on loopback only, for a bounded time (README.md).
package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mix is the traffic Run sends.
type Mix struct {
	Clients  int           // concurrent clients, each with its own connection
	Duration time.Duration // how long to send (0: until Requests are sent)
	Requests int           // how many requests at most (0: until Duration)
	// StreamShare is the share of clients that stream (clients alternate
	// between the OpenAI and the Anthropic dialect either way).
	StreamShare float64
	// RepeatShare is the share of requests that repeat a prompt sent
	// before (cache hits).
	RepeatShare float64
	// Prompt makes the n-th unique prompt (default: Words).
	Prompt func(n int, r *rand.Rand) string
	// Body makes a request body for a prompt (default: Simple).
	Body func(dialect Dialect, prompt string, stream bool) []byte
	// Idle pauses each client between requests, for a random half to one
	// and a half times this (0: no pause).
	Idle time.Duration
	Seed uint64
	// Keys, when set, make the run paid: client c sends Keys[c%len(Keys)]
	// as Authorization: Bearer, and every answer must show what it was
	// charged — X-Bardo-Cost on a JSON answer, the ": bardo cost=…"
	// trailer before a stream's terminal event (host/pricing) — or it is
	// an error.
	Keys []string
}

// Dialect is the API a client speaks.
type Dialect int

// The two dialects.
const (
	OpenAI Dialect = iota
	Anthropic
)

func (d Dialect) path() string {
	if d == Anthropic {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// Result counts what Run saw. Every request is exactly one of OK, Errors,
// Wrong; Stale, Skipped and the cache counts describe the OK ones.
type Result struct {
	Requests, OK, Errors, Wrong int
	Stale                       int // served from cache because every provider failed
	Skipped                     int // X-Bardo-Degraded named a skipped layer
	Streams                     int
	Paid                        int            // OK answers that showed their cost (Mix.Keys)
	Cache                       map[string]int // X-Bardo-Cache values
	TTFB                        []time.Duration
	Elapsed                     time.Duration
	Failures                    []string // the first few, for the report
}

// RPS is the requests per second over the run.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0–100) of the times to first byte.
func (r *Result) Percentile(p float64) time.Duration {
	return Percentile(r.TTFB, p)
}

// Percentile returns the p-th percentile (0–100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

// String is a one-line summary.
func (r *Result) String() string {
	return fmt.Sprintf("%d requests in %v (%.0f/s; %d streamed, %d paid): %d ok, %d errors, %d wrong, %d stale, %d layer-skipped; cache %v; TTFB p50 %v p99 %v",
		r.Requests, r.Elapsed.Round(time.Millisecond), r.RPS(), r.Streams, r.Paid, r.OK, r.Errors, r.Wrong, r.Stale, r.Skipped, r.Cache,
		r.Percentile(50).Round(10*time.Microsecond), r.Percentile(99).Round(10*time.Microsecond))
}

// Run sends mix to the gateway at base (http://127.0.0.1:port) until ctx
// ends, the duration passes or the requests are sent, and judges each answer.
func Run(ctx context.Context, base string, mix Mix) *Result {
	if mix.Prompt == nil {
		mix.Prompt = Words
	}
	if mix.Body == nil {
		mix.Body = Simple
	}
	if mix.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, mix.Duration)
		defer cancel()
	}
	tr := &http.Transport{MaxIdleConnsPerHost: mix.Clients, MaxConnsPerHost: mix.Clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}

	var (
		mu      sync.Mutex
		res     = &Result{Cache: map[string]int{}}
		sent    []string // prompts answered, for repeats
		next    atomic.Int64
		uniques atomic.Int64
	)
	note := func(o outcome) {
		mu.Lock()
		defer mu.Unlock()
		res.Requests++
		if o.stream {
			res.Streams++
		}
		switch {
		case o.err != "":
			res.Errors++
		case o.wrong != "":
			res.Wrong++
		default:
			res.OK++
			res.TTFB = append(res.TTFB, o.ttfb)
			res.Cache[o.cache]++
			if o.stale {
				res.Stale++
			}
			if o.skipped {
				res.Skipped++
			}
			if o.paid {
				res.Paid++
			}
			if o.cache == "miss" && len(sent) < 4096 {
				sent = append(sent, o.prompt)
			}
		}
		if msg := o.err + o.wrong; msg != "" && len(res.Failures) < 10 {
			res.Failures = append(res.Failures, msg)
		}
	}
	pick := func(r *rand.Rand) string {
		mu.Lock()
		defer mu.Unlock()
		if len(sent) == 0 || r.Float64() >= mix.RepeatShare {
			return ""
		}
		return sent[r.IntN(len(sent))]
	}

	began := time.Now()
	var wg sync.WaitGroup
	for c := range mix.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(mix.Seed, uint64(c)))
			stream := float64(c) < mix.StreamShare*float64(mix.Clients)
			dialect := Dialect(c % 2)
			key := ""
			if len(mix.Keys) > 0 {
				key = mix.Keys[c%len(mix.Keys)]
			}
			for ctx.Err() == nil {
				if mix.Requests > 0 && next.Add(1) > int64(mix.Requests) {
					return
				}
				prompt := pick(r)
				if prompt == "" {
					prompt = mix.Prompt(int(uniques.Add(1)), r)
				}
				note(ask(ctx, client, base, key, dialect, prompt, stream, mix.Body(dialect, prompt, stream)))
				if mix.Idle > 0 {
					select {
					case <-time.After(mix.Idle/2 + time.Duration(r.Int64N(int64(mix.Idle)))):
					case <-ctx.Done():
					}
				}
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(began)
	return res
}

// outcome is one request's verdict.
type outcome struct {
	prompt         string
	stream         bool
	err, wrong     string
	cache          string
	stale, skipped bool
	paid           bool // the answer showed its cost
	ttfb           time.Duration
}

// ask sends one request (paid with key when it is not "") and judges its
// answer: the fake upstream answers "echo: <prompt>", and so must every
// cache hit of that prompt; a paid answer must show its cost.
func ask(ctx context.Context, client *http.Client, base, key string, d Dialect, prompt string, stream bool, body []byte) (o outcome) {
	o.prompt, o.stream = prompt, stream
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), "POST", base+d.path(), bytes.NewReader(body))
	if err != nil {
		o.err = err.Error()
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	if d == Anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	st := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		o.err = "transport: " + err.Error()
		return o
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err != nil {
		o.err = fmt.Sprintf("status %d, no body: %v", resp.StatusCode, err)
		return o
	}
	o.ttfb = time.Since(st)
	b, err := io.ReadAll(br)
	rid := resp.Header.Get("X-Bardo-Request-Id")
	switch {
	case err != nil:
		o.err = fmt.Sprintf("%s: reading the body: %v", rid, err)
		return o
	case resp.StatusCode != 200:
		o.err = fmt.Sprintf("%s: status %d: %.300s", rid, resp.StatusCode, b)
		return o
	}
	o.cache = resp.Header.Get("X-Bardo-Cache")
	o.stale = o.cache == "stale" || strings.Contains(resp.Header.Get("X-Bardo-Fallback"), "cache:stale")
	o.skipped = strings.Contains(resp.Header.Get("X-Bardo-Degraded"), "layer-skipped")
	var text string
	if stream {
		text, o.paid, err = streamText(d, b)
	} else {
		text, err = jsonText(d, b)
		o.paid = resp.Header.Get("X-Bardo-Cost") != ""
	}
	if err != nil {
		o.err = fmt.Sprintf("%s (%s, cache %s): %v: %.300s", rid, d.path(), o.cache, err, b)
		return o
	}
	if key != "" && !o.paid {
		o.err = fmt.Sprintf("%s (%s, stream %v, cache %s): a paid answer without its cost (X-Bardo-Cost or the stream's trailer)", rid, d.path(), stream, o.cache)
		return o
	}
	if want := "echo: " + prompt; text != want {
		o.wrong = fmt.Sprintf("%s (cache %s %s): asked %q, answered %q", rid, o.cache, resp.Header.Get("X-Bardo-Cache-Similarity"), prompt, text)
	}
	return o
}

func jsonText(d Dialect, b []byte) (string, error) {
	var m struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	if d == OpenAI {
		if len(m.Choices) == 0 {
			return "", fmt.Errorf("no choices")
		}
		return m.Choices[0].Message.Content, nil
	}
	var s strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			s.WriteString(c.Text)
		}
	}
	return s.String(), nil
}

// streamText checks a stream ends with its dialect's end marker, with no
// error event, and returns its text and whether the ": bardo cost=…"
// trailer came before the end marker.
func streamText(d Dialect, b []byte) (string, bool, error) {
	var text strings.Builder
	var last, event string
	trailer, ended := false, false
	// The body is in memory already: its lines are read in place. (A
	// bufio.Scanner with a 1 MiB buffer here made 1 MiB of garbage a
	// streamed answer, more than the gateway under test allocates, in the
	// gateway's own process.)
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case strings.HasPrefix(line, ": bardo cost="):
			trailer = trailer || !ended
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
			if event == "error" {
				return "", false, fmt.Errorf("error event")
			}
			ended = ended || event == "message_stop"
		case strings.HasPrefix(line, "data: "):
			data := line[6:]
			last = event + "|" + data
			if data == "[DONE]" {
				ended = true
				continue
			}
			var m struct {
				Error   json.RawMessage `json:"error"`
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Delta struct {
					Text string `json:"text"`
				} `json:"delta"`
			}
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				return "", false, fmt.Errorf("undecodable event %q: %w", data, err)
			}
			if len(m.Error) > 0 {
				return "", false, fmt.Errorf("error in the stream")
			}
			for _, c := range m.Choices {
				text.WriteString(c.Delta.Content)
			}
			text.WriteString(m.Delta.Text)
		case line == "":
			event = ""
		}
	}
	if d == OpenAI && last != "|[DONE]" || d == Anthropic && !strings.HasPrefix(last, "message_stop|") {
		return "", false, fmt.Errorf("the stream did not end with its end marker (last %q)", last)
	}
	return text.String(), trailer, nil
}

// Simple is a one-message request in the dialect.
func Simple(d Dialect, prompt string, stream bool) []byte {
	q, _ := json.Marshal(prompt)
	s := strconv.FormatBool(stream)
	if d == Anthropic {
		return []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":` + s + `,"messages":[{"role":"user","content":` + string(q) + `}]}`)
	}
	return []byte(`{"model":"gpt-4o","stream":` + s + `,"messages":[{"role":"user","content":` + string(q) + `}]}`)
}

// vocabulary is plain English an assistant is asked about.
var vocabulary = strings.Fields(`
account address agent answer api apple balance bank battery bitcoin book bridge budget buffer build cache camera
car castle cat chain chart cheese city cloud coffee color compiler contract cookie country crypto data database
deploy design desert dinner doctor dog dream engine error exchange family farm fee file film fish flower forest
friend function game garden gas gold graph guitar hammer harbor health history horse hotel house index island
kernel key kitchen ladder lake language lamp law leaf letter library light liquidity loan lock machine map market
memory message metal method mirror model money moon mountain museum music network night ocean oracle orbit
paint paper party password pattern piano picture pipeline planet plant pocket poem pool port price printer
process protocol queue rain record recipe river road robot rocket roof router rule salt sand satellite school
science screen sea season server shadow ship shoe signal silver sky snow socket software song space spring star
station stock stone storm stream street string sugar summer sun swap system table teacher telescope tent test
theory thread ticket token tool tower town track trade train tree truck tunnel valley vault village violin
voice volcano wallet watch water wave weather wheel window wine winter wire wolf wood word world yield`)

var verbs = []string{"Explain", "Describe", "Compare", "Summarise", "List facts about", "Write a note on", "What is known about", "How would you test"}

// Words is a unique question of random plain words (n keeps it unique).
func Words(n int, r *rand.Rand) string {
	var b strings.Builder
	b.WriteString(verbs[r.IntN(len(verbs))])
	for range 6 {
		b.WriteByte(' ')
		b.WriteString(vocabulary[r.IntN(len(vocabulary))])
	}
	fmt.Fprintf(&b, " (case %d)", n)
	return b.String()
}
