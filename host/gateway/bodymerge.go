package gateway

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/valyala/fasthttp"

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
	write := func(k, v []byte) { out = appendMember(out, k, v) }
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

// withoutMember returns the JSON object obj without its member name (nil
// when nothing is left).
func withoutMember(obj []byte, name string) []byte {
	out := []byte{'{'}
	jsonscan.EachMember(obj, func(k, v []byte) {
		if string(k) != name {
			out = appendMember(out, k, v)
		}
	})
	if len(out) == 1 {
		return nil
	}
	return append(out, '}')
}

// addMember appends "name":value to the JSON object obj (nil: a new one).
func addMember(obj []byte, name string, value []byte) []byte {
	if len(obj) < 2 {
		obj = []byte("{}")
	}
	out := append([]byte(nil), obj[:len(obj)-1]...)
	return append(appendMember(out, []byte(name), value), '}')
}

// appendMember appends "key":value to out, an object being written (its
// opening brace and any members so far). key is as written in JSON (still
// escaped), so quoting it again keeps it.
func appendMember(out, key, value []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, '"', ':')
	return append(out, value...)
}

// addErrorMembers sets members (Caller.ErrorMembers) beside the error
// object of the error body already written; the error's own members win.
func addErrorMembers(ctx *fasthttp.RequestCtx, members []byte) {
	if len(members) == 0 {
		return
	}
	if b, err := mergeMembers(ctx.Response.Body(), members, true); err == nil {
		ctx.SetBody(b)
	}
}
