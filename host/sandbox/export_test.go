package sandbox

import "context"

// PoolState inspects the instance pool for tests. Call it only while no call
// is in flight: it takes every idle instance out of the pool and puts it back.
// idle is the number of instances waiting in the pool, closedIdle how many of
// those wazero has already closed (a closed instance in the pool fails the next
// call made on it), and slots the number of instances the pool counts as live.
func (p *Plugin) PoolState() (idle, closedIdle, slots int) {
	var ins []*instance
	for {
		select {
		case in := <-p.idle:
			ins = append(ins, in)
			continue
		default:
		}
		break
	}
	for _, in := range ins {
		if in.mod.IsClosed() {
			closedIdle++
		}
		p.idle <- in
	}
	return len(ins), closedIdle, len(p.slots)
}

// InFlight is the number of instances taken by calls in progress. Unlike
// PoolState it does not touch the pool, so it is safe to poll during calls.
func (p *Plugin) InFlight() int { return len(p.slots) - len(p.idle) }

// NewInstanceForTest makes one more instance outside the pool's accounting
// and returns a func that closes it; benchmarks time it.
func (p *Plugin) NewInstanceForTest(ctx context.Context) (func(), error) {
	in, err := p.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	return func() { in.mod.Close(context.Background()) }, nil
}

// SharesCode reports whether p and q run on one compiled module.
func (p *Plugin) SharesCode(q *Plugin) bool { return p.code == q.code }

// CompiledModules is the number of compiled modules alive in the process.
func CompiledModules() int {
	compiledMu.Lock()
	defer compiledMu.Unlock()
	return len(compiledBy)
}

// FillPoolForTest makes instances until the pool is full and leaves them
// idle, as a burst of concurrent calls would.
func (p *Plugin) FillPoolForTest(ctx context.Context) error {
	for {
		select {
		case p.slots <- struct{}{}:
		default:
			return nil
		}
		in, err := p.instantiate(ctx)
		if err != nil {
			<-p.slots
			return err
		}
		in.pooled = true
		p.idle <- in
	}
}
