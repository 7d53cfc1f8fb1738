// Package x402test is a fake BlockRun: an OpenAI-compatible API that is paid
// per request with x402, for testing the gateway's paying side.
//
// Like BlockRun it serves GET /v1/models (a free catalog with per-million
// token prices) and POST /v1/chat/completions, buffered and as server-sent
// events, in OpenAI's wire format. A chat completion costs what BlockRun
// charges up front: the estimated prompt tokens plus max_tokens (1024 when
// absent) at the model's prices, plus 5%, at least 0.001 USDC; models priced
// at zero are free and need no payment. Without a valid payment the answer
// is 402 with real x402 requirements (v2 PAYMENT-REQUIRED header by default,
// or a v1 JSON body); the payment is checked with x402.Verifier (signature,
// amount, payTo, network and token through the EIP-712 domain, time window,
// nonce replay) and a refusal is a 402 again, naming the x402 error code.
// A paid answer carries PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1).
//
// There is no chain: "settling" records the payment in Settlements and
// invents a transaction hash. Failure lets a test make the server fail after
// accepting a payment, fail to settle, settle and then fail, or cut a stream.
//
// The server listens on 127.0.0.1 only.
package x402test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/x402"
)

// Model is a catalog entry; prices are USD per million tokens.
type Model struct {
	ID         string
	OwnedBy    string
	InputPerM  float64
	OutputPerM float64
	Context    int
}

// DefaultModels is a slice of BlockRun's catalog, with its prices.
var DefaultModels = []Model{
	{ID: "openai/gpt-4o", OwnedBy: "openai", InputPerM: 2.5, OutputPerM: 10, Context: 128000},
	{ID: "openai/gpt-4o-mini", OwnedBy: "openai", InputPerM: 0.15, OutputPerM: 0.6, Context: 128000},
	{ID: "anthropic/claude-sonnet-4.6", OwnedBy: "anthropic", InputPerM: 3, OutputPerM: 15, Context: 200000},
	{ID: "deepseek/deepseek-chat", OwnedBy: "deepseek", InputPerM: 0.28, OutputPerM: 0.42, Context: 128000},
	{ID: "nvidia/gpt-oss-120b", OwnedBy: "nvidia", InputPerM: 0, OutputPerM: 0, Context: 131072},
}

// DefaultPayTo receives the fake's payments unless Options.PayTo is set.
var DefaultPayTo = common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C")

// Options configure a Server. The zero value is a v2 server paid in USDC on
// Base.
type Options struct {
	Version           int            // x402 version of the challenges: 2 (default) or 1
	Token             x402.Token     // asset asked for; USDC on Base by default
	PayTo             common.Address // DefaultPayTo when zero
	MaxTimeoutSeconds int64          // 60 when 0
	Models            []Model        // DefaultModels when nil
	Now               func() time.Time
	Nonces            x402.NonceStore // a fresh in-memory store when nil
	// Description is the resource description in the requirements.
	Description string
}

// Failure makes paid requests go wrong, to test the payer's accounting.
type Failure struct {
	// Status, when non-zero, answers a verified payment with this status
	// and an OpenAI error body, without settling (an honest server that
	// failed: the payment's nonce is released).
	Status int
	// SettleError, when set, makes settlement fail with this reason: 402
	// with a failed settlement response; nothing is settled.
	SettleError string
	// SettleThenFail settles the payment and then answers 500, with a
	// successful settlement response: what a dishonest or broken server
	// does.
	SettleThenFail bool
	// CutStreamAfter, when positive, cuts a paid stream after that many
	// content chunks (after settlement).
	CutStreamAfter int
	// Price, when non-zero, is asked for instead of the computed price.
	Price uint64
}

// Settlement is a payment the fake settled.
type Settlement struct {
	Payer       common.Address
	PayTo       common.Address
	Amount      *big.Int
	Nonce       [32]byte
	Transaction string
	Model       string
	Time        time.Time
}

// Counters count what the server answered.
type Counters struct {
	Challenges int // 402 for a missing payment
	Refusals   int // 402 or 400 for a bad payment
	Paid       int // paid requests served successfully
	Free       int // requests for free models
	Failed     int // paid requests that failed on purpose
}

// Server is a running fake BlockRun. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234"; the API is under
	// URL+"/v1".
	URL string

	ts       *httptest.Server
	opts     Options
	verifier *x402.Verifier
	models   map[string]Model

	mu          sync.Mutex
	failure     Failure
	settlements []Settlement
	counters    Counters
}

