package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

const crashEnv = "BARDO_LEDGER_CRASH_DIR"

// TestMain lets the crash test re-execute this binary as the writer it
// kills.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild reserves and settles from 8 goroutines until it is killed (or
// a bound is reached), printing "settled <request>" after each commit.
func crashChild(dir string) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(dir, FileName), Options{})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20_000 {
				id := fmt.Sprintf("w%d-%d", w, i)
				r, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: id, Amount: 50})
				if err != nil {
					continue
				}
				if i%5 == 4 {
					s.Release(ctx, r.ID)
					continue
				}
				if _, err := s.Settle(ctx, r.ID, int64(1+i%40), &store.Usage{Model: "m"}); err == nil {
					out.Lock()
					fmt.Println("settled", id)
					out.Unlock()
				}
			}
		}()
	}
	wg.Wait()
}

// A process writing reservations and settlements is killed with SIGKILL;
// reopened, the store has every acknowledged settlement exactly once, its
// orphaned reservations are released and the ledger balances to the unit.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	const start = 1_000_000_000
	account(t, s, "a", start)
	s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	deadline := time.Now().Add(30 * time.Second)
	for len(acked) < 500 && time.Now().Before(deadline) && sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "settled "); ok {
			acked[id] = true
		} else {
			t.Log("child:", line)
		}
	}
	cmd.Process.Kill() // SIGKILL: no deferred code, no clean close
	cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("the child settled nothing before it was killed")
	}

	before := time.Now()
	s2 := open(t, dir)
	n, err := s2.ReleaseOrphans(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	a := audit(t, s2, "a")
	if a.Held != 0 {
		t.Fatalf("held %d after releasing %d orphans", a.Held, n)
	}
	var charged, records, settled, dupUsage int64
	s2.r.QueryRow(`SELECT COALESCE(SUM(charge), 0), COUNT(*) FROM usage`).Scan(&charged, &records)
	s2.r.QueryRow(`SELECT COUNT(*) FROM reservations WHERE state = 'settled'`).Scan(&settled)
	s2.r.QueryRow(`SELECT COUNT(*) FROM reservations r WHERE r.state = 'settled' AND
		(SELECT COUNT(*) FROM usage u WHERE u.request_id = r.request_id) != 1`).Scan(&dupUsage)
	if start-a.Balance != charged || records != settled || dupUsage != 0 {
		t.Fatalf("balance moved %d, usage charges %d; %d records for %d settlements, %d mismatched",
			start-a.Balance, charged, records, settled, dupUsage)
	}
	for id := range acked {
		var state string
		if err := s2.r.QueryRow(`SELECT state FROM reservations WHERE request_id = ?`, id).Scan(&state); err != nil || state != "settled" {
			t.Fatalf("acknowledged settlement %s lost: %q %v", id, state, err)
		}
	}
	t.Logf("killed after %d acknowledged settlements; %d in the store, %d orphans released", len(acked), settled, n)
}
