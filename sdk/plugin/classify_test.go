//go:build !wasip1

package plugin

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

// classifyHost answers the classify service as host/sandbox does: the
// labels, then every text's scores (one float32 per label) in one run.
type classifyHost struct {
	labels []string
	dec    wire.Decoder
	enc    wire.Encoder
	flat   []byte
	reply  []byte
}

func (h *classifyHost) Log(int, string)                                 {}
func (h *classifyHost) Now() time.Time                                  { return time.Unix(0, 0) }
func (h *classifyHost) KVGet(string) ([]byte, bool)                     { return nil, false }
func (h *classifyHost) KVPut(string, []byte, time.Duration) error       { return nil }
func (h *classifyHost) KVDelete(string) error                           { return nil }
func (h *classifyHost) Config() []byte                                  { return nil }
func (h *classifyHost) Metric(int, string, float64)                     {}
func (h *classifyHost) KVGetShared(string) ([]byte, bool)               { return nil, false }
func (h *classifyHost) KVPutShared(string, []byte, time.Duration) error { return nil }
func (h *classifyHost) KVDeleteShared(string) error                     { return nil }

// Service scores text i with label j as i + j/10.
func (h *classifyHost) Service(name string, req []byte) ([]byte, error) {
	// Kept buffers: the test counts ClassifyLabel's allocations, not these.
	d, e := &h.dec, &h.enc
	d.Init(req)
	_ = d.String() // the model
	n := int(d.Uint())
	e.Reset()
	e.Strings(h.labels)
	flat := h.flat[:0]
	for i := 0; i < n; i++ {
		for j := range h.labels {
			flat = binary.LittleEndian.AppendUint32(flat, math.Float32bits(float32(i)+float32(j)/10))
		}
	}
	h.flat = flat
	e.Raw(flat)
	h.reply = append(append(h.reply[:0], replyOK), e.Bytes()...)
	return h.reply, nil
}

// ClassifyLabel gives the column of Classify's scores its label names
// (case-insensitively), names the model's labels when the label is not
// one of them, and allocates nothing once its buffers have grown (inside
// wasm every allocation is ~1 µs; Classify makes ~9 a call).
func TestClassifyLabel(t *testing.T) {
	h := &classifyHost{labels: []string{"SAFE", "INJECTION"}}
	SetHost(h)
	t.Cleanup(func() { SetHost(nil) })
	texts := []string{"a", "b", "c"}
	labels, all, err := Classify("m", texts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ClassifyLabel("m", "injection", texts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) || labels[1] != "INJECTION" {
		t.Fatalf("got %v, labels %v", got, labels)
	}
	for i := range texts {
		if got[i] != all[i][1] {
			t.Errorf("text %d: %v, Classify says %v", i, got[i], all[i][1])
		}
	}
	if _, err := ClassifyLabel("m", "JAILBREAK", texts, nil); err == nil || !strings.Contains(err.Error(), "SAFE, INJECTION") {
		t.Errorf("unknown label: %v", err)
	}
	dst := got[:0]
	if n := testing.AllocsPerRun(100, func() {
		dst, err = ClassifyLabel("m", "INJECTION", texts, dst[:0])
	}); n != 0 || err != nil {
		t.Errorf("%v allocations a call (err %v), want 0", n, err)
	}
}

// A reply whose scores do not cover every text and label is an error,
// never an index out of range.
func TestClassifyLabelMalformed(t *testing.T) {
	h := &classifyHost{labels: []string{"a", "b"}}
	SetHost(h)
	t.Cleanup(func() { SetHost(nil) })
	for _, reply := range [][]byte{
		{},
		{replyOK},
		{replyOK, wire.FormatVersion, 2, 1, 'a', 1, 'b', 4, 0, 0, 0, 0}, // one float for two labels
		{replyOK, wire.FormatVersion, 0, 0},                             // no labels
		{replyErr, 'n', 'o'},
	} {
		if _, err := ClassifyLabel("m", "b", []string{"x"}, nil); err != nil {
			t.Fatalf("well-formed: %v", err)
		}
		bad := &badHost{classifyHost: h, reply: reply}
		SetHost(bad)
		if got, err := ClassifyLabel("m", "b", []string{"x"}, nil); err == nil {
			t.Errorf("reply %v: %v, want an error", reply, got)
		}
		SetHost(h)
	}
}

type badHost struct {
	*classifyHost
	reply []byte
}

func (b *badHost) Service(string, []byte) ([]byte, error) { return b.reply, nil }
