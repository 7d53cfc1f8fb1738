package fetch

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// redrawEvery limits terminal redraws to 10 a second: more is invisible and
// costs a write syscall per 32 KiB chunk.
const redrawEvery = 100 * time.Millisecond

// progress draws one file's progress bar. On a terminal the line is redrawn
// in place ("\r" + clear to end of line); elsewhere (a log, CI) a plain line
// is printed at each 10% step so the output stays readable.
type progress struct {
	w       io.Writer
	tty     bool
	name    string
	total   int64 // 0 when unknown
	resumed int64 // bytes already on disk when this transfer started
	done    int64
	now     func() time.Time
	start   time.Time
	last    time.Time // last redraw (terminal)
	step    int64     // last 10% step printed (plain)
}

func newProgress(w io.Writer, tty bool, name string, resumed, total int64, now func() time.Time) *progress {
	p := &progress{w: w, tty: tty, name: name, total: total, resumed: resumed, done: resumed, now: now, start: now(), step: -1}
	if resumed > 0 {
		fmt.Fprintf(w, "  %s: resuming at %s\n", name, formatBytes(resumed))
	}
	if !tty {
		fmt.Fprintf(w, "  %s\n", p.line())
		p.step = p.tenth()
	}
	return p
}

func (p *progress) tenth() int64 {
	if p.total <= 0 {
		// Unknown size: one line per 64 MiB instead.
		return p.done >> 26
	}
	return p.done * 10 / p.total
}

// update records that done bytes are on disk and redraws if due.
func (p *progress) update(done int64) {
	p.done = done
	if p.tty {
		if t := p.now(); t.Sub(p.last) >= redrawEvery {
			p.last = t
			fmt.Fprintf(p.w, "\r  %s\x1b[K", p.line())
		}
		return
	}
	if s := p.tenth(); s > p.step {
		p.step = s
		fmt.Fprintf(p.w, "  %s\n", p.line())
	}
}

// finish draws the final state and ends the line.
func (p *progress) finish(ok bool) {
	status := "done"
	if !ok {
		status = "interrupted"
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r  %s  %s\x1b[K\n", p.line(), status)
		return
	}
	fmt.Fprintf(p.w, "  %s  %s\n", p.line(), status)
}

// line is "name  [#####.....]  12.0 MiB / 24.0 MiB  50.0%  3.1 MiB/s".
func (p *progress) line() string {
	var b strings.Builder
	b.WriteString(p.name)
	if p.total > 0 {
		const width = 20
		filled := int(p.done * width / p.total)
		filled = min(max(filled, 0), width)
		fmt.Fprintf(&b, "  [%s%s]  %s / %s  %5.1f%%", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
			formatBytes(p.done), formatBytes(p.total), float64(p.done)*100/float64(p.total))
	} else {
		fmt.Fprintf(&b, "  %s", formatBytes(p.done))
	}
	if el := p.now().Sub(p.start); el > 0 && p.done > p.resumed {
		fmt.Fprintf(&b, "  %s/s", formatBytes(int64(float64(p.done-p.resumed)/el.Seconds())))
	}
	return b.String()
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), []string{"KiB", "MiB", "GiB", "TiB"}
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, suffix[i])
}
