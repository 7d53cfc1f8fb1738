package x402

import (
	"bytes"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// FuzzParseERC6492: any bytes with the magic suffix either unwrap into
// parts that wrap back to the same bytes' body, or are an error; never a
// panic (the body is attacker-chosen ABI data).
func FuzzParseERC6492(f *testing.F) {
	good, _ := erc6492Wrapper.Pack(common.HexToAddress("0x0ba5ed0c6aa8c49038f819e587e2633c4a9f428a"), []byte{1, 2, 3}, bytes.Repeat([]byte{7}, 65))
	f.Add(append(good, erc6492Magic...))
	f.Add(append(make([]byte, 96), erc6492Magic...))
	f.Add(erc6492Magic)
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, sig []byte) {
		w, ok, err := ParseERC6492(sig)
		if !ok {
			if bytes.HasSuffix(sig, erc6492Magic) {
				t.Fatal("a suffixed signature not recognised")
			}
			return
		}
		if err != nil {
			return
		}
		again, err := erc6492Wrapper.Pack(w.Factory, w.Calldata, w.Signature)
		if err != nil {
			t.Fatal(err)
		}
		w2, ok, err := ParseERC6492(append(again, erc6492Magic...))
		if !ok || err != nil || w2.Factory != w.Factory || !bytes.Equal(w2.Calldata, w.Calldata) || !bytes.Equal(w2.Signature, w.Signature) {
			t.Fatalf("re-wrapped: %+v %v %v, want %+v", w2, ok, err, w)
		}
	})
}

// TestERC6492CheckEmbedded: the deployless check's creation code is in the
// binary (go:embed of contracts/ERC6492Check.bin).
func TestERC6492CheckEmbedded(t *testing.T) {
	if len(erc6492Check) < 100 || erc6492Check[0] != 0x60 {
		t.Fatalf("ERC6492Check.bin not embedded as bytecode (%d bytes)", len(erc6492Check))
	}
}
