package store

import "testing"

func TestParseFormatUSD(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"12", 12_000_000}, {"0.5", 500_000}, {"$1.25", 1_250_000}, {".000001", 1}, {"-3.000001", -3_000_001},
		{"0", 0}, {"9223372036853.775807", 9223372036853_775807},
	} {
		got, err := ParseUSD(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", ".", "1.0000001", "abc", "1e3", "--1", "1.-5", "+1", "99999999999999999"} {
		if v, err := ParseUSD(bad); err == nil {
			t.Errorf("ParseUSD(%q) = %d", bad, v)
		}
	}
	for micro, want := range map[int64]string{0: "0.000000", 1: "0.000001", 12_500_000: "12.500000", -1_500_000: "-1.500000"} {
		if got := FormatUSD(micro); got != want {
			t.Errorf("FormatUSD(%d) = %q", micro, got)
		}
	}
}
