//go:build !wasip1

package main

import "errors"

// completeV0 needs the WASM host (see v0_wasip1.go).
func completeV0(model, text string) (answer, provider string, err error) {
	return "", "", errors.New("summarise-v0: only under the WASM host")
}
