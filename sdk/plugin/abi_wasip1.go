//go:build wasip1

package plugin

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// errInputLength refuses an op whose input length is past the buffer
// bardo_buffer handed out.
var errInputLength = errors.New("input length exceeds the buffer obtained from bardo_buffer")

// The ABI v1 exports. Each op export takes the length of the input the host
// wrote into the buffer obtained from bardo_buffer, and returns the output as
// ptr<<32 | len. Every yieldEvery-th op call ends with runtime.Gosched(): a
// reactor guest only runs its other goroutines (the garbage collector's
// workers among them) while the host is inside one of its exports, so
// without it the heap grows without bound over many calls.

var inBuf []byte

// yieldEvery is how often an op call ends by yielding. A Gosched that finds
// nothing else to run still walks the scheduler (findRunnable, schedule,
// execute: under wazero ~100 KB of machine code, cold after a request's
// hooks): profiled live it was ~8-10 µs of a request run's own ~35, and
// the GC's work it lets run under 1 µs a request. Yielding at one call in
// eight kept the heap bounded as before (the plugin checker's 10,000
// calls, RSS at 16 clients) and cut the run's overhead by ~12 µs without
// moving the GC's work into the hooks (docs/performance.md, the v1.7
// subsection). A plugin's own goroutines run at those yields too.
const yieldEvery = 8

// opCalls counts op calls, for yieldEvery.
var opCalls uint32

//go:wasmexport bardo_abi_version
func exportABIVersion() uint32 { return ABIVersion }

// bardo_buffer hands out the same buffer call after call while the input
// fits: a fresh 4 KB one for every call cost an allocation and, more, the
// garbage the guest's GC then collects. Decoded strings alias it, so what a
// plugin keeps past a call it copies (docs/abi.md, "What a plugin may
// keep"). A buffer grown past inBufKeep for one large input is given back
// at the next smaller one.
//
//go:wasmexport bardo_buffer
func exportBuffer(size uint32) uint32 {
	n := int(size)
	if n > cap(inBuf) || (cap(inBuf) > inBufKeep && n <= inBufKeep) {
		inBuf = make([]byte, n)
	}
	inBuf = inBuf[:n]
	if n == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&inBuf[0])))
}

// inBufKeep is the largest input buffer kept between calls.
const inBufKeep = 256 << 10

func call(op Op, n uint32) uint64 {
	var res []byte
	if int(n) > len(inBuf) {
		// The host must write through bardo_buffer first; refusing here keeps
		// a host bug from reading stale bytes of an earlier call.
		res = fail(errInputLength)
	} else {
		res = dispatch(op, inBuf[:n])
	}
	if opCalls++; opCalls%yieldEvery == 0 {
		runtime.Gosched()
	}
	if len(res) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&res[0])))<<32 | uint64(len(res))
}

// bardo_entries (v1.5) is the number of plugins the module exports; the
// host selects one with bardo_select before calling any op on its behalf.
//
//go:wasmexport bardo_entries
func exportEntries() uint32 { return uint32(len(entries)) }

// bardo_select (v1.5) makes entry i the one the next ops run on, until the
// next select: 0 when done, 1 when there is no entry i.
//
//go:wasmexport bardo_select
func exportSelect(i uint32) uint32 {
	if !selectEntry(int(i)) {
		return 1
	}
	return 0
}

//go:wasmexport bardo_describe
func exportDescribe(n uint32) uint64 { return call(OpDescribe, n) }

//go:wasmexport bardo_init
func exportInit(n uint32) uint64 { return call(OpInit, n) }

//go:wasmexport bardo_on_request
func exportOnRequest(n uint32) uint64 { return call(OpOnRequest, n) }

//go:wasmexport bardo_on_response
func exportOnResponse(n uint32) uint64 { return call(OpOnResponse, n) }

//go:wasmexport bardo_on_stream
func exportOnStream(n uint32) uint64 { return call(OpOnStream, n) }

//go:wasmexport bardo_encode
func exportEncode(n uint32) uint64 { return call(OpEncode, n) }

//go:wasmexport bardo_decode
func exportDecode(n uint32) uint64 { return call(OpDecode, n) }

//go:wasmexport bardo_decode_stream
func exportDecodeStream(n uint32) uint64 { return call(OpDecodeStream, n) }

//go:wasmexport bardo_provider_describe
func exportProviderDescribe(n uint32) uint64 { return call(OpProviderDescribe, n) }

