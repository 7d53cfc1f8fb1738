// Package plugin is the guest side of the Bardo plugin ABI v1: plugin authors
// write a layer or a provider adapter as a few typed Go functions and register
// them from init; the package provides the WASM exports, the memory handling,
// the wire encoding and the per-call scheduling point that keeps a reactor
// guest's garbage collector running.
//
// A plugin is a main package built as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o my.wasm ./myplugin
//
// The same package builds natively (for unit tests): the exports are then
// reachable through [Call], and the host functions through a replaceable
// in-memory [Host] (see package plugintest).
//
// A module may register several plugins (ABI v1.5 bundles, docs/abi.md):
// each plugin package registers itself from init, and one main imports
// them all. The host selects the plugin each call is for; a module that
// registers one is a bundle of one.
//
// A hook's input — its strings and byte slices, the slices and the struct
// it was decoded into — is the call's: valid until the hook returns, then
// reused for the next call. Copy what you keep past it (strings.Clone,
// bytes.Clone; docs/abi.md, "What a plugin may keep").
//
// A v1.7 host runs consecutive request-phase layers of one module in one
// call (bardo_on_request_run, run.go): each OnRequest sees its own parts
// and the annotations before it, exactly as in a call of its own, but the
// arrays of the request (blocks, messages, tools) are shared with the
// hooks after it. An OnRequest must therefore not edit its input in place
// unless it patches what it edited (the run ends at a patch).
//
// A v1.8 host runs the on_response of consecutive layers of one module in
// one call the same way (bardo_on_response_run): the decoded answer is
// shared with the hooks after it, so an OnResponse edits it in place only
// when it replaces the answer (the run ends at a replacement).
package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// ABIVersion is the ABI major version this SDK implements.
const ABIVersion = 1

// ABIMinor is the ABI minor version this SDK implements (docs/abi.md).
const ABIMinor = 8

// Layer is a pipeline layer. Only the hooks for the declared Phases are called.
type Layer struct {
	Name    string
	Version string
	Phases  wire.Phase
	Reads   wire.Part // request parts the host hands to OnRequest
	Writes  wire.Part // request parts OnRequest may replace (set res.Patched)

	// Init runs once per instance, after the host functions are available.
	Init func() error
	// OnRequest sees the request parts in Reads; it may patch parts in Writes,
	// answer, or reject (see wire.LayerResult).
	OnRequest func(req *wire.LayerRequest, res *wire.LayerResult) error
	// OnResponse sees a complete response (non-streamed requests).
	OnResponse func(in *wire.LayerResponse, res *wire.LayerResponseResult) error
	// OnStream sees each batch of stream events. A hook that leaves
	// res.Events as in.Events, untouched, costs the host no decoding: the
	// SDK tells it the batch is unchanged (ABI v1.6) instead of encoding
	// the events again.
	OnStream func(in *wire.LayerStream, res *wire.LayerStreamResult) error
	// WatchStream declares that the layer only watches answers and never
	// rewrites a stream (wire.FlagWatchStream): a v1.6 host then does not
	// call OnStream, and calls OnResponse once with the whole streamed
	// answer when the stream ended complete, ignoring that call's headers
	// and replacement. It needs OnResponse (and PhaseResponse); keep
	// OnStream for older hosts.
	WatchStream bool
	// OnFallback (wire.PhaseFallback) runs when every provider failed: the
	// request as it left the request phase, with the annotations every
	// layer wrote there. A layer that keeps answers may answer with one it
	// would otherwise not serve (a cache entry past its freshness); any
	// other action means "nothing to offer".
	OnFallback func(req *wire.LayerRequest, res *wire.LayerResult) error
}

