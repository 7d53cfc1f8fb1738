package onnxgraph

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// initORT loads the real onnxruntime; the writer is only proven by a runtime
// that parses the bytes and computes with them.
func initORT(t testing.TB) {
	t.Helper()
	if err := onnxrt.Init(onnxrt.Options{}); err != nil {
		t.Fatalf("%v\nthese tests need the onnxruntime library: run `make deps`", err)
	}
}

type input struct {
	name  string
	shape []int64
	f32   []float32
	i64   []int64
}

// run writes m, loads it in onnxruntime and returns the float32 outputs.
func run(t *testing.T, m *Model, inputs []input, outputs []string) [][]float32 {
	t.Helper()
	initORT(t)
	data, err := m.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	opts, err := onnxrt.SessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	names := make([]string, len(inputs))
	vals := make([]ort.Value, len(inputs))
	for i, in := range inputs {
		names[i] = in.name
		var v ort.Value
		if in.i64 != nil {
			v, err = ort.NewTensor(ort.NewShape(in.shape...), in.i64)
		} else {
			v, err = ort.NewTensor(ort.NewShape(in.shape...), in.f32)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer v.Destroy()
		vals[i] = v
	}
	sess, err := ort.NewDynamicAdvancedSessionWithONNXData(data, names, outputs, opts)
	if err != nil {
		t.Fatalf("onnxruntime rejected the model: %v", err)
	}
	defer sess.Destroy()
	outs := make([]ort.Value, len(outputs))
	if err := sess.Run(vals, outs); err != nil {
		t.Fatalf("Run: %v", err)
	}
	res := make([][]float32, len(outs))
	for i, o := range outs {
		ft, ok := o.(*ort.Tensor[float32])
		if !ok {
			t.Fatalf("output %s is %T, want float32 tensor", outputs[i], o)
		}
		res[i] = append([]float32(nil), ft.GetData()...)
		o.Destroy()
	}
	return res
}

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol {
			t.Fatalf("%s[%d] = %v, want %v (all: got %v want %v)", what, i, got[i], want[i], got, want)
		}
	}
}

func sym(names ...string) []Dim {
	d := make([]Dim, len(names))
	for i, n := range names {
		d[i] = Dim{Param: n}
	}
	return d
}

// Gather + ReduceMean is the shape of the GloVe embedder: look rows up by id,
// then average them per text. Checked against the same computation in Go.
func TestGatherReduceMean(t *testing.T) {
	const vocab, dim = 6, 4
	table := make([]float32, vocab*dim)
	for i := range table {
		table[i] = float32(i)*0.5 - 3
	}
	m := &Model{
		ProducerName: "onnxgraph-test",
		Graph: Graph{
			Name:         "gather_mean",
			Initializers: []Tensor{{Name: "E", DType: Float, Dims: []int64{vocab, dim}, Floats: table}},
			Nodes: []Node{
				{Op: "Gather", Inputs: []string{"E", "ids"}, Outputs: []string{"rows"}, Attrs: []Attr{AttrInt("axis", 0)}},
				// axes=[-2]: a negative INTS attribute exercises the ten-byte varints.
				{Op: "ReduceMean", Inputs: []string{"rows"}, Outputs: []string{"mean"}, Attrs: []Attr{AttrInts("axes", []int64{-2}), AttrInt("keepdims", 0)}},
			},
			Inputs:  []ValueInfo{{Name: "ids", DType: Int64, Dims: sym("batch", "seq")}},
			Outputs: []ValueInfo{{Name: "mean", DType: Float, Dims: []Dim{{Param: "batch"}, {Value: dim}}}},
		},
	}
	ids := []int64{0, 5, 2, 3, 3, 1}
	got := run(t, m, []input{{name: "ids", shape: []int64{2, 3}, i64: ids}}, []string{"mean"})[0]
	want := make([]float32, 2*dim)
	for b := range 2 {
		for d := range dim {
			var s float32
			for j := range 3 {
				s += table[int(ids[b*3+j])*dim+d]
			}
			want[b*dim+d] = s / 3
		}
	}
	near(t, "mean", got, want, 1e-5)
}

func TestMatMulAdd(t *testing.T) {
	w := []float32{1, 2, 3, -1, 0.5, 4} // [3,2]
	bias := []float32{0.25, -7}
	m := &Model{
		Opset: 13,
		Graph: Graph{
			Initializers: []Tensor{
				{Name: "W", DType: Float, Dims: []int64{3, 2}, Floats: w},
				{Name: "B", DType: Float, Dims: []int64{2}, Floats: bias},
			},
			Nodes: []Node{
				{Op: "MatMul", Inputs: []string{"x", "W"}, Outputs: []string{"xw"}},
				{Op: "Add", Inputs: []string{"xw", "B"}, Outputs: []string{"y"}},
			},
			Inputs:  []ValueInfo{{Name: "x", DType: Float, Dims: []Dim{{Param: "n"}, {Value: 3}}}},
			Outputs: []ValueInfo{{Name: "y", DType: Float, Dims: []Dim{{Param: "n"}, {Value: 2}}}},
		},
	}
	x := []float32{1, 0, 2, -1, 3, 0.5}
	got := run(t, m, []input{{name: "x", shape: []int64{2, 3}, f32: x}}, []string{"y"})[0]
	want := make([]float32, 4)
	for r := range 2 {
		for c := range 2 {
			s := bias[c]
			for k := range 3 {
				s += x[r*3+k] * w[k*2+c]
			}
			want[r*2+c] = s
		}
	}
	near(t, "y", got, want, 1e-5)
}

