package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
)

const accountsUsage = `usage (amounts in USD, exact to 6 decimals):
  bardo accounts [-data DIR] create [-name NAME] [-tier free|pro|golem]
  bardo accounts [-data DIR] list
  bardo accounts [-data DIR] show ACCOUNT
  bardo accounts [-data DIR] topup ACCOUNT AMOUNT -reason TEXT
  bardo accounts [-data DIR] adjust ACCOUNT ±AMOUNT -reason TEXT
  bardo accounts [-data DIR] tier ACCOUNT free|pro|golem
  bardo accounts [-data DIR] disable|enable ACCOUNT
  bardo accounts [-data DIR] budget ACCOUNT [-day USD|none] [-month USD|none]
An x402 wallet's budget: ACCOUNT is wallet:0x<address> (its account is created
with its first budget); it overrides [x402] wallet_day_budget/wallet_month_budget.
`

const keysUsage = `usage:
  bardo keys [-data DIR] create ACCOUNT [-name NAME] [-read-only] [-spend-limit USD]
                         [-models GLOB,…] [-cidrs CIDR,…] [-expires DURATION|RFC3339]
                         [-rate-limit PER_MINUTE] [-day-budget USD] [-month-budget USD]
  bardo keys [-data DIR] list [ACCOUNT]
  bardo keys [-data DIR] show KEY_ID
  bardo keys [-data DIR] revoke KEY_ID
  bardo keys [-data DIR] disable|enable KEY_ID
  bardo keys [-data DIR] rate-limit KEY_ID PER_MINUTE     (0: the tier's default)
  bardo keys [-data DIR] budget KEY_ID [-day USD|none] [-month USD|none]
The data directory defaults to [storage].data_dir of $BARDO_CONFIG or ./pipeline.toml.
`

