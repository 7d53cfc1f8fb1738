package main

// Meta-tool mode (README.md, "Meta-tool mode"): for a catalog of more than
// meta_tools_above tools, the model sees three meta-tools instead of the
// catalog, and the layer answers them itself through internal completions
// (plugin.CompleteRequest), round after round:
//
//	search_tools{query}          → the best matching tools, one line each
//	get_tool_schema{name}        → that tool's JSON Schema
//	execute_tool{name,arguments} → the caller is answered with a call of its
//	                               own tool name, with those arguments
//
// No state crosses requests. The caller only ever sees its own tools, so
// every caller request starts a fresh loop: the calls of its tools in the
// history are shown to the model as the execute_tool calls they were (same
// ids, so the caller's tool results still match them).

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The meta-tools' names.
const (
	metaSearch  = "search_tools"
	metaSchema  = "get_tool_schema"
	metaExecute = "execute_tool"
)

// annotationSubsystem is the caller's X-Bardo-Subsystem header as the host
// hands it to layers: the internal completions are routed by it when the
// model is "auto".
const annotationSubsystem = "bardo.hdr.x-bardo-subsystem"

// maxSummary bounds a tool's one-line description in search results.
const maxSummary = 160

// completeRequest runs one internal completion; tests replace it.
var completeRequest = plugin.CompleteRequest

// errRounds is the loop running out of rounds without an answer.
var errRounds = errors.New("the model did not call execute_tool or answer within meta_max_rounds")

// The meta-tools' input schemas (documented in README.md). They and the
// descriptions are sent on every round: kept short.
const (
	searchSchema  = `{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, in a few words"}},"required":["query"]}`
	schemaSchema  = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	executeSchema = `{"type":"object","properties":{"name":{"type":"string"},"arguments":{"type":"object","description":"As the tool's schema describes them"}},"required":["name","arguments"]}`
)

// metaTools are the three tools the model sees instead of a catalog of n.
func metaTools(n int) []wire.Tool {
	return []wire.Tool{
		{Name: metaSearch, Schema: []byte(searchSchema),
			Description: "Search the " + strconv.Itoa(n) + " tools available to you by what they do: the best matches, one per line with a short description. Search whenever a task may need a tool."},
		{Name: metaSchema, Schema: []byte(schemaSchema),
			Description: "A tool's description and the JSON Schema of its arguments. Call it before execute_tool."},
		{Name: metaExecute, Schema: []byte(executeSchema),
			Description: "Call a tool by name with its arguments; its result comes back as this call's result."},
	}
}

func isMetaName(name string) bool {
	return name == metaSearch || name == metaSchema || name == metaExecute
}

// metaEligible reports whether the request can run in meta-tool mode: the
// model may choose its tools (no tool_choice naming one, not "none"), the
// catalog does not itself use a meta-tool's name, the conversation holds no
// meta-tool call (the caller never sees one: such a history is not ours),
// and the last turn is the user's (not an assistant prefill).
func metaEligible(r *wire.Request) bool {
	if n := len(r.Messages); n == 0 || r.Messages[n-1].Role != "user" {
		return false
	}
	if len(r.ToolChoice) > 0 {
		var tc struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(r.ToolChoice, &tc) != nil || (tc.Type != "auto" && tc.Type != "any") || len(toolChoiceNames(r.ToolChoice)) > 0 {
			return false
		}
	}
	for i := range r.Tools {
		if isMetaName(r.Tools[i].Name) {
			return false
		}
	}
	for i := range r.Messages {
		for j := range r.Messages[i].Content {
			if b := &r.Messages[i].Content[j]; b.Type == wire.BlockToolUse && isMetaName(b.Name) {
				return false
			}
		}
	}
	return true
}

// runMeta runs the meta-tool loop for r and returns the caller's answer and
// the number of internal completions run. An error (a failed completion,
// rounds exhausted) means: fall back to pruning.
func runMeta(m *wire.Meta, r *wire.Request, c config) (*wire.Response, int, error) {
	subsystem := ""
	for _, kv := range m.Annotations {
		if kv.Key == annotationSubsystem {
			subsystem = kv.Value
		}
	}
	in := &wire.Request{
		Model:      r.Model,
		System:     r.System,
		Messages:   metaHistory(r.Messages),
		Tools:      metaTools(len(r.Tools)),
		ToolChoice: r.ToolChoice, // nil, "auto" or "any" (metaEligible)
		Params:     r.Params,
	}
	var usage wire.Usage
	for round := 1; round <= c.metaRounds; round++ {
		resp, err := completeRequest(subsystem, in)
		if err != nil {
			return nil, round, fmt.Errorf("round %d: %w", round, err)
		}
		addUsage(&usage, &resp.Usage)
		answer, results := metaRound(resp, r.Tools, m.Dialect, c)
		if answer != nil {
			answer.Usage = usage
			return answer, round, nil
		}
		in.Messages = append(in.Messages,
			wire.Message{Role: "assistant", Content: resp.Content},
			wire.Message{Role: "user", Content: results})
	}
	return nil, c.metaRounds, errRounds
}