// Every attribute kind and every initializer dtype, each proven by an output
// that would differ if it were encoded wrongly.
func TestAttributesAndDTypes(t *testing.T) {
	m := &Model{
		Graph: Graph{
			Initializers: []Tensor{
				{Name: "i32", DType: Int32, Dims: []int64{3}, Int64s: []int64{-2, 0, 70000}},
				{Name: "bools", DType: Bool, Dims: []int64{3}, Int64s: []int64{1, 0, 5}},
				{Name: "halves", DType: Float16, Dims: []int64{3}, Floats: []float32{0.5, -2.25, 1000}},
				{Name: "pads", DType: Int64, Dims: []int64{4}, Int64s: []int64{0, 1, 0, 2}},
			},
			Nodes: []Node{
				{Op: "Cast", Inputs: []string{"i32"}, Outputs: []string{"i32f"}, Attrs: []Attr{AttrInt("to", int64(Float))}},
				{Op: "Cast", Inputs: []string{"bools"}, Outputs: []string{"boolf"}, Attrs: []Attr{AttrInt("to", int64(Float))}},
				{Op: "Cast", Inputs: []string{"halves"}, Outputs: []string{"halff"}, Attrs: []Attr{AttrInt("to", int64(Float))}},
				// FLOATS attribute.
				{Op: "Constant", Outputs: []string{"cf"}, Attrs: []Attr{AttrFloats("value_floats", []float32{1.5, -3})}},
				// TENSOR attribute.
				{Op: "Constant", Outputs: []string{"ct"}, Attrs: []Attr{AttrTensor("value", Tensor{DType: Float, Dims: []int64{2, 2}, Floats: []float32{1, 2, 3, 4}})}},
				// FLOAT attributes: y = alpha*A*B + beta*C with B = identity.
				{Op: "Gemm", Inputs: []string{"x", "ct", "cf"}, Outputs: []string{"gemm"}, Attrs: []Attr{AttrFloat("alpha", 2), AttrFloat("beta", -0.5)}},
				// STRING attribute: edge padding repeats the border values.
				{Op: "Pad", Inputs: []string{"x", "pads"}, Outputs: []string{"padded"}, Attrs: []Attr{AttrString("mode", "edge")}},
				// Custom-domain-free INTS: Transpose perm.
				{Op: "Transpose", Inputs: []string{"ct"}, Outputs: []string{"ctT"}, Attrs: []Attr{AttrInts("perm", []int64{1, 0})}},
			},
			Inputs: []ValueInfo{{Name: "x", DType: Float, Dims: []Dim{{Value: 1}, {Value: 2}}}},
			Outputs: []ValueInfo{
				{Name: "i32f", DType: Float, Dims: []Dim{{Value: 3}}},
				{Name: "boolf", DType: Float, Dims: []Dim{{Value: 3}}},
				{Name: "halff", DType: Float, Dims: []Dim{{Value: 3}}},
				{Name: "gemm", DType: Float, Dims: []Dim{{Value: 1}, {Value: 2}}},
				{Name: "padded", DType: Float, Dims: []Dim{{Value: 1}, {Value: 5}}},
				{Name: "ctT", DType: Float, Dims: []Dim{{Value: 2}, {Value: 2}}},
			},
		},
	}
	outs := run(t, m, []input{{name: "x", shape: []int64{1, 2}, f32: []float32{10, 20}}},
		[]string{"i32f", "boolf", "halff", "gemm", "padded", "ctT"})
	near(t, "i32f", outs[0], []float32{-2, 0, 70000}, 0)
	near(t, "boolf", outs[1], []float32{1, 0, 1}, 0)
	near(t, "halff", outs[2], []float32{0.5, -2.25, 1000}, 0)
	// [10 20]·[[1 2][3 4]] = [70 100]; ×2 = [140 200]; + (-0.5)·[1.5 -3].
	near(t, "gemm", outs[3], []float32{140 - 0.75, 200 + 1.5}, 1e-4)
	near(t, "padded", outs[4], []float32{10, 10, 20, 20, 20}, 0)
	near(t, "ctT", outs[5], []float32{1, 3, 2, 4}, 0)
}

