package plugin

import (
	"strings"
	"testing"
)

func TestDecodeStrict(t *testing.T) {
	var c struct {
		TTL  string `json:"ttl"`
		Size int    `json:"size"`
	}
	c.Size = 7
	if err := DecodeStrict([]byte("  \n"), &c); err != nil || c.Size != 7 {
		t.Fatalf("empty: %v, %+v", err, c)
	}
	if err := DecodeStrict([]byte(`{"ttl":"5s","size":3}`), &c); err != nil || c.TTL != "5s" || c.Size != 3 {
		t.Fatalf("valid: %v, %+v", err, c)
	}
	err := DecodeStrict([]byte(`{"tll":"5s"}`), &c)
	if err == nil || !strings.Contains(err.Error(), `"tll"`) {
		t.Fatalf("a typo was accepted: %v", err)
	}
	if err := DecodeStrict([]byte(`{"size":"big"}`), &c); err == nil {
		t.Fatal("a wrong type was accepted")
	}
}
