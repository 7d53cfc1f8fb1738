package admit

import (
	"encoding/json"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/identity"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// POST and DELETE /v1/identity/link through the gateway's router: only a
// bardo_sk_ key links; a bad proof is 403 naming why, no credential 401.
func TestIdentityLinkEndpoint(t *testing.T) {
	r := newIDRig(t)
	g := &gateway.Gateway{Admitter: r.k, Identity: r.svc}
	owner := chaintest.Address(r.owner)
	proof := func(key string) []byte {
		n := identity.NewNonce()
		m := identity.LinkMessage{AgentID: big.NewInt(0), KeyID: r.keyID, Nonce: n, Deadline: r.clock().Add(5 * time.Minute).Unix()}
		sig := sign(t, r.owner, m.Digest(r.domain))
		if key == "forged" {
			sig[10] ^= 1
		}
		b, _ := json.Marshal(identity.LinkRequest{AgentID: "0", Signer: owner.Hex(), Nonce: hexutil.Encode(n[:]),
			Deadline: m.Deadline, Signature: hexutil.Encode(sig)})
		return b
	}
	call := func(method string, hdr map[string]string, body []byte) (int, string) {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI("/v1/identity/link")
		for k, v := range hdr {
			ctx.Request.Header.Set(k, v)
		}
		ctx.Request.SetBody(body)
		if !g.Handle(&ctx) {
			t.Fatal("not routed")
		}
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	key := map[string]string{"Authorization": "Bearer " + r.token}
	if st, body := call("POST", nil, proof("")); st != 401 {
		t.Errorf("no credential: %d %s", st, body)
	}
	if st, body := call("POST", key, proof("forged")); st != 403 || !strings.Contains(body, "signature") {
		t.Errorf("forged: %d %s", st, body)
	}
	if st, body := call("POST", key, []byte("{")); st != 400 {
		t.Errorf("malformed: %d %s", st, body)
	}
	if st, body := call("GET", key, nil); st != 405 {
		t.Errorf("GET: %d %s", st, body)
	}
	st, body := call("POST", key, proof(""))
	if st != 200 || !strings.Contains(body, `"tier":"none"`) || !strings.Contains(body, `"spread":"20.00%"`) || !strings.Contains(body, r.keyID) {
		t.Fatalf("link: %d %s", st, body)
	}
	// A delegation acts as the key but may not link another agent to it.
	d := identity.Delegation{AgentID: big.NewInt(0), Signer: owner, Timestamp: r.clock().Unix(), Nonce: identity.NewNonce()}
	dm := identity.DelegationMessage{AgentID: d.AgentID, Method: "GET", Path: "/v1/identity/link",
		BodyHash: crypto.Keccak256Hash(nil), Timestamp: d.Timestamp, Nonce: d.Nonce}
	d.Signature = sign(t, r.owner, dm.Digest(r.domain))
	if st, body := call("POST", map[string]string{"X-Bardo-Delegation": d.Encode()}, proof("")); st != 403 || !strings.Contains(body, "only a bardo_sk_ key") {
		t.Errorf("by delegation: %d %s", st, body)
	}
	if st, body := call("DELETE", key, nil); st != 200 || !strings.Contains(body, `"unlinked":true`) {
		t.Errorf("unlink: %d %s", st, body)
	}
	if st, body := call("DELETE", key, nil); st != 404 {
		t.Errorf("unlink again: %d %s", st, body)
	}
}
