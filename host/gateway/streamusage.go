package gateway

import (
	"bytes"

	"github.com/bardoinference/bardo/sdk/jsonscan"
)

// A billed stream must know its tokens. An OpenAI caller that streams
// without stream_options.include_usage gets no usage chunk, and its bytes,
// forwarded as they are, would not ask the upstream for one either. So a
// billed request asks for it (askUsage), and the forwarded stream drops that
// chunk again (usageOnlyChunk): the caller did not ask for a chunk without
// choices, and the usual `chunk.choices[0]` loop fails on one.

// askUsage returns body with stream_options.include_usage set to true,
// other stream_options members kept, and whether it changed anything.
func askUsage(body []byte) ([]byte, bool) {
	var opts []byte
	jsonscan.EachMember(body, func(k, v []byte) {
		if string(k) == "stream_options" {
			opts = v
		}
	})
	var rest []byte // opts' members but include_usage
	asked := false
	if len(opts) > 0 && opts[0] == '{' {
		jsonscan.EachMember(opts, func(k, v []byte) {
			if string(k) == "include_usage" {
				asked = string(bytes.TrimSpace(v)) == "true"
				return
			}
			rest = appendMember(rest, k, v)
		})
	}
	if asked {
		return body, false
	}
	o := append([]byte(`{"stream_options":{`), rest...)
	if len(rest) > 0 {
		o = append(o, ',')
	}
	o = append(o, `"include_usage":true}}`...)
	merged, err := mergeMembers(body, o, false)
	if err != nil {
		return body, false
	}
	return merged, true
}

// usageOnlyChunk recognizes the OpenAI stream's usage chunk: no choices,
// a usage object.
func usageOnlyChunk(data []byte) bool {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return false
	}
	emptyChoices, usage := false, false
	jsonscan.EachMember(data, func(k, v []byte) {
		switch string(k) {
		case "choices":
			emptyChoices = string(bytes.Join(bytes.Fields(v), nil)) == "[]"
		case "usage":
			usage = len(v) > 0 && v[0] == '{'
		}
	})
	return emptyChoices && usage
}
