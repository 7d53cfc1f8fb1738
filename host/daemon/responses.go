package daemon

import (
	"context"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/store"
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
	// Answers are readable at once and written to disk behind the
	// request (store.BufferedResponses): the commit was ~0.15 ms of every
	// stored answer's latency. Closing writes what is pending, before the
	// store itself closes (closeAll runs in reverse).
	buf := store.NewBufferedResponses(s, func(err error) { d.Log.Error("writing a stored response", "err", err) })
	d.closeAll = append(d.closeAll, func() {
		close(stop)
		<-done
		buf.Close()
	})
	d.Gateway.Responses = buf
	return nil
}
