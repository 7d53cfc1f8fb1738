package respcache

import "github.com/bardoinference/bardo/sdk/wire"

// Assembler rebuilds a streamed answer, batch by batch, as one Response:
// what a host hands the layers that only watch streams (ABI v1.6,
// wire.FlagWatchStream) instead of calling their on_stream per batch. It
// keeps the compact records a cache keeps in its stream state (Collect),
// so a cache given the assembled answer stores what it would have
// rebuilt itself. The zero value is ready; plain Go, for hosts and guests.
type Assembler struct {
	// Max bounds the records kept (about the answer's size); past it the
	// answer is dropped and Response reports it incomplete. 0: no bound.
	Max     int
	records []byte
	failed  bool
}

// Add appends a batch of events. An error event fails the answer: a
// stream that carried one is not an answer to record.
func (a *Assembler) Add(events []wire.Event) {
	if a.failed {
		return
	}
	for i := range events {
		if events[i].Type == wire.EventError {
			a.fail()
			return
		}
		a.records = appendRecord(a.records, &events[i])
	}
	if a.Max > 0 && len(a.records) > a.Max {
		a.fail()
	}
}

func (a *Assembler) fail() { a.failed, a.records = true, nil }

// Response rebuilds the answer from what was added; ok is false when the
// stream did not reach message_stop, carried an error event or outgrew
// Max. Its strings may alias the Assembler, which must not be added to
// while the Response is in use.
func (a *Assembler) Response() (resp wire.Response, ok bool) {
	if a.failed {
		return resp, false
	}
	return rebuild(a.records)
}
