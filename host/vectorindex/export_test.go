package vectorindex

// SetGraphOnly makes graph searches skip the exact lookup by hash, so an
// external test sees what the graph alone finds.
func SetGraphOnly(ix *Index, on bool) { ix.noExactLookup = on }