// Provider is a provider adapter.
type Provider struct {
	Name    string
	Version string
	// Reads are the request parts Encode needs (Stream, the route and Meta
	// always come). An adapter that lets the host encode natively needs
	// none; one that builds its own body declares wire.PartAll.
	Reads wire.Part

	Init func() error
	// Encode turns a canonical request into an upstream call (or a local answer).
	Encode func(in *wire.EncodeInput, res *wire.EncodeResult) error
	// Decode turns an upstream HTTP response into a canonical response or error.
	// It is called for every response unless the call set ResponseDialect, in
	// which case it is called only for non-2xx statuses.
	Decode func(in *wire.DecodeInput, res *wire.DecodeResult) error
	// DecodeStream turns upstream SSE events into canonical events (only needed
	// when the call did not set ResponseDialect).
	DecodeStream func(in *wire.DecodeStreamInput, res *wire.DecodeStreamResult) error

	// Describe is the provider's describe(): what the intent resolver
	// knows about it — traits, policy, parameter style, and its models or
	// where to fetch them (sdk/routing.ProviderDescription). The host calls
	// it once per loaded pipeline, after Init, so it may read the config;
	// pipeline.toml overrides it field by field. Nil: the provider is
	// described by pipeline.toml alone.
	Describe func() (routing.ProviderDescription, error)
	// Resolve is the provider's resolve(intent) → resolution | none. The
	// host runs the standard resolver natively on the provider's
	// description (pipeline.toml and refreshed catalogs merged in) and
	// hands its answer — nil when it found none — to Resolve, which keeps,
	// adjusts or vetoes it, or answers where the standard found nothing.
	// It must fill Provider and Model (and should keep Features, Quality
	// and LatencyMs true to the model). Setting it marks the description
	// Policy.Custom; nil: the standard resolver alone, no call into WASM.
	Resolve func(in *routing.Intent, standard *routing.Resolution) (routing.Resolution, bool)
}

// Op names one ABI export; the host calls bardo_<op>.
type Op uint8

// Ops, in the order of docs/abi.md.
const (
	OpDescribe Op = iota
	OpInit
	OpOnRequest
	OpOnResponse
	OpOnStream
	OpEncode
	OpDecode
	OpDecodeStream
	// ABI v1.3, additive.
	OpProviderDescribe
	OpResolve
	OpOnFallback
)

// StatusError is the first byte of an export's output when the call failed;
// the rest is a UTF-8 error message. Any other first byte is the wire format
// version of a successful result message.
const StatusError byte = 0

var (
	// layer or provider is the selected entry (bardo_select); every op
	// runs on it.
	layer    *Layer
	provider *Provider
	out      wire.Encoder

	// The decoded input and the result of the call in progress, and the
	// arena their slices come from: kept from one call to the next, reset
	// at the start of each (docs/abi.md, "What a plugin may keep"), so a
	// call allocates none of them.
	arena wire.Arena
	calls struct {
		req       wire.LayerRequest
		res       wire.LayerResult
		resp      wire.LayerResponse
		respRes   wire.LayerResponseResult
		stream    wire.LayerStream
		streamRes wire.LayerStreamResult
		enc       wire.EncodeInput
		encRes    wire.EncodeResult
		dec       wire.DecodeInput
		decRes    wire.DecodeResult
		decS      wire.DecodeStreamInput
		decSRes   wire.DecodeStreamResult
	}

	// kept lends a result's Headers and Annotations their room: a hook's
	// first append to a nil slice allocated inside wasm (~1 µs, and
	// garbage the guest's GC then sweeps in a later call). The result is
	// encoded before the next hook starts, so one set serves every call.
	kept struct {
		headers, annotations [8]wire.KV
	}

	// entries are the plugins this module exports, in registration order:
	// a module that registers one is a bundle of one (docs/abi.md, v1.5).
	entries []entry
)

type entry struct {
	layer    *Layer
	provider *Provider
}

func (e entry) name() string {
	if e.layer != nil {
		return e.layer.Name
	}
	return e.provider.Name
}

// freshResult is an empty LayerResult whose Headers and Annotations
// append into kept room (a hook that appends past it allocates as before).
func freshResult() wire.LayerResult {
	return wire.LayerResult{Headers: kept.headers[:0], Annotations: kept.annotations[:0]}
}

// freshResponseResult is freshResult's twin for the response phase.
func freshResponseResult() wire.LayerResponseResult {
	return wire.LayerResponseResult{Headers: kept.headers[:0]}
}

// RegisterLayer adds a layer to this module. Call it from init: a plugin's
// own main registers one; a bundle's main imports several plugin packages,
// each registering itself. Names must be unique within the module.
func RegisterLayer(l Layer) {
	if l.WatchStream && (l.OnResponse == nil || l.Phases&wire.PhaseResponse == 0) {
		panic("plugin: layer " + l.Name + " sets WatchStream without OnResponse and PhaseResponse")
	}
	register(entry{layer: &l})
}

