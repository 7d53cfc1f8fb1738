package pipeline

// InFlight reports how many requests hold the current pipeline (Acquire
// not yet released; a stream holds it until its last event is written).
// Requests still finishing on a pipeline retired by a reload are not
// counted. The daemon's idle release reads it.
func (m *Manager) InFlight() int64 { return m.cur.Load().active.Load() }
