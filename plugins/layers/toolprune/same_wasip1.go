//go:build wasip1

package main

import "unsafe"

// sameString is a == b. Inside wasm the runtime compares strings a byte at
// a time; eight at a time makes the tool cache's check several times
// cheaper. (Natively, == is used: checkptr would flag the unaligned loads.)
func sameString(a, b string) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	if n == 0 {
		return true
	}
	pa, pb := unsafe.Pointer(unsafe.StringData(a)), unsafe.Pointer(unsafe.StringData(b))
	if pa == pb {
		return true
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		if *(*uint64)(unsafe.Add(pa, i)) != *(*uint64)(unsafe.Add(pb, i)) {
			return false
		}
	}
	for ; i < n; i++ {
		if *(*byte)(unsafe.Add(pa, i)) != *(*byte)(unsafe.Add(pb, i)) {
			return false
		}
	}
	return true
}