// RegisterProvider adds a provider adapter to this module, as RegisterLayer.
func RegisterProvider(p Provider) { register(entry{provider: &p}) }

func register(e entry) {
	for _, x := range entries {
		if x.name() == e.name() {
			panic("plugin: two entries named " + e.name())
		}
	}
	entries = append(entries, e)
	if len(entries) == 1 {
		selectEntry(0) // a host that never selects (before v1.5) gets the first
	}
}

// selectEntry makes entry i the one every op runs on; false when there is
// no such entry.
func selectEntry(i int) bool {
	if i < 0 || i >= len(entries) {
		return false
	}
	layer, provider = entries[i].layer, entries[i].provider
	return true
}

// Entries returns the names of the plugins this module exports, in the
// order the host selects them by.
func Entries() []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.name()
	}
	return names
}

var errNotRegistered = errors.New("plugin registered neither a layer nor a provider")

// dispatch runs one op on the input bytes and returns the output bytes. The
// returned slice is valid until the next call.
func dispatch(op Op, in []byte) []byte {
	arena.Reset()
	input = in
	err := run(op, in)
	input = nil
	if err != nil {
		return fail(err)
	}
	return out.Bytes()
}

// input is the input of the call in progress (Input).
var input []byte

// Input returns the input bytes of the call in progress, nil outside a
// call. The decoded input's strings and byte slices alias it, so a plugin
// can tell whether a value came from it and take a run of its encoded
// fields as one span (semcache hashes a request's history that way instead
// of field by field). Valid until the hook returns, like the rest of the
// input (docs/abi.md, "What a plugin may keep").
func Input() []byte { return input }

// fail encodes an error result.
func fail(err error) []byte {
	out.Reset()
	b := append(out.Bytes()[:0], StatusError)
	return append(b, err.Error()...)
}

type encodable interface{ Encode(*wire.Encoder) }

func encodeOK(m encodable) { m.Encode(&out) }

func run(op Op, in []byte) error {
	switch op {
	case OpDescribe:
		var d wire.Descriptor
		switch {
		case layer != nil:
			phases := layer.Phases
			if layer.OnFallback != nil {
				phases |= wire.PhaseFallback
			}
			d = wire.Descriptor{ABI: ABIVersion, Name: layer.Name, Version: layer.Version, Kind: "layer",
				Phases: phases, Reads: layer.Reads, Writes: layer.Writes}
			if layer.WatchStream {
				d.Flags |= wire.FlagWatchStream
			}
		case provider != nil:
			d = wire.Descriptor{ABI: ABIVersion, Name: provider.Name, Version: provider.Version, Kind: "provider",
				Reads: provider.Reads}
		default:
			return errNotRegistered
		}
		encodeOK(&d)
		return nil
	case OpInit:
		var f func() error
		if layer != nil {
			f = layer.Init
		} else if provider != nil {
			f = provider.Init
		} else {
			return errNotRegistered
		}
		if f != nil {
			if err := f(); err != nil {
				return err
			}
		}
		out.Reset() // a bare format-version byte: success, no payload
		return nil
	case OpOnRequestRun:
		return runRequest(in)
	case OpOnResponseRun:
		return runResponse(in)
	}
	if layer != nil {
		return runLayer(op, in)
	}
	if provider != nil {
		return runProvider(op, in)
	}
	return errNotRegistered
}