// New starts a server on 127.0.0.1.
func New(opts Options) *Server {
	if opts.Version == 0 {
		opts.Version = x402.Version2
	}
	if opts.Token.Address == (common.Address{}) {
		opts.Token = x402.USDCBase
	}
	if opts.PayTo == (common.Address{}) {
		opts.PayTo = DefaultPayTo
	}
	if opts.MaxTimeoutSeconds == 0 {
		opts.MaxTimeoutSeconds = 60
	}
	if opts.Models == nil {
		opts.Models = DefaultModels
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Description == "" {
		opts.Description = "LLM inference"
	}
	s := &Server{opts: opts, models: make(map[string]Model)}
	for _, m := range opts.Models {
		s.models[m.ID] = m
	}
	s.verifier = x402.NewVerifier(opts.Nonces, opts.Now)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.ts = httptest.NewServer(mux) // binds 127.0.0.1
	s.URL = s.ts.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.ts.Close() }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// SetFailure sets how paid requests go wrong from now on (the zero Failure
// restores normal service).
func (s *Server) SetFailure(f Failure) {
	s.mu.Lock()
	s.failure = f
	s.mu.Unlock()
}

// Settlements returns the payments settled so far.
func (s *Server) Settlements() []Settlement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Settlement(nil), s.settlements...)
}

// Settled returns the total settled, in atomic units.
func (s *Server) Settled() *big.Int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := new(big.Int)
	for _, st := range s.settlements {
		sum.Add(sum, st.Amount)
	}
	return sum
}

// Counters returns what the server answered so far.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters
}

func (s *Server) count(f func(*Counters)) {
	s.mu.Lock()
	f(&s.counters)
	s.mu.Unlock()
}

// Price is what a chat completion costs, in atomic USDC units, given the
// prompt's estimated tokens and max_tokens: BlockRun's up-front formula.
func Price(m Model, promptTokens, maxTokens int) uint64 {
	usd := (float64(promptTokens)*m.InputPerM + float64(maxTokens)*m.OutputPerM) / 1e6 * 1.05
	if usd == 0 {
		return 0
	}
	return max(uint64(math.Ceil(usd*1e6-1e-9)), 1000)
}

// Requirements returns the offer the server makes for a price, as it would
// appear in a challenge for resource.
func (s *Server) Requirements(price uint64, resource string) x402.PaymentRequirements {
	extra, _ := json.Marshal(x402.ExactExtra{Name: s.opts.Token.Name, Version: s.opts.Token.Version})
	r := x402.PaymentRequirements{
		Scheme:            x402.SchemeExact,
		Asset:             s.opts.Token.Address.Hex(),
		PayTo:             s.opts.PayTo.Hex(),
		MaxTimeoutSeconds: s.opts.MaxTimeoutSeconds,
		Extra:             extra,
	}
	amount := fmt.Sprint(price)
	if s.opts.Version == x402.Version1 {
		id, _ := x402.ChainID(s.opts.Token.Network)
		name, ok := x402.V1Network(id)
		if !ok {
			name = s.opts.Token.Network
		}
		r.Network = name
		r.MaxAmountRequired = amount
		r.Resource = resource
		r.Description = s.opts.Description
		r.MimeType = "application/json"
	} else {
		r.Network, _ = x402.CAIP2(s.opts.Token.Network)
		r.Amount = amount
	}
	return r
}

func (s *Server) resourceURL(r *http.Request) string { return s.URL + r.URL.Path }

// challenge answers status (402, or 400 for an undecodable payment) with
// the requirements and an error string, in the server's x402 version.
func (s *Server) challenge(w http.ResponseWriter, r *http.Request, status int, req x402.PaymentRequirements, errMsg string) {
	pr := x402.PaymentRequired{X402Version: s.opts.Version, Error: errMsg, Accepts: []x402.PaymentRequirements{req}}
	if s.opts.Version == x402.Version2 {
		pr.Resource = &x402.ResourceInfo{URL: s.resourceURL(r), Description: s.opts.Description, MimeType: "application/json"}
		v, _ := x402.EncodeHeader(&pr)
		w.Header().Set(x402.HeaderPaymentRequired, v)
		writeJSON(w, status, struct{}{})
		return
	}
	writeJSON(w, status, &pr)
}

