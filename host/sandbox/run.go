package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
)

// RunResult is one entry's outcome in a run (RunRequest, RunResponse).
type RunResult struct {
	Out  []byte        // the entry's encoded result; nil when Err is set
	Err  error         // the hook's own error (a *CallError)
	Took time.Duration // the hook's time, as the guest measured it
}

// CanRun reports whether p's module runs the request phase of several of
// its entries in one call (ABI v1.7, bardo_on_request_run): a bundle built
// with an SDK that exports it.
func (p *Plugin) CanRun() bool { return p.bundle && p.Exports(plugin.OpOnRequestRun) }

// CanRunResponses reports whether p's module runs the response phase of
// several of its entries in one call (ABI v1.8, bardo_on_response_run).
func (p *Plugin) CanRunResponses() bool { return p.bundle && p.Exports(plugin.OpOnResponseRun) }

// runHead is the run input's head before the entries' indices: the slot
// the guest writes the running entry's position into, and their number.
const runHead = 8

// RunRequest runs the on_request of the entries ps, in order, in one call
// into their module (they must share it, and it must export the op:
// CanRun): src is the LayerRequest with the union of their Reads. It
// returns one result per entry the guest ran, appended to dst: the guest
// stops after a result that ends or changes the request, or an error,
// and the caller goes on from the next entry. A trap, a timeout or an
// unreadable output is the error, and no result is kept: the caller calls
// the entries one by one, so a failure is attributed to its entry.
//
// The run's timeout is the sum of the entries'. Each entry's time, as the
// guest measured it, is recorded as its bardo_sandbox_call_seconds of
// bardo_on_request (and its failure, when its hook failed); the run's
// whole call as the module's bardo_on_request_run. While the run is in
// progress the host functions serve the entry whose hook is running (the
// guest says which: it is one module's code, with every entry's memory
// already in reach).
func RunRequest(ctx context.Context, ps []*Plugin, src Input, info CallInfo, dst []RunResult) ([]RunResult, error) {
	return runOp(ctx, plugin.OpOnRequest, ps, runInput{src: src}, info, dst)
}

// RunResponse is RunRequest's twin for the response phase (ABI v1.8,
// bardo_on_response_run; CanRunResponses): in is the encoded
// LayerResponse, once for all, and each result an encoded
// LayerResponseResult; the guest stops after a result that replaces the
// answer, or an error. Each entry's time is its
// bardo_sandbox_call_seconds of bardo_on_response.
func RunResponse(ctx context.Context, ps []*Plugin, in []byte, info CallInfo, dst []RunResult) ([]RunResult, error) {
	return runOp(ctx, plugin.OpOnResponse, ps, runInput{body: in}, info, dst)
}

