package billing

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// The settlement journal (README.md, "The journal"): Tab.Close appends its
// posting here with one write(2) and returns; the writer commits it to the
// ledger afterwards, and a segment whose every record is committed is
// deleted. At start, leftover segments are replayed through store.Post,
// which is idempotent by request id. There is no fsync: what the kernel
// was given survives kill -9, as SQLite's own WAL with synchronous=NORMAL
// does; a power cut can lose both.
//
// A segment file is journalMagic, then records: a little-endian uint32
// payload length, the payload's CRC-32C, and the payload (one JSON object,
// journalRecord). A record cut short by a kill, or whose checksum fails,
// ends the segment's replay.

// JournalPrefix starts the name of every journal segment in the data
// directory: ledger.journal.<sequence number>.
const JournalPrefix = "ledger.journal."

const (
	journalMagic = "bardoj1\n"
	// segmentBytes is the size at which a segment is sealed and a new one
	// started: ~2,500 records; small enough that a start replays little
	// and a committed segment soon disappears.
	segmentBytes = 1 << 20
	// maxRecord bounds a record's payload; a longer length prefix is
	// garbage, not a record.
	maxRecord = 1 << 20
	// replayTimeout bounds one replay commit at start.
	replayTimeout = time.Minute
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journalRecord is a posting as the journal stores it: store.Usage with
// names of its own, so renaming a Go field cannot orphan a journal left by
// the previous version.
type journalRecord struct {
	RequestID        string    `json:"request_id"`
	AccountID        string    `json:"account_id"`
	KeyID            string    `json:"key_id,omitempty"`
	Model            string    `json:"model,omitempty"`
	Provider         string    `json:"provider,omitempty"`
	InputTokens      int64     `json:"input_tokens,omitempty"`
	OutputTokens     int64     `json:"output_tokens,omitempty"`
	CacheReadTokens  int64     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64     `json:"cache_write_tokens,omitempty"`
	Cost             int64     `json:"cost,omitempty"`
	Charge           int64     `json:"charge,omitempty"`
	Savings          int64     `json:"savings,omitempty"`
	Cache            string    `json:"cache,omitempty"`
	LatencyMicros    int64     `json:"latency_us,omitempty"`
	Status           int       `json:"status,omitempty"`
	At               time.Time `json:"at"`
	Shortfall        int64     `json:"shortfall,omitempty"`
}

func recordOf(u *store.Usage) journalRecord {
	return journalRecord{RequestID: u.RequestID, AccountID: u.AccountID, KeyID: u.KeyID, Model: u.Model,
		Provider: u.Provider, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, Cost: u.Cost, Charge: u.Charge,
		Savings: u.Savings, Cache: u.Cache, LatencyMicros: u.LatencyMicros, Status: u.Status, At: u.At,
		Shortfall: u.Shortfall}
}

func (r *journalRecord) usage() store.Usage {
	return store.Usage{RequestID: r.RequestID, AccountID: r.AccountID, KeyID: r.KeyID, Model: r.Model,
		Provider: r.Provider, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens, Cost: r.Cost, Charge: r.Charge,
		Savings: r.Savings, Cache: r.Cache, LatencyMicros: r.LatencyMicros, Status: r.Status, At: r.At,
		Shortfall: r.Shortfall}
}

// appendRecord appends u's framed record to dst.
func appendRecord(dst []byte, u *store.Usage) ([]byte, error) {
	payload, err := json.Marshal(recordOf(u))
	if err != nil {
		return dst, err
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, crcTable))
	return append(dst, payload...), nil
}

// segment is one journal file. Its counters are guarded by journal.mu.
type segment struct {
	seq     uint64
	path    string
	size    int64
	written int  // records appended
	done    int  // records the ledger committed (or refused for good)
	sealed  bool // no more appends: full, failed, or the journal closed
}

func (s *segment) complete() bool { return s.sealed && s.done == s.written }

// journal is the append side, shared by every Tab.Close.
type journal struct {
	dir string
	max int64 // segment size at which the next append starts a new one
	log *slog.Logger

	mu      sync.Mutex
	f       *os.File
	cur     *segment
	live    []*segment // not yet deleted
	seq     uint64     // the last segment number used
	buf     []byte
	failing bool     // the last append failed (logged once, until one succeeds)
	lock    *os.File // ledger.journal.lock, held while the meter lives (nil in tests)
}

func openJournal(dir string, lastSeq uint64, log *slog.Logger) *journal {
	return &journal{dir: dir, max: segmentBytes, log: log, seq: lastSeq}
}

// append writes u's record to the current segment with one write(2),
// starting a segment when there is none or it is full, and returns the
// segment it went to. An error means the record is not journaled (a torn
// write seals its segment, so the torn bytes stay its tail); the caller
// then waits for the commit instead.
func (j *journal) append(u *store.Usage) (*segment, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	rec, err := appendRecord(j.buf[:0], u)
	if err != nil {
		return nil, err
	}
	j.buf = rec[:0]
	if j.cur == nil || j.cur.size+int64(len(rec)) > j.max && j.cur.written > 0 {
		if err := j.rotate(); err != nil {
			return nil, j.failed(err)
		}
	}
	n, err := j.f.Write(rec)
	j.cur.size += int64(n)
	if err != nil {
		j.seal()
		return nil, j.failed(err)
	}
	j.cur.written++
	if j.failing {
		j.failing = false
		j.log.Warn("billing: settlement journal writable again; settlements no longer wait for their commit")
	}
	return j.cur, nil
}

