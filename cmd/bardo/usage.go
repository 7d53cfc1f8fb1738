package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

const usageUsage = `usage:
  bardo usage [-data DIR] ACCOUNT [-from TIME] [-to TIME] [-key KEY_ID] [-model MODEL]
                                  [-limit N] [-cursor CURSOR]
  bardo usage [-data DIR] ACCOUNT -daily [-from TIME] [-to TIME]
TIME is RFC 3339 (2026-11-26T00:00:00Z) or a UTC date (2026-11-26); from is
inclusive, to exclusive. Records are listed newest first, N a page (default
100, at most 1000); the next page's -cursor is printed on stderr. -daily sums
per UTC day (default: the last 30 days).
`

// usageCmd lists an account's usage records or daily sums.
func usageCmd(ctx context.Context, args []string, out, stderr io.Writer) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageUsage) }
	dir := fs.String("data", "", "data directory")
	from := fs.String("from", "", "first time (inclusive)")
	to := fs.String("to", "", "last time (exclusive)")
	key := fs.String("key", "", "only this key's records")
	model := fs.String("model", "", "only this model's records")
	limit := fs.Int("limit", 100, "records per page (1–1000)")
	cursor := fs.String("cursor", "", "the cursor a previous page printed")
	daily := fs.Bool("daily", false, "sums per UTC day")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		fs.Usage()
		return err
	}
	q := store.UsageQuery{AccountID: pos[0], KeyID: *key, Model: *model, Limit: *limit, Cursor: *cursor}
	if q.From, err = parseWhen("-from", *from); err != nil {
		return err
	}
	if q.To, err = parseWhen("-to", *to); err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return errors.New("-limit must be 1 to 1000")
	}
	s, _, err := openData(ctx, *dir)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Account(ctx, q.AccountID); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if *daily {
		if q.To.IsZero() {
			q.To = time.Now().UTC()
		}
		if q.From.IsZero() {
			q.From = q.To.AddDate(0, 0, -30)
		}
		days, err := s.DailyUsage(ctx, q.AccountID, q.From, q.To)
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "DAY\tREQUESTS\tINPUT\tOUTPUT\tCOST\tCHARGE\tSAVINGS")
		for _, d := range days {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", d.Day.Format(time.DateOnly), d.Requests, d.InputTokens,
				d.OutputTokens, usd(d.Cost), usd(d.Charge), usd(d.Savings))
		}
		return tw.Flush()
	}
	page, err := s.Usage(ctx, q)
	if err != nil {
		return err
	}
	fmt.Fprintln(tw, "AT\tREQUEST\tKEY\tMODEL\tPROVIDER\tIN\tOUT\tCACHE_R\tCACHE_W\tCOST\tCHARGE\tSAVINGS\tCACHE\tSTATUS")
	for _, u := range page.Records {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d\n", u.At.UTC().Format(time.RFC3339),
			u.RequestID, dash(u.KeyID), dash(u.Model), dash(u.Provider), u.InputTokens, u.OutputTokens, u.CacheReadTokens,
			u.CacheWriteTokens, usd(u.Cost), usd(u.Charge), usd(u.Savings), dash(u.Cache), u.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(stderr, "more: add -cursor %s\n", page.Next)
	}
	return nil
}

// parseWhen reads an RFC 3339 time or a UTC date; "" is the zero time.
func parseWhen(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: an RFC 3339 time or a date (2026-11-26)", flag, v)
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