// metaRound handles one internal response: the caller's answer when the
// model answered with text or called execute_tool correctly, else the tool
// results to send back for the next round. It may set missing tool_use ids
// in resp.
func metaRound(resp *wire.Response, tools []wire.Tool, d wire.Dialect, c config) (*wire.Response, []wire.Block) {
	answer := &wire.Response{ID: resp.ID, Model: resp.Model, StopReason: resp.StopReason, StopSeq: resp.StopSeq}
	calls := 0
	for i := range resp.Content {
		b := &resp.Content[i]
		switch b.Type {
		case wire.BlockText:
			answer.Content = append(answer.Content, *b)
		case wire.BlockToolUse:
			calls++
			if b.ID == "" {
				b.ID = newToolID(d)
			}
		}
	}
	if calls == 0 { // the model answered
		if answer.StopReason == wire.StopToolUse {
			answer.StopReason = wire.StopEndTurn
		}
		return answer, nil
	}
	// Every call gets its result; the calls of the caller's tools are
	// collected, and answer the caller only if all of them are valid.
	results := make([]blockResult, 0, calls)
	var exec []wire.Block
	failed := false
	for i := range resp.Content {
		b := &resp.Content[i]
		if b.Type != wire.BlockToolUse {
			continue
		}
		var text string
		var err error
		switch {
		case b.Name == metaSearch:
			text, err = searchResult(b.Data, tools, c)
		case b.Name == metaSchema:
			text, err = schemaResult(b.Data, tools, c)
		default:
			// Any other name is a direct call of a catalog tool (or of
			// one the model made up): an execute_tool too, and kept in
			// the history as one, like the earlier calls (metaHistory).
			if b.Name != metaExecute {
				asExecute(b)
			}
			var name string
			var args []byte
			name, args, err = parseExecute(b.Data)
			if err == nil {
				args, err = checkCall(name, args, tools, c)
			}
			if err == nil {
				exec = append(exec, wire.Block{Type: wire.BlockToolUse, ID: newToolID(d), Name: name, Data: args})
				results = append(results, blockResult{id: b.ID, pending: true})
				continue
			}
			failed = true
		}
		if err != nil {
			results = append(results, blockResult{id: b.ID, text: "Error: " + err.Error(), isError: true})
		} else {
			results = append(results, blockResult{id: b.ID, text: text})
		}
	}
	if len(exec) > 0 && !failed {
		answer.Content = append(answer.Content, exec...)
		answer.StopReason = wire.StopToolUse
		answer.StopSeq = ""
		return answer, nil
	}
	out := make([]wire.Block, len(results))
	for i, r := range results {
		if r.pending {
			r.text = "Not run: another execute_tool call of the same turn failed. Call it again with the corrected calls."
			r.isError = true
		}
		out[i] = wire.Block{Type: wire.BlockToolResult, ID: r.id, Text: r.text, IsError: r.isError}
	}
	return nil, out
}

type blockResult struct {
	id      string
	text    string
	isError bool
	pending bool // a valid execute_tool call, not run
}

func addUsage(sum, u *wire.Usage) {
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.CacheReadTokens += u.CacheReadTokens
	sum.CacheWriteTokens += u.CacheWriteTokens
}

// metaHistory is the conversation as the model saw it in meta-tool mode:
// each call of a catalog tool becomes the execute_tool call it was. The
// caller's messages are not modified.
func metaHistory(msgs []wire.Message) []wire.Message {
	out := make([]wire.Message, len(msgs), len(msgs)+2*maxMetaRounds)
	copy(out, msgs)
	for i := range out {
		m := &out[i]
		copied := false
		for j := range m.Content {
			b := &m.Content[j]
			if b.Type != wire.BlockToolUse {
				continue
			}
			if !copied {
				m.Content = append([]wire.Block(nil), m.Content...)
				b, copied = &m.Content[j], true
			}
			asExecute(b)
		}
	}
	return out
}

// asExecute turns a call of a catalog tool into the execute_tool call of
// it, same id.
func asExecute(b *wire.Block) {
	args := bytes.TrimSpace(b.Data)
	if len(args) == 0 || !json.Valid(args) {
		args = []byte("{}")
	}
	name, _ := json.Marshal(b.Name)
	b.Data = append(append(append(append([]byte(`{"name":`), name...), `,"arguments":`...), args...), '}')
	b.Name = metaExecute
}

func findTool(tools []wire.Tool, name string) int {
	for i := range tools {
		if tools[i].Name == name {
			return i
		}
	}
	return -1
}

// searchResult answers search_tools: the best matches by the relevance rule
// (README.md, "Relevance"), the query standing for the last user message.
func searchResult(input []byte, tools []wire.Tool, c config) (string, error) {
	var in struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(input, &in) != nil || strings.TrimSpace(in.Query) == "" {
		return "", errors.New(`search_tools needs {"query": "<what the tool should do>"}`)
	}
	found := search(tools, in.Query, c.metaResults, c.recent)
	if len(found) == 0 {
		return "No tool matches " + strconv.Quote(in.Query) + ". Try other words: what the tool acts on, or what it does.", nil
	}
	var b strings.Builder
	for _, i := range found {
		b.WriteString(tools[i].Name)
		if s := summary(tools[i].Description); s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
		b.WriteByte('\n')
	}
	b.WriteString("(" + strconv.Itoa(len(found)) + " of " + strconv.Itoa(len(tools)) + " tools. Call get_tool_schema for a tool's arguments.)")
	return b.String(), nil
}

