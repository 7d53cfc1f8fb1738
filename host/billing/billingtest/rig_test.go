package billingtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
)

// upKey is the fake upstream's key: only the gateway knows it.
const upKey = "sk-billingtest-upstream-secret-0123456789"

// providersTOML routes gpt-* to an OpenAI-compatible upstream ("up") and
// claude-* to an Anthropic one ("claude"), both the fake at fakeURL, with
// static prices (USD per million tokens) the tests compute by hand:
//
//	gpt-4o-mini        0.15 in, 0.60 out, 0.075 cached
//	gpt-4o             2.50 in, 10 out
//	claude-opus-4-1    15 in, 75 out, 1.50 read, 18.75 write
//	claude-sonnet-4-5  3 in, 15 out, 0.30 read, 3.75 write
//	claude-haiku-4-5   1 in, 5 out, 0.10 read, 1.25 write
func providersTOML(fakeURL string) string {
	return `
[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "` + fakeURL + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true

[[provider.model]]
id = "gpt-4o-mini"
input_price = "0.15"
output_price = "0.60"
cache_read_price = "0.075"
features = ["tool_use"]

[[provider.model]]
id = "gpt-4o"
input_price = "2.50"
output_price = "10"
cache_read_price = "1.25"
features = ["tool_use"]

[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + fakeURL + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true

[[provider.model]]
id = "claude-opus-4-1"
input_price = "15"
output_price = "75"
cache_read_price = "1.50"
cache_write_price = "18.75"
features = ["tool_use"]

[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
cache_read_price = "0.30"
cache_write_price = "3.75"
max_output = 64000
features = ["tool_use"]

[[provider.model]]
id = "claude-haiku-4-5"
input_price = "1"
output_price = "5"
cache_read_price = "0.10"
cache_write_price = "1.25"
features = ["tool_use"]
`
}

// keysTOML turns on key admission (and so billing) over dataDir.
func keysTOML(dataDir string) string {
	return "\n[auth]\nmode = \"keys\"\n\n[storage]\ndata_dir = \"" + dataDir + "\"\n"
}

// usdMicros parses a USD figure of a header or trailer into micro-USD.
func usdMicros(tb testing.TB, s string) int64 {
	tb.Helper()
	m, err := pricing.ParseUSD(s)
	if err != nil {
		tb.Errorf("figure %q: %v", s, err)
	}
	return int64(m)
}

// fmtUSD writes micro-USD as the headers do ("0.021563", "-0.002813").
func fmtUSD(m int64) string { return pricing.Micros(m).String() }

// data is the gateway's data directory, opened as the operator's CLI
// opens it (also while the gateway runs).
type data struct {
	dir  string
	st   *sqlite.Store
	auth *auth.Authenticator
	// sync, when set, waits until the running gateway's meter has
	// committed every settlement closed so far: with the settlement
	// journal a bill is shown before its SQLite commit.
	sync func(context.Context) error
}

// settled waits (bounded) for the meter's commits before a read.
func (d *data) settled(tb testing.TB) {
	tb.Helper()
	if d.sync == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.sync(ctx); err != nil {
		tb.Fatalf("the meter did not commit its settlements: %v", err)
	}
}

func openData(tb testing.TB, dir string) *data {
	tb.Helper()
	secret, err := auth.LoadSecret(dir)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return &data{dir: dir, st: s, auth: auth.New(s, secret, auth.Options{Accounts: s})}
}

// account is an account with one key.
type account struct {
	id, key, keyID string
}

// newAccount creates an account of tier topped up with balance (micro-USD)
// and a key on it, as `bardo accounts create`, `topup` and `bardo keys
// create` do.
func (d *data) newAccount(tb testing.TB, id string, tier store.Tier, balance int64, spec auth.KeySpec) account {
	tb.Helper()
	c := context.Background()
	if _, err := d.st.CreateAccount(c, store.Account{ID: id, Name: id, Tier: tier}); err != nil {
		tb.Fatal(err)
	}
	if balance > 0 {
		if _, err := d.st.TopUp(c, id, balance, "test top-up"); err != nil {
			tb.Fatal(err)
		}
	}
	if spec.Name == "" {
		spec.Name = id
	}
	token, k, err := d.auth.Create(c, id, spec)
	if err != nil {
		tb.Fatal(err)
	}
	return account{id: id, key: token, keyID: k.ID}
}

// usage returns every usage record of an account, by request id.
func (d *data) usage(tb testing.TB, acct string) map[string][]store.Usage {
	tb.Helper()
	d.settled(tb)
	out := map[string][]store.Usage{}
	q := store.UsageQuery{AccountID: acct, Limit: 500}
	for range 10_000 {
		p, err := d.st.Usage(context.Background(), q)
		if err != nil {
			tb.Fatal(err)
		}
		for _, u := range p.Records {
			out[u.RequestID] = append(out[u.RequestID], u)
		}
		if p.Next == "" {
			return out
		}
		q.Cursor = p.Next
	}
	tb.Fatal("usage pages do not end")
	return nil
}

// ledger is what an account's ledger says.
type ledger struct {
	balance int64 // the account row's posted balance
	topUps  int64 // Σ top-up entries
	charges int64 // Σ −amount of charge entries
	entries int
	// lowest is the lowest running balance over the entries in order.
	lowest int64
	// states are the balances the account passed through, entry by entry.
	states map[int64]bool
}

// ledger audits an account (store.Audit) and sums its entries, checking
// that the running balance never went below zero and that the account's
// balance is the sum of its entries.
func (d *data) ledger(tb testing.TB, acct string) ledger {
	tb.Helper()
	d.settled(tb)
	c := context.Background()
	if err := d.st.Audit(c, acct); err != nil {
		tb.Errorf("audit of %s: %v", acct, err)
	}
	a, err := d.st.Account(c, acct)
	if err != nil {
		tb.Fatal(err)
	}
	l := ledger{balance: a.Balance, states: map[int64]bool{}}
	var run int64
	after := int64(0)
	for range 10_000 {
		es, err := d.st.Entries(c, acct, after, 1000)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range es {
			l.entries++
			run += e.Amount
			l.lowest = min(l.lowest, run)
			l.states[run] = true
			switch e.Kind {
			case store.EntryTopUp:
				l.topUps += e.Amount
			case store.EntryCharge:
				l.charges -= e.Amount
			case store.EntryAdjustment:
				tb.Errorf("%s: an adjustment entry %+v in a test that made none", acct, e)
			}
			after = e.Seq
		}
		if len(es) < 1000 {
			break
		}
	}
	if run != a.Balance {
		tb.Errorf("%s: balance %d, its entries sum to %d", acct, a.Balance, run)
	}
	if l.lowest < 0 || a.Balance < 0 {
		tb.Errorf("%s: the balance went negative (lowest %d, now %d)", acct, l.lowest, a.Balance)
	}
	return l
}

// dialect is the API a request speaks.
type dialect int

const (
	openAI dialect = iota
	anthropicD
)

func (d dialect) String() string {
	if d == anthropicD {
		return "anthropic"
	}
	return "openai"
}

func (d dialect) path() string {
	if d == anthropicD {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// call is one request.
type call struct {
	dialect   dialect
	model     string
	prompt    string
	stream    bool
	maxTokens int      // 0: none sent (OpenAI) or 1024 (Anthropic, where it is required)
	header    []string // name/value pairs
}

func (c call) body() []byte {
	msgs, _ := json.Marshal([]map[string]string{{"role": "user", "content": c.prompt}})
	var b strings.Builder
	b.WriteString(`{"model":` + strconv.Quote(c.model) + `,"stream":` + strconv.FormatBool(c.stream))
	mt := c.maxTokens
	if mt == 0 && c.dialect == anthropicD {
		mt = 1024
	}
	if mt > 0 {
		b.WriteString(`,"max_tokens":` + strconv.Itoa(mt))
	}
	b.WriteString(`,"messages":` + string(msgs) + `}`)
	return []byte(b.String())
}

// answer is what the caller got.
type answer struct {
	status int
	header http.Header
	body   []byte
	id     string // X-Bardo-Request-Id
	text   string
	err    error // transport or read error (a broken stream)

	// A stream's trailer, and whether the terminal event ([DONE],
	// message_stop) came, and after the trailer.
	trailer       pricing.StreamFigures
	hasTrailer    bool
	ended         bool
	trailerBefore bool // the trailer came before the terminal event
}

// shown reports whether the caller saw what it was charged: a stream's
// trailer, or a JSON answer's X-Bardo-Cost (its headers arrived, even if
// its body was then cut).
func (a answer) shown() bool {
	return a.hasTrailer || a.status == 200 && !isStream(a.header) && a.header.Get("X-Bardo-Cost") != ""
}

func isStream(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
}

// cost returns the figures the caller was shown: the headers of a JSON
// answer, the trailer of a stream.
func (a answer) cost() (cost, savings, balance string) {
	if a.hasTrailer {
		return a.trailer.Cost, a.trailer.Savings, a.trailer.Balance
	}
	return a.header.Get("X-Bardo-Cost"), a.header.Get("X-Bardo-Savings"), a.header.Get("X-Bardo-Balance")
}

// send posts c with key to the gateway at base and reads the answer; a
// stream is read line by line, its trailer and terminal event noted.
func send(ctx context.Context, client *http.Client, base, key string, c call) answer {
	req, err := http.NewRequestWithContext(ctx, "POST", base+c.dialect.path(), bytes.NewReader(c.body()))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.dialect == anthropicD {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, id: resp.Header.Get("X-Bardo-Request-Id")}
	if !c.stream || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		a.body, a.err = io.ReadAll(resp.Body)
		if a.err == nil && a.status == 200 {
			a.text, a.err = jsonText(c.dialect, a.body)
		}
		return a
	}
	var body bytes.Buffer
	var text strings.Builder
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		body.WriteString(line)
		if f, ok := pricing.ParseTrailer(line); ok {
			a.trailer, a.hasTrailer = f, true
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			if data == "[DONE]" || strings.Contains(data, `"type":"message_stop"`) {
				a.ended, a.trailerBefore = true, a.hasTrailer
			} else {
				text.WriteString(deltaText(data))
			}
		}
		if err != nil {
			if err != io.EOF {
				a.err = err
			}
			break
		}
	}
	a.body, a.text = body.Bytes(), text.String()
	if !a.ended && a.err == nil {
		a.err = fmt.Errorf("the stream ended without its terminal event")
	}
	return a
}

func jsonText(d dialect, b []byte) (string, error) {
	var m struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%v: %.200s", err, b)
	}
	var s strings.Builder
	for _, c := range m.Choices {
		s.WriteString(c.Message.Content)
	}
	for _, c := range m.Content {
		s.WriteString(c.Text)
	}
	return s.String(), nil
}

func deltaText(data string) string {
	var m struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Delta struct {
			Text string `json:"text"`
		} `json:"delta"`
	}
	if json.Unmarshal([]byte(data), &m) != nil {
		return ""
	}
	var s strings.Builder
	for _, c := range m.Choices {
		s.WriteString(c.Delta.Content)
	}
	s.WriteString(m.Delta.Text)
	return s.String()
}

// httpClient is a client for many concurrent requests to one gateway.
func httpClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true},
		Timeout:   time.Minute,
	}
}

// checkFigures checks what the caller was shown against its usage record:
// X-Bardo-Cost (or the trailer's cost) is the record's charge, savings its
// savings.
func checkFigures(tb testing.TB, what string, a answer, u store.Usage) {
	tb.Helper()
	cost, savings, _ := a.cost()
	if cost != fmtUSD(u.Charge) {
		tb.Errorf("%s %s: shown cost %q, the record charged %s (cost %d µUSD)", what, a.id, cost, fmtUSD(u.Charge), u.Cost)
	}
	if savings != fmtUSD(u.Savings) {
		tb.Errorf("%s %s: shown savings %q, the record saved %s", what, a.id, savings, fmtUSD(u.Savings))
	}
}
