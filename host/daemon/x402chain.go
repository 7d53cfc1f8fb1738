package daemon

import (
	"context"
	"fmt"
	"os"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/x402"
)

// x402Chain wires [x402] rpc_url and settle = "chain" into pc: with an
// RPC endpoint, payments are also verified on chain (balance, contract
// wallets); with settle = "chain", settled by the gateway's settlement
// key instead of the facilitator. The URL and the key are never logged.
func (d *Daemon) x402Chain(ctx context.Context, xc config.X402, tok x402.Token, pc *paywall.Config) error {
	if xc.RPCURL == "" {
		return nil
	}
	client, err := x402.DialChain(ctx, xc.RPCURL, tok.Network)
	if err != nil {
		return fmt.Errorf("daemon: [x402]: %w", err)
	}
	d.closeAll = append(d.closeAll, client.Close)
	var factories []common.Address
	for _, f := range xc.ERC6492Factories {
		factories = append(factories, common.HexToAddress(f))
	}
	pc.Chain = &x402.Chain{Client: client, Factories: factories}
	if xc.Settle != config.SettleChain {
		return nil
	}
	getenv := d.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key, err := x402.LoadKeySigner(xc.SettlementKey, getenv)
	if err != nil {
		return fmt.Errorf("daemon: [x402] settlement_key: %w", err)
	}
	pc.Settler = &x402.ChainSettler{Client: client, Key: key, Factories: factories}
	d.Log.Info("x402: settling on chain", "network", tok.Network, "settlement_address", key.Address().Hex())
	return nil
}