// search returns the indexes of up to k tools scoring above zero for query,
// best first, ties to the earlier tool.
func search(tools []wire.Tool, query string, k, recent int) []int {
	q := wire.Request{Tools: tools, Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: query}}}}}
	scores := scoreTools(&q, &cfg)
	var top []int
	for i, s := range scores {
		if s <= 0 || (len(top) == k && s <= scores[top[k-1]]) {
			continue
		}
		if len(top) < k {
			top = append(top, i)
		} else {
			top[k-1] = i
		}
		for b := len(top) - 1; b > 0 && scores[top[b]] > scores[top[b-1]]; b-- {
			top[b], top[b-1] = top[b-1], top[b]
		}
	}
	return top
}

// summary is the first sentence or line of a description, at most
// maxSummary bytes.
func summary(desc string) string {
	s := strings.TrimSpace(desc)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) > maxSummary {
		cut := maxSummary
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut]) + "…"
	}
	return s
}

// schemaResult answers get_tool_schema.
func schemaResult(input []byte, tools []wire.Tool, c config) (string, error) {
	var in struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(input, &in) != nil || in.Name == "" {
		return "", errors.New(`get_tool_schema needs {"name": "<tool name>"}`)
	}
	i := findTool(tools, in.Name)
	if i < 0 {
		return "", unknownTool(in.Name, tools, c)
	}
	t := &tools[i]
	schema := bytes.TrimSpace(t.Schema)
	if len(schema) == 0 || !json.Valid(schema) {
		schema = []byte(`{"type":"object"}`)
	}
	name, _ := json.Marshal(t.Name)
	desc, _ := json.Marshal(t.Description)
	return `{"name":` + string(name) + `,"description":` + string(desc) + `,"input_schema":` + string(schema) + `}`, nil
}

// unknownTool says a name is not in the catalog, suggesting the tools whose
// names are spelled nearly alike, then those that match it best.
func unknownTool(name string, tools []wire.Tool, c config) error {
	msg := "there is no tool named " + strconv.Quote(name)
	if near := nearTools(tools, name, 3, c.recent); len(near) > 0 {
		names := make([]string, len(near))
		for i, j := range near {
			names[i] = tools[j].Name
		}
		msg += "; did you mean " + strings.Join(names, ", ") + "?"
	}
	return errors.New(msg + " Use search_tools to find tools.")
}

// nearTools returns up to k tools for a name that is not in the catalog:
// those within a small edit distance of it (a typo), closest first, then
// the best matches of the name's words.
func nearTools(tools []wire.Tool, name string, k, recent int) []int {
	limit := max(2, utf8.RuneCountInString(name)/5)
	var near []int
	dist := make([]int, len(tools))
	for i := range tools {
		dist[i] = editDistance(name, tools[i].Name, limit)
		if dist[i] <= limit {
			near = append(near, i)
		}
	}
	slices.SortStableFunc(near, func(a, b int) int { return dist[a] - dist[b] })
	near = near[:min(len(near), k)]
	for _, i := range search(tools, name, k, recent) {
		if len(near) < k && !slices.Contains(near, i) {
			near = append(near, i)
		}
	}
	return near
}

// editDistance is the Levenshtein distance between a and b in bytes, or
// limit+1 when it is larger than limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseExecute reads execute_tool's input. Arguments given as a JSON string
// holding an object (models do that) are unwrapped.
func parseExecute(input []byte) (string, []byte, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(input, &in) != nil || in.Name == "" {
		return "", nil, errors.New(`execute_tool needs {"name": "<tool name>", "arguments": {…}}`)
	}
	args := bytes.TrimSpace(in.Arguments)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = bytes.TrimSpace([]byte(s))
		}
	}
	return in.Name, args, nil
}

// checkCall checks a call of a catalog tool: the tool exists and the
// arguments are a JSON object ({} when absent). They are not checked
// against the tool's schema: the caller's tool does that, as it would for
// a call the model made directly.
func checkCall(name string, args []byte, tools []wire.Tool, c config) ([]byte, error) {
	if findTool(tools, name) < 0 {
		return nil, unknownTool(name, tools, c)
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return []byte("{}"), nil
	}
	if args[0] != '{' || !json.Valid(args) {
		return nil, errors.New("the arguments of " + strconv.Quote(name) + " must be a JSON object")
	}
	return append([]byte(nil), args...), nil
}

// newToolID returns a fresh tool call id in the caller's dialect's style.
func newToolID(d wire.Dialect) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	if d == wire.DialectAnthropic {
		return "toolu_" + hex.EncodeToString(b[:])
	}
	return "call_" + hex.EncodeToString(b[:])
}
