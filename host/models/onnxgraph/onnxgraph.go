// Package onnxgraph writes ONNX models (ModelProto) from plain Go values.
//
// The host builds its offline default models (the GloVe embedder, the TF-IDF
// injection classifier, small BERT-shaped test models) with its own
// converters, and those converters only ever need to *write* a handful of
// graph shapes. Pulling in a protobuf runtime and the generated onnx.proto
// bindings for that would add a large dependency for a few hundred lines of
// wire format, so this package hand-encodes the protobuf. Field numbers are
// taken from onnx/onnx.proto (IR version 8); each encoder below names the
// message it writes so the numbers can be checked against that file.
//
// Tensors are always written with raw_data (little-endian), which is what
// onnxruntime reads fastest and what keeps large initializers compact.
package onnxgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// DType is an ONNX TensorProto.DataType value.
type DType int32

// The ONNX element types the host's converters use.
const (
	Float   DType = 1
	Int32   DType = 6
	Int64   DType = 7
	Bool    DType = 9
	Float16 DType = 10
)

// String names the type as onnx.proto does.
func (d DType) String() string {
	switch d {
	case Float:
		return "FLOAT"
	case Int32:
		return "INT32"
	case Int64:
		return "INT64"
	case Bool:
		return "BOOL"
	case Float16:
		return "FLOAT16"
	}
	return fmt.Sprintf("DType(%d)", int32(d))
}

// irVersion is the ModelProto.ir_version written. 8 is understood by every
// onnxruntime since 1.10 and supports opsets up to 18+, which is all we need.
const irVersion = 8

// defaultOpset is used when Model.Opset is 0. Opset 17 has LayerNormalization
// and still takes ReduceMean/ReduceSum axes the way our converters write them.
const defaultOpset = 17

// Model is an ONNX ModelProto with a single graph.
type Model struct {
	Graph Graph
	// Opset is the default-domain ("ai.onnx") opset version; 0 means 17.
	Opset        int64
	ProducerName string
	DocString    string
	// Metadata is written as ModelProto.metadata_props (sorted by key so the
	// output is deterministic) and can be read back through onnxruntime's
	// ModelMetadata.
	Metadata map[string]string
}

// Graph is an ONNX GraphProto.
type Graph struct {
	Name         string
	Nodes        []Node
	Initializers []Tensor
	Inputs       []ValueInfo
	Outputs      []ValueInfo
}

// Node is an ONNX NodeProto. Domain "" is the default ai.onnx domain; any other
// domain (e.g. "com.microsoft") is declared in the model's opset imports at
// version 1.
type Node struct {
	Op      string
	Name    string
	Domain  string
	Inputs  []string
	Outputs []string
	Attrs   []Attr
}

// Tensor is an ONNX TensorProto holding either Floats (Float, Float16 —
// Float16 values are converted from float32 when written) or Int64s (Int64,
// Int32, Bool — narrowed when written). The data is written as raw_data.
type Tensor struct {
	Name   string
	DType  DType
	Dims   []int64
	Floats []float32
	Int64s []int64
}

// Dim is one dimension of a ValueInfo's shape; a non-empty Param makes it
// symbolic (e.g. "batch"), otherwise Value is the fixed size.
type Dim struct {
	Value int64
	Param string
}

// ValueInfo describes a graph input or output tensor (ValueInfoProto with a
// TypeProto.Tensor type). Nil Dims means a scalar; use symbolic Dims for
// dynamic sizes.
type ValueInfo struct {
	Name  string
	DType DType
	Dims  []Dim
}

// attrType is AttributeProto.AttributeType.
type attrType int32

const (
	attrFloat  attrType = 1
	attrInt    attrType = 2
	attrString attrType = 3
	attrTensor attrType = 4
	attrFloats attrType = 6
	attrInts   attrType = 7
)

// Attr is a node attribute (AttributeProto). Build it with the Attr*
// constructors, which set the type field ONNX requires.
type Attr struct {
	Name   string
	typ    attrType
	i      int64
	f      float32
	s      string
	t      *Tensor
	ints   []int64
	floats []float32
}

// AttrInt is an INT attribute.
func AttrInt(name string, v int64) Attr { return Attr{Name: name, typ: attrInt, i: v} }

