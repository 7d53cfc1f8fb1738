//go:build !wasip1

package plugin

import (
	"sync"
	"time"
)

// Host is the set of host functions a natively built plugin calls. Package
// plugintest provides an in-memory implementation; SetHost installs one.
type Host interface {
	Log(level int, msg string)
	Now() time.Time
	KVGet(key string) ([]byte, bool)
	KVPut(key string, val []byte, ttl time.Duration) error
	KVDelete(key string) error
	Config() []byte
	Metric(kind int, name string, v float64)
}

var (
	hostMu sync.Mutex
	host   Host
)

// SetHost installs the host functions used by a natively built plugin.
func SetHost(h Host) {
	hostMu.Lock()
	host = h
	hostMu.Unlock()
}

func currentHost() Host {
	hostMu.Lock()
	defer hostMu.Unlock()
	return host
}

// Call runs one export natively, as the WASM host would: input bytes in,
// output bytes out (first byte StatusError or the wire format version). The
// result is copied, so it stays valid. Calls are serialized, as they are on one
// WASM instance.
func Call(op Op, in []byte) []byte {
	callMu.Lock()
	defer callMu.Unlock()
	return append([]byte(nil), dispatch(op, in)...)
}

var callMu sync.Mutex

func hostLog(level uint32, msg string) {
	if h := currentHost(); h != nil {
		h.Log(int(level), msg)
	}
}

func hostClock() int64 {
	if h := currentHost(); h != nil {
		return h.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

func hostKVGet(key string) ([]byte, bool) {
	if h := currentHost(); h != nil {
		return h.KVGet(key)
	}
	return nil, false
}

func hostKVPut(key string, val []byte, ttlMs int64) error {
	if h := currentHost(); h != nil {
		return h.KVPut(key, val, time.Duration(ttlMs)*time.Millisecond)
	}
	return errNoHost
}

func hostKVDelete(key string) error {
	if h := currentHost(); h != nil {
		return h.KVDelete(key)
	}
	return errNoHost
}

func hostConfig() []byte {
	if h := currentHost(); h != nil {
		return h.Config()
	}
	return nil
}

func hostMetric(kind uint32, name string, v float64) {
	if h := currentHost(); h != nil {
		h.Metric(int(kind), name, v)
	}
}
