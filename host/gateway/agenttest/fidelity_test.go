package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
)

// The layer edits the shipped pipeline may make to a same-dialect request,
// each documented in its layer's README and announced in a response header.
// Anything else the upstream receives must equal what the client sent.
//
//   - promptcache: tools sorted by name; Anthropic cache_control breakpoints
//     added (X-Bardo-Cache-Breakpoints counts them; the caller's own stay
//     where they were); OpenAI prompt_cache_key added when the caller set none.
//   - toolprune: tools removed (X-Bardo-Tools: <kept>/<total>).
//   - compress: earlier turns summarised (X-Bardo-Compress: compressed|cached).
//   - pii: values replaced by placeholders such as [EMAIL_1] (X-Bardo-PII).
//
// And one of the gateway's own: an OpenAI stream asks the upstream for its
// usage chunk (stream_options.include_usage = true, the caller's other
// stream_options kept; host/dialect/openai EncodeOptions.StreamUsage), which
// the host needs to account for tokens; the caller's stream still gets a
// usage chunk only when it asked for one.
type layerEdits struct {
	breakpoints int  // X-Bardo-Cache-Breakpoints
	kept, total int  // X-Bardo-Tools; total 0 when absent
	compressed  bool // X-Bardo-Compress
	pii         bool // X-Bardo-PII
}

func editsOf(h http.Header) layerEdits {
	var le layerEdits
	le.breakpoints, _ = strconv.Atoi(h.Get("X-Bardo-Cache-Breakpoints"))
	if k, n, ok := strings.Cut(h.Get("X-Bardo-Tools"), "/"); ok {
		le.kept, _ = strconv.Atoi(k)
		le.total, _ = strconv.Atoi(n)
	}
	c := h.Get("X-Bardo-Compress")
	le.compressed = c == "compressed" || c == "cached"
	le.pii = h.Get("X-Bardo-PII") != ""
	return le
}

// placeholder is how the pii layer writes a masked value.
var placeholder = regexp.MustCompile(`\\?\[[A-Z][A-Z0-9_]*_[0-9]+\\?\]`)

// compareForwarded lists how up (the body the upstream received) differs
// from client (the body the client sent) beyond the edits le allows.
// anthropic says which dialect both are in.
func compareForwarded(client, up []byte, le layerEdits, anthropic bool) []string {
	var c, u map[string]any
	if err := json.Unmarshal(client, &c); err != nil {
		return []string{"client body is not a JSON object: " + err.Error()}
	}
	if err := json.Unmarshal(up, &u); err != nil {
		return []string{"upstream body is not a JSON object: " + err.Error()}
	}
	var diffs []string
	added := 0 // cache_control the upstream has and the client had not
	added += stripAddedCacheControl(c, u, "", &diffs)

	// Tools: compared by name, as a set, each definition whole.
	ct, _ := c["tools"].([]any)
	ut, _ := u["tools"].([]any)
	delete(c, "tools")
	delete(u, "tools")
	byName := func(ts []any) (map[string]any, []string) {
		m := map[string]any{}
		var order []string
		for i, t := range ts {
			name := toolName(t)
			if name == "" {
				name = "#" + strconv.Itoa(i)
			}
			m[name] = t
			order = append(order, name)
		}
		return m, order
	}
	cm, corder := byName(ct)
	um, uorder := byName(ut)
	for _, name := range uorder {
		cdef, ok := cm[name]
		if !ok {
			diffs = append(diffs, "tools: the upstream got a tool the client did not send: "+name)
			continue
		}
		added += stripAddedCacheControl(cdef, um[name], "tools["+name+"]", &diffs)
		diffs = append(diffs, diffJSON("tools["+name+"]", cdef, um[name], le.pii)...)
	}
	var removed []string
	for _, name := range corder {
		if _, ok := um[name]; !ok {
			removed = append(removed, name)
		}
	}
	switch {
	case len(removed) > 0 && le.total == 0:
		diffs = append(diffs, fmt.Sprintf("tools: %d removed without X-Bardo-Tools: %v", len(removed), removed))
	case len(removed) > 0 && (le.total != len(ct) || le.kept != len(ut)):
		diffs = append(diffs, fmt.Sprintf("tools: X-Bardo-Tools says %d/%d, the upstream got %d of %d (removed %v)", le.kept, le.total, len(ut), len(ct), removed))
	}
	if sorted := sort.StringsAreSorted(uorder); !sorted && !equalOrder(corder, uorder) {
		diffs = append(diffs, fmt.Sprintf("tools: reordered, neither as sent nor by name: %v", uorder))
	}

	if !anthropic {
		if _, mine := c["prompt_cache_key"]; !mine {
			delete(u, "prompt_cache_key")
		}
		if so, ok := u["stream_options"].(map[string]any); ok && c["stream"] == true && so["include_usage"] == true {
			if cso, mine := c["stream_options"].(map[string]any); mine {
				so["include_usage"] = cso["include_usage"]
				if _, had := cso["include_usage"]; !had {
					delete(so, "include_usage")
				}
			} else if len(so) == 1 {
				delete(u, "stream_options")
			}
		}
	}
	if le.compressed {
		delete(c, "messages")
		delete(u, "messages")
	}
	if added > le.breakpoints {
		diffs = append(diffs, fmt.Sprintf("cache_control: %d added, X-Bardo-Cache-Breakpoints says %d", added, le.breakpoints))
	}
	diffs = append(diffs, diffJSON("", c, u, le.pii)...)
	return diffs
}