// runOp runs op (on_request or on_response) of the entries ps in one call
// of the op's run export.
func runOp(ctx context.Context, op plugin.Op, ps []*Plugin, in runInput, info CallInfo, dst []RunResult) ([]RunResult, error) {
	runOp := plugin.OpOnRequestRun
	if op == plugin.OpOnResponse {
		runOp = plugin.OpOnResponseRun
	}
	p := ps[0]
	var timeout time.Duration
	for _, q := range ps {
		if q.module != p.module {
			return dst, fmt.Errorf("plugin %s: a run's entries must share a module", q.opts.Name)
		}
		if q.closed.Load() {
			return dst, fmt.Errorf("plugin %s: closed", q.opts.Name)
		}
		timeout += q.opts.Timeout
	}
	if err := ctx.Err(); err != nil {
		return dst, fmt.Errorf("plugin %s: %w: not called, the request is over: %w", p.opts.Name, ErrTimeout, err)
	}
	inst, err := p.acquire(ctx)
	if err != nil {
		return dst, err
	}
	if timeout > 0 && !p.opts.Trusted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	returned := false
	defer func() {
		if !returned {
			p.discard(inst)
		}
	}()
	head := make([]byte, runHead, runHead+4*len(ps))
	binary.LittleEndian.PutUint32(head[4:], uint32(len(ps)))
	for _, q := range ps {
		head = binary.LittleEndian.AppendUint32(head, q.index)
	}
	in.head = head
	began := time.Now()
	inst.run = ps
	out, err := p.callInstanceAt(ctx, inst, runOp, nil, &in, info, began)
	inst.run = nil
	inst.cs.run = nil
	took := time.Since(began)
	n := len(dst)
	if err == nil {
		dst, err = parseRun(dst, ps, out)
	}
	if p.host != nil {
		p.observeRun(runOp, took, err)
		for i, r := range dst[n:] {
			ps[i].observeCall(op, r.Took, r.Err)
		}
	}
	if p.opts.Trusted {
		for i, r := range dst[n:] {
			if q := ps[i]; q.opts.Timeout > 0 && r.Took > q.opts.Timeout {
				q.overBudget(op, r.Took, info)
			}
		}
	}
	returned = true
	if (err != nil && !isPluginError(err)) || inst.mod.IsClosed() {
		p.discard(inst)
		if err == nil {
			err = fmt.Errorf("plugin %s: %w", p.opts.Name, ErrTimeout)
		}
		return dst[:n], err
	}
	p.release(inst)
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// parseRun reads the run's records (sdk/plugin/run.go) into dst.
func parseRun(dst []RunResult, ps []*Plugin, out []byte) ([]RunResult, error) {
	n := len(dst)
	b := out[1:] // the format byte
	for len(b) > 0 {
		k := len(dst) - n
		if k >= len(ps) || len(b) < 13 {
			return dst[:n], fmt.Errorf("plugin %s: %w: malformed run output", ps[0].opts.Name, ErrTrap)
		}
		status, took, size := b[0], binary.LittleEndian.Uint64(b[1:]), binary.LittleEndian.Uint32(b[9:])
		b = b[13:]
		if uint64(size) > uint64(len(b)) {
			return dst[:n], fmt.Errorf("plugin %s: %w: malformed run output", ps[0].opts.Name, ErrTrap)
		}
		r := RunResult{Took: time.Duration(took)}
		if status == 1 {
			r.Out = b[:size:size]
		} else {
			r.Err = &CallError{Plugin: ps[k].opts.Name, Msg: string(b[:size])}
		}
		dst = append(dst, r)
		b = b[size:]
	}
	if len(dst) == n {
		return dst, fmt.Errorf("plugin %s: %w: a run returned no result", ps[0].opts.Name, ErrTrap)
	}
	return dst, nil
}

// observeRun records a run's whole call (runOp) under the module's name.
func (p *Plugin) observeRun(runOp plugin.Op, took time.Duration, err error) {
	m := p.module
	slot := &m.runObs[runOp-plugin.OpOnRequestRun]
	f := slot.Load()
	if f == nil {
		if b, ok := p.host.(BoundMetrics); ok {
			o := b.Observer("bardo_sandbox_call_seconds", "plugin", m.name, "op", exportNames[runOp])
			slot.Store(&o)
			f = &o
		}
	}
	if f != nil {
		(*f)(took.Seconds())
	} else {
		p.host.Observe("bardo_sandbox_call_seconds", took.Seconds(), "plugin", m.name, "op", exportNames[runOp])
	}
	if err != nil && !isPluginError(err) {
		p.host.Add("bardo_sandbox_call_failures_total", 1, "plugin", m.name, "op", exportNames[runOp], "kind", callKind(err))
	}
}

// runInput is a run's input: its head, then the LayerRequest src writes,
// or the encoded LayerResponse body.
type runInput struct {
	head []byte
	src  Input
	body []byte
}

func (r *runInput) Len() int {
	if r.src == nil {
		return len(r.head) + len(r.body)
	}
	return len(r.head) + r.src.Len()
}

func (r *runInput) Put(dst []byte) {
	dst = dst[copy(dst, r.head):]
	if r.src == nil {
		copy(dst, r.body)
		return
	}
	r.src.Put(dst)
}

// runEntry is the entry whose hook the guest is running in a run:
// the position it wrote at runAt (the first entry if it wrote nonsense).
func (cs *callState) runEntry() *Plugin {
	k, ok := cs.in.mem.ReadUint32Le(cs.runAt)
	if !ok || int(k) >= len(cs.run) {
		return cs.run[0]
	}
	return cs.run[k]
}
