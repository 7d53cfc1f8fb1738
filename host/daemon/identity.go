package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/identity"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/x402"
)

// openIdentity links ERC-8004 identities and admits their delegations
// ([auth.identity]): the chain the registries are on, dialled and checked
// to be chain_id (the URL is never logged), and the service over the
// store's links.
func (d *Daemon) openIdentity(ctx context.Context, ic *config.Identity, s *sqlite.Store) (*identity.Service, error) {
	client, err := x402.DialChain(ctx, ic.RPCURL, fmt.Sprintf("eip155:%d", ic.ChainID))
	if err != nil {
		return nil, fmt.Errorf("daemon: [auth.identity]: %w", err)
	}
	d.closeAll = append(d.closeAll, client.Close)
	reg := identity.Registry{Client: client, Identity: common.HexToAddress(ic.IdentityRegistry), Tag1: ic.Tag1, Tag2: ic.Tag2}
	if ic.ReputationRegistry != "" {
		reg.Reputation = common.HexToAddress(ic.ReputationRegistry)
	}
	for _, r := range ic.Reviewers {
		reg.Reviewers = append(reg.Reviewers, common.HexToAddress(r))
	}
	svc := identity.New(identity.Config{Registry: reg, Store: s, CacheTTL: ic.CacheTTL, Window: ic.Window,
		Domain: x402.Domain{Name: ic.DomainName, Version: ic.DomainVersion, ChainID: ic.ChainID,
			VerifyingContract: common.HexToAddress(ic.VerifyingContract)}})
	// Delegation nonces expire a minute or so after use; forget them.
	loop, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case now := <-t.C:
				if _, err := s.PruneNonces(loop, now); err != nil && loop.Err() == nil {
					d.Log.Error("identity: pruning delegation nonces", "err", err)
				}
			}
		}
	}()
	// Registered after the store's close, so it runs before it.
	d.closeAll = append(d.closeAll, func() { stop(); <-done })
	d.Log.Info("accepting ERC-8004 delegations", "chain_id", ic.ChainID, "identity_registry", ic.IdentityRegistry,
		"reputation_registry", ic.ReputationRegistry, "reviewers", len(reg.Reviewers))
	return svc, nil
}