// openData opens the store and the key authenticator of a data directory:
// dir if set, else the config's [storage].data_dir.
func openData(ctx context.Context, dir string) (*sqlite.Store, *auth.Authenticator, error) {
	if dir == "" {
		st, err := config.LoadStorage(config.DefaultPath(os.Getenv))
		if err != nil {
			return nil, nil, fmt.Errorf("finding the data directory (or pass -data): %w", err)
		}
		dir = st.DataDir
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	secret, err := auth.LoadSecret(dir)
	if err != nil {
		return nil, nil, err
	}
	s, err := sqlite.Open(ctx, filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		return nil, nil, err
	}
	return s, auth.New(s, secret, auth.Options{Accounts: s}), nil
}

// subcommand splits "[-data DIR] SUB args…".
func subcommand(name, usage string, args []string, stderr io.Writer) (dir, sub string, rest []string, err error) {
	fs := flag.NewFlagSet("bardo "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.StringVar(&dir, "data", "", "data directory")
	if err := fs.Parse(args); err != nil {
		return "", "", nil, err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return "", "", nil, errors.New("missing subcommand")
	}
	return dir, fs.Arg(0), fs.Args()[1:], nil
}

// parseArgs parses flags that may come before or after the positional
// arguments ("topup A 5 -reason x"), taking a negative amount ("-0.25")
// as an argument, and checks the argument count.
func parseArgs(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || strings.IndexByte("0123456789.$", a[1]) >= 0 {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil || hasValue || i+1 == len(args) {
			continue // fs.Parse reports an unknown or incomplete flag
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	if len(pos) < min || len(pos) > max {
		return nil, fmt.Errorf("%s: expected %d to %d arguments, got %d", fs.Name(), min, max, len(pos))
	}
	return pos, nil
}

func accountsCmd(ctx context.Context, args []string, out, stderr io.Writer) error {
	dir, sub, rest, err := subcommand("accounts", accountsUsage, args, stderr)
	if err != nil {
		return err
	}
	s, _, err := openData(ctx, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	fs := flag.NewFlagSet("accounts "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch sub {
	case "create":
		name := fs.String("name", "", "display name")
		tier := fs.String("tier", "free", "free, pro or golem")
		if _, err := parseArgs(fs, rest, 0, 0); err != nil {
			return err
		}
		raw := make([]byte, 8)
		rand.Read(raw)
		a, err := s.CreateAccount(ctx, store.Account{ID: "acct_" + hex.EncodeToString(raw), Name: *name, Tier: store.Tier(*tier)})
		if err != nil {
			return err
		}
		fmt.Fprintln(out, a.ID)
	case "list":
		if _, err := parseArgs(fs, rest, 0, 0); err != nil {
			return err
		}
		as, err := s.ListAccounts(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTIER\tBALANCE\tHELD\tSTATE")
		for _, a := range as {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Tier, usd(a.Balance), usd(a.Held), state(a.Disabled, time.Time{}, time.Time{}))
		}
		return tw.Flush()
	case "show":
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		a, err := s.Account(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "id         %s\nname       %s\ntier       %s\nbalance    %s\nheld       %s\navailable  %s\nstate      %s\ncreated    %s\n",
			a.ID, a.Name, a.Tier, usd(a.Balance), usd(a.Held), usd(a.Available()),
			state(a.Disabled, time.Time{}, time.Time{}), a.Created.Format(time.RFC3339))
		if err := s.Audit(ctx, a.ID); err != nil {
			fmt.Fprintf(out, "audit      FAILED: %v\n", err)
		} else {
			fmt.Fprintln(out, "audit      ok")
		}
		bs, err := s.ListBudgets(ctx, a.ID)
		if err != nil {
			return err
		}
		for _, b := range bs {
			fmt.Fprintf(out, "budget     %s %s per %s: %s\n", b.Scope, b.Subject, b.Period, usd(b.Limit))
		}
	case "topup", "adjust":
		reason := fs.String("reason", "", "why (required)")
		pos, err := parseArgs(fs, rest, 2, 2)
		if err != nil {
			return err
		}
		amt, err := parseUSD(pos[1])
		if err != nil {
			return err
		}
		if *reason == "" {
			return errors.New("a -reason is required: it is kept in the ledger")
		}
		var e store.Entry
		if sub == "topup" {
			e, err = s.TopUp(ctx, pos[0], amt, *reason)
		} else {
			e, err = s.Adjust(ctx, pos[0], amt, *reason)
		}
		if err != nil {
			return err
		}
		a, err := s.Account(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "entry %d: %s %s; balance %s\n", e.Seq, e.Kind, usd(e.Amount), usd(a.Balance))
	case "tier":
		pos, err := parseArgs(fs, rest, 2, 2)
		if err != nil {
			return err
		}
		return s.SetAccountTier(ctx, pos[0], store.Tier(pos[1]))
	case "disable", "enable":
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		return s.SetAccountDisabled(ctx, pos[0], sub == "disable")
	case "budget":
		day := fs.String("day", "", "per UTC day, USD (none: remove)")
		month := fs.String("month", "", "per UTC month, USD (none: remove)")
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		return setBudgets(ctx, s, store.ScopeAccount, pos[0], *day, *month)
	default:
		fmt.Fprint(stderr, accountsUsage)
		return fmt.Errorf("unknown subcommand %q", sub)
	}
	return nil
}

func keysCmd(ctx context.Context, args []string, out, stderr io.Writer) error {
	dir, sub, rest, err := subcommand("keys", keysUsage, args, stderr)
	if err != nil {
		return err
	}
	s, a, err := openData(ctx, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch sub {
	case "create":
		name := fs.String("name", "", "label")
		ro := fs.Bool("read-only", false, "models, count_tokens and balance only")
		limit := fs.String("spend-limit", "", "lifetime spend limit, USD")
		models := fs.String("models", "", "comma-separated model globs")
		cidrs := fs.String("cidrs", "", "comma-separated CIDRs or addresses")
		expires := fs.String("expires", "", "a duration from now (720h) or an RFC 3339 time")
		rate := fs.Int("rate-limit", 0, "requests per minute (0: the tier's default)")
		day := fs.String("day-budget", "", "spend cap per UTC day, USD")
		month := fs.String("month-budget", "", "spend cap per UTC month, USD")
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		if *rate < 0 {
			return errors.New("-rate-limit must be 0 (the tier's default) or more")
		}
		// The budgets are checked before the key exists, so that a bad one
		// leaves no key behind.
		budgets, err := parseBudgets(store.ScopeKey, "", *day, *month)
		if err != nil {
			return err
		}
		spec := auth.KeySpec{Name: *name, ReadOnly: *ro, Models: splitComma(*models), CIDRs: splitComma(*cidrs), RateLimit: *rate}
		if *limit != "" {
			if spec.SpendLimit, err = parseUSD(*limit); err != nil {
				return err
			}
		}
		if *expires != "" {
			if d, err := time.ParseDuration(*expires); err == nil {
				spec.Expires = time.Now().Add(d)
			} else if spec.Expires, err = time.Parse(time.RFC3339, *expires); err != nil {
				return fmt.Errorf("-expires %q: neither a duration nor an RFC 3339 time", *expires)
			}
		}
		if _, err := s.Account(ctx, pos[0]); err != nil {
			return err
		}
		token, k, err := a.Create(ctx, pos[0], spec)
		if err != nil {
			return err
		}
		for _, b := range budgets {
			b.Subject = k.ID
			if err := s.SetBudget(ctx, b); err != nil {
				a.Revoke(ctx, k.ID) // never hand out a key without the caps asked for
				return fmt.Errorf("setting the key's budget (the key was revoked): %w", err)
			}
		}
		fmt.Fprintf(stderr, "key %s created for %s; the key is shown once, store it now:\n", k.ID, k.AccountID)
		fmt.Fprintln(out, token)
	case "list":
		pos, err := parseArgs(fs, rest, 0, 1)
		if err != nil {
			return err
		}
		acct := ""
		if len(pos) == 1 {
			acct = pos[0]
		}
		ks, err := s.ListKeys(ctx, acct)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tACCOUNT\tNAME\tSCOPES\tSTATE\tCREATED")
		for _, k := range ks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.AccountID, k.Name, scopes(k), state(k.Disabled, k.Revoked, k.Expires), k.Created.Format(time.RFC3339))
		}
		return tw.Flush()
	case "show":
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		k, err := s.Key(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "id       %s\naccount  %s\nname     %s\nscopes   %s\nstate    %s\ncreated  %s\n",
			k.ID, k.AccountID, k.Name, scopes(k), state(k.Disabled, k.Revoked, k.Expires), k.Created.Format(time.RFC3339))
	case "revoke":
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		return a.Revoke(ctx, pos[0])
	case "disable", "enable":
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		return a.SetDisabled(ctx, pos[0], sub == "disable")
	case "rate-limit":
		pos, err := parseArgs(fs, rest, 2, 2)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(pos[1])
		if err != nil || n < 0 {
			return fmt.Errorf("rate limit %q: requests per minute, 0 for the tier's default", pos[1])
		}
		return s.SetKeyRateLimit(ctx, pos[0], n)
	case "budget":
		day := fs.String("day", "", "per UTC day, USD (none: remove)")
		month := fs.String("month", "", "per UTC month, USD (none: remove)")
		pos, err := parseArgs(fs, rest, 1, 1)
		if err != nil {
			return err
		}
		return setBudgets(ctx, s, store.ScopeKey, pos[0], *day, *month)
	default:
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("unknown subcommand %q", sub)
	}
	return nil
}

// usd formats micro-USD as host/pricing does in the response headers.
func usd(micro int64) string { return pricing.Micros(micro).String() }

// parseUSD parses an exact decimal dollar amount (no floats).
func parseUSD(s string) (int64, error) {
	m, err := pricing.ParseUSD(strings.TrimPrefix(s, "$"))
	return int64(m), err
}

// parseBudgets reads -day and -month budget flags: a USD amount sets the
// cap, "none" (or 0) removes it, "" leaves it alone.
func parseBudgets(scope store.BudgetScope, subject, day, month string) ([]store.SpendBudget, error) {
	var out []store.SpendBudget
	for _, f := range []struct {
		v      string
		period store.BudgetPeriod
	}{{day, store.PeriodDay}, {month, store.PeriodMonth}} {
		if f.v == "" {
			continue
		}
		b := store.SpendBudget{Scope: scope, Subject: subject, Period: f.period}
		if f.v != "none" {
			m, err := parseUSD(f.v)
			if err != nil || m < 0 {
				return nil, fmt.Errorf("%s budget %q: a USD amount with at most 6 decimals, or none", f.period, f.v)
			}
			b.Limit = m
		}
		out = append(out, b)
	}
	return out, nil
}

func setBudgets(ctx context.Context, s store.SpendBudgets, scope store.BudgetScope, subject, day, month string) error {
	bs, err := parseBudgets(scope, subject, day, month)
	if err != nil {
		return err
	}
	if len(bs) == 0 {
		return errors.New("nothing to change: give -day and/or -month")
	}
	for _, b := range bs {
		if err := s.SetBudget(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func scopes(k store.Key) string {
	var s []string
	if k.ReadOnly {
		s = append(s, "read-only")
	}
	if k.SpendLimit > 0 {
		s = append(s, "limit $"+usd(k.SpendLimit))
	}
	if len(k.Models) > 0 {
		s = append(s, "models "+strings.Join(k.Models, ","))
	}
	if len(k.CIDRs) > 0 {
		s = append(s, "from "+strings.Join(k.CIDRs, ","))
	}
	if !k.Expires.IsZero() {
		s = append(s, "expires "+k.Expires.Format(time.RFC3339))
	}
	if k.RateLimit > 0 {
		s = append(s, strconv.Itoa(k.RateLimit)+"/min")
	}
	if len(s) == 0 {
		return "all"
	}
	return strings.Join(s, "; ")
}

func state(disabled bool, revoked, expires time.Time) string {
	switch {
	case !revoked.IsZero():
		return "revoked"
	case disabled:
		return "disabled"
	case !expires.IsZero() && !time.Now().Before(expires):
		return "expired"
	}
	return "active"
}