// AttrFloat is a FLOAT attribute.
func AttrFloat(name string, v float32) Attr { return Attr{Name: name, typ: attrFloat, f: v} }

// AttrInts is an INTS attribute.
func AttrInts(name string, v []int64) Attr {
	return Attr{Name: name, typ: attrInts, ints: append([]int64(nil), v...)}
}

// AttrFloats is a FLOATS attribute.
func AttrFloats(name string, v []float32) Attr {
	return Attr{Name: name, typ: attrFloats, floats: append([]float32(nil), v...)}
}

// AttrString is a STRING attribute.
func AttrString(name, v string) Attr { return Attr{Name: name, typ: attrString, s: v} }

// AttrTensor is a TENSOR attribute (as used by Constant and
// ConstantOfShape).
func AttrTensor(name string, t Tensor) Attr {
	return Attr{Name: name, typ: attrTensor, t: &t}
}

// Marshal encodes the model as a serialized ModelProto. It checks what the
// encoder can check cheaply (tensor sizes, dtypes, names); graph semantics
// are left to the runtime, which reports them when it loads the model.
func (m *Model) Marshal() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	var e enc
	// ModelProto: ir_version=1, opset_import=8, producer_name=2,
	// producer_version=3, domain=4, model_version=5, doc_string=6, graph=7,
	// metadata_props=14.
	e.varintField(1, irVersion)
	opset := m.Opset
	if opset == 0 {
		opset = defaultOpset
	}
	e.msgField(8, func(o *enc) { // OperatorSetIdProto: domain=1, version=2
		o.stringField(1, "")
		o.varintField(2, uint64(opset))
	})
	for _, d := range m.customDomains() {
		e.msgField(8, func(o *enc) {
			o.stringField(1, d)
			o.varintField(2, 1)
		})
	}
	if m.ProducerName != "" {
		e.stringField(2, m.ProducerName)
	}
	if m.DocString != "" {
		e.stringField(6, m.DocString)
	}
	e.msgField(7, func(g *enc) { encodeGraph(g, &m.Graph) })
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.msgField(14, func(p *enc) { // StringStringEntryProto: key=1, value=2
			p.stringField(1, k)
			p.stringField(2, m.Metadata[k])
		})
	}
	return e.b, nil
}

// WriteFile marshals the model and writes it to path atomically (through a
// temporary file in the same directory), so a reader never sees half a model.
func (m *Model) WriteFile(path string) error {
	data, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("onnxgraph: marshal %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".onnxgraph-*")
	if err != nil {
		return fmt.Errorf("onnxgraph: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("onnxgraph: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("onnxgraph: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("onnxgraph: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("onnxgraph: write %s: %w", path, err)
	}
	return nil
}

func (m *Model) customDomains() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range m.Graph.Nodes {
		if n.Domain != "" && n.Domain != "ai.onnx" && !seen[n.Domain] {
			seen[n.Domain] = true
			out = append(out, n.Domain)
		}
	}
	sort.Strings(out)
	return out
}

func (m *Model) validate() error {
	g := &m.Graph
	if len(g.Outputs) == 0 {
		return errors.New("onnxgraph: graph has no outputs")
	}
	for i, n := range g.Nodes {
		if n.Op == "" {
			return fmt.Errorf("onnxgraph: node %d (%q) has no op type", i, n.Name)
		}
	}
	for _, t := range g.Initializers {
		if err := t.check(); err != nil {
			return err
		}
	}
	for _, n := range g.Nodes {
		for _, a := range n.Attrs {
			if a.typ == 0 {
				return fmt.Errorf("onnxgraph: node %q attribute %q: build attributes with the Attr* functions", n.Name, a.Name)
			}
			if a.t != nil {
				if err := a.t.check(); err != nil {
					return fmt.Errorf("onnxgraph: node %q attribute %q: %w", n.Name, a.Name, err)
				}
			}
		}
	}
	for _, v := range append(append([]ValueInfo(nil), g.Inputs...), g.Outputs...) {
		if v.Name == "" {
			return errors.New("onnxgraph: graph input/output without a name")
		}
		if !knownDType(v.DType) {
			return fmt.Errorf("onnxgraph: value %q: unsupported dtype %v", v.Name, v.DType)
		}
	}
	return nil
}

func knownDType(d DType) bool {
	switch d {
	case Float, Int32, Int64, Bool, Float16:
		return true
	}
	return false
}

// numElements is the product of the dims (1 for a scalar).
func numElements(dims []int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d", d)
		}
		n *= d
	}
	return n, nil
}