// failed logs the first of a run of failed appends at error level.
func (j *journal) failed(err error) error {
	if !j.failing {
		j.failing = true
		j.log.Error("billing: cannot write the settlement journal; settlements wait for their commit until it can be written",
			"dir", j.dir, "err", err)
	}
	return err
}

// rotate seals the current segment and opens the next. Called with j.mu.
func (j *journal) rotate() error {
	j.seal()
	j.seq++
	s := &segment{seq: j.seq, path: filepath.Join(j.dir, segmentName(j.seq))}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(journalMagic); err != nil {
		f.Close()
		os.Remove(s.path)
		return err
	}
	s.size = int64(len(journalMagic))
	j.f, j.cur = f, s
	j.live = append(j.live, s)
	return nil
}

// seal closes the current segment for appends and deletes it if every
// record it holds is committed. Called with j.mu.
func (j *journal) seal() {
	if j.cur == nil {
		return
	}
	j.f.Close()
	j.cur.sealed = true
	if j.cur.complete() {
		j.remove(j.cur)
	}
	j.f, j.cur = nil, nil
}

// remove deletes a complete segment. Called with j.mu.
func (j *journal) remove(s *segment) {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		j.log.Warn("billing: cannot delete a committed journal segment; its records are replayed (as no-ops) at the next start",
			"path", s.path, "err", err)
	}
	j.live = slices.DeleteFunc(j.live, func(x *segment) bool { return x == s })
}

// committed counts n of s's records as committed, deleting s once it is
// sealed and complete.
func (j *journal) committed(s *segment, n int) {
	j.mu.Lock()
	s.done += n
	if s.complete() {
		j.remove(s)
	}
	j.mu.Unlock()
}

// close seals the current segment and deletes every complete one; it
// returns how many records stay journaled, uncommitted, for the next
// start to replay.
func (j *journal) close() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seal()
	kept := 0
	for _, s := range slices.Clone(j.live) {
		if s.complete() {
			j.remove(s)
		} else {
			kept += s.written - s.done
		}
	}
	if j.lock != nil {
		j.lock.Close()
		j.lock = nil
	}
	return kept
}

func segmentName(seq uint64) string { return fmt.Sprintf("%s%010d", JournalPrefix, seq) }

// segments lists the journal segments in dir, oldest first.
func segments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), JournalPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if n, err := strconv.ParseUint(name, 10, 64); err == nil {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// readSegment decodes a segment's records. A record cut short or failing
// its checksum ends the segment: a kill mid-write leaves at most its last
// record torn, and that request never got its response. torn reports the
// bytes skipped.
func readSegment(b []byte) (us []store.Usage, torn int, err error) {
	if len(b) < len(journalMagic) {
		return nil, len(b), nil // killed while the segment was created
	}
	if string(b[:len(journalMagic)]) != journalMagic {
		return nil, 0, errors.New("not a settlement journal segment")
	}
	b = b[len(journalMagic):]
	for len(b) > 0 {
		if len(b) < 8 {
			return us, len(b), nil
		}
		n, sum := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		if n > maxRecord || int(n) > len(b)-8 || crc32.Checksum(b[8:8+n], crcTable) != sum {
			return us, len(b), nil
		}
		var r journalRecord
		if err := json.Unmarshal(b[8:8+n], &r); err != nil {
			return us, len(b), nil
		}
		us = append(us, r.usage())
		b = b[8+n:]
	}
	return us, 0, nil
}

// replayJournal posts every record of every segment in dir through
// st.Post, at most batch at a time, and deletes each segment once its
// records are committed. Post is idempotent by request id, so a record
// committed before the crash changes nothing, and a replay cut short by
// another crash is simply replayed again. It returns the last segment
// number seen, so new segments sort after it.
func replayJournal(st Store, dir string, batch int, log *slog.Logger) (uint64, error) {
	seqs, err := segments(dir)
	if err != nil || len(seqs) == 0 {
		return 0, err
	}
	var posted, replayed, refused int
	for _, seq := range seqs {
		path := filepath.Join(dir, segmentName(seq))
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("billing: settlement journal: %w", err)
		}
		us, torn, err := readSegment(b)
		if err != nil {
			return 0, fmt.Errorf("billing: settlement journal %s: %w", path, err)
		}
		if torn > 0 {
			log.Warn("billing: settlement journal: skipped a torn record (killed mid-write; its request got no response)",
				"path", path, "bytes", torn, "records_before", len(us))
		}
		for len(us) > 0 {
			n := min(len(us), batch)
			ps := make([]store.Posting, n)
			for i := range ps {
				ps[i].Usage = us[i]
			}
			ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
			res, err := st.Post(ctx, ps)
			cancel()
			if err != nil {
				return 0, fmt.Errorf("billing: replaying the settlement journal %s: %w", path, err)
			}
			for i, r := range res {
				switch {
				case r.Err != nil:
					refused++
					log.Error("billing: journaled posting refused by the ledger; not charged", "request_id",
						us[i].RequestID, "account", us[i].AccountID, "charge", us[i].Charge, "err", r.Err)
				case r.Replayed:
					replayed++
				default:
					posted++
				}
			}
			us = us[n:]
		}
		if err := os.Remove(path); err != nil {
			return 0, fmt.Errorf("billing: settlement journal: %w", err)
		}
	}
	log.Info("billing: replayed the settlement journal", "segments", len(seqs), "posted", posted,
		"already_committed", replayed, "refused", refused)
	return seqs[len(seqs)-1], nil
}
