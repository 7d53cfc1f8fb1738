package gateway

import "testing"

func TestMergeMembers(t *testing.T) {
	cases := []struct{ body, add, want string }{
		{`{"model":"m","stream":true}`, `{"provider":{"sort":"price"}}`, `{"model":"m","stream":true,"provider":{"sort":"price"}}`},
		{`{"model":"m","reasoning_effort":"low"}`, `{"reasoning_effort":"high","x":1}`, `{"model":"m","reasoning_effort":"high","x":1}`},
		{`{"model":"m"}`, ``, `{"model":"m"}`},
		{`{"model":"m"}`, ` {} `, `{"model":"m"}`},
		{`{}`, `{"a":[1,{"b":"}"}]}`, `{"a":[1,{"b":"}"}]}`},
	}
	for _, c := range cases {
		got, err := mergeMembers([]byte(c.body), []byte(c.add), false)
		if err != nil || string(got) != c.want {
			t.Errorf("merge(%s, %s) = %s, %v; want %s", c.body, c.add, got, err, c.want)
		}
	}
	// keep: the caller's own member wins over the profile's.
	got, err := mergeMembers([]byte(`{"reasoning_effort":"low","model":"m"}`), []byte(`{"reasoning_effort":"high","thinking":{"type":"enabled"}}`), true)
	if err != nil || string(got) != `{"reasoning_effort":"low","model":"m","thinking":{"type":"enabled"}}` {
		t.Errorf("keep: %s %v", got, err)
	}
	for _, bad := range []string{`[1]`, `{"a":`, `"s"`, `{"a":1}x`} {
		if _, err := mergeMembers([]byte(`{"model":"m"}`), []byte(bad), false); err == nil {
			t.Errorf("merge accepted %s", bad)
		}
	}
}
