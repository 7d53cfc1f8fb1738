package plugin

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bardoinference/bardo/sdk/wire"
)

// OpOnRequestRun (ABI v1.7, additive) runs the request phase of several
// layer entries of this module in one call: the host pays one call's
// floor (its input copied and decoded once, one result, one scheduling
// point) for a run of consecutive bundled layers instead of one per
// layer. See docs/abi.md, "Runs of request-phase layers".
const OpOnRequestRun Op = OpOnFallback + 1

// OpOnResponseRun (ABI v1.8, additive) is the answer phase's twin of
// OpOnRequestRun: the on_response of several layer entries of this module
// in one call, on one decoded answer. See docs/abi.md, "Runs of
// answer-phase layers".
const OpOnResponseRun Op = OpOnRequestRun + 1

// The run's input: the u32 slot the guest writes the position of the hook
// running into (the host reads it to serve that entry's host calls), the
// u32 number of entries, their u32 indices, then the LayerRequest with
// the union of their Reads. All little-endian.
const runHead = 8

// The run's output, after the format byte: one record per entry run, in
// order — a status byte (runOK, or runFailed and an error message), the
// hook's duration in nanoseconds (u64) and the u32 length of what
// follows (the encoded LayerResult, or the message).
const (
	runFailed byte = 0
	runOK     byte = 1
)

var (
	errRunInput = errors.New("request run: input shorter than its head")
	// runOut collects the run's records; runAnn the annotations the
	// entries see (the input's, then each result's, as the host adds
	// them between calls). Both kept from call to call.
	runOut []byte
	runAnn []wire.KV
	// runReq and runResp are the view of the input each hook of a run
	// gets: kept here, as calls' are, since a local escapes (the hook is a
	// function value) and cost an allocation a run.
	runReq  wire.LayerRequest
	runResp wire.LayerResponse
)

// runRequest runs OnRequest of each entry the input names, in order, on
// one decoded request. Each hook sees only the parts its layer reads (a
// shallow copy with the others zeroed) and the annotations of the hooks
// before it. The run stops after a result that ends or changes the
// request — an action, a patch — or an error: the host applies it and
// goes on from the next layer with a new run.
func runRequest(in []byte) error {
	n, body, err := runInputOf(in)
	if err != nil {
		return err
	}
	full := &calls.req
	*full = wire.LayerRequest{}
	if err := full.DecodeArena(body, &arena); err != nil {
		return err
	}
	saved := layer
	defer func() { layer = saved }() // the selected entry is the host's (bardo_select)
	runAnn = append(runAnn[:0], full.Meta.Annotations...)
	runOut = runOut[:0]
	req := &runReq
	res := &calls.res
	// One clock read between hooks: a hook's time includes encoding its
	// result, as a call of its own would.
	at := hostClock()
	for k := range n {
		l, i := runEntry(in, k)
		*req = *full
		req.Meta.Annotations = runAnn[:len(runAnn):len(runAnn)] // a hook's append copies
		*res = freshResult()
		if err := runHook(l, i, req, res); err != nil {
			runOut = appendFailed(runOut, at, err)
			break
		}
		res.Encode(&out)
		at, runOut = appendOK(runOut, at, out.Bytes())
		if res.Action != wire.ActionContinue || res.Patched != 0 {
			break
		}
		runAnn = append(runAnn, res.Annotations...)
	}
	clear(runAnn) // views of this call's input and results
	*req = wire.LayerRequest{}
	out.Reset()
	out.Append(runOut)
	return nil
}

// runInputOf reads a run's head: how many entries it names, and the
// encoded input after their indices.
func runInputOf(in []byte) (n int, body []byte, err error) {
	if len(in) < runHead {
		return 0, nil, errRunInput
	}
	n = int(binary.LittleEndian.Uint32(in[4:]))
	if n < 1 || n > len(entries) || len(in) < runHead+4*n {
		return 0, nil, errRunInput
	}
	return n, in[runHead+4*n:], nil
}

// runEntry tells the host the run is at its k-th entry (the head's slot:
// host functions then serve that entry) and returns the entry's layer
// (nil for an index no entry has) and index.
func runEntry(in []byte, k int) (*Layer, int) {
	binary.LittleEndian.PutUint32(in, uint32(k))
	i := int(binary.LittleEndian.Uint32(in[runHead+4*k:]))
	if i < len(entries) {
		return entries[i].layer, i
	}
	return nil, i
}

