package eventlog

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// SSE streams the log's events after seq to w as server-sent events —
// "id: <seq>", "event: <type>", one JSON data line — keeping those keep
// accepts (nil: all), until ctx ends or a write fails. It sends a comment
// every heartbeat while nothing happens, so proxies keep the connection.
//
// A reader never holds up Emit: it reads the ring behind it. One that falls
// more than the ring's capacity behind is dropped with a notice (an
// "event: dropped" with how many it missed) rather than silently skipped:
// it reconnects with Last-Event-ID and knows what it lost.
func (l *Log) SSE(ctx context.Context, w *bufio.Writer, seq uint64, keep func(*Event) bool, heartbeat time.Duration) {
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	l.watchers.Add(1)
	defer l.watchers.Add(-1)
	// Say the stream is open at once: a client waiting for its first
	// event knows it is connected.
	if _, err := w.WriteString(": events\n\n"); err != nil || w.Flush() != nil {
		return
	}
	var buf []byte
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, heartbeat)
		evs, next, missed := l.Wait(wctx, seq, 256)
		cancel()
		buf = buf[:0]
		if missed > 0 {
			buf = append(buf, "event: dropped\ndata: {\"missed\":"...)
			buf = strconv.AppendUint(buf, missed, 10)
			buf = append(buf, ",\"reason\":\"the reader fell behind the event buffer; reconnect with Last-Event-ID\"}\n\n"...)
			w.Write(buf)
			w.Flush()
			return
		}
		for i := range evs {
			if keep != nil && !keep(&evs[i]) {
				continue
			}
			buf = appendSSE(buf, &evs[i])
		}
		seq = next
		if len(evs) == 0 {
			buf = append(buf, ": keep-alive\n\n"...) // the heartbeat passed in silence
		}
		if len(buf) == 0 {
			continue // only other accounts' events
		}
		if _, err := w.Write(buf); err != nil || w.Flush() != nil {
			return
		}
	}
}

func appendSSE(dst []byte, e *Event) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, e.Type...)
	dst = append(dst, "\ndata: "...)
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(`{"error":"unencodable event"}`)
	}
	dst = append(dst, b...)
	return append(dst, "\n\n"...)
}

// ParseLastEventID reads an SSE Last-Event-ID (a sequence number) to
// resume after; an empty or malformed one starts from now (the log's
// newest event).
func (l *Log) ParseLastEventID(v []byte) uint64 {
	if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return n
	}
	return l.Last()
}