// settlementHeader sets the settlement response header of the version.
func (s *Server) settlementHeader(w http.ResponseWriter, sr *x402.SettlementResponse) {
	v, _ := x402.EncodeHeader(sr)
	name := x402.HeaderPaymentResponse
	if s.opts.Version == x402.Version1 {
		name = x402.HeaderXPaymentResponse
	}
	w.Header().Set(name, v)
}

// readPayment returns the payment header's decoded payload, or nil when the
// request carries none.
func readPayment(r *http.Request) (*x402.PaymentPayload, error) {
	if v := r.Header.Get(x402.HeaderPaymentSignature); v != "" {
		return x402.DecodePaymentPayload(x402.HeaderPaymentSignature, v)
	}
	if v := r.Header.Get(x402.HeaderXPayment); v != "" {
		return x402.DecodePaymentPayload(x402.HeaderXPayment, v)
	}
	return nil, nil
}

// pay runs the x402 exchange for a request costing price. It returns the
// settlement to report when the request may be served, or false when it has
// already answered.
func (s *Server) pay(w http.ResponseWriter, r *http.Request, price uint64, model string) (*x402.SettlementResponse, bool) {
	s.mu.Lock()
	f := s.failure
	s.mu.Unlock()
	if f.Price != 0 {
		price = f.Price
	}
	req := s.Requirements(price, s.resourceURL(r))
	payload, err := readPayment(r)
	if err != nil {
		s.count(func(c *Counters) { c.Refusals++ })
		s.challenge(w, r, http.StatusBadRequest, req, x402.ReasonInvalidPayload+": "+err.Error())
		return nil, false
	}
	if payload == nil {
		s.count(func(c *Counters) { c.Challenges++ })
		msg := x402.HeaderPaymentSignature + " header is required"
		if s.opts.Version == x402.Version1 {
			msg = x402.HeaderXPayment + " header is required"
		}
		s.challenge(w, r, http.StatusPaymentRequired, req, msg)
		return nil, false
	}
	v, err := s.verifier.Verify(r.Context(), payload, &req)
	if err != nil {
		s.count(func(c *Counters) { c.Refusals++ })
		s.challenge(w, r, http.StatusPaymentRequired, req, x402.ReasonOf(err))
		return nil, false
	}
	network := req.Network
	switch {
	case f.Status != 0:
		// Failed before settling: the authorization is unspent, so the
		// client may present it again.
		_ = s.verifier.Nonces.Release(context.WithoutCancel(r.Context()), v.NonceKey)
		s.count(func(c *Counters) { c.Failed++ })
		openAIError(w, f.Status, "The server had an error while processing your request. Sorry about that!", "server_error")
		return nil, false
	case f.SettleError != "":
		s.count(func(c *Counters) { c.Failed++ })
		s.settlementHeader(w, &x402.SettlementResponse{Success: false, ErrorReason: f.SettleError, Payer: v.Payer.Hex(), Network: network})
		s.challenge(w, r, http.StatusPaymentRequired, req, f.SettleError)
		return nil, false
	}
	sr := s.settle(v, model, network)
	if f.SettleThenFail {
		s.count(func(c *Counters) { c.Failed++ })
		s.settlementHeader(w, sr)
		openAIError(w, http.StatusInternalServerError, "The server had an error while processing your request. Sorry about that!", "server_error")
		return nil, false
	}
	return sr, true
}

// settle records the payment as settled, with a made-up transaction hash.
func (s *Server) settle(v *x402.Verified, model, network string) *x402.SettlementResponse {
	k := v.NonceKey
	tx := crypto.Keccak256(k.Token[:], k.From[:], k.Nonce[:])
	st := Settlement{
		Payer: v.Payer, PayTo: v.Authorization.To, Amount: new(big.Int).Set(v.Amount), Nonce: k.Nonce,
		Transaction: "0x" + hex.EncodeToString(tx), Model: model, Time: s.opts.Now(),
	}
	s.mu.Lock()
	s.settlements = append(s.settlements, st)
	s.mu.Unlock()
	return &x402.SettlementResponse{Success: true, Transaction: st.Transaction, Network: network, Payer: v.Payer.Hex()}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func openAIError(w http.ResponseWriter, status int, msg, typ string) {
	type body struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	}
	writeJSON(w, status, map[string]body{"error": {Message: msg, Type: typ}})
}

// lastUserText returns the text of the last user message, for the reply.
func lastUserText(msgs []chatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return strings.TrimSpace(contentText(msgs[i].Content))
		}
	}
	return ""
}
