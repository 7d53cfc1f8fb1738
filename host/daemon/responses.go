package daemon

import (
	"context"
	"time"

	"github.com/bardoinference/bardo/host/config"
)

// pruneResponsesEvery is how often expired stored responses are deleted.
const pruneResponsesEvery = time.Hour

// openResponses gives the gateway the [storage] store for the Responses
// API's stored responses (store, previous_response_id), so a chain
// survives a restart, and deletes expired ones hourly.
func (d *Daemon) openResponses(ctx context.Context, st config.Storage) error {
	s, err := d.openStore(ctx, st)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(pruneResponsesEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				if n, err := s.PruneResponses(context.Background(), now); err != nil {
					d.Log.Warn("pruning stored responses", "err", err)
				} else if n > 0 {
					d.Log.Info("pruned expired stored responses", "count", n)
				}
			}
		}
	}()
	d.closeAll = append(d.closeAll, func() {
		close(stop)
		<-done
	})
	d.Gateway.Responses = s
	return nil
}