func (t *Tensor) check() error {
	n, err := numElements(t.Dims)
	if err != nil {
		return fmt.Errorf("onnxgraph: tensor %q: %w", t.Name, err)
	}
	switch t.DType {
	case Float, Float16:
		if int64(len(t.Floats)) != n || len(t.Int64s) != 0 {
			return fmt.Errorf("onnxgraph: tensor %q (%v, dims %v): want %d Floats, have %d Floats and %d Int64s", t.Name, t.DType, t.Dims, n, len(t.Floats), len(t.Int64s))
		}
	case Int64, Int32, Bool:
		if int64(len(t.Int64s)) != n || len(t.Floats) != 0 {
			return fmt.Errorf("onnxgraph: tensor %q (%v, dims %v): want %d Int64s, have %d Int64s and %d Floats", t.Name, t.DType, t.Dims, n, len(t.Int64s), len(t.Floats))
		}
		if t.DType == Int32 {
			for _, v := range t.Int64s {
				if v < math.MinInt32 || v > math.MaxInt32 {
					return fmt.Errorf("onnxgraph: tensor %q: value %d overflows INT32", t.Name, v)
				}
			}
		}
	default:
		return fmt.Errorf("onnxgraph: tensor %q: unsupported dtype %v", t.Name, t.DType)
	}
	return nil
}

// rawData is the tensor's little-endian raw_data bytes.
func (t *Tensor) rawData() []byte {
	switch t.DType {
	case Float:
		b := make([]byte, 4*len(t.Floats))
		for i, f := range t.Floats {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return b
	case Float16:
		b := make([]byte, 2*len(t.Floats))
		for i, f := range t.Floats {
			binary.LittleEndian.PutUint16(b[2*i:], Float32ToFloat16(f))
		}
		return b
	case Int64:
		b := make([]byte, 8*len(t.Int64s))
		for i, v := range t.Int64s {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		return b
	case Int32:
		b := make([]byte, 4*len(t.Int64s))
		for i, v := range t.Int64s {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(v)))
		}
		return b
	case Bool:
		b := make([]byte, len(t.Int64s))
		for i, v := range t.Int64s {
			if v != 0 {
				b[i] = 1
			}
		}
		return b
	}
	return nil
}

// Float32ToFloat16 converts to IEEE 754 half precision with round-to-nearest-
// even, saturating to ±Inf and flushing values below the subnormal range to 0.
func Float32ToFloat16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23) & 0xff
	mant := bits & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		// Subnormal: shift the mantissa (with its implicit 1) into place.
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint16(mant >> shift)
		rem := mant & ((1 << shift) - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | half
	}
	half := sign | uint16(e)<<10 | uint16(mant>>13)
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is the correct rounding
	}
	return half
}

// GraphProto: node=1, name=2, initializer=5, doc_string=10, input=11,
// output=12, value_info=13.
func encodeGraph(e *enc, g *Graph) {
	for i := range g.Nodes {
		e.msgField(1, func(n *enc) { encodeNode(n, &g.Nodes[i]) })
	}
	name := g.Name
	if name == "" {
		name = "graph"
	}
	e.stringField(2, name)
	for i := range g.Initializers {
		e.msgField(5, func(t *enc) { encodeTensor(t, &g.Initializers[i]) })
	}
	for i := range g.Inputs {
		e.msgField(11, func(v *enc) { encodeValueInfo(v, &g.Inputs[i]) })
	}
	for i := range g.Outputs {
		e.msgField(12, func(v *enc) { encodeValueInfo(v, &g.Outputs[i]) })
	}
}

