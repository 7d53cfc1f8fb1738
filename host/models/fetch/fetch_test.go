package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoServer serves files under /<repo>/resolve/<rev>/<path> with Range
// support (http.ServeContent), optionally cutting the connection halfway
// through the first transfer of a file.
type repoServer struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte // URL path → content
	cutOnce  map[string]bool   // URL path → cut the next full transfer
	ranges   []string          // Range headers seen, "" for none
	requests int
	noRange  bool // ignore Range headers (answer 200 with everything)
}

func newRepoServer(t *testing.T) *repoServer {
	s := &repoServer{files: map[string][]byte{}, cutOnce: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *repoServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	data, ok := s.files[r.URL.Path]
	cut := s.cutOnce[r.URL.Path]
	s.cutOnce[r.URL.Path] = false
	noRange := s.noRange
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if cut {
		// Promise everything, send half, drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if noRange {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

func (s *repoServer) add(e Entry, f File, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files["/"+e.Repo+"/resolve/"+e.Revision+"/"+f.Path] = data
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// testEntry is a small model laid out like the real nomic entry: a graph, a
// WordPiece tokenizer.json and a HuggingFace config.
func testEntry(t *testing.T, s *repoServer) (Entry, map[string][]byte) {
	model := randomBytes(300_000, 7)
	tok := []byte(`{"version":"1.0","model":{"type":"WordPiece","vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"hello":4,"##s":5}}}`)
	hf := []byte(`{"model_type":"bert","hidden_size":8,"max_position_embeddings":64,"id2label":{"0":"SAFE","1":"INJECTION"}}`)
	e := Entry{
		Name: "tiny", Description: "test model", Kind: "bert-classifier",
		Repo: "acme/tiny", Revision: strings.Repeat("ab", 20), License: "Apache-2.0",
		Files: []File{
			{Path: "onnx/model.onnx", Dest: "model.onnx", SHA256: sum(model), Size: int64(len(model))},
			{Path: "tokenizer.json", Dest: "tokenizer.json", SHA256: sum(tok)},
			{Path: "config.json", Dest: "hf_config.json", SHA256: sum(hf), Size: int64(len(hf))},
		},
		HFConfig:  "hf_config.json",
		VocabFrom: "tokenizer.json",
		Sidecar:   map[string]any{"pooling": "cls", "labels": []string{"SAFE", "INJECTION"}},
	}
	content := map[string][]byte{"model.onnx": model, "tokenizer.json": tok, "hf_config.json": hf}
	for _, f := range e.Files {
		s.add(e, f, content[f.Dest])
	}
	return e, content
}

func testOptions(s *repoServer, e Entry, progress *bytes.Buffer) Options {
	return Options{BaseURL: s.URL, Entries: []Entry{e}, Progress: progress, RetryDelay: time.Millisecond, Attempts: 3}
}

func noPartFiles(t *testing.T, dir string) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(matches)+len(tmps) > 0 {
		t.Errorf("leftover files: %v %v", matches, tmps)
	}
}

func TestFetchDownloadsVerifiesAndWritesSidecars(t *testing.T) {
	s := newRepoServer(t)
	e, content := testEntry(t, s)
	dest := t.TempDir()
	var out bytes.Buffer
	if err := Fetch(context.Background(), nil, dest, testOptions(s, e, &out)); err != nil {
		t.Fatalf("Fetch: %v\n%s", err, out.String())
	}
	dir := filepath.Join(dest, "tiny")
	for name, want := range content {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, err %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	noPartFiles(t, dir)

	vocab, err := os.ReadFile(filepath.Join(dir, VocabFile))
	if err != nil || string(vocab) != "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##s\n" {
		t.Errorf("vocab.txt = %q, %v", vocab, err)
	}
	var cfg map[string]any
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["pooling"] != "cls" || cfg["model_type"] != "bert" || cfg["hidden_size"] != 8.0 {
		t.Errorf("config.json = %v", cfg)
	}
	src, _ := cfg["_bardo_source"].(map[string]any)
	if src["revision"] != e.Revision || src["license"] != "Apache-2.0" {
		t.Errorf("_bardo_source = %v", src)
	}

	// A second run finds everything verified and downloads nothing.
	before := s.requests
	out.Reset()
	if err := Fetch(context.Background(), []string{"tiny"}, dest, testOptions(s, e, &out)); err != nil {
		t.Fatal(err)
	}
	if s.requests != before || strings.Count(out.String(), "checksum ok") != 3 {
		t.Errorf("second run made %d requests; output:\n%s", s.requests-before, out.String())
	}
}

func TestChecksumMismatchDeletesAndFails(t *testing.T) {
	s := newRepoServer(t)
	e, _ := testEntry(t, s)
	e.Files[0].SHA256 = strings.Repeat("0", 64)
	dest := t.TempDir()
	var out bytes.Buffer
	err := Fetch(context.Background(), nil, dest, testOptions(s, e, &out))
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "deleted") || !strings.Contains(err.Error(), "onnx/model.onnx") {
		t.Fatalf("err = %v, want a checksum mismatch naming the file", err)
	}
	if _, err := os.Stat(filepath.Join(dest, "tiny", "model.onnx")); !os.IsNotExist(err) {
		t.Errorf("model.onnx exists after a mismatch (stat err %v)", err)
	}
	noPartFiles(t, filepath.Join(dest, "tiny"))
	if _, err := os.Stat(filepath.Join(dest, "tiny", ConfigFile)); !os.IsNotExist(err) {
		t.Error("config.json written for an incomplete model")
	}
}

func TestResumeAfterCutConnection(t *testing.T) {
	s := newRepoServer(t)
	e, content := testEntry(t, s)
	s.cutOnce["/"+e.Repo+"/resolve/"+e.Revision+"/onnx/model.onnx"] = true
	dest := t.TempDir()
	var out bytes.Buffer
	if err := Fetch(context.Background(), nil, dest, testOptions(s, e, &out)); err != nil {
		t.Fatalf("Fetch: %v\n%s", err, out.String())
	}
	got, _ := os.ReadFile(filepath.Join(dest, "tiny", "model.onnx"))
	if !bytes.Equal(got, content["model.onnx"]) {
		t.Fatal("resumed file differs")
	}
	// The retry asked only for the rest.
	resumed := false
	for _, r := range s.ranges {
		if r != "" {
			resumed = true
			if r == "bytes=0-" {
				t.Errorf("resume asked for everything: %q", r)
			}
		}
	}
	if !resumed || !strings.Contains(out.String(), "resuming at") {
		t.Errorf("no Range request after the cut: ranges %q\n%s", s.ranges, out.String())
	}
}

func TestResumeAcrossRuns(t *testing.T) {
	s := newRepoServer(t)
	e, content := testEntry(t, s)
	path := "/" + e.Repo + "/resolve/" + e.Revision + "/onnx/model.onnx"
	s.cutOnce[path] = true
	dest := t.TempDir()
	opts := testOptions(s, e, &bytes.Buffer{})
	opts.Attempts = 1
	err := Fetch(context.Background(), nil, dest, opts)
	if err == nil || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("interrupted run: err = %v", err)
	}
	part := filepath.Join(dest, "tiny", "model.onnx.part")
	st, err := os.Stat(part)
	if err != nil || st.Size() == 0 || st.Size() >= int64(len(content["model.onnx"])) {
		t.Fatalf("partial file after the cut: %v, %v", st, err)
	}
	s.ranges = nil
	if err := Fetch(context.Background(), nil, dest, opts); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if len(s.ranges) == 0 || s.ranges[0] != "bytes="+strconv.FormatInt(st.Size(), 10)+"-" {
		t.Errorf("second run's first Range = %q, want bytes=%d-", s.ranges, st.Size())
	}
	got, _ := os.ReadFile(filepath.Join(dest, "tiny", "model.onnx"))
	if !bytes.Equal(got, content["model.onnx"]) {
		t.Fatal("file resumed across runs differs")
	}
}

func TestServerIgnoringRangeRestarts(t *testing.T) {
	s := newRepoServer(t)
	e, content := testEntry(t, s)
	s.cutOnce["/"+e.Repo+"/resolve/"+e.Revision+"/onnx/model.onnx"] = true
	s.noRange = true
	dest := t.TempDir()
	if err := Fetch(context.Background(), nil, dest, testOptions(s, e, &bytes.Buffer{})); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dest, "tiny", "model.onnx"))
	if !bytes.Equal(got, content["model.onnx"]) {
		t.Fatal("file differs after a server ignored Range")
	}
}