// runResponse runs OnResponse of each entry the input names, in order, on
// one decoded answer (the input's head is a request run's). Each hook sees
// the answer and meta the host sent (a shallow copy: a hook that edits
// them in place without replacing the answer breaks the next hook's view,
// as in a request run). Response results carry no annotations, so every
// hook sees the same meta, as it does one call at a time. The run stops
// after a result that replaces the answer, or an error: the host applies
// it and goes on from the next layer with a new run.
func runResponse(in []byte) error {
	n, body, err := runInputOf(in)
	if err != nil {
		return err
	}
	full := &calls.resp
	*full = wire.LayerResponse{}
	if err := full.DecodeArena(body, &arena); err != nil {
		return err
	}
	saved := layer
	defer func() { layer = saved }()
	runOut = runOut[:0]
	resp := &runResp
	res := &calls.respRes
	at := hostClock()
	for k := range n {
		l, i := runEntry(in, k)
		*resp = *full
		*res = freshResponseResult()
		if err := runAnswerHook(l, i, resp, res); err != nil {
			runOut = appendFailed(runOut, at, err)
			break
		}
		res.Encode(&out)
		at, runOut = appendOK(runOut, at, out.Bytes())
		if res.Replaced {
			break
		}
	}
	*resp = wire.LayerResponse{} // views of this call's input
	out.Reset()
	out.Append(runOut)
	return nil
}

// The functions a run calls for each hook keep their rare paths (an
// error's message, a part to zero) out of line: inside wasm a Go
// function's every jump dispatches through its one jump table, whose cost
// grows with the function's size, and these run eight times a request
// (docs/performance.md, the v1.7 subsection).

// runAnswerHook runs entry i's OnResponse on resp, as bardo_on_response
// would have after bardo_select.
func runAnswerHook(l *Layer, i int, resp *wire.LayerResponse, res *wire.LayerResponseResult) error {
	if l == nil || l.OnResponse == nil {
		return notHook(l, i, "response")
	}
	layer = l
	return l.OnResponse(resp, res)
}

// runHook runs entry i's OnRequest on its parts of req, as bardo_on_request
// would have after bardo_select.
func runHook(l *Layer, i int, req *wire.LayerRequest, res *wire.LayerResult) error {
	if l == nil || l.OnRequest == nil {
		return notHook(l, i, "request")
	}
	layer = l // what a hook's SDK calls (Log, KV) are tagged with on the host
	if l.Reads&wire.PartAll != wire.PartAll {
		keepParts(&req.Request, l.Reads)
	}
	if err := l.OnRequest(req, res); err != nil {
		return err
	}
	if res.Patched&^l.Writes != 0 {
		return undeclaredPatch(l, res.Patched)
	}
	return nil
}

// notHook is the error for a run's entry i that has no hook for phase.
//
//go:noinline
func notHook(l *Layer, i int, phase string) error {
	if l == nil {
		return fmt.Errorf("%s run: entry %d is not a layer", phase, i)
	}
	if phase == "response" {
		return fmt.Errorf("layer %s has no OnResponse", l.Name)
	}
	return fmt.Errorf("layer %s has no OnRequest", l.Name)
}

//go:noinline
func undeclaredPatch(l *Layer, patched wire.Part) error {
	return fmt.Errorf("layer %s patched parts %b it did not declare in Writes", l.Name, patched&^l.Writes)
}

// appendOK appends the record of a hook that returned the result b, timed
// from at; it returns the clock read that times the next hook.
func appendOK(runOut []byte, at int64, b []byte) (int64, []byte) {
	now := hostClock()
	runOut = appendRecord(runOut, runOK, now-at, len(b))
	return now, append(runOut, b...)
}

// appendFailed appends the record of a hook that failed with err.
//
//go:noinline
func appendFailed(runOut []byte, at int64, err error) []byte {
	msg := err.Error()
	runOut = appendRecord(runOut, runFailed, hostClock()-at, len(msg))
	return append(runOut, msg...)
}

// keepParts zeroes the parts of r not in parts, as the host's encoding of a
// LayerRequest for one layer leaves them (Stream always comes).
//
//go:noinline
func keepParts(r *wire.Request, parts wire.Part) {
	if parts&wire.PartModel == 0 {
		r.Model = ""
	}
	if parts&wire.PartSystem == 0 {
		r.System = nil
	}
	if parts&wire.PartMessages == 0 {
		r.Messages = nil
	}
	if parts&wire.PartTools == 0 {
		r.Tools, r.ToolChoice = nil, nil
	}
	if parts&wire.PartParams == 0 {
		r.Params = wire.Params{}
	}
	if parts&wire.PartExtra == 0 {
		r.Extra = nil
	}
}

func appendRecord(b []byte, status byte, took int64, n int) []byte {
	b = append(b, status)
	b = binary.LittleEndian.AppendUint64(b, uint64(took))
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}
