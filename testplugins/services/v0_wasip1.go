//go:build wasip1

package main

import (
	"errors"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/wire"
)

//go:wasmimport bardo_v1 complete
func importComplete(in unsafe.Pointer, inLen uint32, out unsafe.Pointer, outCap uint32) int64

// completeV0 sends the complete service's original, text-only request and
// reads only the reply's original fields, as a plugin built before the
// whole-request form does: the host must keep serving it.
func completeV0(model, text string) (answer, provider string, err error) {
	var e wire.Encoder
	e.Reset()
	e.String("session_compact")
	e.String(model)
	e.String("")
	e.Strings([]string{"user"})
	e.Strings([]string{text})
	e.Uint(50)
	in := e.Bytes()
	buf := make([]byte, 16) // small: the host keeps the reply for the retry
	for {
		n := importComplete(unsafe.Pointer(unsafe.SliceData(in)), uint32(len(in)), unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
		if n < 0 {
			return "", "", errors.New("the host refused the call")
		}
		if int(n) <= len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, n)
	}
	if len(buf) == 0 || buf[0] != 1 {
		if len(buf) > 0 {
			return "", "", errors.New(string(buf[1:]))
		}
		return "", "", errors.New("empty reply")
	}
	d := wire.NewDecoder(buf[1:])
	answer = d.String()
	provider = d.String()
	return answer, provider, d.Err()
}