//go:wasmexport bardo_resolve
func exportResolve(n uint32) uint64 { return call(OpResolve, n) }

//go:wasmexport bardo_on_fallback
func exportOnFallback(n uint32) uint64 { return call(OpOnFallback, n) }

// bardo_on_request_run (v1.7) runs the request phase of several entries in
// one call (run.go).
//
//go:wasmexport bardo_on_request_run
func exportOnRequestRun(n uint32) uint64 { return call(OpOnRequestRun, n) }

// bardo_on_response_run (v1.8) runs the response phase of several entries
// in one call (run.go).
//
//go:wasmexport bardo_on_response_run
func exportOnResponseRun(n uint32) uint64 { return call(OpOnResponseRun, n) }

// Host functions, module "bardo_v1" (docs/abi.md).

//go:wasmimport bardo_v1 log
func importLog(level uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport bardo_v1 clock_now
func importClockNow() int64

//go:wasmimport bardo_v1 abi_minor
func importABIMinor() int32

//go:wasmimport bardo_v1 kv_get
func importKVGet(key unsafe.Pointer, keyLen uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport bardo_v1 kv_put
func importKVPut(key unsafe.Pointer, keyLen uint32, val unsafe.Pointer, valLen uint32, ttlMs int64) int32

//go:wasmimport bardo_v1 kv_delete
func importKVDelete(key unsafe.Pointer, keyLen uint32) int32

//go:wasmimport bardo_v1 config
func importConfig(buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport bardo_v1 metric
func importMetric(kind uint32, name unsafe.Pointer, nameLen uint32, value float64)

//go:wasmimport bardo_v1 kv_get_shared
func importKVGetShared(key unsafe.Pointer, keyLen uint32, buf unsafe.Pointer, bufCap uint32) int64

//go:wasmimport bardo_v1 kv_put_shared
func importKVPutShared(key unsafe.Pointer, keyLen uint32, val unsafe.Pointer, valLen uint32, ttlMs int64) int32

//go:wasmimport bardo_v1 kv_delete_shared
func importKVDeleteShared(key unsafe.Pointer, keyLen uint32) int32

//go:wasmimport bardo_v1 hash
func importHash(algo uint32, data unsafe.Pointer, dataLen uint32, out unsafe.Pointer) int32

//go:wasmimport bardo_v1 regex_compile
func importRegexCompile(patterns unsafe.Pointer, n uint32) int32

//go:wasmimport bardo_v1 regex_find
func importRegexFind(set int32, text unsafe.Pointer, textLen uint32, buf unsafe.Pointer, bufCap uint32) int64

func strPtr(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func hostLog(level uint32, msg string) { importLog(level, strPtr(msg), uint32(len(msg))) }

func hostClock() int64 { return importClockNow() }

func hostABIMinor() int { return int(importABIMinor()) }

// scratch receives what host functions return. Kept from one host call to
// the next: what readInto returns is valid until the next host call, and
// callers that hand it on copy it.
var scratch = make([]byte, scratchKeep)

// scratchKeep is the size of scratch and the largest it stays: a larger
// value grows it for one read only.
const scratchKeep = 16 << 10

// hostRead is the shape of the host functions that return bytes: an input,
// and a buffer they fill with at most bufCap bytes, returning the full
// length (or -1 when there is nothing).
type hostRead func(in unsafe.Pointer, inLen uint32, buf unsafe.Pointer, bufCap uint32) int64

// readInto calls f until its value fits, in scratch when it can: a
// function value and its arguments rather than a closure, so a host call
// allocates nothing unless its value is larger than scratch (the host then
// answers twice).
func readInto(f hostRead, in unsafe.Pointer, inLen uint32) ([]byte, bool) {
	buf := scratch
	for {
		n := f(in, inLen, bytesPtr(buf), uint32(len(buf)))
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(buf) {
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}

// readCopy is readInto with the value copied out of scratch, for callers
// that hand it to the plugin (KVGet's value is the plugin's to keep).
func readCopy(f hostRead, in unsafe.Pointer, inLen uint32) ([]byte, bool) {
	b, ok := readInto(f, in, inLen)
	if !ok {
		return nil, false
	}
	if len(b) == 0 || &b[0] != &scratch[0] {
		return b, true // empty, or already a buffer of its own
	}
	return append(make([]byte, 0, len(b)), b...), true
}

func hostKVGet(key string) ([]byte, bool) {
	return readCopy(importKVGet, strPtr(key), uint32(len(key)))
}

func hostKVGetAppend(dst []byte, key string) ([]byte, bool) {
	b, ok := readInto(importKVGet, strPtr(key), uint32(len(key)))
	if !ok {
		return dst, false
	}
	return append(dst, b...), true
}

var errKV = errors.New("host refused the key/value operation (see the host log)")

func hostKVPut(key string, val []byte, ttlMs int64) error {
	if importKVPut(strPtr(key), uint32(len(key)), bytesPtr(val), uint32(len(val)), ttlMs) != 0 {
		return errKV
	}
	return nil
}

func hostKVDelete(key string) error {
	if importKVDelete(strPtr(key), uint32(len(key))) != 0 {
		return errKV
	}
	return nil
}

func hostConfig() []byte {
	b, _ := readCopy(configRead, nil, 0)
	return b
}

func configRead(_ unsafe.Pointer, _ uint32, buf unsafe.Pointer, bufCap uint32) int64 {
	return importConfig(buf, bufCap)
}

func hostMetric(kind uint32, name string, v float64) {
	importMetric(kind, strPtr(name), uint32(len(name)), v)
}

func hostKVGetShared(key string) ([]byte, bool) {
	return readCopy(importKVGetShared, strPtr(key), uint32(len(key)))
}

func hostKVPutShared(key string, val []byte, ttlMs int64) error {
	if importKVPutShared(strPtr(key), uint32(len(key)), bytesPtr(val), uint32(len(val)), ttlMs) != 0 {
		return errKV
	}
	return nil
}

func hostKVDeleteShared(key string) error {
	if importKVDeleteShared(strPtr(key), uint32(len(key))) != 0 {
		return errKV
	}
	return nil
}

// hashSum receives hostSHA256's sum: a local whose address goes to a
// wasmimport escapes, and would be allocated on every call.
var hashSum [32]byte

func hostSHA256(data []byte) [32]byte {
	importHash(0, bytesPtr(data), uint32(len(data)), unsafe.Pointer(&hashSum[0]))
	return hashSum
}

func hostRegexCompile(patterns string) int32 {
	return importRegexCompile(strPtr(patterns), uint32(len(patterns)))
}

// hostRegexFind returns the matches in scratch: FindAll parses them at once.
func hostRegexFind(set int32, text string) ([]byte, bool) {
	buf := scratch
	for {
		n := importRegexFind(set, strPtr(text), uint32(len(text)), bytesPtr(buf), uint32(len(buf)))
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(buf) {
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}

//go:wasmimport bardo_v1 embed
func importEmbed(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

//go:wasmimport bardo_v1 classify
func importClassify(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

//go:wasmimport bardo_v1 vector_insert
func importVectorInsert(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

//go:wasmimport bardo_v1 vector_search
func importVectorSearch(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

//go:wasmimport bardo_v1 vector_delete
func importVectorDelete(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

//go:wasmimport bardo_v1 complete
func importComplete(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

// hostService calls one service import, the reply copied: the services'
// decoders keep strings of it. A plugin that uses no service never
// reaches this function, so the linker drops it and the plugin imports none
// of them; one that uses any imports all six (a host without a service
// answers it with an error reply).
func hostService(name string, req []byte) ([]byte, error) {
	return serviceCall(name, req, readCopy)
}

// hostServiceView is hostService for a caller that reads the reply before
// its next host call and keeps nothing of it (ClassifyLabel): the reply
// stays in scratch, no copy is allocated.
func hostServiceView(name string, req []byte) ([]byte, error) {
	return serviceCall(name, req, readInto)
}

func serviceCall(name string, req []byte, read func(hostRead, unsafe.Pointer, uint32) ([]byte, bool)) ([]byte, error) {
	var f hostRead
	switch name {
	case svcEmbed:
		f = importEmbed
	case svcClassify:
		f = importClassify
	case svcVectorInsert:
		f = importVectorInsert
	case svcVectorSearch:
		f = importVectorSearch
	case svcVectorDelete:
		f = importVectorDelete
	case svcComplete:
		f = importComplete
	default:
		return nil, fmt.Errorf("unknown host service %q", name)
	}
	reply, ok := read(f, bytesPtr(req), uint32(len(req)))
	if !ok {
		return nil, fmt.Errorf("%s: the host refused the call (see the host log)", name)
	}
	return reply, nil
}
