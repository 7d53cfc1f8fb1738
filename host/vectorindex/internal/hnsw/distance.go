package hnsw

import "github.com/viterin/vek/vek32"

// DistanceFunc computes the distance between two vectors.
type DistanceFunc func(a, b []float32) float32

// CosineDistance computes the cosine distance between two vectors.
func CosineDistance(a, b []float32) float32 {
	return 1 - vek32.CosineSimilarity(a, b)
}

// UnitCosineDistance is CosineDistance for vectors already normalised to unit
// length: 1 - a·b, one SIMD reduction instead of three.
func UnitCosineDistance(a, b []float32) float32 {
	return 1 - vek32.Dot(a, b)
}