func TestUnpinnedRefusedUnlessAllowed(t *testing.T) {
	s := newRepoServer(t)
	e, _ := testEntry(t, s)
	e.Files[1].SHA256 = ""
	dest := t.TempDir()
	var out bytes.Buffer
	err := Fetch(context.Background(), nil, dest, testOptions(s, e, &out))
	if err == nil || !strings.Contains(err.Error(), "allow-unpinned") || !strings.Contains(err.Error(), "tiny/tokenizer.json") {
		t.Fatalf("err = %v", err)
	}
	if s.requests != 0 {
		t.Errorf("%d requests made before refusing", s.requests)
	}
	opts := testOptions(s, e, &out)
	opts.AllowUnpinned = true
	if err := Fetch(context.Background(), nil, dest, opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "WARNING unpinned") {
		t.Errorf("no warning for the unpinned file:\n%s", out.String())
	}
}

func TestHTTPErrorsAndUnknownNames(t *testing.T) {
	s := newRepoServer(t)
	e, _ := testEntry(t, s)
	e.Files[0].Path = "onnx/missing.onnx"
	err := Fetch(context.Background(), nil, t.TempDir(), testOptions(s, e, &bytes.Buffer{}))
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want HTTP 404", err)
	}
	if s.requests != 1 {
		t.Errorf("a 404 was retried: %d requests", s.requests)
	}
	err = Fetch(context.Background(), []string{"nope"}, t.TempDir(), Options{})
	if err == nil || !strings.Contains(err.Error(), "nomic-embed-text-v1.5") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestLabelsMustMatchConfig(t *testing.T) {
	s := newRepoServer(t)
	e, _ := testEntry(t, s)
	e.Sidecar = map[string]any{"labels": []string{"BENIGN", "JAILBREAK"}}
	err := Fetch(context.Background(), nil, t.TempDir(), testOptions(s, e, &bytes.Buffer{}))
	if err == nil || !strings.Contains(err.Error(), "id2label") {
		t.Fatalf("err = %v, want an id2label mismatch", err)
	}
}

