package fakeupstream

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Event is one server-sent event: its "event:" name (empty for OpenAI) and
// its data lines joined by "\n".
type Event struct {
	Event string
	Data  string
}

// ParseSSE decodes a text/event-stream body into events. It returns the
// events read so far together with any read error, so a stream the server
// cut yields its first frames and io.ErrUnexpectedEOF. A trailing event with
// no terminating blank line is not returned.
func ParseSSE(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		events []Event
		cur    Event
		data   []string
	)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil || cur.Event != "" {
				cur.Data = strings.Join(data, "\n")
				events = append(events, cur)
			}
			cur, data = Event{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comment
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.Event = value
		case "data":
			data = append(data, value)
		}
	}
	return events, sc.Err()
}

// sseWriter writes frames of one stream, applying the behaviour's per-frame
// delay, the malformed frame and the cut.
type sseWriter struct {
	s         *Server
	w         http.ResponseWriter
	rc        *http.ResponseController
	ctx       context.Context
	b         Behaviour
	frames    int    // frames written so far
	bad       string // the provider's malformed frame
	malformed bool   // whether the malformed frame was written
}

func (s *Server) newSSE(w http.ResponseWriter, r *http.Request, b Behaviour, bad string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{s: s, w: w, rc: http.NewResponseController(w), ctx: r.Context(), b: b, bad: bad}
	_ = sw.rc.Flush()
	return sw
}

// send writes one frame; event is "" for OpenAI's data-only frames.
func (sw *sseWriter) send(event string, payload any) {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	sw.frame(event, string(data))
}

func (sw *sseWriter) frame(event, data string) {
	if sw.b.CutStream && sw.frames >= sw.b.CutAfter {
		abort(sw.w)
	}
	if sw.b.MalformedChunk && !sw.malformed && sw.frames >= sw.b.MalformedAfter {
		sw.malformed = true
		sw.write(sw.bad)
	}
	if sw.frames > 0 && !sw.s.sleep(sw.ctx, sw.b.ChunkDelay) {
		abort(sw.w)
	}
	if sw.frames == 1 && sw.b.Hold != nil && !sw.s.wait(sw.ctx, sw.b.Hold) {
		abort(sw.w)
	}
	var sb strings.Builder
	if event != "" {
		sb.WriteString("event: " + event + "\n")
	}
	sb.WriteString("data: " + data + "\n\n")
	sw.write(sb.String())
	sw.frames++
}

// end writes the terminating frame, unless the behaviour cuts the stream.
func (sw *sseWriter) end(event, data string) {
	if sw.b.CutStream {
		abort(sw.w)
	}
	sw.frame(event, data)
}

func (sw *sseWriter) write(s string) {
	if _, err := io.WriteString(sw.w, s); err != nil {
		panic(http.ErrAbortHandler) // client gone
	}
	_ = sw.rc.Flush()
}
