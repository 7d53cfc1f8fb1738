package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte size units accepted by ParseSize.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// ParseSize parses a byte size: a non-negative integer number of bytes
// optionally followed by one of the units B, KiB, MiB or GiB (binary
// multiples), with optional blanks between number and unit: "512", "512B",
// "64KiB", "10 MiB", "1GiB". Decimal units (KB, MB) and fractions are
// refused so that a size always means exactly one number of bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, fmt.Errorf("invalid size %q: want an integer with an optional unit B, KiB, MiB or GiB", s)
	}
	n, err := strconv.ParseInt(t[:end], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: number out of range", s)
	}
	var mult int64
	switch unit := strings.TrimSpace(t[end:]); unit {
	case "", "B":
		mult = 1
	case "KiB":
		mult = KiB
	case "MiB":
		mult = MiB
	case "GiB":
		mult = GiB
	default:
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, KiB, MiB or GiB)", s, unit)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q: out of range", s)
	}
	return n * mult, nil
}

// FormatSize formats n bytes with the largest unit that divides it exactly,
// so that ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	switch {
	case n != 0 && n%GiB == 0:
		return strconv.FormatInt(n/GiB, 10) + "GiB"
	case n != 0 && n%MiB == 0:
		return strconv.FormatInt(n/MiB, 10) + "MiB"
	case n != 0 && n%KiB == 0:
		return strconv.FormatInt(n/KiB, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}
