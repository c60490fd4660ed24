package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

// redrawEvery is how often a progress line is redrawn at most.
const redrawEvery = 100 * time.Millisecond

// progress is a progress bar on stderr, drawn only when stderr is a
// terminal: one line rewritten in place ("\r", then erase to the end of
// the line), gone when the work ends. Piped, it writes nothing. It is safe
// for concurrent use.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	width int
	now   func() time.Time
	label string
	total int64 // 0: unknown (a spinner with the time spent)
	unit  func(int64) string
	done  int64
	start time.Time
	last  time.Time
	shown bool
	frame int
	stop  chan struct{} // closes the ticker of a spinner
	wg    sync.WaitGroup
}

// newProgress starts a progress bar for work of total units, each said by
// unit (plural words, sizes).
func (a *app) newProgress(label string, total int64, unit func(int64) string) *progress {
	p := &progress{w: a.stderr, on: a.isTerminal(a.stderr), width: a.width(a.stderr), now: a.now,
		label: label, total: total, unit: unit}
	p.start = p.now()
	p.draw(true)
	return p
}

// busy runs fn with a spinner and the time spent on stderr (on a
// terminal): for work whose size is not known as it goes. The spinner is
// redrawn from another goroutine, so fn must not write to stderr itself.
func (a *app) busy(label string, fn func() error) error {
	p := a.newProgress(label, 0, nil)
	if p.on {
		p.stop = make(chan struct{})
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(redrawEvery)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					p.draw(false)
					p.mu.Unlock()
				}
			}
		}()
	}
	err := fn()
	p.finish()
	return err
}

// add counts n units done.
func (p *progress) add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.draw(p.done >= p.total)
}

// above writes what fn writes to the terminal above the bar: the bar is
// cleared first and drawn again after.
func (p *progress) above(fn func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	err := fn()
	p.draw(true)
	return err
}

// finish removes the bar.
func (p *progress) finish() {
	if p.stop != nil {
		close(p.stop)
		p.wg.Wait()
		p.stop = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.on = false
}

func (p *progress) clear() {
	if p.on && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// draw writes the bar, unless it was drawn less than redrawEvery ago and
// force is not set.
func (p *progress) draw(force bool) {
	if !p.on {
		return
	}
	now := p.now()
	if !force && p.shown && now.Sub(p.last) < redrawEvery {
		return
	}
	p.last, p.shown = now, true
	spent := chatview.Duration(now.Sub(p.start).Truncate(time.Second))
	var s string
	if p.total <= 0 {
		s = fmt.Sprintf("%s %c %s", p.label, `|/-\`[p.frame%4], spent)
		p.frame++
	} else {
		done := min(p.done, p.total)
		tail := fmt.Sprintf(" %3d%% %s of %s", done*100/p.total, p.unit(done), p.unit(p.total))
		room := max(p.width-1-chatview.DisplayWidth(p.label)-chatview.DisplayWidth(tail)-3, 10)
		filled := int(int64(room) * done / p.total)
		s = fmt.Sprintf("%s [%s%s]%s", p.label, strings.Repeat("=", filled), strings.Repeat(" ", room-filled), tail)
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", truncate(s, p.width-1))
}

// verifyProgress is verify's bar, in bytes of the logs to read; a
// single log gets none.
func (a *app) verifyProgress(jobs []verifyJob) *progress {
	var total int64
	for _, j := range jobs {
		total += j.size
	}
	label := fmt.Sprintf("verify %s", plural(int64(len(jobs)), "file"))
	if len(jobs) < 2 {
		return &progress{} // off
	}
	return a.newProgress(label, max(total, 1), chatview.Size)
}

// fileSize is the size of the file at path, 0 when it cannot be told.
func (a *app) fileSize(path string) int64 {
	if fi, err := a.fs.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}