func runLayer(op Op, in []byte) error {
	switch op {
	case OpOnRequest:
		if layer.OnRequest == nil {
			return fmt.Errorf("layer %s has no OnRequest", layer.Name)
		}
		req, res := &calls.req, &calls.res
		*req, *res = wire.LayerRequest{}, freshResult()
		if err := req.DecodeArena(in, &arena); err != nil {
			return err
		}
		if err := layer.OnRequest(req, res); err != nil {
			return err
		}
		if bad := res.Patched &^ layer.Writes; bad != 0 {
			return fmt.Errorf("layer %s patched parts %b it did not declare in Writes", layer.Name, bad)
		}
		encodeOK(res)
		return nil
	case OpOnResponse:
		if layer.OnResponse == nil {
			return fmt.Errorf("layer %s has no OnResponse", layer.Name)
		}
		in2, res := &calls.resp, &calls.respRes
		*in2, *res = wire.LayerResponse{}, freshResponseResult()
		if err := in2.DecodeArena(in, &arena); err != nil {
			return err
		}
		if err := layer.OnResponse(in2, res); err != nil {
			return err
		}
		encodeOK(res)
		return nil
	case OpOnStream:
		if layer.OnStream == nil {
			return fmt.Errorf("layer %s has no OnStream", layer.Name)
		}
		in2, res := &calls.stream, &calls.streamRes
		*in2, *res = wire.LayerStream{}, wire.LayerStreamResult{}
		if err := in2.DecodeArena(in, &arena); err != nil {
			return err
		}
		if in2.UnchangedOK {
			snapshot(in2.Events)
		}
		if err := layer.OnStream(in2, res); err != nil {
			return err
		}
		if in2.UnchangedOK {
			res.Unchanged = unchanged(res.Events, in2.Events, evSnap) && sameContents(in2.Events)
			clear(evSnap) // it holds views of the input: keep none past the call
			clear(evErrs)
		}
		encodeOK(res)
		return nil
	case OpOnFallback:
		if layer.OnFallback == nil {
			return fmt.Errorf("layer %s has no OnFallback", layer.Name)
		}
		req, res := &calls.req, &calls.res
		*req, *res = wire.LayerRequest{}, freshResult()
		if err := req.DecodeArena(in, &arena); err != nil {
			return err
		}
		if err := layer.OnFallback(req, res); err != nil {
			return err
		}
		res.Patched = 0 // the request is not sent anywhere any more
		encodeOK(res)
		return nil
	}
	return fmt.Errorf("op %d is not a layer op", op)
}

func runProvider(op Op, in []byte) error {
	switch op {
	case OpEncode:
		x, res := &calls.enc, &calls.encRes
		*x, *res = wire.EncodeInput{}, wire.EncodeResult{}
		if err := x.DecodeArena(in, &arena); err != nil {
			return err
		}
		if err := provider.Encode(x, res); err != nil {
			return err
		}
		encodeOK(res)
		return nil
	case OpDecode:
		if provider.Decode == nil {
			return fmt.Errorf("provider %s has no Decode", provider.Name)
		}
		x, res := &calls.dec, &calls.decRes
		*x, *res = wire.DecodeInput{}, wire.DecodeResult{}
		if err := x.DecodeArena(in, &arena); err != nil {
			return err
		}
		if err := provider.Decode(x, res); err != nil {
			return err
		}
		encodeOK(res)
		return nil
	case OpDecodeStream:
		if provider.DecodeStream == nil {
			return fmt.Errorf("provider %s has no DecodeStream", provider.Name)
		}
		x, res := &calls.decS, &calls.decSRes
		*x, *res = wire.DecodeStreamInput{}, wire.DecodeStreamResult{}
		if err := x.DecodeArena(in, &arena); err != nil {
			return err
		}
		if err := provider.DecodeStream(x, res); err != nil {
			return err
		}
		encodeOK(res)
		return nil
	case OpProviderDescribe:
		if provider.Describe == nil {
			if provider.Resolve != nil {
				return fmt.Errorf("provider %s has Resolve but no Describe", provider.Name)
			}
			return encodeJSON(nil) // described by pipeline.toml alone
		}
		d, err := provider.Describe()
		if err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if provider.Resolve != nil {
			d.Policy.Custom = true
		}
		return encodeJSON(d)
	case OpResolve:
		if provider.Resolve == nil {
			return fmt.Errorf("provider %s has no Resolve", provider.Name)
		}
		in2, std, err := DecodeResolveInput(in)
		if err != nil {
			return fmt.Errorf("resolve input: %w", err)
		}
		r, ok := provider.Resolve(&in2, std)
		if !ok {
			EncodeResolveResult(&out, nil)
		} else {
			EncodeResolveResult(&out, &r)
		}
		return nil
	}
	return fmt.Errorf("op %d is not a provider op", op)
}

// encodeJSON writes a JSON payload after the format byte (the ABI's
// routing exports carry sdk/routing's JSON forms: they are called once per
// pipeline, or only for providers with a custom resolve).
func encodeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out.Reset()
	out.Append(b)
	return nil
}

// Log levels for [Log].
const (
	LevelDebug = 0
	LevelInfo  = 1
	LevelWarn  = 2
	LevelError = 3
)

