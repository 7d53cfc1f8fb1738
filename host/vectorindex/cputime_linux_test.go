//go:build linux

package vectorindex

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling OS thread's CPU time. On a machine shared with
// other work, wall-clock latency measures the scheduler as much as the code;
// thread CPU time of a single-threaded search is what its latency would be
// on an idle core.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processCPU is the process's user+system CPU time (all threads).
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
