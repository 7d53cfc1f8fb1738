package paywall_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/x402"
)

// FuzzPaymentHeader feeds arbitrary PAYMENT-SIGNATURE and X-PAYMENT values
// through detection, decoding and verification: each is refused with a 402
// (or admitted, for a real payment), never a panic or another status, and
// nothing is settled without an answer.
func FuzzPaymentHeader(f *testing.F) {
	r := uptoRig(f)
	good := newPayment(f, r, wallet(f)).headers(f)
	f.Add(string(good.Peek(x402.HeaderPaymentSignature)), true)
	upto := newUpto(f, r, wallet(f)).headers(f)
	f.Add(string(upto.Peek(x402.HeaderPaymentSignature)), true)
	f.Add("", false)
	f.Add("e30=", true)
	f.Add("eyJ4NDAyVmVyc2lvbiI6Mn0=", false)
	f.Add("!!!", true)
	f.Fuzz(func(t *testing.T, v string, v2 bool) {
		name := x402.HeaderXPayment
		if v2 {
			name = x402.HeaderPaymentSignature
		}
		h := http.Header{}
		h.Set(name, v)
		c, e := r.keys.Admit(context.Background(), admission(auth.HTTPHeader(h)))
		switch {
		case e == nil && c.Tab == nil:
			t.Fatalf("admitted without a tab: %q", v)
		case e != nil && e.Status != 402 && e.Status != 401 && e.Status != 429:
			t.Fatalf("%q: status %d: %s", v, e.Status, e.Message)
		}
		if n := len(r.fac.Settlements()); n != 0 {
			t.Fatalf("settled %d", n)
		}
	})
}