// Log writes a message to the host's log, tagged with the plugin's name and
// the request id of the call in progress.
func Log(level int, msg string) { hostLog(uint32(level), msg) }

// Logf formats and logs.
func Logf(level int, format string, args ...any) { Log(level, fmt.Sprintf(format, args...)) }

// HostABIMinor returns the host's ABI minor version. Calling it makes the
// plugin import the v1.3 host function abi_minor, so a host older than
// v1.3 refuses to load the plugin with a message naming it — for a plugin
// whose guarantees rest on v1.3 host behaviour (Venice's VerifySuccess:
// an older host would relay answers it never showed the adapter).
func HostABIMinor() int { return hostABIMinor() }

// Now returns the host's wall clock.
func Now() time.Time { return time.Unix(0, hostClock()) }

// KVGet reads a key from this plugin's key/value namespace for the current
// tenant (during Init, the empty tenant). ok is false when the key is absent,
// expired, or the host refused the read (which it logs).
func KVGet(key string) (value []byte, ok bool) { return hostKVGet(key) }

// KVGetAppend is KVGet with the value appended to dst (dst unchanged and
// ok false when the key is absent): a layer that reads a key on every
// request keeps one buffer for it instead of an allocation per read, which
// inside wasm costs about a microsecond and garbage for the guest's GC.
func KVGetAppend(dst []byte, key string) (value []byte, ok bool) { return hostKVGetAppend(dst, key) }

// KVPut stores a value under key for ttl (0 = no expiry) in this plugin's
// namespace for the current tenant.
// A positive ttl under a millisecond is rounded up to one: the ABI counts in
// milliseconds and 0 would mean "never expires".
func KVPut(key string, value []byte, ttl time.Duration) error {
	ms := ttl.Milliseconds()
	if ttl > 0 && ms == 0 {
		ms = 1
	}
	return hostKVPut(key, value, ms)
}

// KVDelete removes a key from this plugin's namespace for the current tenant.
func KVDelete(key string) error { return hostKVDelete(key) }

// Config returns the plugin's [layer.config] / [provider.config] table as JSON.
func Config() []byte { return hostConfig() }

// DecodeConfig unmarshals the plugin's config table into v. It is meant for
// Init (once per instance), where encoding/json's cost does not matter.
func DecodeConfig(v any) error {
	b := Config()
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("plugin config: %w", err)
	}
	return nil
}

// DecodeConfigStrict decodes the plugin's config table (JSON) into v and
// refuses unknown keys, so a typo in pipeline.toml fails the pipeline's load
// instead of being silently ignored. An empty table leaves v as it is.
func DecodeConfigStrict(v any) error { return DecodeStrict(Config(), v) }

// DecodeStrict decodes the JSON object b into v, refusing unknown fields;
// empty input leaves v as it is.
func DecodeStrict(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("plugin config: %w", err)
	}
	return nil
}

// Metric kinds for the host's metrics registry.
const (
	metricCounter   = 0
	metricGauge     = 1
	metricHistogram = 2
)

// CounterAdd adds v to the counter bardo_plugin_<name> (labelled by plugin).
func CounterAdd(name string, v float64) { hostMetric(metricCounter, name, v) }

// GaugeSet sets the gauge bardo_plugin_<name>.
func GaugeSet(name string, v float64) { hostMetric(metricGauge, name, v) }

// Observe records v in the histogram bardo_plugin_<name>.
func Observe(name string, v float64) { hostMetric(metricHistogram, name, v) }

var errNoHost = errors.New("plugin: no host functions installed (natively, call plugin.SetHost or use plugintest)")

// KVGetShared reads a key from this plugin's shared namespace, which every
// tenant sees (for opt-in shared caches). Prefer KVGet: tenant isolation is
// the safe default.
func KVGetShared(key string) ([]byte, bool) { return hostKVGetShared(key) }

// KVPutShared stores a value in this plugin's shared namespace.
func KVPutShared(key string, value []byte, ttl time.Duration) error {
	ms := ttl.Milliseconds()
	if ttl > 0 && ms == 0 {
		ms = 1
	}
	return hostKVPutShared(key, value, ms)
}

// KVDeleteShared removes a key from this plugin's shared namespace.
func KVDeleteShared(key string) error { return hostKVDeleteShared(key) }

