package upstream

import (
	"bufio"
	"bytes"
	"io"

	"github.com/bardoinference/bardo/sdk/wire"
)

// SSEReader frames a text/event-stream body into events (WHATWG rules: data
// lines joined with \n, comments and retry/id fields ignored, an event ends at
// a blank line).
type SSEReader struct {
	r     *bufio.Reader
	event []byte
	data  []byte
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// maxEvent bounds one event, so a broken upstream cannot make us buffer forever.
const maxEvent = 8 << 20

// Next returns the next event, or io.EOF after the last complete one. A stream
// that ends in the middle of an event returns io.ErrUnexpectedEOF.
func (s *SSEReader) Next() (wire.SSE, error) {
	s.event, s.data = s.event[:0], s.data[:0]
	hasData := false
	for {
		line, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A very long line: accumulate it.
			buf := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull && len(buf) < maxEvent {
				line, err = s.r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return wire.SSE{}, err
		}
		if err == io.EOF && len(line) == 0 {
			if hasData || len(s.event) > 0 {
				return wire.SSE{}, io.ErrUnexpectedEOF
			}
			return wire.SSE{}, io.EOF
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData || len(s.event) > 0 {
				return wire.SSE{Event: string(s.event), Data: append([]byte(nil), s.data...)}, nil
			}
			if err == io.EOF {
				return wire.SSE{}, io.EOF
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		case "event":
			s.event = append(s.event[:0], value...)
		}
		if len(s.data) > maxEvent {
			return wire.SSE{}, io.ErrShortBuffer
		}
		if err == io.EOF {
			return wire.SSE{}, io.ErrUnexpectedEOF
		}
	}
}
