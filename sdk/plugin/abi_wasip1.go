//go:build wasip1

package plugin

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// The ABI v1 exports. Each op export takes the length of the input the host
// wrote into the buffer obtained from bardo_buffer, and returns the output as
// ptr<<32 | len. Every export ends with runtime.Gosched(): a reactor guest only
// runs its other goroutines (the garbage collector's workers among them) while
// the host is inside one of its exports, so without it the heap grows without
// bound over many calls.

var inBuf []byte

//go:wasmexport bardo_abi_version
func exportABIVersion() uint32 { return ABIVersion }

// bardo_buffer allocates a fresh buffer for every call: decoded strings alias
// it (no per-field copies), so it must outlive the call for as long as a
// plugin keeps any of them.
//
//go:wasmexport bardo_buffer
func exportBuffer(size uint32) uint32 {
	inBuf = make([]byte, size)
	if size == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&inBuf[0])))
}

func call(op Op, n uint32) uint64 {
	var res []byte
	if int(n) > len(inBuf) {
		// The host must write through bardo_buffer first; refusing here keeps
		// a host bug from reading stale bytes of an earlier call.
		res = fail(errInputLength)
	} else {
		res = dispatch(op, inBuf[:n])
	}
	runtime.Gosched()
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

// readInto calls f with a buffer until the value fits: host functions that
// return data write at most bufCap bytes and return the full length (or -1
// when there is nothing).
func readInto(f func(buf []byte) int64) ([]byte, bool) {
	buf := make([]byte, 256)
	for {
		n := f(buf)
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(buf) {
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}

func hostKVGet(key string) ([]byte, bool) {
	return readInto(func(buf []byte) int64 {
		return importKVGet(strPtr(key), uint32(len(key)), bytesPtr(buf), uint32(len(buf)))
	})
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
	b, _ := readInto(func(buf []byte) int64 { return importConfig(bytesPtr(buf), uint32(len(buf))) })
	return b
}

func hostMetric(kind uint32, name string, v float64) {
	importMetric(kind, strPtr(name), uint32(len(name)), v)
}

func hostKVGetShared(key string) ([]byte, bool) {
	return readInto(func(buf []byte) int64 {
		return importKVGetShared(strPtr(key), uint32(len(key)), bytesPtr(buf), uint32(len(buf)))
	})
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

func hostSHA256(data []byte) (sum [32]byte) {
	importHash(0, bytesPtr(data), uint32(len(data)), unsafe.Pointer(&sum[0]))
	return sum
}

func hostRegexCompile(patterns string) int32 {
	return importRegexCompile(strPtr(patterns), uint32(len(patterns)))
}

func hostRegexFind(set int32, text string) ([]byte, bool) {
	return readInto(func(buf []byte) int64 {
		return importRegexFind(set, strPtr(text), uint32(len(text)), bytesPtr(buf), uint32(len(buf)))
	})
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

// hostService calls one service import. A plugin that uses no service never
// reaches this function, so the linker drops it and the plugin imports none
// of them; one that uses any imports all six (a host without a service
// answers it with an error reply).
func hostService(name string, req []byte) ([]byte, error) {
	var f func(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64
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
	reply, ok := readInto(func(buf []byte) int64 {
		return f(bytesPtr(req), uint32(len(req)), bytesPtr(buf), uint32(len(buf)))
	})
	if !ok {
		return nil, fmt.Errorf("%s: the host refused the call (see the host log)", name)
	}
	return reply, nil
}
