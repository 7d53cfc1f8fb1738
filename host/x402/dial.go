package x402

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/ethclient"
)

// DialChain connects to an Ethereum JSON-RPC endpoint (http(s) or ws(s))
// and checks that it serves network (CAIP-2, e.g. "eip155:8453"): a
// gateway pointed at the wrong chain would check balances and settle
// where its payers never signed. The URL may carry a provider's API key,
// so errors never repeat it.
func DialChain(ctx context.Context, rpcURL, network string) (*ethclient.Client, error) {
	want, err := ChainID(network)
	if err != nil {
		return nil, err
	}
	c, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("x402: rpc_url: %s", scrubURL(err, rpcURL))
	}
	id, err := c.ChainID(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("x402: rpc_url: eth_chainId: %s", scrubURL(err, rpcURL))
	}
	if !id.IsUint64() || id.Uint64() != want {
		c.Close()
		return nil, fmt.Errorf("x402: rpc_url serves chain %s, the payments are on %s", id, network)
	}
	return c, nil
}

// scrubURL is err's text without the URL in it.
func scrubURL(err error, rawURL string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if rawURL != "" {
		s = strings.ReplaceAll(s, rawURL, "<rpc_url>")
	}
	if u, perr := url.Parse(rawURL); perr == nil && u.Host != "" {
		// Only the host survives, which carries no secret.
		for _, part := range []string{u.Path, u.RawQuery, u.User.String()} {
			if len(part) > 1 {
				s = strings.ReplaceAll(s, part, "…")
			}
		}
	}
	return s
}