func TestProgressPlainLines(t *testing.T) {
	s := newRepoServer(t)
	e, _ := testEntry(t, s)
	var out bytes.Buffer
	if err := Fetch(context.Background(), nil, t.TempDir(), testOptions(s, e, &out)); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "\r") || strings.Contains(text, "\x1b") {
		t.Errorf("terminal control characters in non-terminal output:\n%q", text)
	}
	var modelLines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "model.onnx") {
			modelLines = append(modelLines, l)
		}
	}
	// One line per 10% step at most, plus the first and the final line.
	if len(modelLines) < 2 || len(modelLines) > 12 {
		t.Errorf("%d progress lines for model.onnx:\n%s", len(modelLines), text)
	}
	last := modelLines[len(modelLines)-1]
	if !regexp.MustCompile(`\[#{20}\]  293\.0 KiB / 293\.0 KiB  100\.0%.*done$`).MatchString(last) {
		t.Errorf("final line %q", last)
	}
}

// TestProgressTerminalRedrawRate drives the terminal bar with a fake clock:
// 1000 chunks 1 ms apart (one simulated second) may redraw at most 11 times.
func TestProgressTerminalRedrawRate(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	p := newProgress(&out, true, "model.onnx", 0, 1000*4096, clock)
	for i := 1; i <= 1000; i++ {
		now = now.Add(time.Millisecond)
		p.update(int64(i) * 4096)
	}
	p.finish(true)
	redraws := strings.Count(out.String(), "\r")
	if redraws < 10 || redraws > 12 { // 10 timed redraws (+1 at t=0) + the final one
		t.Errorf("%d redraws in one simulated second", redraws)
	}
	if !strings.Contains(out.String(), "3.9 MiB/s") || !strings.HasSuffix(out.String(), "done\x1b[K\n") {
		t.Errorf("output %q", out.String()[max(0, out.Len()-120):])
	}
}

func TestManifestIsPinned(t *testing.T) {
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	names := map[string]bool{}
	for _, e := range Manifest() {
		if names[e.Name] {
			t.Errorf("duplicate entry %s", e.Name)
		}
		names[e.Name] = true
		if !e.Pinned() || !hex40.MatchString(e.Revision) || e.License == "" || e.Description == "" || e.Kind == "" {
			t.Errorf("%s: incomplete entry %+v", e.Name, e)
		}
		dests := map[string]bool{}
		for _, f := range e.Files {
			if !hex64.MatchString(f.SHA256) || f.Size <= 0 || f.PinSource == "" || dests[f.Dest] {
				t.Errorf("%s/%s: bad file entry %+v", e.Name, f.Path, f)
			}
			dests[f.Dest] = true
			if u := e.URL("", f); !strings.HasPrefix(u, "https://huggingface.co/"+e.Repo+"/resolve/"+e.Revision+"/") {
				t.Errorf("URL %s", u)
			}
		}
		if !dests["model.onnx"] {
			t.Errorf("%s: no model.onnx", e.Name)
		}
	}
	for _, want := range []string{"nomic-embed-text-v1.5", "deberta-v3-base-prompt-injection-v2"} {
		if !names[want] {
			t.Errorf("manifest lacks %s", want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in          string
		start, size int64
		ok          bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 5-9/*", 5, 0, true},
		{"items 1-2/3", 0, 0, false},
		{"bytes x-2/3", 0, 0, false},
	} {
		start, size, ok := parseContentRange(tc.in)
		if start != tc.start || size != tc.size || ok != tc.ok {
			t.Errorf("parseContentRange(%q) = %d, %d, %v", tc.in, start, size, ok)
		}
	}
}
