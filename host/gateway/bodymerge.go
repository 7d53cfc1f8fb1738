package gateway

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/bardoinference/bardo/sdk/jsonscan"
)

var errMergeNotObject = errors.New("must be a JSON object")

// mergeMembers returns the JSON object body with every member of add set on
// it: a member of the same name is replaced in place (kept instead when
// keep is set), the others are appended in add's order. body comes from a
// codec (valid); add comes from a plugin or the profile mapping and is
// checked. Keys compare as written (escaped), which is exact for the ASCII
// names providers use.
func mergeMembers(body, add []byte, keep bool) ([]byte, error) {
	add = bytes.TrimSpace(add)
	if len(add) == 0 {
		return body, nil
	}
	if add[0] != '{' || !json.Valid(add) {
		return nil, errMergeNotObject
	}
	type member struct{ key, val []byte }
	var adds []member
	jsonscan.EachMember(add, func(k, v []byte) { adds = append(adds, member{k, v}) })
	if len(adds) == 0 {
		return body, nil
	}
	used := make([]bool, len(adds))
	out := make([]byte, 0, len(body)+len(add))
	out = append(out, '{')
	write := func(k, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		out = append(out, v...)
	}
	jsonscan.EachMember(body, func(k, v []byte) {
		for i := range adds {
			if bytes.Equal(adds[i].key, k) {
				if !used[i] {
					used[i] = true
					if keep {
						write(k, v)
					} else {
						write(k, adds[i].val)
					}
				}
				return
			}
		}
		write(k, v)
	})
	for i := range adds {
		if !used[i] {
			write(adds[i].key, adds[i].val)
		}
	}
	return append(out, '}'), nil
}
