//go:build !wasip1

package plugin

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
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
	// Shared key/value space of the plugin, the same for every tenant.
	KVGetShared(key string) ([]byte, bool)
	KVPutShared(key string, val []byte, ttl time.Duration) error
	KVDeleteShared(key string) error
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
//
// As in wasm, the input is read from one buffer reused by every call; after
// the call Call overwrites it, so a plugin that keeps a string or slice of
// its input past the call (instead of copying it, docs/abi.md "What a
// plugin may keep") reads garbage in its own tests rather than only in
// production.
func Call(op Op, in []byte) []byte {
	callMu.Lock()
	defer callMu.Unlock()
	inBuf = append(inBuf[:0], in...)
	res := append([]byte(nil), dispatch(op, inBuf)...)
	for i := range inBuf {
		inBuf[i] = poison
	}
	return res
}

var (
	callMu sync.Mutex
	inBuf  []byte
)

// poison is what a kept view of an earlier call's input reads natively.
const poison = '\xa5'

// Select makes entry i (in registration order, see [Entries]) the one the
// following Calls run on, as bardo_select does; false when there is none.
func Select(i int) bool {
	callMu.Lock()
	defer callMu.Unlock()
	return selectEntry(i)
}

func hostLog(level uint32, msg string) {
	if h := currentHost(); h != nil {
		h.Log(int(level), msg)
	}
}

// hostABIMinor natively is the minor version this SDK implements.
func hostABIMinor() int { return ABIMinor }

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

func hostKVGetAppend(dst []byte, key string) ([]byte, bool) {
	v, ok := hostKVGet(key)
	if !ok {
		return dst, false
	}
	return append(dst, v...), true
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

func hostKVGetShared(key string) ([]byte, bool) {
	if h := currentHost(); h != nil {
		return h.KVGetShared(key)
	}
	return nil, false
}

func hostKVPutShared(key string, val []byte, ttlMs int64) error {
	if h := currentHost(); h != nil {
		return h.KVPutShared(key, val, time.Duration(ttlMs)*time.Millisecond)
	}
	return errNoHost
}

func hostKVDeleteShared(key string) error {
	if h := currentHost(); h != nil {
		return h.KVDeleteShared(key)
	}
	return errNoHost
}

// Natively the primitives run in-process: the same results the host gives.
func hostSHA256(data []byte) [32]byte { return sha256.Sum256(data) }

var (
	nativeRegexMu sync.Mutex
	nativeRegex   [][]*regexp.Regexp
)

func hostRegexCompile(patterns string) int32 {
	var set []*regexp.Regexp
	for _, p := range strings.Split(patterns, "\n") {
		re, err := regexp.Compile(p)
		if err != nil {
			return -1
		}
		set = append(set, re)
	}
	nativeRegexMu.Lock()
	defer nativeRegexMu.Unlock()
	nativeRegex = append(nativeRegex, set)
	return int32(len(nativeRegex) - 1)
}

func hostRegexFind(set int32, text string) ([]byte, bool) {
	nativeRegexMu.Lock()
	if set < 0 || int(set) >= len(nativeRegex) {
		nativeRegexMu.Unlock()
		return nil, false
	}
	res := nativeRegex[set]
	nativeRegexMu.Unlock()
	var out []byte
	for i, re := range res {
		for _, loc := range re.FindAllStringIndex(text, -1) {
			out = binary.LittleEndian.AppendUint32(out, uint32(i))
			out = binary.LittleEndian.AppendUint32(out, uint32(loc[0]))
			out = binary.LittleEndian.AppendUint32(out, uint32(loc[1]))
		}
	}
	return out, true
}

// ServiceHost is the optional part of a native Host that serves the ABI v1.2
// services: it receives the same wire-encoded request the WASM host does and
// returns the status-prefixed reply. Without it, natively built plugins get
// an error from Embed, Classify, the Vector functions and Complete; plugins
// that use them are best tested under the real host (host/testkit/layertest).
type ServiceHost interface {
	Service(name string, req []byte) ([]byte, error)
}

func hostService(name string, req []byte) ([]byte, error) {
	sh, ok := currentHost().(ServiceHost)
	if !ok {
		return nil, fmt.Errorf("%s: %w (the native host offers no services)", name, errNoHost)
	}
	return sh.Service(name, req)
}

// hostServiceView is hostService (the wasm build's leaves the reply in its
// scratch buffer).
func hostServiceView(name string, req []byte) ([]byte, error) { return hostService(name, req) }