// NodeProto: input=1, output=2, name=3, op_type=4, attribute=5, domain=7.
func encodeNode(e *enc, n *Node) {
	for _, in := range n.Inputs {
		e.stringFieldAlways(1, in) // "" is a legal "absent optional input"
	}
	for _, out := range n.Outputs {
		e.stringFieldAlways(2, out)
	}
	if n.Name != "" {
		e.stringField(3, n.Name)
	}
	e.stringField(4, n.Op)
	for i := range n.Attrs {
		e.msgField(5, func(a *enc) { encodeAttr(a, &n.Attrs[i]) })
	}
	if n.Domain != "" {
		e.stringField(7, n.Domain)
	}
}

// AttributeProto: name=1, f=2, i=3, s=4, t=5, floats=7, ints=8, type=20.
func encodeAttr(e *enc, a *Attr) {
	e.stringField(1, a.Name)
	switch a.typ {
	case attrFloat:
		e.fixed32Field(2, math.Float32bits(a.f))
	case attrInt:
		e.varintField(3, uint64(a.i))
	case attrString:
		e.bytesField(4, []byte(a.s))
	case attrTensor:
		e.msgField(5, func(t *enc) { encodeTensor(t, a.t) })
	case attrFloats:
		e.packedFloats(7, a.floats)
	case attrInts:
		e.packedVarints(8, a.ints)
	}
	e.varintField(20, uint64(a.typ))
}

// TensorProto: dims=1, data_type=2, name=8, raw_data=9.
func encodeTensor(e *enc, t *Tensor) {
	if len(t.Dims) > 0 {
		e.packedVarints(1, t.Dims)
	}
	e.varintField(2, uint64(t.DType))
	if t.Name != "" {
		e.stringField(8, t.Name)
	}
	e.bytesField(9, t.rawData())
}

// ValueInfoProto: name=1, type=2. TypeProto: tensor_type=1.
// TypeProto.Tensor: elem_type=1, shape=2. TensorShapeProto: dim=1.
// Dimension: dim_value=1, dim_param=2.
func encodeValueInfo(e *enc, v *ValueInfo) {
	e.stringField(1, v.Name)
	e.msgField(2, func(tp *enc) {
		tp.msgField(1, func(tt *enc) {
			tt.varintField(1, uint64(v.DType))
			tt.msgField(2, func(sh *enc) {
				for _, d := range v.Dims {
					sh.msgField(1, func(de *enc) {
						if d.Param != "" {
							de.stringField(2, d.Param)
						} else {
							de.varintField(1, uint64(d.Value))
						}
					})
				}
			})
		})
	})
}

// enc is a protobuf wire-format writer. Nested messages are encoded into a
// scratch encoder first so their length prefix is known; the graphs we write
// are shallow, so the copying is negligible next to the tensor payloads.
type enc struct{ b []byte }

const (
	wireVarint  = 0
	wireFixed32 = 5
	wireBytes   = 2
)

func (e *enc) tag(field int, wire int) {
	e.b = binary.AppendUvarint(e.b, uint64(field)<<3|uint64(wire))
}

func (e *enc) varintField(field int, v uint64) {
	e.tag(field, wireVarint)
	e.b = binary.AppendUvarint(e.b, v)
}

func (e *enc) fixed32Field(field int, v uint32) {
	e.tag(field, wireFixed32)
	e.b = binary.LittleEndian.AppendUint32(e.b, v)
}

func (e *enc) bytesField(field int, v []byte) {
	e.tag(field, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(v)))
	e.b = append(e.b, v...)
}

func (e *enc) stringField(field int, s string) {
	if s == "" {
		return
	}
	e.bytesField(field, []byte(s))
}

func (e *enc) stringFieldAlways(field int, s string) { e.bytesField(field, []byte(s)) }

func (e *enc) msgField(field int, fill func(*enc)) {
	var sub enc
	fill(&sub)
	e.bytesField(field, sub.b)
}

// packedVarints writes a packed repeated int64 field; negative values take
// ten bytes each, as protobuf's int64 encoding requires.
func (e *enc) packedVarints(field int, vs []int64) {
	var sub []byte
	for _, v := range vs {
		sub = binary.AppendUvarint(sub, uint64(v))
	}
	e.bytesField(field, sub)
}

func (e *enc) packedFloats(field int, vs []float32) {
	sub := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		sub = binary.LittleEndian.AppendUint32(sub, math.Float32bits(v))
	}
	e.bytesField(field, sub)
}