func toolName(t any) string {
	m, _ := t.(map[string]any)
	if n, ok := m["name"].(string); ok {
		return n
	}
	if f, ok := m["function"].(map[string]any); ok {
		n, _ := f["name"].(string)
		return n
	}
	return ""
}

func equalOrder(a, b []string) bool {
	var kept []string
	in := map[string]bool{}
	for _, n := range b {
		in[n] = true
	}
	for _, n := range a {
		if in[n] {
			kept = append(kept, n)
		}
	}
	return reflect.DeepEqual(kept, b)
}

// stripAddedCacheControl removes, from u, every "cache_control" member that
// c lacks at the same place (walking both in step, objects by key and arrays
// by index) and counts them; a cache_control of the client's that the
// upstream lost is a diff. Tools are skipped: they are matched by name.
func stripAddedCacheControl(c, u any, path string, diffs *[]string) int {
	n := 0
	switch uv := u.(type) {
	case map[string]any:
		cv, _ := c.(map[string]any)
		if _, ok := uv["cache_control"]; ok && cv != nil {
			if _, mine := cv["cache_control"]; !mine {
				delete(uv, "cache_control")
				n++
			}
		}
		if cv != nil {
			if _, mine := cv["cache_control"]; mine {
				if _, ok := uv["cache_control"]; !ok {
					*diffs = append(*diffs, path+".cache_control: the client's breakpoint was lost")
				}
			}
		}
		for k, v := range uv {
			if path == "" && k == "tools" {
				continue
			}
			n += stripAddedCacheControl(cv[k], v, path+"."+k, diffs)
		}
	case []any:
		cv, _ := c.([]any)
		for i, v := range uv {
			var ci any
			if i < len(cv) {
				ci = cv[i]
			}
			n += stripAddedCacheControl(ci, v, path+"["+strconv.Itoa(i)+"]", diffs)
		}
	}
	return n
}

// diffJSON lists the paths where u differs from c. With pii, a string that
// differs only where u has a placeholder is equal.
func diffJSON(path string, c, u any, pii bool) []string {
	if loneText(c, u) || loneText(u, c) {
		return []string{notePrefix + path + ": one plain text block written as a string, or back"}
	}
	switch cv := c.(type) {
	case map[string]any:
		uv, ok := u.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: client %s, upstream %s", path, short(c), short(u))}
		}
		var out []string
		keys := map[string]bool{}
		for k := range cv {
			keys[k] = true
		}
		for k := range uv {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			cx, inC := cv[k]
			ux, inU := uv[k]
			switch {
			case !inU:
				out = append(out, fmt.Sprintf("%s.%s: lost (client sent %s)", path, k, short(cx)))
			case !inC:
				out = append(out, fmt.Sprintf("%s.%s: added (upstream got %s)", path, k, short(ux)))
			default:
				out = append(out, diffJSON(path+"."+k, cx, ux, pii)...)
			}
		}
		return out
	case []any:
		uv, ok := u.([]any)
		if !ok || len(uv) != len(cv) {
			return []string{fmt.Sprintf("%s: client %s, upstream %s", path, short(c), short(u))}
		}
		var out []string
		for i := range cv {
			out = append(out, diffJSON(path+"["+strconv.Itoa(i)+"]", cv[i], uv[i], pii)...)
		}
		return out
	case string:
		us, ok := u.(string)
		if ok && (us == cv || pii && maskedFrom(cv, us)) {
			return nil
		}
		if ok {
			return []string{path + ": " + stringDiff(cv, us)}
		}
	default:
		if reflect.DeepEqual(c, u) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: client %s, upstream %s", path, short(c), short(u))}
}