// SHA256 hashes data on the host, natively (about 6× faster than the same
// code inside wasm).
func SHA256(data []byte) [32]byte { return hostSHA256(data) }

// RegexSet is a compiled list of patterns matched natively by the host.
type RegexSet struct{ id int32 }

// Match is one match of a RegexSet: the pattern's index in the list and the
// byte range in the text.
type Match struct {
	Pattern    int
	Start, End int
}

// CompileRegexSet compiles patterns (RE2 syntax, within the subset
// ECMAScript shares — no lookaround or backreferences — so the edge host
// matches alike). Call it from Init. Patterns may not contain a raw newline.
func CompileRegexSet(patterns []string) (*RegexSet, error) {
	for _, p := range patterns {
		if strings.Contains(p, "\n") {
			return nil, fmt.Errorf("regex set: pattern %q contains a raw newline (write \\n)", p)
		}
	}
	id := hostRegexCompile(strings.Join(patterns, "\n"))
	if id < 0 {
		return nil, errors.New("regex set: the host refused the patterns (see the host log)")
	}
	return &RegexSet{id: id}, nil
}

// FindAll returns every match of every pattern in text, grouped by pattern
// in list order and in text order within a pattern. Matches of different
// patterns may overlap; resolving that is the caller's policy.
func (s *RegexSet) FindAll(text string) []Match {
	b, ok := hostRegexFind(s.id, text)
	if !ok || len(b) < 12 {
		return nil
	}
	ms := make([]Match, len(b)/12)
	for i := range ms {
		o := i * 12
		ms[i] = Match{
			Pattern: int(leU32(b[o:])),
			Start:   int(leU32(b[o+4:])),
			End:     int(leU32(b[o+8:])),
		}
	}
	return ms
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// evSnap is a copy of a stream batch's events taken before the hook, so
// that a hook which edits in.Events in place and hands them back is seen
// to have changed them; evBytes and evErrs copy what the events point to
// and a hook could edit in place too (a block's raw bytes, an error).
var (
	evSnap  []wire.Event
	evBytes []byte
	evErrs  []wire.Error
)

// snapshot copies a batch's events and what they point to before the hook.
func snapshot(evs []wire.Event) {
	evSnap = append(evSnap[:0], evs...)
	evBytes, evErrs = evBytes[:0], evErrs[:0]
	for i := range evs {
		b := &evs[i].Block
		evBytes = append(append(append(evBytes, b.Data...), b.CacheControl...), b.Extra...)
		if evs[i].Error != nil {
			evErrs = append(evErrs, *evs[i].Error)
		}
	}
}

// sameContents reports whether what the events point to is as snapshot
// copied it; their words compared equal already (the same slices and
// pointers, so the same lengths).
func sameContents(evs []wire.Event) bool {
	rest, errs := evBytes, evErrs
	same := func(b []byte) bool {
		if string(rest[:len(b)]) != string(b) {
			return false
		}
		rest = rest[len(b):]
		return true
	}
	for i := range evs {
		b := &evs[i].Block
		if len(b.Data)+len(b.CacheControl)+len(b.Extra) > 0 && (!same(b.Data) || !same(b.CacheControl) || !same(b.Extra)) {
			return false
		}
		if e := evs[i].Error; e != nil {
			if *e != errs[0] {
				return false
			}
			errs = errs[1:]
		}
	}
	return true
}

// unchanged reports whether a hook's out is its input in, untouched: the
// same backing array and length (the hook handed in.Events back), and
// every event as it was before the hook (snap), compared word by word —
// field by field would cost a function call per string inside wasm. An
// edit in place always changes a word (a string's pointer or length, a
// number); a whole event assigned over with equal values may differ in
// its padding, which only costs the encoding this saves.
func unchanged(out, in, snap []wire.Event) bool {
	if len(out) != len(in) || len(in) != len(snap) {
		return false
	}
	if len(in) == 0 {
		return true // no events either way
	}
	if &out[0] != &in[0] {
		return false
	}
	n := len(in) * int(unsafe.Sizeof(wire.Event{})) / 8 // a multiple of 8: Event holds int64s
	a := unsafe.Slice((*uint64)(unsafe.Pointer(&in[0])), n)
	b := unsafe.Slice((*uint64)(unsafe.Pointer(&snap[0])), n)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
