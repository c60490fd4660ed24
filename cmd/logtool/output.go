package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/chatview"
	"github.com/sessionlog/sessionlog/recorder"
)

// humanTime is how times are shown to people: RFC 3339 in UTC, with
// milliseconds, as events carry them.
const humanTime = "2006-01-02T15:04:05.000Z07:00"

// dataWidth is how many characters of an event's data a human listing shows.
const dataWidth = 100

// writeJSON writes v as one JSON object on one line. HTML characters are
// left alone: the output is for scripts, not for browsers.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// formatTime shows Unix milliseconds as RFC 3339 (UTC).
func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(humanTime)
}

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n-1 {
			return s[:i] + "…"
		}
		count++
	}
	return s
}

// statJSON is the object of `stat --json` and of each line of `ls --json`
// (docs/cli.md).
type statJSON struct {
	ID        string            `json:"id"`
	Path      string            `json:"path"`
	Encoding  string            `json:"encoding"`
	CreatedAt int64             `json:"createdAt"`
	Parent    *eventlog.Parent  `json:"parent"`
	Labels    map[string]string `json:"labels"`
	Events    int64             `json:"events"`
	LastSeq   int64             `json:"lastSeq"`
	LastType  *string           `json:"lastType"` // null when the file holds no event of its own
	LastTime  *int64            `json:"lastTime"`
	SizeBytes int64             `json:"sizeBytes"`
	// OpenTurn and Stop are the stop facts: set by stat, left out by ls
	// (they need a read of each session's tail).
	OpenTurn *bool     `json:"openTurn,omitempty"`
	Stop     *stopJSON `json:"stop,omitempty"`
	// Cursor is ls --limit's: --before it lists what follows.
	Cursor string `json:"cursor,omitempty"`
}

// stopJSON is how the session stopped and whether it may continue.
type stopJSON struct {
	Seq     *int64           `json:"seq"` // null before any turn/end
	Kind    string           `json:"kind"`
	Reason  string           `json:"reason"`
	Verdict recorder.Verdict `json:"verdict"`
}

func newStopJSON(f recorder.Facts) stopJSON {
	out := stopJSON{Verdict: f.Verdict}
	if f.Stop != nil {
		out.Seq, out.Kind, out.Reason = &f.Stop.Seq, f.Stop.Kind, f.Stop.Reason
	}
	return out
}

// withFacts adds the stop facts.
func (s statJSON) withFacts(f recorder.Facts) statJSON {
	stop := newStopJSON(f)
	s.OpenTurn, s.Stop = &f.OpenTurn, &stop
	return s
}

func newStatJSON(info handle.Info) statJSON {
	out := statJSON{
		ID: info.Header.ID, Path: info.Path, Encoding: info.Encoding, CreatedAt: info.Header.CreatedAt,
		Parent: info.Header.Parent, Labels: info.Header.Labels, Events: info.Events,
		LastSeq: info.LastSeq, SizeBytes: info.SizeBytes,
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if info.LastType != "" {
		out.LastType, out.LastTime = &info.LastType, &info.LastTime
	}
	return out
}

// describeParent says in words where a session comes from.
func describeParent(p *eventlog.Parent) string {
	if p == nil {
		return "-"
	}
	s := fmt.Sprintf("%s of %s at seq %d", p.Mode, p.ID, p.Seq)
	if p.Call != "" {
		s += " (call " + p.Call + ")"
	}
	return s
}

// describeLabels shows labels as k=v pairs in key order.
func describeLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%s", k, labels[k])
	}
	return b.String()
}

// writeStatHuman writes info as aligned "key value" lines.
func writeStatHuman(w io.Writer, info handle.Info, f recorder.Facts) error {
	last := "-"
	if info.LastType != "" {
		last = fmt.Sprintf("seq %d %s at %s", info.LastSeq, info.LastType, formatTime(info.LastTime))
	}
	stop := "-"
	if f.Stop != nil {
		stop = fmt.Sprintf("%s at seq %d", f.Stop.Kind, f.Stop.Seq)
		if f.Stop.Reason != "" {
			stop += " (" + f.Stop.Reason + ")"
		}
	}
	verdict := "may continue: "
	if !f.Verdict.Resumable {
		verdict = "may not continue: "
	}
	_, err := fmt.Fprintf(w, "id        %s\npath      %s\nencoding  %s\ncreated   %s\nparent    %s\nlabels    %s\nevents    %d\nlast      %s\nsize      %s\nopen turn %t\nstop      %s\nverdict   %s\n",
		info.Header.ID, info.Path, info.Encoding, formatTime(info.Header.CreatedAt),
		describeParent(info.Header.Parent), describeLabels(info.Header.Labels), info.Events, last, chatview.Size(info.SizeBytes),
		f.OpenTurn, stop, verdict+f.Verdict.Reason)
	return err
}

// writeEventHuman writes one event as "seq time type data" with the data
// cut to dataWidth.
func writeEventHuman(w io.Writer, e eventlog.Event) error {
	data := "null"
	if e.Data != nil {
		data = truncate(string(e.Data), dataWidth)
	}
	_, err := fmt.Fprintf(w, "%6d  %s  %-20s  %s\n", e.Seq, formatTime(e.Time), e.Type, data)
	return err
}