// notePrefix marks a difference that is allowed but worth a line in the
// log: the Anthropic encoder writes content that is one text block with no
// other members as a plain string (host/dialect/anthropic appendContent), so
// a request a layer rewrote may carry the same content in the other form.
// Equal in meaning; the bytes of the conversation differ.
const notePrefix = "note: "

// loneText reports whether s is a string and a is [{"type":"text","text":s}].
func loneText(s, a any) bool {
	str, ok := s.(string)
	arr, ok2 := a.([]any)
	if !ok || !ok2 || len(arr) != 1 {
		return false
	}
	b, _ := arr[0].(map[string]any)
	return len(b) == 2 && b["type"] == "text" && b["text"] == str
}

// maskedFrom reports whether up is orig with some values replaced by pii
// placeholders.
func maskedFrom(orig, up string) bool {
	parts := placeholder.Split(up, -1)
	if len(parts) < 2 {
		return false
	}
	var re strings.Builder
	re.WriteString(`^(?s)`)
	for i, p := range parts {
		if i > 0 {
			re.WriteString(`.+?`)
		}
		re.WriteString(regexp.QuoteMeta(p))
	}
	re.WriteString(`$`)
	ok, _ := regexp.MatchString(re.String(), orig)
	return ok
}

func short(v any) string {
	b, _ := json.Marshal(v)
	return truncate(string(b), 160)
}

// checkForwarded pairs every request the upstream received with the client
// request it came from — the one it differs least from, earliest first —
// and reports, per pair, what changed beyond the documented layer edits.
func checkForwarded(t *testing.T, ex []exchange, up []fakeupstream.Recorded) {
	t.Helper()
	used := make([]bool, len(ex))
	paired := 0
	for i, r := range up {
		if r.Method != http.MethodPost {
			continue
		}
		anthropic := strings.HasPrefix(r.Path, "/v1/messages")
		j := -1
		var diffs []string
		for n, x := range ex {
			if used[n] || x.Status != http.StatusOK || hitOf(x) != "" || strings.HasPrefix(x.Path, "/v1/messages") != anthropic {
				continue
			}
			if d := compareForwarded(x.Body, r.Body, editsOf(x.RespHeader), anthropic); j < 0 || len(d) < len(diffs) {
				j, diffs = n, d
			}
			if len(diffs) == 0 {
				break
			}
		}
		if j < 0 {
			t.Errorf("upstream request #%d (%s, %d bytes) matches no client request", i, r.Path, len(r.Body))
			continue
		}
		used[j] = true
		paired++
		x := ex[j]
		for _, h := range []string{"anthropic-beta", "anthropic-version"} {
			if anthropic && x.Header.Get(h) != r.Header.Get(h) {
				diffs = append(diffs, fmt.Sprintf("header %s: client sent %q, upstream got %q", h, x.Header.Get(h), r.Header.Get(h)))
			}
		}
		var notes, errs []string
		for _, d := range diffs {
			if strings.HasPrefix(d, notePrefix) {
				notes = append(notes, d)
			} else {
				errs = append(errs, d)
			}
		}
		if len(notes) > 0 {
			t.Logf("request #%d %s: %s", j, x.Path, strings.Join(capList(notes, 5), "; "))
		}
		if len(errs) > 0 {
			t.Errorf("request #%d %s (%d bytes): the upstream got more than the documented layer edits (headers %s):\n  %s",
				j, x.Path, len(x.Body), bardoHeaders(x.RespHeader), strings.Join(capList(errs, 25), "\n  "))
		}
	}
	t.Logf("%d of %d client requests reached the upstream and were compared", paired, len(ex))
}

func capList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
}

// bardoHeaders lists the X-Bardo-* response headers, sorted.
func bardoHeaders(h http.Header) string {
	var out []string
	for k, v := range h {
		if strings.HasPrefix(k, "X-Bardo-") && k != "X-Bardo-Request-Id" {
			out = append(out, k+": "+strings.Join(v, ","))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// hitOf is the cache verdict of an exchange: "hash-hit", "semantic-hit",
// "stale", or "" when the upstream answered.
func hitOf(x exchange) string {
	switch v := x.RespHeader.Get("X-Bardo-Cache"); v {
	case "hash-hit", "semantic-hit", "stale":
		return v
	}
	return ""
}

// stringDiff shows where two strings part: a little context, then each
// side's rest.
func stringDiff(c, u string) string {
	i := 0
	for i < len(c) && i < len(u) && c[i] == u[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("differ at byte %d of %d/%d: …%q then client %q, upstream %q",
		i, len(c), len(u), c[from:i], truncate(c[i:], 80), truncate(u[i:], 80))
}
