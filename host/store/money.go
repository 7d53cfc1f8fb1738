package store

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseUSD parses a decimal dollar amount ("12", "0.5", "-3.000001",
// optionally with a leading "$") into micro-USD exactly, without floats.
// More than six decimals is an error, not a rounding.
func ParseUSD(s string) (int64, error) {
	in := s
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	s = strings.TrimPrefix(s, "$")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-") {
		return 0, fmt.Errorf("store: %q is not a dollar amount with at most 6 decimals", in)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > (1<<63-1)/MicroUSD-1 {
		return 0, fmt.Errorf("store: %q is not a dollar amount", in)
	}
	var f int64
	if frac != "" {
		f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("store: %q is not a dollar amount", in)
		}
	}
	v := w*MicroUSD + f
	if neg {
		v = -v
	}
	return v, nil
}

// FormatUSD formats micro-USD as dollars with six decimals ("12.500000").
func FormatUSD(micro int64) string {
	sign := ""
	u := uint64(micro)
	if micro < 0 {
		sign, u = "-", uint64(-micro)
	}
	return fmt.Sprintf("%s%d.%06d", sign, u/MicroUSD, u%MicroUSD)
}
