package sandbox_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// An input written in place into the guest's buffer (CallInput) is the
// same call as its bytes handed to Call, calls after calls on one
// instance, whose buffer holds the previous, longer, input.
func TestCallInputWritesInPlace(t *testing.T) {
	o := faultOptions(t, "touch")
	o.Trusted, o.PoolSize = true, 1
	p := loadFault(t, o)
	req := fixtures.AgentRequest()
	meta := &wire.Meta{RequestID: "r", Tenant: "t", Model: req.Model}
	var re wire.RequestEncoder
	re.Reset(req)
	var enc wire.Encoder
	for _, parts := range []wire.Part{wire.PartAll, wire.PartModel | wire.PartMessages, wire.PartAll} {
		wire.EncodeLayerRequest(&enc, meta, req, parts)
		want, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), sandbox.CallInfo{Tenant: "t"})
		if err != nil {
			t.Fatal(err)
		}
		re.Prepare(meta, parts)
		got, err := p.CallInput(context.Background(), plugin.OpOnRequest, &re, sandbox.CallInfo{Tenant: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("parts %b: CallInput answered %d bytes, Call %d, not the same", parts, len(got), len(want))
		}
	}
}
