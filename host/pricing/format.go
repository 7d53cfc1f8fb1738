package pricing

import (
	"errors"
	"strconv"
	"strings"
)

// Header names for the figures (issue 12; spec 003).
const (
	HeaderCost           = "X-Bardo-Cost"
	HeaderSavings        = "X-Bardo-Savings"
	HeaderBalance        = "X-Bardo-Balance"
	HeaderBalanceWarning = "X-Bardo-Balance-Warning"
	HeaderRemainingToken = "X-Remaining-Tokens"
)

// DirectCost is X-Bardo-Cost under Direct terms (spec 003: the cost is on
// the caller's own provider bill, not the gateway's ledger).
const DirectCost = "direct"

// LowBalance is the balance under which X-Bardo-Balance-Warning is sent
// (spec 003: below $1.00).
const LowBalance Micros = 1 * MicrosPerUSD

// AppendUSD appends m as a US-dollar decimal with exactly six fraction
// digits ("0.001234", "-0.000250", "12.000000"): exact, no float, and the
// same width for every amount so clients can compare strings of equal sign.
func AppendUSD(dst []byte, m Micros) []byte {
	u := uint64(m)
	if m < 0 {
		dst = append(dst, '-')
		u = uint64(-(m + 1)) + 1 // also right for math.MinInt64
	}
	dst = strconv.AppendUint(dst, u/MicrosPerUSD, 10)
	frac := u % MicrosPerUSD
	var buf [7]byte
	buf[0] = '.'
	for i := 6; i > 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(dst, buf[:]...)
}

// String formats m as AppendUSD does.
func (m Micros) String() string { return string(AppendUSD(make([]byte, 0, 24), m)) }

// ParseUSD parses a decimal US-dollar amount with at most six fraction
// digits ("0.001234", "-1", "12.5") into Micros, exactly.
func ParseUSD(s string) (Micros, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "" || len(fp) > 6 || !digits(ip) || !digits(fp) {
		return 0, errBadUSD
	}
	n, err := strconv.ParseInt(ip, 10, 64)
	if err != nil || n > (1<<63-1)/MicrosPerUSD-1 {
		return 0, errBadUSD
	}
	m := n * MicrosPerUSD
	if fp != "" {
		f, _ := strconv.ParseInt(fp+strings.Repeat("0", 6-len(fp)), 10, 64)
		m += f
	}
	if neg {
		m = -m
	}
	return Micros(m), nil
}

var errBadUSD = errors.New("pricing: not a USD amount with at most 6 decimals")

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CostHeader is the X-Bardo-Cost value: the charge in USD, or "direct".
func (f *Figures) CostHeader() string {
	if f.DirectKey {
		return DirectCost
	}
	return f.Charge.String()
}

// SavingsHeader is the X-Bardo-Savings value in USD (may be negative).
func (f *Figures) SavingsHeader() string { return f.Savings.String() }

// BalanceWarning reports whether X-Bardo-Balance-Warning is due.
func BalanceWarning(balance Micros) bool { return balance < LowBalance }

// Trailer is the end-of-stream statement of a streamed answer, whose
// headers left before its cost was known. It is written as one SSE comment
// line, which every SSE parser must ignore (WHATWG HTML, "event stream
// interpretation": a line starting with ':') and both official SDKs do
// (see README.md):
//
//	: bardo cost=0.001234 savings=0.000310 balance=4.998766 remaining-tokens=98765
//
// cost is the charge ("direct" under Direct terms), as in the headers;
// balance and remaining-tokens are left out when unknown.
type Trailer struct {
	Figures         Figures
	Balance         Micros
	HasBalance      bool
	RemainingTokens int64
	HasRemaining    bool
}

// trailerPrefix starts the comment line.
const trailerPrefix = ": bardo "

// Append appends the trailer line and a blank line (so it is an event
// block of its own that dispatches nothing).
func (t *Trailer) Append(dst []byte) []byte {
	dst = append(dst, trailerPrefix...)
	dst = append(dst, "cost="...)
	if t.Figures.DirectKey {
		dst = append(dst, DirectCost...)
	} else {
		dst = AppendUSD(dst, t.Figures.Charge)
	}
	dst = append(dst, " savings="...)
	dst = AppendUSD(dst, t.Figures.Savings)
	if t.HasBalance {
		dst = append(dst, " balance="...)
		dst = AppendUSD(dst, t.Balance)
	}
	if t.HasRemaining {
		dst = append(dst, " remaining-tokens="...)
		dst = strconv.AppendInt(dst, t.RemainingTokens, 10)
	}
	return append(dst, "\n\n"...)
}

// StreamFigures are the values of a parsed Trailer line.
type StreamFigures struct {
	Cost            string // a USD decimal or "direct"
	Savings         string
	Balance         string // "" when absent
	RemainingTokens string // "" when absent
}

// ParseTrailer parses a trailer line (with or without its line ending),
// for clients and tests; ok is false when line is not one.
func ParseTrailer(line string) (StreamFigures, bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), trailerPrefix)
	if !ok {
		return StreamFigures{}, false
	}
	var sf StreamFigures
	for _, kv := range strings.Fields(rest) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "cost":
			sf.Cost = v
		case "savings":
			sf.Savings = v
		case "balance":
			sf.Balance = v
		case "remaining-tokens":
			sf.RemainingTokens = v
		}
	}
	return sf, sf.Cost != ""
}