// Metadata and producer name must survive a round trip through the runtime,
// since model loaders read labels and pooling from metadata_props.
func TestMetadataAndWriteFile(t *testing.T) {
	initORT(t)
	m := &Model{
		ProducerName: "bardo-test",
		DocString:    "identity",
		Metadata:     map[string]string{"labels": "safe,injection", "pooling": "mean"},
		Graph: Graph{
			Nodes:   []Node{{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}},
			Inputs:  []ValueInfo{{Name: "x", DType: Float, Dims: sym("n")}},
			Outputs: []ValueInfo{{Name: "y", DType: Float, Dims: sym("n")}},
		},
	}
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	md, err := ort.GetModelMetadata(path)
	if err != nil {
		t.Fatalf("GetModelMetadata: %v", err)
	}
	defer md.Destroy()
	if p, _ := md.GetProducerName(); p != "bardo-test" {
		t.Errorf("producer = %q", p)
	}
	if d, _ := md.GetDescription(); d != "identity" {
		t.Errorf("description = %q", d)
	}
	for k, want := range m.Metadata {
		got, ok, err := md.LookupCustomMetadataMap(k)
		if err != nil || !ok || got != want {
			t.Errorf("metadata %q = %q, %v, %v; want %q", k, got, ok, err, want)
		}
	}
	ins, outs, err := ort.GetInputOutputInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 1 || ins[0].Name != "x" || len(outs) != 1 || outs[0].Name != "y" {
		t.Errorf("io info = %v / %v", ins, outs)
	}
	if ins[0].DataType != ort.TensorElementDataTypeFloat {
		t.Errorf("input type = %v", ins[0].DataType)
	}
	// No temp files left next to the model.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the model", len(entries))
	}
}

func TestMarshalDeterministic(t *testing.T) {
	m := &Model{
		Metadata: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"},
		Graph: Graph{
			Nodes:   []Node{{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}},
			Inputs:  []ValueInfo{{Name: "x", DType: Float}},
			Outputs: []ValueInfo{{Name: "y", DType: Float}},
		},
	}
	a, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		b, _ := m.Marshal()
		if string(a) != string(b) {
			t.Fatal("Marshal output differs between calls")
		}
	}
}

func TestMarshalRejectsBadTensors(t *testing.T) {
	base := func(init Tensor) *Model {
		return &Model{Graph: Graph{
			Initializers: []Tensor{init},
			Nodes:        []Node{{Op: "Identity", Inputs: []string{init.Name}, Outputs: []string{"y"}}},
			Outputs:      []ValueInfo{{Name: "y", DType: Float}},
		}}
	}
	cases := map[string]*Model{
		"short floats":   base(Tensor{Name: "t", DType: Float, Dims: []int64{2, 2}, Floats: []float32{1, 2, 3}}),
		"wrong field":    base(Tensor{Name: "t", DType: Int64, Dims: []int64{1}, Floats: []float32{1}}),
		"int32 overflow": base(Tensor{Name: "t", DType: Int32, Dims: []int64{1}, Int64s: []int64{1 << 40}}),
		"negative dim":   base(Tensor{Name: "t", DType: Float, Dims: []int64{-1}}),
		"unknown dtype":  base(Tensor{Name: "t", DType: DType(99), Dims: []int64{1}, Floats: []float32{1}}),
		"no outputs":     {Graph: Graph{Nodes: []Node{{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}}}},
		"raw attr": {Graph: Graph{
			Nodes:   []Node{{Op: "Softmax", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: []Attr{{Name: "axis"}}}},
			Outputs: []ValueInfo{{Name: "y", DType: Float}},
		}},
	}
	for name, m := range cases {
		if _, err := m.Marshal(); err == nil {
			t.Errorf("%s: Marshal succeeded, want an error", name)
		} else if !strings.HasPrefix(err.Error(), "onnxgraph:") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		}
	}
}

func TestFloat32ToFloat16(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},                  // largest finite half
		{65520, 0x7c00},                  // rounds up to +Inf
		{1e9, 0x7c00},                    // saturates
		{float32(math.Inf(-1)), 0xfc00},  // -Inf
		{6.103515625e-05, 0x0400},        // smallest normal
		{5.960464477539063e-08, 0x0001},  // smallest subnormal
		{2.9802322387695312e-08, 0x0000}, // half of it: ties to even → 0
		{1e-10, 0x0000},                  // underflow
		{1.0009765625, 0x3c01},           // 1 + 2^-10, exact
		{1.00048828125, 0x3c00},          // 1 + 2^-11: tie, rounds to even
		{1.00146484375, 0x3c02},          // 1 + 3·2^-11: tie, rounds to even (up)
	}
	for _, c := range cases {
		if got := Float32ToFloat16(c.f); got != c.want {
			t.Errorf("Float32ToFloat16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := Float32ToFloat16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("NaN → %#04x, not a NaN", got)
	}
}
