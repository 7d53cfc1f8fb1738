package guardrail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// logreg is the converted graph's arithmetic done in Go: for one text's
// sparse term counts, w = idf·count per term, P(INJECTION) =
// sigmoid(Σ w·coef / max(‖w‖, 1e-12) + intercept). A text's few dozen
// terms are a few dozen multiply-adds; onnxruntime spent ~8 µs warm and
// ~21 µs with cold caches per call on tensors, cgo and the session around
// them (BenchmarkClassifyAgentTurn), most of the classifier's cost. The
// weights are model.onnx's own initializers, read by readLogreg; the graph
// is checked to be the one Graph writes, node for node, so a model.onnx
// that does anything else is run by onnxruntime instead.
type logreg struct {
	idf, coef []float32
	intercept float32
}

// prob is P(INJECTION) for one row, in the graph's float32 steps.
func (m *logreg) prob(ids []int64, counts []float32) float32 {
	var sumSq, dot float32
	for i, id := range ids {
		w := m.idf[id] * counts[i]
		sumSq += w * w
		dot += w * m.coef[id]
	}
	norm := max(float32(math.Sqrt(float64(sumSq))), 1e-12)
	logit := dot/norm + m.intercept
	return float32(1 / (1 + math.Exp(-float64(logit))))
}

// graphOps is the op of every node Graph writes, in order.
var graphOps = []string{"Gather", "Mul", "Mul", "ReduceSum", "Sqrt", "Max", "Gather", "Mul", "ReduceSum",
	"Div", "Add", "Sigmoid", "Sub", "Concat"}

// readLogreg reads the weights of a model.onnx written by Graph: the float
// initializers idf, coef (vocabSize each) and intercept. It fails for a
// graph of other nodes.
func readLogreg(onnx []byte, vocabSize int) (*logreg, error) {
	graph, err := protoField(onnx, 7) // ModelProto.graph
	if err != nil {
		return nil, err
	}
	var ops []string
	tensors := map[string][]float32{}
	err = protoEach(graph, func(field int, v []byte) error {
		switch field {
		case 1: // GraphProto.node: NodeProto.op_type = 4
			op, err := protoField(v, 4)
			if err != nil {
				return err
			}
			ops = append(ops, string(op))
		case 5: // GraphProto.initializer
			name, data, err := floatTensor(v)
			if err != nil {
				return err
			}
			if data != nil {
				tensors[name] = data
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !slices.Equal(ops, graphOps) {
		return nil, fmt.Errorf("not the tfidf-logreg graph: nodes %v", ops)
	}
	m := &logreg{idf: tensors["idf"], coef: tensors["coef"]}
	if len(m.idf) != vocabSize || len(m.coef) != vocabSize || len(tensors["intercept"]) != 1 {
		return nil, fmt.Errorf("weights: idf %d, coef %d, intercept %d; want %d, %d, 1",
			len(m.idf), len(m.coef), len(tensors["intercept"]), vocabSize, vocabSize)
	}
	m.intercept = tensors["intercept"][0]
	return m, nil
}

// floatTensor returns a TensorProto's name and, for a float tensor (data
// type 1), its values from raw_data (as Graph writes them) or float_data.
func floatTensor(t []byte) (string, []float32, error) {
	var name string
	var dtype uint64
	var raw, packed []byte
	err := protoEach(t, func(field int, v []byte) error {
		switch field {
		case 2:
			dtype, _ = binary.Uvarint(v)
		case 4:
			packed = v
		case 8:
			name = string(v)
		case 9:
			raw = v
		}
		return nil
	})
	if err != nil || dtype != 1 {
		return name, nil, err
	}
	if raw == nil {
		raw = packed
	}
	if len(raw)%4 != 0 {
		return name, nil, fmt.Errorf("tensor %s: %d bytes", name, len(raw))
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return name, out, nil
}

var errProto = errors.New("malformed model.onnx")

// protoEach calls fn with each field of a protobuf message: a varint's
// bytes, a fixed value's bytes, or a length-delimited field's contents.
func protoEach(b []byte, fn func(field int, v []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errProto
		}
		b = b[n:]
		var v []byte
		switch tag & 7 {
		case 0: // varint
			_, m := binary.Uvarint(b)
			if m <= 0 {
				return errProto
			}
			v, b = b[:m], b[m:]
		case 1: // fixed64
			if len(b) < 8 {
				return errProto
			}
			v, b = b[:8], b[8:]
		case 2: // length-delimited
			l, m := binary.Uvarint(b)
			if m <= 0 || l > uint64(len(b)-m) {
				return errProto
			}
			v, b = b[m:m+int(l)], b[m+int(l):]
		case 5: // fixed32
			if len(b) < 4 {
				return errProto
			}
			v, b = b[:4], b[4:]
		default:
			return errProto
		}
		if err := fn(int(tag>>3), v); err != nil {
			return err
		}
	}
	return nil
}

// protoField returns the last occurrence of a field of a message.
func protoField(b []byte, field int) ([]byte, error) {
	var out []byte
	found := false
	err := protoEach(b, func(f int, v []byte) error {
		if f == field {
			out, found = v, true
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: no field %d", errProto, field)
	}
	return out, err
}
